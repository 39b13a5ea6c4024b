package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/views"
)

// Reads of edge aggregates (engine aggregate.go): every edge read returns
// an edge's event reference and properties, and an accumulate edge's
// aggregate (count, sum, first and last event time); a window (window=)
// adds an accumulate edge's events within that duration of event time
// ending at the store's newest event time, and GET
// /v1/edges/{src}/{dst}/events lists them.
//
// What it promises: a window's count and sum cover every event in it
// (read a chunk at a time, so memory follows the chunk and the listing,
// never the window), the listing is capped by the read's limit (in all,
// over a page's edges), and a window longer than an accumulate type's
// retain, whose older events the store may have folded, is refused (400
// naming the retain) where the store's aggregates are known (serve).

// EventWindow is a read's window: Window 0 for none; Limit the most
// events listed in the response, in all.
type EventWindow struct {
	Window time.Duration
	Limit  int
}

// ParseWindow reads window=: "" is none, else a positive duration of at
// most the longest retain.
func ParseWindow(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > decode.MaxRetain {
		return 0, errorf(http.StatusBadRequest, "window must be a positive duration of at most %v (30 days) such as 1h or 90m, got %q", decode.MaxRetain, s)
	}
	return d, nil
}

// eventsChunk is how many events one read of an edge's events takes.
const eventsChunk = 1024

// checkWindow refuses a window longer than the retain of an accumulate
// type of ts (nil: every type), naming it, where the store's aggregates
// are known (Reader.Aggregates).
func (q Reader) checkWindow(w EventWindow, ts *engine.TypeSet) error {
	if w.Window == 0 || !q.Aggregates {
		return nil
	}
	st := q.Views.Store()
	for t := range engine.MaxEdgeTypes {
		if ts != nil && !ts.Has(uint16(t)) {
			continue
		}
		if a := st.AggregateOf(uint16(t)); a.Accumulate && w.Window > a.Retain {
			return errorf(http.StatusBadRequest, "window %v is longer than the retain of type %s (%v): its events older than that are folded into the edges' aggregates; ask for at most %v, or set a longer retain in the mapping's types",
				w.Window, q.typeLabel(uint16(t)), a.Retain, a.Retain)
		}
	}
	return nil
}

// typeLabel names type t in an error: its name, "default" for type 0.
func (q Reader) typeLabel(t uint16) string {
	if t == 0 {
		return "default"
	}
	return q.typeName(t)
}

// windowBase is the end of the windows of a read: the store's newest
// event time (applied, or recorded by its flushes), or, when the store
// knows none (no event applied, none recorded), the newest last event
// time of the edges read (times).
func (q Reader) windowBase(times []int64) int64 {
	if t := q.Views.Store().NewestEventTime(); t > 0 {
		return t
	}
	var base int64
	for _, t := range times {
		base = max(base, t)
	}
	return base
}

// edgeExt fills n's reference, properties and aggregate from column i of
// c (a replace edge has Counts 0; columns absent read as replace).
func edgeExt(n *Neighbor, c *engine.Columns, i int) {
	if c.Refs != nil {
		n.Ref = c.Refs[i]
	}
	if c.Props != nil {
		n.Props = JSONObject(c.Props[i])
	}
	if c.Counts != nil && c.Counts[i] > 0 {
		n.Aggregate = &EdgeAggregate{Count: c.Counts[i], Sum: c.Weights[i], FirstTime: eventTime(c.FirstTimes[i]), LastTime: eventTime(c.Times[i]), Ref: n.Ref}
	}
}

// eventOf is an event in a response.
func eventOf(e engine.Event) EdgeEvent {
	return EdgeEvent{Amount: e.Weight, Time: eventTime(e.Time), Ref: e.EventRef, Props: JSONObject(e.Props), Seq: e.Seq}
}

// eventsSince reads the events of (src, dst, t) in v with time >= since:
// their count and sum, the newest up to *room of them (taken from *room),
// whether more than those exist, and whether older events were folded.
func eventsSince(ctx context.Context, v *views.StaticView, src, dst uint64, t uint16, since int64, room *int) (count uint64, sum float64, list []EdgeEvent, more, folded bool, err error) {
	list = []EdgeEvent{}
	var skip uint64
	for {
		if err := ctx.Err(); err != nil {
			return 0, 0, nil, false, false, err
		}
		evs, next, f, err := v.EventsFrom(src, dst, t, since, skip, eventsChunk)
		if err != nil {
			return 0, 0, nil, false, false, err
		}
		folded = folded || f
		for _, e := range evs {
			count++
			sum += e.Weight
			if *room > 0 {
				list = append(list, eventOf(e))
				*room--
			} else {
				more = true
			}
		}
		if !next || len(evs) == 0 {
			return count, sum, list, more, folded, nil
		}
		skip += uint64(len(evs))
	}
}

