package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench/ingestbench"
	"github.com/graphtide/graphtide/internal/gen"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run benchmarks that compare graphtide with baselines in the same run",
		Long: `Benchmarks measure graphtide against baselines run in the same process on
the same data, and print progress to stderr and one JSON object as the last
line of stdout. Figures are best read as ratios: absolute rates on a shared
machine vary from run to run.`,
	}
	cmd.AddCommand(newBenchIngestCmd(), newBenchKafkaCmd(), newBenchAnalyticsCmd(), newBenchServeCmd())
	return cmd
}

type benchIngestOptions struct {
	scale, edgeFactor int
	seed              uint64
	input             string
	dir               string
	batchSize         int
	memgraphMiB       int
	skipPebble        bool
}

func (o *benchIngestOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.scale, "scale", 20, fmt.Sprintf("log2 of the vertex count of the RMAT graph, %d..%d", gen.MinScale, gen.MaxScale))
	fs.IntVar(&o.edgeFactor, "edge-factor", 16, "edges per vertex")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed of the RMAT graph")
	fs.StringVar(&o.input, "input", "", "read edges from this edge file (el or bin, see gen) instead of generating them")
	fs.StringVar(&o.dir, "dir", "", "directory for the store and the Pebble baseline; must not exist or be empty (default: a temporary directory, removed afterwards)")
	fs.IntVar(&o.batchSize, "batch-size", 10000, "edges per write batch, for both the store and Pebble")
	fs.IntVar(&o.memgraphMiB, "memgraph-mib", 64, "size of one MemGraph in MiB (the store keeps two)")
	fs.BoolVar(&o.skipPebble, "skip-pebble", false, "do not run the Pebble baseline")
}

func (o *benchIngestOptions) Validate() error {
	if o.input == "" {
		if o.scale < gen.MinScale || o.scale > gen.MaxScale {
			return fmt.Errorf("--scale must be between %d and %d, got %d", gen.MinScale, gen.MaxScale, o.scale)
		}
		if o.edgeFactor < 1 || o.edgeFactor > math.MaxInt>>o.scale {
			return fmt.Errorf("--edge-factor must be at least 1 and edge-factor x 2^scale must fit in 63 bits, got %d", o.edgeFactor)
		}
	}
	if o.batchSize < 1 || o.batchSize > 10_000_000 {
		return fmt.Errorf("--batch-size must be between 1 and 10000000, got %d", o.batchSize)
	}
	if o.memgraphMiB < 1 || o.memgraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536, got %d", o.memgraphMiB)
	}
	return nil
}

func newBenchIngestCmd() *cobra.Command {
	var o benchIngestOptions
	cmd := &cobra.Command{
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
    (csr_scan_sec).
The last line of stdout is one JSON object with all figures.`,
		Example: `  graphtide bench ingest --scale 20 --edge-factor 16 --dir /tmp/gt-bench
  graphtide gen --scale 18 --out g18.bin && graphtide bench ingest --input g18.bin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			dir := o.dir
			if dir == "" {
				tmp, err := os.MkdirTemp("", "graphtide-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			}
			res, err := ingestbench.Run(ingestbench.Config{
				Scale: o.scale, EdgeFactor: o.edgeFactor, Seed: o.seed, Input: o.input, Dir: dir,
				BatchSize: o.batchSize, MemGraphBytes: int64(o.memgraphMiB) << 20, SkipPebble: o.skipPebble,
				Log: cmd.ErrOrStderr(),
			})
			if err != nil {
				return err
			}
			return printJSONLine(cmd, res)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// printJSONLine writes v as the one-line JSON result that every benchmark
// prints last.
func printJSONLine(cmd *cobra.Command, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(line))
	return err
}
