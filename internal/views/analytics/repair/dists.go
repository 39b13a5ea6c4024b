package repair

import (
	"slices"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
)

// Repairing single-source distances after a batch of changes, in the
// style of Ramalingam and Reps (1996): the work follows the vertices whose
// distance changes and their edges, not the graph.
//
// The distances d (BFS levels, or SSSP lengths) are exact for the graph
// before the batch; g is the graph after it. A vertex c keeps its distance
// when it is supported: some in-neighbor u, itself keeping its distance,
// with d[u] + w(u, c) = d[c], and d[u] < d[c] or u already found
// supported (a zero length). Deciding vertices in increasing order of d
// makes that check sound (every closer supporter is decided first). The
// heads of deleted or lengthened edges are checked; a vertex found
// unsupported is affected, and its tight out-neighbors are checked in
// turn. Affected vertices restart from their best unaffected
// in-neighbor, and a Dijkstra from them and from the heads of inserted or
// shortened edges settles the rest. A zero-length edge supports only from
// a vertex already found supported (so cycles of them cannot keep each
// other); one decided before its equal-distance supporter is counted
// affected, which only makes the repair larger.

// Distance is a BFS level (int32, far = -1) or an SSSP length (float64,
// far = +Inf).
type Distance interface{ ~int32 | ~float64 }

// repair is one repair's problem.
type repair[T Distance] struct {
	g    *views.Topo
	d    []T
	root int32
	far  T
	unit bool // every length is 1 (bfs)
	// positive: every length is above 0, so a tight edge joins a closer
	// vertex to a farther one (else, with zero lengths, two at one
	// distance may be joined by a tight edge too).
	positive bool
	// limit: more affected or settled vertices than this and the repair
	// gives up (the caller recomputes with the parallel kernel).
	limit int
	// negative is set when a negative weight was met (sssp: recompute,
	// which reports it).
	negative bool
	// work counts the edges the repair read.
	work int
	// mark: a state per vertex index (the caller's, see Dists).
	mark *Marks
	// parent (a unit repair's, when its caller keeps them; else nil): for
	// each vertex reached but the root, one supporter (its parent) or -1
	// (none known).
	//
	// INVARIANT: when run begins, parent[v] >= 0 is an in-neighbor of v in
	// g one level nearer (d[parent[v]] + 1 == d[v]), unless the edge
	// between them is one the batch cut; when it returns true, one in g
	// at the repaired levels (returning false, the caller recomputes). So
	// a vertex keeps its level when its parent does and the edge from it
	// was not cut: phase 1 decides only the heads of tight cut edges from
	// their parent and the tight out-neighbors of an affected vertex that
	// is their parent (with -1, each one, as without parents). On the
	// bench's stream that is 10-15% of the heads of tight cut edges.
	parent []int32
}

// adopt records u as c's parent (c keeps or takes the level after u's).
func (r *repair[T]) adopt(c, u int32) {
	if r.parent != nil {
		r.parent[c] = u
	}
}

// adoptShared is adopt in phase 1, where affect may read c's parent from
// another worker (atomic; a locked store waits for the loads before it,
// so the later phases, on one goroutine, use adopt).
func (r *repair[T]) adoptShared(c, u int32) {
	if r.parent != nil {
		atomic.StoreInt32(&r.parent[c], u)
	}
}

// lt orders distances with far above every other.
func (r *repair[T]) lt(a, b T) bool { return a != r.far && (b == r.far || a < b) }

// length is the length of u's k-th out-edge.
func (r *repair[T]) length(u int32, k int) T {
	if r.unit {
		return 1
	}
	w := r.g.Out.Weights(u).At(k)
	if w < 0 {
		r.negative = true
	}
	return T(w)
}

// lengthOf is the length of the edge (u, v), which exists: 1 without a
// search when the graph keeps no weights (in-lists carry none, so a
// weighted one is found in u's out-list).
func (r *repair[T]) lengthOf(u, v int32) T {
	if r.unit || !r.g.Out.Weighted() {
		return 1
	}
	w, _ := r.g.Weight(u, v)
	if w < 0 {
		r.negative = true
	}
	return T(w)
}

