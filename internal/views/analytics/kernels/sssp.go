package kernels

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/graphtide/graphtide/internal/views"
)

// SSSP: delta-stepping (Meyer, Sanders), as GAPBS's sssp.cc.

// binThreshold: a worker keeps settling its own current bin without a
// barrier while it holds fewer than this many vertices (GAPBS's
// kBinSizeThreshold, bucket fusion) with fewer than fuseEdges out-edges
// together (the second bound is graphtide's: the first bins of a root
// that is a hub hold few vertices with many edges, which one worker
// would otherwise relax alone).
const (
	binThreshold = 1000
	fuseEdges    = 16 << 10
)

// fbits returns the float64 at p as bits (distances are never negative, so
// their bits order as their values).
func fbits(p *float64) *uint64 { return (*uint64)(unsafe.Pointer(p)) }

// lowerTo sets *p to d when d is smaller, atomically; it reports whether
// it did.
func lowerTo(p *float64, d float64) bool {
	bp := fbits(p)
	nd := math.Float64bits(d)
	for {
		old := atomic.LoadUint64(bp)
		if nd >= old {
			return false
		}
		if atomic.CompareAndSwapUint64(bp, old, nd) {
			return true
		}
	}
}

// lowerTo32 is lowerTo for a whole-number distance.
func lowerTo32(p *uint32, d uint32) bool {
	for {
		old := atomic.LoadUint32(p)
		if d >= old {
			return false
		}
		if atomic.CompareAndSwapUint32(p, old, d) {
			return true
		}
	}
}

// ssspDeltaFor picks the bucket width for g: a quarter of the mean edge
// weight over the mean out-degree, at least the smallest weight; 1 when
// the graph is unweighted. (On the scale-20 RMAT graph with GAPBS's
// weights 1-255 that is about 1.1; widths 1 to 2 ran fastest there, 8 took
// 1.3 times as long and 128 three times.)
func ssspDeltaFor(g *views.Topo) float64 {
	if !g.Out.Weighted() {
		return 1
	}
	sum, cnt, minW := 0.0, 0, math.Inf(1)
	n := g.Len()
	step := max(1, n/4096)
	verts := 0
	for i := 0; i < n; i += step {
		ws, deg := g.Out.Weights(int32(i)), int(g.Out.Deg(int32(i)))
		if deg > 0 {
			verts++
		}
		for k := range deg {
			w := ws.At(k)
			sum += w
			cnt++
			minW = min(minW, w)
		}
	}
	if cnt == 0 || sum <= 0 {
		return 1
	}
	d := (sum / float64(cnt)) / (float64(cnt) / float64(verts)) / 4
	return max(d, minW, 1e-9)
}

// binWindow is how many bins past the current one the workers keep
// (vertices further away wait in a pile, binned once the window is
// used up), so that the bins' memory follows the vertices pushed, never
// the ratio of the longest distance to delta.
const binWindow = 1 << 12

// ErrNegative is SSSP's error when it met a negative weight (its
// distances are not valid).
var ErrNegative = errors.New("sssp needs non-negative weights")

// SSSP returns the shortest distance of every index from root (+Inf:
// unreached; all +Inf when root is -1, not in g). A negative weight gives
// ErrNegative with the distances found; on another error (ctx) the
// distances are nil. When every weight is whole (or 1) it keeps the
// distances as uint32s while it runs, as GAPBS does (exact: whole sums),
// and reruns with float64 ones when some sum it formed reached 2^32-1
// (the uint32 run's "unreached").
func SSSP(ctx context.Context, g *views.Topo, root int32) ([]float64, error) {
	if root >= 0 && (!g.Out.Weighted() || g.Out.Whole()) {
		if dist, ok, err := ssspWhole(ctx, g, root); ok || err != nil {
			return dist, err
		}
	}
	dist := Filled(Workers(), g.Len(), math.Inf(1))
	if root < 0 {
		return dist, nil
	}
	dist[root] = 0
	return dist, deltaStep(ctx, g, dist, []int32{root})
}

