package engine

import (
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/graphtide/graphtide/internal/core"
	"github.com/graphtide/graphtide/internal/leakcheck"
)

// Direction selects out-edges or in-edges (in-edges need Options.InEdges).
type Direction uint32

// The directions.
const (
	Out Direction = 0
	In  Direction = 1
	// VertexRecords is the direction of the files that hold vertex
	// records (FileInfo.Dir). Reads take Out or In; Snapshot.Vertex
	// reads the records.
	VertexRecords Direction = 2
)

// edgeDir is nil for Out and In, the directions edge reads take (the
// core reads the records' cells in direction 2 too: Snapshot.Vertex).
func edgeDir(dir Direction) error {
	if dir != Out && dir != In {
		return fmt.Errorf("%w: direction must be out (0) or in (1), got %d", ErrInvalid, dir)
	}
	return nil
}

// Snapshot is a consistent read view pinned at one sequence number. It
// keeps returning the same contents while writes, flushes and compactions
// continue, until Release. A snapshot holds no MemGraph or file open; while
// it lives, flush and compaction keep the edge versions it can see.
// Safe for concurrent use.
type Snapshot struct {
	// The state is what the store keeps of an open snapshot (to release
	// it on Close); the Snapshot itself only its user holds, so that a
	// dropped one can be caught (package leakcheck, race builds).
	*snapState
	// types is the view's type filter (nil: every type), read by the core
	// during each call only. Set by OfTypes, never changed after.
	types *core.TypeSet
	// parent is the snapshot an OfTypes view was made from, kept
	// reachable while the view is (leakcheck watches the parent).
	parent *Snapshot
}

// TypeSet is a set of edge types (0 to MaxEdgeTypes-1), a read filter. The
// zero value is empty.
type TypeSet struct{ bits core.TypeSet }

// TypesOf is the set of the types ts.
func TypesOf(ts ...uint16) TypeSet {
	var s TypeSet
	for _, t := range ts {
		s.Add(t)
	}
	return s
}

// Add puts t in the set; a type of MaxEdgeTypes or more is ignored.
func (s *TypeSet) Add(t uint16) {
	if int(t) < MaxEdgeTypes {
		s.bits[t/64] |= 1 << (t % 64)
	}
}

// Has reports whether t is in the set.
func (s *TypeSet) Has(t uint16) bool { return int(t) < MaxEdgeTypes && s.bits[t/64]>>(t%64)&1 != 0 }

// Len is how many types the set holds.
func (s *TypeSet) Len() int {
	n := 0
	for _, w := range s.bits {
		n += bits.OnesCount64(w)
	}
	return n
}

// OfTypes is a view of the snapshot that reads only the edges whose type is
// in ts: degrees, neighbors, scans and gathers count and return those
// alone. It shares the snapshot's pin: releasing either releases both.
func (sn *Snapshot) OfTypes(ts TypeSet) *Snapshot {
	bits := ts.bits
	parent := sn
	if sn.parent != nil {
		parent = sn.parent
	}
	return &Snapshot{snapState: sn.snapState, types: &bits, parent: parent}
}

// Typed reports whether the view reads only some types (OfTypes).
func (sn *Snapshot) Typed() bool { return sn.types != nil }

// snapState is an open snapshot's state.
type snapState struct {
	store *Store
	// mu is held for reading by every read and for writing by release.
	mu  sync.RWMutex
	c   *core.Snapshot // Owned by Snapshot; freed on release. Protected by mu.
	seq uint64
	vb  uint64
	// Per-band bounds: one past the largest id below HighIDBase, and at or
	// above it (0 when the band is empty).
	low, high uint64
}

// HighIDBase splits vertex ids into two bands: ids given as numbers lie
// below it, and the key dictionary gives string keys ids from it up. The
// store keeps a bound per band (Snapshot.VertexBounds), so per-vertex state
// can be held densely for both.
const HighIDBase = core.HighIDBase

// Snapshot pins the newest committed sequence number (a fresh view).
func (s *Store) Snapshot() (*Snapshot, error) { return s.snapshot(false) }

