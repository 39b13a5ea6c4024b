package analytics

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// sssp keeps shortest-path distances from root along out-edges, edge
// weights as lengths (they must not be negative).
//
// INVARIANT (between calls, unless err is set): dist is exactly the
// shortest distance in the graph at seq (+Inf when unreachable). An edge
// (a, b, w) is tight when dist[a] + w = dist[b]; removing or lengthening an
// edge that is not tight changes no distance, inserting or shortening one
// only lowers distances, which relax from its head. Otherwise: recompute.
type sssp struct {
	spec Spec
	root uint64

	guarded[*ssspState]
}

type ssspState struct {
	ids  views.IDSpace
	dist []float64
	seq  uint64
	err  string // set when a negative weight was met: dist is not valid
}

func newSSSP(s Spec, root uint64) *sssp { return &sssp{spec: s, root: root} }

func (a *sssp) Spec() Spec { return a.spec }

// bucketHeap is a min-heap of bucket numbers.
type bucketHeap []int64

func (h bucketHeap) Len() int           { return len(h) }
func (h bucketHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h bucketHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bucketHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *bucketHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// ssspDelta is the bucket width of delta-stepping.
const ssspDelta = 1.0

// relax runs delta-stepping from seeds (their dist already lowered):
// buckets of width ssspDelta are settled smallest first, each round
// reading the neighbors of all the bucket's vertices in one Gather.
func (st *ssspState) relax(ctx context.Context, g views.Graph, seeds []uint64) error {
	buckets := map[int64][]uint64{}
	var h bucketHeap
	tr := &translator{ids: st.ids}
	push := func(v uint64, d float64) {
		b := int64(math.Floor(d / ssspDelta))
		if _, ok := buckets[b]; !ok {
			heap.Push(&h, b)
		}
		buckets[b] = append(buckets[b], v)
	}
	for _, v := range seeds {
		i, ok := st.ids.Index(v)
		if !ok {
			return unindexed(v)
		}
		push(v, st.dist[i])
	}
	for h.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := heap.Pop(&h).(int64)
		for len(buckets[b]) > 0 {
			vs := buckets[b]
			buckets[b] = nil
			keep := vs[:0]
			for _, v := range vs {
				i, _ := st.ids.Index(v) // pushed only once indexed
				if int64(math.Floor(st.dist[i]/ssspDelta)) == b {
					keep = append(keep, v)
				}
			}
			slices.Sort(keep)
			keep = slices.Compact(keep)
			var bad error
			err := g.GatherEach(keep, engine.Out, true, func(k int, nb []uint64, ws []float64) {
				i, _ := st.ids.Index(keep[k])
				dv := st.dist[i]
				js := tr.of(nb)
				for x, j := range js {
					w := nb[x]
					wt := 1.0
					if ws != nil {
						wt = ws[x]
					}
					if wt < 0 && bad == nil {
						bad = fmt.Errorf("negative weight %v on edge (%d, %d): sssp needs non-negative weights", wt, keep[k], w)
					}
					if nd := dv + wt; nd < st.dist[j] {
						st.dist[j] = nd
						nk := int64(math.Floor(nd / ssspDelta))
						if nk < b {
							nk = b // only with a negative weight
						}
						if _, ok := buckets[nk]; !ok && nk != b {
							heap.Push(&h, nk)
						}
						buckets[nk] = append(buckets[nk], w)
					}
				}
			})
			if err != nil {
				return err
			}
			if err := tr.err(); err != nil {
				return err
			}
			if bad != nil {
				st.err = bad.Error()
				return nil
			}
		}
		delete(buckets, b)
	}
	return nil
}

