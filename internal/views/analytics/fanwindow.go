package analytics

import (
	"slices"
	"sort"
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
// INVARIANT (between calls): every held upsert is in the lists of the
// sides kept (in, out) of its vertices, each list sorted by before; a
// side's sum, peers and the list agree; above holds only vertices whose
// measure exceeds the threshold (and, measure events or senders, every
// such vertex); mule holds exactly the vertices whose window holds
// muleSenders senders and muleReceivers receivers; an item has its
// payload only while newest on a side; payBytes, the payloads kept, is at
// most maxPay; above holds exactly the vertices whose above flag is set,
// and mules counts those whose mule flag is; a held upsert's vin and vout
// are the vertices whose lists hold it.
//
// What an operation costs follows the operation, not the window: the
// vertices it touches are reached through the items (no map lookup for
// what leaves); a vertex whose lists empty stays in vs, idle, until idle
// ones outnumber the others (then one pass over vs drops them), so a
// vertex that comes and goes is neither freed nor made again each time;
// a side counts its distinct counterparties by looking through its list
// while it holds at most smallSide events, and keeps a map of them only
// beyond; and an item that left is used again for the next one. idle
// counts the idle vertices (both lists empty, no flag), each marked so.
// Not safe for concurrent use.
type fanWindow struct {
	cfg fanConfig
	win *views.ItemWindow[*fanItem]
	n   uint64 // items ever added: the order of equal times
	vs  map[uint64]*fanVertex
	// above is the vertices whose above flag is set; mules counts those
	// whose mule flag is.
	above map[uint64]*fanVertex
	mules int

	items    int   // upserts held
	peers    int   // entries of the sides' peers maps
	idle     int   // vertices of vs marked idle
	payBytes int64 // payload bytes kept
	maxPay   int64 // the most payload bytes kept (tests lower it)
	comps    int   // components of the sides' sums

	left    []*fanItem   // scratch: what one add pushed out
	touched []*fanVertex // scratch: the vertices one add changed
	free    []*fanItem   // items that left, to be used again (at most maxFree)
	warmed  uint64       // what warm read (kept: so that it is read)
}

// maxFree bounds the items a fan window keeps to use again.
const maxFree = 1024

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
	// ref and props: its payload, kept while newest (see fanWindow).
	eventRef, props string
	// vin, vout: the vertices whose in-list and out-list hold it (nil
	// for a side not kept, or once it left).
	vin, vout *fanVertex
}

const (
	itemUpsert   = 1 << iota
	itemHasEv    // it has an event time (t is it)
	itemNewIn    // among the newest of its destination's in-list
	itemNewOut   // among the newest of its source's out-list
	itemGone     // no longer held (pushed out by the add that brought it)
	itemSaveMask = itemUpsert | itemHasEv
)

func (it *fanItem) has(f uint8) bool { return it.flags&f != 0 }

// fanSide is a vertex's events of one direction in the window.
type fanSide struct {
	items []*fanItem // items[head:] are held, in the window's order
	head  int
	sum   xsum
	// npeers is the number of distinct counterparties held; peers,
	// counterparty -> its events held, exists only while more than
	// smallSide events are held (fewer are looked through).
	npeers int
	peers  map[uint64]int32
}

// maxIdle is the most idle vertices a fan window keeps whatever the
// others.
const maxIdle = 4096

// smallSide is the most events a side holds without a map of its
// counterparties.
const smallSide = 8

func (s *fanSide) held() []*fanItem { return s.items[s.head:] }

// fanVertex is one vertex's window.
type fanVertex struct {
	in, out fanSide
	id      uint64
	loops   int  // self-loops held (in both lists)
	above   bool // crossed the threshold and not re-armed
	mule    bool // raised as a mule and not re-armed
	idle    bool // both lists empty and no flag (see fanWindow.idle)
	touched bool // in the current add's touched list
}

// maxFanPayload bounds the payload bytes (event references and
// properties) a fan window keeps for evidence.
const maxFanPayload = 64 << 20

