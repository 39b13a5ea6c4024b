package main

import (
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/sibling"
)

// benchBinary is the executable that holds the benchmarks: they link
// baselines (Pebble among them) that the product binary does not carry.
const benchBinary = "graphtide-bench"

// execBench replaces this process with the benchmark binary (a variable:
// the command's tests record the call instead).
var execBench = syscall.Exec

func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench <benchmark> [flags]",
		Short: "Run a benchmark against its baselines (the graphtide-bench binary)",
		Long: `The benchmarks live in a binary of their own, graphtide-bench, which
make build puts beside graphtide in bin/: they link their baselines
(Pebble, a static CSR, Differential Dataflow's driver), which the product
binary does not carry. 'graphtide bench ARGS' runs 'graphtide-bench ARGS'
in its place, found beside this executable or else on PATH; every
argument, --help included, goes to it. docs/benchmarks.md lists the
benchmarks and their current results.`,
		Example: `  graphtide bench --help
  graphtide bench ingest --scale 20 --edge-factor 16`,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := sibling.Path(benchBinary)
			if err != nil {
				return err
			}
			return execBench(path, append([]string{benchBinary}, args...), os.Environ())
		},
	}
}
