package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/mixedbench"
)

func newBenchMixedCmd() *cobra.Command {
	c := mixedbench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
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
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		c.Log = log
		return mixedbench.Run(ctx, c)
	})
}
