package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/bench/analyticsbench"
	"github.com/graphtide/graphtide/internal/gen"
)

func newBenchAnalyticsCmd() *cobra.Command {
	var (
		scale, edgeFactor, batch, repeats int
		seed                              uint64
		fraction                          float64
		dir                               string
		ids                               []string
		cpuProfile                        string
	)
	cmd := &cobra.Command{
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scale < gen.MinScale || scale > 26 {
				return fmt.Errorf("--scale must be between %d and 26, got %d", gen.MinScale, scale)
			}
			if edgeFactor < 1 || edgeFactor > 64 {
				return fmt.Errorf("--edge-factor must be between 1 and 64, got %d", edgeFactor)
			}
			if batch < 1 || batch > 10000000 {
				return fmt.Errorf("--batch-size must be between 1 and 10000000, got %d", batch)
			}
			if fraction <= 0 || fraction > 1 {
				return fmt.Errorf("--stream-fraction must be in (0, 1], got %v", fraction)
			}
			if repeats < 1 || repeats > 100 {
				return fmt.Errorf("--repeats must be between 1 and 100, got %d", repeats)
			}
			if len(ids) == 0 || ids[0] != "dense" {
				return fmt.Errorf("--ids must start with dense (the baseline), got %q", strings.Join(ids, ","))
			}
			for i, n := range ids {
				if !slices.Contains(analyticsbench.Layouts, n) || slices.Index(ids, n) != i {
					return fmt.Errorf("--ids: %q is not one of %s, or is repeated", n, strings.Join(analyticsbench.Layouts, ", "))
				}
			}
			dir, cleanup, err := bench.WorkDir(dir, "analytics")
			if err != nil {
				return err
			}
			defer cleanup()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			res, err := analyticsbench.Run(cmd.Context(), analyticsbench.Config{Scale: scale, EdgeFactor: edgeFactor,
				Seed: seed, Dir: dir, BatchSize: batch, StreamFraction: fraction, Repeats: repeats, IDs: ids, Log: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			return printJSONLine(cmd, res)
		},
	}
	f := cmd.Flags()
	f.IntVar(&scale, "scale", 20, "log2 of the vertex count of the RMAT graph")
	f.IntVar(&edgeFactor, "edge-factor", 16, "edges per vertex")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.IntVar(&batch, "batch-size", 10000, "streamed edges per batch")
	f.Float64Var(&fraction, "stream-fraction", 0.01, "share of the graph's edge count streamed after the load")
	f.IntVar(&repeats, "repeats", 3, "timed runs of each static analytic (the best counts)")
	f.StringVar(&dir, "dir", "", "scratch directory for the stores (default: a temporary one)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file")
	_ = f.MarkHidden("cpuprofile")
	f.StringSliceVar(&ids, "ids", analyticsbench.Layouts, "id layouts to measure, dense first: dense, sparse, keys")
	return cmd
}
