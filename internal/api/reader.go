package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
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
// everything ingested so far) or "stale" (flushed data only). Private views
// copy the graph and are not offered to queries.
func ParseView(s string) (views.Kind, error) {
	switch s {
	case "", "fresh":
		return views.Fresh, nil
	case "stale":
		return views.Stale, nil
	}
	return 0, errorf(http.StatusBadRequest, "view must be fresh or stale, got %q", s)
}

// Reader answers the read queries, each on one static view of the store
// that it releases before returning. The server and `graphtide query
// --dir` share it. Dict may be nil.
type Reader struct {
	Views *views.Manager
	Dict  *keydict.Dict
}

// view takes a static view of kind for a read in dir, and checks ctx once
// it has it (taking a view can wait for a snapshot).
func (q Reader) view(ctx context.Context, kind views.Kind, dir engine.Direction) (*views.StaticView, error) {
	if dir == engine.In && !q.Views.Store().InEdges() {
		return nil, errorf(http.StatusBadRequest, "dir=in needs in-edges, which this store does not keep (they are chosen when the store is created: serve or load --in-edges)")
	}
	v, err := q.Views.Static(views.StaticOptions{Kind: kind})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		v.Release()
		return nil, err
	}
	return v, nil
}

// Degree is the number of dir-edges of vertex u in a view of kind.
func (q Reader) Degree(ctx context.Context, u uint64, dir engine.Direction, kind views.Kind) (DegreeResponse, error) {
	v, err := q.view(ctx, kind, dir)
	if err != nil {
		return DegreeResponse{}, err
	}
	defer v.Release()
	d, err := v.Degree(u, dir)
	if err != nil {
		return DegreeResponse{}, err
	}
	return DegreeResponse{Vertex: extID(q.Dict, u), Key: keyOf(q.Dict, u), Dir: dirName(dir), View: kind.String(), Seq: v.Seq(), Degree: d}, nil
}

// Neighbors returns one page of u's dir-neighbors in id order: at most
// limit of those above after (all of them when after is nil), with their
// weights, and NextAfter when more remain.
func (q Reader) Neighbors(ctx context.Context, u uint64, dir engine.Direction, kind views.Kind, after *uint64, limit int) (NeighborsResponse, error) {
	if limit < 1 {
		return NeighborsResponse{}, errorf(http.StatusBadRequest, "limit must be positive, got %d", limit)
	}
	v, err := q.view(ctx, kind, dir)
	if err != nil {
		return NeighborsResponse{}, err
	}
	defer v.Release()
	// One page read, not the whole list: memory follows limit, whatever the
	// degree.
	deg, err := v.Degree(u, dir)
	if err != nil {
		return NeighborsResponse{}, err
	}
	ns, ws, more, err := v.NeighborsPage(u, dir, after, limit, true)
	if err != nil {
		return NeighborsResponse{}, err
	}
	out := NeighborsResponse{Vertex: extID(q.Dict, u), Key: keyOf(q.Dict, u), Dir: dirName(dir), View: kind.String(), Seq: v.Seq(),
		Degree: deg, Neighbors: make([]Neighbor, 0, len(ns))}
	for i, w := range ns {
		out.Neighbors = append(out.Neighbors, Neighbor{ID: extID(q.Dict, w), Key: keyOf(q.Dict, w), Weight: ws[i]})
	}
	if more && len(ns) > 0 {
		last := extID(q.Dict, ns[len(ns)-1])
		out.NextAfter = &last
	}
	return out, nil
}

// Path finds a shortest path from one vertex to another on one fresh view
// (see FindPath).
func (q Reader) Path(ctx context.Context, from, to uint64, o paths.Options) (PathResponse, error) {
	v, err := q.view(ctx, views.Fresh, engine.Out)
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
	v, err := q.view(ctx, views.Fresh, engine.Out)
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
func (q Reader) TopPageRank(ctx context.Context, k int, damping, tolerance float64) (TopResponse, error) {
	a, err := q.compute(ctx, analytics.Spec{Type: "pagerank", Damping: damping, Tolerance: tolerance, MaxIterations: 10000})
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
func (q Reader) Component(ctx context.Context, u uint64) (VertexResultResponse, error) {
	a, err := q.compute(ctx, analytics.Spec{Type: "wcc"})
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
