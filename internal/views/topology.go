package views

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

// Topology is a Manager's one shared Topo, kept at the newest sequence
// number some graph analytic pulled: it is built from a fresh view when
// the first topology stream opens, then advanced in place from the edge
// log (work proportional to the operations and the degrees they touch),
// and dropped when the last stream closes. When the log no longer holds
// what it needs (it wrapped while nobody pulled), it is built again.
//
// Readers (an analytic's update) hold the read lock from Pull until Done;
// an advance takes the write lock. So an analytic sees one consistent
// graph for a whole update, and analytics pulling at different paces each
// get every operation between their previous seq and the topology's.
//
// Edge types: a Topology reads the edges of a set of types (nil: all). Its
// graph is simple: a has an edge to b when some edge (a, b, t) of its
// types exists, weighing the least of their weights. An operation on a
// type outside the set is left out of the graph and of its streams. When
// the set holds one type, an operation is its graph's as it is; when it
// may hold several (a set of several, or all types once the store is
// typed: Manager.typed), each edge operation is replaced by what it
// leaves of its (a, b) when the topology applies it: an upsert with the
// least weight if some edge of the set's types joins them at the seq the
// topology advances to, else a delete. So every operation a stream hands
// out is one on the simple graph, and the graph after them is exact.
type Topology struct {
	m     *Manager
	types *engine.TypeSet // nil: every type

	mu  sync.RWMutex
	t   *Topo  // nil when no stream is open; Protected by mu.
	pos uint64 // log position of the first op after t.Seq; Protected by mu.
	// removed holds, by log position, the edges each vertex delete
	// applied since the topology was built removed (streams hand them
	// out as edge deletes); entries behind the log's oldest position are
	// dropped. since is the position the topology was built at: a stream
	// behind it cannot be told what its vertex deletes removed.
	// Protected by mu.
	removed map[uint64][][2]uint64
	since   uint64
	// present holds, by log position (modulo the log's capacity), a bit
	// per edge operation the topology applied while a stream with
	// Presence was open: its edge existed just before it
	// (TopoUpdate.Prior). INVARIANT: when not nil, every position from
	// presentFrom on that the topology applied has its bit; nil while no
	// such stream is open. A stream with Presence behind presentFrom (or
	// with present nil and operations to read) is Lost. Protected by mu.
	present     bitmap
	presentFrom uint64
	// norm holds, by log position, how the topology applied each
	// operation it did not apply as logged (left out, or replaced: see
	// Topology); entries behind the log's oldest position are dropped.
	// Protected by mu.
	norm map[uint64]normOp

	// catchUp's buffers, kept from one advance to the next; Protected
	// by mu.
	buf    []Edge
	ops    []Edge
	opsPos []int
	states map[[2]uint64]normOp

	smu      sync.Mutex
	users    int           // open streams; Protected by smu.
	presence int           // open streams with Presence; Protected by smu.
	stats    TopologyStats // Protected by smu.
}

// TopologyStats describe a Manager's topology.
type TopologyStats struct {
	Builds   uint64 // full builds from a view (the first, and after the log wrapped)
	Advances uint64 // advances from the log
	Ops      uint64 // operations applied by advances
	// Changes: the edge changes those operations made, each edge a
	// vertex delete removed among them (so a hub's delete counts its
	// edges), repeated operations on one pair in one advance once.
	Changes  uint64
	Build    time.Duration // the last build's time
	Advance  time.Duration // all advances' time
	Vertices int
	Edges    int64
	Bytes    int64 // the memory held now, free room included
	// Work of the advances (both directions): compactions and growths of
	// the arrays, the heads they copied, and the heads rewrites wrote
	// (shifted within a list, moved with it to a new room, or added).
	Compactions       uint64
	ElementsCompacted uint64
	ElementsMoved     uint64
}

// EdgeVersions is the store's edge versions in its MemGraphs and files
// (halved when it keeps in-edges): an upper bound of its edges, as long as
// a compaction has not merged them, for sizing the topology.
func (m *Manager) EdgeVersions() int64 {
	sm, err := m.store.Metrics()
	if err != nil {
		return 0
	}
	e := sm.MemGraphEntries
	for _, l := range sm.Levels {
		e += l.Entries
	}
	if m.store.InEdges() {
		e /= 2
	}
	return e
}

