package analytics

import (
	"context"
	"fmt"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
)

// RunKernel runs the static kernel of analytic type typ (bfs, wcc,
// pagerank, sssp) on g, from root for bfs and sssp, without building the
// analytic's state around its result: what a comparison with another
// system's kernels times (graphtide bench analytics --kernels-only).
// pagerank runs at the default damping to the default tolerance, at most
// maxIter iterations; it returns the iterations run (1 for the others).
func RunKernel(ctx context.Context, typ string, g *views.Topo, root uint64, maxIter int) (int, error) {
	switch typ {
	case "bfs":
		_, _, err := kernels.BFS(ctx, g, kernels.Index(g, root))
		return 1, err
	case "wcc":
		_, err := kernels.Afforest(ctx, g)
		return 1, err
	case "pagerank":
		// With the copy of the in-lists a registered pagerank makes (see
		// kernels.PRGraph).
		c, err := kernels.CopyForPageRank(ctx, g)
		if err != nil {
			return 0, err
		}
		_, iters, _, err := kernels.PageRank(ctx, c, nil, DefaultDamping, DefaultTolerance, maxIter)
		return iters, err
	case "sssp":
		_, err := kernels.SSSP(ctx, g, kernels.Index(g, root))
		return 1, err
	}
	return 0, fmt.Errorf("analytics: no kernel for type %q (bfs, wcc, pagerank, sssp)", typ)
}
