package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/analyticsbench"
)

func newBenchAnalyticsCmd() *cobra.Command {
	c := analyticsbench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use:   "analytics [flags]",
		Short: "Analytics on views against a static CSR, and incremental updates against recomputes",
		Long: `Loads an RMAT graph into a fresh store (with in-edges), compacts it, then
measures in the same run:
  - bfs, wcc and pagerank (20 iterations) on a fresh static view and on a
    static in-memory CSR of the same edges, the same algorithm code reading
    either (best of --repeats; the results must agree);
  - after streaming a further --stream-fraction of edges in batches of
    --batch-size, the mean time per batch of each incremental analytic
    (bfs, wcc, pagerank, sssp, degree) against a full recompute on the same
    view;
  - all of it under each id layout of --ids, each in a store of its own:
    dense (the generated ids, 0..2^scale-1), sparse (the same graph with
    each id v mapped to (v*K+C) mod 2^62, spread over the whole numeric
    range, stored as serve and load store them: mapped to dense ids by
    the key dictionary, the mapping timed with the load), unmapped (the
    same sparse ids stored as they are, as in a store written before
    graphtide mapped them) and keys (ids of the string-key band in order
    of first appearance, as the key dictionary assigns them). Each
    analytic's recompute and update time under the other layouts is
    reported against dense (sparse_over_dense, unmapped_over_dense,
    keys_over_dense, max_sparse_over_dense), and its results must agree
    with dense ones vertex for vertex.
The last line of stdout is one JSON object.`,
		Example: `  graphtide bench analytics --scale 20 --edge-factor 16
  graphtide bench analytics --scale 16 --repeats 1 --ids dense,sparse`,
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		c.Log = log
		return analyticsbench.Run(ctx, c)
	})
}