// distHeap is a binary min-heap of (distance, vertex), typed (no boxing
// through container/heap: a repair pushes once per vertex it reaches).
type distHeap[T Distance] struct {
	d []T
	v []int32
}

func (h *distHeap[T]) Len() int { return len(h.v) }

func (h *distHeap[T]) push(d T, v int32) {
	h.d, h.v = append(h.d, d), append(h.v, v)
	for i := len(h.v) - 1; i > 0; {
		p := (i - 1) / 2
		if !(h.d[i] < h.d[p]) {
			break
		}
		h.d[i], h.d[p] = h.d[p], h.d[i]
		h.v[i], h.v[p] = h.v[p], h.v[i]
		i = p
	}
}

func (h *distHeap[T]) pop() (T, int32) {
	d, v := h.d[0], h.v[0]
	n := len(h.v) - 1
	h.d[0], h.v[0] = h.d[n], h.v[n]
	h.d, h.v = h.d[:n], h.v[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.d[l] < h.d[m] {
			m = l
		}
		if l+1 < n && h.d[l+1] < h.d[m] {
			m = l + 1
		}
		if m == i {
			break
		}
		h.d[i], h.d[m] = h.d[m], h.d[i]
		h.v[i], h.v[m] = h.v[m], h.v[i]
		i = m
	}
	return d, v
}

// distQueue pops (distance, vertex) pairs lowest first: through a
// levelQueue when every length is 1, else a distHeap.
type distQueue[T Distance] struct {
	unit bool
	h    distHeap[T]
	q    *levelQueue // unit: the caller's, reset
}

func newDistQueue[T Distance](unit bool, q *levelQueue) *distQueue[T] {
	x := &distQueue[T]{unit: unit}
	if unit {
		q.reset()
		x.q = q
	}
	return x
}

func (x *distQueue[T]) push(d T, v int32) {
	if x.unit {
		x.q.push(int32(d), v)
		return
	}
	x.h.push(d, v)
}

// pop returns the lowest pair; ok is false when x is empty.
func (x *distQueue[T]) pop() (d T, v int32, ok bool) {
	if x.unit {
		l, v, ok := x.q.pop()
		return T(l), v, ok
	}
	if x.h.Len() == 0 {
		return d, 0, false
	}
	d, v = x.h.pop()
	return d, v, true
}

// run repairs d. cut are the edges deleted or perhaps lengthened (whose
// head may have lost its support), ups the edges inserted or re-weighted.
// It returns false when the change is too large (over limit) or a weight
// is negative: d is then not valid and must be recomputed.
func (r *repair[T]) run(cut, ups [][2]int32) bool {
	// 1. Affected vertices, by increasing distance.
	// Each vertex's state (0: not decided yet), cleared on return.
	defer r.mark.clear()
	h := newDistQueue[T](r.unit, &r.mark.q)
	better := r.improving(ups)
	defer better() // (its helpers read d: done before it is returned)
	for _, e := range r.tightCut(cut) {
		h.push(r.d[e[1]], e[1])
	}
	var aff []int32
	var ok bool
	if r.unit {
		aff, ok = r.affectedUnit(h)
	} else {
		aff, ok = r.affectedWeighted(h)
	}
	if !ok {
		return false
	}
	// 2. The affected restart from their best unaffected in-neighbor.
	better() // (d is written from here on)
	h = r.restart(aff)
	r.relaxImproving(better(), r.deleted(cut), h)
	// 3. Dijkstra from them.
	if r.unit {
		return r.searchUnit(h.q)
	}
	return r.settle(h)
}