func newFanWindow(c fanConfig) *fanWindow {
	return &fanWindow{cfg: c, win: views.NewItemWindow[*fanItem](c.win, 0), vs: map[uint64]*fanVertex{}, above: map[uint64]*fanVertex{},
		maxPay: maxFanPayload}
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
	it := w.newItem()
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
	if !w.win.Add(it.t, it, func(x *fanItem) { w.left = append(w.left, x) }) {
		w.recycle(it)
		return al // late: never in
	}
	w.touched = w.touched[:0]
	if it.has(itemUpsert) {
		w.insert(it)
	} else {
		it.eventRef, it.props = "", ""
	}
	// The vertices of what leaves, before remove unlinks them.
	for _, x := range w.left {
		w.touch(x.vin)
		w.touch(x.vout)
	}
	for _, x := range w.left {
		w.remove(x)
	}
	// Re-arm what the operation left at or below.
	for _, x := range w.touched {
		if x.above && !w.measureAbove(x) {
			x.above = false
			delete(w.above, x.id)
		}
		if x.mule && !w.muleHolds(x) {
			x.mule = false
			w.mules--
		}
	}
	if it.has(itemUpsert) && !it.has(itemGone) {
		x := it.vout
		if w.cfg.byDst {
			x = it.vin
		}
		if !x.above && w.measureAbove(x) {
			x.above = true
			w.above[x.id] = x
			al = append(al, w.fanAlert(x.id, x))
		}
		if w.cfg.mule() {
			for i, x := range [2]*fanVertex{it.vout, it.vin} {
				if i == 1 && x == it.vout {
					break
				}
				if !x.mule && w.muleHolds(x) {
					x.mule = true
					w.mules++
					al = append(al, w.muleAlert(x.id, x))
				}
			}
		}
	}
	for _, x := range w.touched {
		x.touched = false
		if !x.idle && !x.above && !x.mule && len(x.in.held()) == 0 && len(x.out.held()) == 0 {
			x.idle = true
			w.idle++
		}
	}
	for _, x := range w.left { // it among them when it left at once
		w.recycle(x)
	}
	w.sweep()
	return al
}

// warmAhead is how many operations warm loads ahead of add.
const warmAhead = 32

// warm loads what adding the operations es reads first (their vertices'
// windows and the newest end of their lists, and the vertices of the
// window's oldest items, which they push out) and changes nothing: here
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
	for _, it := range w.win.Oldest(len(es)) {
		if x := it.vin; x != nil && x.in.head < len(x.in.items) && x.in.items[x.in.head] == it {
			s++
		}
		if x := it.vout; x != nil && x.out.head < len(x.out.items) && x.out.items[x.out.head] == it {
			s++
		}
	}
	w.warmed += s
}

func (w *fanWindow) warmSide(v uint64, in bool) uint64 {
	x := w.vs[v]
	if x == nil {
		return 0
	}
	sd := &x.out
	if in {
		sd = &x.in
	}
	if n := len(sd.items); n > 0 && sd.items[n-1] != nil {
		return sd.items[n-1].n
	}
	return uint64(sd.head)
}

// newItem is an item to fill: one that left, or a new one.
func (w *fanWindow) newItem() *fanItem {
	if n := len(w.free); n > 0 {
		it := w.free[n-1]
		w.free[n-1] = nil
		w.free = w.free[:n-1]
		return it
	}
	return &fanItem{}
}

// recycle keeps an item no list and no window holds any more to be used
// again.
func (w *fanWindow) recycle(it *fanItem) {
	if len(w.free) < maxFree {
		*it = fanItem{}
		w.free = append(w.free, it)
	}
}

// touch adds x (nil: none) to the vertices the current add changed, once.
func (w *fanWindow) touch(x *fanVertex) {
	if x != nil && !x.touched {
		x.touched = true
		w.touched = append(w.touched, x)
	}
}

