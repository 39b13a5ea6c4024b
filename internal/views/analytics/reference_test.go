package analytics

// Single-threaded reference algorithms on a plain map of edges: the oracle
// every analytic is checked against. They share no code with the analytics.

import (
	"container/heap"
	"fmt"
	"math"
	"sort"

	"github.com/graphtide/graphtide/internal/engine"
)

type ekey [2]uint64

// edges is a graph as a plain map (src, dst) -> weight.
type edges map[ekey]float64

func (g edges) clone() edges {
	c := make(edges, len(g))
	for k, v := range g {
		c[k] = v
	}
	return c
}

func (g edges) apply(op engine.Op) {
	switch op.Kind {
	case engine.OpUpsert:
		g[ekey{op.Src, op.Dst}] = op.Weight
	case engine.OpDeleteEdge:
		delete(g, ekey{op.Src, op.Dst})
	case engine.OpDeleteVertex:
		for k := range g {
			if k[0] == op.Src || k[1] == op.Src {
				delete(g, k)
			}
		}
	}
}

func (g edges) out() map[uint64][]uint64 {
	m := map[uint64][]uint64{}
	for k := range g {
		m[k[0]] = append(m[k[0]], k[1])
	}
	for _, l := range m {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	}
	return m
}

func (g edges) vertices() map[uint64]bool {
	m := map[uint64]bool{}
	for k := range g {
		m[k[0]], m[k[1]] = true, true
	}
	return m
}

// refBFS: level of every reachable vertex (the root at 0).
func refBFS(g edges, root uint64) map[uint64]int {
	out := g.out()
	lv := map[uint64]int{root: 0}
	q := []uint64{root}
	for len(q) > 0 {
		v := q[0]
		q = q[1:]
		for _, w := range out[v] {
			if _, ok := lv[w]; !ok {
				lv[w] = lv[v] + 1
				q = append(q, w)
			}
		}
	}
	return lv
}

// refWCC: component (smallest id) of every vertex with an edge.
func refWCC(g edges) map[uint64]uint64 {
	adj := map[uint64][]uint64{}
	for k := range g {
		adj[k[0]] = append(adj[k[0]], k[1])
		adj[k[1]] = append(adj[k[1]], k[0])
	}
	comp := map[uint64]uint64{}
	for v := range adj {
		if _, ok := comp[v]; ok {
			continue
		}
		seen := []uint64{v}
		comp[v] = v
		for i := 0; i < len(seen); i++ {
			for _, w := range adj[seen[i]] {
				if _, ok := comp[w]; !ok {
					comp[w] = v
					seen = append(seen, w)
				}
			}
		}
		m := v
		for _, x := range seen {
			m = min(m, x)
		}
		for _, x := range seen {
			comp[x] = m
		}
	}
	return comp
}

// refPageRank: the same definition as the analytic, iterated to a fixed
// point with a plain loop over the map.
func refPageRank(g edges, d float64) map[uint64]float64 {
	vs := g.vertices()
	out := g.out()
	n := float64(len(vs))
	r := map[uint64]float64{}
	for v := range vs {
		r[v] = 1 / n
	}
	for it := 0; it < 10000; it++ {
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

// refSSSP: Dijkstra.
func refSSSP(g edges, root uint64) map[uint64]float64 {
	out := g.out()
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
			nd := it.d + g[ekey{it.v, w}]
			if d, ok := dist[w]; !ok || nd < d {
				dist[w] = nd
				heap.Push(h, distItem{w, nd})
			}
		}
	}
	return dist
}

// refDegrees: degree per vertex in dir ("out", "in", "both").
func refDegrees(g edges, dir string) map[uint64]uint64 {
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

// refCycles: every simple directed cycle of length <= k, by canonical key.
func refCycles(g edges, k int) map[string][]uint64 {
	out := g.out()
	found := map[string][]uint64{}
	var path []uint64
	var dfs func(start, v uint64)
	dfs = func(start, v uint64) {
		for _, w := range out[v] {
			if w == start {
				c := append([]uint64(nil), path...)
				found[refKey(c)] = c
				continue
			}
			if w < start || len(path) == k {
				continue
			}
			dup := false
			for _, x := range path {
				dup = dup || x == w
			}
			if dup {
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

// refKey names a cycle by its rotation that starts at its smallest vertex.
func refKey(c []uint64) string {
	m := 0
	for i := range c {
		if c[i] < c[m] {
			m = i
		}
	}
	r := append(append([]uint64(nil), c[m:]...), c[:m]...)
	return fmt.Sprint(r)
}
