package views

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/graphtide/graphtide/internal/engine"
)

// Topo is a graph's adjacency in dense index space: what the graph
// analytics (bfs, wcc, pagerank, sssp) read, as the best static kernels
// read a CSR of int32 indexes (GAPBS), whatever the store's ids are.
// A Manager keeps one, shared by every graph analytic, and advances it in
// place from the edge log (Topology); a Topo built from a Graph
// (BuildTopo) is the plain in-memory CSR analytics are benchmarked on.
//
// Both directions are kept, whatever the store keeps: the in-lists are the
// transpose of the out-lists, built at load and then kept by every
// operation, so bottom-up BFS, pull PageRank and the repairs after deletes
// work on any store.
//
// INVARIANTS: Out.Nbrs(i) is the sorted set of the dense indexes j with an
// edge (IDs.ID(i), IDs.ID(j)) in the graph at Seq, In.Nbrs(j) the sorted
// set of those i; the two hold the same edges. Out's weights (Weights)
// are kept at the same positions as the heads (none: every weight is 1);
// In has no weights (an in-edge's weight is its out-edge's, found by
// Weight). Every index below IDs.Len() has a span in both.
type Topo struct {
	IDs     IDSpace
	Seq     uint64
	Out, In Adj
	// nonPositive: some weight ever written was not above 0 (a zero or
	// negative length); once set it stays (PositiveLengths).
	nonPositive bool
	// INVARIANT: no index from bound up has an edge, in or out (set by a
	// scan when the lists are built, raised by Apply's inserts, left by
	// its deletes: an upper bound, not always the least).
	bound int
	sc    *applyScratch // Apply's, made by the first
	// changes counts the edge changes Apply applied since takeChanges:
	// each pair's net change in a run (an operation's, or an edge a vertex
	// delete removed).
	changes uint64
}

// takeChanges returns the edge changes applied since its last call.
func (t *Topo) takeChanges() uint64 {
	c := t.changes
	t.changes = 0
	return c
}

// Bound is an index from which up no vertex has an edge (the id space's
// room for ids to come lies there): a kernel's passes over every index
// may stop at it.
func (t *Topo) Bound() int { return t.bound }

// finish makes the in-lists from the out-lists and scans for the least
// bound: the last step of every build of t's lists (from a graph, a
// remap, a checkpoint).
func (t *Topo) finish() {
	t.In = transpose(&t.Out)
	i := t.Len()
	for i > 0 && t.Out.spans[i-1].deg == 0 && t.In.spans[i-1].deg == 0 {
		i--
	}
	t.bound = i
}

// PositiveLengths reports that every weight is above 0 (so no edge joins
// two vertices at one shortest-path distance). It is conservative: false
// once any weight was not, even if that edge is gone.
func (t *Topo) PositiveLengths() bool { return !t.nonPositive }

// noteWeights records ws among the weights written.
func (t *Topo) noteWeights(ws []float64) {
	for _, w := range ws {
		if !(w > 0) {
			t.nonPositive = true
			return
		}
	}
}

// span is where one vertex's list lives in its Adj's arrays: deg heads
// from beg, in room for cap.
type span struct {
	beg      int64
	deg, cap int32
}

// Adj is the lists of one direction: a CSR whose vertices point into
// arrays of heads (spans instead of one offset array, so that each list
// has a room it grows into in place). The vertexes are cut into blocks of
// 1<<shift consecutive indexes, each block's lists in arrays of its own
// (block), so that what an update outgrows is compacted or grown block by
// block: a batch pays for the blocks it overfills, never for the whole
// graph.
//
// Weights are kept in one of two ways, the same in every block. While
// every weight is a whole number from 0 to MaxWhole, pw holds each head
// again with its weight as a uint32, packed (GAPBS's weighted layout: one
// stream of 8 bytes an edge for shortest paths, whose kernel then keeps
// 32-bit integer distances); from the first weight that is not, w holds
// them as float64. Either costs 8 bytes an edge beside the heads. A
// layout never goes back from w to pw but by a rebuild (pack).
//
// INVARIANT: block k holds the lists of the indexes [k<<shift,
// (k+1)<<shift) below Len(), and its spans are that window of spans;
// every block keeps the layout weights says (its w, pw nil or not alike).
type Adj struct {
	spans   []span
	blocks  []block
	shift   uint
	weights layout
	// The blocks' arrays again, side by side, for the readers (Nbrs and
	// the rest): 24 bytes a block, which stay in the cache, where a
	// block is over 150. INVARIANT: heads[k], floats[k] and packed[k]
	// are blocks[k]'s dst, w and pw (refresh, after every change of a
	// block's arrays).
	heads  [][]int32
	floats [][]float64
	packed [][]WNode
	// q is the queue of edits the block being applied borrows (one for
	// all: an Adj applies one block at a time).
	q queue
}

// refresh points the readers' arrays at block k's (all blocks when k <
// 0), after its arrays changed.
func (a *Adj) refresh(k int) {
	if k >= 0 {
		b := &a.blocks[k]
		a.heads[k], a.floats[k], a.packed[k] = b.dst, b.w, b.pw
		return
	}
	a.heads, a.floats, a.packed = a.heads[:0], a.floats[:0], a.packed[:0]
	for k := range a.blocks {
		b := &a.blocks[k]
		a.heads, a.floats, a.packed = append(a.heads, b.dst), append(a.floats, b.w), append(a.packed, b.pw)
	}
}

// queue is plan's queue for apply: edits and lists (scratch, reused), and
// a bit per vertex set for those queued while compact runs.
type queue struct {
	ed     []edit
	plans  []planned
	marked []uint64
	// An in-place compaction's arrays (block.scratch).
	sdst []int32
	sw   []float64
	spw  []WNode
}

// scratch is room for n heads, with weights as a keeps them, from the
// queue (grown as needed, kept for the next compaction).
func (a *block) scratch(n int64) ([]int32, []float64, []WNode) {
	if int64(cap(a.sdst)) < n {
		a.sdst = make([]int32, n+n/4)
	}
	var w []float64
	var pw []WNode
	if a.w != nil {
		if int64(cap(a.sw)) < n {
			a.sw = make([]float64, n+n/4)
		}
		w = a.sw[:n]
	}
	if a.pw != nil {
		if int64(cap(a.spw)) < n {
			a.spw = make([]WNode, n+n/4)
		}
		pw = a.spw[:n]
	}
	return a.sdst[:n], w, pw
}

// layout is how an Adj keeps its weights.
type layout uint8

const (
	noWeights     layout = iota // every weight 1
	packedWeights               // pw: every weight whole
	floatWeights                // w
)

// blockShift is the log of the vertexes a block of a new Adj holds: 4,096
// (with 16 edges a vertex, 64K heads, a quarter MiB: a compaction of one
// takes tens of microseconds). A variable, so that tests make tiny blocks.
var blockShift uint = 12

