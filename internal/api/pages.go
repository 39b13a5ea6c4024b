package api

import (
	"container/heap"
	"context"
	"math"
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
)

// A page of a vertex's edges in Position order (cursor.go), read from the
// store, which keeps them in (store id, type number descending) order.
//
// The store's ids below keydict.KeyBase are numbers as the sources gave
// them, in the same order as their Positions; every id from KeyBase up (a
// key, or a mapped number) comes after all of them in Position order, but
// among themselves in the order this store met them. So a page reads:
//
//   - the numbers' band from the page's start on, one neighbor at a time
//     (its edges sorted by type name), until the page is full: the cost
//     follows the page, as a plain page's does;
//   - then, while the page has room, the whole key band, keeping the
//     page's remaining room of the smallest Positions past the start in a
//     heap: the cost follows the vertex's edges in the key band (memory
//     the page's), on every page that reaches the band.
//
// A store without a key dictionary has no key band: its order is the
// store's.

// pageEdge is one edge of a page with its position.
type pageEdge struct {
	dst uint64
	typ uint16
	w   float64
	tm  int64
	pos Position
	// An accumulate edge's count of events (0: replace) and first event
	// time; the edge's (newest event's) reference and properties.
	count      uint64
	first      int64
	ref, props string
}

// pageChunk is how many edges one read of the store takes while a page
// is gathered.
const pageChunk = 4096

// edgeHeap is a max-heap of edges by position.
type edgeHeap []pageEdge

func (h edgeHeap) Len() int           { return len(h) }
func (h edgeHeap) Less(i, j int) bool { return comparePositions(h[i].pos, h[j].pos) > 0 }
func (h edgeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *edgeHeap) Push(x any)        { *h = append(*h, x.(pageEdge)) }
func (h *edgeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// orderedPage returns up to limit of u's dir-edges in v whose positions
// are past after (all when after is nil), in position order, and whether
// more remain.
func (q Reader) orderedPage(ctx context.Context, v *views.StaticView, u uint64, dir engine.Direction, after *Position, limit int) ([]pageEdge, bool, error) {
	split := uint64(math.MaxUint64) // the key band starts here
	if q.Dict != nil {
		split = keydict.KeyBase
	}
	// Type names, looked up once a type in a page: most edges of a run
	// share the last one's type.
	names := map[uint16]string{}
	lastType, lastName := uint16(0), q.typeName(0)
	typeName := func(t uint16) string {
		if t == lastType {
			return lastName
		}
		n, ok := names[t]
		if !ok {
			n = q.typeName(t)
			names[t] = n
		}
		lastType, lastName = t, n
		return n
	}
	past := func(p Position) bool { return after == nil || comparePositions(p, *after) > 0 }
	// read calls f with each of u's edges from the one past cur (nil: the
	// first) on, in the store's order, chunk at a time, until f returns
	// false or none is left.
	// With ext, the edges' aggregates and payloads too (the numbers'
	// band, whose reads follow the page); the key band's page gets them
	// by a lookup of each edge it keeps (withExt), so that reading the
	// band costs no payloads.
	read := func(cur *engine.EdgeCursor, chunk int, ext bool, f func(e pageEdge) bool) error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			var p engine.Page
			var err error
			if ext {
				p, err = v.NeighborsPageExt(u, dir, cur, chunk)
			} else {
				p, err = v.NeighborsPage(u, dir, cur, chunk, true)
			}
			if err != nil {
				return err
			}
			for i, d := range p.Dsts {
				e := pageEdge{dst: d, typ: p.Types[i], w: p.Weights[i], tm: p.Times[i]}
				if p.Counts != nil {
					e.count, e.first = p.Counts[i], p.FirstTimes[i]
				}
				if p.Refs != nil {
					e.ref, e.props = p.Refs[i], p.Props[i]
				}
				if !f(e) {
					return nil
				}
			}
			last, ok := p.Last()
			if !p.More || !ok {
				return nil
			}
			cur = &last
		}
	}

	var out []pageEdge
	keyBand := false
	// The numbers' band, from the neighbor of after on.
	if after == nil || !after.Key && after.Num < split {
		var start *engine.EdgeCursor
		if after != nil && after.Num > 0 {
			start = &engine.EdgeCursor{Dst: after.Num - 1, Type: 0} // past every edge before after.Num (type 0 is a neighbor's last)
		}
		var group []pageEdge // the edges of one neighbor
		// flush adds the group to the page in type name order; false once
		// the page is full with more to come.
		flush := func() bool {
			slices.SortFunc(group, func(a, b pageEdge) int { return comparePositions(a.pos, b.pos) })
			for _, e := range group {
				if !past(e.pos) {
					continue
				}
				if len(out) == limit {
					return false
				}
				out = append(out, e)
			}
			group = group[:0]
			return true
		}
		full := false
		// The page and the edge after it, in reads of at least 64.
		err := read(start, min(pageChunk, max(limit+1, 64)), true, func(e pageEdge) bool {
			if e.dst >= split {
				keyBand = true
				return false
			}
			if len(group) > 0 && group[0].dst != e.dst && !flush() {
				full = true
				return false
			}
			e.pos = Position{Num: e.dst, Type: typeName(e.typ)}
			group = append(group, e)
			return true
		})
		if err != nil {
			return nil, false, err
		}
		if full || !flush() {
			return out, true, nil
		}
		if len(out) == limit {
			return out, keyBand, nil
		}
		if !keyBand {
			return out, false, nil
		}
	}
	// The key band, whole: the room left of the smallest positions past
	// after.
	room := limit - len(out)
	h := make(edgeHeap, 0, min(room, pageChunk))
	inBand := 0
	err := read(&engine.EdgeCursor{Dst: split - 1, Type: 0}, pageChunk, false, func(e pageEdge) bool {
		e.pos = q.vertexPos(e.dst)
		e.pos.Type = typeName(e.typ)
		if !past(e.pos) {
			return true
		}
		inBand++
		switch {
		case len(h) < room:
			heap.Push(&h, e)
		case comparePositions(e.pos, h[0].pos) < 0:
			h[0] = e
			heap.Fix(&h, 0)
		}
		return true
	})
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(h, func(a, b pageEdge) int { return comparePositions(a.pos, b.pos) })
	if err := withExt(v, u, dir, h); err != nil {
		return nil, false, err
	}
	return append(out, h...), inBand > room, nil
}

// withExt gives the edges es of u (in direction dir) their aggregates and
// payloads, by a lookup of each (an edge lookup reads out-edges: an
// in-edge is its other end's out-edge).
func withExt(v *views.StaticView, u uint64, dir engine.Direction, es []pageEdge) error {
	for k := range es {
		e := &es[k]
		src, dst := u, e.dst
		if dir == engine.In {
			src, dst = e.dst, u
		}
		c, err := v.Edge(src, dst)
		if err != nil {
			return err
		}
		for i, t := range c.Types {
			if t != e.typ {
				continue
			}
			if c.Counts != nil {
				e.count, e.first = c.Counts[i], c.FirstTimes[i]
			}
			if c.Refs != nil {
				e.ref, e.props = c.Refs[i], c.Props[i]
			}
		}
	}
	return nil
}