func ssspCompute(ctx context.Context, g views.Graph, root uint64) (*ssspState, error) {
	ids, err := g.IDs()
	if err != nil {
		return nil, err
	}
	st := &ssspState{ids: ids, dist: make([]float64, ids.Len()), seq: g.Seq()}
	for i := range st.dist {
		st.dist[i] = math.Inf(1)
	}
	if ri, ok := ids.Index(root); ok {
		st.dist[ri] = 0
		if err := st.relax(ctx, g, []uint64{root}); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (a *sssp) Recompute(ctx context.Context, g views.Graph) error {
	st, err := ssspCompute(ctx, g, a.root)
	if err != nil {
		return err
	}
	a.swap(st)
	return nil
}

// tight reports whether an edge of length w from a distance da reaches db
// exactly (with room for rounding: erring towards tight only recomputes).
func tight(da, w, db float64) bool {
	return !math.IsInf(da, 1) && da+w <= db+1e-9*math.Max(1, math.Abs(db))
}

func (a *sssp) Update(ctx context.Context, u *views.Update) (bool, error) {
	a.mu.RLock()
	failed := a.st.err != ""
	a.mu.RUnlock()
	if u.Lost || failed {
		return true, a.Recompute(ctx, u.View)
	}
	n := net(u.Edges)
	// Old lengths of the edges deleted or upserted.
	pairs := append([][2]uint64(nil), n.Deletes...)
	for _, op := range n.Upserts {
		pairs = append(pairs, [2]uint64{op.Src, op.Dst})
	}
	old, err := edgeWeights(u.Old, pairs)
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	ids, err := u.View.IDs()
	if err != nil {
		return false, err
	}
	var dist func(uint64) float64
	st.dist, dist = rooted(st.dist, st.ids, ids, a.root, 0, math.Inf(1))
	st.ids = ids
	recompute := false
	for _, x := range n.VDels {
		recompute = recompute || !math.IsInf(dist(x), 1)
	}
	for _, d := range n.Deletes {
		if w0, ok := old[d]; ok && tight(dist(d[0]), w0, dist(d[1])) {
			recompute = true
		}
	}
	var seeds []uint64
	for _, op := range n.Upserts {
		k := [2]uint64{op.Src, op.Dst}
		if op.Weight < 0 {
			recompute = true // the recompute reports it
		}
		if w0, ok := old[k]; ok && op.Weight > w0 && tight(dist(op.Src), w0, dist(op.Dst)) {
			recompute = true
		}
		if recompute {
			break
		}
		if nd := dist(op.Src) + op.Weight; nd < dist(op.Dst) {
			j, ok := ids.Index(op.Dst)
			if !ok {
				return false, unindexed(op.Dst)
			}
			st.dist[j] = nd
			seeds = append(seeds, op.Dst)
		}
	}
	if recompute {
		return true, a.unlocked(func() error { return a.Recompute(ctx, u.View) })
	}
	if err := st.relax(ctx, u.View, seeds); err != nil {
		return false, err
	}
	st.seq = u.View.Seq()
	return false, nil
}

// SSSPSummary is the result of an sssp analytic.
type SSSPSummary struct {
	Root    uint64  `json:"root"`
	Seq     uint64  `json:"seq"`
	Reached int     `json:"reached"`
	MaxDist float64 `json:"max_distance"`
	Error   string  `json:"error,omitempty"`
}

func (a *sssp) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	s := SSSPSummary{Root: a.root, Reached: 1}
	if a.st == nil {
		return s
	}
	s.Seq, s.Error, s.Reached = a.st.seq, a.st.err, 0
	for _, d := range a.st.dist {
		if !math.IsInf(d, 1) {
			s.Reached++
			s.MaxDist = math.Max(s.MaxDist, d)
		}
	}
	s.Reached = max(s.Reached, 1)
	return s
}

// VertexDistance is the per-vertex result of sssp (Reachable false: no
// path).
type VertexDistance struct {
	Distance  float64 `json:"distance"`
	Reachable bool    `json:"reachable"`
}

func (a *sssp) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if v == a.root {
		return VertexDistance{0, true}, true
	}
	if a.st == nil {
		return nil, false
	}
	i, ok := a.st.ids.Index(v)
	if !ok || math.IsInf(a.st.dist[i], 1) {
		return VertexDistance{}, true
	}
	return VertexDistance{a.st.dist[i], true}, true
}

func (st *ssspState) sequence() uint64 { return st.seq }

// MemoryBytes is the size of the distances (8 bytes per vertex index).
func (a *sssp) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.st == nil {
		return 0
	}
	return sliceBytes(a.st.dist)
}