// block is the lists of one block of an Adj's vertexes: each list in a
// room of the arrays (a sixteenth more than its heads at a build; a list
// an update outgrows is moved to the arrays' free tail, with a quarter
// more room for the next, and its old room is left dead, which compaction
// reclaims; so a vertex that keeps gaining edges, a hub, moves once per
// quarter of its degree, not once per batch). An update splices each list
// it touches once: see rewrite and compact. Indexes within a block are
// local (the Adj's less the block's first).
//
// INVARIANT: used <= len(dst); at most one of w, pw is not nil, and its
// length is len(dst); when pw is not nil, pw[k].V == dst[k] at every
// position k of every span's deg heads. Each span's room [beg, beg+cap)
// lies within [0, used), holds its deg heads first, and overlaps no
// other; live is the sum of the degrees, held the sum of the rooms (so
// used-held slots are dead rooms, which compaction reclaims).
type block struct {
	spans []span
	dst   []int32
	w     []float64
	pw    []WNode
	used  int64
	live  int64
	held  int64
	// compacted is live at the last compaction or build (apply shrinks
	// the block once it falls to half of that).
	compacted int64
	stats     adjStats
	// The Adj's queue while the block is applied (applyLocated), else
	// empty.
	queue
}

// WNode is a head with its whole-number weight (Adj.Packed).
type WNode struct {
	V int32
	W uint32
}

// MaxWhole is the largest weight a packed list holds (so that a sum of
// two fits in 32 bits).
const MaxWhole = 1<<31 - 1

// whole reports whether weight w can be packed (not -0: packed, it would
// read back as +0).
func whole(w float64) bool {
	return w >= 0 && w <= MaxWhole && w == math.Trunc(w) && !math.Signbit(w)
}

// Lengths is the weights of one list (Adj.Weights): At(k) is the k-th.
type Lengths struct {
	f []float64
	p []WNode
}

// At is the k-th weight (1 when the list's Adj keeps none).
func (l Lengths) At(k int) float64 {
	if l.p != nil {
		return float64(l.p[k].W)
	}
	if l.f != nil {
		return l.f[k]
	}
	return 1
}

// blockOf is the block of index i.
func (a *Adj) blockOf(i int32) *block { return &a.blocks[i>>a.shift] }

// Nbrs is the sorted list of i's neighbors (valid until the Topo changes).
func (a *Adj) Nbrs(i int32) []int32 {
	s := a.spans[i]
	return a.heads[i>>a.shift][s.beg : s.beg+int64(s.deg)]
}

// Weights is the weights of Nbrs(i) (every one 1 when !Weighted()).
func (a *Adj) Weights(i int32) Lengths {
	s := a.spans[i]
	switch a.weights {
	case packedWeights:
		return Lengths{p: a.packed[i>>a.shift][s.beg : s.beg+int64(s.deg)]}
	case floatWeights:
		return Lengths{f: a.floats[i>>a.shift][s.beg : s.beg+int64(s.deg)]}
	}
	return Lengths{}
}

// Floats is the weights of Nbrs(i) as float64s when a keeps them so (some
// weight is not whole), else nil.
func (a *Adj) Floats(i int32) []float64 {
	if a.weights != floatWeights {
		return nil
	}
	s := a.spans[i]
	return a.floats[i>>a.shift][s.beg : s.beg+int64(s.deg)]
}

// Packed is i's list with its weights, packed, when a keeps them so
// (every weight whole, see Adj), else nil.
func (a *Adj) Packed(i int32) []WNode {
	if a.weights != packedWeights {
		return nil
	}
	s := a.spans[i]
	return a.packed[i>>a.shift][s.beg : s.beg+int64(s.deg)]
}

// Cursor reads an Adj's lists for a loop over indexes that mostly stay in
// one block (a kernel's chunk of consecutive indexes): Nbrs then finds
// the block only when the index leaves the last one. Valid while the Adj
// does not change.
type Cursor struct {
	a     *Adj
	spans []span // the block's, from index first
	heads []int32
	first int32
}

// Cursor is a Cursor over a's lists.
func (a *Adj) Cursor() Cursor { return Cursor{a: a} }

// Nbrs is i's list, as Adj.Nbrs.
func (c *Cursor) Nbrs(i int32) []int32 {
	x := uint32(i - c.first)
	if x >= uint32(len(c.spans)) {
		x = c.seek(i)
	}
	s := c.spans[x]
	return c.heads[s.beg : s.beg+int64(s.deg)]
}

// seek makes i's block the cursor's and returns i's place in it.
func (c *Cursor) seek(i int32) uint32 {
	k := i >> c.a.shift
	c.spans, c.heads, c.first = c.a.blocks[k].spans, c.a.heads[k], k<<c.a.shift
	return uint32(i - c.first)
}

// Whole reports that a keeps weights and every one is whole (Packed).
func (a *Adj) Whole() bool { return a.weights == packedWeights }

// Deg is i's degree.
func (a *Adj) Deg(i int32) int32 { return a.spans[i].deg }

// Weighted reports whether a keeps weights (some weight was not 1).
func (a *Adj) Weighted() bool { return a.weights != noWeights }

// Len is the number of vertex indexes.
func (a *Adj) Len() int { return len(a.spans) }

// Edges is the number of edges.
func (a *Adj) Edges() int64 {
	n := int64(0)
	for k := range a.blocks {
		n += a.blocks[k].live
	}
	return n
}

// Bytes is the memory the lists hold (free room included).
func (a *Adj) Bytes() int64 {
	n := int64(cap(a.spans))*int64(unsafe.Sizeof(span{})) + int64(cap(a.blocks))*int64(unsafe.Sizeof(block{}))
	for k := range a.blocks {
		b := &a.blocks[k]
		n += int64(cap(b.dst))*4 + int64(cap(b.w))*8 + int64(cap(b.pw))*8
	}
	return n + int64(cap(a.q.ed))*int64(unsafe.Sizeof(edit{})) + int64(cap(a.q.plans))*int64(unsafe.Sizeof(planned{})) + int64(cap(a.q.marked))*8 +
		int64(cap(a.q.sdst))*4 + int64(cap(a.q.sw))*8 + int64(cap(a.q.spw))*8
}

// takeStats returns the work counters of a's blocks and zeroes them.
func (a *Adj) takeStats() adjStats {
	var w adjStats
	for k := range a.blocks {
		w.add(a.blocks[k].stats)
		a.blocks[k].stats = adjStats{}
	}
	return w
}

// Len is the number of vertex indexes.
func (t *Topo) Len() int { return t.Out.Len() }

// Bytes is the memory t holds (its id space is the Manager's).
func (t *Topo) Bytes() int64 { return t.Out.Bytes() + t.In.Bytes() }

// Weight is the weight of the edge (i, j) and whether it exists.
func (t *Topo) Weight(i, j int32) (float64, bool) {
	nb := t.Out.Nbrs(i)
	k, ok := slices.BinarySearch(nb, j)
	if !ok {
		return 0, false
	}
	return t.Out.Weights(i).At(k), true
}

