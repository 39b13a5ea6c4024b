package analytics

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// resize returns a, per-vertex values over the id space from, as values
// over the space to (which must hold every id of from), with new entries
// set to fill. When to extends from (one index generation, to no smaller)
// the values keep their indexes and a grows in place, with 25% slack since
// new vertices arrive with most batches; otherwise (the index laid out a
// new generation) every value moves to its id's new index.
func resize[T any](a []T, from, to views.IDSpace, fill T) []T {
	n := to.Len()
	if to.Extends(from) && len(a) <= n {
		if cap(a) < n {
			b := make([]T, len(a), n+n/4)
			copy(b, a)
			a = b
		}
		old := len(a)
		a = a[:n]
		for i := old; i < n; i++ {
			a[i] = fill
		}
		return a
	}
	b := make([]T, n, n+n/4)
	for i := range b {
		b[i] = fill
	}
	for i := range a {
		if j, ok := to.Index(from.ID(i)); ok {
			b[j] = a[i]
		}
	}
	return b
}

// rooted extends the per-vertex values of a single-source analytic from the
// id space from to to (new ids get far) and sets the root's value to zero
// when the root is in the space.
func rooted[T any](vals []T, from, to views.IDSpace, root uint64, zero, far T) []T {
	vals = resize(vals, from, to, far)
	if ri, ok := to.Index(root); ok {
		vals[ri] = zero
	}
	return vals
}

// unindexed is the error of a kernel that met a vertex its view's id space
// does not hold (the views package promises that it holds every vertex
// with an edge: this is a bug, reported rather than hidden).
func unindexed(v uint64) error {
	return fmt.Errorf("analytics: vertex %d has no index in the view's id space", v)
}

// sliceBytes is the memory of a slice's backing array.
func sliceBytes[T any](a []T) int64 {
	var zero T
	return int64(cap(a)) * int64(unsafe.Sizeof(zero))
}

// netOps is the net effect of a sequence of operations on each edge and
// vertex they touch.
type netOps struct {
	// Upserts: edges present at the end, in order of their last upsert.
	Upserts []engine.Op
	// Deletes: edges removed (by an edge delete, or by a later vertex
	// delete of an endpoint) that were not upserted again afterwards.
	Deletes [][2]uint64
	// VDels: vertices deleted.
	VDels []uint64
}

// net computes the net effect of edges, in order.
func net(edges []views.Edge) netOps {
	type last struct {
		i   int
		del bool
	}
	lastOp := map[[2]uint64]last{}
	lastVDel := map[uint64]int{}
	var order [][2]uint64
	var n netOps
	for i, e := range edges {
		switch e.Op.Kind {
		case engine.OpDeleteVertex:
			if _, seen := lastVDel[e.Op.Src]; !seen {
				n.VDels = append(n.VDels, e.Op.Src)
			}
			lastVDel[e.Op.Src] = i
		default:
			k := [2]uint64{e.Op.Src, e.Op.Dst}
			if _, seen := lastOp[k]; !seen {
				order = append(order, k)
			}
			lastOp[k] = last{i, e.Op.Kind == engine.OpDeleteEdge}
		}
	}
	var ups []int
	for _, k := range order {
		l := lastOp[k]
		vd := -1
		if j, ok := lastVDel[k[0]]; ok {
			vd = j
		}
		if j, ok := lastVDel[k[1]]; ok && j > vd {
			vd = j
		}
		if l.del || vd > l.i {
			n.Deletes = append(n.Deletes, k)
		} else {
			ups = append(ups, l.i)
		}
	}
	// Upserts in the order they happened.
	slices.Sort(ups)
	for _, i := range ups {
		n.Upserts = append(n.Upserts, edges[i].Op)
	}
	return n
}

// edgeWeights returns, for each (src, dst) asked, its weight in g and
// whether it exists, reading the neighbors of all sources in one pass.
func edgeWeights(g views.Graph, pairs [][2]uint64) (map[[2]uint64]float64, error) {
	out := map[[2]uint64]float64{}
	if len(pairs) == 0 {
		return out, nil
	}
	want := map[uint64]map[uint64]bool{}
	var srcs []uint64
	for _, p := range pairs {
		if want[p[0]] == nil {
			want[p[0]] = map[uint64]bool{}
			srcs = append(srcs, p[0])
		}
		want[p[0]][p[1]] = true
	}
	err := g.GatherEach(srcs, engine.Out, true, func(i int, nb []uint64, ws []float64) {
		s := srcs[i]
		for j, d := range nb {
			if want[s][d] {
				w := 1.0
				if ws != nil {
					w = ws[j]
				}
				out[[2]uint64{s, d}] = w
			}
		}
	})
	return out, err
}

// guarded holds a graph analytic's state: a recompute builds a new state
// and swaps it in whole (readers keep the old one until then), an
// incremental update changes it in place under the write lock.
type guarded[S interface {
	comparable
	sequence() uint64
}] struct {
	mu sync.RWMutex
	st S // Protected by mu; the zero S until the first compute.
}

// Seq is the sequence number the state corresponds to (0 before the first
// compute).
func (g *guarded[S]) Seq() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var zero S
	if g.st == zero {
		return 0
	}
	return g.st.sequence()
}

func (g *guarded[S]) swap(st S) {
	g.mu.Lock()
	g.st = st
	g.mu.Unlock()
}

// unlocked runs f without the write lock its caller holds (an update that
// falls back to a recompute, which swaps the state itself).
func (g *guarded[S]) unlocked(f func() error) error {
	g.mu.Unlock()
	defer g.mu.Lock()
	return f()
}