// DurableSnapshot pins the newest durable sequence number
// (Metrics().DurableSeq): it sees only flushed data, so its reads skip the
// MemGraphs and a compacted range is copied out in bulk (a stale view).
func (s *Store) DurableSnapshot() (*Snapshot, error) { return s.snapshot(true) }

// SnapshotAt pins a past sequence number seq: the snapshot reads the
// store as it was when seq was the newest (Options.KeepHistory). seq must
// be between Metrics().OldestReadableSeq and the newest (ErrInvalid,
// naming both, otherwise).
func (s *Store) SnapshotAt(seq uint64) (*Snapshot, error) {
	var refused string // the core's words when seq is out of range
	sn, err := s.pin("snapshot", func(c *core.Store) (*core.Snapshot, *core.Error) {
		cs, e := c.SnapshotAt(seq)
		if e != nil && e.Code == core.CodeInvalid {
			refused = e.Msg
		}
		return cs, e
	})
	if refused != "" {
		// Which bounds, read now (the core checked them under its lock).
		if m, merr := s.Metrics(); merr == nil {
			return nil, &SeqError{Seq: seq, Oldest: m.OldestReadableSeq, Newest: m.LastSeq, Msg: refused}
		}
	}
	return sn, err
}

// SetHistoryFloor raises the history floor to seq (never lowers it):
// reads as of seqs below it may fail from the next flush or compaction on
// (Options.KeepHistory only).
func (s *Store) SetHistoryFloor(seq uint64) error {
	return s.with("set history floor", func(c *core.Store) *core.Error { return c.SetHistoryFloor(seq) })
}

func (s *Store) snapshot(durable bool) (*Snapshot, error) {
	return s.pin("snapshot", func(c *core.Store) (*core.Snapshot, *core.Error) { return c.Snapshot(durable) })
}

// pin makes a Snapshot of the core snapshot take gives.
func (s *Store) pin(what string, take func(c *core.Store) (*core.Snapshot, *core.Error)) (*Snapshot, error) {
	var sn *Snapshot
	err := s.with(what, func(c *core.Store) *core.Error {
		cs, e := take(c)
		if e != nil {
			return e
		}
		st := &snapState{store: s, c: cs, seq: cs.Seq(), vb: cs.VertexBound()}
		st.low, st.high = cs.VertexBounds()
		s.snapMu.Lock()
		s.snaps[st] = struct{}{}
		s.snapMu.Unlock()
		sn = &Snapshot{snapState: st}
		leakcheck.Watch(sn, "store snapshot", st.open)
		return nil
	})
	return sn, err
}

// Seq is the sequence number the snapshot sees: every batch with a sequence
// number <= Seq and none after.
func (sn *Snapshot) Seq() uint64 { return sn.seq }

// VertexBound is one past the largest vertex id the store had seen when the
// snapshot was taken: every vertex with an edge in the snapshot is below it.
func (sn *Snapshot) VertexBound() uint64 { return sn.vb }

// VertexBounds returns, per band, one past the largest vertex id the store
// had seen when the snapshot was taken: low for ids below HighIDBase, high
// for ids from it up (0 when a band is empty). Every vertex of the snapshot
// lies in [0, low) or [HighIDBase, high).
func (sn *Snapshot) VertexBounds() (low, high uint64) { return sn.low, sn.high }

// Release unpins the snapshot. Later calls on it return ErrReleased.
// Releasing twice, or after the store closed, is harmless.
func (sn *Snapshot) Release() {
	sn.store.mu.RLock()
	defer sn.store.mu.RUnlock()
	sn.store.snapMu.Lock()
	defer sn.store.snapMu.Unlock()
	if sn.store.snaps != nil {
		delete(sn.store.snaps, sn.snapState)
	}
	sn.releaseLocked()
}

// open reports whether the snapshot is not yet released.
func (st *snapState) open() bool {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.c != nil
}

// releaseLocked frees the handle. Requires store.snapMu held and the store
// open.
func (st *snapState) releaseLocked() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.c != nil {
		st.c.Release()
		st.c = nil
	}
}

// read runs f with the store and snapshot handles held valid.
func (sn *Snapshot) read(f func(c *core.Snapshot) error) error {
	sn.store.mu.RLock()
	defer sn.store.mu.RUnlock()
	sn.mu.RLock()
	defer sn.mu.RUnlock()
	if sn.c == nil {
		return ErrReleased
	}
	return f(sn.c)
}