// BuildTopo reads g once (its out-edges, with weights) into a Topo.
func BuildTopo(ctx context.Context, g Graph) (*Topo, error) {
	ids, err := g.IDs()
	if err != nil {
		return nil, err
	}
	t := &Topo{IDs: ids, Seq: g.Seq()}
	b := newAdjBuilder(ids.Len())
	var bad error
	var idx []int32
	var wsc []float64
	_, least := g.(*StaticView)
	err = g.Each(engine.Out, true, func(v uint64, nb []uint64, ws []float64) {
		if bad != nil {
			return
		}
		i, ok := ids.Index(v)
		if !ok {
			bad = unindexedErr(v)
			return
		}
		if cap(idx) < len(nb) {
			idx = make([]int32, len(nb))
		}
		x := idx[:len(nb)]
		if k := ids.Indexes(nb, x); k < len(nb) {
			bad = unindexedErr(nb[k])
			return
		}
		var w []float64
		if ws != nil {
			wsc = append(wsc[:0], ws...)
			w = wsc
			t.noteWeights(ws)
		}
		if !slices.IsSorted(x) { // hashed ids: their indexes follow first appearance
			sortList(x, w)
		}
		// A graph given as a plain CSR may repeat an edge: keep one (the
		// last). A store's view repeats a neighbor joined by edges of
		// several types: keep the least weight (see Topology).
		n := dedupe(x, w, 0, least)
		if w != nil {
			w = w[:n]
		}
		b.add(int32(i), x[:n], w)
		if err := ctx.Err(); err != nil && bad == nil {
			bad = err
		}
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, err
	}
	t.Out = b.done()
	t.finish()
	return t, nil
}

// adjBuilder lays lists into a new Adj's blocks as they come, in any
// order of their indexes: each block's lists tight, in the order they
// came; done then gives each its build room (loosen) and packs the
// weights when every one is whole. A block's arrays grow by appends (its
// garbage is at most its own size, not the graph's).
type adjBuilder struct {
	a        Adj
	order    [][]int32 // per block, its lists' local indexes in the order they came
	weighted bool      // some weight was not 1: every block keeps w
}

func newAdjBuilder(n int) *adjBuilder {
	b := &adjBuilder{a: newAdj(n, blockShift, noWeights)}
	b.order = make([][]int32, len(b.a.blocks))
	return b
}

// add lays the list of index i (laid at most once): heads sorted and
// unique, with weights ws (nil: every one 1). The builder copies both.
func (b *adjBuilder) add(i int32, heads []int32, ws []float64) {
	if !b.weighted && slices.ContainsFunc(ws, func(w float64) bool { return w != 1 }) {
		b.weighted = true
		for k := range b.a.blocks {
			bl := &b.a.blocks[k]
			bl.w = make([]float64, len(bl.dst), cap(bl.dst))
			for x := range bl.w {
				bl.w[x] = 1
			}
		}
	}
	bl := b.a.blockOf(i)
	beg := int64(len(bl.dst))
	bl.dst = append(bl.dst, heads...)
	if b.weighted {
		if ws != nil {
			bl.w = append(bl.w, ws...)
		} else {
			for range heads {
				bl.w = append(bl.w, 1)
			}
		}
	}
	local := i & (1<<b.a.shift - 1)
	bl.spans[local] = span{beg: beg, deg: int32(len(heads)), cap: int32(len(heads))}
	b.order[i>>b.a.shift] = append(b.order[i>>b.a.shift], local)
}

// done gives every list its build room and returns the Adj.
func (b *adjBuilder) done() Adj {
	if b.weighted {
		b.a.weights = floatWeights
	}
	for k := range b.a.blocks {
		bl := &b.a.blocks[k]
		bl.live = int64(len(bl.dst))
		if b.order[k] == nil {
			b.order[k] = []int32{} // no list: none to lay (nil would mean index order)
		}
		bl.loosen(b.order[k])
	}
	b.a.refresh(-1)
	b.a.pack()
	return b.a
}

func unindexedErr(v uint64) error {
	return fmt.Errorf("views: vertex %d has no index in the view's id space", v)
}

// dedupe drops repeated heads of the sorted list d (whose weights start at
// w[at] when w is not nil), keeping each head's last weight (least: its
// least weight), and returns the new length.
func dedupe(d []int32, w []float64, at int64, least bool) int {
	n := 0
	for k := range d {
		if n > 0 && d[n-1] == d[k] {
			n--
			if least && w != nil && w[at+int64(n)] < w[at+int64(k)] {
				n++ // the kept weight is the smaller
				continue
			}
		}
		d[n] = d[k]
		if w != nil {
			w[at+int64(n)] = w[at+int64(k)]
		}
		n++
	}
	return n
}

// sortList sorts a list of heads, with their weights when w is not nil
// (w[k] is the weight of dst[k]).
func sortList(dst []int32, w []float64) {
	if w == nil {
		slices.Sort(dst)
		return
	}
	type hw struct {
		d int32
		w float64
	}
	x := make([]hw, len(dst))
	for k := range dst {
		x[k] = hw{dst[k], w[k]}
	}
	slices.SortStableFunc(x, func(a, b hw) int { return cmp.Compare(a.d, b.d) })
	for k := range x {
		dst[k], w[k] = x[k].d, x[k].w
	}
}

// Room policy. A list that outgrows its room is moved to the free tail
// with a quarter more room (so a list that keeps growing, a hub, moves
// once per quarter of its degree gained); its old room is dead. When the
// tail is short, a compaction slides the rooms together, keeping their
// slack but trimming rooms far above their lists (deletes), and gives
// the lists a run is about to outgrow their new rooms in the same pass
// (so a batch that outgrows many rooms costs one pass and leaves no dead
// rooms). It works in place when that leaves a tail of at least
// 1/garbageShare of the rooms, else into arrays a sixteenth larger than
// the rooms: either is amortized, a pass over the rooms paying for the
// slots that moves used since the last (or, growing, for the sixteenth
// the graph grew by). The shares trade memory (bytes per edge) against
// copies.

// roomFor is the room a list of deg heads is given when it outgrows its.
func roomFor(deg int32) int32 { return deg + deg/4 + 2 }

// buildRoom is the room a build gives a list of deg heads: a sixteenth
// more, so that most lists a stream touches grow in place for a while
// (about the memory a free tail of a sixteenth of the heads would take).
func buildRoom(deg int32) int32 { return deg + deg/16 }

// loosen gives each list, laid tight one after the other in the order of
// order (nil: index order), its buildRoom: in place, sliding the lists
// right from the last, when the arrays' capacity holds them and not much
// more, else in new arrays. live is the caller's.
func (a *block) loosen(order []int32) {
	each := func(f func(v int32)) {
		if order == nil {
			for v := range a.spans {
				f(int32(v))
			}
			return
		}
		for _, v := range order {
			f(v)
		}
	}
	total := int64(0)
	each(func(v int32) { total += int64(buildRoom(a.spans[v].deg)) })
	// In place only when that leaves little unused (a build's arrays
	// grown by appends are copied into arrays of their rooms' size).
	fits := func(c int) bool { return int64(c) >= total && int64(c) <= total+total/64+growMin }
	if fits(cap(a.dst)) && (a.w == nil || cap(a.w) == cap(a.dst)) {
		a.dst = a.dst[:cap(a.dst)]
		if a.w != nil {
			a.w = a.w[:cap(a.w)]
		}
		end := total
		for x := len(a.spans) - 1; x >= 0; x-- {
			v := int32(x)
			if order != nil {
				if x >= len(order) {
					continue
				}
				v = order[x]
			}
			s := &a.spans[v]
			room := buildRoom(s.deg)
			end -= int64(room)
			if s.deg > 0 && s.beg != end {
				copy(a.dst[end:end+int64(s.deg)], a.dst[s.beg:s.beg+int64(s.deg)])
				if a.w != nil {
					copy(a.w[end:end+int64(s.deg)], a.w[s.beg:s.beg+int64(s.deg)])
				}
			}
			s.beg, s.cap = end, room
			if room == 0 {
				s.beg = 0 // INVARIANT: a span with no room is at 0
			}
		}
	} else {
		dst := make([]int32, total)
		var w []float64
		if a.w != nil {
			w = make([]float64, total)
		}
		at := int64(0)
		each(func(v int32) {
			s := &a.spans[v]
			copy(dst[at:], a.dst[s.beg:s.beg+int64(s.deg)])
			if w != nil {
				copy(w[at:], a.w[s.beg:s.beg+int64(s.deg)])
			}
			s.beg, s.cap = at, buildRoom(s.deg)
			if s.cap == 0 {
				s.beg = 0
			}
			at += int64(s.cap)
		})
		a.dst, a.w = dst, w
	}
	a.used, a.held, a.compacted = total, total, a.live
}

// garbageShare: a compaction grows a block's arrays when, in place, it
// would leave a free tail under 1/garbageShare of the rooms; growMin is
// the least a growth adds (to a sixteenth of the rooms): small, as every
// block has it (a sparse graph's blocks hold a few thousand heads).
// Variables, so that tests can make tiny graphs compact and grow often.
// parallelFill is the least room whose new arrays two goroutines fill.
const parallelFill = 1 << 16

var (
	garbageShare int64 = 32
	growMin      int64 = 1 << 6
)

// adjStats are an Adj's work counters (cumulative, see TopologyStats).
type adjStats struct {
	compactions       uint64 // compactions (growths of the arrays among them)
	elementsCompacted uint64 // heads copied by them
	elementsMoved     uint64 // heads written by rewrites: moved, shifted or added
}

// add adds x's counts to s.
func (s *adjStats) add(x adjStats) {
	s.compactions += x.compactions
	s.elementsCompacted += x.elementsCompacted
	s.elementsMoved += x.elementsMoved
}

// reserve makes room free slots at the tail (used+room <= len(dst)),
// compacting when they are not.
func (a *block) reserve(room int64) {
	if a.used+room > int64(len(a.dst)) {
		a.compact(room)
	}
}

// roomOf is the room v's list gets at a compaction: its room trimmed to
// roomFor its degree (none when empty), or roomFor the degree a queued
// rewrite gives it when that is more (a.plans, sorted by vertex).
func (a *block) roomOf(v int32) int32 {
	s := a.spans[v]
	room := min(s.cap, roomFor(s.deg))
	if s.deg == 0 {
		room = 0
	}
	if len(a.plans) > 0 && a.marked[v/64]&(1<<(v%64)) != 0 {
		k, ok := slices.BinarySearchFunc(a.plans, v, func(p planned, v int32) int { return cmp.Compare(p.i, v) })
		if ok && a.plans[k].deg > room {
			room = roomFor(a.plans[k].deg)
		}
	}
	return room
}

// compact gives every list its roomOf from the front of the arrays, in
// the order of their vertexes, leaving at least extra free slots after
// them (and the queued rewrites' lists that have no room yet): in place
// (through the queue's scratch) when that leaves a tail of
// 1/garbageShare of the rooms and the arrays are not over twice what is
// held; else (and always when extra < 0: apply shrinking a block that
// lost half its edges) in new arrays a sixteenth larger. Work: the heads
// held (twice in place) and the block's vertexes.
func (a *block) compact(extra int64) {
	a.stats.compactions++
	shrink := extra < 0 // into new arrays whatever the sizes (apply)
	extra = max(extra, 0)
	defer func() { a.compacted = a.live }()
	if len(a.plans) > 0 {
		// Marks the planned lists, for roomOf.
		if n := (len(a.spans) + 63) / 64; len(a.marked) < n {
			a.marked = make([]uint64, n)
		}
		for _, p := range a.plans {
			a.marked[p.i/64] |= 1 << (p.i % 64)
		}
		defer func() {
			for _, p := range a.plans {
				a.marked[p.i/64] = 0
			}
		}()
	}
	total := int64(0) // the rooms
	half, halfAt := len(a.spans)/2, int64(0)
	for v, s := range a.spans {
		if v == half {
			halfAt = total // the rooms of the vertexes before half
		}
		if s.cap > 0 {
			total += int64(a.roomOf(int32(v)))
		}
	}
	for _, p := range a.plans {
		if a.spans[p.i].cap == 0 {
			extra += int64(roomFor(p.deg)) // moved to the tail after
		}
	}
	// copyList copies s's list to to in dst, w and pw; the heads copied
	// are counted by the caller (fill runs on two goroutines).
	copyList := func(dst []int32, w []float64, pw []WNode, to int64, s span) uint64 {
		end := s.beg + int64(s.deg)
		copy(dst[to:], a.dst[s.beg:end])
		if w != nil {
			copy(w[to:], a.w[s.beg:end])
		}
		if pw != nil {
			copy(pw[to:], a.pw[s.beg:end])
		}
		return uint64(s.deg)
	}
	size := int64(len(a.dst))
	inPlace := !shrink && total+extra+total/garbageShare <= size && size <= 2*(total+extra)+growMin
	var dst []int32
	var w []float64
	var pw []WNode
	if inPlace {
		// Into the queue's scratch, then back: the block's arrays keep
		// their size, and the lists their vertexes' order.
		dst, w, pw = a.scratch(total)
	} else {
		size = total + extra + max(total/16, growMin)
		dst = make([]int32, size)
		if a.w != nil {
			w = make([]float64, size)
		}
		if a.pw != nil {
			pw = make([]WNode, size)
		}
	}
	// The rooms in the order of their vertexes (no sort; a kernel that
	// reads the lists in order then reads memory in order; moves leave
	// them out of order, every compaction puts them back), the two
	// halves of the vertexes copied side by side when they are many (the
	// faults of new arrays' fresh pages cost more than the copies: two
	// threads take them at once).
	fill := func(from, to int, at int64) (heads uint64) {
		for v := from; v < to; v++ {
			s := &a.spans[v]
			if s.cap == 0 {
				continue
			}
			room := a.roomOf(int32(v))
			if room == 0 {
				s.beg, s.cap = 0, 0
				continue
			}
			heads += copyList(dst, w, pw, at, *s)
			s.beg, s.cap = at, room
			at += int64(room)
		}
		return heads
	}
	if total < parallelFill {
		a.stats.elementsCompacted += fill(0, len(a.spans), 0)
	} else {
		var second uint64
		var wg sync.WaitGroup
		wg.Go(func() { second = fill(half, len(a.spans), halfAt) })
		first := fill(0, half, 0)
		wg.Wait()
		a.stats.elementsCompacted += first + second
	}
	if inPlace {
		copy(a.dst, dst[:total])
		if w != nil {
			copy(a.w, w[:total])
		}
		if pw != nil {
			copy(a.pw, pw[:total])
		}
	} else {
		a.dst, a.w, a.pw = dst, w, pw
	}
	a.used, a.held = total, total
}

// pack keeps a's float64 weights packed (pw) when every live one is
// whole, in place: each block's w array becomes its pw (both 8 bytes an
// element, no pointers), so the build that calls it needs no more memory.
func (a *Adj) pack() {
	if a.weights != floatWeights {
		return
	}
	for k := range a.blocks {
		if !a.blocks[k].whole() {
			return
		}
	}
	for k := range a.blocks {
		b := &a.blocks[k]
		pw := unsafe.Slice((*WNode)(unsafe.Pointer(unsafe.SliceData(b.w))), len(b.w))
		for _, s := range b.spans {
			for k := s.beg; k < s.beg+int64(s.deg); k++ {
				w := b.w[k] // read before pw[k], the same 8 bytes, is written
				pw[k] = WNode{V: b.dst[k], W: uint32(w)}
			}
		}
		b.w, b.pw = nil, pw
	}
	a.weights = packedWeights
	a.refresh(-1)
}

// whole reports whether every live weight of a is whole.
func (a *block) whole() bool {
	for _, s := range a.spans {
		for _, w := range a.w[s.beg : s.beg+int64(s.deg)] {
			if !whole(w) {
				return false
			}
		}
	}
	return true
}

// unpack keeps a's packed weights as float64s from now on (see
// block.unpack).
func (a *Adj) unpack() {
	for k := range a.blocks {
		a.blocks[k].unpack()
	}
	a.weights = floatWeights
	a.refresh(-1)
}

// weigh gives a weights (every weight 1 so far: packed).
func (a *Adj) weigh() {
	for k := range a.blocks {
		a.blocks[k].weigh()
	}
	a.weights = packedWeights
	a.refresh(-1)
}

// layoutFor makes a's weights' layout hold the weights of cs: weighs a
// for a weight that is not 1, unpacks it for one that is not whole (so
// that a block's setW never has to change the layout of them all).
func (a *Adj) layoutFor(cs []change) {
	for _, c := range cs {
		if c.del {
			continue
		}
		if a.weights == noWeights && c.w != 1 {
			a.weigh()
		}
		if a.weights == packedWeights && !whole(c.w) {
			a.unpack()
			return
		}
	}
}

// unpack keeps a's packed weights as float64s from now on, in place (see
// Adj.pack): for a weight that is not whole. (pw's array is 8-byte aligned,
// as float64s need: Go aligns an allocation whose size is a multiple of
// 8 to 8.)
func (a *block) unpack() {
	w := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(a.pw))), len(a.pw))
	for k := range a.pw {
		x := float64(a.pw[k].W) // read before w[k], the same 8 bytes, is written
		w[k] = x
	}
	a.w, a.pw = w, nil
}

