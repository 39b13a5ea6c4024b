package views

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/leakcheck"
)

// ErrReleased is returned by every call on a released view.
var ErrReleased = errors.New("views: view is released")

// ErrClosed is returned by calls on a closed Manager and its streams.
var ErrClosed = errors.New("views: manager is closed")

// Kind of a static view.
type Kind int

// The kinds of static views.
const (
	Fresh   Kind = iota // everything applied so far
	Stale               // only flushed data
	Private             // its own copy; holds nothing of the store
)

func (k Kind) String() string {
	switch k {
	case Fresh:
		return "fresh"
	case Stale:
		return "stale"
	case Private:
		return "private"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// StaticOptions choose what a static view sees.
type StaticOptions struct {
	Kind Kind
	// For Private views: copy from flushed data only (GraphOne's private
	// stale view) instead of everything applied.
	StaleBase bool
	// For Private views: also copy in-edges (the store must keep them) and
	// weights. Out-edges are always copied.
	PrivateIn, PrivateWeights bool
	// Types, when not nil, makes the view see only the edges of these
	// types (engine.Snapshot.OfTypes); nil: every type.
	Types *engine.TypeSet
	// AsOf, when not nil, makes a Fresh view read the store as of that
	// past sequence number (engine.Store.SnapshotAt: within the store's
	// history retention).
	AsOf *uint64
}

// StaticView is a consistent, read-only graph as of one sequence number.
// It is safe for concurrent use; Release it when done.
type StaticView struct {
	// The state is what the manager keeps of an open view (to release it
	// on Close); the StaticView itself only its user holds, so that a
	// dropped one can be caught (package leakcheck, race builds).
	*staticState
}

// staticState is an open static view's state.
type staticState struct {
	m    *Manager
	kind Kind
	seq  uint64
	// low and high bound the ids of the view's vertices (the snapshot's
	// VertexBounds): every one lies in [0, low) or [HighIDBase, high).
	low, high uint64
	hasIn     bool
	weights   bool // weights readable (always for store views)
	typed     bool // the view reads some edge types only (StaticOptions.Types)
	created   time.Time

	// mu is held for reading by every read and for writing by Release.
	mu   sync.RWMutex
	sn   *engine.Snapshot // Fresh and Stale; Owned by the view; nil once released. Protected by mu.
	priv *memGraph        // Private; nil once released. Protected by mu.

	idsMu sync.Mutex
	ids   *IDSpace // set by the first successful IDs; Protected by idsMu.
}

// Static creates a static view.
func (m *Manager) Static(o StaticOptions) (*StaticView, error) {
	if err := m.alive(); err != nil {
		return nil, err
	}
	var (
		sn  *engine.Snapshot
		err error
	)
	stale := o.Kind == Stale || (o.Kind == Private && o.StaleBase)
	switch o.Kind {
	case Fresh, Stale, Private:
	default:
		return nil, fmt.Errorf("views: unknown view kind %d", int(o.Kind))
	}
	if o.Kind == Private && o.PrivateIn && !m.store.InEdges() {
		return nil, fmt.Errorf("views: a private view with in-edges needs a store that keeps them (--in-edges)")
	}
	switch {
	case o.AsOf != nil && o.Kind != Fresh:
		return nil, fmt.Errorf("views: a view as of a past seq is a fresh view, not %v", o.Kind)
	case o.AsOf != nil:
		sn, err = m.store.SnapshotAt(*o.AsOf)
	case stale:
		sn, err = m.store.DurableSnapshot()
	default:
		sn, err = m.store.Snapshot()
	}
	if err != nil {
		return nil, err
	}
	if o.Types != nil {
		sn = sn.OfTypes(*o.Types)
	}
	low, high := sn.VertexBounds()
	v := &StaticView{&staticState{m: m, kind: o.Kind, seq: sn.Seq(), low: low, high: high,
		hasIn: m.store.InEdges(), weights: true, typed: o.Types != nil, created: m.now()}}
	if o.Kind == Private {
		g, err := copyGraph(sn, v.Ranges, o.PrivateIn, o.PrivateWeights)
		sn.Release()
		if err != nil {
			return nil, err
		}
		v.priv, v.hasIn, v.weights = g, o.PrivateIn, o.PrivateWeights
	} else {
		v.sn = sn
	}
	st := v.staticState
	if err := m.track(st); err != nil {
		st.release() // the manager closed meanwhile
		return nil, err
	}
	leakcheck.Watch(v, "static view", st.open) // st.open does not hold v
	return v, nil
}

// Kind of the view.
func (v *StaticView) Kind() Kind { return v.kind }

// Seq is the sequence number the view sees: every batch up to it, none after.
func (v *StaticView) Seq() uint64 { return v.seq }

// IDs is the id space of the view, a snapshot of the manager's vertex
// index: every vertex with an edge in the view lies in it (and vertices
// that had edges at other sequence numbers may too). The first call on a
// manager scans the view to build the index; later ones read the edge log
// up to the view's sequence number.
func (v *StaticView) IDs() (IDSpace, error) {
	v.idsMu.Lock()
	defer v.idsMu.Unlock()
	if v.ids != nil {
		return *v.ids, nil
	}
	s, err := v.m.index.spaceFor(v)
	if err != nil {
		return IDSpace{}, err
	}
	v.ids = &s
	return s, nil
}

// VertexCount is the size of the view's id space (GraphOne's vertex
// count): ids without edges may count too.
func (v *StaticView) VertexCount() (int, error) {
	s, err := v.IDs()
	return s.Len(), err
}

// Ranges calls f with the id ranges [lo, hi) that hold the view's
// vertices, numbers first, then keys: what a whole scan walks.
func (v *StaticView) Ranges(f func(lo, hi uint64) error) error {
	if v.low > 0 {
		if err := f(0, v.low); err != nil {
			return err
		}
	}
	if v.high > highBase {
		return f(highBase, v.high)
	}
	return nil
}

// HasIn reports whether in-edges can be read.
func (v *StaticView) HasIn() bool { return v.hasIn }

// Created is when the view was made.
func (v *StaticView) Created() time.Time { return v.created }

// Release frees what the view holds. Later calls return ErrReleased;
// releasing twice is harmless.
func (v *StaticView) Release() {
	if v.release() {
		v.m.untrack(v.staticState)
	}
}

// open reports whether the view is not yet released.
func (v *staticState) open() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.sn != nil || v.priv != nil
}

// release frees the view's data and reports whether it held any.
func (v *staticState) release() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	held := v.sn != nil || v.priv != nil
	if v.sn != nil {
		v.sn.Release()
		v.sn = nil
	}
	v.priv = nil
	return held
}

