package analyticsbench

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

// refGraph is the loaded graph as plain out-lists by vertex id, for the
// reference kernels: they share no code with the views or the analytics
// they check, only the plain CSR's sort of the edges (a repeated edge
// once, with its last weight, as the store keeps it).
type refGraph struct {
	n   uint64
	off []int64 // n+1
	dst []uint64
	w   []float64 // nil: every weight is 1
}

func newRefGraph(g *edgeGraph) *refGraph {
	r := &refGraph{n: g.n, off: make([]int64, g.n+1), dst: g.dst, w: g.w}
	for k, v := range g.vids {
		r.off[v+1] = g.off[k+1] - g.off[k]
	}
	for v := range g.n {
		r.off[v+1] += r.off[v]
	}
	return r
}

func (g *refGraph) weight(k int64) float64 {
	if g.w == nil {
		return 1
	}
	return g.w[k]
}

// levels is a breadth-first search's level of every vertex from root (-1:
// not reached).
func (g *refGraph) levels(root uint64) []int {
	lv := make([]int, g.n)
	for i := range lv {
		lv[i] = -1
	}
	lv[root] = 0
	for q := []uint64{root}; len(q) > 0; q = q[1:] {
		v := q[0]
		for k := g.off[v]; k < g.off[v+1]; k++ {
			if d := g.dst[k]; lv[d] < 0 {
				lv[d] = lv[v] + 1
				q = append(q, d)
			}
		}
	}
	return lv
}

// components is each vertex's weakly connected component, named by its
// smallest vertex, and the component's size (union-find over the edges).
func (g *refGraph) components() (least []uint64, size []int) {
	parent := make([]uint64, g.n)
	for v := range parent {
		parent[v] = uint64(v)
	}
	find := func(v uint64) uint64 {
		for parent[v] != v {
			parent[v] = parent[parent[v]]
			v = parent[v]
		}
		return v
	}
	for v := range g.n {
		for k := g.off[v]; k < g.off[v+1]; k++ {
			a, b := find(v), find(g.dst[k])
			if a != b {
				// The smaller root wins: a root is its set's smallest id.
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	least, size = make([]uint64, g.n), make([]int, g.n)
	for v := range g.n {
		least[v] = find(v)
		size[least[v]]++
	}
	for v := range g.n {
		size[v] = size[least[v]]
	}
	return least, size
}

// distances is Dijkstra's distance of every vertex from root (+Inf: not
// reached); the weights must not be negative.
func (g *refGraph) distances(root uint64) []float64 {
	d := make([]float64, g.n)
	for i := range d {
		d[i] = math.Inf(1)
	}
	d[root] = 0
	h := &refHeap{{root, 0}}
	for h.Len() > 0 {
		it := heap.Pop(h).(refItem)
		if it.d > d[it.v] {
			continue
		}
		for k := g.off[it.v]; k < g.off[it.v+1]; k++ {
			if nd := it.d + g.weight(k); nd < d[g.dst[k]] {
				d[g.dst[k]] = nd
				heap.Push(h, refItem{g.dst[k], nd})
			}
		}
	}
	return d
}

type refItem struct {
	v uint64
	d float64
}

type refHeap []refItem

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h refHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)        { *h = append(*h, x.(refItem)) }
func (h *refHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// checkReference compares bfs, wcc and sssp (as the analytics computed
// them on the compacted view, by name in got) with the reference kernels
// on g at every vertex id, and returns the names it checked. sssp is left
// out when a weight is negative (Dijkstra does not apply).
func checkReference(g *refGraph, root uint64, got map[string]analytics.Analytic) ([]string, error) {
	lv := g.levels(root)
	for v := range g.n {
		x, _ := got["bfs"].Vertex(v)
		if l, ok := x.(analytics.VertexLevel); !ok || l.Level != lv[v] {
			return nil, fmt.Errorf("bfs: vertex %d: %+v, the reference's level %d", v, x, lv[v])
		}
	}
	least, size := g.components()
	for v := range g.n {
		x, _ := got["wcc"].Vertex(v)
		if c, ok := x.(analytics.VertexComponent); !ok || c.Component != least[v] || c.Size != size[v] {
			return nil, fmt.Errorf("wcc: vertex %d: %+v, the reference's component %d of %d vertices", v, x, least[v], size[v])
		}
	}
	checked := []string{"bfs", "wcc"}
	for _, w := range g.w {
		if w < 0 {
			return checked, nil
		}
	}
	dist := g.distances(root)
	for v := range g.n {
		x, _ := got["sssp"].Vertex(v)
		c, ok := x.(analytics.VertexDistance)
		want := dist[v]
		switch {
		case !ok:
		case math.IsInf(want, 1):
			ok = !c.Reachable
		default:
			ok = c.Reachable && math.Abs(c.Distance-want) <= 1e-9*math.Max(1, want)
		}
		if !ok {
			return nil, fmt.Errorf("sssp: vertex %d: %+v, the reference's distance %v", v, x, want)
		}
	}
	return append(checked, "sssp"), nil
}