// setW sets the weight at position k, whose head is j; nothing when a
// keeps no weights. INVARIANT: w is whole when a keeps them packed
// (Adj.layoutFor saw to it before the block was planned).
func (a *block) setW(k int64, j int32, w float64) {
	switch {
	case a.pw != nil:
		a.pw[k] = WNode{V: j, W: uint32(w)}
	case a.w != nil:
		a.w[k] = w
	}
}

// transpose builds the in-lists of out (sorted, since sources are visited
// in index order), each in its buildRoom, with no free tail.
func transpose(out *Adj) Adj {
	n := len(out.spans)
	in := newAdj(n, out.shift, noWeights)
	for i := range out.spans {
		for _, j := range out.Nbrs(int32(i)) {
			in.spans[j].deg++
		}
	}
	for k := range in.blocks {
		b := &in.blocks[k]
		at, live := int64(0), int64(0)
		for j := range b.spans {
			s := &b.spans[j]
			s.beg, s.cap = at, buildRoom(s.deg)
			if s.cap == 0 {
				s.beg = 0
			}
			at += int64(s.cap)
			live += int64(s.deg)
		}
		b.dst = make([]int32, at)
		b.used, b.live, b.held, b.compacted = at, live, at, live
	}
	in.refresh(-1)
	fill := make([]int32, n)
	for i := range out.spans {
		for _, j := range out.Nbrs(int32(i)) {
			in.heads[j>>in.shift][in.spans[j].beg+int64(fill[j])] = int32(i)
			fill[j]++
		}
	}
	return in
}

