package analytics

import (
	"context"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// bfs keeps the BFS level of every vertex reachable from root along
// out-edges.
//
// level[i] is the level of the vertex with dense index i, -1 when it is
// unreached. INVARIANT (between calls): level is exactly the BFS level in
// the graph at seq. A recompute is the direction-optimizing kernel; an
// update repairs the levels the batch changed (repair.Dists), and recomputes
// only when that region is over an eighth of the graph.
type bfs struct {
	spec Spec
	root uint64
	// work is the edges the last update read (its repair). Protected by mu.
	work int
	// mark is the repairs' per-vertex marks (repair.Dists). Protected by
	// mu.
	mark repair.Marks

	guarded[*bfsState]
}

type bfsState struct {
	ids   views.IDSpace
	level []int32
	// parent: for the repairs, an in-neighbor of each reached vertex but
	// the root one level nearer, or -1 (see repair.parent); nil after a
	// checkpoint is loaded (the next update finds them). Not a result.
	parent []int32
	seq    uint64
}

func newBFS(s Spec, root uint64) *bfs { return &bfs{spec: s, root: root} }

func (a *bfs) Spec() Spec { return a.spec }

func (a *bfs) Recompute(ctx context.Context, g *views.Topo) error {
	level, parent, err := kernels.BFS(ctx, g, kernels.Index(g, a.root))
	if err != nil {
		return err
	}
	a.swap(&bfsState{ids: g.IDs, level: level, parent: parent, seq: g.Seq})
	return nil
}

func (a *bfs) Update(ctx context.Context, g *views.Topo, edges []views.Edge) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	level, ok, err := repair.Dists(g, st.level, st.ids, edges, nil, a.root, -1, true, &st.parent, &a.work, &a.mark)
	if err != nil {
		return false, err
	}
	st.level, st.ids = level, g.IDs
	if !ok {
		return true, a.unlocked(func() error { return a.Recompute(ctx, g) })
	}
	st.seq = g.Seq
	return false, ctx.Err()
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

func (st *bfsState) Sequence() uint64 { return st.seq }

// MemoryBytes is the size of the levels and parents (4 bytes each per
// vertex index) and of the repairs' marks (1).
func (a *bfs) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return repair.SliceBytes(a.st.level) + repair.SliceBytes(a.st.parent) + a.mark.Bytes()
}
