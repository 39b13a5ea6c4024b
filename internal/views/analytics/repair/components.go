package repair

import (
	"context"
	"slices"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
)

// Components are the weakly connected components of a topology, kept
// across its batches. The component of a vertex is named by its smallest
// vertex id in the store (where mapped numbers and keys lie above every
// number below 2^32; see keydict.NumID); a vertex without edges is its
// own component.
//
// NewComponents is Afforest on every core. An update keeps a support forest
// (levels), built by one breadth-first pass over both directions the first
// time a delete needs it: each component has a root at level 0, and every
// other vertex a neighbor (by an out- or an in-edge) of its component one
// level down. A deleted edge matters only when it joined levels l and
// l+1; the vertices left without support are found in order of level (as
// Dists does, undirected), re-attached from their supported neighbors,
// and those that cannot be form new components. An inserted edge between
// two components relabels (and re-levels) the smaller. So the work follows
// the vertices whose support or component changes, never the graph.
//
// INVARIANTS (between calls): comp[i] is the index of i's component's
// root (comp[r] == r at a root), and two vertices share one iff they are
// weakly connected in the graph at seq; at a root, size is the
// component's vertex count and min the index of its smallest id; level,
// when not nil, is a support forest as above.
type Components struct {
	ids   views.IDSpace
	comp  []int32
	size  []int32
	min   []int32
	level []int32 // nil until a delete needs it
	seq   uint64
	// Work counts the edges read by updates since NewComponents (the
	// forest's build included); its reader may zero it.
	Work int
	// mark is split's per-vertex state, all 0 between splits (any id
	// layout: it holds nothing then).
	mark Marks
	// members is merge's list, reused.
	members []int32
}

// grow extends the state to ids: new vertices are components of their
// own; a new index generation moves every value to its id's index.
func (st *Components) grow(ids views.IDSpace) {
	if !ids.Extends(st.ids) {
		n := ids.Len()
		to := make([]int32, len(st.comp))
		for i := range to {
			j, _ := ids.Index(st.ids.ID(i)) // a new generation holds every id of the old
			to[i] = int32(j)
		}
		comp, size, mn := make([]int32, n), make([]int32, n), make([]int32, n)
		for j := range comp {
			comp[j], size[j], mn[j] = int32(j), 1, int32(j)
		}
		var level []int32
		if st.level != nil {
			level = make([]int32, n)
		}
		for i, r := range st.comp {
			comp[to[i]] = to[r]
			if int32(i) == r {
				size[to[r]], mn[to[r]] = st.size[r], to[st.min[r]]
			}
			if level != nil {
				level[to[i]] = st.level[i]
			}
		}
		st.comp, st.size, st.min, st.level = comp, size, mn, level
		st.ids = ids
		return
	}
	n0, n := len(st.comp), ids.Len()
	st.comp = Resize(st.comp, st.ids, ids, 0)
	st.size = Resize(st.size, st.ids, ids, 1)
	st.min = Resize(st.min, st.ids, ids, 0)
	if st.level != nil {
		st.level = Resize(st.level, st.ids, ids, 0)
	}
	for i := n0; i < n; i++ {
		st.comp[i], st.min[i] = int32(i), int32(i)
	}
	st.ids = ids
}

// NewComponents computes the components of g with Afforest, on every core
// (no support forest yet: the first delete builds it).
func NewComponents(ctx context.Context, g *views.Topo) (*Components, error) {
	comp, err := kernels.Afforest(ctx, g)
	if err != nil {
		return nil, err
	}
	// Afforest's roots are each component's smallest index. Sizes and
	// smallest ids, per root.
	n := g.Len()
	st := &Components{ids: g.IDs, comp: comp, min: make([]int32, n), size: make([]int32, n), seq: g.Seq}
	for i := range comp {
		st.min[i] = int32(i)
	}
	// From g.Bound() up each index is a component of its own.
	bound := g.Bound()
	for i := bound; i < n; i++ {
		st.size[i] = 1
	}
	for i, r := range comp[:bound] {
		st.size[r]++
		if g.IDs.ID(i) < g.IDs.ID(int(st.min[r])) {
			st.min[r] = int32(i)
		}
	}
	return st, nil
}

