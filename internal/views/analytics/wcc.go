package analytics

import (
	"context"

	"github.com/graphtide/graphtide/internal/views"
)

// wcc keeps the weakly connected components with a union-find over the
// dense indexes. The component of a vertex is named by its smallest vertex
// id in the store (where mapped numbers and keys lie above every number
// below 2^32; see keydict.NumID); a vertex without edges is its own
// component.
//
// INVARIANT (between calls): two vertices share a root iff they are weakly
// connected in the graph at seq. Inserts only merge (union). A delete may
// split: when an edge whose reverse is absent goes, the update checks (with
// in-edges, by a bounded search from both ends) that its endpoints are
// still connected, and recomputes otherwise; a vertex delete of a vertex
// with edges recomputes.
type wcc struct {
	spec Spec

	guarded[*wccState]
}

type wccState struct {
	ids    views.IDSpace
	parent []int32 // union-find forest over dense indexes; parent[i] == i at a root
	min    []int32 // at a root: the dense index of the component's smallest id (by id, not index)
	size   []int32 // at a root: the component's vertex count
	seq    uint64
}

func newWCC(s Spec) *wcc { return &wcc{spec: s} }

func (a *wcc) Spec() Spec { return a.spec }

func newWCCState(ids views.IDSpace, seq uint64) *wccState {
	n := ids.Len()
	st := &wccState{ids: ids, parent: make([]int32, n), min: make([]int32, n), size: make([]int32, n), seq: seq}
	for i := range st.parent {
		st.parent[i], st.min[i], st.size[i] = int32(i), int32(i), 1
	}
	return st
}

// grow extends the forest to ids (new vertices are singletons).
func (st *wccState) grow(ids views.IDSpace) error {
	if ids.Extends(st.ids) && ids.Len() == st.ids.Len() {
		st.ids = ids
		return nil
	}
	if !ids.Extends(st.ids) {
		// A new index generation: indexes move. Rebuild from the
		// components (names are ids).
		old, parent := st.ids, st.parent
		*st = *newWCCState(ids, st.seq)
		for i := range parent {
			r := find(parent, int32(i))
			j, ok := ids.Index(old.ID(i))
			k, ok2 := ids.Index(old.ID(int(r)))
			if !ok || !ok2 {
				return unindexed(old.ID(i))
			}
			st.union(int32(j), int32(k))
		}
		return nil
	}
	n0, n := len(st.parent), ids.Len()
	st.parent = resize(st.parent, st.ids, ids, 0)
	st.min = resize(st.min, st.ids, ids, 0)
	st.size = resize(st.size, st.ids, ids, 1)
	for i := n0; i < n; i++ {
		st.parent[i], st.min[i] = int32(i), int32(i)
	}
	st.ids = ids
	return nil
}

// root finds i's root without changing the forest (for readers, who hold
// only the read lock).
func root(parent []int32, i int32) int32 {
	for parent[i] != i {
		i = parent[i]
	}
	return i
}

// find finds i's root, halving the path (writers only).
func find(parent []int32, i int32) int32 {
	for parent[i] != i {
		parent[i] = parent[parent[i]] // path halving
		i = parent[i]
	}
	return i
}

// union merges the components of i and j (union by size).
func (st *wccState) union(i, j int32) {
	ri, rj := find(st.parent, i), find(st.parent, j)
	if ri == rj {
		return
	}
	if st.size[ri] < st.size[rj] {
		ri, rj = rj, ri
	}
	st.parent[rj] = ri
	st.size[ri] += st.size[rj]
	// The hash part of an index is not in id order: compare the ids.
	if st.ids.ID(int(st.min[rj])) < st.ids.ID(int(st.min[ri])) {
		st.min[ri] = st.min[rj]
	}
}

func wccCompute(ctx context.Context, g *views.Topo) (*wccState, error) {
	comp, err := afforest(ctx, g)
	if err != nil {
		return nil, err
	}
	// Afforest's roots are each component's smallest index: its forest is
	// the union-find forest (flat). Sizes and smallest ids, per root.
	n := g.Len()
	st := &wccState{ids: g.IDs, parent: comp, min: make([]int32, n), size: make([]int32, n), seq: g.Seq}
	for i := range comp {
		st.min[i] = int32(i)
	}
	for i, r := range comp {
		st.size[r]++
		if int32(i) != r && g.IDs.ID(i) < g.IDs.ID(int(st.min[r])) {
			st.min[r] = int32(i)
		}
	}
	return st, nil
}

