package views

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
)

// vertexIndex is a Manager's one vertex index, shared by every view and
// so by every analytic: the id space of a view (StaticView.IDs) is a
// snapshot of it. It is built lazily, on the first IDs call, from a scan of
// that view, and from then on follows the edge log: a later view's space
// takes in the endpoints of the upserts logged up to its sequence number.
// When the log no longer holds what it needs (it wrapped), the index scans
// the view again.
//
// INVARIANTS (under mu): every vertex with an edge in the graph at any
// sequence number in [base, covered] has an index in gen (a view older
// than base is scanned on its own, see older); gen holds every id of every
// earlier generation (a vertex deleted keeps its index: the index grows with
// the vertices that had an edge while the manager runs, and restarts with
// the manager); when posOK, pos is the log position of the first operation
// with a sequence number above covered.
//
// Writers (views asking for their space) take mu; readers of a space never
// do (see IDSpace). Memory per vertex: 1 bit per id of the identity regions
// (at most 2 per vertex present there) and, per hashed vertex, 8 bytes in
// the sparse list plus a 16-byte table slot at load 0.35 to 0.7 (23 to 46
// bytes): at most about 54 bytes per hashed vertex, with the list's append
// slack.
type vertexIndex struct {
	m *Manager

	mu      sync.Mutex
	gen     *idGen // nil until the first build; Protected by mu.
	base    uint64 // Protected by mu.
	covered uint64 // Protected by mu.
	pos     uint64 // Protected by mu.
	posOK   bool   // Protected by mu.
	stats   IndexStats
}

// IndexStats describe a Manager's vertex index.
type IndexStats struct {
	Vertices    int    // vertex indexes (identity regions counted whole)
	Hashed      int    // vertices indexed through the hash table
	Dense, Keys uint64 // sizes of the identity regions
	Bytes       int64  // memory held by the current generation
	Generations uint64 // layouts built (the first, and each rebuild)
	Scans       uint64 // full scans of a view (the first build, and after the log wrapped)
	Covered     uint64 // sequence number up to which every vertex is indexed
}

// IndexStats returns the vertex index's figures.
func (m *Manager) IndexStats() IndexStats {
	x := &m.index
	x.mu.Lock()
	defer x.mu.Unlock()
	st := x.stats
	st.Covered = x.covered
	if g := x.gen; g != nil {
		st.Vertices, st.Hashed, st.Dense, st.Keys, st.Bytes = g.len(), len(g.sparse), g.dense, g.keys, g.bytes()
	}
	return st
}

// logChunk is how many logged operations the index copies out of the log
// at a time (about 2.5 MiB).
const logChunk = 1 << 16

// spaceFor returns the id space for a view at v's sequence number.
func (x *vertexIndex) spaceFor(v *StaticView) (IDSpace, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gen != nil && v.seq >= x.base && v.seq <= x.covered {
		return x.gen.space(), nil
	}
	if x.gen != nil && v.seq < x.base {
		if err := x.older(v); err != nil {
			return IDSpace{}, err
		}
		return x.gen.space(), nil
	}
	if x.gen != nil && x.posOK {
		ok, err := x.catchUp(v.seq)
		if err != nil {
			return IDSpace{}, err
		}
		if ok {
			if err := x.maybeRebuild(); err != nil {
				return IDSpace{}, err
			}
			return x.gen.space(), nil
		}
	}
	if v.typed {
		// INVARIANT: the index holds every vertex of the store, of every
		// type (the topologies of all type sets share it): it is built from
		// a view of every type, at least as new as v, whose space covers
		// v's vertices (older adds them when v is older than it).
		u, err := x.m.Static(StaticOptions{Kind: Fresh})
		if err != nil {
			return IDSpace{}, err
		}
		defer u.Release()
		if err := x.scan(u); err != nil {
			return IDSpace{}, err
		}
		if v.seq < x.base {
			if err := x.older(v); err != nil {
				return IDSpace{}, err
			}
		}
		return x.gen.space(), nil
	}
	if err := x.scan(v); err != nil {
		return IDSpace{}, err
	}
	return x.gen.space(), nil
}

// catchUp adds the endpoints of the logged upserts up to seq. It returns
// false when the log no longer holds them (the index must scan).
func (x *vertexIndex) catchUp(seq uint64) (bool, error) {
	l := x.m.log
	// Apply logs a batch just after making it visible: a fresh view may be
	// a moment ahead of the log.
	if err := l.wait(context.Background(), func(_, last uint64) bool { return last >= seq }); err != nil {
		return false, err
	}
	end, ok := l.posAfterSeq(x.pos, seq)
	if !ok {
		return false, nil
	}
	if ok, err := x.addLogged(x.pos, end); !ok || err != nil {
		return false, err
	}
	x.pos, x.covered = end, seq
	return true, nil
}

