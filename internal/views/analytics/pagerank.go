package analytics

import (
	"context"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/views"
)

// pagerank keeps PageRank over the vertices that have at least one edge
// (the present vertices, N of them): with damping d,
//
//	rank'(v) = (1-d)/N + d * (sum over in-edges (u,v) of rank(u)/outdeg(u)
//	                         + D/N),
//
// where D is the rank held by present vertices without out-edges. Ranks of
// absent vertices are 0. Power iteration runs until the L1 change of an
// iteration is at most the tolerance (or MaxIterations); an update starts
// from the previous ranks (warm start), a recompute from 1/N.
type pagerank struct {
	spec Spec
	// running is the memory of the run in progress (its next-rank array
	// and presence flags, and the warm start's copy), 0 between runs.
	running atomic.Int64

	guarded[*prState]
}

type prState struct {
	ids        views.IDSpace
	rank       []float64
	seq        uint64
	present    int     // N
	iterations int     // in the last run
	delta      float64 // L1 change of the last iteration
}

func newPageRank(s Spec) *pagerank { return &pagerank{spec: s} }

func (a *pagerank) Spec() Spec { return a.spec }

func (a *pagerank) run(ctx context.Context, g *views.Topo, warm *prState) error {
	var rank []float64 // nil: a cold start
	if warm != nil {
		rank = resize(slices.Clone(warm.rank), warm.ids, g.IDs, 0)
	}
	// The run holds two contribution arrays, the inverse degrees and the
	// warm start's copy.
	a.running.Store(4 * 8 * int64(g.Len()))
	defer a.running.Store(0)
	rank, np, iters, delta, err := prKernel(ctx, g, rank, a.spec.Damping, a.spec.Tolerance, a.spec.MaxIterations)
	if err != nil {
		return err
	}
	a.swap(&prState{ids: g.IDs, rank: rank, seq: g.Seq, present: np, iterations: iters, delta: delta})
	return nil
}

func (a *pagerank) Recompute(ctx context.Context, g *views.Topo) error { return a.run(ctx, g, nil) }

// Update warm-starts from the previous ranks; a vertex that appears starts
// at 0 and the iteration redistributes mass to it.
func (a *pagerank) Update(ctx context.Context, g *views.Topo, _ []views.Edge) (bool, error) {
	a.mu.RLock()
	warm := a.st
	a.mu.RUnlock()
	return false, a.run(ctx, g, warm)
}

// PageRankSummary is the result of a pagerank analytic.
type PageRankSummary struct {
	Seq        uint64       `json:"seq"`
	Vertices   int          `json:"vertices"` // present vertices (N)
	Iterations int          `json:"iterations"`
	Delta      float64      `json:"delta"` // L1 change of the last iteration
	Top        []VertexRank `json:"top"`   // the 10 highest ranks
}

// VertexRank is a vertex with its rank (the per-vertex result of pagerank).
type VertexRank struct {
	Vertex uint64  `json:"vertex"`
	Rank   float64 `json:"rank"`
}

func (a *pagerank) Summary() any { return a.summary(10) }

func (a *pagerank) summary(k int) PageRankSummary {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var s PageRankSummary
	if a.st == nil {
		return s
	}
	s.Seq, s.Vertices, s.Iterations, s.Delta = a.st.seq, a.st.present, a.st.iterations, a.st.delta
	s.Top = topRanks(a.st.ids, a.st.rank, k)
	return s
}

// topRanks returns the k highest ranks, ties by vertex id, with a min-heap
// of the best k seen (O(n log k)).
func topRanks(ids views.IDSpace, rank []float64, k int) []VertexRank {
	if k <= 0 {
		return nil
	}
	// worse orders by rank, then by larger id: the heap's root is the one
	// to drop first.
	worse := func(a, b VertexRank) bool { return a.Rank < b.Rank || a.Rank == b.Rank && a.Vertex > b.Vertex }
	h := make([]VertexRank, 0, k)
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(h) && worse(h[l], h[m]) {
				m = l
			}
			if l+1 < len(h) && worse(h[l+1], h[m]) {
				m = l + 1
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i, r := range rank {
		if r <= 0 {
			continue
		}
		x := VertexRank{ids.ID(i), r}
		if len(h) < k {
			h = append(h, x)
			for j := len(h) - 1; j > 0 && worse(h[j], h[(j-1)/2]); j = (j - 1) / 2 {
				h[j], h[(j-1)/2] = h[(j-1)/2], h[j]
			}
		} else if worse(h[0], x) {
			h[0] = x
			down(0)
		}
	}
	sort.Slice(h, func(i, j int) bool { return worse(h[j], h[i]) })
	return h
}

func (a *pagerank) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return nil, false
	}
	i, ok := a.st.ids.Index(v)
	if !ok {
		return VertexRank{v, 0}, true
	}
	return VertexRank{v, a.st.rank[i]}, true
}

// Top returns the k highest-ranked vertices.
func (a *pagerank) Top(k int) []VertexRank { return a.summary(k).Top }

func (st *prState) sequence() uint64 { return st.seq }

// MemoryBytes is the size of the ranks (8 bytes per vertex index), and
// while an update runs, of what the run holds (32 more).
func (a *pagerank) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return sliceBytes(a.st.rank) + a.running.Load()
}