// levels builds the support forest on g: breadth first over both
// directions, within each component, from its vertex of highest degree
// (the one least likely to lose its edges, which would leave the whole
// component to repair), direction-optimizing on every core. It returns
// the vertices it could not reach: those the batch's deletes cut off
// (g is the graph after them).
func (st *Components) levels(ctx context.Context, g *views.Topo) ([]int32, error) {
	n := len(st.comp)
	hub := make([]int32, n) // at a label: its member of highest degree
	deg := func(i int32) int32 { return g.Out.Deg(i) + g.In.Deg(i) }
	for i := range hub {
		hub[i] = -1
	}
	for i, r := range st.comp {
		if h := hub[r]; h < 0 || deg(int32(i)) > deg(h) {
			hub[r] = int32(i)
		}
	}
	var sources []int32
	for _, h := range hub {
		if h >= 0 {
			sources = append(sources, h)
		}
	}
	level, err := kernels.ComponentLevels(ctx, g, sources, st.comp)
	if err != nil {
		return nil, err
	}
	st.level = level
	var cut []int32
	for i, l := range level {
		if l < 0 {
			cut = append(cut, int32(i))
		}
	}
	return cut, nil
}

// idLess orders indexes by their ids.
func (st *Components) idLess(i, j int32) bool { return st.ids.ID(int(i)) < st.ids.ID(int(j)) }

// Update brings the components to g after edges (a batch g ends). It
// returns false when the batch cut too many vertices off their support to
// repair (more than Limit): the components are then not valid, and the
// caller recomputes.
func (st *Components) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	st.grow(g.IDs)
	// Deletes first (on g, which holds the batch's inserts: those between
	// components are merged after).
	gone, ups, err := changes(g, edges, nil, false, &st.mark)
	if err != nil {
		return false, err
	}
	// The inserts between components (most join two vertices of one),
	// filtered in the background while the deletes are. A split leaves
	// them so (it runs on g, which holds them, and only splits), and they
	// are the only edges of g between components: the split needs to read
	// a neighbor's label only when the edge to it may be one of them.
	comp := st.comp
	crossing := goKeepPairs(ups, func(part, out [][2]int32) [][2]int32 {
		for _, e := range part {
			if comp[e[0]] != comp[e[1]] {
				out = append(out, e)
			}
		}
		return out
	})
	// The deletes within a component (between two, a delete changes
	// nothing; nor does a loop's), read at random: on every core.
	dels := keepPairs(gone, func(part, out [][2]int32) [][2]int32 {
		for _, e := range part {
			if e[0] != e[1] && comp[e[0]] == comp[e[1]] {
				out = append(out, e)
			}
		}
		return out
	})
	cross := crossing()
	if len(dels) > 0 {
		var cut []int32
		if st.level == nil {
			var err error
			if cut, err = st.levels(ctx, g); err != nil {
				return false, err
			}
		}
		if !st.split(g, dels, cut, repairLimit(g.Len()), newPairFilter(cross)) {
			return false, nil
		}
	}
	// Whether an upsert's edge is still there is searched for only when
	// the batch deleted that pair (may have: a filter of the deletes).
	f := newPairFilter(gone)
	present := func(e [2]int32) bool { _, ok := g.Weight(e[0], e[1]); return ok }
	for _, e := range cross {
		if st.comp[e[0]] != st.comp[e[1]] && (!f.mayHold(e) || present(e)) {
			st.merge(g, e[0], e[1])
		}
	}
	st.seq = g.Seq
	return true, nil
}

// neighbors calls f for each neighbor of u (out and in) in u's component.
func (st *Components) neighbors(g *views.Topo, u int32, f func(x int32) bool) {
	c := st.comp[u]
	for _, nb := range [2][]int32{g.Out.Nbrs(u), g.In.Nbrs(u)} {
		st.Work += len(nb)
		for _, x := range nb {
			if st.comp[x] == c && !f(x) {
				return
			}
		}
	}
}