// newAdj is an Adj of n indexes, every list empty, in blocks of 1<<shift
// indexes, keeping weights as l says.
func newAdj(n int, shift uint, l layout) Adj {
	a := Adj{spans: make([]span, n), shift: shift, weights: l}
	a.grow(n)
	return a
}

// blocksFor is how many blocks of 1<<shift indexes n indexes take.
func blocksFor(n int, shift uint) int { return (n + 1<<shift - 1) >> shift }

// grow gives the indexes up to n (new vertices) empty lists, in the
// blocks they fall in (new ones made, in a's layout), and points every
// block at its window of the spans.
func (a *Adj) grow(n int) {
	if n <= len(a.spans) && len(a.blocks) == blocksFor(len(a.spans), a.shift) {
		return
	}
	if n > len(a.spans) {
		if cap(a.spans) < n {
			s := make([]span, len(a.spans), n+n/4)
			copy(s, a.spans)
			a.spans = s
		}
		a.spans = a.spans[:n]
	}
	for len(a.blocks) < blocksFor(len(a.spans), a.shift) {
		var b block
		switch a.weights {
		case packedWeights:
			b.pw = []WNode{}
		case floatWeights:
			b.w = []float64{}
		}
		a.blocks = append(a.blocks, b)
	}
	for k := range a.blocks {
		lo, hi := k<<a.shift, min(len(a.spans), (k+1)<<a.shift)
		a.blocks[k].spans = a.spans[lo:hi:hi]
	}
	a.refresh(-1)
}

// change is one net edge change of a batch on one list: head j removed
// (del) or present with weight w.
type change struct {
	j   int32
	del bool
	w   float64
}

// edit is one change of a rewrite located in its list: at position p
// of the old list, the head there deleted (del), or j inserted before it;
// d is the shift of the old heads after it (the inserts up to it less
// the deletes).
type edit struct {
	p, d int32
	del  bool
	j    int32
	w    float64
}

// planned is one list's rewrite planned by plan: its edits are
// Adj.ed[lo:hi], its new degree deg.
type planned struct {
	i, lo, hi, deg int32
}

// locateGroup is how many searches locate runs side by side.
const locateGroup = 16

// locate sets at[x] to where cs[x].j is in the list of lists[x] (see
// located): its position, the number of its heads less than it, and
// whether the list holds it. The searches run
// locateGroup at a time, a step of each in turn, without branches on the
// heads: their loads do not wait for one another, so the cache misses of
// a search in a hub's list (a dozen, each a trip to memory) overlap
// instead of adding up.
func (a *Adj) locate(lists []int32, cs []change, at []int32) {
	var lo, n [locateGroup]int64
	var x [locateGroup]int32
	var d [locateGroup][]int32
	for base := 0; base < len(cs); base += locateGroup {
		m := min(locateGroup, len(cs)-base)
		most := int64(0)
		for g := range m {
			v := lists[base+g]
			s := a.spans[v]
			lo[g], n[g], x[g], d[g] = s.beg, int64(s.deg), cs[base+g].j, a.heads[v>>a.shift]
			most = max(most, n[g])
		}
		// INVARIANT: the position sought is in [lo[g], lo[g]+n[g]]; each
		// step halves n[g] (rounding up) and keeps it at least 1 when it
		// was, so after the steps of the longest list every n[g] is 0 or
		// 1 and one comparison settles it.
		for ; most > 1; most -= most >> 1 {
			for g := range m {
				half := n[g] >> 1
				less := int64(uint32(d[g][lo[g]+half]-x[g]) >> 31) // head < x: both are indexes, not negative
				lo[g] += less * half
				n[g] -= half
			}
		}
		for g := range m {
			p := lo[g]
			if n[g] == 1 && d[g][p] < x[g] {
				p++
			}
			s := a.spans[lists[base+g]]
			r := int32(p - s.beg)
			if r < s.deg && d[g][p] == x[g] {
				r = ^r
			}
			at[base+g] = r
		}
	}
}