// topoKey names a topology by the edge types it reads.
type topoKey struct {
	some  bool // false: every type
	types engine.TypeSet
}

// normOp is how a topology applied one logged operation (Topology.norm).
type normOp struct {
	skip   bool // left out: a type outside the set
	kind   engine.OpKind
	weight float64
}

// ErrLogWrapped is a topology's advance that could not build it: the
// edge log dropped the operations after the view it was built from three
// times over while it was built (writes outran the build). The next Pull
// tries again; raising the log's capacity makes it rarer.
var ErrLogWrapped = errors.New("views: the edge log wrapped three times while the topology was built from a view; raise the log's capacity (serve --view-log-capacity)")

// Topology returns the Manager's topology of every edge type (made on
// first use).
func (m *Manager) Topology() *Topology { return m.TopologyOf(nil) }

// TopologyOf returns the Manager's topology of the edge types ts (nil:
// every type), made on first use.
func (m *Manager) TopologyOf(ts *engine.TypeSet) *Topology {
	k := topoKey{}
	if ts != nil {
		k = topoKey{some: true, types: *ts}
	}
	m.tmu.Lock()
	defer m.tmu.Unlock()
	if m.topos == nil {
		m.topos = map[topoKey]*Topology{}
	}
	t := m.topos[k]
	if t == nil {
		t = &Topology{m: m, norm: map[uint64]normOp{}}
		if ts != nil {
			c := *ts
			t.types = &c
		}
		m.topos[k] = t
	}
	return t
}

// TopologiesBytes is the memory every topology holds.
func (m *Manager) TopologiesBytes() int64 {
	m.tmu.Lock()
	ts := make([]*Topology, 0, len(m.topos))
	for _, t := range m.topos {
		ts = append(ts, t)
	}
	m.tmu.Unlock()
	var n int64
	for _, t := range ts {
		n += t.Bytes()
	}
	return n
}

// Types is the set of edge types the topology reads (nil: every type).
func (t *Topology) Types() *engine.TypeSet { return t.types }

// single reports whether the topology's set holds exactly one type.
func (t *Topology) single() bool {
	return t.types != nil && t.types.Len() == 1
}

// normalizing reports whether the topology replaces edge operations by the
// state they leave (see Topology): its set may hold several types that
// the store's edges have.
func (t *Topology) normalizing() bool {
	if t.types == nil {
		return t.m.typed.Load()
	}
	return !t.single()
}

// Stats returns the topology's figures (zero sizes when none is held).
func (t *Topology) Stats() TopologyStats {
	t.smu.Lock()
	st := t.stats
	t.smu.Unlock()
	t.mu.RLock()
	if t.t != nil {
		st.Vertices, st.Edges, st.Bytes = t.t.Len(), t.t.Out.Edges(), t.t.Bytes()
	}
	t.mu.RUnlock()
	return st
}

// Bytes is the memory the topology holds (0 when no stream is open).
func (t *Topology) Bytes() int64 {
	if !t.mu.TryRLock() { // an advance is under way: report what it had
		t.smu.Lock()
		defer t.smu.Unlock()
		return t.stats.Bytes
	}
	defer t.mu.RUnlock()
	if t.t == nil {
		return 0
	}
	return t.t.Bytes()
}

