package graphtide

import (
	"context"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Analytic is an analytic of your own, kept up to date like the built-in
// graph analytics: computed once on the whole graph, then updated with
// each pull of the operations applied since. graphtide calls Recompute
// and Update from one goroutine at a time; Result (and VertexResult, if
// you implement VertexResulter) may be called meanwhile from others, so
// guard the state they read.
type Analytic interface {
	// Recompute computes the result from scratch on g.
	Recompute(ctx context.Context, g *Graph) error
	// Update brings the result to g, given the operations applied since
	// the last call, in order (g already holds them). It may recompute
	// instead; it reports whether it did.
	Update(ctx context.Context, g *Graph, changes []Change) (recomputed bool, err error)
	// Result is the current result, in a form encoding/json can write
	// (DB.Result's Summary).
	Result() any
}

// VertexResulter is an Analytic with a per-vertex result (DB.VertexResult).
type VertexResulter interface {
	VertexResult(v uint64) (any, bool)
}

// RegisterAnalytic registers a and starts it: its first Recompute runs on
// its own goroutine, and DB.Result(name) says when it is ready. It is not
// checkpointed (serve's checkpoints are for the built-in analytics).
func (db *DB) RegisterAnalytic(name string, a Analytic) error {
	c := &custom{spec: analytics.Spec{Name: name, Type: analytics.CustomType}, a: a}
	_, err := db.reg.RegisterCustom(c)
	return db.err(err)
}

// custom adapts an Analytic to the registry.
type custom struct {
	spec analytics.Spec
	a    Analytic
	seq  atomic.Uint64 // the seq of the last successful call
}

func (c *custom) Spec() analytics.Spec { return c.spec }
func (c *custom) Summary() any         { return c.a.Result() }
func (c *custom) Seq() uint64          { return c.seq.Load() }

func (c *custom) Vertex(v uint64) (any, bool) {
	if vr, ok := c.a.(VertexResulter); ok {
		return vr.VertexResult(v)
	}
	return nil, false
}

func (c *custom) Recompute(ctx context.Context, g *views.Topo) error {
	if err := c.a.Recompute(ctx, &Graph{t: g}); err != nil {
		return err
	}
	c.seq.Store(g.Seq)
	return nil
}

func (c *custom) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	changes := make([]Change, len(edges))
	for i, e := range edges {
		changes[i] = changeOf(e)
	}
	re, err := c.a.Update(ctx, &Graph{t: g}, changes)
	if err != nil {
		return re, err
	}
	c.seq.Store(g.Seq)
	return re, nil
}

// Graph is the graph an Analytic computes on: every vertex has a dense
// index in [0, Len()), and edges are lists of indexes, sorted. It is valid
// only during the call that received it: keep no Graph and no slice of
// one.
type Graph struct{ t *views.Topo }

// Seq is the sequence number of the newest batch the graph holds.
func (g *Graph) Seq() uint64 { return g.t.Seq }

// Len is the number of vertex indexes. Every vertex ever seen has one,
// including vertices whose edges were all deleted since.
func (g *Graph) Len() int { return g.t.Len() }

// ID is the vertex id of index i.
func (g *Graph) ID(i int) uint64 { return g.t.IDs.ID(i) }

// Index is the index of vertex v, if it has one.
func (g *Graph) Index(v uint64) (int, bool) { return g.t.IDs.Index(v) }

// Out is the out-neighbors of index i, as indexes in increasing order.
// Do not modify it.
func (g *Graph) Out(i int) []int32 { return g.t.Out.Nbrs(int32(i)) }

// OutWeights is the weights of Out(i)'s edges, in the same order (nil
// when every weight is 1 and none is kept). Do not modify it. While every
// weight is a whole number the graph keeps them packed beside the heads,
// and this returns a new slice each call (8 bytes an edge of garbage):
// prefer OutWeight, which reads one without allocating.
func (g *Graph) OutWeights(i int) []float64 {
	if ws := g.t.Out.Floats(int32(i)); ws != nil {
		return ws
	}
	pl := g.t.Out.Packed(int32(i))
	if pl == nil {
		return nil
	}
	ws := make([]float64, len(pl))
	for k, e := range pl {
		ws[k] = float64(e.W)
	}
	return ws
}

// OutWeight is the weight of Out(i)'s k-th edge (1 when none is kept).
func (g *Graph) OutWeight(i, k int) float64 { return g.t.Out.Weights(int32(i)).At(k) }

// In is the in-neighbors of index i, in increasing order (the analytics'
// graph keeps them whether or not the store does). Do not modify it.
func (g *Graph) In(i int) []int32 {
	if i >= g.t.In.Len() {
		return nil
	}
	return g.t.In.Nbrs(int32(i))
}

// Edges is the number of edges.
func (g *Graph) Edges() int64 { return g.t.Out.Edges() }