// located is the position p of a change that locate found at r, and
// whether its list holds the change's head (there, at p).
//
// INVARIANT: locate writes a found head's position p as ^p (negative),
// the position of one the list lacks as it is; so plan and Topo.Apply's
// present learn it without reading the list again.
func located(r int32) (p int32, found bool) {
	if r < 0 {
		return ^r, true
	}
	return r, false
}

// plan queues the sorted, unique changes cs to i's list, located by
// locate at at: it reweighs the heads they keep (in place: a weight moves
// with its head) and queues the inserts and deletes for apply.
func (a *block) plan(i int32, cs []change, at []int32) {
	s := a.spans[i]
	d := int32(0)
	first := len(a.ed)
	for x, c := range cs {
		p, found := located(at[x])
		switch {
		case found && c.del:
			d--
			a.ed = append(a.ed, edit{p: p, d: d, del: true})
		case found:
			if a.pw != nil || a.w != nil {
				a.setW(s.beg+int64(p), c.j, c.w)
			}
		case !c.del:
			d++
			a.ed = append(a.ed, edit{p: p, d: d, j: c.j, w: c.w})
		}
	}
	if len(a.ed) > first {
		a.plans = append(a.plans, planned{i: i, lo: int32(first), hi: int32(len(a.ed)), deg: s.deg + d})
	}
}

// applyLocated applies the changes cs, sorted by their lists lists,
// block by block: it locates a block's changes (setting at, see located),
// then plans and applies them while their lists are still in the cache.
func (a *Adj) applyLocated(lists []int32, cs []change, at []int32) {
	a.layoutFor(cs)
	for k := 0; k < len(lists); {
		bk := lists[k] >> a.shift
		e := k + 1
		for e < len(lists) && lists[e]>>a.shift == bk {
			e++
		}
		a.locate(lists[k:e], cs[k:e], at[k:e])
		b := &a.blocks[bk]
		b.queue, a.q = a.q, queue{}
		b.applyLocated(bk<<a.shift, lists[k:e], cs[k:e], at[k:e])
		a.q, b.queue = b.queue, queue{}
		a.refresh(int(bk))
		k = e
	}
}

// applyLocated plans the changes cs (see Adj.applyLocated; lists are
// the Adj's indexes, base the block's first), a list's at a time, and
// applies them.
func (a *block) applyLocated(base int32, lists []int32, cs []change, at []int32) {
	for k := 0; k < len(lists); {
		e := k + 1
		for e < len(lists) && lists[e] == lists[k] {
			e++
		}
		a.plan(lists[k]-base, cs[k:e], at[k:e])
		k = e
	}
	a.apply()
}

// apply rewrites the lists plan queued: first it reserves the room of
// those that no longer fit theirs (so a run compacts or grows the arrays
// once at most), then splices each in place or moves it (rewrite).
func (a *block) apply() {
	need := int64(0)
	for _, p := range a.plans {
		if p.deg > a.spans[p.i].cap {
			need += int64(roomFor(p.deg))
		}
	}
	if need > 0 && a.used+need > int64(len(a.dst)) {
		a.compact(0) // gives them their rooms where they are
	}
	for _, p := range a.plans {
		a.rewrite(p.i, p.deg, a.ed[p.lo:p.hi])
	}
	a.ed, a.plans = a.ed[:0], a.plans[:0]
	// A block that lost half its edges since its last compaction gives
	// its dead rooms and their memory back, in arrays of its rooms' size
	// (the deletes pay for it: a compaction copies at most the heads
	// the block held then).
	if a.live < a.compacted/2 && int64(len(a.dst)) > 2*growMin {
		a.compact(-1)
	}
}

// rewrite applies the located edits ed (see plan) to i's list, of new
// degree deg. A list that still fits its room is spliced in place: the
// stretches between the edits are shifted by block copies (heads and
// weights alike) and the inserted heads written into the gaps; one that
// does not is copied, stretch by stretch, into roomFor deg at the free
// tail (reserve). Work: copies of the stretches after the first insert or
// delete, or of the whole list when it moves.
func (a *block) rewrite(i, deg int32, ed []edit) {
	s := a.spans[i]
	if deg > s.cap {
		a.moveList(i, deg, ed)
		return
	}
	// In place. The stretch after edit t, old[from:to), moves by ed[t].d:
	// those moving left are copied left to right, then those moving right
	// right to left; as the stretches keep their order, no copy then
	// overwrites a stretch yet to be copied.
	stretch := func(t int) (from, n int64) {
		from = int64(ed[t].p)
		if ed[t].del {
			from++
		}
		to := int64(s.deg)
		if t+1 < len(ed) {
			to = int64(ed[t+1].p)
		}
		return s.beg + from, to - from
	}
	for t := range ed {
		if ed[t].d < 0 {
			if from, n := stretch(t); n > 0 {
				a.shift(from+int64(ed[t].d), from, n)
			}
		}
	}
	for t := len(ed) - 1; t >= 0; t-- {
		if ed[t].d > 0 {
			if from, n := stretch(t); n > 0 {
				a.shift(from+int64(ed[t].d), from, n)
			}
		}
	}
	a.putAdded(s.beg, ed)
	a.spans[i].deg = deg
	a.live += int64(deg - s.deg)
}

// putAdded writes the inserted heads of ed into a list now at beg whose
// old heads have been shifted into place.
func (a *block) putAdded(beg int64, ed []edit) {
	before := int32(0) // the shift before edit t
	for _, e := range ed {
		if !e.del {
			k := beg + int64(e.p+before)
			a.dst[k] = e.j
			a.setW(k, e.j, e.w)
			a.stats.elementsMoved++
		}
		before = e.d
	}
}

// shift copies the n heads (and weights) at from to to (the two may
// overlap).
func (a *block) shift(to, from, n int64) {
	copy(a.dst[to:to+n], a.dst[from:from+n])
	switch {
	case a.pw != nil:
		copy(a.pw[to:to+n], a.pw[from:from+n])
	case a.w != nil:
		copy(a.w[to:to+n], a.w[from:from+n])
	}
	a.stats.elementsMoved += uint64(n)
}

// moveList moves i's list, with the edits ed applied (see rewrite), to
// the free tail, in roomFor its new degree deg.
func (a *block) moveList(i, deg int32, ed []edit) {
	room := roomFor(deg)
	a.reserve(int64(room))
	s := a.spans[i] // reserve may have moved it
	beg := a.used
	a.used += int64(room)
	a.held += int64(room) - int64(s.cap)
	prev := int64(0) // the old heads before prev are copied
	before := int32(0)
	for _, e := range ed {
		if n := int64(e.p) - prev; n > 0 {
			a.shift(beg+prev+int64(before), s.beg+prev, n)
		}
		prev = int64(e.p)
		if e.del {
			prev++
		}
		before = e.d
	}
	if n := int64(s.deg) - prev; n > 0 {
		a.shift(beg+prev+int64(before), s.beg+prev, n)
	}
	a.putAdded(beg, ed)
	a.spans[i] = span{beg: beg, deg: deg, cap: room}
	a.live += int64(deg - s.deg)
}

