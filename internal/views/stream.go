package views

import (
	"context"
	"fmt"
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
)

// LostError tells a stream consumer that operations it had not read were
// dropped from the edge log, or were more than its bound (it fell too far
// behind). The stream has skipped to the newest operation and emptied its
// window: rebuild any state from a static view, then keep pulling.
type LostError struct {
	Missed uint64 // operations skipped, from where it was to the head
}

func (e *LostError) Error() string {
	return fmt.Sprintf("views: stream fell behind and lost %d operations; resync from a static view", e.Missed)
}

// StreamOptions configure a stateless stream view.
type StreamOptions struct {
	// BatchSize: Pull returns once at least this many new operations exist
	// (default 1). It returns all that exist then, in whole batches.
	BatchSize int
	// Window, when set, keeps the last Window.Edges operations or those of
	// the last Window.Duration, and Pull hands out the ones that leave it.
	Window Window
	// MaxWindowEdges bounds what the window holds (default
	// DefaultMaxWindowEdges); beyond it the oldest leave early.
	MaxWindowEdges int
	// MaxBehind: a consumer this many operations behind the head loses
	// them (default and maximum: the log's capacity).
	MaxBehind int
	// Presence (topology streams only): each update says what was there
	// before each of its operations (TopoUpdate.Prior); and a stream
	// further behind than MaxBehind is not Lost for that, but gets its
	// operations MaxBehind at a time (TopoUpdate.Partial).
	Presence bool
	// InChunks (plain streams): a stream further behind than MaxBehind is
	// not Lost for that while the log still holds its operations, but
	// gets them MaxBehind at a time (StreamBatch.Seq then stays at the
	// last batch handed out whole).
	InChunks bool
	// Types, when not nil, keeps the edge operations of these edge types
	// only (vertex deletes, which remove edges of every type, are kept):
	// a stream hands out no others, a stateful stream's views read only
	// these types. Topology streams take their types from their Topology
	// (Manager.TopologyOf) instead.
	Types *engine.TypeSet
}

// ofTypes drops from es, in place, the edge operations whose type ts
// (nil: every type) does not hold.
func ofTypes(es []Edge, ts *engine.TypeSet) []Edge {
	if ts == nil {
		return es
	}
	out := es[:0]
	for _, e := range es {
		if e.Op.Kind == engine.OpDeleteVertex || ts.Has(e.Op.Type) {
			out = append(out, e)
		}
	}
	return out
}

func (o *StreamOptions) normalize(logCap int) error {
	if o.BatchSize == 0 {
		o.BatchSize = 1
	}
	if o.BatchSize < 1 {
		return fmt.Errorf("views: batch size must be positive, got %d", o.BatchSize)
	}
	if o.MaxBehind == 0 || o.MaxBehind > logCap {
		o.MaxBehind = logCap
	}
	if o.MaxBehind < 1 {
		return fmt.Errorf("views: max-behind must be positive, got %d", o.MaxBehind)
	}
	if o.BatchSize > o.MaxBehind {
		return fmt.Errorf("views: batch size %d exceeds what the stream may fall behind (%d operations)", o.BatchSize, o.MaxBehind)
	}
	return o.Window.validate()
}

// StreamBatch is what one Pull of a stateless stream returns.
type StreamBatch struct {
	Edges   []Edge // new operations, in sequence order (with a window: those that entered it)
	Late    []Edge // new operations that arrived late for an event-time window (Window), not in it
	Expired []Edge // operations that left the window, oldest first
	Seq     uint64 // every operation up to this sequence number is delivered
}

// Stream is a stateless stream view (GraphOne's reg-stream-view): a
// cursor into the edge log. Pull is for one consumer at a time.
type Stream struct {
	m    *Manager
	opts StreamOptions

	mu     sync.Mutex        // held by Pull and Close
	pos    uint64            // next log position to deliver; Protected by mu.
	seq    uint64            // newest seq delivered; Protected by mu.
	win    *ItemWindow[Edge] // nil without a window; Protected by mu.
	closed bool              // Protected by mu.
}

