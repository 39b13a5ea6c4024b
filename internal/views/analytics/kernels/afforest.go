package kernels

import (
	"context"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/views"
)

// WCC: Afforest (Sutton, Ben-Nun, Barak, IPDPS'18).

// afforestRounds is how many of each vertex's first out-neighbors are
// linked before the largest component is found (GAPBS: 2).
const afforestRounds = 2

// link joins the trees of u and v, the higher root hooked under the lower
// (GAPBS's Link).
func link(comp []int32, u, v int32) {
	p1 := atomic.LoadInt32(&comp[u])
	p2 := atomic.LoadInt32(&comp[v])
	for p1 != p2 {
		high, low := max(p1, p2), min(p1, p2)
		ph := atomic.LoadInt32(&comp[high])
		if ph == low || (ph == high && atomic.CompareAndSwapInt32(&comp[high], high, low)) {
			return
		}
		p1 = atomic.LoadInt32(&comp[atomic.LoadInt32(&comp[high])])
		p2 = atomic.LoadInt32(&comp[low])
	}
}

// compress points every vertex at its root.
func compress(comp []int32) {
	ParallelFor(Workers(), len(comp), 1<<14, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			for {
				c := atomic.LoadInt32(&comp[i])
				cc := atomic.LoadInt32(&comp[c])
				if c == cc {
					break
				}
				atomic.StoreInt32(&comp[i], cc)
			}
		}
	})
}

// Afforest returns, for every index, the smallest index of its weakly
// connected component (every index its own root: comp[comp[i]] ==
// comp[i]).
func Afforest(ctx context.Context, g *views.Topo) ([]int32, error) {
	n := g.Len()
	comp := make([]int32, n)
	ParallelFor(Workers(), n, 1<<16, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			comp[i] = int32(i)
		}
	})
	// Indexes from g.Bound() up have no edge: each is its own component.
	n = g.Bound()
	for r := 0; r < afforestRounds; r++ {
		ParallelFor(Workers(), n, 1<<12, func(_, lo, hi int) {
			out := g.Out.Cursor()
			for u := lo; u < hi; u++ {
				if nb := out.Nbrs(int32(u)); r < len(nb) {
					link(comp, int32(u), nb[r])
				}
			}
		})
		compress(comp[:n])
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	c := frequent(comp[:n])
	ParallelFor(Workers(), n, 1<<12, func(_, lo, hi int) {
		out, in := g.Out.Cursor(), g.In.Cursor()
		for u := lo; u < hi; u++ {
			if atomic.LoadInt32(&comp[u]) == c {
				continue
			}
			nb := out.Nbrs(int32(u))
			for _, v := range nb[min(afforestRounds, len(nb)):] {
				link(comp, int32(u), v)
			}
			// Directed: the in-edges are edges of the component too.
			for _, v := range in.Nbrs(int32(u)) {
				link(comp, int32(u), v)
			}
		}
	})
	compress(comp[:n])
	return comp, ctx.Err()
}

// frequent is the most frequent value among 1024 samples of comp (the
// largest component, most likely), as GAPBS's SampleFrequentElement.
func frequent(comp []int32) int32 {
	if len(comp) == 0 {
		return -1
	}
	counts := map[int32]int{}
	x := uint64(0x9E3779B97F4A7C15)
	for range 1024 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		counts[comp[x%uint64(len(comp))]]++
	}
	best, bc := int32(-1), -1
	for c, k := range counts {
		if k > bc || (k == bc && c < best) {
			best, bc = c, k
		}
	}
	return best
}