// split repairs the components after the deleted edges dels (each within
// one component); cut are vertices known to have lost their support, and
// cross holds (may hold) every edge of g between two components. It
// returns false when more than limit vertices lost their support.
func (st *Components) split(g *views.Topo, dels [][2]int32, cut []int32, limit int, cross pairFilter) bool {
	// Each vertex's state (0: not decided yet), cleared on return.
	st.mark.start(g.Len())
	defer st.mark.clear()
	aff, ok := st.unsupported(g, dels, cut, limit, cross)
	if !ok {
		return false
	}
	if len(aff) == 0 {
		return true
	}
	st.reattach(g, aff)
	st.splitOff(g, aff)
	return true
}

// unsupported finds the vertices the deletes dels left without support,
// in order of level (cut among them), marked affected; false when they
// are more than limit.
func (st *Components) unsupported(g *views.Topo, dels [][2]int32, cut []int32, limit int, cross pairFilter) ([]int32, bool) {
	aff := cut
	if len(aff) > limit {
		return nil, false
	}
	for _, c := range cut {
		st.mark.put(c, affected)
	}
	h := &st.mark.q
	h.reset()
	for _, d := range dels {
		a, b := d[0], d[1]
		if st.level[b] == st.level[a]+1 {
			h.push(st.level[b], b)
		} else if st.level[a] == st.level[b]+1 {
			h.push(st.level[a], a)
		}
	}
	var sc splitScratch
	for {
		lc, cs, more := h.popLevel()
		if !more {
			return aff, true
		}
		if aff = st.decideLevel(g, cs, lc, aff, cross, &sc); len(aff) > limit {
			return nil, false
		}
	}
}

// reattach gives the affected vertices that can be reached from supported
// ones of their component their level again, nearest root first; the
// others get level -1.
func (st *Components) reattach(g *views.Topo, aff []int32) {
	state := st.mark.state
	isAff := func(x int32) bool { return state[x] == affected }
	h := &st.mark.q
	h.reset()
	for _, c := range aff {
		best := int32(-1)
		st.neighbors(g, c, func(u int32) bool {
			if !isAff(u) && (best < 0 || st.level[u] < best) {
				best = st.level[u]
			}
			return true
		})
		st.level[c] = -1
		if best >= 0 {
			st.level[c] = best + 1
			h.push(best+1, c)
		}
	}
	for {
		pd, pv, more := h.pop()
		if !more {
			return
		}
		if pd != st.level[pv] {
			continue
		}
		st.neighbors(g, pv, func(x int32) bool {
			if isAff(x) && (st.level[x] < 0 || pd+1 < st.level[x]) {
				st.level[x] = pd + 1
				h.push(pd+1, x)
			}
			return true
		})
	}
}

// splitOff makes new components of the affected vertices reattach left
// without a level, and finds the smallest id anew of each component
// whose smallest left with them.
func (st *Components) splitOff(g *views.Topo, aff []int32) {
	state := st.mark.state
	var lost map[int32]bool
	for _, c := range aff {
		if st.level[c] >= 0 {
			continue
		}
		// A new component, rooted at c: breadth first among the affected
		// left over (they keep their old label until relabelled).
		old := st.comp[c] // the label of the component being split
		members := []int32{c}
		st.level[c] = 0
		for k := 0; k < len(members); k++ {
			u := members[k]
			st.neighbors(g, u, func(x int32) bool {
				if state[x] == affected && st.level[x] < 0 {
					st.level[x] = st.level[u] + 1
					members = append(members, x)
				}
				return true
			})
		}
		if c = st.settleLabels(members, old); c != old && st.comp[st.min[old]] != old {
			if lost == nil {
				lost = map[int32]bool{}
			}
			lost[old] = true
		}
	}
	// A component whose smallest id left with a new one: find its new
	// smallest (a pass over the indexes; only then).
	if len(lost) > 0 {
		for r := range lost {
			st.min[r] = r
		}
		for i, r := range st.comp {
			if lost[r] && st.idLess(int32(i), st.min[r]) {
				st.min[r] = int32(i)
			}
		}
	}
}