func (a *wcc) Recompute(ctx context.Context, g *views.Topo) error {
	st, err := wccCompute(ctx, g)
	if err != nil {
		return err
	}
	a.swap(st)
	return nil
}

func (a *wcc) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	n := net(edges)
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	if err := st.grow(g.IDs); err != nil {
		return false, err
	}
	recompute := false
	// A vertex delete splits its component unless the vertex was alone.
	for _, x := range n.VDels {
		if i := index(g, x); i >= 0 && st.size[root(st.parent, i)] > 1 {
			recompute = true
		}
	}
	// A deleted edge splits nothing when its endpoints were in different
	// components (it did not exist), its reverse remains, or they are
	// still connected (a bounded search).
	for _, d := range n.Deletes {
		if recompute {
			break
		}
		i, j := index(g, d[0]), index(g, d[1])
		if i < 0 || j < 0 || i == j || find(st.parent, i) != find(st.parent, j) {
			continue
		}
		if _, rev := g.Weight(j, i); rev {
			continue
		}
		recompute = !connected(g, i, j, wccSearchBudget)
	}
	if recompute {
		return true, a.unlocked(func() error { return a.Recompute(ctx, g) })
	}
	for _, op := range n.Upserts {
		i, j := index(g, op.Src), index(g, op.Dst)
		if i < 0 || j < 0 {
			return false, unindexed(op.Src)
		}
		st.union(i, j)
	}
	st.seq = g.Seq
	return false, nil
}

// WCCSummary is the result of a wcc analytic.
type WCCSummary struct {
	Seq        uint64 `json:"seq"`
	Components int    `json:"components"` // components of two or more vertices
	Largest    int    `json:"largest"`    // vertices in the largest component
}

func (a *wcc) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var s WCCSummary
	if a.st == nil {
		return s
	}
	s.Seq = a.st.seq
	for i, p := range a.st.parent {
		if int(p) != i {
			continue
		}
		// A vertex alone in its component is not counted: its index may be
		// an id of the index's identity region that has no edge at all.
		if sz := int(a.st.size[i]); sz > 1 {
			s.Components++
			s.Largest = max(s.Largest, sz)
		}
	}
	return s
}

// VertexComponent is the per-vertex result of wcc.
type VertexComponent struct {
	Component uint64 `json:"component"` // smallest vertex id of the component
	Size      int    `json:"size"`
}

func (a *wcc) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return nil, false
	}
	i, ok := a.st.ids.Index(v)
	if !ok {
		return VertexComponent{v, 1}, true
	}
	r := root(a.st.parent, int32(i))
	return VertexComponent{a.st.ids.ID(int(a.st.min[r])), int(a.st.size[r])}, true
}

// wccSearchBudget bounds the vertices one connectivity check may visit
// before it gives up (and the update recomputes).
const wccSearchBudget = 4096

// connected reports whether a and b are weakly connected in g, searching
// from both ends at once (out- and in-edges) and visiting at most budget
// vertices; false when it runs out.
func connected(g *views.Topo, a, b int32, budget int) bool {
	seen := [2]map[int32]bool{{a: true}, {b: true}}
	front := [2][]int32{{a}, {b}}
	visited := 2
	for len(front[0]) > 0 && len(front[1]) > 0 {
		side := 0
		if len(front[1]) < len(front[0]) {
			side = 1
		}
		var next []int32
		for _, u := range front[side] {
			for _, nb := range [2][]int32{g.Out.Nbrs(u), g.In.Nbrs(u)} {
				for _, w := range nb {
					if seen[1-side][w] {
						return true
					}
					if !seen[side][w] {
						seen[side][w] = true
						next = append(next, w)
						if visited++; visited > budget {
							return false
						}
					}
				}
			}
		}
		front[side] = next
	}
	return false
}

func (st *wccState) sequence() uint64 { return st.seq }

// MemoryBytes is the size of the forest (12 bytes per vertex index).
func (a *wcc) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return sliceBytes(a.st.parent) + sliceBytes(a.st.min) + sliceBytes(a.st.size)
}
