package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/views/paths"
)

// Error is an error with the HTTP status it answers with: the client's
// fault (4xx) or the server's state (503).
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

func errorf(status int, format string, a ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, a...)}
}

// ParseDir reads a direction: "out" (also the default, "") or "in".
func ParseDir(s string) (engine.Direction, error) {
	switch s {
	case "", "out":
		return engine.Out, nil
	case "in":
		return engine.In, nil
	}
	return 0, errorf(http.StatusBadRequest, "dir must be out or in, got %q", s)
}

func dirName(d engine.Direction) string {
	if d == engine.In {
		return "in"
	}
	return "out"
}

// ParseView reads a view kind for a query: "fresh" (also the default, "":
// everything ingested so far) or "stale" (flushed data only). A private
// view is refused with the reason (ErrPrivateView).
func ParseView(s string) (views.Kind, error) {
	switch s {
	case "", "fresh":
		return views.Fresh, nil
	case "stale":
		return views.Stale, nil
	case "private":
		return 0, ErrPrivateView
	}
	return 0, errorf(http.StatusBadRequest, "view must be fresh or stale, got %q", s)
}

// ErrPrivateView is ParseView's answer to view=private (a 400). A private
// view (GraphOne's) is a copy of the graph that one program owns for a
// long computation, so that it holds back no flush or compaction; a
// request reads for as long as one read and releases its view before it
// answers, so a copy would only cost a whole graph's memory and time per
// request and show what a fresh view shows.
var ErrPrivateView = errorf(http.StatusBadRequest, "view=private is not offered over HTTP: a private view is a copy of the graph that one program owns "+
	"for a long computation, and a request holds its view only while it reads; use view=fresh (everything ingested) or view=stale (flushed data only), "+
	"or embed the Go package github.com/graphtide/graphtide and open one with DB.OpenView (docs/embedding.md)")

// Point is where a read reads: a view kind, and for a fresh view perhaps a
// past sequence number (as_of_seq) or time (as_of_time, which the time
// index turns into the seq that was newest then); both nil: the newest.
type Point struct {
	Kind     views.Kind
	AsOf     *uint64
	AsOfTime *time.Time
}

// AsOf is a past point as a request gives it: a seq or an RFC 3339 time
// (at most one; both "": the newest).
type AsOf struct{ Seq, Time string }

// ParsePoint reads a view kind (ParseView) and a past point as the query
// parameters give them.
func ParsePoint(view string, at AsOf) (Point, error) {
	kind, err := ParseView(view)
	if err != nil || at.Seq == "" && at.Time == "" {
		return Point{Kind: kind}, err
	}
	p := Point{Kind: kind}
	switch {
	case at.Seq != "" && at.Time != "":
		return Point{}, errorf(http.StatusBadRequest, "give as_of_seq or as_of_time, not both")
	case at.Seq != "":
		seq, err := strconv.ParseUint(at.Seq, 10, 64)
		if err != nil {
			return Point{}, errorf(http.StatusBadRequest, "as_of_seq must be a sequence number (an unsigned integer), got %q", at.Seq)
		}
		p.AsOf = &seq
	default:
		t, err := time.Parse(time.RFC3339Nano, at.Time)
		if err != nil {
			return Point{}, errorf(http.StatusBadRequest, "as_of_time must be an RFC 3339 time such as 2026-11-26T10:15:00Z, got %q", at.Time)
		}
		p.AsOfTime = &t
	}
	if kind != views.Fresh {
		return Point{}, errorf(http.StatusBadRequest, "as_of_seq and as_of_time read the store as it was then: they go with view=fresh, not view=%s", kind)
	}
	return p, nil
}

// resolve turns p's time into the seq that was newest then (the time
// index), or says why it cannot.
func (q Reader) resolve(p Point) (Point, error) {
	if p.AsOfTime == nil {
		return p, nil
	}
	if q.Times == nil {
		return p, errorf(http.StatusBadRequest, "as_of_time needs the store's time index (history.idx in the data directory), which serve keeps while it keeps history (--history-retention or --history-seqs); this store has none: read as of a seq instead (as_of_seq)")
	}
	seq, ok := q.Times.SeqAt(*p.AsOfTime)
	if !ok {
		if o, ok := q.Times.Oldest(); ok {
			return p, errorf(http.StatusGone, "as_of_time %s is before the oldest time the index knows, %s",
				p.AsOfTime.UTC().Format(time.RFC3339Nano), o.Time.UTC().Format(time.RFC3339Nano))
		}
		return p, errorf(http.StatusGone, "as_of_time %s: the time index has no sample yet", p.AsOfTime.UTC().Format(time.RFC3339Nano))
	}
	p.AsOf = &seq
	return p, nil
}

