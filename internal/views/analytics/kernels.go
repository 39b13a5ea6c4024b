package analytics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/graphtide/graphtide/internal/views"
)

// The static kernels: the algorithms of the GAP benchmark suite's reference
// (sbeamer/gapbs) on a views.Topo, on every core. Each takes the context
// and checks it between steps.

// workers is how many goroutines a kernel runs on.
func workers() int { return runtime.GOMAXPROCS(0) }

// parallelFor calls f(w, lo, hi) over [0, n) in chunks of grain, handed
// out to nw workers (w is the worker's number, below nw: a caller sizes
// its per-worker slices with the nw it passes, read once from workers(),
// which can change between calls) by an atomic counter, and returns when
// every chunk is done.
//
// The caller is worker 0 and takes chunks too; it waits only for chunks
// another worker has begun, never for a worker to start. A helper on an
// idle core can take a few hundred microseconds to be scheduled (its
// vCPU halted, on this machine), longer than a repair's whole filter: a
// late helper finds no chunk left and returns.
func parallelFor(nw, n, grain int, f func(w, lo, hi int)) {
	if n <= grain || nw <= 1 {
		if n > 0 {
			f(0, 0, n)
		}
		return
	}
	goFor(nw, n, grain, f)()
}

// goFor is parallelFor begun in the background: its helpers (workers 1
// to nw-1, at least one: w is below max(nw, 2)) start on it at once, and
// the caller calls wait, once or more, before it reads what f wrote. wait
// makes the caller worker 0, as in parallelFor: it takes the chunks left,
// then waits for those begun.
func goFor(nw, n, grain int, f func(w, lo, hi int)) (wait func()) {
	chunks := int64((n + grain - 1) / grain)
	var next, done atomic.Int64
	fin := make(chan struct{})
	work := func(w int) {
		for {
			c := next.Add(1) - 1
			if c >= chunks {
				return
			}
			lo := int(c) * grain
			f(w, lo, min(lo+grain, n))
			if done.Add(1) == chunks {
				close(fin)
			}
		}
	}
	if chunks == 0 {
		return func() {}
	}
	for w := 1; w < max(2, nw) && int64(w) <= chunks; w++ {
		go work(w)
	}
	return func() {
		work(0)
		<-fin
	}
}

// filled returns n copies of x, written on nw workers.
func filled[T any](nw, n int, x T) []T {
	a := make([]T, n)
	parallelFor(nw, n, 1<<16, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i] = x
		}
	})
	return a
}

// ---- BFS: direction-optimizing (Beamer, Asanović, Patterson, SC'12) ----

// Switching heuristics of GAPBS's bfs.cc: go bottom-up when the frontier's
// out-edges are more than the unexplored edges / bfsAlpha, back top-down
// when the frontier holds fewer than n / bfsBeta vertices and shrinks.
const (
	bfsAlpha = 15
	bfsBeta  = 18
)

// bfsKernel returns the level of every index from root (-1: unreached)
// and a parent of every index reached but the root: an in-neighbor one
// level nearer (-1 for the root and the others; GAPBS's bfs returns
// such parents, with the root its own).
func bfsKernel(ctx context.Context, g *views.Topo, root int32) (level, parent []int32, err error) {
	var sources []int32
	if root >= 0 && int(root) < g.Len() {
		sources = []int32{root}
	}
	b, err := levelsFrom(ctx, g, sources, nil, true)
	if err != nil {
		return nil, nil, err
	}
	return b.level, b.parent, nil
}

// levels is one breadth-first search: along out-edges (label nil; a
// bottom-up step searches the in-lists), or along edges of both
// directions between vertices of one label (wcc's support forest).
type levels struct {
	g     *views.Topo
	label []int32
	level []int32
	// parent (when asked for): the vertex each reached one was found
	// from, -1 for the sources and the unreached. Written once per
	// vertex, by the worker whose CAS set its level (top-down) or that
	// owns it (bottom-up).
	parent []int32
}

func (b *levels) deg(u int32) int64 {
	d := int64(b.g.Out.Deg(u))
	if b.label != nil {
		d += int64(b.g.In.Deg(u))
	}
	return d
}