// Stream registers a stateless stream view that starts with the next
// operation applied.
func (m *Manager) Stream(o StreamOptions) (*Stream, error) {
	if err := o.normalize(m.cfg.LogCapacity); err != nil {
		return nil, err
	}
	head, _, last := m.log.state()
	s := &Stream{m: m, opts: o, pos: head, seq: last}
	if o.Window.enabled() {
		s.win = NewItemWindow[Edge](o.Window, o.MaxWindowEdges)
	}
	if err := m.trackStream(s); err != nil {
		return nil, err
	}
	return s, nil
}

// RestoredStream opens a stream for an analytic restored from a
// checkpoint, at log position from (what Topology.Restore or
// ResumePosition returned): its first Pull hands out the operations
// applied since, the restart's replay first.
func (m *Manager) RestoredStream(o StreamOptions, from uint64) (*Stream, error) {
	s, err := m.Stream(o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.pos = from
	s.mu.Unlock()
	return s, nil
}

// ResumePosition is the log position of the next operation to be applied:
// where streams restored from a checkpoint start when no topology is
// restored with them (see Topology.Restore).
func (m *Manager) ResumePosition() uint64 {
	head, _, _ := m.log.state()
	return head
}

// Pull blocks until at least BatchSize new operations exist (or ctx ends,
// or the manager closes: ErrClosed) and returns them with the operations
// that left the window. A *LostError means the stream fell behind; it has
// resumed at the head.
func (s *Stream) Pull(ctx context.Context) (*StreamBatch, error) { return s.pull(ctx, true) }

// PullNow is Pull without the wait: it returns what exists now, maybe no
// operation (a checkpoint's catch-up uses it).
func (s *Stream) PullNow(ctx context.Context) (*StreamBatch, error) { return s.pull(ctx, false) }

func (s *Stream) pull(ctx context.Context, wait bool) (*StreamBatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if wait {
		if err := s.m.log.waitNew(ctx, s.pos, s.opts.BatchSize); err != nil {
			return nil, err
		}
	}
	// INVARIANT: every operation of a seq up to last lies below head.
	head, _, last := s.m.log.state()
	b := &StreamBatch{}
	var ok bool
	to := head
	if s.opts.InChunks {
		to = min(head, s.pos+uint64(s.opts.MaxBehind))
	}
	if to-s.pos <= uint64(s.opts.MaxBehind) {
		b.Edges, ok = s.m.log.read(s.pos, to, nil)
	}
	if !ok {
		missed := head - s.pos // every op it skips, dropped or not
		s.pos = head
		if s.win != nil {
			s.win.Reset()
		}
		s.m.noteLost()
		return nil, &LostError{Missed: missed}
	}
	s.pos += uint64(len(b.Edges))
	if s.pos == head {
		s.seq = last // batches without operations too
	} else if n := len(b.Edges); n > 0 {
		// A chunk: its seq is that of the last batch it holds whole (the
		// next operation, if of the same seq, goes with the next chunk;
		// unchanged when the chunk is all of one batch).
		lastSeq := b.Edges[n-1].Seq
		next, ok := s.m.log.read(s.pos, s.pos+1, nil)
		if ok && (len(next) == 0 || next[0].Seq != lastSeq) {
			s.seq = lastSeq
		} else {
			for k := n - 1; k >= 0; k-- {
				if b.Edges[k].Seq != lastSeq {
					s.seq = b.Edges[k].Seq
					break
				}
			}
		}
	}
	b.Seq = s.seq
	b.Edges = ofTypes(b.Edges, s.opts.Types)
	if s.win != nil {
		b.Late, b.Expired = advance(s.win, b.Edges)
		if len(b.Late) > 0 { // Edges: the ones that entered
			in := b.Edges[:0]
			k := 0
			for _, e := range b.Edges {
				if k < len(b.Late) && e == b.Late[k] {
					k++
					continue
				}
				in = append(in, e)
			}
			b.Edges = in
		}
	}
	return b, nil
}

// Close unregisters the stream; a Pull in progress finishes first.
func (s *Stream) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.m.untrackStream(s)
}