// tightCut returns the edges of cut that supported their head, filtered
// on every core (a hub's vertex delete cuts tens of thousands, each two
// distances read at random).
func (r *repair[T]) tightCut(cut [][2]int32) [][2]int32 {
	return keepPairs(cut, func(part, out [][2]int32) [][2]int32 {
		d, root, far, unit, positive, parent := r.d, r.root, r.far, r.unit, r.positive, r.parent
		for _, e := range part {
			// Only an edge that was tight supported its head: with unit
			// lengths, one level apart; else (the old length is gone) one
			// from a closer vertex that the new length (if any) no longer
			// makes tight.
			a, c := e[0], e[1]
			if parent != nil {
				// One read, not two: a is c's parent, so one level nearer
				// (see parent), or c has another, which decides c only if
				// the batch cut the edge from it too (its own pair in cut)
				// or it is affected (affect queues c). Only a vertex with
				// none known is read on.
				if p := parent[c]; p >= 0 {
					if p == a {
						out = append(out, e)
					}
					continue
				}
			}
			da, dc := d[a], d[c]
			if c == root || dc == far || da == far || da > dc || unit && da+1 != dc || positive && da == dc {
				continue // (a zero length makes da == dc: such an edge may be tight)
			}
			if !unit {
				if w, ok := r.g.Weight(a, c); ok && da+T(w) == dc {
					continue // still tight: still a support
				}
			}
			out = append(out, e)
		}
		return out
	})
}

// affectedUnit is phase 1 of a unit repair: it decides h's vertices and
// those they lead to, level by level, and returns the affected; false
// when they are more than limit. A level's vertices depend only on the
// levels before it, so a large one is decided on every core.
func (r *repair[T]) affectedUnit(h *distQueue[T]) ([]int32, bool) {
	var aff []int32
	var outs [maxWorkers]decided // each worker's findings, kept across levels for their buffers
	for {
		l, level, more := h.q.popLevel()
		if !more {
			return aff, true
		}
		nw := 1
		if len(level) >= ParallelLevel {
			nw = min(kernels.Workers(), maxWorkers)
		}
		for w := range nw {
			outs[w].reset()
		}
		kernels.ParallelFor(nw, nw, 1, func(_, lo, hi int) {
			for p := lo; p < hi; p++ {
				if l >= 2 {
					r.decideUnit(level, p, nw, l, &outs[p])
				} else {
					r.decide(level, p, nw, T(l), &outs[p])
				}
			}
		})
		for w := range nw {
			o := &outs[w]
			r.mark.marked = append(r.mark.marked, o.marked...)
			r.work += o.work
			aff = append(aff, o.aff...)
			for _, x := range o.next {
				h.push(T(l+1), x)
			}
		}
		if len(aff) > r.limit {
			return nil, false
		}
	}
}

// affectedWeighted is phase 1 of a weighted repair: it decides h's
// vertices and those they lead to, one at a time by increasing distance,
// and returns the affected; false when they are more than limit.
func (r *repair[T]) affectedWeighted(h *distQueue[T]) ([]int32, bool) {
	var aff []int32
	var o decided
	for {
		_, c, more := h.pop()
		if !more {
			return aff, true
		}
		o.reset()
		r.decide([]int32{c}, 0, 1, r.d[c], &o)
		r.mark.marked = append(r.mark.marked, o.marked...)
		r.work += o.work
		if aff = append(aff, o.aff...); len(aff) > r.limit {
			return nil, false
		}
		for _, x := range o.next {
			h.push(r.d[x], x)
		}
	}
}

