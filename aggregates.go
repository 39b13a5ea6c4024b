package graphtide

import (
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

// Edge aggregates. Each edge type has an aggregate: replace (the default:
// the newest insert is the edge) or accumulate (each insert is an event
// that adds to the edge: a payment stream's "how much and how often did A
// pay B"). An accumulate edge reads as the count of its events, Weight
// the sum of their weights, FirstTime and LastTime the least and greatest
// event time, and its newest event's reference and properties. A delete
// ends the edge; an insert after it starts a new sum. The events of the
// last Retain of event time stay readable one by one (Snapshot.Events);
// flush and compaction fold older ones into the edge's aggregate.
//
// A type's aggregate is the data directory's: SetAggregate (or
// Options.Aggregates) records it, and every later Open, the graphtide
// commands included, has it without being told. A type may go from
// replace to accumulate (an edge's next insert starts its sum, not
// counting the value it held as a replace edge) and
// change its Retain; an accumulate type never becomes replace again (its
// next inserts would replace the events its edges hold): give such edges
// a new type instead.

// Aggregate is how the inserts of one edge type combine.
type Aggregate struct {
	// Accumulate makes each insert an event added to its edge (else the
	// newest insert replaces the edge).
	Accumulate bool
	// Retain (accumulate only, at least 0) keeps the events of the last
	// Retain of event time readable one by one.
	Retain time.Duration
}

// SetAggregate gives edge type t (DB.TypeID) its aggregate from the next
// Apply on, and records it in the data directory (durably, before it
// returns), so every later Open has it. An invalid one (a type out of
// range, a negative Retain, Retain on a replace type) is an error, and so
// is making replace a type recorded as accumulate (ErrInvalid both).
func (db *DB) SetAggregate(t uint16, a Aggregate) error {
	return db.err(db.dir.Store.SetAggregate(t, engine.Aggregate{Accumulate: a.Accumulate, Retain: a.Retain}))
}

// NewestEventTime is the greatest event time applied (the zero time when
// none), since Open or before it as the data directory recorded it (one
// with an accumulate type records it with each flush): windows of events
// end there ("the last hour" is the events since NewestEventTime minus an
// hour).
func (db *DB) NewestEventTime() time.Time {
	if us := db.dir.Store.NewestEventTime(); us > 0 {
		return time.UnixMicro(us).UTC()
	}
	return time.Time{}
}

// SetPayload gives the operation added last, an insert, an event
// reference (at most MaxEventRef bytes of UTF-8; "" for none) and a
// property document (a JSON object of at most MaxEdgeProps bytes; nil
// for none), which reads return with the edge (Neighbor.Ref and Props:
// an accumulate edge's newest event's) and its events (Event); Server.Write
// carries them. One over its limit, or on a delete, makes Apply fail with
// nothing applied.
func (b *Batch) SetPayload(ref string, props []byte) { b.b.SetPayload(ref, props) }

// The limits of an edge payload (the store's: TestEdgePayloadLimitsAreTheStores).
const (
	MaxEventRef  = 255     // bytes of UTF-8 of an event reference
	MaxEdgeProps = 4 << 10 // bytes of a property document's JSON
)

// Event is one event of an accumulate edge (Snapshot.Events).
type Event struct {
	// Seq is the sequence number of the batch that applied it.
	Seq uint64
	// Weight is its weight (the amount).
	Weight float64
	// Time is its event time; zero when it had none.
	Time time.Time
	// Ref is its event reference ("": none).
	Ref string
	// Props is its property document's JSON text (an object); "" when
	// none.
	Props string
}

// eventOf is an engine event in the package's terms.
func eventOf(e engine.Event) Event {
	ev := Event{Seq: e.Seq, Weight: e.Weight, Ref: e.EventRef, Props: e.Props}
	if e.Time > 0 {
		ev.Time = time.UnixMicro(e.Time).UTC()
	}
	return ev
}

// neighborOf is column i of c, whose edge goes to (or comes from) id.
func neighborOf(id uint64, c *engine.Columns, i int) Neighbor {
	n := Neighbor{ID: id, Weight: c.Weights[i], Type: c.Types[i], Sum: c.Weights[i]}
	if t := c.Times[i]; t > 0 {
		n.Time = time.UnixMicro(t).UTC()
		n.LastTime = n.Time
	}
	if c.Counts != nil {
		n.Count = c.Counts[i]
		if t := c.FirstTimes[i]; t > 0 {
			n.FirstTime = time.UnixMicro(t).UTC()
		}
	}
	if n.Count == 0 { // a replace edge: no aggregate
		n.Sum, n.LastTime = 0, time.Time{}
	}
	if c.Refs != nil {
		n.Ref, n.Props = c.Refs[i], c.Props[i]
	}
	return n
}

// Events lists the events of the accumulate edge (src, dst, t) held one
// by one with event time at or after since (the zero time: all of them),
// newest first, at most limit (at least 1); folded says the edge also
// holds older events, folded into its aggregate. A replace edge, or none,
// has no events.
func (s *Snapshot) Events(src, dst uint64, t uint16, since time.Time, limit int) ([]Event, bool, error) {
	evs, folded, err := s.sn.Events(src, dst, t, sinceMicros(since), limit)
	if err != nil {
		return nil, false, publicErr(err, namer{})
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = eventOf(e)
	}
	return out, folded, nil
}

// sinceMicros is a window's start in Unix µs (0 for the zero time).
func sinceMicros(t time.Time) int64 {
	if t.IsZero() || t.Before(time.Unix(0, 0)) {
		return 0
	}
	return t.UnixMicro()
}

// Edges returns the edges from src to dst the view holds, one per edge
// type that links them, the larger type first, as Snapshot.Edges does.
func (v *View) Edges(src, dst uint64) ([]Neighbor, error) {
	c, err := v.v.Edge(src, dst)
	if err != nil {
		return nil, publicErr(err, namer{})
	}
	out := make([]Neighbor, len(c.Types))
	for i := range out {
		out[i] = neighborOf(dst, &c, i)
	}
	return out, nil
}

// Events lists the events of the accumulate edge (src, dst, t), as
// Snapshot.Events does (a Private view holds none).
func (v *View) Events(src, dst uint64, t uint16, since time.Time, limit int) ([]Event, bool, error) {
	if limit < 1 {
		return nil, false, publicErr(engine.ErrInvalid, namer{})
	}
	var out []Event
	var folded bool
	for skip := uint64(0); len(out) < limit; {
		evs, more, f, err := v.v.EventsFrom(src, dst, t, sinceMicros(since), skip, limit-len(out))
		if err != nil {
			return nil, false, publicErr(err, namer{})
		}
		folded = folded || f
		for _, e := range evs {
			out = append(out, eventOf(e))
		}
		if !more || len(evs) == 0 {
			break
		}
		skip += uint64(len(evs))
	}
	return out, folded, nil
}