// ssspWhole is SSSP on 32-bit whole distances (g's weights are all
// whole, Packed, or all 1). ok is false when some distance does not fit
// in 32 bits (the caller runs the float64 kernel).
func ssspWhole(ctx context.Context, g *views.Topo, root int32) (dist []float64, ok bool, err error) {
	nw := Workers()
	d32 := Filled(nw, g.Len(), uint32(math.MaxUint32))
	d32[root] = 0
	inv := 1 / ssspDeltaFor(g)
	binOf := func(d uint32) int64 { return int64(float64(d) * inv) }
	var over atomic.Bool
	relax := func(w int, us []int32, bin int64, push pushFunc) {
		for _, u := range us {
			du := atomic.LoadUint32(&d32[u])
			if binOf(du) < bin {
				continue
			}
			d := uint64(du)
			if pl := g.Out.Packed(u); pl != nil {
				for _, e := range pl {
					nd := d + uint64(e.W)
					if nd >= math.MaxUint32 {
						over.Store(true)
						continue
					}
					if lowerTo32(&d32[e.V], uint32(nd)) {
						push(w, e.V, binOf(uint32(nd)))
					}
				}
				continue
			}
			nd := d + 1
			if nd >= math.MaxUint32 {
				over.Store(true)
				continue
			}
			for _, v := range g.Out.Nbrs(u) {
				if lowerTo32(&d32[v], uint32(nd)) {
					push(w, v, binOf(uint32(nd)))
				}
			}
		}
	}
	bin := func(u int32) int64 { return binOf(atomic.LoadUint32(&d32[u])) }
	if err := settle(ctx, g, nw, []int32{root}, bin, relax); err != nil {
		return nil, false, err
	}
	if over.Load() {
		return nil, false, nil
	}
	dist = make([]float64, len(d32))
	ParallelFor(nw, len(dist), 1<<16, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			if d := d32[i]; d == math.MaxUint32 {
				dist[i] = math.Inf(1)
			} else {
				dist[i] = float64(d)
			}
		}
	})
	return dist, true, nil
}

// deltaStep lowers dist from the seeds (whose dist is already set) until
// every edge is relaxed: dist[v] <= dist[u] + w(u, v) for every edge. With
// dist +Inf everywhere but the root at 0 it computes the shortest
// distances. It returns ErrNegative when an edge weight is negative.
func deltaStep(ctx context.Context, g *views.Topo, dist []float64, seeds []int32) error {
	// A vertex at distance d is in bin d*inv (a product, not a quotient:
	// every bin is computed by binOf, so they agree).
	inv := 1 / ssspDeltaFor(g)
	binOf := func(d float64) int64 {
		if b := d * inv; b < math.MaxInt64/2 {
			return int64(b)
		}
		return math.MaxInt64 / 2
	}
	distOf := func(u int32) float64 { return math.Float64frombits(atomic.LoadUint64(fbits(&dist[u]))) }
	var negative atomic.Bool
	// Every weight is above 0 unless the graph ever had one that is not:
	// only then is each weight checked for a negative one.
	check := !g.PositiveLengths()
	relax := func(w int, us []int32, bin int64, push pushFunc) {
		for _, u := range us {
			d := distOf(u)
			if binOf(d) < bin {
				continue
			}
			nb := g.Out.Nbrs(u)
			if pl := g.Out.Packed(u); pl != nil {
				for _, e := range pl {
					if nd := d + float64(e.W); lowerTo(&dist[e.V], nd) {
						push(w, e.V, binOf(nd))
					}
				}
				continue
			}
			ws := g.Out.Floats(u)
			if ws == nil {
				for _, v := range nb {
					if nd := d + 1; lowerTo(&dist[v], nd) {
						push(w, v, binOf(nd))
					}
				}
				continue
			}
			ws = ws[:len(nb)]
			for k, v := range nb {
				wt := ws[k]
				if check && wt < 0 {
					negative.Store(true)
					continue
				}
				if nd := d + wt; lowerTo(&dist[v], nd) {
					push(w, v, binOf(nd))
				}
			}
		}
	}
	if err := settle(ctx, g, Workers(), seeds, func(u int32) int64 { return binOf(distOf(u)) }, relax); err != nil {
		return err
	}
	if negative.Load() {
		return ErrNegative
	}
	return nil
}
