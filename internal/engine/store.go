package engine

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/core"
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
	snaps   map[*snapState]struct{} // live snapshots; Protected by snapMu.

	// applyMu is held by Apply from the core's apply to the observer call,
	// so that the observer sees batches in sequence order. (The core
	// serializes applies anyway, so it costs no concurrency.)
	applyMu  sync.Mutex
	observer atomic.Pointer[ApplyObserver]
	// annex is SetAnnex's function (nil: none); lastAnnex and lastPos the
	// annex and source position recorded with the newest batch (at Open:
	// the durable ones). See annex.go. Protected by applyMu.
	annex              func() []byte
	lastAnnex, lastPos []byte
	// opsBuf and payBuf are Apply's copy of a batch's ops marked for the
	// core and their payload buffer (Batch.coreOps). Protected by applyMu.
	opsBuf []core.Op
	payBuf []byte

	aggs aggregates   // edge types' aggregates (aggregate.go)
	srcs eventSources // the numbered event sources (sources.go)
}

// ApplyObserver is called with every batch the store applies, in sequence
// order, after the batch is visible to new snapshots and before Apply
// returns. The batch must not be retained or modified after the call. It
// runs on the writer's goroutine, so it must be quick and must not call
// Apply.
type ApplyObserver func(seq uint64, b *Batch)

// SetApplyObserver installs f (nil removes it). Batches applied before the
// call are not reported.
func (s *Store) SetApplyObserver(f ApplyObserver) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if f == nil {
		s.observer.Store(nil)
		return
	}
	s.observer.Store(&f)
}

