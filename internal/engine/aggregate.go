package engine

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/graphtide/graphtide/internal/core"
)

// Edge aggregates (issue 42). Each edge type has an aggregate: replace
// (the default: the newest upsert is the edge) or accumulate (each upsert
// is an event that adds to the edge). The engine marks every upsert of an
// accumulate type as an event operand when it hands a batch to the core,
// which stores it as a version of its own at the cost of a replace upsert
// and folds an edge's events on every read: an accumulate edge reads as
// Count events, Weight the sum of their weights, FirstTime the least and
// Time the greatest event time, and the newest event's payload (EventRef,
// Props). A delete or a vertex delete ends the edge as before (an upsert
// after it starts a new sum), and the fold stops at a replace version (a
// type switched from replace starts a new sum; a replace upsert replaces
// the events).
//
// Retain: the events of an accumulate type whose event time is within
// Retain of the store's newest event time stay readable one by one
// (Snapshot.Events); flush and compaction fold older ones into one
// version. Reads of the edge never depend on when that happened.
//
// Aggregates are the store's. SetAggregate (and Options.Aggregates at
// Open) records a type made accumulate, or given another Retain, in the
// store's MANIFEST before it takes effect, and every later Open has the
// recorded aggregates without being told (AggregateOf, Aggregates): a
// program that opens the store without them (compact, query, a store
// opened by another tool) still folds, reads and retains the events as
// the store recorded them. Only ways that cannot lose events are
// allowed: replace -> accumulate (an edge reads as its replace version
// until its next upsert, which starts a sum that does not count the
// replace version: the fold ends at it) and a
// changed Retain; accumulate -> replace is refused with an
// *AggregateConflictError (the next upsert of each edge would replace the
// events it holds). The store's newest event time (retention's
// watermark) is recorded with each flush and compaction of a store with
// an accumulate type, so that a reopened store folds what it folded
// before.

// Aggregate is how upserts of one edge type combine.
type Aggregate struct {
	// Accumulate makes each upsert an event added to its edge (else the
	// newest upsert replaces the edge).
	Accumulate bool
	// Retain (accumulate types only, at least 0) keeps the events of the
	// last Retain of event time readable one by one.
	Retain time.Duration
}

// check reports what is wrong with a for type t.
func (a Aggregate) check(t uint16) error {
	switch {
	case int(t) >= MaxEdgeTypes:
		return fmt.Errorf("%w: edge type %d out of range (max %d)", ErrInvalid, t, MaxEdgeTypes-1)
	case a.Retain < 0:
		return fmt.Errorf("%w: edge type %d: retain must be at least 0, got %v", ErrInvalid, t, a.Retain)
	case a.Retain > 0 && !a.Accumulate:
		return fmt.Errorf("%w: edge type %d: retain applies to an accumulate type only", ErrInvalid, t)
	}
	return nil
}

// aggregates are a store's edge types' aggregates: bit t of accum set for
// an accumulate type, retain[t] its retain in µs. Atomic, so that Apply
// reads them without a lock while SetAggregate changes them.
type aggregates struct {
	accum  [MaxEdgeTypes / 64]atomic.Uint64
	any    atomic.Bool // some type accumulates
	retain [MaxEdgeTypes]atomic.Int64
}

func (g *aggregates) accumulates(t uint32) bool {
	return int(t) < MaxEdgeTypes && g.accum[t/64].Load()>>(t%64)&1 != 0
}

// AggregateConflictError is the refusal of a configuration that would
// make edge type Type, recorded in the store as accumulate, replace. It
// wraps ErrInvalid.
type AggregateConflictError struct {
	Type     uint16
	Recorded Aggregate
}

func (e *AggregateConflictError) Error() string {
	return fmt.Sprintf("edge type %d accumulates in this store (recorded with retain %v) and cannot become replace: the next upsert of each of its edges would replace the events the edge holds; keep it accumulate, or give replace edges another type",
		e.Type, e.Recorded.Retain)
}

func (e *AggregateConflictError) Unwrap() error { return ErrInvalid }

// CheckAggregate reports whether SetAggregate(t, a) would be refused,
// without changing anything: a invalid (ErrInvalid), or t recorded as
// accumulate and a replace (*AggregateConflictError).
func (s *Store) CheckAggregate(t uint16, a Aggregate) error {
	if err := a.check(t); err != nil {
		return err
	}
	if r := s.AggregateOf(t); r.Accumulate && !a.Accumulate {
		return &AggregateConflictError{Type: t, Recorded: r}
	}
	return nil
}