// Reader answers the read queries, each on one static view of the store
// that it releases before returning. The server and `graphtide query
// --dir` share it. Dict may be nil.
type Reader struct {
	Views *views.Manager
	Dict  *keydict.Dict
	// Types names the edge types (nil: type numbers and "default" only).
	Types *typedict.Dict
	// Times is the store's time index (nil: none; as_of_time is refused).
	Times *history.Index
	// Origin names the server (or Local) in the cursors it gives: a
	// cursor's pin, and a listing of changes, are honoured only where
	// they were made (cursor.go). The zero Origin honours none.
	Origin Origin
	// Aggregates refuses a window longer than a type's retain, as the
	// store records its types' aggregates (engine.Store.AggregateOf):
	// serve and query --dir set it. Without it, windows list the events
	// still held one by one.
	Aggregates bool
}

// TypeFilter parses a comma-separated list of edge types, names or
// numbers, into a read filter; "" is nil, every type. An unknown name is
// a 400 that lists the known ones.
func (q Reader) TypeFilter(list string) (*engine.TypeSet, error) {
	if list == "" {
		return nil, nil
	}
	ts, err := q.Types.Set(list)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "types: %v", err)
	}
	return &ts, nil
}

// Cursor is the edge a page starts after: the vertex after and the type
// afterType (a name or number; "": the default type 0).
func (q Reader) Cursor(after uint64, afterType string) (*engine.EdgeCursor, error) {
	c := &engine.EdgeCursor{Dst: after}
	if afterType != "" {
		t, err := q.Types.Lookup(afterType)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "after_type: %v", err)
		}
		c.Type = t
	}
	return c, nil
}

// eventTime is an event time (Unix µs) in a response: RFC 3339 in UTC,
// "" for none.
func eventTime(us int64) string {
	if us <= 0 {
		return ""
	}
	return time.UnixMicro(us).UTC().Format(time.RFC3339Nano)
}

// typeName names type t in a response: "" for the default type 0, which
// responses leave out.
func (q Reader) typeName(t uint16) string {
	if t == 0 {
		return ""
	}
	return q.Types.Name(t)
}

// view takes a static view at p for a read in dir of the edges of types (a
// TypeFilter list; "": all), and checks ctx once it has it (taking a view
// can wait for a snapshot). A seq outside the store's history is a 410
// (below the oldest readable one) or a 400 (not applied yet), naming the
// readable range.
func (q Reader) view(ctx context.Context, p Point, dir engine.Direction, types string) (*views.StaticView, error) {
	at := ""
	if p.AsOfTime != nil {
		at = "as_of_time " + p.AsOfTime.UTC().Format(time.RFC3339Nano) + ", "
	}
	p, perr := q.resolve(p)
	if perr != nil {
		return nil, perr
	}
	ts, err := q.TypeFilter(types)
	if err != nil {
		return nil, err
	}
	if dir == engine.In && !q.Views.Store().InEdges() {
		return nil, errorf(http.StatusBadRequest, "dir=in needs in-edges, which this store does not keep: it was created without them (--in-edges=false, or by a version that did not keep them by default), and they are fixed at creation; a new store keeps them")
	}
	v, err := q.Views.Static(views.StaticOptions{Kind: p.Kind, Types: ts, AsOf: p.AsOf})
	var se *engine.SeqError
	if errors.As(err, &se) {
		status := http.StatusBadRequest
		if se.Seq < se.Oldest {
			status = http.StatusGone
		}
		return nil, errorf(status, "%sas_of_seq %d: %s (readable now: %d to %d)", at, se.Seq, se.Msg, se.Oldest, se.Newest)
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		v.Release()
		return nil, err
	}
	return v, nil
}

// Degree is the number of dir-edges of vertex u of the given types (a
// TypeFilter list) in a view of kind.
func (q Reader) Degree(ctx context.Context, u uint64, dir engine.Direction, p Point, types string) (DegreeResponse, error) {
	v, err := q.view(ctx, p, dir, types)
	if err != nil {
		return DegreeResponse{}, err
	}
	defer v.Release()
	d, err := v.Degree(u, dir)
	if err != nil {
		return DegreeResponse{}, err
	}
	return DegreeResponse{Vertex: extID(q.Dict, u), Key: keyOf(q.Dict, u), Dir: dirName(dir), View: p.Kind.String(), Seq: v.Seq(), Degree: d}, nil
}