// fillWindows gives the accumulate edges of ns (whose other ends and
// types are given, u their vertex in direction dir) their window, the
// events listed taking from w.Limit in order.
func (q Reader) fillWindows(ctx context.Context, v *views.StaticView, u uint64, dir engine.Direction, ns []Neighbor, others []uint64, types []uint16, w EventWindow) error {
	if w.Window == 0 {
		return nil
	}
	times := make([]int64, 0, len(ns))
	for i := range ns {
		if a := ns[i].Aggregate; a != nil {
			if tm, err := time.Parse(time.RFC3339Nano, a.LastTime); err == nil {
				times = append(times, tm.UnixMicro())
			}
		}
	}
	since := max(q.windowBase(times)-w.Window.Microseconds(), 0)
	room := w.Limit
	for i := range ns {
		if ns[i].Aggregate == nil {
			continue
		}
		src, dst := u, others[i]
		if dir == engine.In {
			src, dst = others[i], u
		}
		count, sum, list, more, _, err := eventsSince(ctx, v, src, dst, types[i], since, &room)
		if err != nil {
			return err
		}
		ns[i].Window = &EdgeWindow{Since: eventTimeOrEpoch(since), Count: count, Sum: sum, Events: list, More: more}
	}
	return nil
}

// eventTimeOrEpoch is eventTime, with the epoch for 0 (a window's start
// always shows).
func eventTimeOrEpoch(us int64) string {
	if us <= 0 {
		return time.UnixMicro(0).UTC().Format(time.RFC3339Nano)
	}
	return eventTime(us)
}

// Events lists the events of the accumulate edge (src, dst, typ) held
// one by one (those within w.Window when it is given), newest first, at
// most w.Limit, with the count and sum of all of them.
func (q Reader) Events(ctx context.Context, src, dst uint64, typ string, p Point, w EventWindow) (EventsResponse, error) {
	t := uint16(0)
	if typ != "" {
		ts, err := q.TypeFilter(typ)
		if err != nil {
			return EventsResponse{}, err
		}
		if ts.Len() != 1 {
			return EventsResponse{}, errorf(http.StatusBadRequest, "type names one edge type, got %q", typ)
		}
		for x := range engine.MaxEdgeTypes {
			if ts.Has(uint16(x)) {
				t = uint16(x)
			}
		}
	}
	if w.Limit < 1 {
		return EventsResponse{}, errorf(http.StatusBadRequest, "limit must be positive, got %d", w.Limit)
	}
	v, err := q.view(ctx, p, engine.Out, "")
	if err != nil {
		return EventsResponse{}, err
	}
	defer v.Release()
	// The pair's edges, read once: for the type when none is named, and
	// for the window's base.
	var c engine.Columns
	if typ == "" || w.Window > 0 {
		if c, err = v.Edge(src, dst); err != nil {
			return EventsResponse{}, err
		}
	}
	if typ == "" {
		// No type named: the pair's one edge of events, whatever its type
		// (so that a payment edge needs no type=payment); refused, naming
		// them, when the pair has several.
		if t, err = q.eventType(c, src, dst); err != nil {
			return EventsResponse{}, err
		}
	}
	one := engine.TypesOf(t)
	if err := q.checkWindow(w, &one); err != nil {
		return EventsResponse{}, err
	}
	out := EventsResponse{Src: vertexOf(q.Dict, src), Dst: vertexOf(q.Dict, dst), Type: q.typeName(t), View: p.Kind.String(), Seq: v.Seq(), Events: []EdgeEvent{}}
	var since int64
	if w.Window > 0 {
		var last []int64
		for i, x := range c.Types {
			if x == t {
				last = append(last, c.Times[i])
			}
		}
		since = max(q.windowBase(last)-w.Window.Microseconds(), 0)
		out.Since = eventTimeOrEpoch(since)
	}
	room := w.Limit
	out.Count, out.Sum, out.Events, out.More, out.Folded, err = eventsSince(ctx, v, src, dst, t, since, &room)
	if err != nil {
		return EventsResponse{}, fmt.Errorf("events of %d -> %d: %w", src, dst, err)
	}
	return out, nil
}

// eventType is the type of the one accumulate edge (an edge of events)
// among c, the edges from src to dst: type 0 when there is none (its
// events list is empty), a 400 naming the types when there are several.
func (q Reader) eventType(c engine.Columns, src, dst uint64) (uint16, error) {
	var ts []uint16
	for i, x := range c.Types {
		if i < len(c.Counts) && c.Counts[i] > 0 {
			ts = append(ts, x)
		}
	}
	switch len(ts) {
	case 0:
		return 0, nil
	case 1:
		return ts[0], nil
	}
	names := make([]string, len(ts))
	for i, x := range ts {
		names[i] = q.typeName(x)
	}
	return 0, errorf(http.StatusBadRequest, "%d -> %d has edges of events of several types (%s): name one with type", src, dst, strings.Join(names, ", "))
}
