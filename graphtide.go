// Package graphtide is graphtide embedded in a Go program: a streaming graph
// store (an LSM-tree of CSR files) with snapshots, static views (fresh,
// stale and private: OpenView) and stream views (Stream, StatefulStream),
// the built-in analytics (bfs, wcc, pagerank, sssp, and the degree, fan-in,
// fan-out and fraud monitors) and analytics of your own, kept up to date
// as batches are applied. `graphtide serve` is the same store fed from
// Kafka; this package is for a program that applies batches itself.
//
// What it promises:
//
//   - A batch is atomic: a snapshot or view sees all of it or none of it.
//     Apply returns the batch's sequence number; a snapshot taken after
//     Apply returns sees it.
//   - Durability: an applied batch is durable once Flush or Close returns
//     (the store also flushes by itself as its write buffers fill); a
//     crash loses what was applied after the last flush. (serve is
//     durable through Kafka: it replays what a crash lost. A program that
//     writes through a running serve, Dial and Server.Write, gets that
//     durability, with preconditions and idempotency keys.)
//   - Vertex ids are uint64 below 2^62; string keys get ids from 2^62 up
//     through the data directory's persistent key dictionary (VertexID),
//     the same dictionary serve and load use, so a directory can be shared
//     with them (one process at a time: the directory is locked).
//   - Analytics follow every batch applied after they are registered, on
//     their own goroutines; Result says which sequence number a result is
//     at. A user-defined Analytic is called by one goroutine at a time.
//
// The implementation lives under internal/; this package is its stable
// surface.
package graphtide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Options of Open. The zero value is fine.
type Options struct {
	// InEdges asks a new store to keep in-edges, which a new store does
	// by default.
	//
	// Deprecated: new stores keep in-edges unless NoInEdges is set.
	InEdges bool
	// NoInEdges makes a new store keep out-edges only. A store keeps
	// in-edges by default: in-degrees and in-neighbors (who points at a
	// vertex), and repairs instead of recomputes in the analytics when
	// edges are deleted; they cost about twice the bytes on disk and a
	// slower ingest (docs/configuration.md). Fixed when the store is
	// created: an existing store keeps what it was created with, whatever
	// NoInEdges says (DB.InEdges tells).
	NoInEdges bool
	// MemGraphBytes is the size of one write buffer (two alternate);
	// 0: 64 MiB.
	MemGraphBytes int64
	// ViewLogCapacity is how many of the newest operations stream views
	// and analytics can catch up on (64 bytes each); 0: 1<<20.
	ViewLogCapacity int
	// HistorySeqs keeps the store readable as of each of the last this
	// many sequence numbers (DB.SnapshotAt): every version such a read
	// needs stays on disk until then. 0: only the newest.
	HistorySeqs uint64
	// Aggregates gives edge types (DB.TypeID numbers) their aggregate
	// (see Aggregate), as DB.SetAggregate does: the store records them,
	// and a type not in it keeps what the store recorded (replace if
	// nothing). One that would make a recorded accumulate type replace
	// fails the Open (ErrInvalid), recording nothing.
	Aggregates map[uint16]Aggregate
}

// DB is an open data directory. Its methods are safe for concurrent use.
type DB struct {
	dir    *datadir.Dir
	vm     *views.Manager
	reg    *analytics.Registry
	closed atomic.Bool
}

// ErrClosed is returned by Apply, Wait and Close after Close, and by a
// Stream's Next after its Close.
var ErrClosed = errors.New("graphtide: closed")

// ErrStreamLost is returned (wrapped) by Stream.Next when the stream fell
// further behind than Options.ViewLogCapacity: it lost operations and goes
// on from the newest.
var ErrStreamLost = errors.New("graphtide: the stream fell behind and lost operations")