// addLogged adds the endpoints of the upserts logged at positions
// [from, to); false when the log no longer holds them all.
func (x *vertexIndex) addLogged(from, to uint64) (bool, error) {
	var buf []Edge
	for p := from; p < to; {
		end := min(to, p+logChunk)
		var ok bool
		if buf, ok = x.m.log.read(p, end, buf[:0]); !ok {
			return false, nil
		}
		for _, e := range buf {
			if e.Op.Kind != engine.OpUpsert {
				continue // deletes make no vertex
			}
			if err := x.gen.add(e.Op.Src); err != nil {
				return false, err
			}
			if err := x.gen.add(e.Op.Dst); err != nil {
				return false, err
			}
		}
		p = end
	}
	return true, nil
}

// scan rebuilds the index from every vertex with an edge in v, keeping the
// ids of the current generation.
func (x *vertexIndex) scan(v *StaticView) error {
	c := newIDCollector(v.low, v.high)
	if x.gen != nil {
		for _, id := range x.gen.ids(nil) {
			c.add(id)
		}
	}
	err := v.Each(engine.Out, false, func(u uint64, nbrs []uint64, _ []float64) {
		c.add(u)
		for _, w := range nbrs {
			c.add(w)
		}
	})
	if err != nil {
		return fmt.Errorf("views: building the vertex index: %w", err)
	}
	g, err := buildGen(c.sorted())
	if err != nil {
		return err
	}
	x.gen = g
	x.stats.Generations++
	x.stats.Scans++
	x.base, x.covered = v.seq, v.seq
	x.pos, x.posOK = x.m.log.firstAfter(v.seq)
	return nil
}

// older adds the vertices of v, a view older than base (a stale view
// taken after the index was built from a fresh one): from a scan of v,
// and, when the log still holds the operations from v up to base, from
// those too, so that the index then holds every view from v's on.
func (x *vertexIndex) older(v *StaticView) error {
	var err error
	add := func(u uint64) {
		if err == nil {
			err = x.gen.add(u)
		}
	}
	serr := v.Each(engine.Out, false, func(u uint64, nbrs []uint64, _ []float64) {
		add(u)
		for _, w := range nbrs {
			add(w)
		}
	})
	x.stats.Scans++
	if serr != nil {
		return fmt.Errorf("views: adding an older view to the vertex index: %w", serr)
	}
	if err != nil {
		return err
	}
	l := x.m.log
	from, ok := l.firstAfter(v.seq)
	if !ok {
		return x.maybeRebuild()
	}
	end, ok := l.posAfterSeq(from, x.base)
	if !ok {
		return x.maybeRebuild()
	}
	ok, err = x.addLogged(from, end)
	if err != nil {
		return err
	}
	if ok {
		x.base = v.seq
	}
	return x.maybeRebuild()
}

// maybeRebuild lays out a new generation when the hash part grew by half
// the index since the last look and the identity regions would grow: each
// rebuild follows at least 50% growth, so rebuilding (and the analytics'
// remapping) costs O(1) amortized per vertex.
func (x *vertexIndex) maybeRebuild() error {
	g := x.gen
	grown := len(g.sparse) - g.checked
	if grown < max(x.m.cfg.IndexRebuildMin, (int(g.dense+g.keys)+g.checked)/2) {
		return nil
	}
	ids := g.ids(make([]uint64, 0, g.len()))
	split := keysFrom(ids)
	pd, _ := prefix(ids[:split], 0)
	pk, _ := prefix(ids[split:], highBase)
	if pd <= g.dense && pk <= g.keys {
		g.checked = len(g.sparse) // nothing would move into the identity regions
		return nil
	}
	ng, err := buildGen(ids)
	if err != nil {
		return err
	}
	x.gen = ng
	x.stats.Generations++
	return nil
}

// idCollector gathers a set of ids: bitmaps over the low numbers and the
// first keys (up to collectBitmapIDs each, as far as the snapshot's bounds
// reach), a map for the rest.
type idCollector struct {
	low, keys       bitmap
	lowLen, keysLen uint64
	other           map[uint64]struct{}
}

// collectBitmapIDs bounds each of an idCollector's bitmaps (8 MiB).
const collectBitmapIDs = 1 << 26

func newIDCollector(low, high uint64) *idCollector {
	c := &idCollector{lowLen: min(low, collectBitmapIDs), other: map[uint64]struct{}{}}
	if high > highBase {
		c.keysLen = min(high-highBase, collectBitmapIDs)
	}
	c.low, c.keys = newBitmap(c.lowLen), newBitmap(c.keysLen)
	return c
}

func (c *idCollector) add(v uint64) {
	if v < c.lowLen {
		c.low.set(v)
		return
	}
	if k := v - highBase; k < c.keysLen {
		c.keys.set(k)
		return
	}
	c.other[v] = struct{}{}
}

// sorted returns the ids collected, sorted.
func (c *idCollector) sorted() []uint64 {
	var out []uint64
	for w, word := range c.low {
		for ; word != 0; word &= word - 1 {
			out = append(out, uint64(w*64+bits.TrailingZeros64(word)))
		}
	}
	var rest []uint64
	for v := range c.other {
		rest = append(rest, v)
	}
	slices.Sort(rest)
	split := keysFrom(rest)
	out = append(out, rest[:split]...)
	for w, word := range c.keys {
		for ; word != 0; word &= word - 1 {
			out = append(out, highBase+uint64(w*64+bits.TrailingZeros64(word)))
		}
	}
	return append(out, rest[split:]...)
}