// settleLabels labels members, split off the component labelled old, as
// a component of their own, and returns their label.
//
// INVARIANT: a label is a member (comp[r] == r). When the old label's own
// vertex leaves with these, they take the label and the rest of the old
// component a new one (a pass over the indexes; only then).
func (st *Components) settleLabels(members []int32, old int32) int32 {
	if !slices.Contains(members, old) {
		st.size[old] -= int32(len(members))
		st.relabel(members)
		return members[0]
	}
	in := make(map[int32]bool, len(members))
	for _, u := range members {
		in[u] = true
	}
	var rest []int32
	for i, r := range st.comp {
		if r == old && !in[int32(i)] {
			rest = append(rest, int32(i))
		}
	}
	k := slices.Index(members, old)
	members[0], members[k] = members[k], members[0]
	if len(rest) > 0 {
		st.relabel(rest)
	}
	st.relabel(members)
	return old
}

// splitScratch is decideLevel's buffers, kept across the levels of a
// split.
type splitScratch struct {
	todo, open []int32
	lists      [][2][]int32
}

// decideLevel decides split's undecided vertices of level lc among cs:
// supported by a neighbor of their component one level down that is not
// affected (a root always), else affected, appended to aff, and their
// neighbors one level up queued to be decided. It is staged as the
// distance repair's decideUnit is, so that its random reads overlap:
// every vertex's lists first, then the k-th neighbor of every vertex not
// yet supported, round by round, then the rest of each list.
func (st *Components) decideLevel(g *views.Topo, cs []int32, lc int32, aff []int32, cross pairFilter, sc *splitScratch) []int32 {
	state := st.mark.state
	todo := sc.todo[:0]
	for _, c := range cs {
		if state[c] == 0 {
			st.mark.put(c, pending)
			todo = append(todo, c)
		}
	}
	sc.todo = todo
	if lc == 0 { // roots
		for _, c := range todo {
			state[c] = supported
		}
		return aff
	}
	lists := sc.lists[:0]
	for _, c := range todo {
		lists = append(lists, [2][]int32{g.Out.Nbrs(c), g.In.Nbrs(c)})
	}
	// supports reports whether u, a neighbor of c, is one: its label is
	// read only when the edge may join two components.
	supports := func(c, u int32) bool {
		return st.level[u] == lc-1 && state[u] != affected &&
			(!cross.mayHold([2]int32{c, u}) && !cross.mayHold([2]int32{u, c}) || st.comp[u] == st.comp[c])
	}
	// Rounds over the k-th neighbor (out-lists, then in-lists).
	open := sc.open[:0]
	open = append(open, todo...)
	var deg int
	for k := 0; k < stagedRounds && len(open) > 0; k++ {
		n := 0
		for i, c := range open {
			l := lists[i]
			if deg = len(l[0]) + len(l[1]); k == deg { // (only at round 0)
				continue
			}
			st.Work++
			u := int32(0)
			if k < len(l[0]) {
				u = l[0][k]
			} else {
				u = l[1][k-len(l[0])]
			}
			if supports(c, u) {
				state[c] = supported
				continue
			}
			if k+1 < deg {
				open[n], lists[n] = c, l
				n++
			}
		}
		open, lists = open[:n], lists[:n]
	}
	for i, c := range open {
		k := stagedRounds
	scan:
		for _, nb := range lists[i] {
			if k >= len(nb) {
				k -= len(nb)
				continue
			}
			for _, u := range nb[k:] {
				st.Work++
				if supports(c, u) {
					state[c] = supported
					break scan
				}
			}
			k = 0
		}
	}
	sc.open, sc.lists = open[:0], lists[:0]
	for _, c := range todo {
		if state[c] == supported {
			continue
		}
		state[c] = affected
		aff = append(aff, c)
		st.neighbors(g, c, func(x int32) bool {
			if state[x] == 0 && st.level[x] == lc+1 {
				st.mark.q.push(lc+1, x)
			}
			return true
		})
	}
	return aff
}