// Neighbors returns one page of u's dir-edges of the given types (a
// TypeFilter list) in Position order (numbers first by value, then keys
// by bytes; a neighbor's types by name, the default first: the same on
// every replica): at most limit of those past after (all of them when
// after is nil), with their weights and types, and when more remain the
// cursor of the last (NextCursor, and the legacy NextAfter).
func (q Reader) Neighbors(ctx context.Context, u uint64, dir engine.Direction, at Point, types string, after *Position, limit int, w EventWindow) (NeighborsResponse, error) {
	if limit < 1 {
		return NeighborsResponse{}, errorf(http.StatusBadRequest, "limit must be positive, got %d", limit)
	}
	if w.Window > 0 {
		ts, err := q.TypeFilter(types)
		if err != nil {
			return NeighborsResponse{}, err
		}
		if err := q.checkWindow(w, ts); err != nil {
			return NeighborsResponse{}, err
		}
	}
	v, err := q.view(ctx, at, dir, types)
	if err != nil {
		return NeighborsResponse{}, err
	}
	defer v.Release()
	deg, err := v.Degree(u, dir)
	if err != nil {
		return NeighborsResponse{}, err
	}
	page, more, err := q.orderedPage(ctx, v, u, dir, after, limit)
	if err != nil {
		return NeighborsResponse{}, err
	}
	out := NeighborsResponse{Vertex: extID(q.Dict, u), Key: keyOf(q.Dict, u), Dir: dirName(dir), View: at.Kind.String(), Seq: v.Seq(),
		Degree: deg, Neighbors: make([]Neighbor, 0, len(page))}
	others, types2 := make([]uint64, 0, len(page)), make([]uint16, 0, len(page))
	for _, e := range page {
		n := Neighbor{ID: extID(q.Dict, e.dst), Key: keyOf(q.Dict, e.dst), Weight: e.w,
			Type: q.typeName(e.typ), Time: eventTime(e.tm), Ref: e.ref, Props: JSONObject(e.props)}
		if e.count > 0 {
			n.Aggregate = &EdgeAggregate{Count: e.count, Sum: e.w, FirstTime: eventTime(e.first), LastTime: eventTime(e.tm), Ref: e.ref}
		}
		out.Neighbors = append(out.Neighbors, n)
		others, types2 = append(others, e.dst), append(types2, e.typ)
	}
	if err := q.fillWindows(ctx, v, u, dir, out.Neighbors, others, types2, w); err != nil {
		return NeighborsResponse{}, err
	}
	if more && len(page) > 0 {
		last := page[len(page)-1]
		c := cursor{kind: cursorNeighbor, pos: last.pos}
		id := extID(q.Dict, last.dst)
		out.NextAfter = &id
		out.NextAfterType = last.pos.Type
		// The next pages can read this page's view while the store keeps
		// its seq readable (history): the cursor pins it, on this server.
		if at.Kind == views.Fresh {
			if m, err := q.Views.Store().Metrics(); err == nil && m.OldestReadableSeq <= v.Seq() && m.OldestReadableSeq < m.LastSeq {
				seq := v.Seq()
				out.NextAsOfSeq = &seq
				c.pinned, c.origin, c.seq = true, q.Origin, seq
			}
		}
		out.NextCursor = c.encode()
	}
	return out, nil
}

// Edge looks up the edges from src to dst of the given types (a
// TypeFilter list) in a view of kind: a binary search in src's edges in
// each file, not a read of its list.
func (q Reader) Edge(ctx context.Context, src, dst uint64, p Point, types string, w EventWindow) (EdgeResponse, error) {
	if w.Window > 0 {
		ts, err := q.TypeFilter(types)
		if err != nil {
			return EdgeResponse{}, err
		}
		if err := q.checkWindow(w, ts); err != nil {
			return EdgeResponse{}, err
		}
	}
	v, err := q.view(ctx, p, engine.Out, types)
	if err != nil {
		return EdgeResponse{}, err
	}
	defer v.Release()
	c, err := v.Edge(src, dst)
	if err != nil {
		return EdgeResponse{}, err
	}
	out := EdgeResponse{Src: vertexOf(q.Dict, src), Dst: vertexOf(q.Dict, dst), View: p.Kind.String(), Seq: v.Seq(),
		Found: len(c.Types) > 0, Edges: make([]Neighbor, len(c.Types))}
	others := make([]uint64, len(c.Types))
	for i := range c.Types {
		out.Edges[i] = Neighbor{ID: out.Dst.ID, Key: out.Dst.Key, Weight: c.Weights[i], Type: q.typeName(c.Types[i]),
			Time: eventTime(c.Times[i])}
		edgeExt(&out.Edges[i], &c, i)
		others[i] = dst
	}
	if err := q.fillWindows(ctx, v, src, engine.Out, out.Edges, others, c.Types, w); err != nil {
		return EdgeResponse{}, err
	}
	return out, nil
}

