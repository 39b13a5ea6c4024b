// Package testref is the independent oracle graphtide's tests check their
// answers against: a plain map of edges updated op by op with the store's
// documented semantics, and single-threaded reference algorithms over it
// (BFS, weakly connected components, PageRank, Dijkstra, degrees, simple
// cycles). It shares no code with the store, the views or the analytics
// it checks, and is imported by tests only.
package testref

import (
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
)

// Edges is a graph as a plain map (src, dst) -> weight.
type Edges map[[2]uint64]float64

// Apply applies one op: an upsert sets the weight, a delete removes the
// edge, a vertex delete removes every edge into or out of the vertex.
func (g Edges) Apply(op engine.Op) {
	switch op.Kind {
	case engine.OpUpsert:
		g[[2]uint64{op.Src, op.Dst}] = op.Weight
	case engine.OpDeleteEdge:
		delete(g, [2]uint64{op.Src, op.Dst})
	case engine.OpDeleteVertex:
		for k := range g {
			if k[0] == op.Src || k[1] == op.Src {
				delete(g, k)
			}
		}
	}
}

// ApplyBatch applies a batch's ops in order.
func (g Edges) ApplyBatch(b *engine.Batch) {
	for i := 0; i < b.Len(); i++ {
		g.Apply(b.Op(i))
	}
}

// AddOp adds op to b (the tests build their batches from ops).
func AddOp(b *engine.Batch, op engine.Op) {
	switch op.Kind {
	case engine.OpUpsert:
		b.InsertWeighted(op.Src, op.Dst, op.Weight)
	case engine.OpDeleteEdge:
		b.DeleteEdge(op.Src, op.Dst)
	default:
		b.DeleteVertex(op.Src)
	}
	if op.Type != 0 {
		b.SetType(op.Type)
	}
}

// Clone copies the graph.
func (g Edges) Clone() Edges {
	c := make(Edges, len(g))
	for k, v := range g {
		c[k] = v
	}
	return c
}

// Adj returns each vertex's dir-neighbors, sorted.
func (g Edges) Adj(dir engine.Direction) map[uint64][]uint64 {
	m := map[uint64][]uint64{}
	for k := range g {
		a, b := k[0], k[1]
		if dir == engine.In {
			a, b = b, a
		}
		m[a] = append(m[a], b)
	}
	for _, ns := range m {
		slices.Sort(ns)
	}
	return m
}

// Weight of the dir-edge from a to b (0 when absent).
func (g Edges) Weight(a, b uint64, dir engine.Direction) float64 {
	if dir == engine.In {
		a, b = b, a
	}
	return g[[2]uint64{a, b}]
}

// Vertices are the endpoints of every edge.
func (g Edges) Vertices() map[uint64]bool {
	m := map[uint64]bool{}
	for k := range g {
		m[k[0]], m[k[1]] = true, true
	}
	return m
}

// BFS returns the level of every vertex reachable from root along
// out-edges, the root at 0.
func BFS(g Edges, root uint64) map[uint64]int {
	out := g.Adj(engine.Out)
	lv := map[uint64]int{root: 0}
	for q := []uint64{root}; len(q) > 0; q = q[1:] {
		for _, w := range out[q[0]] {
			if _, ok := lv[w]; !ok {
				lv[w] = lv[q[0]] + 1
				q = append(q, w)
			}
		}
	}
	return lv
}

// Components names each vertex with an edge by the smallest id of its
// weakly connected component, and gives each component's size (by name).
func Components(g Edges) (comp map[uint64]uint64, size map[uint64]int) {
	und := map[uint64][]uint64{}
	for k := range g {
		und[k[0]] = append(und[k[0]], k[1])
		und[k[1]] = append(und[k[1]], k[0])
	}
	comp, size = map[uint64]uint64{}, map[uint64]int{}
	for v := range und {
		if _, ok := comp[v]; ok {
			continue
		}
		seen := []uint64{v}
		comp[v] = v
		for i := 0; i < len(seen); i++ {
			for _, w := range und[seen[i]] {
				if _, ok := comp[w]; !ok {
					comp[w] = v
					seen = append(seen, w)
				}
			}
		}
		m := slices.Min(seen)
		for _, x := range seen {
			comp[x] = m
		}
		size[m] = len(seen)
	}
	return comp, size
}

// PageRank over the vertices with an edge (N of them), damping d, with the
// rank of vertices without out-edges spread over all N, iterated to a
// fixed point:
//
//	rank'(v) = (1-d)/N + d * (sum over in-edges (u,v) of rank(u)/outdeg(u) + D/N)
func PageRank(g Edges, d float64) map[uint64]float64 { return PageRankSteps(g, d, 10000) }

