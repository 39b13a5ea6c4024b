package kernels

import (
	"context"

	"github.com/graphtide/graphtide/internal/views"
)

// PRGraph is what pagerank's iterations read of a topology, copied out of
// it: each vertex's out-degree and in-list, as one plain CSR. A pagerank
// that recomputes (its first compute, and every batch whose change its
// pushes cannot finish) runs for about as long as the other analytics
// take for ten batches; the topology's advance waits for every reader,
// so had the run read the shared topology, every analytic would wait
// that long for its next batch. The copy takes one pass over the
// in-lists, after which the pull is released.
//
// INVARIANT: in[off[i]:off[i+1]] is In.Nbrs(i) and out[i] Out.Deg(i) of
// the topology copied, for every i below bound; IDs, Seq, n and bound are
// its IDs, Seq, Len() and Bound().
type PRGraph struct {
	IDs      views.IDSpace
	Seq      uint64
	n, bound int
	out      []int32
	off      []int64
	in       []int32
}

// CopyForPageRank copies what pagerank reads of g (see PRGraph), on every
// worker; it fails only when ctx ends.
func CopyForPageRank(ctx context.Context, g *views.Topo) (*PRGraph, error) {
	c := &PRGraph{IDs: g.IDs, Seq: g.Seq, n: g.Len(), bound: g.Bound()}
	nw := Workers()
	c.out = make([]int32, c.bound)
	c.off = make([]int64, c.bound+1)
	ParallelFor(nw, c.bound, prGrain, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			c.out[i] = g.Out.Deg(int32(i))
			c.off[i+1] = int64(g.In.Deg(int32(i)))
		}
	})
	for i := range c.bound {
		c.off[i+1] += c.off[i]
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.in = make([]int32, c.off[c.bound])
	ParallelFor(nw, c.bound, prGrain, func(_, lo, hi int) {
		in := g.In.Cursor()
		for i := lo; i < hi; i++ {
			copy(c.in[c.off[i]:c.off[i+1]], in.Nbrs(int32(i)))
		}
	})
	return c, nil
}

// Len is the copied topology's Len.
func (c *PRGraph) Len() int { return c.n }

// OutDeg is i's out-degree (0 from bound up).
func (c *PRGraph) OutDeg(i int32) int32 {
	if int(i) >= c.bound {
		return 0
	}
	return c.out[i]
}

// InDeg is i's in-degree (0 from bound up).
func (c *PRGraph) InDeg(i int32) int64 {
	if int(i) >= c.bound {
		return 0
	}
	return c.off[i+1] - c.off[i]
}

// InNbrs is i's in-list (i below bound).
func (c *PRGraph) InNbrs(i int32) []int32 { return c.in[c.off[i]:c.off[i+1]] }
