package views

import (
	"slices"
	"sort"

	"github.com/graphtide/graphtide/internal/engine"
)

// memGraph is a private view's own copy of the graph: per direction, a CSR
// over the vertices that have edges in that direction.
type memGraph struct {
	dirs [2]*memDir // [engine.Out], [engine.In]; nil when not copied
}

// memDir is one direction: vids lists, sorted, the vertices with at least
// one edge; the neighbors of vids[i] are dst[off[i]:off[i+1]], sorted, with
// weights w and types t at the same positions (w is nil when weights were
// not copied: every weight reads as 1; t is nil when every edge has type
// 0). A vertex's entries are in (dst asc, type desc) order, as the store
// gives them. Lookups are binary searches in vids.
type memDir struct {
	vids []uint64
	off  []uint64 // len(vids)+1 entries
	dst  []uint64
	w    []float64
	t    []uint16
	tm   []int64 // event times; nil when no edge has one
}

// timeAt is entry i's event time (0: none).
func (d *memDir) timeAt(i uint64) int64 {
	if d.tm == nil {
		return 0
	}
	return d.tm[i]
}

// typeAt is entry i's type.
func (d *memDir) typeAt(i uint64) uint16 {
	if d.t == nil {
		return 0
	}
	return d.t[i]
}

// copyGraph reads every edge of the snapshot in the asked directions;
// ranges gives the id ranges holding its vertices.
func copyGraph(sn *engine.Snapshot, ranges func(func(lo, hi uint64) error) error, in, weights bool) (*memGraph, error) {
	g := &memGraph{}
	dirs := []engine.Direction{engine.Out}
	if in {
		dirs = append(dirs, engine.In)
	}
	buf := newScanBuffer(weights)
	buf.Types = make([]uint16, len(buf.Dsts))
	buf.Times = make([]int64, len(buf.Dsts))
	for _, dir := range dirs {
		d := &memDir{off: []uint64{0}}
		typed, timed := false, false // some type, some time is not 0
		err := ranges(func(lo, hi uint64) error {
			for lo < hi {
				nx, err := sn.Scan(lo, hi, dir, buf)
				if err != nil {
					return err
				}
				for i, v := range buf.Vertices {
					d.vids = append(d.vids, v)
					d.dst = append(d.dst, buf.Neighbors(i)...)
					d.off = append(d.off, uint64(len(d.dst)))
					if weights {
						d.w = append(d.w, buf.Weights[buf.Offsets[i]:buf.Offsets[i+1]]...)
					}
				}
				d.t = append(d.t, buf.Types...)
				typed = typed || slices.ContainsFunc(buf.Types, func(t uint16) bool { return t != 0 })
				d.tm = append(d.tm, buf.Times...)
				timed = timed || slices.ContainsFunc(buf.Times, func(t int64) bool { return t != 0 })
				lo = nx
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !typed {
			d.t = nil
		}
		if !timed {
			d.tm = nil
		}
		g.dirs[dir] = d
	}
	return g, nil
}

// run returns the bounds of u's entries in d (empty when u has none).
func (d *memDir) run(u uint64) (b, e uint64) {
	i, ok := slices.BinarySearch(d.vids, u)
	if !ok {
		return 0, 0
	}
	return d.off[i], d.off[i+1]
}

func (g *memGraph) neighbors(u uint64, dir engine.Direction) []uint64 {
	b, e := g.dirs[dir].run(u)
	return g.dirs[dir].dst[b:e:e]
}

// weightsOf returns u's weights (n of them) in dir.
func (g *memGraph) weightsOf(u uint64, dir engine.Direction, n int) []float64 {
	d := g.dirs[dir]
	if d.w == nil {
		w := make([]float64, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	b, e := d.run(u)
	return d.w[b:e]
}

// scan follows engine.Snapshot.Scan's contract over the copy.
func (g *memGraph) scan(lo, hi uint64, dir engine.Direction, buf *engine.ScanBuffer) uint64 {
	d := g.dirs[dir]
	buf.Prepare()
	nv, ne := 0, 0
	buf.Offsets[0] = 0
	ecap := cap(buf.Dsts)
	next := hi
	start, _ := slices.BinarySearch(d.vids, lo)
	for i := start; i < len(d.vids); i++ {
		v := d.vids[i]
		if v >= hi {
			break
		}
		b, e := d.off[i], d.off[i+1]
		k := int(e - b)
		if nv == len(buf.Vertices) || (ne+k > ecap && nv > 0) {
			next = v
			break
		}
		if ne+k > ecap { // the first vertex alone: grow
			ecap = ne + k
		}
		buf.Dsts = d.appendRun(buf.Dsts, &buf.Columns, ne, ecap, b, e)
		ne += k
		buf.Vertices[nv] = v
		nv++
		buf.Offsets[nv] = uint64(ne)
	}
	buf.Finish(nv, ne)
	return next
}

// gather follows engine.Snapshot.Gather's contract over the copy.
func (g *memGraph) gather(vids []uint64, dir engine.Direction, buf *engine.GatherBuffer) int {
	d := g.dirs[dir]
	if cap(buf.Offsets) < len(vids)+1 {
		buf.Offsets = make([]uint64, len(vids)+1)
	}
	buf.Offsets = buf.Offsets[:len(vids)+1]
	buf.Offsets[0] = 0
	ecap := max(cap(buf.Dsts), 1)
	ne, done := 0, 0
	for j, v := range vids {
		b, e := d.run(v)
		k := int(e - b)
		if ne+k > ecap {
			if j > 0 {
				break
			}
			ecap = k // the first vertex alone: grow
		}
		buf.Dsts = d.appendRun(buf.Dsts, &buf.Columns, ne, ecap, b, e)
		ne += k
		done = j + 1
		buf.Offsets[done] = uint64(ne)
	}
	buf.Offsets = buf.Offsets[:done+1]
	return done
}

// appendRun writes entries [b, e) of d after the first ne of dsts (and of
// each column of c in use), growing dsts to capacity ecap when it lacks
// room, and returns dsts.
func (d *memDir) appendRun(dsts []uint64, c *engine.Columns, ne, ecap int, b, e uint64) []uint64 {
	if cap(dsts) < ne+int(e-b) {
		nd := make([]uint64, ne, ecap)
		copy(nd, dsts[:ne])
		dsts = nd
	}
	dsts = append(dsts[:ne], d.dst[b:e]...)
	if c.Weights != nil {
		c.Weights = appendWeights(c.Weights[:ne], d, b, e)
	}
	if c.Types != nil {
		c.Types = c.Types[:ne]
		for i := b; i < e; i++ {
			c.Types = append(c.Types, d.typeAt(i))
		}
	}
	if c.Times != nil {
		c.Times = c.Times[:ne]
		for i := b; i < e; i++ {
			c.Times = append(c.Times, d.timeAt(i))
		}
	}
	return dsts
}

// page is one page of u's entries in dir: those past after (all when nil),
// at most limit (engine.Snapshot.NeighborsPage's contract).
func (g *memGraph) page(u uint64, dir engine.Direction, after *engine.EdgeCursor, limit int, weights bool) engine.Page {
	d := g.dirs[dir]
	b, e := d.run(u)
	start := b
	if after != nil {
		// Entries come in (dst asc, type desc) order: the first past after.
		start = b + uint64(sort.Search(int(e-b), func(i int) bool {
			x := b + uint64(i)
			return d.dst[x] > after.Dst || (d.dst[x] == after.Dst && d.typeAt(x) < after.Type)
		}))
	}
	end := min(e, start+uint64(limit))
	c := engine.Columns{Types: []uint16{}, Times: []int64{}} // in use: not nil
	if weights {
		c.Weights = []float64{}
	}
	dsts := d.appendRun(nil, &c, 0, int(end-start), start, end)
	return engine.Page{Dsts: dsts, Columns: c, More: end < e}
}

// edge is the edges from u to dst (engine.Snapshot.Edge): the range of
// u's out-run with that dst, found by binary search.
func (g *memGraph) edge(u, dst uint64) engine.Columns {
	d := g.dirs[engine.Out]
	b, e := d.run(u)
	lo := b + uint64(sort.Search(int(e-b), func(i int) bool { return d.dst[b+uint64(i)] >= dst }))
	hi := lo + uint64(sort.Search(int(e-lo), func(i int) bool { return d.dst[lo+uint64(i)] > dst }))
	c := engine.Columns{Weights: []float64{}, Types: []uint16{}, Times: []int64{}}
	d.appendRun(nil, &c, 0, int(hi-lo), lo, hi)
	return c
}

func appendWeights(w []float64, d *memDir, b, e uint64) []float64 {
	if d.w != nil {
		return append(w, d.w[b:e]...)
	}
	for ; b < e; b++ {
		w = append(w, 1)
	}
	return w
}

// gatherLimit is gather filling at most maxEdges edges: 0 when the first
// vertex alone needs more (gather grows buf as a vertex within it needs).
func (g *memGraph) gatherLimit(vids []uint64, dir engine.Direction, buf *engine.GatherBuffer, maxEdges int) int {
	d := g.dirs[dir]
	total, n := 0, 0
	for _, v := range vids {
		b, e := d.run(v)
		total += int(e - b)
		if total > maxEdges {
			break
		}
		n++
	}
	if n == 0 {
		buf.Offsets = append(buf.Offsets[:0], 0)
		return 0
	}
	return g.gather(vids[:n], dir, buf)
}