// Vertex is u's record and whether u exists, in a view of kind (as of a
// past point when p says so).
func (q Reader) Vertex(ctx context.Context, u uint64, p Point) (VertexResponse, error) {
	v, err := q.view(ctx, p, engine.Out, "")
	if err != nil {
		return VertexResponse{}, err
	}
	defer v.Release()
	rec, ok, err := v.Vertex(u)
	if err != nil {
		return VertexResponse{}, err
	}
	out := VertexResponse{Vertex: vertexOf(q.Dict, u), View: p.Kind.String(), Seq: v.Seq(), Record: ok, Exists: ok,
		Label: rec.Label, Props: rec.Props}
	if !ok {
		if out.Exists, err = v.VertexExists(u); err != nil {
			return VertexResponse{}, err
		}
	}
	return out, nil
}

// Path finds a shortest path from one vertex to another on one fresh view
// (see FindPath).
func (q Reader) Path(ctx context.Context, from, to uint64, at Point, types string, o paths.Options) (PathResponse, error) {
	v, err := q.view(ctx, at, engine.Out, types)
	if err != nil {
		return PathResponse{}, err
	}
	defer v.Release()
	res, err := paths.Find(ctx, v, from, to, o)
	if err != nil {
		return PathResponse{}, err
	}
	out := PathResponse{From: vertexOf(q.Dict, from), To: vertexOf(q.Dict, to), Weighted: o.Weighted,
		MaxDepth: o.MaxDepth, Seq: v.Seq(), Found: res.Found, Path: []Vertex{}, EdgesRead: res.EdgesRead}
	if res.Found {
		out.Length = &res.Length
		for _, p := range res.Path {
			out.Path = append(out.Path, vertexOf(q.Dict, p))
		}
	}
	return out, nil
}

// compute runs an analytic of spec from scratch on the topology of one
// fresh view.
func (q Reader) compute(ctx context.Context, spec analytics.Spec) (analytics.Analytic, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	a, err := analytics.New(spec, 0, nil)
	if err != nil {
		return nil, err
	}
	ta, ok := a.(analytics.TopoAnalytic)
	if !ok {
		return nil, fmt.Errorf("analytic type %s is not computed on a topology", spec.Type)
	}
	v, err := q.view(ctx, Point{Kind: views.Fresh}, engine.Out, spec.Types)
	if err != nil {
		return nil, err
	}
	defer v.Release()
	g, err := views.BuildTopo(ctx, v)
	if err != nil {
		return nil, err
	}
	if err := ta.Recompute(ctx, g); err != nil {
		return nil, err
	}
	return a, nil
}

// TopPageRank computes PageRank from scratch on a fresh view, as the
// pagerank analytic does (damping and tolerance 0 take its defaults), and
// returns the k highest ranks: `graphtide query --dir` uses it where a
// server would read a registered analytic.
func (q Reader) TopPageRank(ctx context.Context, k int, damping, tolerance float64, types string) (TopResponse, error) {
	a, err := q.compute(ctx, analytics.Spec{Type: "pagerank", Damping: damping, Tolerance: tolerance, MaxIterations: 10000, Types: types})
	if err != nil {
		return TopResponse{}, err
	}
	pr, ok := a.(interface {
		Top(int) []analytics.VertexRank
	})
	if !ok {
		return TopResponse{}, errors.New("the pagerank analytic lists no top ranks")
	}
	return TopResponse{Analytic: "pagerank", Ready: true, K: k, Top: keyer{q.Dict}.ranks(pr.Top(k))}, nil
}

// Component computes the weakly connected components from scratch on a
// fresh view, as the wcc analytic does, and returns u's.
func (q Reader) Component(ctx context.Context, u uint64, types string) (VertexResultResponse, error) {
	a, err := q.compute(ctx, analytics.Spec{Type: "wcc", Types: types})
	if err != nil {
		return VertexResultResponse{}, err
	}
	x, ok := a.Vertex(u)
	if !ok {
		return VertexResultResponse{}, fmt.Errorf("wcc has no result for vertex %d", u)
	}
	return VertexResultResponse{Analytic: "wcc", Type: "wcc", Vertex: extID(q.Dict, u), Key: keyOf(q.Dict, u), Seq: a.Seq(),
		Result: keyer{q.Dict}.vertexResult(x)}, nil
}
