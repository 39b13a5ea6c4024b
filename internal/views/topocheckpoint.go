package views

import (
	"errors"
	"fmt"
	"slices"

	"github.com/graphtide/graphtide/internal/checkpoint"
)

// Checkpoints of the topology. A checkpoint does not keep the Manager's
// index layout (it changes with every restart): it keeps the graph over a
// canonical id space, NewIDSpace of the topology's ids, which the same ids
// lay out again identically when it is loaded. Analytics save their
// per-vertex state over the same space (CanonicalIDs).

// CanonicalIDs returns the canonical space of g: NewIDSpace of the ids of
// its vertices with an edge (a vertex without one has no state an
// analytic must keep: it is unreached, its own component, of no rank),
// and those ids, sorted, which make the same space again.
func CanonicalIDs(g *Topo) (IDSpace, []uint64, error) {
	var ids []uint64
	for i := range g.Len() {
		if g.Out.Deg(int32(i)) > 0 || g.In.Deg(int32(i)) > 0 {
			ids = append(ids, g.IDs.ID(i))
		}
	}
	slices.Sort(ids)
	c, err := NewIDSpace(ids)
	return c, ids, err
}

// SaveTopo writes g over its canonical space c (with ids, the sorted list
// that makes c; see CanonicalIDs): its seq, the ids, the out-degree of
// every index of c, then every out-list in index order (heads as
// canonical indexes, sorted) and, when g is weighted, their weights.
func SaveTopo(e *checkpoint.Encoder, g *Topo, c IDSpace, ids []uint64) error {
	n := c.Len()
	from := make([]int32, n) // canonical index -> g's, -1: none
	for j := range from {
		from[j] = -1
	}
	to := make([]int32, g.Len()) // g's index -> canonical, -1: none
	for i := range to {
		to[i] = -1
		if j, ok := c.Index(g.IDs.ID(i)); ok {
			to[i], from[j] = int32(j), int32(i)
		}
	}
	e.U64(g.Seq)
	weighted := g.Out.Weighted()
	if weighted {
		e.U8(1)
	} else {
		e.U8(0)
	}
	e.Uint64s(ids)
	deg := make([]int32, n)
	for j, i := range from {
		if i >= 0 {
			deg[j] = g.Out.Deg(i)
		}
	}
	e.Int32s(deg)
	e.U64(uint64(g.Out.Edges()))
	var buf []int32
	var wbuf []float64
	// list maps i's out-list to canonical indexes, sorted (with weights).
	list := func(i int32) error {
		buf, wbuf = buf[:0], wbuf[:0]
		for _, k := range g.Out.Nbrs(i) {
			if to[k] < 0 {
				return fmt.Errorf("views: vertex %d has an edge and no canonical index", g.IDs.ID(int(k)))
			}
			buf = append(buf, to[k])
		}
		if weighted {
			ws := g.Out.Weights(i)
			for k := range g.Out.Deg(i) {
				wbuf = append(wbuf, ws.At(int(k)))
			}
			sortList(buf, wbuf)
		} else {
			sortList(buf, nil)
		}
		return nil
	}
	for _, i := range from {
		if i < 0 {
			continue
		}
		if err := list(i); err != nil {
			return err
		}
		e.RawInt32s(buf)
	}
	if weighted {
		for _, i := range from {
			if i < 0 {
				continue
			}
			if err := list(i); err != nil {
				return err
			}
			e.RawFloat64s(wbuf)
		}
	}
	return e.Err()
}