// restart is phase 2: each affected vertex restarts from its best
// unaffected in-neighbor (far, and no parent, when it has none). It
// returns the queue of those reached, for phase 3.
func (r *repair[T]) restart(aff []int32) *distQueue[T] {
	was := make([]T, len(aff))
	for i, c := range aff {
		was[i] = r.d[c]
		r.d[c] = r.far
	}
	h := newDistQueue[T](r.unit, &r.mark.q)
	for i, c := range aff {
		best, from := r.far, int32(-1)
		for _, u := range r.g.In.Nbrs(c) {
			r.work++
			if du := r.d[u]; du != r.far {
				if x := du + r.lengthOf(u, c); r.lt(x, best) {
					best, from = x, u
				}
				// With unit lengths an in-neighbor nearer than c was is
				// an affected one (restarted, it is queued: the search
				// relaxes its edges) or the tail of a batch's insert (the
				// loop below reads those): the others are as far as c
				// was or farther (one a level nearer would have supported
				// c). So one as far as c was gives the best of them.
				if r.unit && du == was[i] {
					break
				}
			}
		}
		r.adopt(c, from) // (-1 when unreached)
		if best != r.far {
			r.d[c] = best
			h.push(best, c)
		}
	}
	return h
}

// relaxImproving ends phase 2: each upserted edge of ups (improving's)
// that shortens its head's distance lowers it, and queues the head in h.
// gone is the filter of the batch's deletes (deleted: nil, search every
// edge), which tells an upserted edge that may be gone again.
func (r *repair[T]) relaxImproving(ups [][2]int32, gone pairFilter, h *distQueue[T]) {
	for _, e := range ups {
		if du := r.d[e[0]]; du != r.far && (!r.unit || r.lt(du+1, r.d[e[1]])) {
			w := 1.0
			if gone == nil || gone.mayHold(e) {
				var present bool
				w, present = r.g.Weight(e[0], e[1]) // upserted, then perhaps deleted
				if !present {
					continue
				}
			}
			if r.unit {
				w = 1
			} else if w < 0 {
				r.negative = true
			}
			if x := du + T(w); r.lt(x, r.d[e[1]]) {
				r.d[e[1]] = x
				r.adopt(e[1], e[0])
				h.push(x, e[1])
			}
		}
	}
}

// settle is phase 3 of a weighted repair: Dijkstra from h's vertices. It
// returns false when it settles more than limit vertices or met a
// negative weight.
func (r *repair[T]) settle(h *distQueue[T]) bool {
	settled := 0
	for {
		pd, pv, more := h.pop()
		if !more {
			break
		}
		if pd != r.d[pv] {
			continue
		}
		if settled++; settled > r.limit {
			return false
		}
		nb := r.g.Out.Nbrs(pv)
		r.work += len(nb)
		for k, x := range nb {
			if nd := pd + r.length(pv, k); r.lt(nd, r.d[x]) {
				r.d[x] = nd
				h.push(nd, x)
			}
		}
	}
	return !r.negative
}

// searchUnit is phase 3 of a unit repair: a search from q's vertices,
// level by level. Each level is staged so that its random reads overlap:
// first the lists of every vertex still at that level, then their heads'
// levels (Dijkstra's loop, one vertex at a time, follows one chain of reads
// at a time: the list's place, the list, each head). It returns false when
// it settles more than limit vertices.
func (r *repair[T]) searchUnit(q *levelQueue) bool {
	settled := 0
	var lists [][]int32
	var from []int32
	for {
		l, level, more := q.popLevel()
		if !more {
			return true
		}
		at, next := T(l), T(l+1)
		lists, from = lists[:0], from[:0]
		for _, v := range level {
			if r.d[v] == at { // (else it was queued again, nearer)
				lists = append(lists, r.g.Out.Nbrs(v))
				from = append(from, v)
			}
		}
		if settled += len(lists); settled > r.limit {
			return false
		}
		for i, nb := range lists {
			r.work += len(nb)
			for _, x := range nb {
				if r.lt(next, r.d[x]) {
					r.d[x] = next
					r.adopt(x, from[i])
					q.push(l+1, x)
				}
			}
		}
	}
}

// The states of phase 1 (0: not decided yet).
const (
	supported = 1
	affected  = 2
)

// ParallelLevel is the smallest level of phase 1 decided on every core
// (a variable for the tests, which lower it to take that path on small
// graphs); maxWorkers bounds the cores a level is split over.
var ParallelLevel = 2048

const maxWorkers = 8

