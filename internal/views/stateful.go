package views

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

// StatefulOptions configure a stateful stream view: BatchSize, Window,
// MaxWindowEdges and MaxBehind as for a stateless stream, except that a
// consumer MaxBehind operations behind gets an Update with Lost set.
type StatefulOptions struct {
	StreamOptions
	// Stale attaches views of flushed data only (cheaper to read) instead
	// of fresh ones; Pull then waits for a flush to move past the view.
	Stale bool
	// StalePoll is how often a stale stream looks for a newer flush
	// (default 20ms).
	StalePoll time.Duration
}

// Update is what one Pull of a stateful stream returns. View and Old stay
// valid until the next Pull or Close; do not Release them.
type Update struct {
	View *StaticView // the attached view, now at the newest snapshot
	Old  *StaticView // the view of the previous Pull
	// Edges are the operations with Old.Seq() < seq <= View.Seq(), in
	// order; Expired the ones that left the window.
	Edges, Expired []Edge
	// Changed lists, sorted and unique, every vertex whose edges may differ
	// between Old and View: the endpoints of every operation and, for a
	// vertex delete, the vertex's neighbors in Old. It is a superset (an
	// operation that changed nothing still marks its endpoints).
	Changed []uint64
	// All: the changed set is unknown (data was lost, or a vertex was
	// deleted in a store without in-edges, whose in-neighbors cannot be
	// listed): treat every vertex as changed.
	All bool
	// Lost: operations were dropped before this consumer read them; Edges
	// is incomplete. Resync from View.
	Lost bool
}

// Stateful is a stateful stream view (GraphOne's reg-sstream-view): an
// attached static view that each Pull advances. Pull is for one consumer.
type Stateful struct {
	m    *Manager
	opts StatefulOptions

	mu     sync.Mutex
	view   *StaticView       // Protected by mu.
	old    *StaticView       // Protected by mu.
	pos    uint64            // log position of the first op after view.Seq(); Protected by mu.
	win    *ItemWindow[Edge] // Protected by mu.
	closed bool              // Protected by mu.
	// lostNext: ops between view and pos were dropped; the next Pull
	// reports Lost. Protected by mu.
	lostNext bool
}

// Stateful registers a stateful stream view attached to a new static view.
func (m *Manager) Stateful(o StatefulOptions) (*Stateful, error) {
	if err := o.normalize(m.cfg.LogCapacity); err != nil {
		return nil, err
	}
	if o.StalePoll == 0 {
		o.StalePoll = 20 * time.Millisecond
	}
	s := &Stateful{m: m, opts: o}
	v, err := s.newView(context.Background())
	if err != nil {
		return nil, err
	}
	// Every op after v.Seq() reaches the log (the observer was installed
	// before v was taken); start at the first.
	s.resumeAfter(v.Seq())
	s.view = v
	if o.Window.enabled() {
		s.win = NewItemWindow[Edge](o.Window, o.MaxWindowEdges)
	}
	if err := m.trackStream(s); err != nil {
		v.Release()
		return nil, err
	}
	return s, nil
}

// resumeAfter points the stream at the first logged op after seq. If some
// were already dropped, it starts at the head and the next Pull reports
// Lost.
func (s *Stateful) resumeAfter(seq uint64) {
	if p, ok := s.m.log.firstAfter(seq); ok {
		s.pos = p
		return
	}
	s.pos, _, _ = s.m.log.state()
	s.lostNext = true
}

// newView takes the attached kind of view and waits until the log holds
// every operation up to its seq (Apply logs a batch just after making it
// visible).
func (s *Stateful) newView(ctx context.Context) (*StaticView, error) {
	k := Fresh
	if s.opts.Stale {
		k = Stale
	}
	v, err := s.m.Static(StaticOptions{Kind: k, Types: s.opts.Types})
	if err != nil {
		return nil, err
	}
	if err := s.m.log.wait(ctx, func(_, last uint64) bool { return last >= v.Seq() }); err != nil {
		v.Release()
		return nil, err
	}
	return v, nil
}

// View is the attached static view (valid until the next Pull or Close).
func (s *Stateful) View() *StaticView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view
}

// Pull waits until at least BatchSize new operations exist (and, for a
// stale stream, until a flush has moved past the attached view), advances
// the attached view to the newest snapshot and returns what changed.
func (s *Stateful) Pull(ctx context.Context) (*Update, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if err := s.m.log.waitNew(ctx, s.pos, s.opts.BatchSize); err != nil {
		return nil, err
	}
	var v *StaticView
	for {
		var err error
		if v, err = s.newView(ctx); err != nil {
			return nil, err
		}
		if !s.opts.Stale || v.Seq() > s.view.Seq() {
			break
		}
		v.Release() // nothing flushed yet: look again shortly
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.opts.StalePoll):
		}
	}
	u := &Update{View: v, Old: s.view}
	end, ok := s.m.log.posAfterSeq(s.pos, v.Seq())
	if ok && !s.lostNext && end-s.pos <= uint64(s.opts.MaxBehind) {
		u.Edges, ok = s.m.log.read(s.pos, end, nil)
		u.Edges = ofTypes(u.Edges, s.opts.Types)
	} else {
		ok = false
	}
	if ok {
		if err := s.changed(u); err != nil {
			v.Release()
			return nil, err
		}
		if s.win != nil {
			_, u.Expired = advance(s.win, u.Edges) // late ones: in Edges (they changed the graph), never in the window
		}
		s.pos = end
	} else {
		u.Lost, u.All, u.Edges = true, true, nil
		if s.win != nil {
			s.win.Reset()
		}
		s.m.noteLost()
		s.lostNext = false
		s.resumeAfter(v.Seq())
	}
	if s.old != nil {
		s.old.Release()
	}
	s.old, s.view = s.view, v
	return u, nil
}

// changed fills u.Changed (or u.All) from u.Edges and u.Old.
func (s *Stateful) changed(u *Update) error {
	var ch []uint64
	var nb []uint64
	for _, e := range u.Edges {
		ch = append(ch, e.Op.Src)
		if e.Op.Kind != engine.OpDeleteVertex {
			ch = append(ch, e.Op.Dst)
			continue
		}
		if !u.Old.HasIn() {
			u.All = true
			continue
		}
		for _, dir := range []engine.Direction{engine.Out, engine.In} {
			var err error
			if nb, _, err = u.Old.Neighbors(e.Op.Src, dir, nb, nil); err != nil {
				return fmt.Errorf("views: neighbors of deleted vertex %d: %w", e.Op.Src, err)
			}
			ch = append(ch, nb...)
		}
	}
	slices.Sort(ch)
	u.Changed = slices.Compact(ch)
	return nil
}

// Close releases the attached views and unregisters the stream.
func (s *Stateful) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		if s.old != nil {
			s.old.Release()
		}
		s.view.Release()
	}
	s.mu.Unlock()
	s.m.untrackStream(s)
}