// relabel makes the vertices ms a component labelled by the first.
func (st *Components) relabel(ms []int32) {
	c, mn := ms[0], ms[0]
	for _, u := range ms {
		st.comp[u] = c
		if st.idLess(u, mn) {
			mn = u
		}
	}
	st.size[c], st.min[c] = int32(len(ms)), mn
}

// merge joins the components of a and b (an edge a-b): the smaller is
// relabelled and, when the forest is kept, re-levelled below the other's
// endpoint.
func (st *Components) merge(g *views.Topo, a, b int32) {
	ra, rb := st.comp[a], st.comp[b]
	if st.size[ra] < st.size[rb] {
		a, b, ra, rb = b, a, rb, ra
	}
	// b's component (the smaller) moves under a.
	if st.level != nil {
		st.level[b] = st.level[a] + 1
	}
	st.members = append(st.members[:0], b)
	members := st.members
	st.comp[b] = ra
	// A component of one vertex (most: the vertices an insert brings) has
	// no other member to find: its lists are not read.
	for k := 0; k < len(members) && st.size[rb] > 1; k++ {
		u := members[k]
		for _, nb := range [2][]int32{g.Out.Nbrs(u), g.In.Nbrs(u)} {
			st.Work += len(nb)
			for _, x := range nb {
				if st.comp[x] == rb {
					st.comp[x] = ra
					if st.level != nil {
						st.level[x] = st.level[u] + 1
					}
					members = append(members, x)
				}
			}
		}
	}
	st.members = members[:0]
	st.size[ra] += st.size[rb]
	if st.idLess(st.min[rb], st.min[ra]) {
		st.min[ra] = st.min[rb]
	}
}

// Sequence is the seq of the graph the components are of.
func (st *Components) Sequence() uint64 { return st.seq }

// Bytes is the size of the labels, sizes, smallest ids and levels (16
// bytes per vertex index), and of split's marks (1).
func (st *Components) Bytes() int64 {
	return SliceBytes(st.comp) + SliceBytes(st.min) + SliceBytes(st.size) + SliceBytes(st.level) + st.mark.Bytes() +
		SliceBytes(st.members)
}

// Component is v's component: its smallest vertex id and its size (v and
// 1 for a vertex without an index: alone).
func (st *Components) Component(v uint64) (id uint64, size int) {
	i, ok := st.ids.Index(v)
	if !ok {
		return v, 1
	}
	r := st.comp[i]
	return st.ids.ID(int(st.min[r])), int(st.size[r])
}

// Counts are how many components hold two vertices or more, and the
// vertices of the largest. (A vertex alone is not counted: its index may
// be an id of the index's identity region that has no edge at all.)
func (st *Components) Counts() (components, largest int) {
	for i, r := range st.comp {
		if int(r) != i {
			continue
		}
		if sz := int(st.size[i]); sz > 1 {
			components++
			largest = max(largest, sz)
		}
	}
	return components, largest
}

// Labels are the components over ids: each index's label (the index of
// its component's root), and at a label the component's size and the
// index of its smallest id (smallest). The caller only reads them, and
// not past the next Update.
func (st *Components) Labels() (ids views.IDSpace, comp, size, smallest []int32) {
	return st.ids, st.comp, st.size, st.min
}

// LoadComponents makes components of labels as Labels returns them, at
// seq, taking the slices over; the caller has checked that they hold the
// INVARIANTS (no support forest yet: the first delete builds it).
func LoadComponents(ids views.IDSpace, comp, size, smallest []int32, seq uint64) *Components {
	return &Components{ids: ids, comp: comp, size: size, min: smallest, seq: seq}
}
