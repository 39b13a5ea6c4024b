package analytics

import (
	"context"

	"github.com/graphtide/graphtide/internal/views"
)

// bfs keeps the BFS level of every vertex reachable from root along
// out-edges.
//
// level[i] is the level of the vertex with dense index i, -1 when it is
// unreached. INVARIANT (between calls): level is exactly the BFS level in
// the graph at seq. Incremental reasoning: deleting an edge (a, b) that is
// not tight (level[b] != level[a]+1) changes no level; a tight one changes
// none either when b keeps an in-neighbor w with level[w] = level[b]-1 in
// the new graph and every such b does (by induction on the level);
// inserts only lower levels, which propagate from the new edges.
type bfs struct {
	spec Spec
	root uint64

	guarded[*bfsState]
}

type bfsState struct {
	ids   views.IDSpace
	level []int32
	seq   uint64
}

func newBFS(s Spec, root uint64) *bfs { return &bfs{spec: s, root: root} }

func (a *bfs) Spec() Spec { return a.spec }

// index is v's index in g, -1 when g has none.
func index(g *views.Topo, v uint64) int32 {
	if i, ok := g.IDs.Index(v); ok {
		return int32(i)
	}
	return -1
}

func (a *bfs) Recompute(ctx context.Context, g *views.Topo) error {
	level, err := bfsKernel(ctx, g, index(g, a.root))
	if err != nil {
		return err
	}
	a.swap(&bfsState{ids: g.IDs, level: level, seq: g.Seq})
	return nil
}

func (a *bfs) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	var lvl func(uint64) int32
	st.level, lvl = rooted(st.level, st.ids, g.IDs, a.root, 0, -1)
	st.ids = g.IDs
	n := net(edges)
	recompute := false
	for _, x := range n.VDels {
		recompute = recompute || lvl(x) >= 0
	}
	// A tight deleted edge's head keeps its level when it keeps an
	// in-neighbor one level up (by induction on the level, when every
	// such head does).
	for _, d := range n.Deletes {
		if recompute {
			break
		}
		la := lvl(d[0])
		if la < 0 || lvl(d[1]) != la+1 {
			continue
		}
		b := index(g, d[1])
		found := false
		for _, w := range g.In.Nbrs(b) {
			if st.level[w] == la {
				found = true
				break
			}
		}
		recompute = !found
	}
	if recompute {
		return true, a.unlocked(func() error { return a.Recompute(ctx, g) })
	}
	// Inserts lower levels: relax from the new edges, level by level.
	var frontier, next []int32
	for _, op := range n.Upserts {
		if la := lvl(op.Src); la >= 0 {
			j := index(g, op.Dst)
			if j < 0 {
				return false, unindexed(op.Dst)
			}
			if l := st.level[j]; l < 0 || la+1 < l {
				st.level[j] = la + 1
				frontier = append(frontier, j)
			}
		}
	}
	// Relax in order of level: a bucket queue over the levels met.
	buckets := map[int32][]int32{}
	for _, j := range frontier {
		buckets[st.level[j]] = append(buckets[st.level[j]], j)
	}
	for len(buckets) > 0 {
		l := int32(-1)
		for k := range buckets {
			if l < 0 || k < l {
				l = k
			}
		}
		next = append(next[:0], buckets[l]...)
		delete(buckets, l)
		for _, u := range next {
			if st.level[u] != l {
				continue
			}
			for _, w := range g.Out.Nbrs(u) {
				if lw := st.level[w]; lw < 0 || l+1 < lw {
					st.level[w] = l + 1
					buckets[l+1] = append(buckets[l+1], w)
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	st.seq = g.Seq
	return false, nil
}

// BFSSummary is the result of a bfs analytic.
type BFSSummary struct {
	Root     uint64 `json:"root"`
	Seq      uint64 `json:"seq"`
	Reached  int    `json:"reached"`   // vertices at a finite level, the root included
	MaxLevel int    `json:"max_level"` // deepest level
	Levels   []int  `json:"levels"`    // vertices per level
}

func (a *bfs) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	s := BFSSummary{Root: a.root, Reached: 1, Levels: []int{1}}
	if a.st == nil {
		return s
	}
	s.Seq = a.st.seq
	s.Reached = 0
	s.Levels = s.Levels[:0]
	for _, l := range a.st.level {
		if l < 0 {
			continue
		}
		s.Reached++
		for int(l) >= len(s.Levels) {
			s.Levels = append(s.Levels, 0)
		}
		s.Levels[l]++
	}
	if s.Reached == 0 { // the root has no edges
		s.Reached, s.Levels = 1, []int{1}
	}
	s.MaxLevel = len(s.Levels) - 1
	return s
}

// VertexLevel is the per-vertex result of bfs: Level is -1 when unreached.
type VertexLevel struct {
	Level int `json:"level"`
}

func (a *bfs) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if v == a.root {
		return VertexLevel{0}, true
	}
	if a.st == nil {
		return nil, false
	}
	i, ok := a.st.ids.Index(v)
	if !ok {
		return VertexLevel{-1}, true
	}
	return VertexLevel{int(a.st.level[i])}, true
}

func (st *bfsState) sequence() uint64 { return st.seq }

// MemoryBytes is the size of the levels (4 bytes per vertex index).
func (a *bfs) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return sliceBytes(a.st.level)
}
