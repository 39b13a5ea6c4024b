package analytics

import (
	"cmp"
	"container/heap"
	"slices"
	"time"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// Rings in time (ring_search=timed, the fraud monitor's default).
//
// An event is an upsert of the monitor's types as the store applied it
// (views.TopoUpdate.LoggedOp: its own amount and type even where the
// topology replaced it), counting at views.EventMicros. A ring is k events
// e1..ek (2 <= k <= max_cycle) with e_i.dst = e_{i+1}.src, ek.dst =
// e1.src, their sources distinct, t(e1) <= ... <= t(ek), t(ek) - t(e1) <=
// max_span and, with min_ratio r > 0, amount(e_{i+1}) >= r*amount(e_i).
// The event of a ring that arrived last (apply order) completes it, and
// its arrival is when the ring is searched for. Deduplication is per
// account cycle C (the ring's sources as a cycle): after an alert for C
// whose ring's last hop is at time T, a ring over C alerts only if its
// first hop is after T; of several eligible rings over C one event
// completes, the alert takes the least span, then the earliest first hop,
// then the lowest seqs and arrival positions in ring order. An event more
// than max_span + lateness older than the newest event before it is late:
// counted, and in no ring. (The rules are written out for the reference
// in the docs, docs/analytics.md.)
//
// The window holds the events of the last 2*max_span + lateness: an event
// that is not late is at most max_span + lateness behind the newest, and
// every other event of a ring it completes at most max_span behind it. So
// the window holds every event a search needs, and the search is exact
// but for its bounds (search_budget, the pull's limits, and a full window
// pushing its oldest events out early: each counted).

// Bounds of the ring window: it pushes its oldest events out early
// (counted in RingSummary.Dropped) rather than hold more than
// MaxRingEvents events or half of the monitor's pull_memory_mib (the
// pull's searches get the rest: so the monitor's memory beyond its fan-in
// window stays within pull_memory_mib, what the registry's estimate
// counts).
const (
	MaxRingEvents    = 1 << 20
	ringEventBytes   = 160 // one held event, besides its reference and properties
	episodeBytes     = 64  // one remembered episode, besides 8 bytes per vertex
	defaultEvidence  = 32  // Spec.Evidence's default where it is 0
	minEpisodesSweep = 1024
)

// ringEvent is one event the ring window holds.
type ringEvent struct {
	pos      uint64 // arrival number: the events taken in, in apply order, from 1
	seq      uint64 // the batch that applied it
	ref      uint64 // views.Edge.Ref
	src, dst uint64
	t        int64 // when it counts (views.EventMicros), Unix µs
	evTime   int64 // its own event time, Unix µs (0: none)
	amount   float64
	typ      uint16
	eventRef string
	props    string
}

func (e *ringEvent) bytes() int64 { return ringEventBytes + int64(len(e.eventRef)+len(e.props)) }

// before orders events by time, then arrival.
func (e *ringEvent) before(f *ringEvent) bool {
	return e.t < f.t || e.t == f.t && e.pos < f.pos
}

// ringWindow is the fraud monitor's own window of events.
//
// INVARIANT (between calls): held is every event taken in and not late
// whose time is at or after newest - 2*span - lateness and that a full
// window did not push out (dropped counts those); out holds the same
// events by source, each list in (t, pos) order; bytes is their size.
// episodes holds, per account cycle (canonicalKey), the last hop time of
// its last alert, for those an eligible ring may still be compared with
// (at or after newest - 2*span - lateness; older ones may stay until a
// sweep). Not safe for concurrent use.
type ringWindow struct {
	span, lateness int64 // µs
	maxEvents      int
	maxBytes       int64

	held     ringHeap
	out      map[uint64][]*ringEvent
	bytes    int64
	newest   int64 // the greatest event time taken in; valid when any
	any      bool
	next     uint64 // pos of the next event
	late     uint64
	dropped  uint64
	episodes map[string]int64
	sweepAt  int // sweep episodes when they reach this many
}

func newRingWindow(s Spec) *ringWindow {
	return &ringWindow{span: s.MaxSpan.Microseconds(), lateness: s.Lateness.Microseconds(), maxEvents: MaxRingEvents, maxBytes: int64(s.PullMemoryMiB) << 19,
		out: map[uint64][]*ringEvent{}, next: 1, episodes: map[string]int64{}, sweepAt: minEpisodesSweep}
}

// horizon is the time before which no event or episode can matter again.
func (w *ringWindow) horizon() int64 { return w.newest - 2*w.span - w.lateness }

// isLate reports whether an event at t is late.
func (w *ringWindow) isLate(t int64) bool { return w.any && t < w.newest-w.span-w.lateness }

// event makes the ringEvent of edge e (logged as op), with the next
// arrival number.
func (w *ringWindow) event(e views.Edge, op engine.Op) *ringEvent {
	x := &ringEvent{pos: w.next, seq: e.Seq, ref: e.Ref, src: op.Src, dst: op.Dst, t: views.EventMicros(e), evTime: op.EventTime,
		amount: op.Weight, typ: op.Type, eventRef: op.EventRef, props: op.Props}
	w.next++
	return x
}

// add holds x (not late) and lets out what no longer matters, or what a
// full window cannot hold.
func (w *ringWindow) add(x *ringEvent) {
	if !w.any || x.t > w.newest {
		w.newest, w.any = x.t, true
	}
	heap.Push(&w.held, x)
	l := w.out[x.src]
	i, _ := slices.BinarySearchFunc(l, x, func(a, b *ringEvent) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	w.out[x.src] = slices.Insert(l, i, x)
	w.bytes += x.bytes()
	h := w.horizon()
	for len(w.held) > 0 && (w.held[0].t < h || len(w.held) > w.maxEvents || w.bytes > w.maxBytes) {
		if w.held[0].t >= h {
			w.dropped++
		}
		w.remove(heap.Pop(&w.held).(*ringEvent))
	}
	if len(w.episodes) >= w.sweepAt {
		for k, t := range w.episodes {
			if t < h {
				delete(w.episodes, k)
			}
		}
		w.sweepAt = max(minEpisodesSweep, 2*len(w.episodes))
	}
}

// remove takes e, the earliest held event, out of its source's list
// (where it is the first).
func (w *ringWindow) remove(e *ringEvent) {
	l := w.out[e.src]
	if len(l) > 0 && l[0] == e {
		l = l[1:]
	} else if i := slices.Index(l, e); i >= 0 { // cannot be: kept exact all the same
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(w.out, e.src)
	} else {
		w.out[e.src] = l
	}
	w.bytes -= e.bytes()
}

func (w *ringWindow) reset() {
	*w = *newRingWindowLike(w)
}

func newRingWindowLike(w *ringWindow) *ringWindow {
	return &ringWindow{span: w.span, lateness: w.lateness, maxEvents: w.maxEvents, maxBytes: w.maxBytes,
		out: map[uint64][]*ringEvent{}, next: 1, episodes: map[string]int64{}, sweepAt: minEpisodesSweep}
}

// memory is what the window holds.
func (w *ringWindow) memory() int64 {
	return w.bytes + int64(len(w.episodes))*(episodeBytes+64) + int64(len(w.out))*mapEntryBytes
}

// newestOf returns the newest held event from a to b (by arrival) that
// arrived at or before pos; nil when none.
func (w *ringWindow) newestOf(a, b, pos uint64) *ringEvent {
	var best *ringEvent
	for _, e := range w.out[a] {
		if e.dst == b && e.pos <= pos && (best == nil || e.pos > best.pos) {
			best = e
		}
	}
	return best
}

// ringHeap is the held events, earliest (t, pos) first.
type ringHeap []*ringEvent

func (h ringHeap) Len() int           { return len(h) }
func (h ringHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h ringHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ringHeap) Push(x any)        { *h = append(*h, x.(*ringEvent)) }
func (h *ringHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// ring is one ring found: its events e1..ek.
type ring []*ringEvent

func (r ring) span() int64 { return r[len(r)-1].t - r[0].t }

// cmpRings orders two rings over one account cycle: the alert takes the
// least.
func cmpRings(a, b ring) int {
	if c := cmp.Compare(a.span(), b.span()); c != 0 {
		return c
	}
	if c := cmp.Compare(a[0].t, b[0].t); c != 0 {
		return c
	}
	for i := range a {
		if c := cmp.Compare(a[i].seq, b[i].seq); c != 0 {
			return c
		}
	}
	for i := range a {
		if c := cmp.Compare(a[i].pos, b[i].pos); c != 0 {
			return c
		}
	}
	return 0
}

// accounts is the ring's account cycle: its sources in ring order.
func (r ring) accounts() []uint64 {
	ids := make([]uint64, len(r))
	for i, e := range r {
		ids[i] = e.src
	}
	return ids
}

// ringSearch finds the rings one event completes among the window's.
type ringSearch struct {
	w        *ringWindow
	k        int
	minRatio float64
	budget   int
	tick     func() bool // counts one step of work; true: the pull must stop

	x       *ringEvent
	path    []*ringEvent
	spent   int
	stopped bool // budget spent, or the pull's limits
	cut     bool // the pull's limits
	found   func(ring)
}

// bad reports whether the pair (a then b) breaks a ring's order: b's time
// before a's, or b carrying less than min_ratio of a's amount.
func (s *ringSearch) bad(a, b *ringEvent) bool {
	return b.t < a.t || s.minRatio > 0 && b.amount < s.minRatio*a.amount
}

// completed calls found with every ring x completes (x not yet held),
// and reports whether the search was cut short (by the budget: truncated;
// by the pull's limits: cut).
func (s *ringSearch) completed(x *ringEvent) (truncated, cut bool) {
	if x.src == x.dst || s.k < 2 {
		return false, false
	}
	s.x, s.path, s.spent, s.stopped, s.cut = x, append(s.path[:0], x), 0, false, false
	s.extend(x.t, x.t, 0)
	return s.stopped && !s.cut, s.cut
}

// extend grows the path (x first) by one event out of its last event's
// destination: lo and hi are the path's least and greatest times, bad its
// pairs that break the order (a ring has at most one: where it wraps).
func (s *ringSearch) extend(lo, hi int64, bad int) {
	last := s.path[len(s.path)-1]
	from := hi - s.w.span
	if bad == 1 {
		from = max(from, last.t) // a second break: no ring
	}
	to := lo + s.w.span
	l := s.w.out[last.dst]
	i, _ := slices.BinarySearchFunc(l, from, func(e *ringEvent, t int64) int { return cmp.Compare(e.t, t) })
	for ; i < len(l) && l[i].t <= to; i++ {
		e := l[i]
		if s.stopped {
			return
		}
		if s.spent++; s.spent > s.budget {
			s.stopped = true
			return
		}
		if s.tick != nil && s.tick() {
			s.stopped, s.cut = true, true
			return
		}
		nb := bad
		if s.bad(last, e) {
			nb++
		}
		if nb > 1 {
			continue
		}
		if e.dst == s.x.src {
			if s.bad(e, s.x) {
				nb++
			}
			if nb <= 1 {
				s.close(append(s.path, e))
			}
			continue
		}
		if len(s.path)+1 >= s.k || e.dst == e.src || s.onPath(e.dst) {
			continue
		}
		s.path = append(s.path, e)
		s.extend(min(lo, e.t), max(hi, e.t), nb)
		s.path = s.path[:len(s.path)-1]
	}
}

// onPath reports whether v is the source of an event of the path (the
// destination of the last is the next source).
func (s *ringSearch) onPath(v uint64) bool {
	for _, e := range s.path {
		if e.src == v {
			return true
		}
	}
	return false
}

// close reports the rings of the cyclic sequence c (x first): the one
// that starts after its one break, or, with none (all times equal), one
// per rotation.
func (s *ringSearch) close(c []*ringEvent) {
	n := len(c)
	start := -1
	for i := range c {
		if s.bad(c[i], c[(i+1)%n]) {
			start = (i + 1) % n
			break
		}
	}
	rot := func(at int) ring {
		r := make(ring, n)
		for j := range r {
			r[j] = c[(at+j)%n]
		}
		return r
	}
	if start >= 0 {
		s.found(rot(start))
		return
	}
	for at := range n {
		s.found(rot(at))
	}
}

// ringsOf applies the events of one pull to the ring window and, with s
// (timed), searches each for the rings it completes before it is held, as
// long as the pull's limits (s's) allow; it adds to b one alert per
// account cycle per completing event that the deduplication lets through,
// in event order (b is nil without s), and returns how many. posAt, when
// not nil, gets each edge's arrival number (0: not an event). Called with
// rmu held (a full batch is handed over under it: the registry never
// takes rmu).
func (a *fraud) ringsOf(u *views.TopoUpdate, s *topoSearch, posAt []uint64, b *alertBatch) (rings, truncated uint64, cut bool) {
	w := a.rw
	timed := s != nil
	var search *ringSearch
	if timed {
		search = &ringSearch{w: w, k: a.spec.MaxCycle, minRatio: a.spec.MinRatio, budget: a.spec.SearchBudget, tick: s.tick}
	}
	for k, e := range u.Edges {
		op := u.LoggedOp(k)
		if u.Prior[k] == views.Expansion || u.Prior[k] == views.VertexOp || op.Kind != engine.OpUpsert {
			continue
		}
		x := w.event(e, op)
		if posAt != nil {
			posAt[k] = x.pos
		}
		if w.isLate(x.t) {
			w.late++
			continue
		}
		if timed && !cut {
			best := map[string]ring{}
			search.found = func(r ring) {
				key := canonicalKey(r.accounts())
				if last, ok := w.episodes[key]; ok && r[0].t <= last {
					return // within the episode of the last alert over C
				}
				if b, ok := best[key]; !ok || cmpRings(r, b) < 0 {
					if !ok {
						s.charge(int64(cycleBytes + 16*len(r)))
					}
					best[key] = r
				}
			}
			tr, c := search.completed(x)
			if tr {
				truncated++
			}
			cut = c
			found := make([]ring, 0, len(best))
			for _, r := range best {
				found = append(found, r)
			}
			slices.SortFunc(found, func(p, q ring) int {
				if c := cmp.Compare(p[0].t, q[0].t); c != 0 {
					return c
				}
				return cmp.Compare(canonicalKey(p.accounts()), canonicalKey(q.accounts()))
			})
			for _, r := range found {
				w.episodes[canonicalKey(r.accounts())] = r[len(r)-1].t
				if b.add(a.ringAlert(r, e)) {
					b.flush()
				}
				rings++
			}
		}
		w.add(x)
	}
	return rings, truncated, cut
}

// ringAlert is the alert of ring r, completed by the operation by.
func (a *fraud) ringAlert(r ring, by views.Edge) Alert {
	ev := make([]Evidence, len(r))
	t := &AlertTotals{Events: len(r), First: time.UnixMicro(r[0].t).UTC(), Last: time.UnixMicro(r[len(r)-1].t).UTC()}
	for i, e := range r {
		ev[i] = e.evidence()
		t.Amount += e.amount
	}
	ev, dropped := capEvidence(ev, a.spec.Evidence)
	return Alert{Analytic: a.spec.Name, Kind: "cycle", Seq: by.Seq, Vertex: r[0].src, Cycle: r.accounts(), Value: float64(len(r)),
		Ref: by.Ref, EventTime: by.Op.Time(), Evidence: ev, EvidenceDropped: dropped, Totals: t}
}

// evidence is the event as an alert's evidence.
func (e *ringEvent) evidence() Evidence {
	x := Evidence{Seq: e.seq, Src: e.src, Dst: e.dst, Type: e.typ, Amount: e.amount, EventRef: e.eventRef, Props: e.props, OpRef: e.ref}
	if e.evTime > 0 {
		x.EventTime = time.UnixMicro(e.evTime).UTC()
	}
	return x
}

// capEvidence keeps the newest n (Spec.Evidence; 0: the default) of ev
// (oldest first) and returns how many it left out.
func capEvidence(ev []Evidence, n int) ([]Evidence, int) {
	if n <= 0 {
		n = defaultEvidence
	}
	if len(ev) <= n {
		return ev, 0
	}
	return ev[len(ev)-n:], len(ev) - n
}

// anyEvidence is the evidence of a cycle the search without time found
// (ids from the closing edge's source, closed by the event at arrival
// pos): for each hop, the newest event of its edge the window holds from
// before the closing one, else the topology's weight.
func (a *fraud) anyEvidence(g *views.Topo, ids []uint64, pos uint64) ([]Evidence, int, *AlertTotals) {
	ev := make([]Evidence, len(ids))
	t := &AlertTotals{Events: len(ids)}
	for i, v := range ids {
		d := ids[(i+1)%len(ids)]
		var tm int64
		if e := a.rw.newestOf(v, d, pos); e != nil {
			ev[i], tm = e.evidence(), e.t
		} else {
			ev[i] = Evidence{Src: v, Dst: d}
			x, xok := g.IDs.Index(v)
			y, yok := g.IDs.Index(d)
			if xok && yok {
				ev[i].Amount, _ = g.Weight(int32(x), int32(y))
			}
		}
		t.Amount += ev[i].Amount
		if tm != 0 {
			at := time.UnixMicro(tm).UTC()
			if t.First.IsZero() || at.Before(t.First) {
				t.First = at
			}
			if at.After(t.Last) {
				t.Last = at
			}
		}
	}
	ev, dropped := capEvidence(ev, a.spec.Evidence)
	return ev, dropped, t
}

// RingSummary is what a fraud monitor's ring window holds and left out.
type RingSummary struct {
	Events  int    `json:"events"`            // events held
	Late    uint64 `json:"late,omitempty"`    // events too late to be in a ring (more than max_span + lateness behind the newest)
	Dropped uint64 `json:"dropped,omitempty"` // events a full window pushed out early
}

// save writes the window: its counters, its events in (t, pos) order and
// its episodes in key order.
func (w *ringWindow) save(e *checkpoint.Encoder) {
	e.U64(w.next)
	e.U64(w.late)
	e.U64(w.dropped)
	var have uint64
	if w.any {
		have = 1
	}
	e.U64(have)
	e.U64(uint64(w.newest))
	evs := slices.Clone([]*ringEvent(w.held))
	slices.SortFunc(evs, func(a, b *ringEvent) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	n := len(evs)
	pos, seq, ref, src, dst := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	ts, evt, typ := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	amt := make([]float64, n)
	var strs []byte
	lens := make([]uint64, 0, 2*n)
	for i, x := range evs {
		pos[i], seq[i], ref[i], src[i], dst[i] = x.pos, x.seq, x.ref, x.src, x.dst
		ts[i], evt[i], typ[i], amt[i] = uint64(x.t), uint64(x.evTime), uint64(x.typ), x.amount
		strs = append(append(strs, x.eventRef...), x.props...)
		lens = append(lens, uint64(len(x.eventRef)), uint64(len(x.props)))
	}
	for _, v := range [][]uint64{pos, seq, ref, src, dst, ts, evt, typ} {
		e.Uint64s(v)
	}
	e.Float64s(amt)
	e.Uint64s(lens)
	e.Bytes(strs)
	keys := make([]string, 0, len(w.episodes))
	for k := range w.episodes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var kb []byte
	klen, last := make([]uint64, len(keys)), make([]uint64, len(keys))
	for i, k := range keys {
		kb = append(kb, k...)
		klen[i], last[i] = uint64(len(k)), uint64(w.episodes[k])
	}
	e.Uint64s(klen)
	e.Uint64s(last)
	e.Bytes(kb)
}

// loadRingWindow reads what save wrote into a new window like w (its
// settings), checking that it is one such a window can hold; a problem
// is reported through d (nil returned).
func loadRingWindow(d *checkpoint.Decoder, like *ringWindow) *ringWindow {
	w := newRingWindowLike(like)
	w.next, w.late, w.dropped = d.U64(), d.U64(), d.U64()
	have, newest := d.U64(), int64(d.U64())
	var cols [8][]uint64
	for i := range cols {
		cols[i] = d.Uint64s()
	}
	amt, lens, strs := d.Float64s(), d.Uint64s(), d.Bytes()
	klen, last, kb := d.Uint64s(), d.Uint64s(), d.Bytes()
	if d.Err() != nil {
		return nil
	}
	pos, seq, ref, src, dst, ts, evt, typ := cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7]
	n := len(pos)
	if have > 1 || n > w.maxEvents || len(amt) != n || len(lens) != 2*n || slices.ContainsFunc(cols[:], func(c []uint64) bool { return len(c) != n }) {
		d.Fail("a ring window of %d events (at most %d) with %d amounts, %d lengths, or a flag of %d", n, w.maxEvents, len(amt), len(lens), have)
		return nil
	}
	w.any, w.newest = have == 1, newest
	if !w.any && (n > 0 || len(klen) > 0) {
		d.Fail("a ring window with events but no newest time")
		return nil
	}
	seen := map[uint64]bool{}
	off := uint64(0)
	for i := range n {
		r, p := lens[2*i], lens[2*i+1]
		if r > engine.MaxEventRef || p > engine.MaxEdgeProps || off+r+p > uint64(len(strs)) {
			d.Fail("ring event %d: a reference of %d and properties of %d bytes at %d of %d", i, r, p, off, len(strs))
			return nil
		}
		x := &ringEvent{pos: pos[i], seq: seq[i], ref: ref[i], src: src[i], dst: dst[i], t: int64(ts[i]), evTime: int64(evt[i]),
			amount: amt[i], typ: uint16(typ[i]), eventRef: string(strs[off : off+r]), props: string(strs[off+r : off+r+p])}
		off += r + p
		switch {
		case typ[i] > 0xffff || x.pos == 0 || x.pos >= w.next || seen[x.pos]:
			d.Fail("ring event %d: type %d, or position %d twice, 0 or not before %d", i, typ[i], x.pos, w.next)
			return nil
		case x.t < w.horizon() || x.t > w.newest || i > 0 && !w.held[len(w.held)-1].before(x):
			d.Fail("ring event %d at %d: outside the window (%d..%d) or out of order", i, x.t, w.horizon(), w.newest)
			return nil
		}
		seen[x.pos] = true
		w.held = append(w.held, x) // in (t, pos) order: a heap already
		w.out[x.src] = append(w.out[x.src], x)
		w.bytes += x.bytes()
	}
	if off != uint64(len(strs)) || w.bytes > w.maxBytes {
		d.Fail("ring events of %d bytes of strings, %d used; %d bytes held (at most %d)", len(strs), off, w.bytes, w.maxBytes)
		return nil
	}
	if len(klen) != len(last) {
		d.Fail("%d episode keys and %d times", len(klen), len(last))
		return nil
	}
	off = 0
	for i, l := range klen {
		if l%8 != 0 || l < 16 || l > 8*MaxMaxCycle || off+l > uint64(len(kb)) {
			d.Fail("episode %d: a key of %d bytes at %d of %d", i, l, off, len(kb))
			return nil
		}
		w.episodes[string(kb[off:off+l])] = int64(last[i])
		off += l
	}
	if off != uint64(len(kb)) || len(w.episodes) != len(klen) {
		d.Fail("episode keys of %d bytes, %d used, or a key twice", len(kb), off)
		return nil
	}
	w.sweepAt = max(minEpisodesSweep, 2*len(w.episodes))
	return w
}