// LoadTopo reads what SaveTopo wrote: a Topo over the canonical space (its
// Seq the saved one), every invariant of a Topo checked (an index out of
// range or a list out of order is reported as corruption, never kept:
// the kernels index without bounds checks).
func LoadTopo(d *checkpoint.Decoder) (*Topo, error) {
	seq := d.U64()
	weighted := d.U8()
	if weighted > 1 {
		d.Fail("a weighted flag of %d", weighted)
	}
	ids := d.Uint64s()
	deg := d.Int32s()
	edges := d.U64()
	if err := d.Err(); err != nil {
		return nil, err
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		d.Fail("the ids are not sorted and unique")
		return nil, d.Err()
	}
	c, err := NewIDSpace(ids)
	if err != nil {
		d.Fail("%v", err)
		return nil, d.Err()
	}
	n := c.Len()
	if len(deg) != n {
		d.Fail("%d degrees for a space of %d indexes", len(deg), n)
		return nil, d.Err()
	}
	var sum int64
	for _, k := range deg {
		if k < 0 || int(k) > n {
			d.Fail("a degree of %d among %d vertices", k, n)
			return nil, d.Err()
		}
		sum += int64(k)
	}
	if uint64(sum) != edges {
		d.Fail("the degrees sum to %d, the edge count is %d", sum, edges)
		return nil, d.Err()
	}
	g := &Topo{IDs: c, Seq: seq}
	// Block by block (the file holds every list's heads, then every
	// weight, in index order), each block's arrays read with room for
	// its lists' slack (loosen).
	g.Out = newAdj(n, blockShift, noWeights)
	for k := range g.Out.blocks {
		b := &g.Out.blocks[k]
		base := k << g.Out.shift
		e, rooms := int64(0), int64(0)
		for j := range b.spans {
			e += int64(deg[base+j])
			rooms += int64(buildRoom(deg[base+j]))
		}
		b.dst = d.RawInt32s(int(e), int(rooms))
		if err := d.Err(); err != nil {
			return nil, err
		}
		at := int64(0)
		for j := range b.spans {
			l := b.dst[at : at+int64(deg[base+j])]
			for x, h := range l {
				if h < 0 || int(h) >= n || (x > 0 && l[x-1] >= h) {
					d.Fail("the out-list of vertex %d is not a sorted set of indexes below %d", c.ID(base+j), n)
					return nil, d.Err()
				}
			}
			b.spans[j] = span{beg: at, deg: deg[base+j], cap: deg[base+j]}
			at += int64(deg[base+j])
		}
		b.live = e
	}
	if weighted == 1 {
		g.Out.weights = floatWeights
		for k := range g.Out.blocks {
			b := &g.Out.blocks[k]
			b.w = d.RawFloat64s(int(b.live), cap(b.dst))
			if err := d.Err(); err != nil {
				return nil, err
			}
			g.noteWeights(b.w)
		}
	}
	for k := range g.Out.blocks {
		g.Out.blocks[k].loosen(nil)
	}
	g.Out.refresh(-1)
	g.Out.pack()
	g.finish()
	return g, nil
}

// Save runs f on the topology, read-locked (an error when none is held).
func (t *Topology) Save(f func(g *Topo) error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.t == nil {
		return errors.New("views: no topology is held")
	}
	return f(t.t)
}

// Restore makes g (loaded from a checkpoint) the topology, to be brought
// forward by the operations applied from now on, and returns the log
// position restored streams start at (RestoredStream). It is for a
// restart that replays, from the checkpoint's source position, every
// operation applied after g's graph: those the store holds already too,
// which the replay applies again to it, changing nothing. Until that
// replay is through, the topology is the graph of no seq of the store: it
// is exactly the graph of the checkpoint plus the operations logged since.
//
// The Manager's vertex index takes in g's ids (a vertex of the checkpoint
// may have no edge in the store any more). It fails when a topology is
// held already.
func (t *Topology) Restore(g *Topo) (uint64, error) {
	v, err := t.m.Static(StaticOptions{Kind: Fresh})
	if err != nil {
		return 0, err
	}
	defer v.Release()
	ids := make([]uint64, g.Len())
	for i := range ids {
		ids[i] = g.IDs.ID(i)
	}
	space, err := t.m.index.include(v, ids)
	if err != nil {
		return 0, err
	}
	if err := g.remap(space); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t != nil {
		return 0, errors.New("views: a topology is held already; restore before opening streams")
	}
	p, ok := t.m.log.firstAfter(v.Seq())
	if !ok {
		return 0, errors.New("views: the edge log no longer holds what followed the restore")
	}
	g.Seq = v.Seq()
	t.t, t.pos, t.since, t.removed = g, p, p, map[uint64][][2]uint64{}
	t.smu.Lock()
	t.stats.Bytes = g.Bytes()
	t.smu.Unlock()
	return p, nil
}

// RestoredStream opens a topology stream for an analytic restored with
// the topology: it starts at from (what Restore returned) and its first
// Pull is an update, not Lost (unless the topology was built again since).
func (t *Topology) RestoredStream(o StreamOptions, from uint64) (*TopoStream, error) {
	s, err := t.Stream(o)
	if err != nil {
		return nil, err
	}
	s.pos, s.started = from, true
	return s, nil
}

// include adds ids to the index and returns the space of v, which holds
// them: the vertices of a restored topology, some of which may have no
// edge in the store any more (a vertex keeps its index, see vertexIndex).
func (x *vertexIndex) include(v *StaticView, ids []uint64) (IDSpace, error) {
	if _, err := x.spaceFor(v); err != nil {
		return IDSpace{}, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		if err := x.gen.add(id); err != nil {
			return IDSpace{}, err
		}
	}
	if err := x.maybeRebuild(); err != nil {
		return IDSpace{}, err
	}
	return x.gen.space(), nil
}