// SetAggregate gives edge type t the aggregate a from now on and records
// it in the store (durably, before it returns) when it differs from what
// the store has: later upserts of t are events when a.Accumulate, and
// retention uses a.Retain from the next flush or compaction on. Making a
// type recorded as accumulate replace is refused (CheckAggregate); a
// replace a for a type never made accumulate records nothing. On a store
// opened read-only, a change is ErrInvalid.
func (s *Store) SetAggregate(t uint16, a Aggregate) error {
	if err := s.CheckAggregate(t, a); err != nil {
		return err
	}
	return s.with("set aggregate", func(c *core.Store) *core.Error {
		if e := c.SetTypeAggregate(uint32(t), a.Accumulate, a.Retain.Microseconds()); e != nil {
			return e
		}
		s.setAggregate(t, a)
		return nil
	})
}

// loadAggregates gives s the aggregates c records (Open).
func (s *Store) loadAggregates(c *core.Store) *core.Error {
	as, e := c.TypeAggregates()
	if e != nil {
		return e
	}
	for _, a := range as {
		s.setAggregate(uint16(a.Type), Aggregate{Accumulate: true, Retain: time.Duration(a.RetainMicros) * time.Microsecond})
	}
	return nil
}

// Aggregates are the store's accumulate types and their aggregates (a
// type not in it is replace).
func (s *Store) Aggregates() map[uint16]Aggregate {
	out := map[uint16]Aggregate{}
	for w := range s.aggs.accum {
		for b := s.aggs.accum[w].Load(); b != 0; b &= b - 1 {
			t := uint16(w*64 + bits.TrailingZeros64(b))
			out[t] = s.AggregateOf(t)
		}
	}
	return out
}

func (s *Store) setAggregate(t uint16, a Aggregate) {
	g := &s.aggs
	w := &g.accum[t/64]
	for {
		old := w.Load()
		nw := old &^ (1 << (t % 64))
		if a.Accumulate {
			nw |= 1 << (t % 64)
		}
		if w.CompareAndSwap(old, nw) {
			break
		}
	}
	g.retain[t].Store(a.Retain.Microseconds())
	if a.Accumulate {
		g.any.Store(true)
	}
}

// AggregateOf is edge type t's aggregate as the store has it (replace,
// retain 0 when never made accumulate).
func (s *Store) AggregateOf(t uint16) Aggregate {
	if int(t) >= MaxEdgeTypes {
		return Aggregate{}
	}
	a := Aggregate{Accumulate: s.aggs.accumulates(uint32(t))}
	if a.Accumulate {
		a.Retain = time.Duration(s.aggs.retain[t].Load()) * time.Microsecond
	}
	return a
}

// NewestEventTime is the greatest event time (Unix µs) of the batches
// applied, since Open or before it as the store's flushes and compactions
// recorded it (a store with an accumulate type records it; 0: none): the
// watermark of retention (events within a type's Retain of it are kept one
// by one).
func (s *Store) NewestEventTime() int64 {
	var t int64
	_ = s.with("newest event time", func(c *core.Store) *core.Error {
		t = c.NewestEventTime()
		return nil
	})
	return t
}

// An edge payload as the core stores it: one byte of the event
// reference's length, the reference, then the property document.
func appendEdgePayload(buf []byte, ref, props string) []byte {
	buf = append(buf, byte(len(ref)))
	buf = append(buf, ref...)
	return append(buf, props...)
}

// decodeEdgePayload splits what appendEdgePayload wrote (empty: none).
func decodeEdgePayload(p []byte) (ref, props string) {
	if len(p) == 0 {
		return "", ""
	}
	n := int(p[0])
	if 1+n > len(p) {
		return "", "" // not the engine's: never written so
	}
	return string(p[1 : 1+n]), string(p[1+n:])
}