// decided is what deciding some vertices found: the vertices it marked,
// those affected, the out-neighbors to check next, the edges read.
type decided struct {
	marked, aff, next []int32
	work              int
	// decideUnit's scratch: the vertices it decides, those still open,
	// and their in-lists.
	todo, open []int32
	ins        [][]int32
}

// reset empties o for the next vertices, keeping its buffers.
func (o *decided) reset() {
	o.marked, o.aff, o.next, o.work = o.marked[:0], o.aff[:0], o.next[:0], 0
}

// decide decides the vertices of cs at distance dc (those v with v%nw ==
// w, so that workers deciding one level share no vertex) that are not
// decided yet: supported by an in-neighbor that is closer and not
// affected (or, with a zero length, as close and supported), else
// affected, with their tight out-neighbors to check. It writes only the
// states and parents of its own vertices (the parents atomically: affect
// reads those of another worker's); what else it finds goes to o.
//
// INVARIANT: with nw > 1 every length is 1: the supporters it reads are
// one level up, decided before this level began, and the out-neighbors
// one level down, decided after it ends.
func (r *repair[T]) decide(cs []int32, w, nw int, dc T, o *decided) {
	state := r.mark.state
	work := 0 // (o.work is next to another worker's: counted here)
	defer func() { o.work += work }()
	for _, c := range cs {
		if nw > 1 && int(c)%nw != w || state[c] != 0 {
			continue
		}
		ok, by := false, int32(-1)
		in := r.g.In.Nbrs(c)
		if r.unit && dc == 1 {
			// Only the root is one level up: look it up (hubs next to the
			// root have the longest in-lists).
			_, ok = slices.BinarySearch(in, r.root)
			in, by = nil, r.root
		}
		for _, u := range in {
			work++
			du := r.d[u]
			if du == r.far || du > dc || (r.unit && du != dc-1) || r.positive && du == dc {
				continue
			}
			// A closer vertex not found affected, or one as close (a
			// zero length) already found supported.
			if du+r.lengthOf(u, c) == dc && (du < dc && state[u] != affected || state[u] == supported) {
				ok, by = true, u
				break
			}
		}
		o.marked = append(o.marked, c)
		if ok {
			state[c] = supported
			r.adoptShared(c, by)
			continue
		}
		work += r.affect(c, dc, o)
	}
}

// affect marks c, at distance dc, affected and queues in o its tight
// out-neighbors not decided yet; it returns the edges it read.
func (r *repair[T]) affect(c int32, dc T, o *decided) int {
	state := r.mark.state
	state[c] = affected
	o.aff = append(o.aff, c)
	nb := r.g.Out.Nbrs(c)
	if par := r.parent; par != nil {
		// One read an out-neighbor, not two: a parent is one level
		// nearer (see parent), so an x whose parent is c is on the next
		// level. (Atomic: an x of this level may be another worker's,
		// who may be writing its parent, never to c.)
		for _, x := range nb {
			if p := atomic.LoadInt32(&par[x]); p == c {
				o.next = append(o.next, x)
			} else if p < 0 && x != r.root && r.d[x] == dc+1 {
				o.next = append(o.next, x) // (none known)
			}
		}
		return len(nb)
	}
	for k, x := range nb {
		// (x's distance first: a vertex of this level, another worker's,
		// is not read. With unit lengths x is on the next level, which is
		// decided after this one: its state is 0, and not read.)
		if dx := r.d[x]; x != r.root && dx != r.far && dc+r.length(c, k) == dx && (r.unit || state[x] == 0) {
			o.next = append(o.next, x)
		}
	}
	return len(nb)
}