// Open opens the data directory dir, creating it when it does not exist.
func Open(dir string, o *Options) (*DB, error) {
	if o == nil {
		o = &Options{}
	}
	if o.InEdges && o.NoInEdges {
		return nil, errors.New("graphtide: Options.InEdges and NoInEdges contradict each other: give one (a new store keeps in-edges unless NoInEdges)")
	}
	// A new store as asked; an existing one keeps its setting.
	var aggs map[uint16]engine.Aggregate
	for t, a := range o.Aggregates {
		if aggs == nil {
			aggs = map[uint16]engine.Aggregate{}
		}
		aggs[t] = engine.Aggregate{Accumulate: a.Accumulate, Retain: a.Retain}
	}
	d, err := datadir.Open(dir, datadir.Options{Store: engine.Options{MemGraphBytes: o.MemGraphBytes, InEdges: !o.NoInEdges,
		KeepHistory: o.HistorySeqs > 0, HistorySeqs: o.HistorySeqs, Aggregates: aggs}, Create: true})
	if err != nil {
		return nil, publicErr(err, namer{})
	}
	vm, err := views.NewManager(d.Store, views.Config{LogCapacity: o.ViewLogCapacity})
	if err != nil {
		d.Close()
		return nil, publicErr(err, namer{})
	}
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Resolve: api.ResolveRoot(d.Keys), Types: typedict.Resolver(d.Types),
		Names: d.Keys.Name})
	return &DB{dir: d, vm: vm, reg: reg}, nil
}

// Close stops the analytics, flushes the store (everything applied is
// durable when it returns nil) and closes it.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return ErrClosed
	}
	db.reg.Close()
	db.vm.Close()
	ferr := db.dir.Store.Flush()
	return db.err(errors.Join(ferr, db.dir.Close()))
}

// InEdges reports whether the store keeps in-edges.
func (db *DB) InEdges() bool { return db.dir.Store.InEdges() }

// VertexID returns the id of the string key, giving it the next free id
// when it is new (durably, before any batch that uses it is applied).
func (db *DB) VertexID(key string) (uint64, error) {
	id, err := db.dir.Keys.ID(key)
	return id, db.err(err)
}

// LookupKey returns the id of a key that has one.
func (db *DB) LookupKey(key string) (uint64, bool) { return db.dir.Keys.Lookup(key) }

// TypeID is the number of the edge type named name, naming it (durably)
// when new; "default" is type 0.
func (db *DB) TypeID(name string) (uint16, error) {
	t, err := db.dir.Types.ID(name)
	return t, db.err(err)
}

// TypeName is the name of edge type t ("default" for 0; the number as text
// for a type never named).
func (db *DB) TypeName(t uint16) string { return db.dir.Types.Name(t) }

// Key returns the string key of id, when id belongs to one.
func (db *DB) Key(id uint64) (string, bool) { return db.dir.Keys.Key(id) }

// Batch is a set of operations applied atomically, in order. The zero
// value is an empty batch.
type Batch struct{ b engine.Batch }

// Insert inserts the edge (src, dst), or sets its weight.
func (b *Batch) Insert(src, dst uint64, weight float64) { b.b.InsertWeighted(src, dst, weight) }

// Delete deletes the edge (src, dst) (nothing when there is none).
func (b *Batch) Delete(src, dst uint64) { b.b.DeleteEdge(src, dst) }

// DeleteVertex deletes v's out- and in-edges and its record.
func (b *Batch) DeleteVertex(v uint64) { b.b.DeleteVertex(v) }

// PutVertex sets v's record: a label (at most MaxVertexLabel bytes of
// UTF-8; may be empty) and a property document (a JSON object of at most
// MaxVertexProps bytes; nil for none), replacing the one it had. v then
// exists with or without edges (Snapshot.Vertex, Snapshot.VertexExists).
// A label or document over its limit, or props that are not a JSON
// object, makes Apply fail with nothing applied.
func (b *Batch) PutVertex(v uint64, label string, props []byte) { b.b.PutVertex(v, label, props) }

// The limits of a vertex record (the store's: TestVertexLimitsAreTheStores).
const (
	MaxVertexLabel = 255     // bytes of UTF-8 of a label
	MaxVertexProps = 4 << 10 // bytes of a property document's JSON
)

// Vertex is a vertex record (Batch.PutVertex, Snapshot.Vertex).
type Vertex struct {
	// Label is the vertex's label (may be empty).
	Label string
	// Props is its property document, a JSON object; nil when it has none.
	Props json.RawMessage
}

// SetType gives the operation added last (an insert or delete) the edge
// type t, a number from DB.TypeID or 0 (the default, the type of an edge
// given none): (src, dst, type) is an edge's identity, so two edges of
// different types may join the same vertices.
func (b *Batch) SetType(t uint16) { b.b.SetType(t) }