// coreOps is the batch's ops as the core takes them (with the vertex
// records' cells in their places), upserts of accumulate types marked as
// operands and payloads in *pay (reset first). scratch is reused for the
// copy when the ops need marking; b.ops themselves are never changed.
func (b *Batch) coreOps(g *aggregates, scratch []core.Op, pay *[]byte) []core.Op {
	*pay = (*pay)[:0]
	marks := len(b.pays) > 0 || g.any.Load()
	var ops []core.Op
	switch {
	case !marks && len(b.vrecs) == 0:
		return b.ops
	case !marks:
		return b.vertexOps()
	}
	scratch = append(scratch[:0], b.ops...)
	ops = scratch
	for _, p := range b.pays {
		if p.ref == "" && p.props == "" && p.sourceID == 0 {
			continue
		}
		o := &ops[p.at]
		o.PayloadOff = uint64(len(*pay))
		if p.sourceID != 0 {
			// The source position first (core.OpSource), then the props, if
			// any, as appendEdgePayload writes them (no reference text).
			o.Flags |= core.OpSource
			*pay = appendSourcePos(*pay, p.sourceID, p.position)
			if p.props != "" {
				*pay = appendEdgePayload(*pay, "", p.props)
			}
		} else {
			*pay = appendEdgePayload(*pay, p.ref, p.props)
		}
		o.PayloadLen = uint32(uint64(len(*pay)) - o.PayloadOff)
	}
	if g.any.Load() {
		for i := range ops {
			if ops[i].Kind == core.OpUpsert && g.accumulates(ops[i].Type) {
				ops[i].Flags |= core.OpAccumulate
			}
		}
	}
	if len(b.vrecs) == 0 {
		return ops
	}
	out := make([]core.Op, 0, len(ops)+len(b.vrecs)*4)
	b.InOrder(func(i int) { out = append(out, ops[i]) },
		func(k int) { out = appendCells(out, b.vrecs[k].v, b.vrecs[k].payload) })
	return out
}

// fillExt fills c's aggregate columns from the core's extras x, whose
// payloads lie in pay (a source position rendered by s).
func (s *Store) fillExt(c *Columns, x []core.EdgeExt, pay []byte) error {
	for i := range x {
		c.Counts[i] = x[i].Count
		c.FirstTimes[i] = x[i].FirstTime
		ref, props, err := s.decodeExt(&x[i], pay)
		if err != nil {
			return err
		}
		c.Refs[i], c.Props[i] = ref, props
	}
	return nil
}

// decodeExt is the event reference and props of the core's extras x, its
// payload in pay: the reference text, or its source position rendered.
func (s *Store) decodeExt(x *core.EdgeExt, pay []byte) (ref, props string, err error) {
	ref, props = decodeEdgePayload(pay[x.PayloadOff : x.PayloadOff+uint64(x.PayloadLen)])
	if x.Source != 0 && ref == "" {
		ref, err = s.renderRef(x.Source, x.Position)
	}
	return ref, props, err
}

// NeighborsPageExt is NeighborsPage with every column: each edge's weight
// (an accumulate edge's sum), type, event time and aggregate (Counts,
// FirstTimes, Refs, Props; see Columns). Its memory is bounded by limit
// and the payloads of the edges returned.
func (sn *Snapshot) NeighborsPageExt(v uint64, dir Direction, after *EdgeCursor, limit int) (Page, error) {
	if err := edgeDir(dir); err != nil {
		return Page{}, err
	}
	if limit < 1 {
		return Page{}, fmt.Errorf("%w: page limit must be positive, got %d", ErrInvalid, limit)
	}
	size := min(limit, pageStart)
	p := Page{Dsts: make([]uint64, size), Columns: Columns{Weights: make([]float64, size), Types: make([]uint16, size),
		Times: make([]int64, size), Counts: make([]uint64, size), FirstTimes: make([]int64, size),
		Refs: make([]string, size), Props: make([]string, size)}}
	x := make([]core.EdgeExt, size)
	pay := make([]byte, 4<<10)
	var a EdgeCursor
	if after != nil {
		a = *after
	}
	hasAfter, got := after != nil, 0
	err := sn.read(func(c *core.Snapshot) error {
		for {
			n, pl, more, e := c.NeighborsAfterExt(v, uint32(dir), sn.types, a.Dst, a.Type, hasAfter, p.Dsts[got:],
				p.Weights[got:], p.Types[got:], p.Times[got:], x[got:], pay)
			if e != nil && e.Code == core.CodeBuffer && pl > len(pay) {
				pay = make([]byte, pl) // one edge's payload is longer than the buffer
				continue
			}
			if e != nil {
				return fmt.Errorf("neighbors of %d: %w", v, fromCore(e))
			}
			// The payloads are in pay for this call only: decode them now.
			sub := p.Columns
			sub.Counts, sub.FirstTimes, sub.Refs, sub.Props = p.Counts[got:], p.FirstTimes[got:], p.Refs[got:], p.Props[got:]
			if err := sn.store.fillExt(&sub, x[got:got+n], pay); err != nil {
				return fmt.Errorf("neighbors of %d: %w", v, err)
			}
			got += n
			p.More = more
			if !more || got == limit {
				return nil
			}
			if n == 0 {
				return fmt.Errorf("neighbors of %d: no progress reading a page (a bug)", v)
			}
			a, hasAfter = EdgeCursor{Dst: p.Dsts[got-1], Type: p.Types[got-1]}, true
			if got < len(p.Dsts) {
				continue // the payload buffer filled first: read on into the room left
			}
			size = min(limit, 2*size)
			p.Dsts = grow(p.Dsts, size)
			p.Weights, p.Types, p.Times = grow(p.Weights, size), grow(p.Types, size), grow(p.Times, size)
			p.Counts, p.FirstTimes = grow(p.Counts, size), grow(p.FirstTimes, size)
			p.Refs, p.Props = grow(p.Refs, size), grow(p.Props, size)
			x = grow(x, size)
		}
	})
	if err != nil {
		return Page{}, err
	}
	p.Dsts = p.Dsts[:got]
	p.Trim(got)
	return p, nil
}

