package analytics

import (
	"context"
	"math"
	"sort"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/engine"
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
// An update pushes residuals (Andersen, Chung and Lang's forward push) on
// an unnormalized form without global terms: the ranks are z/S, S the sum
// of z, where z solves
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

	guarded[*prState]
}

// prState is a pagerank's state over ids. INVARIANTS, between updates
// (and, for the graph of the operations applied so far, between the pulls
// of a partial update):
//   - a present vertex v (in[v]) has r[v] = 1 + sum over its in-edges
//     (u,v) of c[u] - z[v];
//   - c[u] = d*z[u]/k[u] when k[u] > 0, else 0, k[u] being u's out-degree;
//   - an absent vertex has z, r, c and k all 0;
//   - sum is the sum of z, rsum that of |r| (both up to rounding), present
//     the count of in.
//
// Protected by the pagerank's mu: an update changes it in place under the
// write lock.
type prState struct {
	ids     views.IDSpace
	seq     uint64
	z, r, c []float64
	k       []int32
	in      []bool
	sum     float64
	rsum    float64
	present int
	// floor is R/S as the last recompute left it: an update's target is
	// no tighter (a recompute cut short by MaxIterations leaves more).
	floor float64
	// touched lists the vertices the operations applied since the last
	// push changed (their residuals, and perhaps their presence); after a
	// partial pull they are operations after seq, not pushed yet.
	touched []int32
	// restored: ranks loaded from a checkpoint, held in z over ids with
	// sum 1 (in: those above 0), not yet a state (no r, c or k): the
	// first update builds one on its graph.
	restored bool
	// queued marks the vertices in the push queue (all false between
	// updates).
	queued []bool
	// Of the last run: iterations and last change (a recompute), or
	// pushes and edges read (an update).
	iterations   int
	delta        float64
	pushes, read int
}

func newPageRank(s Spec) *pagerank { return &pagerank{spec: s} }

func (a *pagerank) Spec() Spec { return a.spec }

// rank is vertex i's rank.
func (st *prState) rank(i int) float64 {
	if !st.in[i] || st.sum <= 0 {
		return 0
	}
	return st.z[i] / st.sum
}

// ranks are all of them (a copy, over st.ids).
func (st *prState) ranks() []float64 {
	x := make([]float64, len(st.z))
	for i := range x {
		x[i] = st.rank(i)
	}
	return x
}

