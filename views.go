package graphtide

import (
	"context"
	"errors"
	"fmt"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// ViewKind says what a static view sees. The views are GraphOne's (Kumar
// and Huang, "GraphOne: A Data Store for Real-time Analytics on Evolving
// Graphs", section 6):
//
//   - static views, for batch analytics and queries (DB.OpenView): Fresh
//     sees every batch applied so far; Stale sees only what is flushed, so
//     it may lag behind the newest batches to read cheaper (no write
//     buffers); Private is a copy of the edges that the view owns, so it
//     holds back no flush or compaction however long it lives (it is
//     read-only like the others: "private" is about who holds the data,
//     not who may change it);
//   - stream views, for stream analytics: a Stream (stateless, DB.Stream)
//     hands out the operations applied after it opened, in order; a
//     StatefulStream (DB.StatefulStream) keeps a static view that each
//     Next advances to the newest batch and says which operations and
//     vertices changed since the previous one.
//
// Snapshot and SnapshotAt are fresh static views too, read a vertex at a
// time; a View is read a vertex at a time or scanned whole (View.Each).
type ViewKind uint8

// The kinds of static views.
const (
	// Fresh sees every batch applied so far.
	Fresh ViewKind = iota
	// Stale sees only the flushed batches (up to the last Flush, or the
	// last flush the store made itself as a write buffer filled): it may
	// lag behind the newest batches, and reads no write buffer.
	Stale
	// Private is the view's own copy of the edges (out-edges; in-edges too
	// with ViewOptions.InEdges), made when it opens: once open it holds
	// nothing of the store, so a view kept for a long computation does not
	// keep replaced files on disk. It holds no vertex records.
	Private
)

func (k ViewKind) String() string {
	switch k {
	case Fresh:
		return "fresh"
	case Stale:
		return "stale"
	case Private:
		return "private"
	}
	return fmt.Sprintf("ViewKind(%d)", uint8(k))
}

// ViewOptions choose what OpenView's view sees. The zero value is a fresh
// view of every edge type.
type ViewOptions struct {
	// Kind is the view's kind: Fresh (the zero value), Stale or Private.
	Kind ViewKind
	// StaleBase makes a Private view a copy of the flushed batches only
	// (GraphOne's private stale view) instead of every batch applied.
	StaleBase bool
	// InEdges makes a Private view copy in-edges too (the store must keep
	// them: DB.InEdges). Fresh and Stale views read in-edges whenever
	// the store keeps them.
	InEdges bool
	// NoWeights makes a Private view leave out the weights (every weight
	// then reads 1): a smaller copy for analytics that ignore weights.
	NoWeights bool
	// Types, when not empty, makes the view see only the edges of these
	// types (numbers from DB.TypeID); empty: every type.
	Types []uint16
}

// ErrViewKind is OpenView's error for a ViewKind it does not know.
var ErrViewKind = errors.New("graphtide: unknown view kind (Fresh, Stale or Private)")

// OpenView opens a static view of the kind o.Kind. Release it when done.
// DB.View is OpenView(ViewOptions{}).
func (db *DB) OpenView(o ViewOptions) (*View, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	so := views.StaticOptions{StaleBase: o.StaleBase, PrivateIn: o.InEdges, PrivateWeights: !o.NoWeights}
	switch o.Kind {
	case Fresh:
		so.Kind = views.Fresh
	case Stale:
		so.Kind = views.Stale
	case Private:
		so.Kind = views.Private
		if o.InEdges && !db.InEdges() {
			return nil, fmt.Errorf("graphtide: a private view with in-edges needs a store that keeps them: %w", ErrNoInEdges)
		}
	default:
		return nil, fmt.Errorf("%w, got %d", ErrViewKind, o.Kind)
	}
	if o.Kind != Private && (o.StaleBase || o.InEdges || o.NoWeights) {
		return nil, fmt.Errorf("graphtide: StaleBase, InEdges and NoWeights are options of a Private view, not of a %v one", o.Kind)
	}
	if len(o.Types) > 0 {
		ts := engine.TypesOf(o.Types...)
		so.Types = &ts
	}
	v, err := db.vm.Static(so)
	if err != nil {
		return nil, db.err(err)
	}
	return &View{v: v}, nil
}

// Kind is the view's kind.
func (v *View) Kind() ViewKind {
	switch v.v.Kind() {
	case views.Stale:
		return Stale
	case views.Private:
		return Private
	}
	return Fresh
}

// HasIn reports whether the view can read in-edges: a store that keeps
// them, and for a Private view one opened with ViewOptions.InEdges.
func (v *View) HasIn() bool { return v.v.HasIn() }

// Degree is the number of u's edges in direction d.
func (v *View) Degree(u uint64, d Direction) (int, error) {
	if d == In && !v.v.HasIn() {
		return 0, ErrNoInEdges
	}
	n, err := v.v.Degree(u, d.engine())
	return int(n), publicErr(err, namer{})
}

// Neighbors returns u's edges in direction d, sorted by neighbor id (a
// neighbor joined by edges of several types comes once per type, the
// larger type first), as Snapshot.Neighbors does.
func (v *View) Neighbors(u uint64, d Direction) ([]Neighbor, error) {
	if d == In && !v.v.HasIn() {
		return nil, ErrNoInEdges
	}
	var out []Neighbor
	var after *engine.EdgeCursor
	for {
		p, err := v.v.NeighborsPageExt(u, d.engine(), after, 4096)
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

// appendNeighbors appends the page's edges to out.
func appendNeighbors(out []Neighbor, p engine.Page) []Neighbor {
	for i, x := range p.Dsts {
		out = append(out, neighborOf(x, &p.Columns, i))
	}
	return out
}

// HasEdge reports whether the view holds an edge from src to dst (of any
// type it sees).
func (v *View) HasEdge(src, dst uint64) (bool, error) {
	c, err := v.v.Edge(src, dst)
	return len(c.Types) > 0, publicErr(err, namer{})
}

// StatefulOptions configure DB.StatefulStream. The zero value follows
// every batch with fresh views of every edge type.
type StatefulOptions struct {
	// BatchSize: Next returns once at least this many new operations exist
	// (0: 1), with all that exist then.
	BatchSize int
	// Stale keeps Stale views instead of Fresh ones: Next then also waits
	// for a flush to move past the previous view (Flush, or the store's own
	// as its write buffers fill).
	Stale bool
	// Types, when not empty, keeps the operations on edges of these types
	// only (a vertex delete, which removes edges of every type, is kept),
	// and the views see only these types.
	Types []uint16
}

// StatefulStream is a stateful stream view (GraphOne's sstream view): a
// static view that each Next advances to the newest batch, with the
// operations applied since the previous one and the vertices whose edges
// they may have changed, so that a computation over the whole graph
// (components, distances) redoes only what changed. One goroutine at a
// time may call Next.
type StatefulStream struct{ s *views.Stateful }

// StatefulStream opens a stateful stream view at the newest batch (its
// View); Next advances it.
func (db *DB) StatefulStream(o StatefulOptions) (*StatefulStream, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	so := views.StatefulOptions{StreamOptions: views.StreamOptions{BatchSize: max(o.BatchSize, 1)}, Stale: o.Stale}
	if len(o.Types) > 0 {
		ts := engine.TypesOf(o.Types...)
		so.Types = &ts
	}
	s, err := db.vm.Stateful(so)
	if err != nil {
		return nil, db.err(err)
	}
	return &StatefulStream{s}, nil
}

// Update is what StatefulStream.Next returns. View and Old stay valid
// until the next Next or Close; they belong to the stream (Release does
// nothing on them).
type Update struct {
	View *View // the stream's view, now at the newest batch
	Old  *View // its view before this Next
	// Changes are the operations applied after Old.Seq() up to View.Seq(),
	// in order.
	Changes []Change
	// Changed lists, sorted and without repeats, every vertex whose edges
	// may differ between Old and View: the ends of every operation and a
	// deleted vertex's neighbors in Old. It may hold more than changed (an
	// operation that changed nothing still names its ends).
	Changed []uint64
	// All says every vertex may have changed: Changes is incomplete (Lost),
	// or a vertex was deleted in a store without in-edges, whose
	// in-neighbors Old cannot list. Recompute from View.
	All bool
	// Lost says the stream fell further behind than Options.ViewLogCapacity
	// and lost operations: Changes is empty; View is still the newest.
	Lost bool
}

// Next waits for at least BatchSize new operations (or ctx, or Close of
// the stream or the DB: ErrClosed), advances the view to the newest batch
// and returns what changed.
func (s *StatefulStream) Next(ctx context.Context) (Update, error) {
	u, err := s.s.Pull(ctx)
	if errors.Is(err, views.ErrClosed) {
		return Update{}, ErrClosed
	}
	if err != nil {
		return Update{}, publicErr(err, namer{})
	}
	out := Update{View: &View{v: u.View, owned: true}, Old: &View{v: u.Old, owned: true}, Changed: u.Changed, All: u.All, Lost: u.Lost,
		Changes: make([]Change, len(u.Edges))}
	for i, e := range u.Edges {
		out.Changes[i] = changeOf(e)
	}
	return out, nil
}

// View is the stream's current view (valid until the next Next or Close;
// the stream's own: Release does nothing on it).
func (s *StatefulStream) View() *View { return &View{v: s.s.View(), owned: true} }

// Close releases the stream's views and closes it.
func (s *StatefulStream) Close() { s.s.Close() }