// Open opens the store in dir, creating it if needed. It replays the
// manifest and verifies every live file's header, footer and vertex index.
// opts may be nil. A store directory is locked against a second Open, in
// this process or another (read-only opens share it).
//
// Recovery never destroys what might be data. A damaged manifest record, a
// missing or mismatched live file, or a segment file that is neither live
// nor provably garbage is a *CorruptionError naming the file and byte
// offset, and nothing is changed; a directory holding segment files but no
// MANIFEST is refused, never initialised. Only then does a read-write Open
// cut a torn manifest tail (a final record provably cut short by a crash)
// and delete the files the manifest proves garbage (written by a flush or
// compaction that never recorded them, or removed by a recorded
// compaction).
func Open(dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c, e := core.Open(dir, core.Options{
		MemGraphBytes:            uint64(o.MemGraphBytes),
		TargetSegmentBytes:       uint64(o.TargetSegmentBytes),
		SizeRatio:                uint32(o.SizeRatio),
		L0CompactionTrigger:      uint32(o.L0CompactionTrigger),
		MaxLevels:                uint32(o.MaxLevels),
		InEdges:                  o.InEdges,
		DisableAutoCompaction:    o.DisableAutoCompaction,
		InEdgesAsStored:          o.InEdgesAsStored || o.ReadOnly,
		ReadOnly:                 o.ReadOnly,
		TestPauseAt:              o.testPauseAt,
		TestManifestRewriteBytes: o.testManifestRewriteBytes,
		KeepHistory:              o.KeepHistory || o.ReadOnly,
		HistorySeqs:              o.HistorySeqs,
	})
	if e != nil {
		return nil, fmt.Errorf("open %s: %w", dir, fromCore(e))
	}
	s := &Store{c: c, dir: dir, inEdges: c.InEdges(), snaps: map[*snapState]struct{}{}}
	s.lastAnnex, s.lastPos = splitAnnex(c.SourcePosition())
	// The aggregates the store records, then the configured ones: all
	// checked before any is recorded, so a refused configuration changes
	// nothing.
	if e := s.loadSources(c); e != nil {
		c.Close()
		return nil, fmt.Errorf("open %s: %w", dir, fromCore(e))
	}
	if e := s.loadAggregates(c); e != nil {
		c.Close()
		return nil, fmt.Errorf("open %s: %w", dir, fromCore(e))
	}
	ts := make([]uint16, 0, len(o.Aggregates))
	for t := range o.Aggregates {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	for _, t := range ts {
		if err := s.CheckAggregate(t, o.Aggregates[t]); err != nil {
			c.Close()
			return nil, fmt.Errorf("open %s: option Aggregates: %w", dir, err)
		}
	}
	for _, t := range ts {
		a := o.Aggregates[t]
		if e := c.SetTypeAggregate(uint32(t), a.Accumulate, a.Retain.Microseconds()); e != nil {
			c.Close()
			return nil, fmt.Errorf("open %s: option Aggregates: %w", dir, fromCore(e))
		}
		s.setAggregate(t, a)
	}
	return s, nil
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
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	return s.applyLocked(b)
}

// applyLocked is Apply with applyMu held.
func (s *Store) applyLocked(b *Batch) (uint64, error) {
	var seq uint64
	if b.sources {
		if err := s.resolveSources(b); err != nil {
			return 0, err
		}
	}
	ops := b.coreOps(&s.aggs, s.opsBuf, &s.payBuf)
	if len(b.vrecs) == 0 && len(ops) > 0 && &ops[0] != &b.ops[0] {
		s.opsBuf = ops // reused by the next batch that needs marking
	}
	rec, commit := s.recordFor(b)
	err := s.with("apply", func(c *core.Store) (e *core.Error) {
		seq, e = c.ApplyEx(ops, s.payBuf, rec)
		return e
	})
	if err == nil {
		commit()
	}
	// INVARIANT: applyMu is held from the core's Apply to here, so the
	// observer sees seqs in increasing order, and SetApplyObserver (which
	// takes applyMu) never lands in the middle of an Apply.
	if err == nil {
		if f := s.observer.Load(); f != nil {
			(*f)(seq, b)
		}
	}
	return seq, err
}

// Flush makes every applied batch durable, with the newest source position,
// and returns when the manifest is synced. It blocks.
func (s *Store) Flush() error {
	return s.with("flush", func(c *core.Store) *core.Error { return c.Flush() })
}

// FlushAsync starts making every applied batch durable and returns without
// waiting for it, and without stalling writers when a flush is already
// running (the next one then starts when that one ends). Everything up to
// the returned sequence number is durable once DurableSeq reaches it.
func (s *Store) FlushAsync() (uint64, error) {
	var target uint64
	err := s.with("flush", func(c *core.Store) (e *core.Error) {
		target, e = c.FlushAsync()
		return e
	})
	return target, err
}

// DurableSeq is the newest sequence number covered by a completed flush
// (Metrics().DurableSeq without gathering the other metrics).
func (s *Store) DurableSeq() (uint64, error) {
	var d uint64
	err := s.with("durable seq", func(c *core.Store) *core.Error {
		d = c.DurableSeq()
		return nil
	})
	return d, err
}

// CompactAll flushes, then compacts all data into the deepest level in use,
// dropping every version and tombstone no live snapshot can see. It blocks;
// writes and reads continue meanwhile.
func (s *Store) CompactAll() error {
	return s.with("compact", func(c *core.Store) *core.Error { return c.CompactAll() })
}

// FileInfo describes one live file of the store.
type FileInfo struct {
	ID       uint64
	Name     string // file name in the store directory
	Level    int    // 0 = L0
	Dir      Direction
	MinSrc   uint64
	MaxSrc   uint64
	MaxDst   uint64
	Vertices uint64 // source vertices with entries
	Entries  uint64 // edge versions, tombstones included
	Bytes    uint64
	MinSeq   uint64
	MaxSeq   uint64
	// Layout flags of the file (see internal/core/segment.h).
	Dense, Versions, Weights, Dst32, MultiVersion, Tombstones bool
	// Types: the file has a type column (some edge's type is not 0);
	// Times: a time column (some version has an event time).
	Types, Times bool
	// Bloom: an edge filter (out-edge files of format 3), which lets an
	// edge lookup skip the file when it holds no version of the edge.
	Bloom bool
	// Counts: a count column, and a first-time one unless every first
	// time is its version's time (some version is an event of an
	// accumulate type); Payloads: a payload column (some version has an
	// event reference or properties). Format 5 (or 4, from an older
	// build).
	Counts, Payloads bool
}

// Files lists the live files: for out-edges then in-edges, L0 newest first,
// then each level by vertex range.
func (s *Store) Files() ([]FileInfo, error) {
	var fs []core.FileInfo
	err := s.with("files", func(c *core.Store) *core.Error {
		fs = c.Files()
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, len(fs))
	for i, f := range fs {
		out[i] = FileInfo{ID: f.ID, Name: fmt.Sprintf("%08d.seg", f.ID), Level: int(f.Level), Dir: Direction(f.Dir),
			MinSrc: f.MinSrc, MaxSrc: f.MaxSrc, MaxDst: f.MaxDst, Vertices: f.Vertices, Entries: f.Entries,
			Bytes: f.Bytes, MinSeq: f.MinSeq, MaxSeq: f.MaxSeq,
			Dense: f.Flags&core.FileDense != 0, Versions: f.Flags&core.FileVersions != 0,
			Weights: f.Flags&core.FileWeights != 0, Dst32: f.Flags&core.FileDst32 != 0,
			MultiVersion: f.Flags&core.FileMultiVersion != 0, Tombstones: f.Flags&core.FileTombstones != 0,
			Types: f.Flags&core.FileTypes != 0, Times: f.Flags&core.FileTimes != 0, Bloom: f.Flags&core.FileBloom != 0,
			Counts: f.Flags&core.FileCounts != 0, Payloads: f.Flags&core.FilePayloads != 0}
	}
	return out, nil
}

// VerifyAll reads every live file and checks every checksum.
func (s *Store) VerifyAll() error {
	return s.with("verify", func(c *core.Store) *core.Error { return c.VerifyAll() })
}

// SourcePosition returns the source position recorded by the newest durable
// flush (nil if none was ever recorded). The annex recorded with it
// (SetAnnex) is not part of it.
func (s *Store) SourcePosition() ([]byte, error) {
	raw, err := s.rawSourcePosition()
	if err != nil {
		return nil, err
	}
	_, pos := splitAnnex(raw)
	if len(pos) == 0 {
		return nil, nil
	}
	return pos, nil
}

// rawSourcePosition is what the newest durable flush recorded: a source
// position, or an envelope of an annex and one.
func (s *Store) rawSourcePosition() ([]byte, error) {
	var p []byte
	err := s.with("source position", func(c *core.Store) *core.Error {
		p = c.SourcePosition()
		return nil
	})
	return p, err
}