// SetEventTime gives the operation added last the time t, when what it
// records happened: windows of monitors run on it (see docs/analytics.md,
// "Windows in event time"), and an insert's or delete's is kept with its
// edge (Neighbor.Time). Times before 1970 are ignored.
func (b *Batch) SetEventTime(t time.Time) { b.b.SetEventTime(t.UnixMicro()) }

// Len is the number of operations, vertex records included.
func (b *Batch) Len() int { return b.b.Len() + b.b.Vertices() }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() { b.b.Reset() }

// Apply applies b atomically and returns its sequence number. Ids of keys
// new since the last Apply are made durable first. An empty batch applies
// nothing and returns the newest sequence number.
func (db *DB) Apply(b *Batch) (uint64, error) {
	if db.closed.Load() {
		return 0, ErrClosed
	}
	if b.b.Empty() {
		m, err := db.dir.Store.Metrics()
		return m.LastSeq, db.err(err)
	}
	if err := db.dir.Keys.Sync(); err != nil {
		return 0, db.err(err)
	}
	seq, err := db.dir.Store.Apply(&b.b)
	return seq, db.err(err)
}

// Condition is a precondition of ApplyIf; make one with EdgeExists,
// EdgeAbsent, WeightIs, WeightBelow, VertexExists or DegreeAtMost (and
// OfType for an edge of another type than the default).
type Condition struct{ c engine.Condition }

// EdgeExists holds when the edge from src to dst is there.
func EdgeExists(src, dst uint64) Condition {
	return Condition{engine.Condition{Kind: engine.CondEdgeExists, Src: src, Dst: dst}}
}

// EdgeAbsent holds when it is not.
func EdgeAbsent(src, dst uint64) Condition {
	return Condition{engine.Condition{Kind: engine.CondEdgeAbsent, Src: src, Dst: dst}}
}

// WeightIs holds when the edge is there with weight w.
func WeightIs(src, dst uint64, w float64) Condition {
	return Condition{engine.Condition{Kind: engine.CondWeightEquals, Src: src, Dst: dst, Value: w}}
}

// WeightBelow holds when the edge is there with a weight below w.
func WeightBelow(src, dst uint64, w float64) Condition {
	return Condition{engine.Condition{Kind: engine.CondWeightBelow, Src: src, Dst: dst, Value: w}}
}

// VertexExists holds when v has an edge (out, or in when the store keeps
// in-edges).
func VertexExists(v uint64) Condition {
	return Condition{engine.Condition{Kind: engine.CondVertexExists, Src: v}}
}

// DegreeAtMost holds when v has at most n out-edges.
func DegreeAtMost(v uint64, n int) Condition {
	return Condition{engine.Condition{Kind: engine.CondDegreeAtMost, Src: v, Value: float64(n)}}
}

// OfType is c about the edge of type t (DB.TypeID) instead of the default
// type.
func (c Condition) OfType(t uint16) Condition {
	c.c.Type = t
	return c
}

// ApplyIf applies b atomically if every condition holds on the graph as of
// the newest batch (evaluated with the one writer held, so no batch lands
// between the check and the apply: every conditional batch is serializable
// with every other, in seq order), and returns its sequence number; else
// nothing is applied and the error is a *PreconditionError.
func (db *DB) ApplyIf(b *Batch, conds ...Condition) (uint64, error) {
	if db.closed.Load() {
		return 0, ErrClosed
	}
	if err := db.dir.Keys.Sync(); err != nil {
		return 0, db.err(err)
	}
	cs := make([]engine.Condition, len(conds))
	for i, c := range conds {
		cs[i] = c.c
	}
	seq, err := db.dir.Store.ApplyIf(&b.b, cs)
	return seq, db.err(err)
}

// Flush makes every applied batch durable.
func (db *DB) Flush() error { return db.err(db.dir.Store.Flush()) }

// Direction says which edges of a vertex: Out (the default) or In.
type Direction uint8

// The directions.
const (
	Out Direction = iota
	In
)

func (d Direction) engine() engine.Direction {
	if d == In {
		return engine.In
	}
	return engine.Out
}

// ErrNoInEdges is returned for in-edges of a store that keeps none.
var ErrNoInEdges = errors.New("graphtide: the store keeps no in-edges: it was created without them (Options.NoInEdges, --in-edges=false, or a version that did not keep them by default), and they are fixed at creation")

// Snapshot is the graph as of one sequence number. Release it when done:
// it holds the store's files.
type Snapshot struct {
	sn *engine.Snapshot
	in bool
}