// Event is one event of an accumulate edge (Snapshot.Events).
type Event struct {
	Seq      uint64  // the sequence number of the batch that applied it
	Weight   float64 // its weight (an amount)
	Time     int64   // its event time, Unix µs (0: none)
	EventRef string  // its event reference ("": none)
	Props    string  // its property document's JSON ("": none)
}

// Events lists the events of the accumulate edge (src, dst, t) visible in
// the snapshot whose event time is at least since (Unix µs), newest first
// (by Seq; the events of one batch in reverse order of addition), at most
// limit of them (limit < 1: ErrInvalid). folded reports that the edge also
// holds events retention folded (older than its type's Retain, no longer
// listed one by one). A replace edge, or none, has no events.
func (sn *Snapshot) Events(src, dst uint64, t uint16, since int64, limit int) (evs []Event, folded bool, err error) {
	if limit < 1 {
		return nil, false, fmt.Errorf("%w: events limit must be positive, got %d", ErrInvalid, limit)
	}
	if int(t) >= MaxEdgeTypes {
		return nil, false, fmt.Errorf("%w: edge type %d out of range (max %d)", ErrInvalid, t, MaxEdgeTypes-1)
	}
	size := min(limit, pageStart)
	seqs, w, tm, x := make([]uint64, size), make([]float64, size), make([]int64, size), make([]core.EdgeExt, size)
	pay := make([]byte, 4<<10)
	err = sn.read(func(c *core.Snapshot) error {
		for {
			n, pl, more, f, e := c.EdgeEvents(src, dst, uint32(t), since, uint64(len(evs)), seqs, w, tm, x, pay)
			if e != nil && e.Code == core.CodeBuffer && pl > len(pay) {
				pay = make([]byte, pl)
				continue
			}
			if e != nil {
				return fmt.Errorf("events of %d -> %d: %w", src, dst, fromCore(e))
			}
			folded = f
			for i := 0; i < n && len(evs) < limit; i++ {
				ref, props, err := sn.store.decodeExt(&x[i], pay)
				if err != nil {
					return fmt.Errorf("events of %d -> %d: %w", src, dst, err)
				}
				evs = append(evs, Event{Seq: seqs[i], Weight: w[i], Time: tm[i], EventRef: ref, Props: props})
			}
			if !more || len(evs) >= limit {
				return nil
			}
			if n == 0 {
				return fmt.Errorf("events of %d -> %d: no progress reading a page (a bug)", src, dst)
			}
			if k := min(limit-len(evs), 2*len(seqs)); k > len(seqs) {
				seqs, w, tm, x = make([]uint64, k), make([]float64, k), make([]int64, k), make([]core.EdgeExt, k)
			}
		}
	})
	if err != nil {
		return nil, false, err
	}
	return evs, folded, nil
}