// weigh gives a weights (every weight 1 so far: packed); see Adj.weigh.
func (a *block) weigh() {
	a.pw = make([]WNode, len(a.dst))
	for k, j := range a.dst {
		a.pw[k] = WNode{V: j, W: 1}
	}
}

// edgeChange is one operation of a batch in index space, for sorting;
// exp marks an edge delete a vertex delete expands into.
type edgeChange struct {
	src, dst int32
	pos      int32
	del, exp bool
	w        float64
}

// applyScratch is what Apply reuses from one call to the next, so that an
// advance makes no garbage of its own size.
type applyScratch struct {
	run, byDst  []edgeChange
	csOut, csIn []change
	// The lists of csOut and csIn, and the changes' positions in them
	// (Adj.locate).
	listsOut, listsIn, atOut, atIn []int32
	// sortRun's scratch, per direction.
	keysOut, keysIn []uint64
	tmpOut, tmpIn   []edgeChange
	wg              sync.WaitGroup
	// The run's operations by vertex, while a vertex delete needs them
	// (indexed): head[v]-1 is the last of run touching v, link[r] the one
	// before r on r's source (0) and destination (1), plus 1 (0: none).
	indexed bool
	head    map[int32]int32
	link    [][2]int32
	pend    []pending
}

// pending is an operation of the run on a pair with a deleted vertex v:
// x is the other end, r its place in the run.
type pending struct{ x, r int32 }

// parallelRun is the least run whose two directions are applied by two
// goroutines.
const parallelRun = 512

// Apply applies ops (the operations with t.Seq < seq <= ids' view seq, in
// order) and moves t to ids and seq. ids must hold every endpoint of
// every upsert and extend t.IDs (a new layout is remapped first). Work:
// the ops plus, per touched list, searches for its changes and the
// copies of rewrite. A vertex delete becomes edge deletes of the edges
// the vertex has at that point of ops (its lists with the ops before it
// applied), applied with the rest, so each list is rewritten once. For
// the k-th op, when it deletes a vertex, removed(k, edges) gets the edges
// it removed (as ids, perhaps none); when it upserts or deletes an edge,
// present(k) is called if the edge existed just before it. Either may be
// nil.
func (t *Topo) Apply(ops []Edge, ids IDSpace, seq uint64, removed func(k int, edges [][2]uint64), present func(k int)) error {
	if !ids.Extends(t.IDs) {
		if err := t.remap(ids); err != nil {
			return err
		}
	}
	t.IDs = ids
	t.Out.grow(ids.Len())
	t.In.grow(ids.Len())
	if t.sc == nil {
		t.sc = &applyScratch{}
	}
	sc := t.sc
	run := sc.run[:0]
	sc.indexed = false
	for k, e := range ops {
		if e.Op.Kind == engine.OpDeleteVertex {
			var es [][2]uint64
			if i, ok := ids.Index(e.Op.Src); ok {
				run, es = t.expandVertexDelete(run, int32(i), int32(k))
			}
			if removed != nil {
				removed(k, es)
			}
			continue
		}
		i, iok := ids.Index(e.Op.Src)
		j, jok := ids.Index(e.Op.Dst)
		del := e.Op.Kind == engine.OpDeleteEdge
		if !iok || !jok {
			if del {
				continue // an edge of a vertex never indexed: it does not exist
			}
			sc.run = run
			if !iok {
				return unindexedErr(e.Op.Src)
			}
			return unindexedErr(e.Op.Dst)
		}
		if !del && !(e.Op.Weight > 0) {
			t.nonPositive = true
		}
		if !del {
			t.bound = max(t.bound, i+1, j+1)
		}
		run = append(run, edgeChange{src: int32(i), dst: int32(j), pos: int32(k), del: del, w: e.Op.Weight})
		if sc.indexed {
			sc.index(run, len(run)-1)
		}
	}
	t.applyRun(run, present)
	sc.run = run
	if cap(sc.run) > keptScratch {
		// A burst's (a catch-up's chunks of 64K operations): not kept.
		t.sc = nil
	}
	t.Seq = seq
	return nil
}

// keptScratch is the most operations whose scratch Apply keeps for the
// next call (about 200 bytes an operation).
const keptScratch = 1 << 14

// index links run[r] into the lists by vertex (applyScratch).
func (sc *applyScratch) index(run []edgeChange, r int) {
	c := run[r]
	l := [2]int32{sc.head[c.src], 0}
	sc.head[c.src] = int32(r) + 1
	if c.dst != c.src {
		l[1] = sc.head[c.dst]
		sc.head[c.dst] = int32(r) + 1
	}
	sc.link = append(sc.link[:r], l)
}

// expandVertexDelete appends to run an edge delete (at position k) of
// each edge vertex i has after run's operations, and returns run and
// those edges (as ids). Work: i's degrees plus the run's operations on
// i's pairs (the first vertex delete of a run indexes it).
func (t *Topo) expandVertexDelete(run []edgeChange, i, k int32) ([]edgeChange, [][2]uint64) {
	sc := t.sc
	if !sc.indexed {
		if sc.head == nil {
			sc.head = map[int32]int32{}
		}
		clear(sc.head)
		sc.link = sc.link[:0]
		for r := range run {
			sc.index(run, r)
		}
		sc.indexed = true
	}
	v := t.IDs.ID(int(i))
	var es [][2]uint64
	n := len(run)
	for out := 0; out < 2; out++ {
		// The run's last operation on each of i's pairs in this direction.
		p := sc.pend[:0]
		for r := sc.head[i] - 1; r >= 0; {
			c := run[r]
			next := sc.link[r][0]
			if c.src != i {
				next = sc.link[r][1]
			}
			switch {
			case out == 0 && c.src == i:
				p = append(p, pending{x: c.dst, r: r})
			case out == 1 && c.dst == i && c.src != i:
				p = append(p, pending{x: c.src, r: r})
			}
			r = next - 1
		}
		slices.SortFunc(p, func(a, b pending) int { return cmp.Or(cmp.Compare(a.x, b.x), cmp.Compare(b.r, a.r)) })
		sc.pend = p
		nb := t.Out.Nbrs(i)
		if out == 1 {
			nb = t.In.Nbrs(i)
		}
		// Merge the list with the run's last word on each pair.
		add := func(x int32) {
			c := edgeChange{src: i, dst: x, pos: k, del: true, exp: true}
			e := [2]uint64{v, t.IDs.ID(int(x))}
			if out == 1 {
				c.src, c.dst = x, i
				e = [2]uint64{e[1], v}
			}
			run = append(run, c)
			es = append(es, e)
		}
		a := 0
		for q := 0; q < len(p); {
			x := p[q]
			for a < len(nb) && nb[a] < x.x {
				if out == 0 || nb[a] != i {
					add(nb[a])
				}
				a++
			}
			if a < len(nb) && nb[a] == x.x {
				a++
			}
			if !run[x.r].del {
				add(x.x)
			}
			for q < len(p) && p[q].x == x.x {
				q++
			}
		}
		for ; a < len(nb); a++ {
			if out == 0 || nb[a] != i {
				add(nb[a])
			}
		}
	}
	for r := n; r < len(run); r++ {
		sc.index(run, r)
	}
	return run, es
}