// sweep drops the idle vertices from vs once they are more than twice
// the others (and a few thousand): vs stays within three times the
// vertices the window holds, and each pass over vs follows at least two
// thirds as many operations that left a vertex idle as it visits
// vertices.
func (w *fanWindow) sweep() {
	if w.idle <= maxIdle || w.idle <= 2*(len(w.vs)-w.idle) {
		return
	}
	for v, x := range w.vs {
		if x.idle {
			delete(w.vs, v)
		}
	}
	w.idle = 0
}

// vertex is v's window, made when absent (and no longer idle).
func (w *fanWindow) vertex(v uint64) *fanVertex {
	x := w.vs[v]
	switch {
	case x == nil:
		x = &fanVertex{id: v}
		w.vs[v] = x
	case x.idle:
		x.idle = false
		w.idle--
	}
	w.touch(x)
	return x
}

// insert puts a held upsert into its lists.
func (w *fanWindow) insert(it *fanItem) {
	w.items++
	if w.cfg.in {
		x := w.vertex(it.dst)
		it.vin = x
		w.push(&x.in, it, it.src, itemNewIn)
	}
	if w.cfg.out {
		x := w.vertex(it.src)
		it.vout = x
		w.push(&x.out, it, it.dst, itemNewOut)
		if w.cfg.in && it.src == it.dst {
			x.loops++
		}
	}
	switch n := int64(len(it.eventRef) + len(it.props)); {
	case !it.has(itemNewIn|itemNewOut) || w.payBytes+n > w.maxPay:
		w.dropPayload(it)
	default:
		w.payBytes += n
	}
}

// push puts it into side s at its place in the window's order, peer its
// counterparty; newFlag marks it newest on s when it is among the newest
// cfg.evidence there (and the one it pushes back loses the mark).
func (w *fanWindow) push(s *fanSide, it *fanItem, peer uint64, newFlag uint8) {
	h := s.held()
	// Its place: after every item not after it (mostly last; an event
	// out of time order, by binary search).
	i := len(h)
	if i > 0 && w.before(it, h[i-1]) {
		i = sort.Search(i, func(j int) bool { return w.before(it, h[j]) })
	}
	switch {
	case i == 0 && s.head > 0:
		s.head--
		s.items[s.head] = it
	default:
		s.items = slices.Insert(s.items, s.head+i, it)
	}
	h = s.held()
	if newer := len(h) - 1 - i; newer < w.cfg.evidence {
		it.flags |= newFlag
		if len(h) > w.cfg.evidence {
			w.unmark(h[len(h)-1-w.cfg.evidence], newFlag)
		}
	}
	n := len(s.sum)
	s.sum = s.sum.add(clampAmount(it.amount))
	w.comps += len(s.sum) - n
	switch {
	case s.peers != nil:
		if s.peers[peer]++; s.peers[peer] == 1 {
			s.npeers++
			w.peers++
		}
	case len(h) > smallSide:
		s.peers = make(map[uint64]int32, len(h))
		for _, x := range h {
			s.peers[sidePeer(s, x)]++
		}
		s.npeers = len(s.peers)
		w.peers += s.npeers
	default:
		if !hasPeer(s, h, it, peer) {
			s.npeers++
		}
	}
}

// sidePeer is it's counterparty on s: its source in an in-list (whose
// items share their destination), else its destination.
func sidePeer(s *fanSide, it *fanItem) uint64 {
	if it.vin != nil && &it.vin.in == s {
		return it.src
	}
	return it.dst
}

