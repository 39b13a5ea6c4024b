package analytics

import (
	"context"
	"errors"
	"math"

	"github.com/graphtide/graphtide/internal/views"
)

// sssp keeps shortest-path distances from root along out-edges, edge
// weights as lengths (they must not be negative).
//
// INVARIANT (between calls, unless err is set): dist is exactly the
// shortest distance in the graph at seq (+Inf when unreachable). An edge
// (a, b, w) is tight when dist[a] + w = dist[b]; removing or lengthening an
// edge that is not tight changes no distance, inserting or shortening one
// only lowers distances, which relax from its head. Otherwise: recompute.
type sssp struct {
	spec Spec
	root uint64

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
	st := &ssspState{ids: g.IDs, dist: make([]float64, g.Len()), seq: g.Seq}
	parallelFor(len(st.dist), 1<<16, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			st.dist[i] = math.Inf(1)
		}
	})
	if ri := index(g, a.root); ri >= 0 {
		st.dist[ri] = 0
		if err := deltaStep(ctx, g, st.dist, []int32{ri}); errors.Is(err, errNegative) {
			st.err = err.Error()
		} else if err != nil {
			return err
		}
	}
	a.swap(st)
	return nil
}

// supported reports whether b keeps its distance through an in-edge from
// a vertex strictly closer (so that, by induction on the distance, every
// head of a changed edge that is supported keeps its distance).
func supported(g *views.Topo, dist []float64, b int32) bool {
	db := dist[b]
	for _, u := range g.In.Nbrs(b) {
		if du := dist[u]; du < db {
			if w, ok := g.Weight(u, b); ok && du+w == db {
				return true
			}
		}
	}
	return false
}

func (a *sssp) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	a.mu.RLock()
	failed := a.st.err != ""
	a.mu.RUnlock()
	if failed {
		return true, a.Recompute(ctx, g)
	}
	n := net(edges)
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	var dist func(uint64) float64
	st.dist, dist = rooted(st.dist, st.ids, g.IDs, a.root, 0, math.Inf(1))
	st.ids = g.IDs
	recompute := false
	for _, x := range n.VDels {
		recompute = recompute || !math.IsInf(dist(x), 1)
	}
	// The head of a deleted edge, or of one whose weight changed, keeps its
	// distance when it is supported.
	check := func(src, dst uint64) {
		if recompute || dst == a.root || math.IsInf(dist(src), 1) || math.IsInf(dist(dst), 1) {
			return
		}
		recompute = !supported(g, st.dist, index(g, dst))
	}
	for _, d := range n.Deletes {
		check(d[0], d[1])
	}
	var seeds []int32
	for _, op := range n.Upserts {
		if op.Weight < 0 {
			recompute = true // the recompute reports it
		}
		check(op.Src, op.Dst)
		if recompute {
			break
		}
		if nd := dist(op.Src) + op.Weight; nd < dist(op.Dst) {
			j := index(g, op.Dst)
			if j < 0 {
				return false, unindexed(op.Dst)
			}
			st.dist[j] = nd
			seeds = append(seeds, j)
		}
	}
	if recompute {
		return true, a.unlocked(func() error { return a.Recompute(ctx, g) })
	}
	if err := deltaStep(ctx, g, st.dist, seeds); err != nil {
		return false, err
	}
	st.seq = g.Seq
	return false, nil
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

func (st *ssspState) sequence() uint64 { return st.seq }

// MemoryBytes is the size of the distances (8 bytes per vertex index).
func (a *sssp) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return sliceBytes(a.st.dist)
}