// decideUnit is decide for a unit repair at level l >= 2, staged so that
// its random reads overlap: each step is one tight loop over the level's
// undecided vertices whose reads do not depend on one another (every
// vertex's in-list; then the k-th in-neighbor of each vertex not yet
// supported, and its level and state; then the out-lists of the affected),
// where decide follows one vertex's chain of reads at a time. It decides
// as decide does; the INVARIANT written there holds here too.
func (r *repair[T]) decideUnit(cs []int32, w, nw int, l int32, o *decided) {
	state := r.mark.state
	work := 0 // (o.work is next to another worker's: counted here)
	defer func() { o.work += work }()
	// The level's undecided vertices, each once, pending until decided.
	todo := o.todo[:0]
	for _, c := range cs {
		if (nw == 1 || int(c)%nw == w) && state[c] == 0 {
			state[c] = pending
			todo = append(todo, c)
		}
	}
	o.marked = append(o.marked, todo...)
	ins := o.ins[:0]
	for _, c := range todo {
		ins = append(ins, r.g.In.Nbrs(c))
	}
	// Rounds: the k-th in-neighbor of every vertex not yet supported and
	// whose list goes on (most are supported by one of their first).
	up := T(l - 1)
	open := o.open[:0]
	open = append(open, todo...)
	for k := 0; k < stagedRounds && len(open) > 0; k++ {
		n := 0
		for i, c := range open {
			in := ins[i]
			if k == len(in) { // (only at round 0: an empty list)
				continue
			}
			work++
			if u := in[k]; r.d[u] == up && state[u] != affected {
				state[c] = supported
				r.adoptShared(c, u)
				continue
			}
			if k+1 < len(in) {
				open[n], ins[n] = c, in
				n++
			}
		}
		open, ins = open[:n], ins[:n]
	}
	for i, c := range open {
		for _, u := range ins[i][stagedRounds:] {
			work++
			if r.d[u] == up && state[u] != affected {
				state[c] = supported
				r.adoptShared(c, u)
				break
			}
		}
	}
	for _, c := range todo {
		if state[c] != supported {
			work += r.affect(c, T(l), o)
		}
	}
	o.todo, o.ins, o.open = todo, ins[:0], open[:0]
}

// stagedRounds is how many in-neighbors decideUnit tries for every
// undecided vertex, round by round, before it scans the rest of each list
// one vertex at a time.
const stagedRounds = 3

// pending is the state of a vertex decideUnit is deciding.
const pending = 3

// deleted is a filter of the pairs cut names, for a unit repair to tell
// which upserted edges may be absent again (deleted after their upsert in
// the same batch) without searching for every one of them in its tail's
// out-list: upserted and not deleted in the batch, an edge is present.
// A pair the filter does not hold was not cut; one it holds may have
// been (one hash into about 32 bits a pair: one in 32 of the others is
// searched for needlessly). It is nil (search every one) for a weighted
// repair, which needs the weights.
func (r *repair[T]) deleted(cut [][2]int32) pairFilter {
	if !r.unit {
		return nil
	}
	return newPairFilter(cut)
}

// pairFilter is a one-hash Bloom filter of vertex pairs; its length in
// words is at least 1.
type pairFilter []uint64

// newPairFilter is a filter of ps, about 32 bits a pair (one in 32 of
// the pairs it does not hold seems held: a batch's 10,000 operations take
// 40 KB, and each pair that seems held costs a search at random).
func newPairFilter(ps [][2]int32) pairFilter {
	f := make(pairFilter, max(1, (32*len(ps)+63)/64))
	for _, e := range ps {
		f.add(e)
	}
	return f
}

func (f pairFilter) bit(e [2]int32) (int, uint64) {
	h := (uint64(uint32(e[0]))<<32 | uint64(uint32(e[1]))) * 0x9e3779b97f4a7c15
	k := (h >> 32) % uint64(len(f)*64)
	return int(k / 64), 1 << (k % 64)
}

func (f pairFilter) add(e [2]int32) {
	w, b := f.bit(e)
	f[w] |= b
}

// mayHold is false only for a pair never added.
func (f pairFilter) mayHold(e [2]int32) bool {
	w, b := f.bit(e)
	return f[w]&b != 0
}

