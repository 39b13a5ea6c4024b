// Command graphtide-bench runs graphtide's benchmarks, each against its
// baselines in the same run (ingest, kafka, analytics, mixed, serve,
// decode, dgs, monitors): a binary of its own, so that the product binary
// does not link the baselines (Pebble among them). `graphtide bench` runs
// it. It holds flags and help texts only; the benchmarks are the packages
// under internal/bench. Run "graphtide-bench help" for the list.
package main

import "os"

func main() {
	// Cobra has already printed the error to stderr.
	if err := newRootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}