// Degree is the number of dir-edges of v visible in the snapshot.
func (sn *Snapshot) Degree(v uint64, dir Direction) (uint64, error) {
	if err := edgeDir(dir); err != nil {
		return 0, err
	}
	var d uint64
	err := sn.read(func(c *core.Snapshot) error {
		var e *core.Error
		if d, e = c.Degree(v, uint32(dir), sn.types); e != nil {
			return fmt.Errorf("degree of %d: %w", v, fromCore(e))
		}
		return nil
	})
	return d, err
}

// Neighbors returns v's dir-neighbors sorted by id, reusing dsts (and
// weights) if they have room. Weights are filled only when weights is not
// nil; otherwise the returned weights are nil. A neighbor joined to v by
// edges of several types comes once per type (NeighborsPage gives the types).
func (sn *Snapshot) Neighbors(v uint64, dir Direction, dsts []uint64, weights []float64) ([]uint64, []float64, error) {
	if err := edgeDir(dir); err != nil {
		return nil, nil, err
	}
	withW := weights != nil
	err := sn.read(func(c *core.Snapshot) error {
		dsts = dsts[:cap(dsts)]
		for {
			if withW {
				weights = fit(weights, len(dsts))
			}
			n, e := c.Neighbors(v, uint32(dir), sn.types, dsts, weights, nil, nil)
			if e != nil && e.Code == core.CodeBuffer && n > len(dsts) {
				dsts = make([]uint64, n)
				continue
			}
			if e != nil {
				return fmt.Errorf("neighbors of %d: %w", v, fromCore(e))
			}
			dsts = dsts[:n]
			if withW {
				weights = weights[:n]
			}
			return nil
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return dsts, weights, nil
}

// ScanBuffer receives the neighbors of a vertex range. Vertex i of the last
// Scan is Vertices[i] with neighbors Dsts[Offsets[i]:Offsets[i+1]] (and
// their weights, types and times at the same positions in the Columns in
// use).
type ScanBuffer struct {
	Vertices []uint64
	Offsets  []uint64
	Dsts     []uint64
	Columns
}

// Columns are a read buffer's optional columns, at the same positions as
// its Dsts, each filled when not nil: the edges' weights, types and event
// times (Unix µs; 0: none). An accumulate edge's weight is the sum of its
// events' weights and its time the greatest event time (aggregate.go).
// The edge reads that return the edges' aggregates (Edge,
// NeighborsPageExt) fill the rest: Counts (events folded into the edge; 0:
// a replace edge), FirstTimes (the least event time of its events; 0:
// none), and the payload of its newest event (or replace upsert): Refs
// (its event reference) and Props (its property document's JSON; "":
// none).
type Columns struct {
	Weights    []float64
	Types      []uint16
	Times      []int64
	Counts     []uint64
	FirstTimes []int64
	Refs       []string
	Props      []string
}

// fit gives every column in use length n.
func (c *Columns) fit(n int) {
	if c.Weights != nil {
		c.Weights = fit(c.Weights, n)
	}
	if c.Types != nil {
		c.Types = fit(c.Types, n)
	}
	if c.Times != nil {
		c.Times = fit(c.Times, n)
	}
	if c.Counts != nil {
		c.Counts = fit(c.Counts, n)
	}
	if c.FirstTimes != nil {
		c.FirstTimes = fit(c.FirstTimes, n)
	}
	if c.Refs != nil {
		c.Refs = fit(c.Refs, n)
	}
	if c.Props != nil {
		c.Props = fit(c.Props, n)
	}
}

// Trim cuts every column in use to its first n.
func (c *Columns) Trim(n int) {
	if c.Weights != nil {
		c.Weights = c.Weights[:n]
	}
	if c.Types != nil {
		c.Types = c.Types[:n]
	}
	if c.Times != nil {
		c.Times = c.Times[:n]
	}
	if c.Counts != nil {
		c.Counts = c.Counts[:n]
	}
	if c.FirstTimes != nil {
		c.FirstTimes = c.FirstTimes[:n]
	}
	if c.Refs != nil {
		c.Refs = c.Refs[:n]
	}
	if c.Props != nil {
		c.Props = c.Props[:n]
	}
}

// NewScanBuffer makes a buffer for up to maxVertices vertices and maxEdges
// edges per Scan call, with weights when asked.
func NewScanBuffer(maxVertices, maxEdges int, weights bool) *ScanBuffer {
	if maxVertices < 1 {
		maxVertices = 1
	}
	b := &ScanBuffer{
		Vertices: make([]uint64, maxVertices),
		Offsets:  make([]uint64, maxVertices+1),
		Dsts:     make([]uint64, maxEdges),
	}
	if weights {
		b.Weights = make([]float64, maxEdges)
	}
	return b
}

// Prepare readies b for a scan (Snapshot.Scan's, or one that follows its
// contract over another graph): Vertices at its capacity (at least 1,024:
// as many vertices as a call may report) and Offsets one longer.
func (b *ScanBuffer) Prepare() {
	b.Vertices = b.Vertices[:cap(b.Vertices)]
	if len(b.Vertices) == 0 {
		b.Vertices = make([]uint64, 1024)
	}
	b.Offsets = fit(b.Offsets, len(b.Vertices)+1)
}

// Finish ends a scan that filled nv vertices and ne edges: every slice
// cut to what was filled.
func (b *ScanBuffer) Finish(nv, ne int) {
	b.Vertices = b.Vertices[:nv]
	b.Offsets = b.Offsets[:nv+1]
	b.Dsts = b.Dsts[:ne]
	b.Trim(ne)
}

// Len is the number of vertices the last Scan filled.
func (b *ScanBuffer) Len() int { return len(b.Vertices) }

// Neighbors of the i-th vertex of the last Scan.
func (b *ScanBuffer) Neighbors(i int) []uint64 { return b.Dsts[b.Offsets[i]:b.Offsets[i+1]] }

// Scan fills buf with the dir-neighbors of the vertices in [lo, hi) that
// have at least one, in vertex order, as many as fit, and returns the first
// vertex not yet reported (hi when the range is done). A vertex never
// splits across calls; one whose edges exceed the buffer grows it. One call
// crosses into the core once.
func (sn *Snapshot) Scan(lo, hi uint64, dir Direction, buf *ScanBuffer) (uint64, error) {
	if err := edgeDir(dir); err != nil {
		return lo, err
	}
	var next uint64
	err := sn.read(func(c *core.Snapshot) error {
		buf.Prepare()
		buf.Dsts = buf.Dsts[:cap(buf.Dsts)]
		for {
			buf.fit(len(buf.Dsts))
			nv, ne, nx, e := c.Scan(lo, hi, uint32(dir), sn.types, buf.Vertices, buf.Offsets, buf.Dsts, buf.Weights, buf.Types, buf.Times)
			if e != nil && e.Code == core.CodeBuffer && ne > len(buf.Dsts) {
				buf.Dsts = make([]uint64, ne)
				continue
			}
			if e != nil {
				return fmt.Errorf("scan [%d,%d): %w", lo, hi, fromCore(e))
			}
			buf.Finish(nv, ne)
			next = nx
			return nil
		}
	})
	return next, err
}

// GatherBuffer receives the neighbors of a list of vertices. After Gather
// returned done, vertex Vertices[i] (i < done) has neighbors
// Dsts[Offsets[i]:Offsets[i+1]] (and their weights, types and times at the
// same positions in the Columns in use).
type GatherBuffer struct {
	Offsets []uint64
	Dsts    []uint64
	Columns
}

// fit returns s with length n, reallocated only when its capacity is short.
func fit[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// NewGatherBuffer makes a buffer for about maxEdges edges per Gather call,
// with weights when asked. It grows when one vertex needs more.
func NewGatherBuffer(maxEdges int, weights bool) *GatherBuffer {
	b := &GatherBuffer{Dsts: make([]uint64, max(maxEdges, 1))}
	if weights {
		b.Weights = make([]float64, len(b.Dsts))
	}
	return b
}

// Neighbors of the i-th vertex of the last Gather.
func (b *GatherBuffer) Neighbors(i int) []uint64 { return b.Dsts[b.Offsets[i]:b.Offsets[i+1]] }

// Gather fills buf with the dir-neighbors (sorted by id) of as many of
// vids, from the first, as fit, and returns how many it filled: call again
// with vids[done:] for the rest. Vertices without edges get an empty list.
// One call crosses into the core once, however many vertices it fills; a
// vertex whose edges exceed the buffer grows it.
func (sn *Snapshot) Gather(vids []uint64, dir Direction, buf *GatherBuffer) (int, error) {
	done, _, err := sn.gather(vids, dir, buf, math.MaxInt)
	return done, err
}

// EdgeCursor names one edge of a vertex's list: its neighbor and type.
// A vertex's edges come in (Dst ascending, Type descending) order.
type EdgeCursor struct {
	Dst  uint64
	Type uint16
}

// Page is one page of a vertex's edges: neighbors, their weights (when
// asked), types and event times (Unix µs; 0: none) at the same positions,
// and whether more remain.
type Page struct {
	Dsts []uint64
	Columns
	More bool
}

// Last is the cursor of the page's last edge, from which the next page
// starts; false for an empty page.
func (p *Page) Last() (EdgeCursor, bool) {
	if len(p.Dsts) == 0 {
		return EdgeCursor{}, false
	}
	n := len(p.Dsts) - 1
	return EdgeCursor{Dst: p.Dsts[n], Type: p.Types[n]}, true
}

// NeighborsPage returns up to limit of v's dir-edges, in (neighbor id
// ascending, type descending) order, those past the edge after when after
// is not nil, with their weights when asked and their types. Its memory is
// bounded by limit whatever v's degree, and a compacted vertex is found by
// binary search.
func (sn *Snapshot) NeighborsPage(v uint64, dir Direction, after *EdgeCursor, limit int, weights bool) (Page, error) {
	if err := edgeDir(dir); err != nil {
		return Page{}, err
	}
	if limit < 1 {
		return Page{}, fmt.Errorf("%w: page limit must be positive, got %d", ErrInvalid, limit)
	}
	// The buffers start small and double while the page fills them (each
	// refill reads on from the last edge read), so that a vertex of a few
	// edges does not cost a buffer of limit entries.
	size := min(limit, pageStart)
	p := Page{Dsts: make([]uint64, size), Columns: Columns{Types: make([]uint16, size), Times: make([]int64, size)}}
	if weights {
		p.Weights = make([]float64, size)
	}
	var a EdgeCursor
	if after != nil {
		a = *after
	}
	hasAfter, got := after != nil, 0
	err := sn.read(func(c *core.Snapshot) error {
		for {
			w := p.Weights
			if w != nil {
				w = w[got:]
			}
			n, more, e := c.NeighborsAfter(v, uint32(dir), sn.types, a.Dst, a.Type, hasAfter, p.Dsts[got:], w, p.Types[got:], p.Times[got:])
			if e != nil {
				return fmt.Errorf("neighbors of %d: %w", v, fromCore(e))
			}
			got += n
			p.More = more
			if !more || got == limit {
				return nil
			}
			// Full, and more remain: room for more, past the last edge.
			a, hasAfter = EdgeCursor{Dst: p.Dsts[got-1], Type: p.Types[got-1]}, true
			size = min(limit, 2*size)
			p.Dsts = grow(p.Dsts, size)
			p.Types, p.Times = grow(p.Types, size), grow(p.Times, size)
			if p.Weights != nil {
				p.Weights = grow(p.Weights, size)
			}
		}
	})
	if err != nil {
		return Page{}, err
	}
	p.Dsts = p.Dsts[:got]
	p.Trim(got)
	return p, nil
}

// pageStart is the buffer a page of neighbors starts with.
const pageStart = 64

// grow returns s with length n (n >= len(s)), its elements kept.
func grow[T any](s []T, n int) []T {
	out := make([]T, n)
	copy(out, s)
	return out
}

// Edge looks up the edges from src to dst visible in the snapshot, of
// its types: one per edge type that links them, in type descending order,
// their weights, types, event times and aggregates (every column of
// Columns) at the same positions; empty columns when there is none. It
// searches src's edges in each file and MemGraph by binary search, so its
// cost follows the number of files, not src's degree.
func (sn *Snapshot) Edge(src, dst uint64) (Columns, error) {
	c := Columns{Weights: make([]float64, 1), Types: make([]uint16, 1), Times: make([]int64, 1),
		Counts: make([]uint64, 1), FirstTimes: make([]int64, 1), Refs: make([]string, 1), Props: make([]string, 1)}
	x := make([]core.EdgeExt, 1)
	pay := make([]byte, 512)
	err := sn.read(func(cs *core.Snapshot) error {
		for {
			n, pl, e := cs.EdgeExt(src, dst, sn.types, c.Weights, c.Types, c.Times, x, pay)
			if e != nil && e.Code == core.CodeBuffer && (n > len(c.Weights) || pl > len(pay)) {
				// Several types link them, or their payloads are long:
				// room for every one.
				c.fit(max(n, len(c.Weights)))
				x = fit(x, len(c.Weights))
				pay = fit(pay, max(pl, len(pay)))
				continue
			}
			if e != nil {
				return fmt.Errorf("edge %d -> %d: %w", src, dst, fromCore(e))
			}
			c.Trim(n)
			if err := sn.store.fillExt(&c, x[:n], pay); err != nil {
				return fmt.Errorf("edge %d -> %d: %w", src, dst, err)
			}
			return nil
		}
	})
	if err != nil {
		return Columns{}, err
	}
	return c, nil
}

// EdgeCounts sets counts[i] to the number of edges from srcs[i] to
// dsts[i] visible in the snapshot (one per type of its type set that links
// them; 0: none), for every i: a batch of lookups in one call to the core,
// which allocates nothing per lookup. srcs, dsts and counts must have the
// same length.
func (sn *Snapshot) EdgeCounts(srcs, dsts []uint64, counts []uint32) error {
	if len(dsts) != len(srcs) || len(counts) != len(srcs) {
		return fmt.Errorf("%w: edge counts of %d sources, %d destinations into %d counts", ErrInvalid, len(srcs), len(dsts), len(counts))
	}
	return sn.read(func(c *core.Snapshot) error {
		if e := c.EdgeCounts(srcs, dsts, sn.types, counts); e != nil {
			return fmt.Errorf("edge counts: %w", fromCore(e))
		}
		return nil
	})
}

// GatherLimit is Gather reading at most maxEdges edges: it fills buf
// (growing it as a vertex within the limit needs) with as many of vids,
// from the first, as fit within maxEdges. When the first vertex alone needs
// more, it returns done 0 and that vertex's edge count as need (need is 0
// otherwise).
func (sn *Snapshot) GatherLimit(vids []uint64, dir Direction, buf *GatherBuffer, maxEdges int) (done, need int, err error) {
	return sn.gather(vids, dir, buf, max(maxEdges, 0))
}

// gather is Gather and GatherLimit: one call into the core per buffer
// size, growing the buffer for a first vertex within maxEdges.
func (sn *Snapshot) gather(vids []uint64, dir Direction, buf *GatherBuffer, maxEdges int) (done, need int, err error) {
	if err := edgeDir(dir); err != nil {
		return 0, 0, err
	}
	err = sn.read(func(c *core.Snapshot) error {
		if cap(buf.Offsets) < len(vids)+1 {
			buf.Offsets = make([]uint64, len(vids)+1)
		}
		buf.Offsets = buf.Offsets[:len(vids)+1]
		if cap(buf.Dsts) == 0 {
			buf.Dsts = make([]uint64, 1024)
		}
		for {
			ecap := min(cap(buf.Dsts), maxEdges)
			buf.Dsts = buf.Dsts[:ecap]
			buf.fit(ecap)
			d, ne, e := c.Gather(vids, uint32(dir), sn.types, buf.Offsets, buf.Dsts, buf.Weights, buf.Types, buf.Times)
			if e != nil && e.Code == core.CodeBuffer {
				if ne <= maxEdges && ne > cap(buf.Dsts) {
					buf.Dsts = make([]uint64, ne) // the first vertex, within the limit
					continue
				}
				need = ne
				buf.Offsets = buf.Offsets[:1]
				return nil
			}
			if e != nil {
				return fmt.Errorf("gather: %w", fromCore(e))
			}
			done = d
			buf.Offsets = buf.Offsets[:d+1]
			return nil
		}
	})
	return done, need, err
}
