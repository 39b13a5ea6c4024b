package api

import (
	"context"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/paths"
)

// Local answers the API's reads from a data directory opened read-only,
// without a server: what 'graphtide query --dir' uses. Its Degree,
// Neighbors and Path take the arguments of the Client's methods of the
// same names and give the same responses; top PageRank and components
// are computed on the spot on a fresh view, where a server reads them
// from a registered analytic. It never writes a byte and starts nothing;
// it must not be used after Close.
type Local struct {
	// PathBudget bounds the edges one path search reads (0: the
	// server's default, DefaultPathBudget).
	PathBudget int64

	d  *datadir.Dir
	vm *views.Manager
	q  Reader
}

// OpenLocal opens the data directory dir read-only (beside other
// readers, never beside serve).
func OpenLocal(dir string) (*Local, error) {
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		return nil, err
	}
	vm, err := views.NewManager(d.Store, views.Config{LogCapacity: 1})
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Local{d: d, vm: vm, q: Reader{Views: vm, Dict: d.Keys, Types: d.Types, Times: d.Times, Origin: newOrigin(), Aggregates: true}}, nil
}

// Close releases the views and the data directory.
func (l *Local) Close() error {
	l.vm.Close()
	return l.d.Close()
}

func (l *Local) vertex(v string) (uint64, error) { return ResolveVertex(l.d.Keys)(v) }

// parse reads the options as the server reads its query parameters.
func (o ReadOptions) parse() (engine.Direction, Point, error) {
	dir, err := ParseDir(o.Dir)
	if err != nil {
		return 0, Point{}, err
	}
	at, err := ParsePoint(o.View, AsOf{o.AsOfSeq, o.AsOfTime})
	return dir, at, err
}

// Degree is v's degree; v is an id or a string key.
func (l *Local) Degree(ctx context.Context, v string, o ReadOptions) (DegreeResponse, error) {
	id, err := l.vertex(v)
	if err != nil {
		return DegreeResponse{}, err
	}
	dir, at, err := o.parse()
	if err != nil {
		return DegreeResponse{}, err
	}
	return l.q.Degree(ctx, id, dir, at, o.Types)
}

// Neighbors is one page of v's edges, past the edge pg names (from the
// first when it names none).
func (l *Local) Neighbors(ctx context.Context, v string, o ReadOptions, pg PageOptions) (NeighborsResponse, error) {
	id, err := l.vertex(v)
	if err != nil {
		return NeighborsResponse{}, err
	}
	dir, err := ParseDir(o.Dir)
	if err != nil {
		return NeighborsResponse{}, err
	}
	at, after, err := l.q.neighborsStart(o.View, AsOf{o.AsOfSeq, o.AsOfTime}, pg)
	if err != nil {
		return NeighborsResponse{}, err
	}
	w, err := ParseWindow(o.Window)
	if err != nil {
		return NeighborsResponse{}, err
	}
	limit := pageLimit(pg.Limit)
	return l.q.Neighbors(ctx, id, dir, at, o.Types, after, limit, EventWindow{Window: w, Limit: limit})
}

// pageLimit is a page's limit: 0 takes the server's default
// (Limits.DefaultPage), 1000.
func pageLimit(n int) int {
	if n == 0 {
		return 1000
	}
	return n
}

// Vertex is v's record and whether it exists (v is an id or a string
// key); o.Dir and o.Types are not read.
func (l *Local) Vertex(ctx context.Context, v string, o ReadOptions) (VertexResponse, error) {
	id, err := l.vertex(v)
	if err != nil {
		return VertexResponse{}, err
	}
	_, at, err := o.parse()
	if err != nil {
		return VertexResponse{}, err
	}
	return l.q.Vertex(ctx, id, at)
}

// Edge is the edges from src to dst (ids or string keys); o.Dir is not
// read (a lookup reads out-edges).
func (l *Local) Edge(ctx context.Context, src, dst string, o ReadOptions) (EdgeResponse, error) {
	a, err := l.vertex(src)
	if err != nil {
		return EdgeResponse{}, err
	}
	b, err := l.vertex(dst)
	if err != nil {
		return EdgeResponse{}, err
	}
	_, at, err := o.parse()
	if err != nil {
		return EdgeResponse{}, err
	}
	w, err := ParseWindow(o.Window)
	if err != nil {
		return EdgeResponse{}, err
	}
	return l.q.Edge(ctx, a, b, at, o.Types, EventWindow{Window: w, Limit: pageLimit(o.EventLimit)})
}

// Events is the events of the accumulate edge (src, dst, typ) held one
// by one (within o.Window when given), at most o.EventLimit (0: 1000).
// A data directory knows no retain (configuration): the window lists the
// events it still holds one by one.
func (l *Local) Events(ctx context.Context, src, dst, typ string, o ReadOptions) (EventsResponse, error) {
	a, err := l.vertex(src)
	if err != nil {
		return EventsResponse{}, err
	}
	b, err := l.vertex(dst)
	if err != nil {
		return EventsResponse{}, err
	}
	_, at, err := o.parse()
	if err != nil {
		return EventsResponse{}, err
	}
	w, err := ParseWindow(o.Window)
	if err != nil {
		return EventsResponse{}, err
	}
	return l.q.Events(ctx, a, b, typ, at, EventWindow{Window: w, Limit: pageLimit(o.EventLimit)})
}

// Changes is a page of the out-edges (of types) that differ between seq
// from and seq to, past the change pg names (from the first when it
// names none).
func (l *Local) Changes(ctx context.Context, from, to AsOf, types string, pg PageOptions) (ChangesResponse, error) {
	ends, after, err := l.q.changesStart(from, to, pg)
	if err != nil {
		return ChangesResponse{}, err
	}
	return l.q.Changes(ctx, ends[0], ends[1], types, after, pageLimit(pg.Limit))
}

// Path is a shortest path from one vertex to another (by hops, or by
// weight; maxDepth 0: no bound), as of the seq asOf ("": the newest).
func (l *Local) Path(ctx context.Context, from, to, types string, weighted bool, maxDepth int, asOf AsOf) (PathResponse, error) {
	at, err := ParsePoint("", asOf)
	if err != nil {
		return PathResponse{}, err
	}
	a, err := l.vertex(from)
	if err != nil {
		return PathResponse{}, err
	}
	b, err := l.vertex(to)
	if err != nil {
		return PathResponse{}, err
	}
	budget := l.PathBudget
	if budget == 0 {
		budget = DefaultPathBudget
	}
	return l.q.Path(ctx, a, b, at, types, paths.Options{Weighted: weighted, MaxDepth: maxDepth, Budget: budget})
}

// TopPageRank computes PageRank and returns the k highest vertices.
func (l *Local) TopPageRank(ctx context.Context, k int, damping, tolerance float64, types string) (TopResponse, error) {
	return l.q.TopPageRank(ctx, k, damping, tolerance, types)
}

// Component computes the weakly connected components and returns v's.
func (l *Local) Component(ctx context.Context, v, types string) (VertexResultResponse, error) {
	id, err := l.vertex(v)
	if err != nil {
		return VertexResultResponse{}, err
	}
	return l.q.Component(ctx, id, types)
}