// hasPeer reports whether an item of h other than it has counterparty
// peer on s.
func hasPeer(s *fanSide, h []*fanItem, it *fanItem, peer uint64) bool {
	for _, x := range h {
		if x != it && sidePeer(s, x) == peer {
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

// remove takes an item that left the window out of its lists.
func (w *fanWindow) remove(it *fanItem) {
	it.flags |= itemGone
	if !it.has(itemUpsert) {
		return
	}
	w.items--
	if it.has(itemNewIn | itemNewOut) {
		w.payBytes -= int64(len(it.eventRef) + len(it.props))
	}
	if x := it.vin; x != nil {
		w.pull(&x.in, it, it.src)
	}
	if x := it.vout; x != nil {
		w.pull(&x.out, it, it.dst)
		if it.vin != nil && it.src == it.dst {
			x.loops--
		}
	}
}

// pull takes it out of side s: the oldest there, as the window's items
// leave in its order (an item pushed out by the add that brought it, the
// oldest of the window then, included).
func (w *fanWindow) pull(s *fanSide, it *fanItem, peer uint64) {
	h := s.held()
	i := 0
	if h[0] != it { // cannot be (see above); kept exact all the same
		i = slices.Index(h, it)
	}
	if i == 0 {
		s.items[s.head] = nil
		s.head++
	} else {
		s.items = slices.Delete(s.items, s.head+i, s.head+i+1)
	}
	switch h := s.held(); {
	case len(h) == 0:
		clear(s.items)
		if cap(s.items) > 64 {
			s.items = nil
		} else {
			s.items = s.items[:0]
		}
		s.head = 0
	case s.head > len(s.items)/2 && s.head >= 16:
		n := copy(s.items, h)
		clear(s.items[n:])
		s.items = s.items[:n]
		s.head = 0
	}
	n := len(s.sum)
	s.sum = s.sum.add(-clampAmount(it.amount))
	w.comps += len(s.sum) - n
	if s.peers == nil {
		if !hasPeer(s, s.held(), it, peer) {
			s.npeers--
		}
		return
	}
	if s.peers[peer]--; s.peers[peer] == 0 {
		delete(s.peers, peer)
		s.npeers--
		w.peers--
	}
	if len(s.held()) <= smallSide {
		w.peers -= len(s.peers)
		s.peers = nil
	}
}

// measured is the side of x the threshold measures.
func (w *fanWindow) measured(x *fanVertex) *fanSide {
	if w.cfg.byDst {
		return &x.in
	}
	return &x.out
}

// measureAbove reports whether x's measure exceeds the threshold.
func (w *fanWindow) measureAbove(x *fanVertex) bool {
	s := w.measured(x)
	switch w.cfg.measure {
	case "senders":
		return float64(s.npeers) > w.cfg.threshold
	case "amount":
		return s.sum.above(w.cfg.threshold)
	}
	return float64(len(s.held())) > w.cfg.threshold
}

// measure is x's measure.
func (w *fanWindow) measure(x *fanVertex) float64 {
	s := w.measured(x)
	switch w.cfg.measure {
	case "senders":
		return float64(s.npeers)
	case "amount":
		return s.sum.value()
	}
	return float64(len(s.held()))
}

// muleHolds reports whether x's window holds money in from muleSenders
// senders and out to muleReceivers receivers.
func (w *fanWindow) muleHolds(x *fanVertex) bool {
	return w.cfg.mule() && x.in.npeers >= w.cfg.muleSenders && x.out.npeers >= w.cfg.muleReceivers
}

// fanAlert is the threshold's alert of vertex v.
func (w *fanWindow) fanAlert(v uint64, x *fanVertex) Alert {
	s := w.measured(x)
	h := s.held()
	a := Alert{Kind: w.cfg.kind, Vertex: v, Value: w.measure(x), Threshold: w.cfg.threshold}
	k := min(len(h), w.cfg.evidence)
	a.Evidence, a.EvidenceDropped = evidenceOf(h[len(h)-k:]), len(h)-k
	a.Totals = &AlertTotals{Events: len(h), Amount: s.sum.value(), Counterparties: s.npeers,
		First: microTime(h[0].t), Last: microTime(h[len(h)-1].t)}
	return a
}

// muleAlert is the mule alert of vertex v: its events in and out.
func (w *fanWindow) muleAlert(v uint64, x *fanVertex) Alert {
	in, out := x.in.held(), x.out.held()
	a := Alert{Kind: "mule", Vertex: v, Value: float64(x.in.npeers)}
	// The newest cfg.evidence of both lists, merged from their ends (a
	// self-loop, in both, once).
	var ev []*fanItem
	i, j := len(in), len(out)
	for len(ev) < w.cfg.evidence && (i > 0 || j > 0) {
		switch {
		case i > 0 && j > 0 && in[i-1] == out[j-1]:
			i--
			j--
			ev = append(ev, in[i])
		case j == 0 || i > 0 && w.before(out[j-1], in[i-1]):
			i--
			ev = append(ev, in[i])
		default:
			j--
			ev = append(ev, out[j])
		}
	}
	slices.Reverse(ev)
	events := len(in) + len(out) - x.loops
	a.Evidence, a.EvidenceDropped = evidenceOf(ev), events-len(ev)
	first, last := in[0].t, in[len(in)-1].t
	if w.before(out[0], in[0]) {
		first = out[0].t
	}
	if w.before(in[len(in)-1], out[len(out)-1]) {
		last = out[len(out)-1].t
	}
	a.Totals = &AlertTotals{Events: events, Amount: x.in.sum.value(), Counterparties: x.in.npeers,
		AmountOut: x.out.sum.value(), Receivers: x.out.npeers, First: microTime(first), Last: microTime(last)}
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
	w.items, w.peers, w.payBytes, w.comps, w.mules, w.idle = 0, 0, 0, 0, 0, 0
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
	if x == nil || len(w.measured(x).held()) == 0 {
		return VertexValue{v, 0}, false
	}
	return VertexValue{v, w.measure(x)}, true
}

// What the window's parts cost (Go's structs, slices and map entries,
// rounded up).
const (
	fanItemBytes   = 152 // an item and its place in the window
	fanListBytes   = 16  // an item's place in a list (room included)
	fanVertexBytes = 216 // a vertex's window and its map entry
)

func (w *fanWindow) bytes() int64 {
	sides := 0
	if w.cfg.in {
		sides++
	}
	if w.cfg.out {
		sides++
	}
	return w.win.Bytes(8) + int64(w.win.Len()+len(w.free))*fanItemBytes + int64(w.items*sides)*fanListBytes + int64(len(w.vs))*fanVertexBytes +
		int64(w.peers)*mapEntryBytes + int64(w.comps)*8 + w.payBytes
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
	for i, it := range ops {
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
		if x.mule {
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
	w.maxPay = like.maxPay
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
		it := &fanItem{t: int64(times[i]), n: w.n, src: srcs[i], dst: dsts[i], amount: amounts[i], seq: seqs[i], ref: refs[i], typ: uint16(typ),
			flags: uint8(flags), eventRef: string(pay[a:b]), props: string(pay[b:c])}
		w.n++
		// In the order they leave, none is late and none leaves (they were
		// all held together).
		if !w.win.Add(it.t, it, func(*fanItem) { left = true }) || left {
			d.Fail("the window's operations do not fit one window (at %d)", i)
			return nil
		}
		if it.has(itemUpsert) {
			w.insert(it)
		}
	}
	for _, x := range w.touched {
		x.touched = false
	}
	w.touched = w.touched[:0]
	for i, v := range above {
		x := w.vs[v]
		if x == nil || x.above || !w.measureAbove(x) || i > 0 && above[i-1] >= v {
			d.Fail("vertex %d listed above the threshold: unknown, twice, or not above it", v)
			return nil
		}
		x.above = true
		w.above[v] = x
	}
	for i, v := range mules {
		x := w.vs[v]
		if x == nil || x.mule || !w.muleHolds(x) || i > 0 && mules[i-1] >= v {
			d.Fail("vertex %d listed as a mule: unknown, twice, or not one", v)
			return nil
		}
		x.mule = true
		w.mules++
	}
	for v, x := range w.vs {
		if !x.above && w.cfg.measure != "amount" && w.measureAbove(x) || !x.mule && w.muleHolds(x) {
			d.Fail("vertex %d is above the threshold or a mule, and not listed so", v)
			return nil
		}
	}
	w.win.SetLate(late)
	return w
}

// maxFloat is the largest finite float64.
const maxFloat = 1.7976931348623157e308
