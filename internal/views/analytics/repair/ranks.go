package repair

import (
	"context"
	"math"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
)

// Ranks are a pagerank's state over ids: PageRank (as package
// analytics's pagerank defines it) in the unnormalized form z, the ranks
// being z/sum, kept by pushing residuals (Andersen, Chung and Lang's
// forward push) after each batch. INVARIANTS, between updates (and, for
// the graph of the operations applied so far, between the pulls of a
// partial update):
//   - a present vertex v (in[v]) has r[v] = 1 + sum over its in-edges
//     (u,v) of c[u] - z[v];
//   - c[u] = d*z[u]/k[u] when k[u] > 0, else 0, k[u] being u's out-degree;
//   - an absent vertex has z, r, c and k all 0;
//   - sum is the sum of z, rsum that of |r| (both up to rounding), present
//     the count of in.
//
// The caller serializes its use (the pagerank analytic changes it in
// place under its write lock).
type Ranks struct {
	ids     views.IDSpace
	z, r, c []float64
	k       []int32
	in      []bool
	sum     float64
	rsum    float64
	present int
	// touched lists the vertices the operations applied since the last
	// push changed (their residuals, and perhaps their presence); after a
	// partial pull they are operations after Seq, not pushed yet.
	touched []int32
	// queued marks the vertices in the push queue (all false between
	// updates).
	queued []bool

	// Seq is the seq of the graph the ranks are of (the caller's to set
	// once they are: see Push).
	Seq uint64
	// Floor is R/S as the last recompute left it: an update's target is
	// no tighter (a recompute cut short by MaxIterations leaves more).
	Floor float64
	// Restored: ranks loaded from a checkpoint (LoadRanks), held in z
	// over ids with sum 1 (in: those above 0), not yet a state (no r, c
	// or k): Rebuilt builds one on the first update's graph.
	Restored bool
	// Of the last run: iterations and last change (a recompute, the
	// caller's to set), or pushes and edges read (an update, Push's).
	Iterations   int
	Delta        float64
	Pushes, Read int
}

// LoadRanks are restored ranks (see Restored) over ids at seq, rank
// taken over; present, iterations and delta are the figures of the run
// that computed them, floor its R/S.
func LoadRanks(ids views.IDSpace, rank []float64, seq uint64, present, iterations int, delta, floor float64) *Ranks {
	in := make([]bool, len(rank))
	for i, x := range rank {
		in[i] = x > 0
	}
	return &Ranks{ids: ids, z: rank, in: in, sum: 1, Seq: seq, present: present, Iterations: iterations, Delta: delta,
		Floor: floor, Restored: true}
}

// Rebuilt is the state of restored ranks on g (which holds every
// operation up to its seq), built with damping d; it keeps their Floor
// (what g's changes add is to be pushed) and their Seq (the ranks are not
// g's result until pushes, or iterations after them, bring them to the
// target, and readers see this state meanwhile).
func (st *Ranks) Rebuilt(ctx context.Context, g *views.Topo, d float64) (*Ranks, error) {
	c, err := kernels.CopyForPageRank(ctx, g)
	if err != nil {
		return nil, err
	}
	nst := FromRanks(c, Resize(st.Ranks(), st.ids, g.IDs, 0), d)
	nst.Floor, nst.Seq = st.Floor, st.Seq
	return nst, nil
}

// IDs is the id space the ranks are over.
func (st *Ranks) IDs() views.IDSpace { return st.ids }

// Present is how many vertices have an edge (N).
func (st *Ranks) Present() int { return st.present }

// Residual is R/S, the residual's L1 norm over sum (restored ranks: the
// Floor their run left, at most).
func (st *Ranks) Residual() float64 {
	switch {
	case st.Restored:
		return st.Floor
	case st.sum > 0:
		return st.rsum / st.sum
	}
	return 0
}

// Unscaled are z, its sum and the present vertices, over IDs: the caller
// only reads them, and not past the next update.
func (st *Ranks) Unscaled() (z []float64, sum float64, in []bool) { return st.z, st.sum, st.in }

// Sequence is Seq.
func (st *Ranks) Sequence() uint64 { return st.Seq }

// Bytes is the size of the state (29 bytes per vertex index and the lists
// of an update).
func (st *Ranks) Bytes() int64 {
	return SliceBytes(st.z) + SliceBytes(st.r) + SliceBytes(st.c) + SliceBytes(st.k) + SliceBytes(st.in) +
		SliceBytes(st.queued) + SliceBytes(st.touched)
}

