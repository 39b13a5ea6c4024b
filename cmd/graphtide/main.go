// Command graphtide is the command-line front end of the graphtide streaming
// graph store: serve, load, query, inspect, repair, compact, gen, produce
// and the benchmarks. It holds flags, help texts and signals only; the work
// is done by the internal packages. Run "graphtide help" for the commands.
package main

import (
	"errors"
	"os"

	"github.com/graphtide/graphtide/internal/progress"
)

// progressEvery is how often load, produce and gen print a plain progress
// line; tests shorten it.
var progressEvery = progress.Every

func main() {
	// Cobra has already printed the error (and, for usage errors, a hint)
	// to stderr.
	if err := newRootCmd().Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}