// Snapshot takes a snapshot of everything applied so far.
func (db *DB) Snapshot() (*Snapshot, error) {
	sn, err := db.dir.Store.Snapshot()
	if err != nil {
		return nil, db.err(err)
	}
	return &Snapshot{sn: sn, in: db.dir.Store.InEdges()}, nil
}

// SnapshotAt takes a snapshot of the graph as it was when seq was the
// newest sequence number (an earlier Apply's), within Options.HistorySeqs
// of the newest; outside it, a *SeqError naming the readable range.
func (db *DB) SnapshotAt(seq uint64) (*Snapshot, error) {
	sn, err := db.dir.Store.SnapshotAt(seq)
	if err != nil {
		return nil, db.err(err)
	}
	return &Snapshot{sn: sn, in: db.dir.Store.InEdges()}, nil
}

// Seq is the sequence number of the newest batch the snapshot sees.
func (s *Snapshot) Seq() uint64 { return s.sn.Seq() }

// Release lets the snapshot's files go.
func (s *Snapshot) Release() { s.sn.Release() }

// OfTypes is a view of the snapshot that reads only the edges of the types
// ts (numbers from DB.TypeID). It shares the snapshot's pin: release one of
// them.
func (s *Snapshot) OfTypes(ts ...uint16) *Snapshot {
	return &Snapshot{sn: s.sn.OfTypes(engine.TypesOf(ts...)), in: s.in}
}

// Degree is the number of v's edges in direction d.
func (s *Snapshot) Degree(v uint64, d Direction) (int, error) {
	if d == In && !s.in {
		return 0, ErrNoInEdges
	}
	n, err := s.sn.Degree(v, d.engine())
	return int(n), publicErr(err, namer{})
}

// Neighbor is one neighbor of a vertex and the weight and type of the
// edge; for an accumulate edge (Aggregate) its aggregate of events too.
type Neighbor struct {
	ID     uint64    // the neighbor
	Weight float64   // the edge's weight (an accumulate edge's: Sum)
	Type   uint16    // the edge's type (DB.TypeID; 0 the default)
	Time   time.Time // the event time its operation gave (Batch.SetEventTime); zero when none
	// Count is an accumulate edge's number of events; 0 for a replace
	// edge, whose Sum, FirstTime and LastTime are zero too.
	Count uint64
	// Sum is the sum of an accumulate edge's events' weights.
	Sum float64
	// FirstTime and LastTime are the least and greatest event time of an
	// accumulate edge's events (zero when none had one).
	FirstTime, LastTime time.Time
	// Ref is the edge's event reference (Batch.SetPayload; an accumulate
	// edge's newest event's); "" when none.
	Ref string
	// Props is the edge's property document's JSON text (an accumulate
	// edge's newest event's), an object; "" when none. (A string, so that
	// a Neighbor compares with ==.)
	Props string
}

// Neighbors returns v's edges in direction d, sorted by neighbor id (a
// neighbor joined by edges of several types comes once per type, the
// larger type first).
func (s *Snapshot) Neighbors(v uint64, d Direction) ([]Neighbor, error) {
	if d == In && !s.in {
		return nil, ErrNoInEdges
	}
	var out []Neighbor
	var after *engine.EdgeCursor
	for {
		p, err := s.sn.NeighborsPageExt(v, d.engine(), after, 4096)
		if err != nil {
			return nil, publicErr(err, namer{})
		}
		out = appendNeighbors(out, p)
		last, ok := p.Last()
		if !p.More || !ok {
			return out, nil
		}
		after = &last
	}
}

// Edges returns the edges from src to dst (their ID is dst), one per edge
// type that links them, the larger type first; none when there is no such
// edge. A lookup searches src's edges by binary search in each file and
// MemGraph, so it costs about the same for a hub as for any vertex.
func (s *Snapshot) Edges(src, dst uint64) ([]Neighbor, error) {
	c, err := s.sn.Edge(src, dst)
	if err != nil {
		return nil, publicErr(err, namer{})
	}
	out := make([]Neighbor, len(c.Types))
	for i := range out {
		out[i] = neighborOf(dst, &c, i)
	}
	return out, nil
}

// Vertex is v's record in the snapshot, and whether it has one (a vertex
// known only by its edges has none).
func (s *Snapshot) Vertex(v uint64) (Vertex, bool, error) {
	x, ok, err := s.sn.Vertex(v)
	return Vertex{Label: x.Label, Props: x.Props}, ok, publicErr(err, namer{})
}

