package views

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

// Config of a Manager. Zero fields take the documented defaults.
type Config struct {
	// LogCapacity is how many of the newest applied operations the edge log
	// keeps for stream views (default 1<<20, about 40 MiB). A stream that
	// falls further behind loses data and must resync.
	LogCapacity int
	// Now is the clock (default time.Now); tests replace it.
	Now func() time.Time
	// IndexRebuildMin is the fewest vertices the vertex index hashes
	// before it considers a new layout (default 1024); tests lower it to
	// make the index rebuild often.
	IndexRebuildMin int
}

// Manager hands out views of one store and feeds the edge log that stream
// views read. Create it before any view or stream, and Close it before the
// store. It is safe for concurrent use.
type Manager struct {
	store *engine.Store
	cfg   Config
	log   *edgeLog
	index vertexIndex

	tmu   sync.Mutex
	topos map[topoKey]*Topology // by the edge types they read, made on first use; Protected by tmu.

	// typed is set once the store may hold an edge whose type is not 0
	// (a file with a type column at start, or an applied operation with
	// one since): from then on, a topology of several types normalizes
	// the operations it applies (Topology). Never cleared.
	typed atomic.Bool

	mu      sync.Mutex
	closed  bool                      // Protected by mu.
	views   map[*staticState]struct{} // live static views; Protected by mu.
	streams map[any]struct{}          // live *Stream, *Stateful and *TopoStream; Protected by mu.
	created map[Kind]uint64           // views created, by kind; Protected by mu.
	lost    uint64                    // lost-data events of streams; Protected by mu.
}

// NewManager installs the store's apply observer (replacing any other) and
// starts the edge log at the store's newest sequence number.
func NewManager(store *engine.Store, cfg Config) (*Manager, error) {
	if cfg.LogCapacity == 0 {
		cfg.LogCapacity = 1 << 20
	}
	if cfg.LogCapacity < 1 || cfg.LogCapacity > 1<<30 {
		return nil, fmt.Errorf("views: log capacity must be between 1 and %d operations, got %d", 1<<30, cfg.LogCapacity)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IndexRebuildMin <= 0 {
		cfg.IndexRebuildMin = 1024
	}
	m := &Manager{store: store, cfg: cfg, log: newEdgeLog(cfg.LogCapacity, 0),
		views: map[*staticState]struct{}{}, streams: map[any]struct{}{}, created: map[Kind]uint64{}}
	// Observer first: every batch applied after this point reaches the log,
	// so every view taken later is followed by all the ops after it.
	store.SetApplyObserver(func(seq uint64, b *engine.Batch) {
		if b.Typed() {
			m.typed.Store(true)
		}
		m.log.append(seq, b, m.cfg.Now().UnixNano())
	})
	files, err := store.Files()
	if err != nil {
		store.SetApplyObserver(nil)
		return nil, err
	}
	for _, f := range files {
		if f.Types {
			m.typed.Store(true)
		}
	}
	sm, err := store.Metrics()
	if err != nil {
		store.SetApplyObserver(nil)
		return nil, err
	}
	m.log.mu.Lock()
	m.log.lastSeq = max(m.log.lastSeq, sm.LastSeq)
	m.log.start = sm.LastSeq
	m.log.mu.Unlock()
	m.index.m = m
	return m, nil
}

// LogCapacity is how many operations the edge log keeps.
func (m *Manager) LogCapacity() int { return m.cfg.LogCapacity }

// Store is the store the manager serves.
func (m *Manager) Store() *engine.Store { return m.store }

func (m *Manager) now() time.Time { return m.cfg.Now() }

func (m *Manager) alive() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return nil
}

// track records a view's creation (on) or release. A creation after Close
// is refused, so that no view escapes Close's release.
// track counts an open view; ErrClosed once the manager is closed.
func (m *Manager) track(v *staticState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.views[v] = struct{}{}
	m.created[v.kind]++
	return nil
}

// untrack forgets a released view.
func (m *Manager) untrack(v *staticState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.views, v)
}

// trackStream counts an open stream; ErrClosed once the manager is closed.
func (m *Manager) trackStream(s any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.streams[s] = struct{}{}
	return nil
}

// untrackStream forgets a closed stream.
func (m *Manager) untrackStream(s any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.streams, s)
}

func (m *Manager) noteLost() {
	m.mu.Lock()
	m.lost++
	m.mu.Unlock()
}

// Close removes the apply observer, wakes every Pull with ErrClosed and
// releases every static view still open.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	views := make([]*staticState, 0, len(m.views))
	for v := range m.views {
		views = append(views, v)
	}
	m.mu.Unlock()
	m.store.SetApplyObserver(nil)
	m.log.close()
	for _, v := range views {
		if v.release() {
			m.untrack(v)
		}
	}
}

// Stats is a point-in-time summary for metrics.
type Stats struct {
	ViewsOpen     map[Kind]int    // static views alive, streams' attached views included
	ViewsCreated  map[Kind]uint64 // since the manager started
	OldestViewAge time.Duration   // age of the oldest live view (0 if none)
	OldestViewSeq uint64          // its sequence number
	Streams       int             // live stream views (stateless and stateful)
	LostEvents    uint64          // times a stream fell behind the log
	LogHead       uint64          // operations ever logged
	LogRetained   uint64          // operations the log holds now
	LogCapacity   int
	LogLastSeq    uint64
	// LogPayloadBytes is the memory of the payloads (event references and
	// properties) the log holds, at most LogCapacity*PayloadBytesPerOp;
	// LogPayloadsDropped counts the operations logged without theirs
	// because the log was at that bound.
	LogPayloadBytes    uint64
	LogPayloadsDropped uint64
}

// Stats returns the manager's current figures.
func (m *Manager) Stats() Stats {
	head, oldest, last := m.log.state()
	st := Stats{ViewsOpen: map[Kind]int{}, ViewsCreated: map[Kind]uint64{}, LogHead: head,
		LogRetained: head - oldest, LogCapacity: m.cfg.LogCapacity, LogLastSeq: last}
	st.LogPayloadBytes, st.LogPayloadsDropped = m.log.payloads()
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for v := range m.views {
		st.ViewsOpen[v.kind]++
		if age := now.Sub(v.created); age > st.OldestViewAge {
			st.OldestViewAge, st.OldestViewSeq = age, v.seq
		}
	}
	for k, n := range m.created {
		st.ViewsCreated[k] = n
	}
	st.Streams = len(m.streams)
	st.LostEvents = m.lost
	return st
}

// AppliedAfter returns when the oldest operation newer than seq was
// applied, as far as the edge log still tells (an operation dropped from
// it is reported as the oldest one retained, which it is no younger than),
// and false when nothing newer than seq was applied: what a result as of
// seq is missing has waited since then.
func (m *Manager) AppliedAfter(seq uint64) (time.Time, bool) {
	t, ok := m.log.appliedAfter(seq)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, t), true
}