// improving returns the edges of ups that may shorten their head's
// distance, filtered in the background on d as it stands before phase 2
// (most do not, and reading two distances at random per edge is what a
// batch's inserts cost: cache misses), while phase 1 runs (it reads d
// only): wait returns them, and must be called before d is written.
// Weighted, all of ups (their lengths are searched for after).
//
// INVARIANT: phases 1 and 2 change only the distances of the affected,
// so an upsert between two vertices that are not shortens its head
// after phase 2 only if it did before; into an affected vertex, phase 2
// read it (its restart reads every in-edge of g, the batch's upserts
// among them); out of one, the search relaxes it (an affected vertex is
// queued, else unreached). Dropping the others is exact: the distances
// only fall from phase 2 on, so an edge that does not shorten its head
// then never will in this repair.
func (r *repair[T]) improving(ups [][2]int32) (wait func() [][2]int32) {
	if !r.unit && r.g.Out.Weighted() {
		return func() [][2]int32 { return ups }
	}
	return goKeepPairs(ups, func(part, out [][2]int32) [][2]int32 {
		d, far := r.d, r.far
		for _, e := range part {
			if du := d[e[0]]; du != far && r.lt(du+1, d[e[1]]) {
				out = append(out, e)
			}
		}
		return out
	})
}

// keepPairs returns the pairs of es that keep keeps, in order: keep(part,
// out) appends to out the pairs of part to keep. Its loop is the caller's,
// so that the test is inlined in it: the cost is the test's reads at
// random (cache misses), and called once a pair, the test let half as
// many of them overlap. A large es is filtered on every core first. keep
// must only read.
func keepPairs(es [][2]int32, keep func(part, out [][2]int32) [][2]int32) [][2]int32 {
	if len(es) <= keepGrain {
		return keep(es, nil)
	}
	return goKeepPairs(es, keep)()
}

// goKeepPairs is keepPairs begun in the background (kernels.GoFor): wait returns
// the pairs kept (called again, the same).
func goKeepPairs(es [][2]int32, keep func(part, out [][2]int32) [][2]int32) (wait func() [][2]int32) {
	nw := kernels.Workers()
	parts := make([][][2]int32, (len(es)+keepGrain-1)/keepGrain)
	done := kernels.GoFor(nw, len(es), keepGrain, func(_, lo, hi int) {
		parts[lo/keepGrain] = keep(es[lo:hi], nil)
	})
	var kept [][2]int32
	waited := false
	return func() [][2]int32 {
		if !waited {
			done()
			kept, waited = slices.Concat(parts...), true
		}
		return kept
	}
}

// keepGrain is the chunk of keepPairs' parallel filter.
const keepGrain = 2048

// repairLimit is how many vertices a repair may touch before a recompute
// (with the parallel kernel) is the cheaper way: an eighth of the graph.
func repairLimit(n int) int { return max(1024, n/8) }

// changes turns a batch of operations (vertex deletes followed by the edge
// deletes they applied, as topology streams hand them out) into what a
// repair needs, in g's indexes: the edges deleted (and, when lengthen is
// set, the upserted ones, whose weight may have grown) and the upserted
// edges. An edge delete of a vertex g does not index deleted nothing.
// prior (nil, or what was there before each operation) leaves out the
// operations that changed nothing a distance rests on: deletes of absent
// edges, and as lengthened edges, upserts of new ones. The two lists are
// m's buffers (m.cut, m.ups), valid until its next changes: a fresh
// list per batch cost more than reading the batch (zeroed, then grown).
func changes(g *views.Topo, edges []views.Edge, prior []views.Prior, lengthen bool, m *Marks) (cut, ups [][2]int32, err error) {
	was := func(k int) bool { return prior == nil || prior[k] != views.WasAbsent }
	ids := g.IDs
	at := func(v uint64) int32 { // index, inlined (it is not: it copies g.IDs)
		if i, ok := ids.Index(v); ok {
			return int32(i)
		}
		return -1
	}
	cut, ups = m.cut[:0], m.ups[:0]
	defer func() { m.cut, m.ups = cut, ups }()
	for k := range edges {
		e := &edges[k]
		switch e.Op.Kind {
		case engine.OpDeleteVertex:
			// Its edges follow as edge deletes.
		case engine.OpDeleteEdge:
			if i, j := at(e.Op.Src), at(e.Op.Dst); i >= 0 && j >= 0 && was(k) {
				cut = append(cut, [2]int32{i, j})
			}
		default:
			i, j := at(e.Op.Src), at(e.Op.Dst)
			if i < 0 || j < 0 {
				return nil, nil, unindexed(e.Op.Src)
			}
			ups = append(ups, [2]int32{i, j})
			if lengthen && was(k) {
				cut = append(cut, [2]int32{i, j})
			}
		}
	}
	return cut, ups, nil
}