// VertexExists reports whether v has a record or an edge (out, or in when
// the store keeps in-edges) in the snapshot.
func (s *Snapshot) VertexExists(v uint64) (bool, error) {
	ok, err := s.sn.VertexExists(v)
	return ok, publicErr(err, namer{})
}

// HasEdge reports whether the snapshot holds an edge from src to dst (of
// any of its types).
func (s *Snapshot) HasEdge(src, dst uint64) (bool, error) {
	c, err := s.sn.Edge(src, dst)
	return len(c.Types) > 0, publicErr(err, namer{})
}

// View is a static view: the whole graph as of one sequence number, for
// scans and reads (a Fresh, Stale or Private one: OpenView). Release it
// when done.
type View struct {
	v     *views.StaticView
	owned bool // a StatefulStream's: the stream releases it
}

// View takes a fresh static view of everything applied so far.
func (db *DB) View() (*View, error) {
	v, err := db.vm.Static(views.StaticOptions{})
	if err != nil {
		return nil, db.err(err)
	}
	return &View{v: v}, nil
}

// Seq is the sequence number of the newest batch the view sees.
func (v *View) Seq() uint64 { return v.v.Seq() }

// Release lets the view's data go (nothing on a StatefulStream's view).
func (v *View) Release() {
	if !v.owned {
		v.v.Release()
	}
}

// Each calls f for every vertex with edges in direction d, in id order,
// with its neighbors (sorted) and their weights. f must not keep the
// slices.
func (v *View) Each(d Direction, f func(v uint64, nbrs []uint64, weights []float64)) error {
	if d == In && !v.v.HasIn() {
		return ErrNoInEdges
	}
	return publicErr(v.v.Each(d.engine(), true, f), namer{})
}

// Op is the kind of an operation.
type Op uint8

// The operations.
const (
	Upsert Op = iota
	DeleteEdge
	DeleteVertex
)

func (o Op) String() string { return [...]string{"upsert", "delete_edge", "delete_vertex"}[o] }

// Change is one applied operation. A vertex delete has Dst 0; it is
// followed by the edge deletes it applied.
type Change struct {
	Seq       uint64    // the sequence number of its batch
	Op        Op        // what it did
	Src, Dst  uint64    // the edge's vertices (a vertex delete: Src)
	Weight    float64   // of an upsert
	Type      uint16    // the edge's type (0 for a vertex delete)
	EventTime time.Time // Batch.SetEventTime's, zero when none
}

func changeOf(e views.Edge) Change {
	c := Change{Seq: e.Seq, Src: e.Op.Src, Dst: e.Op.Dst, Weight: e.Op.Weight, Type: e.Op.Type, EventTime: e.Op.Time()}
	switch e.Op.Kind {
	case engine.OpDeleteEdge:
		c.Op = DeleteEdge
	case engine.OpDeleteVertex:
		c.Op = DeleteVertex
	}
	return c
}

// Stream is a stream view: the operations applied after it was opened, in
// order. One goroutine at a time may call Next.
type Stream struct{ s *views.Stream }

// Stream opens a stream view; Next hands out at least batchSize
// operations at a time (0: 1).
func (db *DB) Stream(batchSize int) (*Stream, error) {
	s, err := db.vm.Stream(views.StreamOptions{BatchSize: max(batchSize, 1)})
	if err != nil {
		return nil, db.err(err)
	}
	return &Stream{s}, nil
}

// Next waits for operations (or ctx) and returns them. A stream that
// falls further behind than Options.ViewLogCapacity loses operations:
// Next then returns an error saying so.
func (s *Stream) Next(ctx context.Context) ([]Change, error) {
	b, err := s.s.Pull(ctx)
	var lost *views.LostError
	switch {
	case errors.As(err, &lost):
		return nil, fmt.Errorf("%w: %d operations", ErrStreamLost, lost.Missed)
	case errors.Is(err, views.ErrClosed):
		return nil, ErrClosed
	case err != nil:
		return nil, publicErr(err, namer{})
	}
	out := make([]Change, len(b.Edges))
	for i, e := range b.Edges {
		out[i] = changeOf(e)
	}
	return out, nil
}

// Close closes the stream.
func (s *Stream) Close() { s.s.Close() }