// PageRankSteps is PageRank after at most steps iterations from 1/N at
// every vertex with an edge (fewer when an iteration changes the ranks by
// less than 1e-14 in L1).
func PageRankSteps(g Edges, d float64, steps int) map[uint64]float64 {
	vs := g.Vertices()
	out := g.Adj(engine.Out)
	n := float64(len(vs))
	r := map[uint64]float64{}
	for v := range vs {
		r[v] = 1 / n
	}
	for it := 0; it < steps; it++ {
		next := map[uint64]float64{}
		dangling := 0.0
		for v := range vs {
			if len(out[v]) == 0 {
				dangling += r[v]
			}
			for _, w := range out[v] {
				next[w] += r[v] / float64(len(out[v]))
			}
		}
		delta := 0.0
		for v := range vs {
			x := (1-d)/n + d*(next[v]+dangling/n)
			delta += math.Abs(x - r[v])
			r[v] = x
		}
		if delta < 1e-14 {
			break
		}
	}
	return r
}

type distItem struct {
	v uint64
	d float64
}
type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// Dijkstra returns the distance, weights as lengths (non-negative), of
// every vertex reachable from root along out-edges.
func Dijkstra(g Edges, root uint64) map[uint64]float64 {
	out := g.Adj(engine.Out)
	dist := map[uint64]float64{root: 0}
	h := &distHeap{{root, 0}}
	done := map[uint64]bool{}
	for h.Len() > 0 {
		it := heap.Pop(h).(distItem)
		if done[it.v] {
			continue
		}
		done[it.v] = true
		for _, w := range out[it.v] {
			nd := it.d + g[[2]uint64{it.v, w}]
			if d, ok := dist[w]; !done[w] && (!ok || nd < d) {
				dist[w] = nd
				heap.Push(h, distItem{w, nd})
			}
		}
	}
	return dist
}

// Degrees per vertex in dir: "out", "in" or "both".
func Degrees(g Edges, dir string) map[uint64]uint64 {
	deg := map[uint64]uint64{}
	for k := range g {
		if dir != "in" {
			deg[k[0]]++
		}
		if dir != "out" {
			deg[k[1]]++
		}
	}
	return deg
}

// Cycles returns every simple directed cycle of length at most k, by
// CycleKey, each listed from its smallest vertex.
func Cycles(g Edges, k int) map[string][]uint64 {
	out := g.Adj(engine.Out)
	found := map[string][]uint64{}
	var path []uint64
	var dfs func(start, v uint64)
	dfs = func(start, v uint64) {
		for _, w := range out[v] {
			if w == start {
				c := slices.Clone(path)
				found[CycleKey(c)] = c
				continue
			}
			if w < start || len(path) == k || slices.Contains(path, w) {
				continue
			}
			path = append(path, w)
			dfs(start, w)
			path = path[:len(path)-1]
		}
	}
	for v := range out {
		path = []uint64{v}
		dfs(v, v)
	}
	return found
}

// CycleKey names a cycle by its rotation that starts at its smallest vertex.
func CycleKey(c []uint64) string {
	m := 0
	for i := range c {
		if c[i] < c[m] {
			m = i
		}
	}
	return fmt.Sprint(append(slices.Clone(c[m:]), c[:m]...))
}

// TypedEdges is a store with edge types as a plain map (src, dst, type) ->
// weight.
type TypedEdges map[[3]uint64]float64

// Apply applies one op: an upsert sets the weight of its typed edge, a
// delete removes that typed edge only, a vertex delete removes every edge
// into or out of the vertex, of every type.
func (g TypedEdges) Apply(op engine.Op) {
	switch op.Kind {
	case engine.OpUpsert:
		g[[3]uint64{op.Src, op.Dst, uint64(op.Type)}] = op.Weight
	case engine.OpDeleteEdge:
		delete(g, [3]uint64{op.Src, op.Dst, uint64(op.Type)})
	case engine.OpDeleteVertex:
		for k := range g {
			if k[0] == op.Src || k[1] == op.Src {
				delete(g, k)
			}
		}
	}
}

// Simple is the simple graph of the types ts holds (nil: all) that the
// analytics read: an edge (a, b) where an edge of one of those types joins
// a to b, weighing the least of their weights.
func (g TypedEdges) Simple(ts *engine.TypeSet) Edges {
	out := Edges{}
	for k, w := range g {
		if ts != nil && !ts.Has(uint16(k[2])) {
			continue
		}
		e := [2]uint64{k[0], k[1]}
		if old, ok := out[e]; !ok || w < old {
			out[e] = w
		}
	}
	return out
}
