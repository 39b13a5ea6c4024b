package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/bench/mixedbench"
)

// benchMixedFlags binds the flags to c, whose values are the defaults.
func benchMixedFlags(fs *pflag.FlagSet, c *mixedbench.Config) {
	fs.IntVar(&c.Scale, "scale", c.Scale, "log2 of the vertex count of the RMAT stream")
	fs.IntVar(&c.EdgeFactor, "edge-factor", c.EdgeFactor, "edges per vertex")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed of the stream and of the deletes")
	fs.Float64Var(&c.Preload, "preload", c.Preload, "share of the stream loaded before the timed phases, in [0, 1)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "ops per timed Apply")
	fs.IntVar(&c.Rate, "rate", c.Rate, "batches per second the writer is paced at, as a stream arrives (0: as fast as it can)")
	fs.IntSliceVar(&c.Readers, "readers", c.Readers, "reader goroutines of each phase, in order")
	fs.DurationVar(&c.Phase, "duration", c.Phase, "how long the writer applies in each phase")
	fs.Float64Var(&c.EdgeDeletes, "edge-deletes", c.EdgeDeletes, "share of ops that delete an edge applied before")
	fs.Float64Var(&c.VertexDeletes, "vertex-deletes", c.VertexDeletes, "share of ops that delete a vertex (drawn by degree, so hubs too)")
	fs.IntVar(&c.Hubs, "hubs", c.Hubs, "hubs whose neighborhoods each reader gathers after each scan")
}

func newBenchMixedCmd() *cobra.Command {
	cfg := mixedbench.DefaultConfig()
	var (
		memgraphMiB int
		dir         string
	)
	cmd := &cobra.Command{
		Use:   "mixed [flags]",
		Short: "Apply latency of small batches while 0, 2 and 4 readers scan fresh views",
		Long: `Preloads --preload of an RMAT stream into a fresh store, then runs one
phase per --readers count. In each phase a writer applies batches of
--batch-size ops (the stream's next edges, --edge-deletes of edges applied
before, --vertex-deletes of vertices drawn by degree, hubs included) at
--rate batches per second for --duration, timing every Apply, while that
many goroutines continuously take fresh static views, scan each whole and
gather the neighborhoods of the --hubs largest hubs.

It reports per phase the apply latency's p50, p99, p99.9 and maximum in ms,
the readers' scans and scanned edges per second, and the store's write
stalls, flushes and compactions meanwhile. The last line of stdout is one
JSON object with, among others, apply_p99_ms_readers0, apply_p99_ms_readers4,
apply_max_ms_readers4 and apply_p99_readers4_over_readers0.`,
		Example: `  graphtide bench mixed --scale 20 --duration 20s
  graphtide bench mixed --scale 18 --rate 0 --readers 0,4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if memgraphMiB < 1 || memgraphMiB > 65536 {
				return fmt.Errorf("--memgraph-mib must be between 1 and 65536, got %d", memgraphMiB)
			}
			cfg.MemGraphBytes = int64(memgraphMiB) << 20
			if err := cfg.Validate(); err != nil {
				return err
			}
			dir, cleanup, err := bench.WorkDir(dir, "mixed")
			if err != nil {
				return err
			}
			defer cleanup()
			cfg.Dir, cfg.Log = dir, cmd.ErrOrStderr()
			res, err := mixedbench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return printJSONLine(cmd, res)
		},
	}
	f := cmd.Flags()
	benchMixedFlags(f, &cfg)
	f.IntVar(&memgraphMiB, "memgraph-mib", int(cfg.MemGraphBytes>>20), "size of one MemGraph in MiB (the store keeps two)")
	f.StringVar(&dir, "dir", "", "directory for the store; must not exist or be empty (default: a temporary directory, removed afterwards)")
	return cmd
}