// fromRanks builds the state of ranks x (over g's indexes; taken over and
// overwritten) on g: z = x/gg, where gg = ((1-d)*X + d*D)/N for X the sum
// of x and D its dangling part (the scale at which x solves z's system
// when x is a fixed point), then c, k and the exact residuals, pulled over
// in-edges. Ranks of absent vertices are dropped.
func fromRanks(g *kernels.PRGraph, x []float64, d float64) *prState {
	n := g.Len()
	st := &prState{ids: g.IDs, seq: g.Seq, z: x, r: make([]float64, n), c: make([]float64, n),
		k: make([]int32, n), in: make([]bool, n), queued: make([]bool, n)}
	nw := kernels.Workers()
	np, tot, dang := make([]int, nw), make([]float64, nw), make([]float64, nw)
	kernels.ParallelFor(nw, n, 1<<14, func(w, lo, hi int) {
		for i := lo; i < hi; i++ {
			k := g.OutDeg(int32(i))
			st.k[i] = k
			if k == 0 && g.InDeg(int32(i)) == 0 {
				x[i] = 0
				continue
			}
			st.in[i] = true
			np[w]++
			tot[w] += x[i]
			if k == 0 {
				dang[w] += x[i]
			}
		}
	})
	var xs, ds float64
	for w := range nw {
		st.present += np[w]
		xs += tot[w]
		ds += dang[w]
	}
	gg := ((1-d)*xs + d*ds) / float64(st.present)
	if st.present == 0 || !(gg > 0) {
		// Nothing present, or no ranks to start from: z = 0, so every
		// present vertex's residual is its 1.
		gg = math.Inf(1)
	}
	zs, rs := make([]float64, nw), make([]float64, nw)
	kernels.ParallelFor(nw, n, 1<<14, func(w, lo, hi int) {
		s := 0.0
		for i := lo; i < hi; i++ {
			x[i] /= gg
			s += x[i]
			if k := st.k[i]; k > 0 {
				st.c[i] = d * x[i] / float64(k)
			}
		}
		zs[w] += s
	})
	kernels.ParallelFor(nw, n, 1<<12, func(w, lo, hi int) {
		s := 0.0
		for i := lo; i < hi; i++ {
			if !st.in[i] {
				continue
			}
			in := 0.0
			for _, u := range g.InNbrs(int32(i)) {
				in += st.c[u]
			}
			st.r[i] = 1 + in - x[i]
			s += math.Abs(st.r[i])
		}
		rs[w] += s
	})
	for w := range nw {
		st.sum += zs[w]
		st.rsum += rs[w]
	}
	if st.sum > 0 {
		st.floor = st.rsum / st.sum
	}
	return st
}

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
	st := fromRanks(c, rank, a.spec.Damping)
	st.iterations, st.delta = iters, delta
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
		x = repair.Resize(st.ranks(), st.ids, g.IDs, 0)
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
// becomes residuals (prState.apply), then, unless the pull is partial (G
// is then ahead of its operations, and the next pulls bring the rest),
// the pushes bring the residual to the target. A change the pushes cannot
// finish within pushBudget edge reads is finished by warm-started power
// iterations (reported as a recompute).
func (a *pagerank) UpdatePrior(ctx context.Context, u *views.TopoUpdate) (bool, error) {
	g := u.G
	a.mu.Lock()
	st := a.st
	ok := st != nil && !a.behind && len(u.Prior) == len(u.Edges)
	if ok && st.restored {
		// Ranks from a checkpoint, not yet a state: built on G once G is
		// at the end of the operations (G then holds them all).
		if u.Partial {
			a.mu.Unlock()
			return false, nil
		}
		c, err := kernels.CopyForPageRank(ctx, g)
		if err != nil {
			a.mu.Unlock()
			return false, err
		}
		st = fromRanks(c, repair.Resize(st.ranks(), st.ids, g.IDs, 0), a.spec.Damping)
		st.floor = a.st.floor // what G's changes add is to be pushed
		// Still the checkpoint's seq: the ranks are not G's result until
		// the pushes (or the iterations after them) bring them to the
		// target, and readers see this state meanwhile.
		st.seq = a.st.seq
		a.st = st
	} else if ok {
		ok = st.apply(g, u.Edges, u.Prior, a.spec.Damping)
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
	ok = ok && st.settle(g)
	if ok {
		ok = st.push(ctx, g, a.spec, pushBudget(g))
	}
	if ok {
		st.seq = g.Seq
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

// pushBudget is how many edges an update's pushes may read before
// warm-started power iterations are the cheaper way to finish: half of
// what the graph holds (an iteration reads every edge once, in order and
// on every core; pushes read them in no order, on one).
func pushBudget(g *views.Topo) int64 { return max(1<<16, g.Out.Edges()/2) }

// pushRatio: an update pushes only when the residual is at most this many
// times its target. The pushes read about 0.05 to 0.1*(residual/target)
// times the graph's edges (R-MAT and Kronecker graphs of 2^17 vertices at
// tolerance 1e-4, streams of their own held-out edges: 0.09 at 1.3 times
// the target, 0.13 to 0.5 at 2.5 to 3, 2.2 at 25, 8 at 155), one at a
// time and at about ten times what a power iteration pays per edge, so
// warm-started power iterations (about four passes over the edges, on
// every core) are the cheaper way beyond about twice the target.
//
// Operations met in proportion to degree (a stream like the graph's own
// edges) add about 2/E each to R/S, E the graph's edges (a hub's share
// moves along all its edges): at tolerance 1e-4 (target 4.25e-5), a batch
// of more than about E/50,000 operations is beyond pushRatio (300 at 16M
// edges), at 1e-6 one of more than E/5,000,000.
const pushRatio = 2

// addR adds x to v's residual.
func (st *prState) addR(v int32, x float64) {
	old := st.r[v]
	st.r[v] = old + x
	st.rsum += math.Abs(st.r[v]) - math.Abs(old)
}

// setZ sets z[v], keeping sum and v's residual.
func (st *prState) setZ(v int32, z float64) {
	dz := z - st.z[v]
	st.z[v] = z
	st.sum += dz
	st.addR(v, -dz)
}

// enter makes v present: its equation joins with z[v] = 0 (so r[v] = 1,
// its in-edges' contributions added as they are linked).
func (st *prState) enter(v int32) {
	if !st.in[v] {
		st.in[v] = true
		st.present++
		st.addR(v, 1)
	}
}

// apply turns the operations of one pull (over g, whose id space must
// extend the state's) into residuals: an edge (u,v) that did not exist
// and is upserted links u to v, one that existed and is deleted unlinks
// it; upserts of existing edges change only a weight, which PageRank does
// not read. False when the state cannot follow (the ids were remapped, or
// an operation contradicts the state; the caller recomputes).
func (st *prState) apply(g *views.Topo, edges []views.Edge, prior []views.Prior, d float64) bool {
	if !g.IDs.Extends(st.ids) {
		return false
	}
	st.z = repair.Resize(st.z, st.ids, g.IDs, 0)
	st.r = repair.Resize(st.r, st.ids, g.IDs, 0)
	st.c = repair.Resize(st.c, st.ids, g.IDs, 0)
	st.k = repair.Resize(st.k, st.ids, g.IDs, 0)
	st.in = repair.Resize(st.in, st.ids, g.IDs, false)
	st.queued = repair.Resize(st.queued, st.ids, g.IDs, false)
	st.ids = g.IDs
	for j, e := range edges {
		link := e.Op.Kind == engine.OpUpsert
		switch {
		case e.Op.Kind == engine.OpDeleteVertex:
			continue // its edges follow as Expansion deletes
		case link && prior[j] != views.WasAbsent, !link && prior[j] == views.WasAbsent:
			continue
		}
		u, v := kernels.Index(g, e.Op.Src), kernels.Index(g, e.Op.Dst)
		if u < 0 || v < 0 {
			return false
		}
		if link {
			st.link(u, v, d)
		} else if !st.unlink(u, v, d) {
			return false
		}
		st.touched = append(st.touched, u, v)
	}
	return true
}

// link adds the edge (u,v): v gets u's contribution, and z[u] is rescaled
// so that c[u] stays d*z[u]/k[u] (its other out-neighbors' residuals then
// stay as they are).
func (st *prState) link(u, v int32, d float64) {
	st.enter(u)
	st.enter(v)
	if k := st.k[u]; k == 0 {
		st.c[u] = d * st.z[u]
	} else {
		st.setZ(u, float64(k+1)*st.c[u]/d)
	}
	st.k[u]++
	st.addR(v, st.c[u])
}

// unlink removes the edge (u,v), which the state holds: v loses u's
// contribution and z[u] is rescaled (a vertex left without out-edges
// contributes nothing). False when the state holds no such edge.
func (st *prState) unlink(u, v int32, d float64) bool {
	k := st.k[u]
	if k <= 0 || !st.in[u] || !st.in[v] {
		return false
	}
	st.addR(v, -st.c[u])
	if k == 1 {
		st.c[u] = 0
	} else {
		st.setZ(u, float64(k-1)*st.c[u]/d)
	}
	st.k[u]--
	return true
}

// settle, once the state has applied every operation up to g's seq, drops
// the equations of the vertices left without edges, and checks the
// out-degrees it kept against g's. False on a mismatch (a bug: the
// caller recomputes).
func (st *prState) settle(g *views.Topo) bool {
	for _, v := range st.touched {
		if st.k[v] != g.Out.Deg(v) {
			return false
		}
		if st.in[v] && st.k[v] == 0 && g.In.Deg(v) == 0 {
			st.rsum -= math.Abs(st.r[v])
			st.sum -= st.z[v]
			st.z[v], st.r[v], st.c[v], st.in[v] = 0, 0, 0, false
			st.present--
		}
	}
	return true
}

// push brings the residual's L1 norm to at most target = max(d*tol/2,
// floor) times sum: vertex v is pushed while |r[v]| is above its share
// base*(k[v]+1), the shares of the present vertices summing to target/2.
// A push moves r[u] into z[u] and d*r[u]/k[u] to each out-neighbor's
// residual. It starts from the vertices the operations touched; should
// the sum still be above target when none is above its share (shares
// shrink as the graph grows, so a vertex left below its share once may be
// above it now), every vertex is checked. False when the residual is
// above pushRatio times the target, when the pushes would read more than
// budget edges, or when ctx ends (the state keeps its
// invariants: the residual is only larger than the target).
func (st *prState) push(ctx context.Context, g *views.Topo, s Spec, budget int64) bool {
	d := s.Damping
	rel := max(d*s.Tolerance/2, st.floor) // the target over sum
	target := rel * st.sum
	if st.rsum > pushRatio*target {
		st.touched = st.touched[:0]
		return false
	}
	base := target / 2 / float64(g.Out.Edges()+int64(st.present))
	q := st.touched[:0]
	enqueue := func(v int32) {
		if !st.queued[v] && st.in[v] && math.Abs(st.r[v]) > base*float64(st.k[v]+1) {
			st.queued[v] = true
			q = append(q, v)
		}
	}
	for _, v := range st.touched {
		enqueue(v)
	}
	st.pushes, st.read = 0, 0
	var read int64
	defer func() {
		for _, v := range q {
			st.queued[v] = false
		}
		st.touched = q[:0]
	}()
	for scans := 0; ; scans++ {
		for h := 0; h < len(q) && st.rsum > rel*st.sum; h++ {
			u := q[h]
			st.queued[u] = false
			if h >= 1<<14 && h >= len(q)/2 { // drop the done half
				q = q[:copy(q, q[h+1:])]
				h = -1
			}
			rho, k := st.r[u], st.k[u]
			if math.Abs(rho) <= base*float64(k+1) {
				continue
			}
			// Checked before the push changes anything: the state keeps
			// its invariants when this gives up.
			if read += int64(k); read > budget || st.pushes&4095 == 4095 && ctx.Err() != nil {
				st.read = int(read)
				return false
			}
			st.r[u] = 0
			st.rsum -= math.Abs(rho)
			st.z[u] += rho
			st.sum += rho
			st.pushes++
			if k == 0 {
				continue
			}
			delta := d * rho / float64(k)
			st.c[u] += delta
			nb := g.Out.Nbrs(u)
			for _, v := range nb {
				st.addR(v, delta)
				enqueue(v)
			}
		}
		st.read = int(read)
		if st.rsum <= rel*st.sum {
			return true
		}
		q = q[:0]
		if scans == 1 {
			// Every vertex is at or below its share: only rounding in
			// rsum can say otherwise.
			return true
		}
		// Count the residual afresh (rounding drifts) and queue every
		// vertex above its share.
		st.rsum = 0
		for i, x := range st.r {
			st.rsum += math.Abs(x)
			enqueue(int32(i))
		}
		if st.rsum <= rel*st.sum {
			return true
		}
	}
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
	s.Seq, s.Vertices, s.Iterations, s.Delta = st.seq, st.present, st.iterations, st.delta
	s.Pushes, s.EdgesRead = st.pushes, st.read
	switch {
	case st.restored:
		s.Residual = st.floor // what the checkpoint's run left, at most
	case st.sum > 0:
		s.Residual = st.rsum / st.sum
	}
	s.Top = topRanks(st.ids, st.z, st.in, k)
	for i := range s.Top {
		s.Top[i].Rank /= st.sum
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
	i, ok := a.st.ids.Index(v)
	if !ok {
		return VertexRank{v, 0}, true
	}
	return VertexRank{v, a.st.rank(i)}, true
}

// Top returns the k highest-ranked vertices.
func (a *pagerank) Top(k int) []VertexRank { return a.summary(k).Top }

func (st *prState) Sequence() uint64 { return st.seq }

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
	st := a.st
	return repair.SliceBytes(st.z) + repair.SliceBytes(st.r) + repair.SliceBytes(st.c) + repair.SliceBytes(st.k) + repair.SliceBytes(st.in) +
		repair.SliceBytes(st.queued) + repair.SliceBytes(st.touched) + a.running.Load()
}