// read runs f with the view's data held valid.
func (v *StaticView) read(f func(sn *engine.Snapshot, g *memGraph) error) error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.sn == nil && v.priv == nil {
		return ErrReleased
	}
	return f(v.sn, v.priv)
}

func (v *StaticView) checkDir(dir engine.Direction) error {
	if dir == engine.In && !v.hasIn {
		if v.kind == Private {
			return fmt.Errorf("views: this private view holds no in-edges (create it with PrivateIn)")
		}
		return fmt.Errorf("views: in-edges are not kept by this store (it was created without them; they are fixed at creation)")
	}
	if dir != engine.Out && dir != engine.In {
		return fmt.Errorf("views: direction must be out (0) or in (1), got %d", dir)
	}
	return nil
}

// Degree is the number of dir-edges of u.
func (v *StaticView) Degree(u uint64, dir engine.Direction) (uint64, error) {
	if err := v.checkDir(dir); err != nil {
		return 0, err
	}
	var d uint64
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g != nil {
			d = uint64(len(g.neighbors(u, dir)))
			return nil
		}
		d, err = sn.Degree(u, dir)
		return err
	})
	return d, err
}

// Neighbors returns u's dir-neighbors sorted by id (reusing dsts), and
// their weights when weights is not nil (reusing it). A private view
// created without weights reports weight 1.
func (v *StaticView) Neighbors(u uint64, dir engine.Direction, dsts []uint64, weights []float64) ([]uint64, []float64, error) {
	if err := v.checkDir(dir); err != nil {
		return nil, nil, err
	}
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g != nil {
			n := g.neighbors(u, dir)
			dsts = append(dsts[:0], n...)
			if weights != nil {
				weights = append(weights[:0], g.weightsOf(u, dir, len(n))...)
			}
			return nil
		}
		dsts, weights, err = sn.Neighbors(u, dir, dsts, weights)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return dsts, weights, nil
}