// levelsFrom finds every index's level from the sources (level 0; -1:
// unreached), direction-optimizing, on every core, and with parents set
// each one's parent.
func levelsFrom(ctx context.Context, g *views.Topo, sources []int32, label []int32, parents bool) (*levels, error) {
	n := g.Len()
	b := &levels{g: g, label: label, level: filled(workers(), n, int32(-1))}
	if parents {
		b.parent = filled(workers(), n, int32(-1))
	}
	level, parent := b.level, b.parent
	queue := append([]int32(nil), sources...)
	edgesToCheck := g.Out.Edges()
	if label != nil {
		edgesToCheck *= 2
	}
	scout := int64(0)
	for _, s := range sources {
		level[s] = 0
		scout += b.deg(s)
	}
	nw := workers()
	local := make([][]int32, nw)
	front := make([]uint64, (n+63)/64)
	next := make([]uint64, (n+63)/64)
	for depth := int32(0); len(queue) > 0; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if scout > edgesToCheck/bfsAlpha {
			clear(front)
			for _, v := range queue {
				front[v/64] |= 1 << (v % 64)
			}
			awake := int64(len(queue))
			for {
				old := awake
				awake = b.bottomUp(front, next, depth)
				depth++
				front, next = next, front
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if awake == 0 || (awake < old && awake <= int64(g.Bound())/bfsBeta) {
					break
				}
			}
			// Back to a queue of the last level found.
			queue = queue[:0]
			for k := range local {
				local[k] = local[k][:0]
			}
			parallelFor(nw, len(front), 1<<10, func(w, lo, hi int) {
				for x := lo; x < hi; x++ {
					for bt := front[x]; bt != 0; bt &= bt - 1 {
						local[w] = append(local[w], int32(x*64+bits.TrailingZeros64(bt)))
					}
				}
			})
			for _, l := range local {
				queue = append(queue, l...)
			}
			scout = 1
			continue
		}
		edgesToCheck -= scout
		var sc atomic.Int64
		for k := range local {
			local[k] = local[k][:0]
		}
		d := depth + 1
		parallelFor(nw, len(queue), 256, func(w, lo, hi int) {
			buf := local[w]
			s := int64(0)
			for _, u := range queue[lo:hi] {
				nb := g.Out.Nbrs(u)
				for pass := 0; ; pass++ {
					for _, v := range nb {
						p := &level[v]
						if atomic.LoadInt32(p) < 0 && (label == nil || label[v] == label[u]) && atomic.CompareAndSwapInt32(p, -1, d) {
							if parent != nil {
								parent[v] = u
							}
							buf = append(buf, v)
							s += b.deg(v)
						}
					}
					if label == nil || pass == 1 {
						break
					}
					nb = g.In.Nbrs(u)
				}
			}
			local[w] = buf
			sc.Add(s)
		})
		scout = sc.Load()
		queue = queue[:0]
		for _, l := range local {
			queue = append(queue, l...)
		}
		depth++
	}
	return b, nil
}

// bottomUp runs one bottom-up step: every unreached vertex with a parent
// in front joins next at depth+1. It returns how many did. Each worker
// owns whole words of next (chunks are multiples of 64), so the bitmap
// needs no atomics; level[i] is written only by i's owner.
func (b *levels) bottomUp(front, next []uint64, depth int32) int64 {
	clear(next)
	var awake atomic.Int64
	level, label, parent := b.level, b.label, b.parent
	// (No index from g.Bound() up has an in- or out-neighbor.)
	parallelFor(workers(), b.g.Bound(), 1<<12, func(_, lo, hi int) {
		c := int64(0)
		in, out := b.g.In.Cursor(), b.g.Out.Cursor()
		for u := lo; u < hi; u++ {
			if level[u] >= 0 {
				continue
			}
			nb := in.Nbrs(int32(u))
		search:
			for pass := 0; ; pass++ {
				for _, v := range nb {
					if front[v/64]&(1<<(v%64)) != 0 && (label == nil || label[v] == label[u]) {
						level[u] = depth + 1
						if parent != nil {
							parent[u] = v
						}
						next[u/64] |= 1 << (u % 64)
						c++
						break search
					}
				}
				if label == nil || pass == 1 {
					break
				}
				nb = out.Nbrs(int32(u))
			}
		}
		awake.Add(c)
	})
	return awake.Load()
}