// Dists brings d, single-source distances kept over ids, to g after
// edges: it returns them over g's ids, and false when the change was too
// large to repair (the caller recomputes). work gets the edges read.
//
// parent (nil, or a unit repair's caller's parents over ids, nil when it
// has none yet) is brought to g's ids and kept (see repair.parent). mark
// is the caller's, reused across repairs.
func Dists[T Distance](g *views.Topo, d []T, ids views.IDSpace, edges []views.Edge, prior []views.Prior, root uint64, far T, unit bool, parent *[]int32, work *int, mark *Marks) ([]T, bool, error) {
	// Every length is 1 in a unit repair; else above 0 when the graph has
	// had no weight that is not (views.Topo.PositiveLengths).
	// An upsert may lengthen an edge only in a weighted graph.
	cut, ups, err := changes(g, edges, prior, !unit && g.Out.Weighted(), mark)
	if err != nil {
		return d, false, err
	}
	d = rooted(d, ids, g.IDs, root, 0, far)
	mark.start(g.Len())
	r := &repair[T]{g: g, d: d, root: kernels.Index(g, root), far: far, unit: unit, positive: unit || g.PositiveLengths(), limit: repairLimit(g.Len()),
		mark: mark}
	if parent != nil && unit {
		*parent, r.work = parentsOn(g, d, *parent, ids, r.root, far)
		r.parent = *parent
	}
	ok := r.run(cut, ups)
	*work = r.work
	return d, ok, nil
}

// parentsOn returns par, parents over the id space from, over g's, for
// the levels d (over g's, exact before the batch g ends), and the edges
// it read. When g's space extends from (an index keeps its vertex) they
// stay in place; in a new index generation each moves to its vertex's
// new index and names its parent's (-1, none known, for a parent the new
// space does not hold), as the levels move. When par is nil (a loaded
// checkpoint keeps none) it finds them again on every core: each vertex
// reached but the root gets its first in-neighbor in g one level nearer,
// or -1 when it has none (the batch cut the edges from all of them:
// phase 1 decides it). Either way parent's INVARIANT holds.
func parentsOn[T Distance](g *views.Topo, d []T, par []int32, from views.IDSpace, root int32, far T) ([]int32, int) {
	n := g.Len()
	if par != nil {
		extends := g.IDs.Extends(from) && len(par) <= n
		par = Resize(par, from, g.IDs, -1)
		if !extends {
			for i, p := range par {
				if p >= 0 {
					j, ok := g.IDs.Index(from.ID(int(p)))
					par[i] = int32(j)
					if !ok {
						par[i] = -1
					}
				}
			}
		}
		return par, 0
	}
	par = make([]int32, n, n+n/4)
	var read atomic.Int64
	kernels.ParallelFor(kernels.Workers(), n, 1<<12, func(_, lo, hi int) {
		k := 0
		defer func() { read.Add(int64(k)) }()
		for v := lo; v < hi; v++ {
			par[v] = -1
			dv := d[v]
			if dv == far || int32(v) == root {
				continue
			}
			for _, u := range g.In.Nbrs(int32(v)) {
				k++
				if du := d[u]; du != far && du+1 == dv {
					par[v] = u
					break
				}
			}
		}
	})
	return par, int(read.Load())
}
