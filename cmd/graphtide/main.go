// Command graphtide is the command-line front end of the graphtide streaming
// graph store: it generates benchmark edge streams and reports its version.
// Run "graphtide help" for the list of commands.
package main

import "os"

func main() {
	// Cobra has already printed the error (and, for usage errors, a hint)
	// to stderr.
	if err := newRootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}