// ---- WCC: Afforest (Sutton, Ben-Nun, Barak, IPDPS'18) ----

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
	parallelFor(workers(), len(comp), 1<<14, func(_, lo, hi int) {
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

// afforest returns, for every index, the smallest index of its weakly
// connected component (every index its own root: comp[comp[i]] ==
// comp[i]).
func afforest(ctx context.Context, g *views.Topo) ([]int32, error) {
	n := g.Len()
	comp := make([]int32, n)
	parallelFor(workers(), n, 1<<16, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			comp[i] = int32(i)
		}
	})
	// Indexes from g.Bound() up have no edge: each is its own component.
	n = g.Bound()
	for r := 0; r < afforestRounds; r++ {
		parallelFor(workers(), n, 1<<12, func(_, lo, hi int) {
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
	parallelFor(workers(), n, 1<<12, func(_, lo, hi int) {
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

// ---- SSSP: delta-stepping (Meyer, Sanders), as GAPBS's sssp.cc ----

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

// errNegative: sssp met a negative weight (its distances are not valid).
var errNegative = errors.New("sssp needs non-negative weights")

// ssspKernel returns the shortest distance of every index from root (+Inf:
// unreached; all +Inf when root is -1, not in g). A negative weight gives
// errNegative with the distances found; on another error (ctx) the
// distances are nil. When every weight is whole (or 1) it keeps the
// distances as uint32s while it runs, as GAPBS does (exact: whole sums),
// and reruns with float64 ones when some sum it formed reached 2^32-1
// (the uint32 run's "unreached").
func ssspKernel(ctx context.Context, g *views.Topo, root int32) ([]float64, error) {
	if root >= 0 && (!g.Out.Weighted() || g.Out.Whole()) {
		if dist, ok, err := ssspWhole(ctx, g, root); ok || err != nil {
			return dist, err
		}
	}
	dist := filled(workers(), g.Len(), math.Inf(1))
	if root < 0 {
		return dist, nil
	}
	dist[root] = 0
	return dist, deltaStep(ctx, g, dist, []int32{root})
}

// ssspWhole is ssspKernel on 32-bit whole distances (g's weights are all
// whole, Packed, or all 1). ok is false when some distance does not fit
// in 32 bits (the caller runs the float64 kernel).
func ssspWhole(ctx context.Context, g *views.Topo, root int32) (dist []float64, ok bool, err error) {
	nw := workers()
	d32 := filled(nw, g.Len(), uint32(math.MaxUint32))
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
	parallelFor(nw, len(dist), 1<<16, func(_, lo, hi int) {
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
// distances. It returns errNegative when an edge weight is negative.
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
	if err := settle(ctx, g, workers(), seeds, func(u int32) int64 { return binOf(distOf(u)) }, relax); err != nil {
		return err
	}
	if negative.Load() {
		return errNegative
	}
	return nil
}

// settleAlone: settle runs on one worker for a graph of fewer edges.
const settleAlone = 1 << 16

// pushFunc puts vertex v, at bin b, among worker w's vertices.
type pushFunc func(w int, v int32, b int64)

// settle runs delta-stepping's rounds from the seeds on nw workers,
// GAPBS's way: the workers take the current bin's frontier in chunks,
// then each settles its own small current bin alone (bucket fusion),
// then worker 0 picks the next bin between two barriers. binOf(u) is the
// bin of u's current distance; relax(w, us, bin, push) relaxes the
// out-edges of each vertex of us still in bin (one whose bin is below
// was settled already and is skipped), pushing each head it lowers: one
// call a chunk, not a vertex, so that the check is the kernel's own code.
// The workers live for the whole run (a goroutine per bin cost a tenth of
// the kernel on GAPBS's graph).
//
// Worker w pushes into near[w][b-base] for a bin b in [base,
// base+binWindow), or into far[w] past the window. INVARIANT: only worker
// w touches near[w], far[w] and spare[w] while the workers relax; base,
// cur, bin and the frontier change only in control, which worker 0 runs
// between two barriers. (A first version that kept this state in a
// struct and called relax once a vertex ran 10-20% slower on GAPBS's
// graph.)
func settle(ctx context.Context, g *views.Topo, nw int, seeds []int32, binOf func(u int32) int64, relax func(w int, us []int32, bin int64, push pushFunc)) error {
	if g.Out.Edges() < settleAlone {
		nw = 1 // a small graph: the workers would cost more than they do
	}
	near := make([][][]int32, nw)
	for w := range near {
		near[w] = make([][]int32, binWindow)
	}
	far, spare := make([][]int32, nw), make([][]int32, nw)
	base := int64(math.MaxInt64)
	for _, s := range seeds {
		base = min(base, binOf(s))
	}
	push := func(w int, v int32, b int64) {
		if k := b - base; k < binWindow {
			near[w][k] = append(near[w][k], v)
		} else {
			far[w] = append(far[w], v)
		}
	}
	for _, s := range seeds {
		push(0, s, binOf(s))
	}
	var (
		frontier []int32
		cur, bin int64
		done     bool
		err      error
		chunk    atomic.Int64
		bar      = newBarrier(nw)
	)
	// control picks the next bin (the smallest non-empty one of any
	// worker; when the window is used up, a new window from the pile) and
	// makes it the frontier, or sets done.
	control := func() {
		for {
			next := int64(-1)
			for k := cur; k < binWindow && next < 0; k++ {
				for w := range nw {
					if len(near[w][k]) > 0 {
						next = k
						break
					}
				}
			}
			if next < 0 {
				lo := int64(math.MaxInt64)
				var pile []int32
				for w := range far {
					for _, v := range far[w] {
						if x := binOf(v); x >= base+binWindow {
							lo = min(lo, x)
							pile = append(pile, v)
						}
					}
					far[w] = far[w][:0]
				}
				if len(pile) == 0 {
					done = true
					return
				}
				base, cur = lo, 0
				for _, v := range pile {
					push(0, v, binOf(v))
				}
				continue
			}
			cur = next
			if err = ctx.Err(); err != nil {
				done = true
				return
			}
			bin = base + cur
			frontier = frontier[:0]
			for w := range nw {
				frontier = append(frontier, near[w][cur]...)
				near[w][cur] = near[w][cur][:0]
			}
			chunk.Store(0)
			return
		}
	}
	small := func(l []int32) bool {
		if len(l) >= binThreshold {
			return false
		}
		e := 0
		for _, u := range l {
			e += int(g.Out.Deg(u))
		}
		return e < fuseEdges
	}
	const grain = 64
	work := func(w int) {
		var sense int32
		for {
			for {
				lo := int(chunk.Add(grain)) - grain
				if lo >= len(frontier) {
					break
				}
				relax(w, frontier[lo:min(lo+grain, len(frontier))], bin, push)
			}
			for l := near[w][cur]; len(l) > 0 && small(l); l = near[w][cur] {
				near[w][cur] = spare[w][:0]
				relax(w, l, bin, push)
				spare[w] = l
			}
			bar.wait(&sense)
			if w == 0 {
				control()
			}
			bar.wait(&sense)
			if done {
				return
			}
		}
	}
	control()
	if done {
		return err
	}
	var wg sync.WaitGroup
	for w := 1; w < nw; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(w)
		}()
	}
	work(0)
	wg.Wait()
	return err
}

// barrier is a sense-reversing barrier for n goroutines. A waiter spins
// first (yielding its P after a few rounds: a round of delta-stepping can
// take microseconds, shorter than parking a goroutine), then parks on the
// round's channel, so that a worker waiting on a long round (or on one
// the OS descheduled, beside ingestion or other processes) leaves the
// core to them, as OpenMP's spin-then-sleep does.
//
// INVARIANT: ch is the current round's channel, replaced (under mu) by
// the round's last arriver before it flips sense and closes the old one;
// a goroutine reads ch before it counts itself in, so it holds its own
// round's channel.
type barrier struct {
	n     int32
	count atomic.Int32
	sense atomic.Int32
	mu    sync.Mutex
	ch    chan struct{} // Protected by mu.
}

func newBarrier(n int) *barrier { return &barrier{n: int32(n), ch: make(chan struct{})} }

// barrierSpins is how many rounds a waiter spins before it parks.
const barrierSpins = 1 << 10

// wait returns when all n goroutines called it; each passes its own
// sense, which starts at 0.
func (b *barrier) wait(local *int32) {
	*local ^= 1
	if b.n == 1 {
		return
	}
	b.mu.Lock()
	ch := b.ch
	b.mu.Unlock()
	if b.count.Add(1) == b.n {
		b.count.Store(0)
		b.mu.Lock()
		b.ch = make(chan struct{})
		b.mu.Unlock()
		b.sense.Store(*local)
		close(ch)
		return
	}
	for i := 0; b.sense.Load() != *local; i++ {
		if i >= barrierSpins {
			<-ch
			return
		}
		if i >= 64 {
			runtime.Gosched()
		}
	}
}

// ---- PageRank: pull over in-edges ----

// prGrain is the chunk of the pagerank kernel's per-vertex passes.
const prGrain = 1 << 14

// prKernel runs power iterations of graphtide's PageRank (see pagerank)
// on g from rank (indexed by g's indexes, updated in place; nil: a cold
// start at 1/N) until the L1 change of an iteration is at most tol or
// maxIter iterations ran. Each iteration is one pass that pulls over
// in-edges, each worker writing its own vertices' new ranks (no locks, no
// atomics), and computes the contributions the next iteration gathers
// (rank over out-degree, double-buffered) and its dangling mass. It
// returns the ranks, the iterations run and the last change.
func prKernel(ctx context.Context, g *prGraph, rank []float64, d, tol float64, maxIter int) ([]float64, int, float64, error) {
	n := g.Len()
	nw := workers()
	// inv[i]: 1/outdeg(i), 0 without out-edges; -1 when i is absent (and
	// unset from g.Bound() up, where no index is present). pres: the
	// present indexes, ascending: the iterations pass over those only (an
	// id space has room for ids to come, and ids without edges).
	inv := make([]float64, n)
	bound := g.bound
	lists := make([][]int32, (bound+prGrain-1)/prGrain)
	parallelFor(nw, bound, prGrain, func(_, lo, hi int) {
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
		parallelFor(nw, n, prGrain, func(w, lo, hi int) {
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
	if singlePrecision(d, tol) {
		return prIterate[float32](ctx, g, nw, rank, inv, pres, gone, d, tol, maxIter)
	}
	return prIterate[float64](ctx, g, nw, rank, inv, pres, gone, d, tol, maxIter)
}

// singlePrecision reports whether prKernel's iterations may gather float32
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
func singlePrecision(d, tol float64) bool { return tol*(1-d) >= 2.5*d*0x1p-24 }

// RoundingL1 is how far in L1 a recompute of a pagerank with damping d and
// tolerance tol may land from the exact fixpoint because of its float32
// contributions, beyond what its tolerance leaves: d*2^-24/(1-d), or 0 when
// it gathers float64 ones.
func RoundingL1(d, tol float64) float64 {
	if !singlePrecision(d, tol) {
		return 0
	}
	return d * 0x1p-24 / (1 - d)
}

// prIterate is prKernel's iterations with contributions of type C, over
// the present indexes pres on nw workers (inv as prKernel's; gone: per
// worker, a warm start's rank at indexes now absent).
func prIterate[C float32 | float64](ctx context.Context, g *prGraph, nw int, rank, inv []float64, pres []int32, gone []float64, d, tol float64, maxIter int) ([]float64, int, float64, error) {
	n, np := g.Len(), len(pres)
	size := unsafe.Sizeof(C(0))
	// contrib and next stay 0 at absent indexes (never written).
	contrib, next := make([]C, n), make([]C, n)
	dang := make([]float64, nw)
	// The first iteration's contributions and dangling mass.
	parallelFor(nw, np, prGrain, func(w, lo, hi int) {
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
		parallelFor(nw, np, 1<<12, func(w, lo, hi int) {
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

// RunKernel runs the static kernel of analytic type typ (bfs, wcc,
// pagerank, sssp) on g, from root for bfs and sssp, without building the
// analytic's state around its result: what a comparison with another
// system's kernels times (graphtide bench analytics --kernels-only).
// pagerank runs at the default damping to the default tolerance, at most
// maxIter iterations; it returns the iterations run (1 for the others).
func RunKernel(ctx context.Context, typ string, g *views.Topo, root uint64, maxIter int) (int, error) {
	switch typ {
	case "bfs":
		_, _, err := bfsKernel(ctx, g, index(g, root))
		return 1, err
	case "wcc":
		_, err := afforest(ctx, g)
		return 1, err
	case "pagerank":
		// With the copy of the in-lists a registered pagerank makes (see
		// prGraph).
		c, err := copyForPageRank(ctx, g)
		if err != nil {
			return 0, err
		}
		_, iters, _, err := prKernel(ctx, c, nil, DefaultDamping, DefaultTolerance, maxIter)
		return iters, err
	case "sssp":
		_, err := ssspKernel(ctx, g, index(g, root))
		return 1, err
	}
	return 0, fmt.Errorf("analytics: no kernel for type %q (bfs, wcc, pagerank, sssp)", typ)
}