// bySrc orders edge changes by source, destination and position (the
// comparisons stop at the first that differs: a vertex delete's expansion
// makes runs of many).
func bySrc(a, b edgeChange) int {
	switch {
	case a.src != b.src:
		return cmp.Compare(a.src, b.src)
	case a.dst != b.dst:
		return cmp.Compare(a.dst, b.dst)
	}
	return cmp.Compare(a.pos, b.pos)
}

// byDstSrc orders edge changes by destination and source.
func byDstSrc(a, b edgeChange) int {
	if a.dst != b.dst {
		return cmp.Compare(a.dst, b.dst)
	}
	return cmp.Compare(a.src, b.src)
}

// applyRun applies edge operations in index space: the last one on each
// (src, dst) wins.
func (t *Topo) applyRun(run []edgeChange, present func(k int)) {
	if len(run) == 0 {
		return
	}
	sc := t.sc
	n := t.Out.Len()
	sc.keysOut, sc.tmpOut = sortRun(run, n, false, sc.keysOut, sc.tmpOut)
	// The net change per pair is the last op on it (run is by source,
	// destination and position).
	byDst := sc.byDst[:0]
	cs, lists := sc.csOut[:0], sc.listsOut[:0]
	for k, c := range run {
		if k+1 == len(run) || run[k+1].src != c.src || run[k+1].dst != c.dst {
			byDst = append(byDst, c)
			cs = append(cs, change{j: c.dst, del: c.del, w: c.w})
			lists = append(lists, c.src)
		}
	}
	sc.byDst = byDst
	t.changes += uint64(len(byDst))
	// The two directions are independent: the in lists' on a goroutine
	// of their own for a long run, from here.
	in := func() {
		sc.keysIn, sc.tmpIn = sortRun(byDst, n, true, sc.keysIn, sc.tmpIn)
		cs, lists := sc.csIn[:0], sc.listsIn[:0]
		for _, c := range byDst {
			cs = append(cs, change{j: c.src, del: c.del, w: 1})
			lists = append(lists, c.dst)
		}
		at := slices.Grow(sc.atIn[:0], len(cs))[:len(cs)]
		t.In.applyLocated(lists, cs, at)
		sc.csIn, sc.listsIn, sc.atIn = cs, lists, at
	}
	par := len(byDst) >= parallelRun
	if par {
		sc.wg.Add(1)
		go func() {
			defer sc.wg.Done()
			in()
		}()
	}
	at := slices.Grow(sc.atOut[:0], len(cs))[:len(cs)]
	t.Out.applyLocated(lists, cs, at)
	if present != nil {
		// Whether each op's edge existed just before it: before the run
		// as locate found it in the list, then as the ops before it on the
		// pair left it (a vertex delete's expansion is not an op of its
		// own).
		for k, g := 0, 0; k < len(run); g++ {
			c := run[k]
			_, was := located(at[g])
			for ; k < len(run) && run[k].src == c.src && run[k].dst == c.dst; k++ {
				if was && !run[k].exp {
					present(int(run[k].pos))
				}
				was = !run[k].del
			}
		}
	}
	sc.csOut, sc.listsOut, sc.atOut = cs, lists, at
	if par {
		sc.wg.Wait()
	} else {
		in()
	}
}

// sortRun sorts run by source, destination and place in run (by
// destination, source and place with byDst, for a run already sorted by
// source), as bySrc and byDstSrc do, with keys and tmp as scratch
// (returned for the next call): each operation is a key of its
// vertexes and its place, sorted as an integer, when they fit in 64
// bits (n vertexes): several times faster than a sort that compares the
// operations, and radixSort about twice slices.Sort's speed on a batch's
// keys. With byDst the key leaves the source out (fewer radix passes):
// in a run sorted by source, the place orders the sources.
func sortRun(run []edgeChange, n int, byDst bool, keys []uint64, tmp []edgeChange) ([]uint64, []edgeChange) {
	vb, ib := uint(bits.Len32(uint32(n))), uint(bits.Len32(uint32(len(run))))
	if 2*vb+ib > 64 {
		if byDst {
			slices.SortFunc(run, byDstSrc)
		} else {
			slices.SortFunc(run, bySrc)
		}
		return keys, tmp
	}
	keys = keys[:0]
	width := 2*vb + ib
	if byDst {
		width = vb + ib
		for x, c := range run {
			keys = append(keys, uint64(c.dst)<<ib|uint64(x))
		}
	} else {
		for x, c := range run {
			keys = append(keys, uint64(c.src)<<(vb+ib)|uint64(c.dst)<<ib|uint64(x))
		}
	}
	keys = radixSort(keys, width)
	tmp = append(tmp[:0], run...)
	for x, k := range keys {
		run[x] = tmp[k&(1<<ib-1)]
	}
	return keys, tmp
}

// radixDigit is the bits radixSort sorts by in one pass.
const radixDigit = 11

// radixSort sorts keys, which are below 2^width, by least significant
// digits first: a pass of counting and placing per radixDigit bits,
// through scratch of keys' length taken from keys' spare capacity (keys
// is returned, perhaps reallocated). A batch's 10,000 keys of 56 bits
// take 6 passes, in less than half of slices.Sort's time.
func radixSort(keys []uint64, width uint) []uint64 {
	n := len(keys)
	if n < 256 {
		slices.Sort(keys)
		return keys
	}
	keys = slices.Grow(keys, n)
	src, dst := keys[:n], keys[n:2*n]
	var count [1 << radixDigit]int
	for shift := uint(0); shift < width; shift += radixDigit {
		clear(count[:])
		for _, k := range src {
			count[(k>>shift)&(1<<radixDigit-1)]++
		}
		at := 0
		for d, c := range count {
			count[d] = at
			at += c
		}
		for _, k := range src {
			d := (k >> shift) & (1<<radixDigit - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys[:n], src)
	}
	return keys[:n]
}

// remap moves t to the indexes of ids, a new layout holding every id of
// t.IDs (else it changes nothing and returns an error: the caller builds
// the topology again).
func (t *Topo) remap(ids IDSpace) error {
	n := ids.Len()
	to := make([]int32, t.Len())
	for i := range to {
		j, ok := ids.Index(t.IDs.ID(i))
		if !ok {
			return fmt.Errorf("views: a new index layout lacks id %d", t.IDs.ID(i))
		}
		to[i] = int32(j)
	}
	b := newAdjBuilder(n)
	weighted := t.Out.Weighted()
	var heads []int32
	var w []float64
	for i := range t.Out.spans {
		nb, ws := t.Out.Nbrs(int32(i)), t.Out.Weights(int32(i))
		heads, w = heads[:0], w[:0]
		for k, j := range nb {
			heads = append(heads, to[j])
			if weighted {
				w = append(w, ws.At(k))
			}
		}
		if !weighted {
			sortList(heads, nil)
			b.add(to[i], heads, nil)
			continue
		}
		sortList(heads, w)
		b.add(to[i], heads, w)
	}
	out := b.done()
	t.Out = out
	t.IDs = ids
	t.finish()
	return nil
}
