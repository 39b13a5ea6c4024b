package analytics

import (
	"context"
	"sort"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// pagerank keeps PageRank over the vertices that have at least one edge
// (the present vertices, N of them): with damping d,
//
//	rank'(v) = (1-d)/N + d * (sum over in-edges (u,v) of rank(u)/outdeg(u)
//	                         + D/N),
//
// where D is the rank held by present vertices without out-edges. Ranks of
// absent vertices are 0. A recompute runs power iterations from 1/N until
// the L1 change of an iteration is at most the tolerance (or
// MaxIterations).
//
// An update pushes residuals (Andersen, Chung and Lang's forward push, in
// repair.Ranks) on an unnormalized form without global terms: the ranks
// are z/S, S the sum of z, where z solves
//
//	z(v) = 1 + d * sum over in-edges (u,v) of z(u)/outdeg(u)
//
// over the present vertices (summing the equation gives S = N + d*(S -
// the dangling z), and then z/S solves the equation above: the dangling
// mass and 1/N only scale z). A change of the graph changes this system
// only where it is: an edge (u,v) inserted or deleted moves u's
// contribution to v and rescales z(u); a vertex that appears or goes adds
// or drops its own equation. The update turns each change into residuals
// in O(1), then pushes every vertex whose residual is above its share of
// the target, so its work follows the change (and the tolerance), not the
// graph. A change too large for that (more edge reads than a budget) is
// finished by warm-started power iterations instead, which counts as a
// recompute.
//
// The tolerance, stated: the residual r = 1 + d*P'z - z has L1 norm R,
// and the ranks' L1 distance to the exact PageRank is at most about
// 2R/((1-d)S). A recompute leaves R/S at most d*tol (its last iteration's
// change, times d), so its ranks are within d*tol/(1-d) of the exact
// ones; an update stops once R/S is at most the larger of d*tol/2 and
// what the last recompute left, so it is as close (and within
// 2*d*tol/(1-d) of a recompute). Summary's Residual is R/S.
type pagerank struct {
	spec Spec
	// running is the memory of the run in progress (a power iteration's
	// next-rank array and inverse degrees, and the warm start's copy), 0
	// between runs.
	running atomic.Int64
	// behind: a partial pull found the state unable to follow; the pull
	// that ends the partial ones iterates on its graph. Protected by mu.
	behind bool
	// copied, when not nil, is called by run once the copy is made and
	// the pull released (a test's; set before the analytic runs).
	copied func()

	guarded[*repair.Ranks]
}

func newPageRank(s Spec) *pagerank { return &pagerank{spec: s} }

func (a *pagerank) Spec() Spec { return a.spec }

// run runs power iterations from rank (over g's indexes; nil: a cold
// start at 1/N) and swaps in the state of their ranks. It copies what
// they read of g first (kernels.PRGraph) and then, when release is not nil,
// releases g (the pull: the topology may advance while they run).
func (a *pagerank) run(ctx context.Context, g *views.Topo, rank []float64, release func()) error {
	// The run holds the copy of g's in-lists and out-degrees, two
	// contribution arrays (float64 at most), the inverse degrees, the warm
	// start's copy and the present indexes (their chunks and their join),
	// then the new state (29 bytes a vertex) beside the old one.
	a.running.Store((4*8+8+29)*int64(g.Len()) + 12*int64(g.Bound()) + 4*g.In.Edges())
	defer a.running.Store(0)
	c, err := kernels.CopyForPageRank(ctx, g)
	if release != nil {
		release()
	}
	if err != nil {
		return err
	}
	if a.copied != nil {
		a.copied()
	}
	rank, iters, delta, err := kernels.PageRank(ctx, c, rank, a.spec.Damping, a.spec.Tolerance, a.spec.MaxIterations)
	if err != nil {
		return err
	}
	st := repair.FromRanks(c, rank, a.spec.Damping)
	st.Iterations, st.Delta = iters, delta
	a.mu.Lock()
	a.st, a.behind = st, false
	a.mu.Unlock()
	return nil
}

func (a *pagerank) Recompute(ctx context.Context, g *views.Topo) error {
	return a.run(ctx, g, nil, nil)
}

// recomputeReleasing is Recompute on u's graph, u released once copied
// (see releaser).
func (a *pagerank) recomputeReleasing(ctx context.Context, u *views.TopoUpdate) error {
	return a.run(ctx, u.G, nil, u.Done)
}

// warm runs power iterations on g from the ranks held (a recompute that
// starts close); see run for release.
func (a *pagerank) warm(ctx context.Context, g *views.Topo, release func()) error {
	a.mu.RLock()
	st := a.st
	var x []float64
	if st != nil {
		x = repair.Resize(st.Ranks(), st.IDs(), g.IDs, 0)
	}
	a.mu.RUnlock()
	return a.run(ctx, g, x, release)
}

// Update without what was there before each operation cannot tell which
// edges are new: it runs warm-started power iterations (a recompute). The
// registry calls UpdatePrior (the stream of a pagerank has Presence).
func (a *pagerank) Update(ctx context.Context, g *views.Topo, _ []views.Edge) (bool, error) {
	return true, a.warm(ctx, g, nil)
}

// UpdatePrior applies one pull of a stream with Presence: each operation
// becomes residuals (repair.Ranks.Apply), then, unless the pull is partial (G
// is then ahead of its operations, and the next pulls bring the rest),
// the pushes bring the residual to the target. A change the pushes cannot
// finish within half the graph's edge reads (repair.Ranks.Push) is finished by warm-started power
// iterations (reported as a recompute).
func (a *pagerank) UpdatePrior(ctx context.Context, u *views.TopoUpdate) (bool, error) {
	g := u.G
	a.mu.Lock()
	st := a.st
	ok := st != nil && !a.behind && len(u.Prior) == len(u.Edges)
	if ok && st.Restored {
		// Ranks from a checkpoint, not yet a state: built on G once G is
		// at the end of the operations (G then holds them all).
		if u.Partial {
			a.mu.Unlock()
			return false, nil
		}
		var err error
		if st, err = st.Rebuilt(ctx, g, a.spec.Damping); err != nil {
			a.mu.Unlock()
			return false, err
		}
		a.st = st
	} else if ok {
		ok = st.Apply(g, u.Edges, u.Prior, a.spec.Damping)
		if ok && u.Partial {
			a.mu.Unlock()
			return false, nil
		}
	}
	if u.Partial {
		// The state cannot follow (ok is false): iterating on G now would
		// count again the operations the next pulls bring; the pull that
		// ends the partial ones iterates instead.
		a.behind = true
		a.mu.Unlock()
		return false, nil
	}
	ok = ok && st.Settle(g) && st.Push(ctx, g, a.spec.Damping, a.spec.Tolerance)
	if ok {
		st.Seq = g.Seq
	}
	a.mu.Unlock()
	if ok {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	// The iterations run on a copy, the pull released: u (its G, Edges
	// and Prior) must not be read after this.
	return true, a.warm(ctx, g, u.Done)
}

// PageRankSummary is the result of a pagerank analytic.
type PageRankSummary struct {
	Seq        uint64  `json:"seq"`
	Vertices   int     `json:"vertices"`   // present vertices (N)
	Iterations int     `json:"iterations"` // of the last recompute
	Delta      float64 `json:"delta"`      // L1 change of its last iteration
	// Residual is the L1 norm of the residual over S (see pagerank): the
	// ranks are within about 2*Residual/(1-damping) of the exact ones.
	Residual float64 `json:"residual"`
	// Pushes and EdgesRead: the work of the last update.
	Pushes    int          `json:"pushes"`
	EdgesRead int          `json:"edges_read"`
	Top       []VertexRank `json:"top"` // the 10 highest ranks
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
	st := a.st
	if st == nil {
		return s
	}
	s.Seq, s.Vertices, s.Iterations, s.Delta = st.Seq, st.Present(), st.Iterations, st.Delta
	s.Pushes, s.EdgesRead = st.Pushes, st.Read
	s.Residual = st.Residual()
	z, sum, in := st.Unscaled()
	s.Top = topRanks(st.IDs(), z, in, k)
	for i := range s.Top {
		s.Top[i].Rank /= sum
	}
	return s
}

// topRanks returns the k present vertices of highest z (the highest
// ranks, unscaled), ties by vertex id, with a min-heap of the best k seen
// (O(n log k)).
func topRanks(ids views.IDSpace, z []float64, in []bool, k int) []VertexRank {
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
	for i, r := range z {
		if !in[i] || r <= 0 {
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
	i, ok := a.st.IDs().Index(v)
	if !ok {
		return VertexRank{v, 0}, true
	}
	return VertexRank{v, a.st.Rank(i)}, true
}

// Top returns the k highest-ranked vertices.
func (a *pagerank) Top(k int) []VertexRank { return a.summary(k).Top }

// MemoryBytes is the size of the state (29 bytes per vertex index and the
// lists of an update), and while power iterations run, of what they hold
// and the state they build (69 more) and of the copy they read (12 bytes
// a vertex and 4 an edge, kernels.PRGraph).
func (a *pagerank) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return a.st.Bytes() + a.running.Load()
}
