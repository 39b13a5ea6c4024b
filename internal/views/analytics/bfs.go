package analytics

import (
	"context"
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
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

// bfsLevels computes the levels from root on g: top-down, reading the
// frontier's neighbors with one Gather when it is small and with one scan
// of the whole graph when it is large.
func bfsLevels(ctx context.Context, g views.Graph, root uint64) (*bfsState, error) {
	ids, err := g.IDs()
	if err != nil {
		return nil, err
	}
	st := &bfsState{ids: ids, level: make([]int32, ids.Len()), seq: g.Seq()}
	for i := range st.level {
		st.level[i] = -1
	}
	ri, ok := ids.Index(root)
	if !ok {
		return st, nil // the root has no edges: it reaches nothing
	}
	st.level[ri] = 0
	frontier := []uint64{root}
	var next []uint64
	tr := &translator{ids: ids}
	for cur := int32(0); len(frontier) > 0; cur++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next = next[:0]
		visit := func(nb []uint64) {
			js := tr.of(nb)
			for k, j := range js {
				if st.level[j] == -1 {
					st.level[j] = cur + 1
					next = append(next, nb[k])
				}
			}
		}
		var err error
		if len(frontier) > ids.Len()/32 {
			err = g.Each(engine.Out, false, func(v uint64, nb []uint64, _ []float64) {
				if i, ok := ids.Index(v); ok && st.level[i] == cur {
					visit(nb)
				} else if !ok {
					tr.fail(v)
				}
			})
		} else {
			slices.Sort(frontier)
			err = g.GatherEach(frontier, engine.Out, false, func(_ int, nb []uint64, _ []float64) { visit(nb) })
		}
		if err != nil {
			return nil, err
		}
		if err := tr.err(); err != nil {
			return nil, err
		}
		frontier, next = next, frontier
	}
	return st, nil
}

func (a *bfs) Recompute(ctx context.Context, g views.Graph) error {
	st, err := bfsLevels(ctx, g, a.root)
	if err != nil {
		return err
	}
	a.swap(st)
	return nil
}

func (a *bfs) Update(ctx context.Context, u *views.Update) (bool, error) {
	if u.Lost {
		return true, a.Recompute(ctx, u.View)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	ids, err := u.View.IDs()
	if err != nil {
		return false, err
	}
	var lvl func(uint64) int32
	st.level, lvl = rooted(st.level, st.ids, ids, a.root, 0, -1)
	st.ids = ids
	n := net(u.Edges)
	recompute := false
	for _, x := range n.VDels {
		recompute = recompute || lvl(x) >= 0
	}
	var heads []uint64
	for _, d := range n.Deletes {
		if la := lvl(d[0]); la >= 0 && lvl(d[1]) == la+1 {
			heads = append(heads, d[1])
		}
	}
	if !recompute && len(heads) > 0 {
		if !u.View.HasIn() {
			recompute = true
		} else {
			slices.Sort(heads)
			heads = slices.Compact(heads)
			err := u.View.GatherEach(heads, engine.In, false, func(i int, nb []uint64, _ []float64) {
				want := lvl(heads[i]) - 1
				for _, w := range nb {
					if lvl(w) == want {
						return
					}
				}
				recompute = true
			})
			if err != nil {
				return false, err
			}
		}
	}
	if recompute {
		return true, a.unlocked(func() error { return a.Recompute(ctx, u.View) })
	}
	// Inserts lower levels: relax from the new edges, level by level.
	buckets := map[int32][]uint64{}
	minL := int32(-1)
	missing, bad := uint64(0), false
	set := func(v uint64, l int32) {
		i, ok := ids.Index(v)
		if !ok {
			missing, bad = v, true
			return
		}
		if st.level[i] == -1 || l < st.level[i] {
			st.level[i] = l
			buckets[l] = append(buckets[l], v)
			if minL == -1 || l < minL {
				minL = l
			}
		}
	}
	for _, op := range n.Upserts {
		if la := lvl(op.Src); la >= 0 {
			set(op.Dst, la+1)
		}
	}
	for l := minL; l >= 0 && len(buckets) > 0; l++ {
		vs := buckets[l]
		delete(buckets, l)
		keep := vs[:0]
		for _, v := range vs {
			if lvl(v) == l {
				keep = append(keep, v)
			}
		}
		slices.Sort(keep)
		keep = slices.Compact(keep)
		err := u.View.GatherEach(keep, engine.Out, false, func(_ int, nb []uint64, _ []float64) {
			for _, w := range nb {
				set(w, l+1)
			}
		})
		if err != nil {
			return false, err
		}
	}
	if bad {
		return false, unindexed(missing)
	}
	st.seq = u.View.Seq()
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