// Scan fills buf with the dir-neighbors of the vertices of [lo, hi) that
// have some, in id order, as many as fit, and returns the first vertex not
// yet reported (hi when done): the neighbors of a vertex range in one call.
func (v *StaticView) Scan(lo, hi uint64, dir engine.Direction, buf *engine.ScanBuffer) (uint64, error) {
	if err := v.checkDir(dir); err != nil {
		return 0, err
	}
	var next uint64
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g != nil {
			next = g.scan(lo, hi, dir, buf)
			return nil
		}
		next, err = sn.Scan(lo, hi, dir, buf)
		return err
	})
	return next, err
}

// Gather fills buf with the dir-neighbors of as many of vids, from the
// first, as fit, and returns how many it filled (see engine.Snapshot.Gather).
func (v *StaticView) Gather(vids []uint64, dir engine.Direction, buf *engine.GatherBuffer) (int, error) {
	if err := v.checkDir(dir); err != nil {
		return 0, err
	}
	var done int
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g != nil {
			done = g.gather(vids, dir, buf)
			return nil
		}
		done, err = sn.Gather(vids, dir, buf)
		return err
	})
	return done, err
}

// NeighborsPage returns up to limit of u's dir-edges past after (all when
// after is nil), in (neighbor ascending, type descending) order, with their
// weights when asked and their types, and whether more remain; its memory
// is bounded by limit whatever the degree (see
// engine.Snapshot.NeighborsPage).
func (v *StaticView) NeighborsPage(u uint64, dir engine.Direction, after *engine.EdgeCursor, limit int, weights bool) (engine.Page, error) {
	if err := v.checkDir(dir); err != nil {
		return engine.Page{}, err
	}
	if limit < 1 {
		return engine.Page{}, fmt.Errorf("views: page limit must be positive, got %d", limit)
	}
	var p engine.Page
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g == nil {
			p, err = sn.NeighborsPage(u, dir, after, limit, weights)
			return err
		}
		p = g.page(u, dir, after, limit, weights)
		return nil
	})
	return p, err
}

// Edge is the edges from src to dst in the view, one per edge type that
// links them (engine.Snapshot.Edge): a binary search in src's edges.
func (v *StaticView) Edge(src, dst uint64) (engine.Columns, error) {
	var c engine.Columns
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g == nil {
			c, err = sn.Edge(src, dst)
			return err
		}
		c = g.edge(src, dst)
		return nil
	})
	return c, err
}

// errNoRecords is a private view's answer to a vertex record read.
var errNoRecords = fmt.Errorf("views: a private view holds no vertex records (read them from a fresh or stale view)")

// Vertex is u's record in the view, and whether it has one
// (engine.Snapshot.Vertex); the view's type filter does not apply.
func (v *StaticView) Vertex(u uint64) (engine.Vertex, bool, error) {
	var rec engine.Vertex
	var ok bool
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g != nil {
			return errNoRecords
		}
		rec, ok, err = sn.Vertex(u)
		return err
	})
	return rec, ok, err
}

// VertexExists reports whether u has a record or an edge of any type in
// the view (engine.Snapshot.VertexExists).
func (v *StaticView) VertexExists(u uint64) (bool, error) {
	var ok bool
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g != nil {
			return errNoRecords
		}
		ok, err = sn.VertexExists(u)
		return err
	})
	return ok, err
}

// GatherEachLimit is GatherEach reading at most maxEdges edges: it calls f
// for vids in order until the next vertex's edges would pass maxEdges, and
// returns how many vertices it did and the edges it read.
func (v *StaticView) GatherEachLimit(vids []uint64, dir engine.Direction, weights bool, maxEdges int,
	f func(i int, nbrs []uint64, ws []float64)) (done, read int, err error) {
	if err := v.checkDir(dir); err != nil {
		return 0, 0, err
	}
	buf := gatherBufs[b2i(weights)].Get().(*engine.GatherBuffer)
	defer gatherBufs[b2i(weights)].Put(buf)
	for done < len(vids) {
		var d int
		err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
			if g != nil {
				d = g.gatherLimit(vids[done:], dir, buf, maxEdges-read)
				return nil
			}
			d, _, err = sn.GatherLimit(vids[done:], dir, buf, maxEdges-read)
			return err
		})
		if err != nil {
			return done, read, err
		}
		if d == 0 {
			return done, read, nil // the next vertex does not fit in what is left
		}
		for i := 0; i < d; i++ {
			b, e := buf.Offsets[i], buf.Offsets[i+1]
			var ws []float64
			if weights {
				ws = buf.Weights[b:e]
			}
			f(done+i, buf.Dsts[b:e], ws)
		}
		done += d
		read += int(buf.Offsets[d])
	}
	return done, read, nil
}
