package analytics

import (
	"slices"
	"time"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// fanWindow is the window of the fanin and fanout monitors and of the
// fraud monitor's fan-in and mule (a views.ItemWindow: with a duration, in
// event time, late operations counted and never held; else the last
// cfg.Edges operations in log order), taken in one operation at a time.
// Each upsert held is kept in the lists of the vertices it counts for: its
// destination's in-list (fan-in, the mule's money in) and its source's
// out-list (fan-out, the mule's money out), each list in the window's
// order (the order its events leave: event time for a window of a
// duration, else log order), with what the measures read: the number of
// events, the distinct counterparties and the exact sum of the amounts.
//
// A vertex crosses when an upsert takes its measure above the threshold
// while it was not above; it re-arms once an operation leaves its measure
// at or below the threshold. A vertex is a mule when an upsert makes its
// window hold money in from at least muleSenders senders and out to at
// least muleReceivers receivers while it did not; it re-arms once either
// falls below. Each is decided on the state after the whole operation
// (what it brings in and what it pushes out), so the alerts, each raised
// by the upsert that made it, depend on the order of the operations only,
// not on how pulls cut them: a replay of the same operations after a
// restart raises the same alerts.
//
// An alert carries the vertex's events in the window as evidence, oldest
// first, the newest cfg.evidence of them, and the totals of them all. So
// that its memory stays bounded, an event keeps its payload (reference
// and properties) only while it is among the newest cfg.evidence of a
// list it is in (one that falls out never comes back, as events leave a
// list oldest first), and only while the payloads kept stay within
// maxPay: an event that would take them past it keeps none (its evidence
// has no reference or properties).
//
// Layout (so that an operation touches few cache lines): the items are a
// slab, its, indexed by int32 (index 0 is none), and an item that left
// gives its place to the next one (a free stack: in a steady window the
// slab is used round like a ring in arrival order); the window holds
// their indices. The vertices are slabs too, indexed by int32 (0: none),
// each array holding one thing of every vertex: vid its id, vflag its
// flags, vin and vout its sides (one cache line each; only the sides
// kept are made), vloops its self-loops (the mule); vs maps an id to its
// index. A side's list is linked through its items (fanItem.in or .out:
// the previous and next item of that list), oldest to newest, and the
// side keeps its ends, its count, the oldest of its items marked newest,
// the distinct counterparties (and, while it has no map of them, its
// items counted by a hash of their counterparty: most looks through the
// list are spared) and the exact sum (up to sumInline
// components in place; a longer sum, and the map of counterparties of a
// side holding more than smallSide events, in its ext).
//
// INVARIANT (between calls): every held upsert is in the lists of the
// sides kept (in, out) of its vertices, each list sorted by before and
// linked both ways (but the first's prev, which is left as it was),
// its first, last and count agreeing with the links, seen counting its
// items by peerBucket while it has no map of counterparties (else 0);
// a side's sum, peers and the list agree; above holds only vertices whose
// measure exceeds the threshold (and, measure events or senders, every
// such vertex); mule holds exactly the vertices whose window holds
// muleSenders senders and muleReceivers receivers; an item has its
// payload only while among the newest cfg.evidence on a side, and a
// side's mark is the oldest of those (0 when empty); payBytes, the
// payloads kept, is at most maxPay; above holds exactly the vertices
// whose above flag is set, and mules counts those whose mule flag is; a
// held upsert's vin and vout are the vertices whose lists hold it; a slab
// place is either in use (an item held, a vertex of vs) or on its free
// stack.
//
// What an operation costs follows the operation, not the window: the
// vertices it touches are reached through the items (no map lookup for
// what leaves); a vertex whose lists empty stays in vs, idle, until idle
// ones outnumber the others (then one pass over the vertex slab drops
// them), so a vertex that comes and goes is neither freed nor made again
// each time; a side counts its distinct counterparties by looking through
// its list while it holds at most smallSide events, and keeps a map of
// them only beyond. idle counts the idle vertices (both lists empty, no
// flag), each marked so. Not safe for concurrent use.
type fanWindow struct {
	cfg fanConfig
	win *views.ItemWindow[int32]
	n   uint64 // items ever added: the order of equal times

	its   []fanItem // the item slab (its[0]: none)
	ifree []int32   // free places of its

	vs     map[uint64]int32
	vid    []uint64  // the vertex slab (index 0: none): ids,
	vflag  []uint8   // flags (vAbove, ...),
	vin    []fanSide // in-sides (cfg.in; else empty),
	vout   []fanSide // out-sides (cfg.out; else empty),
	vloops []int32   // self-loops held (cfg.in and cfg.out; else empty)
	vfree  []int32   // free places of the vertex slab

	// above is the vertices whose above flag is set; mules counts those
	// whose mule flag is.
	above map[uint64]int32
	mules int

	items    int   // upserts held
	peers    int   // entries of the sides' peers maps
	exts     int   // sides with an ext
	idle     int   // vertices of vs marked idle
	payBytes int64 // payload bytes kept
	maxPay   int64 // the most payload bytes kept (tests lower it)
	// minCompact, compactRatio: a slab is made again, holding only the
	// places in use, once more than minCompact of its places are free
	// and more than compactRatio times those in use (tests lower them).
	minCompact, compactRatio int
	idleMax                  int // the most idle vertices kept whatever the others (maxIdle; tests lower it)
	comps                    int // components of the sums kept in exts

	left    []int32 // scratch: what one add pushed out
	touched []int32 // scratch: the vertices one add changed
	warmed  uint64  // what warm read (kept: so that it is read)
}

// fanConfig is what a fanWindow counts and raises.
type fanConfig struct {
	win views.Window
	// in, out: the sides kept (in: by destination; out: by source).
	in, out bool
	// kind is the kind of the threshold's alerts (fan_in, fan_out) and
	// byDst whether it measures the in-side (else the out-side).
	kind      string
	byDst     bool
	measure   string // events, senders or amount
	threshold float64
	evidence  int // the most events an alert carries
	// muleSenders, muleReceivers: the mule pattern (both 0: off).
	muleSenders, muleReceivers int
}

// fanConfigOf is the window configuration of a validated spec of fanin,
// fanout or fraud.
func fanConfigOf(s Spec) fanConfig {
	c := fanConfig{win: views.Window{Edges: s.WindowEdges, Duration: s.WindowDuration, Lateness: s.Lateness},
		kind: "fan_in", byDst: true, in: true, measure: s.Measure, threshold: s.Threshold, evidence: s.Evidence,
		muleSenders: s.MuleSenders, muleReceivers: s.MuleReceivers}
	if s.Type == "fanout" {
		c.kind, c.byDst, c.in, c.out = "fan_out", false, false, true
	}
	if c.mule() {
		c.in, c.out = true, true
	}
	if c.measure == "" {
		c.measure = DefaultMeasure
	}
	if c.evidence == 0 {
		c.evidence = DefaultEvidence
	}
	return c
}

func (c fanConfig) mule() bool { return c.muleSenders > 0 && c.muleReceivers > 0 }

// fanItem is one operation in the window (one that is not an upsert only
// takes its place in the window).
type fanItem struct {
	t        int64  // when it counts (views.EventMicros), Unix µs
	n        uint64 // arrival order: equal times leave in it
	src, dst uint64
	amount   float64
	seq, ref uint64
	typ      uint16
	flags    uint8
	// vin, vout: the vertices whose in-list and out-list hold it (0 for
	// a side not kept).
	vin, vout int32
	// in, out: its neighbours in those lists.
	in, out fanLink
	// ref and props: its payload, kept while newest (see fanWindow).
	eventRef, props string
}

// fanLink is an item's place in a list: the items before and after it
// (0: none).
type fanLink struct{ prev, next int32 }

const (
	itemUpsert   = 1 << iota
	itemHasEv    // it has an event time (t is it)
	itemNewIn    // among the newest of its destination's in-list
	itemNewOut   // among the newest of its source's out-list
	itemGone     // no longer held (pushed out by the add that brought it)
	itemSaveMask = itemUpsert | itemHasEv
)

func (it *fanItem) has(f uint8) bool { return it.flags&f != 0 }

// A vertex's flags (fanWindow.vflag).
const (
	vAbove   = 1 << iota // crossed the threshold and not re-armed
	vMule                // raised as a mule and not re-armed
	vIdle                // both lists empty and no flag (see fanWindow.idle)
	vTouched             // in the current add's touched list
)

// fanSide is a vertex's events of one direction in the window: one cache
// line.
type fanSide struct {
	first, last int32 // its oldest and newest item (0: none)
	mark        int32 // the oldest of its items marked newest (0: none)
	n           int32 // items held
	// npeers is the number of distinct counterparties held (see ext).
	npeers int32
	nsum   int32 // components of the sum in sum (-1: in ext.sum)
	sum    [sumInline]float64
	// seen counts the items held by their counterparty's peerBucket, 4
	// bits a bucket, while the side has no map of counterparties (else
	// 0): a count of 0 says no item has that counterparty without
	// looking through the list.
	seen uint64
	ext  *fanSideExt
}

// sumInline is the most components of a sum a side keeps in place.
const sumInline = 3

// peerBucket is peer's bucket in fanSide.seen (0..15).
func peerBucket(peer uint64) uint { return uint((peer * 0x9e3779b97f4a7c15) >> 60) }

// seenCount is the count of bucket b of seen.
func seenCount(seen uint64, b uint) uint64 { return seen >> (4 * b) & 15 }

// fanSideExt is what a side keeps beyond its line: its sum when longer
// than sumInline components, and peers, counterparty -> its events held,
// which exists only while more than smallSide events are held (fewer are
// looked through).
type fanSideExt struct {
	sum   xsum
	peers map[uint64]int32
}

// sumOf is s's exact sum.
func (s *fanSide) sumOf() xsum {
	if s.nsum < 0 {
		return s.ext.sum
	}
	return s.sum[:s.nsum]
}

// maxIdle is the most idle vertices a fan window keeps whatever the
// others.
const maxIdle = 4096

// smallSide is the most events a side holds without a map of its
// counterparties.
const smallSide = 8

// maxFanPayload bounds the payload bytes (event references and
// properties) a fan window keeps for evidence.
const maxFanPayload = 64 << 20

func newFanWindow(c fanConfig) *fanWindow {
	w := &fanWindow{cfg: c, win: views.NewItemWindow[int32](c.win, 0), vs: map[uint64]int32{}, above: map[uint64]int32{},
		maxPay: maxFanPayload, minCompact: minCompact, compactRatio: 3, idleMax: maxIdle}
	w.initSlabs()
	return w
}

// initSlabs makes the slabs hold only their place 0 (none).
func (w *fanWindow) initSlabs() {
	w.its, w.ifree = append(w.its[:0], fanItem{}), w.ifree[:0]
	w.vid, w.vflag, w.vfree = append(w.vid[:0], 0), append(w.vflag[:0], 0), w.vfree[:0]
	if w.cfg.in {
		w.vin = append(w.vin[:0], fanSide{})
	}
	if w.cfg.out {
		w.vout = append(w.vout[:0], fanSide{})
	}
	if w.cfg.in && w.cfg.out {
		w.vloops = append(w.vloops[:0], 0)
	}
}

// side is vertex x's in-side (in) or out-side.
func (w *fanWindow) side(x int32, in bool) *fanSide {
	if in {
		return &w.vin[x]
	}
	return &w.vout[x]
}

// link is item i's place in its in-list (in) or out-list.
func (w *fanWindow) link(i int32, in bool) *fanLink {
	if in {
		return &w.its[i].in
	}
	return &w.its[i].out
}

// before is the window's order: time then arrival for a window of a
// duration, arrival alone for one of operations.
func (w *fanWindow) before(a, b *fanItem) bool {
	if w.cfg.win.Duration > 0 && a.t != b.t {
		return a.t < b.t
	}
	return a.n < b.n
}

// add takes in one operation (what the window then no longer covers
// leaves) and appends the alerts it raises to al, each with its kind,
// vertex, value, threshold, evidence and totals (the caller names the
// analytic and the operation).
func (w *fanWindow) add(e views.Edge, al []Alert) []Alert {
	i := w.newItem()
	it := &w.its[i]
	*it = fanItem{t: views.EventMicros(e), n: w.n, src: e.Op.Src, dst: e.Op.Dst, amount: e.Op.Weight, seq: e.Seq, ref: e.Ref,
		typ: e.Op.Type, eventRef: e.Op.EventRef, props: e.Op.Props}
	w.n++
	if e.Op.Kind == engine.OpUpsert {
		it.flags |= itemUpsert
	}
	if e.Op.EventTime > 0 {
		it.flags |= itemHasEv
	}
	w.left = w.left[:0]
	if !w.win.Add(it.t, i, func(x int32) { w.left = append(w.left, x) }) {
		w.recycle(i)
		return al // late: never in
	}
	w.touched = w.touched[:0]
	if it.has(itemUpsert) {
		w.insert(i) // may move the slabs: it is not used after
	} else {
		it.eventRef, it.props = "", ""
	}
	// The vertices of what leaves, before remove unlinks them.
	for _, x := range w.left {
		w.touch(w.its[x].vin)
		w.touch(w.its[x].vout)
	}
	for _, x := range w.left {
		w.remove(x)
	}
	// Re-arm what the operation left at or below.
	for _, x := range w.touched {
		if w.vflag[x]&vAbove != 0 && !w.measureAbove(x) {
			w.vflag[x] &^= vAbove
			delete(w.above, w.vid[x])
		}
		if w.vflag[x]&vMule != 0 && !w.muleHolds(x) {
			w.vflag[x] &^= vMule
			w.mules--
		}
	}
	if it := &w.its[i]; it.has(itemUpsert) && !it.has(itemGone) {
		x := it.vout
		if w.cfg.byDst {
			x = it.vin
		}
		if w.vflag[x]&vAbove == 0 && w.measureAbove(x) {
			w.vflag[x] |= vAbove
			w.above[w.vid[x]] = x
			al = append(al, w.fanAlert(x))
		}
		if w.cfg.mule() {
			for k, x := range [2]int32{it.vout, it.vin} {
				if k == 1 && x == it.vout {
					break
				}
				if w.vflag[x]&vMule == 0 && w.muleHolds(x) {
					w.vflag[x] |= vMule
					w.mules++
					al = append(al, w.muleAlert(x))
				}
			}
		}
	}
	for _, x := range w.touched {
		w.vflag[x] &^= vTouched
		if w.vflag[x]&(vIdle|vAbove|vMule) == 0 && w.empty(x) {
			w.vflag[x] |= vIdle
			w.idle++
		}
	}
	for _, x := range w.left { // i among them when it left at once
		w.recycle(x)
	}
	w.sweep()
	if n := len(w.ifree); n > w.minCompact && n > w.compactRatio*(len(w.its)-n) {
		w.compactItems()
	}
	return al
}

// minCompact is fanWindow.minCompact's default.
const minCompact = 4096

// compactItems makes the item slab again with only the items held, in
// the order they leave (so a window that once held many more holds its
// memory no longer, and its items are again in arrival order).
func (w *fanWindow) compactItems() {
	held := w.win.Items()
	to := make([]int32, len(w.its)) // old place -> new (0: none)
	its := make([]fanItem, 1, len(held)+1+len(held)/4)
	for _, i := range held {
		to[i] = int32(len(its))
		its = append(its, w.its[i])
	}
	for i := range its {
		it := &its[i]
		it.in.prev, it.in.next, it.out.prev, it.out.next = to[it.in.prev], to[it.in.next], to[it.out.prev], to[it.out.next]
	}
	for _, ss := range [2][]fanSide{w.vin, w.vout} {
		for x := range ss {
			s := &ss[x]
			s.first, s.last, s.mark = to[s.first], to[s.last], to[s.mark]
		}
	}
	w.win.Remap(func(i int32) int32 { return to[i] })
	w.its, w.ifree = its, nil
}

// compactVertices makes the vertex slabs again with only the vertices of
// vs (see compactItems).
func (w *fanWindow) compactVertices() {
	n := len(w.vs) + 1
	to := make([]int32, len(w.vid))
	vid, vflag := make([]uint64, 1, n), make([]uint8, 1, n)
	var vin, vout []fanSide
	var vloops []int32
	if w.cfg.in {
		vin = make([]fanSide, 1, n)
	}
	if w.cfg.out {
		vout = make([]fanSide, 1, n)
	}
	if w.cfg.in && w.cfg.out {
		vloops = make([]int32, 1, n)
	}
	for x := 1; x < len(w.vid); x++ {
		if w.vid[x] == 0 && w.vs[0] != int32(x) { // free (0 may be an id)
			continue
		}
		to[x] = int32(len(vid))
		vid, vflag = append(vid, w.vid[x]), append(vflag, w.vflag[x])
		if vin != nil {
			vin = append(vin, w.vin[x])
		}
		if vout != nil {
			vout = append(vout, w.vout[x])
		}
		if vloops != nil {
			vloops = append(vloops, w.vloops[x])
		}
	}
	for v, x := range w.vs {
		w.vs[v] = to[x]
	}
	for v, x := range w.above {
		w.above[v] = to[x]
	}
	for i := range w.its {
		it := &w.its[i]
		it.vin, it.vout = to[it.vin], to[it.vout]
	}
	w.vid, w.vflag, w.vin, w.vout, w.vloops, w.vfree = vid, vflag, vin, vout, vloops, nil
}

// empty reports whether both lists of vertex x are empty.
func (w *fanWindow) empty(x int32) bool {
	return (!w.cfg.in || w.vin[x].n == 0) && (!w.cfg.out || w.vout[x].n == 0)
}

// warmAhead is how many operations warm loads ahead of add.
const warmAhead = 32

// warm loads what adding the operations es reads first (their vertices'
// sides and the newest item of their lists, and the items and vertices
// of the window's oldest, which they push out) and changes nothing: here
// the loads of independent operations overlap, where add, one operation
// after another, would wait for each in turn.
func (w *fanWindow) warm(es []views.Edge) {
	var s uint64
	for i := range es {
		if w.cfg.in {
			s += w.warmSide(es[i].Op.Dst, true)
		}
		if w.cfg.out {
			s += w.warmSide(es[i].Op.Src, false)
		}
	}
	// What the window pushes out meanwhile: mostly its oldest.
	for _, i := range w.win.Oldest(len(es)) {
		it := &w.its[i]
		if x := it.vin; x != 0 {
			s += uint64(w.vin[x].first)
		}
		if x := it.vout; x != 0 {
			s += uint64(w.vout[x].first)
		}
	}
	w.warmed += s
}

func (w *fanWindow) warmSide(v uint64, in bool) uint64 {
	x := w.vs[v]
	if x == 0 {
		return 0
	}
	if l := w.side(x, in).last; l != 0 {
		return w.its[l].n
	}
	return 0
}

// newItem is the place of an item to fill: one that left, or a new one.
func (w *fanWindow) newItem() int32 {
	if n := len(w.ifree); n > 0 {
		i := w.ifree[n-1]
		w.ifree = w.ifree[:n-1]
		return i
	}
	w.its = append(w.its, fanItem{})
	return int32(len(w.its) - 1)
}

// recycle frees the place of an item no list and no window holds any
// more.
func (w *fanWindow) recycle(i int32) {
	w.its[i] = fanItem{}
	w.ifree = append(w.ifree, i)
}

// touch adds x (0: none) to the vertices the current add changed, once.
func (w *fanWindow) touch(x int32) {
	if x != 0 && w.vflag[x]&vTouched == 0 {
		w.vflag[x] |= vTouched
		w.touched = append(w.touched, x)
	}
}

// sweep drops the idle vertices from vs once they are more than twice
// the others (and a few thousand): vs stays within three times the
// vertices the window holds, and each pass over the vertex slab follows
// at least two thirds as many operations that left a vertex idle as it
// visits vertices.
func (w *fanWindow) sweep() {
	if w.idle <= w.idleMax || w.idle <= 2*(len(w.vs)-w.idle) {
		return
	}
	for x := int32(1); x < int32(len(w.vid)); x++ {
		if w.vflag[x]&vIdle != 0 {
			delete(w.vs, w.vid[x])
			w.vid[x], w.vflag[x] = 0, 0
			w.vfree = append(w.vfree, x)
		}
	}
	w.idle = 0
	if n := len(w.vfree); n > w.minCompact && n > w.compactRatio*(len(w.vid)-n) {
		w.compactVertices()
	}
}

// vertex is v's place in the vertex slab, made when absent (and no
// longer idle). It may move the vertex slabs.
func (w *fanWindow) vertex(v uint64) int32 {
	x := w.vs[v]
	switch {
	case x == 0:
		if n := len(w.vfree); n > 0 {
			x = w.vfree[n-1]
			w.vfree = w.vfree[:n-1]
		} else {
			x = int32(len(w.vid))
			w.vid, w.vflag = append(w.vid, 0), append(w.vflag, 0)
			if w.cfg.in {
				w.vin = append(w.vin, fanSide{})
			}
			if w.cfg.out {
				w.vout = append(w.vout, fanSide{})
			}
			if w.cfg.in && w.cfg.out {
				w.vloops = append(w.vloops, 0)
			}
		}
		w.vid[x] = v
		w.vs[v] = x
	case w.vflag[x]&vIdle != 0:
		w.vflag[x] &^= vIdle
		w.idle--
	}
	w.touch(x)
	return x
}

// insert puts a held upsert, item i, into its lists.
func (w *fanWindow) insert(i int32) {
	w.items++
	var vin, vout int32
	if w.cfg.in {
		vin = w.vertex(w.its[i].dst)
	}
	if w.cfg.out {
		vout = w.vertex(w.its[i].src)
	}
	it := &w.its[i]
	it.vin, it.vout = vin, vout
	if w.cfg.in {
		w.push(vin, true, i, it.src, itemNewIn)
	}
	if w.cfg.out {
		w.push(vout, false, i, it.dst, itemNewOut)
		if w.cfg.in && it.src == it.dst {
			w.vloops[vout]++
		}
	}
	switch n := int64(len(it.eventRef) + len(it.props)); {
	case !it.has(itemNewIn|itemNewOut) || w.payBytes+n > w.maxPay:
		w.dropPayload(it)
	default:
		w.payBytes += n
	}
}

// push puts item i into vertex x's side (in, else out) at its place in
// the window's order, peer its counterparty; newFlag marks it newest
// there when it is among the newest cfg.evidence (and the one it pushes
// back loses the mark).
func (w *fanWindow) push(x int32, in bool, i int32, peer uint64, newFlag uint8) {
	s := w.side(x, in)
	it := &w.its[i]
	// Its place: after every item not after it (mostly last; an event
	// out of time order, found from the newest end), newer the items
	// after it.
	p, newer := s.last, 0
	for p != 0 && w.before(it, &w.its[p]) {
		p = w.prevOf(s, p, in)
		newer++
	}
	l := w.link(i, in)
	l.prev = p
	if p == 0 {
		l.next = s.first
		s.first = i
		if l.next != 0 {
			w.link(l.next, in).prev = i
		}
	} else {
		l.next = w.link(p, in).next
		w.link(p, in).next = i
	}
	switch {
	case l.next == 0:
		s.last = i
	case p != 0:
		w.link(l.next, in).prev = i
	}
	s.n++
	k := w.cfg.evidence
	switch {
	case newer >= k: // not among the newest
	case int(s.n) <= k: // all are
		it.flags |= newFlag
		s.mark = s.first
	default: // it takes a place among the newest from the oldest there
		it.flags |= newFlag
		m := s.mark
		s.mark = w.link(m, in).next
		w.unmark(&w.its[m], newFlag)
	}
	w.addSum(s, clampAmount(it.amount))
	switch {
	case s.ext != nil && s.ext.peers != nil:
		if s.ext.peers[peer]++; s.ext.peers[peer] == 1 {
			s.npeers++
			w.peers++
		}
	case s.n > smallSide:
		w.ensureExt(s)
		s.seen = 0
		s.ext.peers = make(map[uint64]int32, s.n)
		for j := s.first; j != 0; j = w.link(j, in).next {
			s.ext.peers[w.sidePeer(j, in)]++
		}
		s.npeers = int32(len(s.ext.peers))
		w.peers += len(s.ext.peers)
	default:
		b := peerBucket(peer)
		if seenCount(s.seen, b) == 0 || !w.hasPeer(s, in, i, peer) {
			s.npeers++
		}
		s.seen += 1 << (4 * b)
	}
}

// prevOf is the item before j in s's list (in: an in-list), 0 for its
// first (whose prev is left as it was when the one before it left).
func (w *fanWindow) prevOf(s *fanSide, j int32, in bool) int32 {
	if j == s.first {
		return 0
	}
	return w.link(j, in).prev
}

// ensureExt gives s an ext.
func (w *fanWindow) ensureExt(s *fanSide) {
	if s.ext == nil {
		s.ext = &fanSideExt{}
		w.exts++
	}
}

// dropExt takes s's ext away once it holds nothing.
func (w *fanWindow) dropExt(s *fanSide) {
	if s.ext != nil && s.ext.peers == nil && s.nsum >= 0 {
		s.ext = nil
		w.exts--
	}
}

// addSum adds v to s's exact sum, in place while it fits.
func (w *fanWindow) addSum(s *fanSide, v float64) {
	if s.nsum < 0 {
		n := len(s.ext.sum)
		s.ext.sum = s.ext.sum.add(v)
		w.comps += len(s.ext.sum) - n
		if len(s.ext.sum) <= sumInline {
			w.comps -= len(s.ext.sum)
			s.nsum = int32(copy(s.sum[:], s.ext.sum))
			s.ext.sum = nil
			w.dropExt(s)
		}
		return
	}
	var buf [2 * sumInline]float64
	x := xsum(append(buf[:0], s.sum[:s.nsum]...)).add(v)
	if len(x) <= sumInline {
		s.nsum = int32(copy(s.sum[:], x))
		return
	}
	w.ensureExt(s)
	s.ext.sum = slices.Clone(x)
	s.nsum = -1
	w.comps += len(x)
}

// sidePeer is item i's counterparty on its in-side (in: its source, as
// the items of an in-list share their destination), else its
// destination.
func (w *fanWindow) sidePeer(i int32, in bool) uint64 {
	if in {
		return w.its[i].src
	}
	return w.its[i].dst
}

// hasPeer reports whether an item of s other than i has counterparty
// peer.
func (w *fanWindow) hasPeer(s *fanSide, in bool, i int32, peer uint64) bool {
	for j := s.first; j != 0; j = w.link(j, in).next {
		if j != i && w.sidePeer(j, in) == peer {
			return true
		}
	}
	return false
}

// unmark takes the newest mark f off it, and its payload once it has
// none.
func (w *fanWindow) unmark(it *fanItem, f uint8) {
	if !it.has(f) {
		return
	}
	it.flags &^= f
	if !it.has(itemNewIn | itemNewOut) {
		w.payBytes -= int64(len(it.eventRef) + len(it.props))
		w.dropPayload(it)
	}
}

func (w *fanWindow) dropPayload(it *fanItem) { it.eventRef, it.props = "", "" }

// remove takes item i, which left the window, out of its lists.
func (w *fanWindow) remove(i int32) {
	it := &w.its[i]
	it.flags |= itemGone
	if !it.has(itemUpsert) {
		return
	}
	w.items--
	if it.has(itemNewIn | itemNewOut) {
		w.payBytes -= int64(len(it.eventRef) + len(it.props))
	}
	if x := it.vin; x != 0 {
		w.pull(x, true, i, it.src)
	}
	if x := it.vout; x != 0 {
		w.pull(x, false, i, it.dst)
		if it.vin != 0 && it.src == it.dst {
			w.vloops[x]--
		}
	}
}

// pull takes item i out of vertex x's side (in, else out): the oldest
// there, as the window's items leave in its order (an item pushed out by
// the add that brought it, the oldest of the window then, included).
func (w *fanWindow) pull(x int32, in bool, i int32, peer uint64) {
	s := w.side(x, in)
	l := *w.link(i, in)
	if s.mark == i { // the oldest marked: the next is (none are older)
		s.mark = l.next
	}
	if i == s.first { // the next one's prev is left as it is
		s.first = l.next
		if l.next == 0 {
			s.last = 0
		}
	} else { // cannot be (see above); kept exact all the same
		w.link(l.prev, in).next = l.next
		if l.next == 0 {
			s.last = l.prev
		} else {
			w.link(l.next, in).prev = l.prev
		}
	}
	s.n--
	w.addSum(s, -clampAmount(w.its[i].amount))
	if s.ext == nil || s.ext.peers == nil {
		b := peerBucket(peer)
		s.seen -= 1 << (4 * b)
		if seenCount(s.seen, b) == 0 || !w.hasPeer(s, in, i, peer) {
			s.npeers--
		}
		return
	}
	ps := s.ext.peers
	if ps[peer]--; ps[peer] == 0 {
		delete(ps, peer)
		s.npeers--
		w.peers--
	}
	if s.n <= smallSide {
		w.peers -= len(ps)
		s.ext.peers = nil
		w.dropExt(s)
		for j := s.first; j != 0; j = w.link(j, in).next {
			s.seen += 1 << (4 * peerBucket(w.sidePeer(j, in)))
		}
	}
}

// measured is the side of vertex x the threshold measures.
func (w *fanWindow) measured(x int32) *fanSide {
	return w.side(x, w.cfg.byDst)
}

// measureAbove reports whether x's measure exceeds the threshold.
func (w *fanWindow) measureAbove(x int32) bool {
	s := w.measured(x)
	switch w.cfg.measure {
	case "senders":
		return float64(s.npeers) > w.cfg.threshold
	case "amount":
		return s.sumOf().above(w.cfg.threshold)
	}
	return float64(s.n) > w.cfg.threshold
}

// measure is x's measure.
func (w *fanWindow) measure(x int32) float64 {
	s := w.measured(x)
	switch w.cfg.measure {
	case "senders":
		return float64(s.npeers)
	case "amount":
		return s.sumOf().value()
	}
	return float64(s.n)
}

// muleHolds reports whether x's window holds money in from muleSenders
// senders and out to muleReceivers receivers.
func (w *fanWindow) muleHolds(x int32) bool {
	return w.cfg.mule() && int(w.vin[x].npeers) >= w.cfg.muleSenders && int(w.vout[x].npeers) >= w.cfg.muleReceivers
}

// newest is up to k of the newest items of vertex x's side (in, else
// out), newest first, appended to dst.
func (w *fanWindow) newest(dst []*fanItem, x int32, in bool, k int) []*fanItem {
	s := w.side(x, in)
	for j := s.last; j != 0 && k > 0; j, k = w.prevOf(s, j, in), k-1 {
		dst = append(dst, &w.its[j])
	}
	return dst
}

// fanAlert is the threshold's alert of vertex x.
func (w *fanWindow) fanAlert(x int32) Alert {
	s := w.measured(x)
	a := Alert{Kind: w.cfg.kind, Vertex: w.vid[x], Value: w.measure(x), Threshold: w.cfg.threshold}
	ev := w.newest(nil, x, w.cfg.byDst, w.cfg.evidence)
	slices.Reverse(ev)
	a.Evidence, a.EvidenceDropped = evidenceOf(ev), int(s.n)-len(ev)
	a.Totals = &AlertTotals{Events: int(s.n), Amount: s.sumOf().value(), Counterparties: int(s.npeers),
		First: microTime(w.its[s.first].t), Last: microTime(w.its[s.last].t)}
	return a
}

// muleAlert is the mule alert of vertex x: its events in and out.
func (w *fanWindow) muleAlert(x int32) Alert {
	in, out := &w.vin[x], &w.vout[x]
	a := Alert{Kind: "mule", Vertex: w.vid[x], Value: float64(in.npeers)}
	// The newest cfg.evidence of both lists, merged from their ends (a
	// self-loop, in both, once).
	var ev []*fanItem
	i, j := in.last, out.last
	for len(ev) < w.cfg.evidence && (i != 0 || j != 0) {
		switch {
		case i != 0 && i == j:
			ev = append(ev, &w.its[i])
			i, j = w.prevOf(in, i, true), w.prevOf(out, j, false)
		case j == 0 || i != 0 && w.before(&w.its[j], &w.its[i]):
			ev = append(ev, &w.its[i])
			i = w.prevOf(in, i, true)
		default:
			ev = append(ev, &w.its[j])
			j = w.prevOf(out, j, false)
		}
	}
	slices.Reverse(ev)
	events := int(in.n+out.n) - int(w.vloops[x])
	a.Evidence, a.EvidenceDropped = evidenceOf(ev), events-len(ev)
	first, last := w.its[in.first].t, w.its[in.last].t
	if w.before(&w.its[out.first], &w.its[in.first]) {
		first = w.its[out.first].t
	}
	if w.before(&w.its[in.last], &w.its[out.last]) {
		last = w.its[out.last].t
	}
	a.Totals = &AlertTotals{Events: events, Amount: in.sumOf().value(), Counterparties: int(in.npeers),
		AmountOut: out.sumOf().value(), Receivers: int(out.npeers), First: microTime(first), Last: microTime(last)}
	return a
}

// evidenceOf is the evidence of held items.
func evidenceOf(items []*fanItem) []Evidence {
	ev := make([]Evidence, len(items))
	for i, it := range items {
		ev[i] = Evidence{Seq: it.seq, Src: it.src, Dst: it.dst, Type: it.typ, Amount: it.amount, EventRef: it.eventRef, Props: it.props, OpRef: it.ref}
		if it.has(itemHasEv) {
			ev[i].EventTime = microTime(it.t)
		}
	}
	return ev
}

// microTime is Unix µs as a time in UTC.
func microTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

func (w *fanWindow) reset() {
	w.win.Reset()
	clear(w.vs)
	clear(w.above)
	w.its, w.vid, w.vflag, w.vin, w.vout, w.vloops = nil, nil, nil, nil, nil, nil
	w.initSlabs()
	w.items, w.peers, w.payBytes, w.comps, w.mules, w.idle, w.exts = 0, 0, 0, 0, 0, 0, 0
}

// aboveValues is the measure of each vertex above the threshold.
func (w *fanWindow) aboveValues() []VertexValue {
	var out []VertexValue
	for v, x := range w.above {
		out = append(out, VertexValue{v, w.measure(x)})
	}
	return out
}

// value is v's measure, false when the window holds nothing of it.
func (w *fanWindow) value(v uint64) (VertexValue, bool) {
	x := w.vs[v]
	if x == 0 || w.measured(x).n == 0 {
		return VertexValue{v, 0}, false
	}
	return VertexValue{v, w.measure(x)}, true
}

// What the window's parts cost (Go's structs, slices and map entries,
// rounded up).
const (
	fanItemBytes   = 120 // an item's place in the slab
	fanSideBytes   = 64  // a side's place in its slab
	fanVertexBytes = 13  // a vertex's id, flags and self-loops
	fanVsBytes     = 24  // an entry of vs
	fanExtBytes    = 64  // a side's ext (its map and sum apart)
)

func (w *fanWindow) bytes() int64 {
	return w.win.Bytes(4) + int64(cap(w.its))*fanItemBytes + int64(cap(w.ifree)+cap(w.vfree))*4 +
		int64(cap(w.vin)+cap(w.vout))*fanSideBytes + int64(cap(w.vid))*fanVertexBytes + int64(len(w.vs))*fanVsBytes +
		int64(w.exts)*fanExtBytes + int64(w.peers)*mapEntryBytes + int64(w.comps)*8 + w.payBytes
}

// save writes the window's state (fanState).
func (w *fanWindow) save(e *checkpoint.Encoder) {
	st := w.state()
	st.encode(e)
}

// fanState is what a checkpoint keeps of a fanWindow: its operations in
// the order they leave (each one's time, endpoints, amount, seq,
// reference, type and flags, and the payload of those that keep one: the
// reference and properties of operation i are pay[offs[2i]:offs[2i+1]]
// and pay[offs[2i+1]:offs[2i+2]]), the vertices above and the mules (by
// id, ascending), and its late count. The lists are made again from the
// operations on load.
type fanState struct {
	times, srcs, dsts []uint64
	amounts           []float64
	seqs, refs, tf    []uint64 // tf: the type, and the flags from bit 16
	offs              []uint64
	pay               []byte
	above, mules      []uint64
	late              uint64
}

func (w *fanWindow) state() fanState {
	ops := w.win.Items() // a copy, in the order they leave
	n := len(ops)
	st := fanState{times: make([]uint64, n), srcs: make([]uint64, n), dsts: make([]uint64, n), amounts: make([]float64, n),
		seqs: make([]uint64, n), refs: make([]uint64, n), tf: make([]uint64, n), offs: make([]uint64, 1, 2*n+1), late: w.win.Late()}
	for i, j := range ops {
		it := &w.its[j]
		st.times[i], st.srcs[i], st.dsts[i], st.amounts[i], st.seqs[i], st.refs[i] = uint64(it.t), it.src, it.dst, it.amount, it.seq, it.ref
		st.tf[i] = uint64(it.typ) | uint64(it.flags&itemSaveMask)<<16
		st.pay = append(st.pay, it.eventRef...)
		st.offs = append(st.offs, uint64(len(st.pay)))
		st.pay = append(st.pay, it.props...)
		st.offs = append(st.offs, uint64(len(st.pay)))
	}
	for v := range w.above {
		st.above = append(st.above, v)
	}
	for v, x := range w.vs {
		if w.vflag[x]&vMule != 0 {
			st.mules = append(st.mules, v)
		}
	}
	slices.Sort(st.above) // the same state writes the same bytes
	slices.Sort(st.mules)
	return st
}

func (st *fanState) encode(e *checkpoint.Encoder) {
	for _, s := range [][]uint64{st.times, st.srcs, st.dsts} {
		e.Uint64s(s)
	}
	e.Float64s(st.amounts)
	for _, s := range [][]uint64{st.seqs, st.refs, st.tf, st.offs} {
		e.Uint64s(s)
	}
	e.Bytes(st.pay)
	e.Uint64s(st.above)
	e.Uint64s(st.mules)
	e.U64(st.late)
}

// loadFanWindow reads what save wrote into a new window like w (its
// settings), checking that the operations fit one window and that the
// vertices above and the mules are what the operations make them; a
// problem is reported through d (nil returned).
func loadFanWindow(d *checkpoint.Decoder, like *fanWindow) *fanWindow {
	times, srcs, dsts, amounts := d.Uint64s(), d.Uint64s(), d.Uint64s(), d.Float64s()
	seqs, refs, tf, offs := d.Uint64s(), d.Uint64s(), d.Uint64s(), d.Uint64s()
	pay, above, mules, late := d.Bytes(), d.Uint64s(), d.Uint64s(), d.U64()
	if d.Err() != nil {
		return nil
	}
	if !like.cfg.mule() && len(mules) > 0 {
		d.Fail("%d mules saved for a window without the mule pattern", len(mules))
		return nil
	}
	w := newFanWindow(like.cfg)
	w.maxPay, w.minCompact, w.compactRatio, w.idleMax = like.maxPay, like.minCompact, like.compactRatio, like.idleMax
	n := len(times)
	if most := w.win.Max(); n > most || len(srcs) != n || len(dsts) != n || len(amounts) != n || len(seqs) != n || len(refs) != n ||
		len(tf) != n || len(offs) != 2*n+1 {
		d.Fail("a window of %d operations with %d, %d, %d, %d, %d, %d and %d values (at most %d)", n, len(srcs), len(dsts), len(amounts),
			len(seqs), len(refs), len(tf), len(offs), most)
		return nil
	}
	if offs[0] != 0 || offs[2*n] != uint64(len(pay)) {
		d.Fail("payload offsets from %d to %d over %d bytes", offs[0], offs[2*n], len(pay))
		return nil
	}
	left := false
	for i := range n {
		typ, flags := tf[i]&0xffff, tf[i]>>16
		a, b, c := offs[2*i], offs[2*i+1], offs[2*i+2]
		switch {
		case typ >= uint64(engine.MaxEdgeTypes) || flags&^itemSaveMask != 0:
			d.Fail("operation %d: type %d, flags %#x", i, typ, flags)
		case i > 0 && w.cfg.win.Duration > 0 && int64(times[i]) < int64(times[i-1]):
			d.Fail("a duration window's operations out of time order at %d", i)
		case a > b || b > c || b-a > engine.MaxEventRef || c-b > engine.MaxEdgeProps:
			d.Fail("operation %d: payload at %d, %d, %d", i, a, b, c)
		case !(amounts[i] >= -maxFloat && amounts[i] <= maxFloat):
			d.Fail("operation %d: amount %v", i, amounts[i])
		case flags&itemUpsert == 0 && c > a:
			d.Fail("operation %d: a payload without an upsert", i)
		}
		if d.Err() != nil {
			return nil
		}
		j := w.newItem()
		w.its[j] = fanItem{t: int64(times[i]), n: w.n, src: srcs[i], dst: dsts[i], amount: amounts[i], seq: seqs[i], ref: refs[i], typ: uint16(typ),
			flags: uint8(flags), eventRef: string(pay[a:b]), props: string(pay[b:c])}
		w.n++
		// In the order they leave, none is late and none leaves (they were
		// all held together).
		if !w.win.Add(w.its[j].t, j, func(int32) { left = true }) || left {
			d.Fail("the window's operations do not fit one window (at %d)", i)
			return nil
		}
		if w.its[j].has(itemUpsert) {
			w.insert(j)
		}
	}
	for _, x := range w.touched {
		w.vflag[x] &^= vTouched
	}
	w.touched = w.touched[:0]
	for i, v := range above {
		x := w.vs[v]
		if x == 0 || w.vflag[x]&vAbove != 0 || !w.measureAbove(x) || i > 0 && above[i-1] >= v {
			d.Fail("vertex %d listed above the threshold: unknown, twice, or not above it", v)
			return nil
		}
		w.vflag[x] |= vAbove
		w.above[v] = x
	}
	for i, v := range mules {
		x := w.vs[v]
		if x == 0 || w.vflag[x]&vMule != 0 || !w.muleHolds(x) || i > 0 && mules[i-1] >= v {
			d.Fail("vertex %d listed as a mule: unknown, twice, or not one", v)
			return nil
		}
		w.vflag[x] |= vMule
		w.mules++
	}
	for v, x := range w.vs {
		if w.vflag[x]&vAbove == 0 && w.cfg.measure != "amount" && w.measureAbove(x) || w.vflag[x]&vMule == 0 && w.muleHolds(x) {
			d.Fail("vertex %d is above the threshold or a mule, and not listed so", v)
			return nil
		}
	}
	w.win.SetLate(late)
	return w
}

// maxFloat is the largest finite float64.
const maxFloat = 1.7976931348623157e308
