package engine

import (
	"fmt"
	"sync"

	core "github.com/graphtide/graphtide/cgo"
)

// Store is an open graph store. All methods are safe for concurrent use.
type Store struct {
	// mu is held for reading by every call into the core and for writing by
	// Close, so the core handle is never freed under a running call.
	mu      sync.RWMutex
	c       *core.Store // Owned by Store; freed by Close. Protected by mu.
	dir     string
	inEdges bool
	snapMu  sync.Mutex
	snaps   map[*Snapshot]struct{} // live snapshots; Protected by snapMu.
}

// Open opens the store in dir, creating it if needed. It replays the
// manifest, removes files no record refers to, and verifies every file's
// header, footer and vertex index. opts may be nil. A store directory is
// locked against a second Open, in this process or another.
func Open(dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c, e := core.Open(dir, core.Options{
		MemGraphBytes:         uint64(o.MemGraphBytes),
		TargetSegmentBytes:    uint64(o.TargetSegmentBytes),
		SizeRatio:             uint32(o.SizeRatio),
		L0CompactionTrigger:   uint32(o.L0CompactionTrigger),
		MaxLevels:             uint32(o.MaxLevels),
		InEdges:               o.InEdges,
		DisableAutoCompaction: o.DisableAutoCompaction,
	})
	if e != nil {
		return nil, fmt.Errorf("open %s: %w", dir, fromCore(e))
	}
	return &Store{c: c, dir: dir, inEdges: o.InEdges, snaps: map[*Snapshot]struct{}{}}, nil
}

// Dir is the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// InEdges reports whether the store keeps in-edges.
func (s *Store) InEdges() bool { return s.inEdges }

// Close releases every live snapshot, stops background work and frees the
// store. Data not yet flushed is discarded: call Flush first to keep it.
// It waits for calls in flight.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return ErrClosed
	}
	s.snapMu.Lock()
	for sn := range s.snaps {
		sn.releaseLocked()
	}
	s.snaps = nil
	s.snapMu.Unlock()
	e := s.c.Close()
	s.c = nil
	if e != nil {
		return fromCore(e)
	}
	return nil
}

// with runs f on the open core store, holding it valid.
func (s *Store) with(what string, f func(c *core.Store) *core.Error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.c == nil {
		return ErrClosed
	}
	if e := f(s.c); e != nil {
		return fmt.Errorf("%s: %w", what, fromCore(e))
	}
	return nil
}

// Apply applies the batch atomically and returns its sequence number. It
// blocks while both MemGraphs are full (a write stall). The batch is visible
// to snapshots taken after Apply returns and durable once a flush covering
// it completes.
func (s *Store) Apply(b *Batch) (uint64, error) {
	if b.err != nil {
		return 0, b.err
	}
	var seq uint64
	err := s.with("apply", func(c *core.Store) (e *core.Error) {
		seq, e = c.Apply(b.ops, b.srcpos)
		return e
	})
	return seq, err
}

// Flush makes every applied batch durable, with the newest source position,
// and returns when the manifest is synced. It blocks.
func (s *Store) Flush() error {
	return s.with("flush", func(c *core.Store) *core.Error { return c.Flush() })
}

// FlushAsync starts making every applied batch durable and returns without
// waiting for it (it blocks only while the previous MemGraph is still
// being flushed). Everything up to the returned sequence number is durable
// once Metrics().DurableSeq reaches it.
func (s *Store) FlushAsync() (uint64, error) {
	var target uint64
	err := s.with("flush", func(c *core.Store) (e *core.Error) {
		target, e = c.FlushAsync()
		return e
	})
	return target, err
}

// CompactAll flushes, then compacts all data into the deepest level in use,
// dropping every version and tombstone no live snapshot can see. It blocks;
// writes and reads continue meanwhile.
func (s *Store) CompactAll() error {
	return s.with("compact", func(c *core.Store) *core.Error { return c.CompactAll() })
}

// VerifyAll reads every live file and checks every checksum.
func (s *Store) VerifyAll() error {
	return s.with("verify", func(c *core.Store) *core.Error { return c.VerifyAll() })
}

// SourcePosition returns the source position recorded by the newest durable
// flush (nil if none was ever recorded).
func (s *Store) SourcePosition() ([]byte, error) {
	var p []byte
	err := s.with("source position", func(c *core.Store) *core.Error {
		p = c.SourcePosition()
		return nil
	})
	return p, err
}
