package api

import (
	"context"
	"errors"
)

// Querier answers the queries of 'graphtide query' alike from a data
// directory (through a Local) or from a running server (through a
// Client): the same arguments give the same responses. Only the
// analytics differ: a data directory computes them on the spot, a
// server reads a registered analytic.
type Querier struct {
	local  *Local // exactly one of local and client is set
	client *Client
}

// Target says where a Querier reads: a server when Server is set, else
// the data directory Dir.
type Target struct {
	Dir        string
	PathBudget int64 // Dir only: as Local.PathBudget
	Server     string
	Client     ClientOptions
}

// OpenQuerier opens the data directory read-only, or a client of the
// server.
func OpenQuerier(t Target) (*Querier, error) {
	if t.Server != "" {
		c, err := NewClient(t.Server, t.Client)
		if err != nil {
			return nil, err
		}
		return &Querier{client: c}, nil
	}
	l, err := OpenLocal(t.Dir)
	if err != nil {
		return nil, err
	}
	l.PathBudget = t.PathBudget
	return &Querier{local: l}, nil
}

// Close releases the data directory or the client's connections.
func (q *Querier) Close() error {
	if q.local != nil {
		return q.local.Close()
	}
	q.client.Close()
	return nil
}

// Degree is v's degree; v is an id or a string key.
func (q *Querier) Degree(ctx context.Context, v string, o ReadOptions) (DegreeResponse, error) {
	if q.local != nil {
		return q.local.Degree(ctx, v, o)
	}
	return q.client.Degree(ctx, v, o)
}

// Neighbors is one page of v's edges, past the edge pg names.
func (q *Querier) Neighbors(ctx context.Context, v string, o ReadOptions, pg PageOptions) (NeighborsResponse, error) {
	if q.local != nil {
		return q.local.Neighbors(ctx, v, o, pg)
	}
	return q.client.Neighbors(ctx, v, o, pg)
}

// Vertex is v's record and whether it exists (v an id or a string key).
func (q *Querier) Vertex(ctx context.Context, v string, o ReadOptions) (VertexResponse, error) {
	if q.local != nil {
		return q.local.Vertex(ctx, v, o)
	}
	return q.client.Vertex(ctx, v, o)
}

// Edge is the edges from src to dst (ids or string keys).
func (q *Querier) Edge(ctx context.Context, src, dst string, o ReadOptions) (EdgeResponse, error) {
	if q.local != nil {
		return q.local.Edge(ctx, src, dst, o)
	}
	return q.client.Edge(ctx, src, dst, o)
}

// Events is the events of the accumulate edge (src, dst, typ) held one
// by one (within o.Window when given), newest first.
func (q *Querier) Events(ctx context.Context, src, dst, typ string, o ReadOptions) (EventsResponse, error) {
	if q.local != nil {
		return q.local.Events(ctx, src, dst, typ, o)
	}
	return q.client.Events(ctx, src, dst, typ, o)
}

// Changes is a page of the out-edges (of types) that differ between seq
// from and seq to (see Reader.Changes).
func (q *Querier) Changes(ctx context.Context, from, to AsOf, types string, pg PageOptions) (ChangesResponse, error) {
	if q.local != nil {
		return q.local.Changes(ctx, from, to, types, pg)
	}
	return q.client.Changes(ctx, from, to, types, pg)
}

// Path is a shortest path from one vertex to another (by hops, or by
// weight; maxDepth 0: no bound) over the edges of types (a comma-separated
// list; "": every type).
func (q *Querier) Path(ctx context.Context, from, to, types string, weighted bool, maxDepth int, asOf AsOf) (PathResponse, error) {
	if q.local != nil {
		return q.local.Path(ctx, from, to, types, weighted, maxDepth, asOf)
	}
	return q.client.Path(ctx, from, to, types, weighted, maxDepth, asOf)
}

// AnalyticQuery says which analytic a query reads. A server reads the
// registered analytic Name (default: the one named like its type; a
// *NotRegisteredError says which there are), over the edge types it was
// registered with; a data directory ignores Name and computes PageRank
// with Damping and Tolerance, over the edges of Types (a comma-separated
// list; "": every type).
type AnalyticQuery struct {
	Name               string
	Damping, Tolerance float64
	Types              string
}

// errServerTypes refuses Types for a server's registered analytic.
var errServerTypes = errors.New("--types applies to --dir; a server's analytic reads the edge types it was registered with (its spec's types)")

// TopPageRank is the k vertices of highest PageRank.
func (q *Querier) TopPageRank(ctx context.Context, k int, a AnalyticQuery) (TopResponse, error) {
	if q.local != nil {
		return q.local.TopPageRank(ctx, k, a.Damping, a.Tolerance, a.Types)
	}
	if a.Types != "" {
		return TopResponse{}, errServerTypes
	}
	name, err := q.client.Registered(ctx, "pagerank", a.Name)
	if err != nil {
		return TopResponse{}, err
	}
	return q.client.Top(ctx, name, k)
}

// Component is v's weakly connected component (a ComponentResult; see
// ResultAs).
func (q *Querier) Component(ctx context.Context, v string, a AnalyticQuery) (VertexResultResponse, error) {
	if q.local != nil {
		return q.local.Component(ctx, v, a.Types)
	}
	if a.Types != "" {
		return VertexResultResponse{}, errServerTypes
	}
	name, err := q.client.Registered(ctx, "wcc", a.Name)
	if err != nil {
		return VertexResultResponse{}, err
	}
	return q.client.AnalyticVertex(ctx, name, v)
}
