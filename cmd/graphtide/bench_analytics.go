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
		Short: "Analytics kernels on the store's topology against a plain CSR, and updates under deletes against recomputes",
		Long: `Loads a graph (RMAT, or --input FILE: el or bin) into a fresh store (with
in-edges), compacts it, then measures in the same run:
  - bfs (from --root, default the vertex with the most out-edges), wcc,
    pagerank (to its default tolerance, at most 20 iterations; their
    count is printed) and sssp on the topology of the compacted
    view (what serve's analytics read) and on the topology of a plain
    in-memory CSR of the same edges: the same kernels (best of --repeats;
    the results must agree);
  - a stream of a further --stream-fraction of edges in batches of
    --batch-size operations, --delete-fraction of them deleting existing
    edges and --vertex-delete-fraction deleting vertices: per analytic
    (bfs, wcc, pagerank, sssp, degree) the mean update per batch and the
    slowest (the first batch is a warm-up, reported apart: its update
    allocates the analytic's scratch and wcc builds its support forest
    there, once), a recompute on the same graph every third batch (whose
    result must equal the update's) and the fallbacks (updates that
    recomputed, the warm-up's included);
  - the kernels again on the topology the stream advanced;
  - all of it under each id layout of --ids, each in a store of its own:
    dense (the ids as generated), sparse (each id v mapped to (v*K+C) mod
    2^62 and through the key dictionary, as serve and load store them),
    unmapped (the same sparse ids stored as they are) and keys (ids of the
    string-key band in order of first appearance). Results must agree with
    dense ones vertex for vertex. With --input only dense is measured.
With --kernels-only it times only the bare kernels (bfs, wcc, pagerank to
its default tolerance, sssp) on a plain CSR topology of the whole graph,
--repeats times each, taking turns, with no store and no stream in the
process: the min and median of each, and pagerank's time per iteration
past the first (for a by-hand comparison with GAPBS, see
docs/benchmarks.md).
The last line of stdout is one JSON object.`,
		Example: `  graphtide bench analytics --scale 20 --edge-factor 16
  graphtide bench analytics --scale 20 --ids dense --delete-fraction 0.5
  graphtide bench analytics --input g.el --root 7 --ids dense
  graphtide bench analytics --input g20.el --root 872144 --kernels-only --repeats 8`,
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		c.Log = log
		return analyticsbench.Run(ctx, c)
	})
}