// Rank is vertex i's rank.
func (st *Ranks) Rank(i int) float64 {
	if !st.in[i] || st.sum <= 0 {
		return 0
	}
	return st.z[i] / st.sum
}

// Ranks are all of them (a copy, over st.ids).
func (st *Ranks) Ranks() []float64 {
	x := make([]float64, len(st.z))
	for i := range x {
		x[i] = st.Rank(i)
	}
	return x
}

// FromRanks builds the state of ranks x (over g's indexes; taken over and
// overwritten) on g: z = x/gg, where gg = ((1-d)*X + d*D)/N for X the sum
// of x and D its dangling part (the scale at which x solves z's system
// when x is a fixed point), then c, k and the exact residuals, pulled over
// in-edges. Ranks of absent vertices are dropped.
func FromRanks(g *kernels.PRGraph, x []float64, d float64) *Ranks {
	n := g.Len()
	st := &Ranks{ids: g.IDs, Seq: g.Seq, z: x, r: make([]float64, n), c: make([]float64, n),
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
		st.Floor = st.rsum / st.sum
	}
	return st
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
func (st *Ranks) addR(v int32, x float64) {
	old := st.r[v]
	st.r[v] = old + x
	st.rsum += math.Abs(st.r[v]) - math.Abs(old)
}

// setZ sets z[v], keeping sum and v's residual.
func (st *Ranks) setZ(v int32, z float64) {
	dz := z - st.z[v]
	st.z[v] = z
	st.sum += dz
	st.addR(v, -dz)
}

// enter makes v present: its equation joins with z[v] = 0 (so r[v] = 1,
// its in-edges' contributions added as they are linked).
func (st *Ranks) enter(v int32) {
	if !st.in[v] {
		st.in[v] = true
		st.present++
		st.addR(v, 1)
	}
}

// Apply turns the operations of one pull (over g, whose id space must
// extend the state's) into residuals: an edge (u,v) that did not exist
// and is upserted links u to v, one that existed and is deleted unlinks
// it; upserts of existing edges change only a weight, which PageRank does
// not read. False when the state cannot follow (the ids were remapped, or
// an operation contradicts the state; the caller recomputes).
func (st *Ranks) Apply(g *views.Topo, edges []views.Edge, prior []views.Prior, d float64) bool {
	if !g.IDs.Extends(st.ids) {
		return false
	}
	st.z = Resize(st.z, st.ids, g.IDs, 0)
	st.r = Resize(st.r, st.ids, g.IDs, 0)
	st.c = Resize(st.c, st.ids, g.IDs, 0)
	st.k = Resize(st.k, st.ids, g.IDs, 0)
	st.in = Resize(st.in, st.ids, g.IDs, false)
	st.queued = Resize(st.queued, st.ids, g.IDs, false)
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
func (st *Ranks) link(u, v int32, d float64) {
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
func (st *Ranks) unlink(u, v int32, d float64) bool {
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

// Settle drops the equations of the vertices left without edges, once
// the state has applied every operation up to g's seq, and checks the
// out-degrees it kept against g's. False on a mismatch (a bug: the
// caller recomputes).
func (st *Ranks) Settle(g *views.Topo) bool {
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

// Push brings the residual's L1 norm to at most target = max(d*tol/2,
// floor) times sum: vertex v is pushed while |r[v]| is above its share
// base*(k[v]+1), the shares of the present vertices summing to target/2.
// A push moves r[u] into z[u] and d*r[u]/k[u] to each out-neighbor's
// residual. It starts from the vertices the operations touched; should
// the sum still be above target when none is above its share (shares
// shrink as the graph grows, so a vertex left below its share once may be
// above it now), every vertex is checked. False when the residual is
// above pushRatio times the target, when the pushes would read more than
// pushBudget edges, or when ctx ends (the state keeps its
// invariants: the residual is only larger than the target).
func (st *Ranks) Push(ctx context.Context, g *views.Topo, d, tol float64) bool {
	budget := pushBudget(g)
	rel := max(d*tol/2, st.Floor) // the target over sum
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
	st.Pushes, st.Read = 0, 0
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
			if read += int64(k); read > budget || st.Pushes&4095 == 4095 && ctx.Err() != nil {
				st.Read = int(read)
				return false
			}
			st.r[u] = 0
			st.rsum -= math.Abs(rho)
			st.z[u] += rho
			st.sum += rho
			st.Pushes++
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
		st.Read = int(read)
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
