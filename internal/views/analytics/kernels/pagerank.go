package kernels

import (
	"context"
	"math"
	"slices"
	"unsafe"
)

// PageRank: pull over in-edges.

// prGrain is the chunk of the pagerank kernel's per-vertex passes.
const prGrain = 1 << 14

// PageRank runs power iterations of graphtide's PageRank (as package
// analytics's pagerank defines it) on g from rank (indexed by g's indexes, updated in place; nil: a cold
// start at 1/N) until the L1 change of an iteration is at most tol or
// maxIter iterations ran. Each iteration is one pass that pulls over
// in-edges, each worker writing its own vertices' new ranks (no locks, no
// atomics), and computes the contributions the next iteration gathers
// (rank over out-degree, double-buffered) and its dangling mass. It
// returns the ranks, the iterations run and the last change.
func PageRank(ctx context.Context, g *PRGraph, rank []float64, d, tol float64, maxIter int) ([]float64, int, float64, error) {
	n := g.Len()
	nw := Workers()
	// inv[i]: 1/outdeg(i), 0 without out-edges; -1 when i is absent (and
	// unset from g.Bound() up, where no index is present). pres: the
	// present indexes, ascending: the iterations pass over those only (an
	// id space has room for ids to come, and ids without edges).
	inv := make([]float64, n)
	bound := g.bound
	lists := make([][]int32, (bound+prGrain-1)/prGrain)
	ParallelFor(nw, bound, prGrain, func(_, lo, hi int) {
		var l []int32
		for i := lo; i < hi; i++ {
			switch od := g.out[i]; {
			case od > 0:
				inv[i] = 1 / float64(od)
			case g.off[i+1] > g.off[i]:
				inv[i] = 0
			default:
				inv[i] = -1
				continue
			}
			l = append(l, int32(i))
		}
		lists[lo/prGrain] = l
	})
	pres := slices.Concat(lists...)
	np := len(pres)
	gone := make([]float64, nw) // a warm start's ranks of vertices gone since
	if rank == nil {
		rank = make([]float64, n)
		if np > 0 {
			f := 1 / float64(np)
			for _, i := range pres {
				rank[i] = f
			}
		}
	} else {
		ParallelFor(nw, n, prGrain, func(w, lo, hi int) {
			for i := lo; i < hi; i++ {
				if i >= bound || inv[i] < 0 {
					gone[w] += math.Abs(rank[i])
					rank[i] = 0
				}
			}
		})
	}
	if np == 0 {
		clear(rank)
		return rank, 1, 0, nil
	}
	if SinglePrecision(d, tol) {
		return prIterate[float32](ctx, g, nw, rank, inv, pres, gone, d, tol, maxIter)
	}
	return prIterate[float64](ctx, g, nw, rank, inv, pres, gone, d, tol, maxIter)
}

// SinglePrecision reports whether PageRank's iterations may gather float32
// contributions (as GAPBS does: half the bytes, a working set that stays
// in cache longer). Rounding a contribution errs by at most 2^-24 of it,
// so an iteration's ranks by at most eps = d*2^-24 in L1 (they sum to 1).
// Two things must stay true:
//   - the iterations stop: with that error each step, successive changes
//     fall to at most 2*eps/(1-d) in the worst case, which must stay
//     under tol: float32 only when tol*(1-d) >= 2.5*d*2^-24 (at damping
//     0.85, from tolerance 8.5e-7 up: the default 1e-4 qualifies, 1e-7
//     does not; at damping 0.9, from 1.4e-6 up);
//   - the ranks move from the exact fixpoint by at most eps/(1-d) (3.4e-7
//     at d 0.85), under the d*tol/(1-d) that stopping at tol leaves anyway
//     (RoundingL1 reports it).
//
// Otherwise the contributions are float64.
func SinglePrecision(d, tol float64) bool { return tol*(1-d) >= 2.5*d*0x1p-24 }

// RoundingL1 is how far in L1 a recompute of a pagerank with damping d and
// tolerance tol may land from the exact fixpoint because of its float32
// contributions, beyond what its tolerance leaves: d*2^-24/(1-d), or 0 when
// it gathers float64 ones.
func RoundingL1(d, tol float64) float64 {
	if !SinglePrecision(d, tol) {
		return 0
	}
	return d * 0x1p-24 / (1 - d)
}

// prIterate is PageRank's iterations with contributions of type C, over
// the present indexes pres on nw workers (inv as PageRank's; gone: per
// worker, a warm start's rank at indexes now absent).
func prIterate[C float32 | float64](ctx context.Context, g *PRGraph, nw int, rank, inv []float64, pres []int32, gone []float64, d, tol float64, maxIter int) ([]float64, int, float64, error) {
	n, np := g.Len(), len(pres)
	size := unsafe.Sizeof(C(0))
	// contrib and next stay 0 at absent indexes (never written).
	contrib, next := make([]C, n), make([]C, n)
	dang := make([]float64, nw)
	// The first iteration's contributions and dangling mass.
	ParallelFor(nw, np, prGrain, func(w, lo, hi int) {
		s := 0.0
		for _, i := range pres[lo:hi] {
			if x := inv[i]; x > 0 {
				contrib[i] = C(rank[i] * x)
			} else {
				s += rank[i] // present without out-edges
			}
		}
		dang[w] += s
	})
	iters, delta := 0, 0.0
	dl := make([]float64, nw)
	copy(dl, gone)
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, 0, err
		}
		mass := 0.0
		for w := range dang {
			mass += dang[w]
			dang[w] = 0
		}
		base := (1-d)/float64(np) + d*mass/float64(np)
		ParallelFor(nw, np, 1<<12, func(w, lo, hi int) {
			s, dm := 0.0, 0.0
			cb := unsafe.Pointer(unsafe.SliceData(contrib))
			for _, i := range pres[lo:hi] {
				// Four sums, four shorter chains of dependent adds.
				// INVARIANT: u < n (a Topo's heads are its indexes).
				nb := g.in[g.off[i]:g.off[i+1]]
				var s0, s1, s2, s3 float64
				for len(nb) >= 4 {
					s0 += float64(*(*C)(unsafe.Add(cb, uintptr(uint32(nb[0]))*size)))
					s1 += float64(*(*C)(unsafe.Add(cb, uintptr(uint32(nb[1]))*size)))
					s2 += float64(*(*C)(unsafe.Add(cb, uintptr(uint32(nb[2]))*size)))
					s3 += float64(*(*C)(unsafe.Add(cb, uintptr(uint32(nb[3]))*size)))
					nb = nb[4:]
				}
				for _, u := range nb {
					s0 += float64(*(*C)(unsafe.Add(cb, uintptr(uint32(u))*size)))
				}
				sum := (s0 + s1) + (s2 + s3)
				r := base + d*sum
				s += math.Abs(r - rank[i])
				rank[i] = r
				x := inv[i]
				next[i] = C(r * x)
				if x == 0 {
					dm += r
				}
			}
			dl[w] += s
			dang[w] += dm
		})
		contrib, next = next, contrib
		delta = 0
		for w, x := range dl {
			delta += x
			dl[w] = 0
		}
		iters = it + 1
		if delta <= tol {
			break
		}
	}
	return rank, iters, delta, nil
}
