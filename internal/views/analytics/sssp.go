package analytics

import (
	"context"
	"errors"
	"math"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// sssp keeps shortest-path distances from root along out-edges, edge
// weights as lengths (they must not be negative).
//
// INVARIANT (between calls, unless err is set): dist is exactly the
// shortest distance in the graph at seq (+Inf when unreachable). A
// recompute is delta-stepping on every core; an update repairs the
// distances the batch changed (repair.Dists), and recomputes only when that
// region is over an eighth of the graph or a weight is negative (the
// recompute reports it).
type sssp struct {
	spec Spec
	root uint64
	// work is the edges the last update read (its repair). Protected by mu.
	work int
	// mark is the repairs' per-vertex marks (repair.Dists). Protected by
	// mu.
	mark repair.Marks
	// behind: a partial pull was skipped (UpdatePrior); the pull that
	// ends the sequence recomputes. Protected by mu.
	behind bool

	guarded[*ssspState]
}

type ssspState struct {
	ids  views.IDSpace
	dist []float64
	seq  uint64
	err  string // set when a negative weight was met: dist is not valid
}

func newSSSP(s Spec, root uint64) *sssp { return &sssp{spec: s, root: root} }

func (a *sssp) Spec() Spec { return a.spec }

func (a *sssp) Recompute(ctx context.Context, g *views.Topo) error {
	a.mu.Lock()
	a.behind = false // what the skipped partial pulls changed is in g
	a.mu.Unlock()
	dist, err := kernels.SSSP(ctx, g, kernels.Index(g, a.root))
	st := &ssspState{ids: g.IDs, dist: dist, seq: g.Seq}
	if errors.Is(err, kernels.ErrNegative) {
		st.err = err.Error()
	} else if err != nil {
		return err
	}
	a.swap(st)
	return nil
}

func (a *sssp) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	return a.update(ctx, g, edges, nil)
}

// UpdatePrior is Update knowing which upserts were new edges (u.Prior):
// on a weighted graph only an existing edge's upsert may have lengthened
// it, so only those are checked as lost supports (each check searches the
// edge's weight in its tail's list). A partial pull (G ahead of its
// operations, the rest in the next pulls) cannot be repaired from: the
// pull that ends it recomputes, as a stream that fell behind would.
func (a *sssp) UpdatePrior(ctx context.Context, u *views.TopoUpdate) (bool, error) {
	a.mu.Lock()
	if u.Partial {
		a.behind = true
		a.mu.Unlock()
		return false, nil
	}
	behind := a.behind
	a.behind = false
	a.mu.Unlock()
	if behind || len(u.Prior) != len(u.Edges) {
		return true, a.Recompute(ctx, u.G)
	}
	return a.update(ctx, u.G, u.Edges, u.Prior)
}

func (a *sssp) update(ctx context.Context, g *views.Topo, edges []views.Edge, prior []views.Prior) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	// Without weights every length is 1: the repair is bfs's, which knows
	// that no edge joins two vertices at the same distance (a zero length
	// could, so a weighted repair must look at those too).
	dist, ok, err := repair.Dists(g, st.dist, st.ids, edges, prior, a.root, math.Inf(1), !g.Out.Weighted(), nil, &a.work, &a.mark)
	if err != nil {
		return false, err
	}
	st.dist, st.ids = dist, g.IDs
	if !ok || st.err != "" { // a negative weight: the recompute reports it
		return true, a.unlocked(func() error { return a.Recompute(ctx, g) })
	}
	st.seq = g.Seq
	return false, ctx.Err()
}

// SSSPSummary is the result of an sssp analytic.
type SSSPSummary struct {
	Root    uint64  `json:"root"`
	Seq     uint64  `json:"seq"`
	Reached int     `json:"reached"`
	MaxDist float64 `json:"max_distance"`
	Error   string  `json:"error,omitempty"`
}

func (a *sssp) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	s := SSSPSummary{Root: a.root, Reached: 1}
	if a.st == nil {
		return s
	}
	s.Seq, s.Error, s.Reached = a.st.seq, a.st.err, 0
	for _, d := range a.st.dist {
		if !math.IsInf(d, 1) {
			s.Reached++
			s.MaxDist = math.Max(s.MaxDist, d)
		}
	}
	s.Reached = max(s.Reached, 1)
	return s
}

// VertexDistance is the per-vertex result of sssp (Reachable false: no
// path).
type VertexDistance struct {
	Distance  float64 `json:"distance"`
	Reachable bool    `json:"reachable"`
}

func (a *sssp) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if v == a.root {
		return VertexDistance{0, true}, true
	}
	if a.st == nil {
		return nil, false
	}
	i, ok := a.st.ids.Index(v)
	if !ok || math.IsInf(a.st.dist[i], 1) {
		return VertexDistance{}, true
	}
	return VertexDistance{a.st.dist[i], true}, true
}

func (st *ssspState) Sequence() uint64 { return st.seq }

// MemoryBytes is the size of the distances (8 bytes per vertex index) and
// of the repairs' marks (1).
func (a *sssp) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return repair.SliceBytes(a.st.dist) + a.mark.Bytes()
}