// advance brings the topology to the newest applied sequence number.
func (t *Topology) advance(ctx context.Context) error {
	l := t.m.log
	_, _, last := l.state()
	t.mu.RLock()
	fresh := t.t != nil && t.t.Seq >= last
	t.mu.RUnlock()
	if fresh {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	v, err := t.m.Static(StaticOptions{Kind: Fresh, Types: t.types})
	if err != nil {
		return err
	}
	defer v.Release()
	if err := l.wait(ctx, func(_, last uint64) bool { return last >= v.Seq() }); err != nil {
		return err
	}
	if t.t != nil && t.t.Seq >= v.Seq() {
		return nil
	}
	t0 := time.Now()
	if t.t != nil {
		// INVARIANT: t.t, when not nil, is exactly the graph at t.t.Seq.
		ok, n, err := t.catchUp(v)
		if err != nil {
			return err
		}
		if ok {
			t.noteAdvance(time.Since(t0), n)
			return nil
		}
	}
	for try := 0; ; try++ {
		g, err := BuildTopo(ctx, v)
		if err != nil {
			return err
		}
		if p, ok := l.firstAfter(v.Seq()); ok {
			t.t, t.pos, t.since, t.removed, t.norm = g, p, p, map[uint64][][2]uint64{}, map[uint64]normOp{}
			break
		}
		if try == 2 {
			return ErrLogWrapped
		}
	}
	t.smu.Lock()
	t.stats.Builds++
	t.stats.Build = time.Since(t0)
	t.stats.Bytes = t.t.Bytes()
	t.smu.Unlock()
	return nil
}

// catchUp applies the logged operations up to v's seq, a chunk at a time.
// It returns false when the log no longer holds them. Protected by mu
// (held for writing).
func (t *Topology) catchUp(v *StaticView) (bool, int, error) {
	l := t.m.log
	ids, err := v.IDs()
	if err != nil {
		return false, 0, err
	}
	end, ok := l.posAfterSeq(t.pos, v.Seq())
	if !ok {
		return false, 0, nil
	}
	n := int(end - t.pos)
	// What was there before each operation is recorded only for streams
	// that ask (it costs a search per edge changed).
	c := uint64(t.m.cfg.LogCapacity)
	var present func(k int)
	t.smu.Lock()
	track := t.presence > 0
	t.smu.Unlock()
	switch {
	case !track:
		t.present = nil
	case t.present == nil:
		t.present, t.presentFrom = newBitmap(c), t.pos
	}
	buf := t.buf
	_, oldest, _ := l.state()
	for p := range t.removed {
		if p < oldest {
			delete(t.removed, p)
		}
	}
	for p := range t.norm {
		if p < oldest {
			delete(t.norm, p)
		}
	}
	if t.states == nil {
		t.states = map[[2]uint64]normOp{}
	}
	states := t.states // the (a, b) read at v's seq, for normalizing
	clear(states)
	ops, pos := t.ops, t.opsPos
	defer func() {
		t.buf, t.ops, t.opsPos = buf[:0], ops[:0], pos[:0]
		if len(states) > logChunk {
			t.states = nil // a burst's: not kept
		}
	}()
	for t.pos < end {
		to := min(end, t.pos+logChunk)
		if buf, ok = l.read(t.pos, to, buf[:0]); !ok {
			return false, 0, nil
		}
		seq := buf[len(buf)-1].Seq
		if to == end {
			seq = v.Seq()
		}
		at := t.pos
		// ops[k] is the operation at log position at+pos[k] as the
		// topology applies it.
		if ops, pos, err = t.normalize(v, buf, at, states, ops[:0], pos[:0]); err != nil {
			return false, 0, err
		}
		if track {
			for p := at; p < to; p++ {
				t.present.clear(p % c)
			}
			present = func(k int) { t.present.set((at + uint64(pos[k])) % c) }
		}
		err := t.t.Apply(ops, ids, seq, func(k int, es [][2]uint64) { t.removed[at+uint64(pos[k])] = es }, present)
		if err != nil {
			t.t = nil // half applied: the next advance builds it again
			return false, 0, fmt.Errorf("views: topology: %w", err)
		}
		t.pos = to
	}
	t.t.IDs, t.t.Seq = ids, v.Seq()
	return true, n, nil
}

// normalize returns the operations buf (read from log position at) as
// the topology applies them, each with its index in buf, and records in
// t.norm those it does not apply as logged (see Topology). states caches
// what v (the view the topology advances to) holds of each (a, b).
// Protected by mu (held for writing).
func (t *Topology) normalize(v *StaticView, buf []Edge, at uint64, states map[[2]uint64]normOp, ops []Edge, pos []int) ([]Edge, []int, error) {
	norm := t.normalizing()
	for k, e := range buf {
		if e.Op.Kind != engine.OpDeleteVertex {
			if t.types != nil && !t.types.Has(e.Op.Type) {
				t.norm[at+uint64(k)] = normOp{skip: true}
				continue
			}
			if norm {
				key := [2]uint64{e.Op.Src, e.Op.Dst}
				st, ok := states[key]
				if !ok {
					var err error
					if st, err = edgeState(v, e.Op.Src, e.Op.Dst); err != nil {
						return nil, nil, err
					}
					states[key] = st
				}
				if st.kind != e.Op.Kind || st.weight != e.Op.Weight || e.Op.Type != 0 {
					t.norm[at+uint64(k)] = st
					e.Op.Kind, e.Op.Weight, e.Op.Type = st.kind, st.weight, 0
				}
			}
		}
		ops = append(ops, e)
		pos = append(pos, k)
	}
	return ops, pos, nil
}

// edgeState is what v holds of a's out-edges to b: an upsert with the
// least weight of those edges (v reads the topology's types), or a delete
// when there is none.
func edgeState(v *StaticView, a, b uint64) (normOp, error) {
	var after *engine.EdgeCursor
	if b > 0 {
		// Past (b-1, type 0), the last edge to b-1: the first edges are b's.
		after = &engine.EdgeCursor{Dst: b - 1}
	}
	st := normOp{kind: engine.OpDeleteEdge}
	for {
		p, err := v.NeighborsPage(a, engine.Out, after, 16, true)
		if err != nil {
			return st, err
		}
		for i, d := range p.Dsts {
			if d != b {
				return st, nil
			}
			if st.kind != engine.OpUpsert || p.Weights[i] < st.weight {
				st = normOp{kind: engine.OpUpsert, weight: p.Weights[i]}
			}
		}
		last, ok := p.Last()
		if !p.More || !ok {
			return st, nil
		}
		after = &last
	}
}

func (t *Topology) noteAdvance(d time.Duration, ops int) {
	var w adjStats
	for _, a := range []*Adj{&t.t.Out, &t.t.In} {
		w.add(a.takeStats())
	}
	t.smu.Lock()
	t.stats.Compactions += w.compactions
	t.stats.ElementsCompacted += w.elementsCompacted
	t.stats.ElementsMoved += w.elementsMoved
	t.stats.Advances++
	t.stats.Ops += uint64(ops)
	t.stats.Changes += t.t.takeChanges()
	t.stats.Advance += d
	t.stats.Bytes = t.t.Bytes()
	t.smu.Unlock()
}

// TopoStream follows the topology for one graph analytic. Pull is for one
// consumer.
type TopoStream struct {
	t    *Topology
	opts StreamOptions

	mu      sync.Mutex
	pos     uint64 // log position of the first op after the last Pull's seq; Protected by mu.
	started bool   // Protected by mu.
	closed  bool   // Protected by mu.
}

// TopoUpdate is what one Pull returns. G is read-locked until Done: call
// it once the update is computed, and do not keep G (or its lists) after.
type TopoUpdate struct {
	G *Topo
	// Edges are the operations between the previous Pull's seq and G.Seq,
	// in order, as the topology applied them (see Topology: of its edge
	// types, and on its simple graph); each vertex delete is followed by an
	// edge delete (of the same Seq) for every edge it removed.
	Edges []Edge
	// Lost: this is the first Pull, or operations were dropped or more
	// than the stream's MaxBehind: compute from G alone.
	Lost bool
	// Seq is the sequence number the update brings the stream to: G.Seq,
	// or, when Partial, that of the last batch Edges hold. Partial: a
	// stream with Presence further behind than MaxBehind gets the next
	// MaxBehind operations (to the end of a batch) and the rest at its
	// next pulls, instead of Lost (G is at the newest seq all the same).
	Seq     uint64
	Partial bool
	// Prior, for a stream opened with Presence, says of each of Edges
	// what was there just before it: whether an edge upsert's or delete's
	// edge existed (WasPresent or WasAbsent), or that it is one of the edge
	// deletes a vertex delete expands into (Expansion: its edge existed),
	// or a vertex delete (VertexOp). nil otherwise, and when Lost.
	Prior []Prior
	// Logged, when not nil, holds for each of Edges the operation as the
	// edge log holds it (what the store applied, its kind, weight and
	// type): Edges[k].Op differs from Logged[k] where the topology
	// replaced it (a topology of several types: see Topology), and the
	// edge deletes a vertex delete expands into are as in Edges. nil when
	// every one of Edges is as logged. Monitors of events (a fraud
	// monitor's rings: each payment's own amount) read it: LoggedOp.
	Logged []engine.Op
	done   func()
	// ahead reads the operations G holds beyond Edges (EachAhead); nil
	// when there are none.
	ahead func(fn func(Edge, Prior)) bool
}

// EachAhead calls fn, in order, with each operation G holds beyond Edges
// (those the next pulls carry: only a Partial update has them), as Edges
// and Prior would give them. So the graph after Edges is G with each
// edge one of them touches as its first touch's Prior says (absent for
// WasAbsent, present otherwise; a VertexOp touches none). It returns
// false when the log no longer holds them all (then fn may have seen
// some): a caller that needs the graph after Edges cannot have it. Call
// it before Done. Memory: a chunk of the log at a time.
func (u *TopoUpdate) EachAhead(fn func(e Edge, p Prior)) bool {
	if u.ahead == nil {
		return true
	}
	return u.ahead(fn)
}

// LoggedOp is the operation Edges[k] is as the edge log holds it (see
// Logged).
func (u *TopoUpdate) LoggedOp(k int) engine.Op {
	if u.Logged != nil {
		return u.Logged[k]
	}
	return u.Edges[k].Op
}

// Prior is what was there just before one operation of a TopoUpdate.
type Prior uint8

// The values of Prior.
const (
	WasAbsent Prior = iota
	WasPresent
	Expansion
	VertexOp
)

// Done releases G.
func (u *TopoUpdate) Done() {
	if u.done != nil {
		u.done()
		u.done = nil
	}
}

// Stream opens a topology stream: its first Pull returns the topology
// (Lost set), each later one the operations since the one before.
func (t *Topology) Stream(o StreamOptions) (*TopoStream, error) {
	if err := o.normalize(t.m.cfg.LogCapacity); err != nil {
		return nil, err
	}
	if o.Window.enabled() {
		return nil, errors.New("views: a topology stream has no window")
	}
	s := &TopoStream{t: t, opts: o}
	if err := t.m.trackStream(s); err != nil {
		return nil, err
	}
	t.smu.Lock()
	t.users++
	if o.Presence {
		t.presence++
	}
	t.smu.Unlock()
	return s, nil
}

// Pull waits until at least BatchSize new operations exist (not for the
// first Pull), advances the topology to the newest sequence number and
// returns it read-locked, with the operations this stream had not seen.
func (s *TopoStream) Pull(ctx context.Context) (*TopoUpdate, error) {
	return s.pull(ctx, true)
}

// PullNow is Pull without waiting: the operations there are now (perhaps
// none).
func (s *TopoStream) PullNow(ctx context.Context) (*TopoUpdate, error) {
	return s.pull(ctx, false)
}

func (s *TopoStream) pull(ctx context.Context, wait bool) (*TopoUpdate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	l := s.t.m.log
	if s.started && wait {
		if err := l.waitNew(ctx, s.pos, s.opts.BatchSize); err != nil {
			return nil, err
		}
	}
	if err := s.t.advance(ctx); err != nil {
		return nil, err
	}
	t := s.t
	t.mu.RLock()
	u := &TopoUpdate{G: t.t, Seq: t.t.Seq, done: t.mu.RUnlock}
	end := t.pos
	near := end-s.pos <= uint64(s.opts.MaxBehind)
	if s.opts.Presence && s.started && !near {
		// Too far behind for one pull: this one carries the next
		// MaxBehind operations, up to the end of the batch they reach
		// (all of them if that batch reaches the newest).
		if cut, seq, ok := l.batchEnd(s.pos + uint64(s.opts.MaxBehind) - 1); ok && cut < end {
			u.ahead = t.aheadReader(cut, end)
			end, u.Seq, u.Partial = cut, seq, true
		}
		near = true
	}
	ok := s.started && near && s.pos >= t.since
	if ok && s.opts.Presence && end > s.pos && (t.present == nil || s.pos < t.presentFrom) {
		ok = false // what was there before them was not recorded
	}
	if ok {
		u.Edges, ok = l.read(s.pos, end, nil)
	}
	if ok {
		u.Edges, u.Prior, u.Logged, ok = t.edgesFrom(u.Edges, s.pos, s.opts.Presence)
	}
	if !ok {
		u.Lost, u.Edges, u.ahead = true, nil, nil
		if s.started {
			s.t.m.noteLost()
		}
	}
	s.pos, s.started = end, true
	return u, nil
}

// aheadReader reads the operations at log positions [from, to) as a
// stream with Presence gets them, a chunk at a time, for
// TopoUpdate.EachAhead. Call it with mu held for reading, and the reader
// it returns before that lock is released.
func (t *Topology) aheadReader(from, to uint64) func(fn func(Edge, Prior)) bool {
	return func(fn func(Edge, Prior)) bool {
		var buf []Edge
		for p := from; p < to; {
			next := min(to, p+logChunk)
			var ok bool
			if buf, ok = t.m.log.read(p, next, buf[:0]); !ok || len(buf) != int(next-p) {
				return false
			}
			es, ps, _, ok := t.edgesFrom(buf, p, true)
			if !ok || len(ps) != len(es) {
				return false
			}
			for k, e := range es {
				fn(e, ps[k])
			}
			p = next
		}
		return true
	}
}

// edgesFrom is es (read from log position from) as the topology applied
// them (t.norm: those it left out are dropped, those it replaced
// replaced), each vertex delete followed by the edge deletes it applied,
// and, when presence, the Prior of each; and, when some operation was
// replaced, each one's logged operation (TopoUpdate.Logged; else nil).
// It returns false when what a vertex delete removed is not known
// (applied before the build, or dropped with the log's oldest entries).
// Protected by mu (read).
func (t *Topology) edgesFrom(es []Edge, from uint64, presence bool) ([]Edge, []Prior, []engine.Op, bool) {
	c := uint64(t.m.cfg.LogCapacity)
	// prior is what was there before the edge operation at log position p.
	prior := func(p uint64) Prior {
		if t.present.has(p % c) {
			return WasPresent
		}
		return WasAbsent
	}
	plain := len(t.norm) == 0 // nothing to drop or replace
	var ps []Prior
	if presence {
		ps = make([]Prior, 0, len(es))
	}
	if plain && !slices.ContainsFunc(es, func(e Edge) bool { return e.Op.Kind == engine.OpDeleteVertex }) {
		// The common case: es as they are.
		if presence {
			for k := range es {
				ps = append(ps, prior(from+uint64(k)))
			}
		}
		return es, ps, nil, true
	}
	out := make([]Edge, 0, len(es))
	// INVARIANT: logged, when not nil, is parallel to out.
	var logged []engine.Op
	replaced := false
	for k, e := range es {
		p := from + uint64(k)
		op := e.Op
		if !plain {
			if n, ok := t.norm[p]; ok {
				if n.skip {
					continue
				}
				e.Op.Kind, e.Op.Weight, e.Op.Type = n.kind, n.weight, 0
				if !replaced {
					replaced = true
					logged = make([]engine.Op, len(out), cap(out))
					for i, o := range out {
						logged[i] = o.Op
					}
				}
			}
		}
		add := func(e Edge, op engine.Op) {
			out = append(out, e)
			if replaced {
				logged = append(logged, op)
			}
		}
		if e.Op.Kind != engine.OpDeleteVertex {
			add(e, op)
			if presence {
				ps = append(ps, prior(p))
			}
			continue
		}
		rm, ok := t.removed[p]
		if !ok {
			return nil, nil, nil, false
		}
		add(e, op)
		if presence {
			ps = append(ps, VertexOp)
		}
		for _, x := range rm {
			ex := Edge{Seq: e.Seq, Op: engine.Op{Src: x[0], Dst: x[1], Kind: engine.OpDeleteEdge}, Time: e.Time, Ref: e.Ref}
			add(ex, ex.Op)
			if presence {
				ps = append(ps, Expansion)
			}
		}
	}
	return out, ps, logged, true
}

// Close unregisters the stream; the last one closed frees the topology.
func (s *TopoStream) Close() {
	s.mu.Lock()
	was := s.closed
	s.closed = true
	s.mu.Unlock()
	if was {
		return
	}
	s.t.m.untrackStream(s)
	t := s.t
	t.smu.Lock()
	t.users--
	if s.opts.Presence {
		t.presence--
	}
	last := t.users == 0
	t.smu.Unlock()
	if last {
		t.mu.Lock()
		t.smu.Lock()
		if t.users == 0 {
			t.t, t.removed, t.present = nil, nil, nil
			t.buf, t.ops, t.opsPos, t.states = nil, nil, nil, nil
			t.stats.Bytes = 0
		}
		t.smu.Unlock()
		t.mu.Unlock()
	}
}
