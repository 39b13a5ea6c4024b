package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/bench/ingestbench"
)

func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "graphtide-bench",
		Short: "Run benchmarks that compare graphtide with baselines in the same run",
		Long: `Benchmarks measure graphtide against baselines run in the same process on
the same data, and print progress to stderr and one JSON object as the last
line of stdout. Figures are best read as ratios: absolute rates on a shared
machine vary from run to run. 'graphtide bench' runs this binary.`,
		// Errors are printed by cobra; do not follow a runtime failure with
		// the usage text, which only helps for syntax errors.
		SilenceUsage: true,
	}
	cmd.AddCommand(newBenchIngestCmd(), newBenchKafkaCmd(), newBenchAnalyticsCmd(), newBenchMixedCmd(), newBenchServeCmd(), newBenchDecodeCmd(), newBenchDGSCmd(), newBenchMonitorsCmd())
	return cmd
}

// calibrateMachine measures the machine before a benchmark (a variable:
// the command's tests put a fixed one in its place, the real one being
// bench's, tested there).
var calibrateMachine = bench.Calibrate

// benchConfig is a benchmark package's Config: its flags and their checks.
type benchConfig interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() error
}

// newBenchmarkCmd completes cmd, whose Use, Short, Long and Example are set,
// as the benchmark cfg configures: cfg's flags, checked by cfg.Validate
// before anything runs; then run, with *dir (cfg's Dir) set to the work
// directory, which is *dir as given (the --dir flag, where the benchmark has
// one) or else a temporary directory named after the command and removed
// afterwards. run's progress goes to log (stderr), its result is printed as
// the one JSON line that ends stdout, with the calibration of the machine
// measured just before run (unless --calibrate=false) as its first field.
func newBenchmarkCmd(cmd *cobra.Command, cfg benchConfig, dir *string, run func(ctx context.Context, log io.Writer) (any, error)) *cobra.Command {
	cmd.Args = cobra.NoArgs
	calibrate := true
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cfg.Validate(); err != nil {
			return err
		}
		var cal *bench.Calibration
		if calibrate {
			c, err := calibrateMachine()
			if err != nil {
				return err
			}
			cal = &c
		}
		work, cleanup, err := bench.WorkDir(*dir, cmd.Name())
		if err != nil {
			return err
		}
		defer cleanup()
		*dir = work
		res, err := run(cmd.Context(), cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		line, err := json.Marshal(res)
		if err == nil && cal != nil {
			line, err = bench.WithCalibration(line, *cal)
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), string(line))
		return err
	}
	cfg.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&calibrate, "calibrate", calibrate, "measure the machine first (a few seconds of fixed work) and add it to the result as \"calibration\", so that figures from different runs can be compared")
	return cmd
}

func newBenchIngestCmd() *cobra.Command {
	c := ingestbench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use:   "ingest [flags]",
		Short: "Ingest an RMAT stream into graphtide, Pebble and a static CSR, then scan",
		Long: `Generates (or reads) an edge stream and, in the same run:
  - ingests it into a fresh graphtide store through the Go API in batches,
    including the time to flush everything (store_edges_per_sec);
  - compacts the store fully and reports its size (store_bytes_per_edge,
    per distinct edge) and the process's peak resident set;
  - scans all out-neighbors of every vertex on the store (store_scan_sec)
    and checks the result against the static CSR;
  - ingests the same edges into Pebble, key = big-endian src|dst
    (pebble_edges_per_sec);
  - builds a static in-memory CSR (csr_build_edges_per_sec) and scans it
    (csr_scan_sec);
  - what keeping in-edges (a new store's default) costs: the same ingest
    into an out-only store and a store with in-edges, back to back, and
    their CPU time per edge (in_edges_cpu_over_out_only); the in-edge
    store's rate against the first store's (in_edges_over_out_only) and
    its bytes on disk per distinct edge after compacting
    (in_edges_bytes_over_out_only);
  - what an accumulate edge type and edge payloads cost (edge_events): a
    payments stream of --events payments among --accounts accounts over
    30 days (each account pays 8 regular payees three times in four, so
    pairs repeat: events_per_pair) applied as replace, accumulate,
    accumulate with an event reference and properties per payment, and
    that with a retain of 24h, taking turns 3 times, each in a fresh
    store: Apply's CPU time per payment (apply_cpu_ns_per_event), the
    process's over the whole ingest (ingest_cpu_ns_per_event) and the
    bytes on disk per distinct pair after compacting (bytes_per_edge),
    each with its ratio against replace (*_over_replace); a sample of
    pairs is read back and checked against the stream.
The last line of stdout is one JSON object with all figures.`,
		Example: `  graphtide bench ingest --scale 20 --edge-factor 16 --dir /tmp/gt-bench
  graphtide gen --scale 18 --out g18.bin && graphtide bench ingest --input g18.bin`,
	}, &c, &c.Dir, func(_ context.Context, log io.Writer) (any, error) {
		c.Log = log
		return ingestbench.Run(c)
	})
}
