package repair

import (
	"fmt"
	"unsafe"

	"github.com/graphtide/graphtide/internal/views"
)

// Resize returns a, per-vertex values over the id space from, as values
// over the space to (which must hold every id of from), with new entries
// set to fill. When to extends from (one index generation, to no smaller)
// the values keep their indexes and a grows in place, with 25% slack since
// new vertices arrive with most batches; otherwise (the index laid out a
// new generation) every value moves to its id's new index.
func Resize[T any](a []T, from, to views.IDSpace, fill T) []T {
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
	vals = Resize(vals, from, to, far)
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

// SliceBytes is the memory of a slice's backing array.
func SliceBytes[T any](a []T) int64 {
	var zero T
	return int64(cap(a)) * int64(unsafe.Sizeof(zero))
}

// Marks is a state per vertex index (0: none) over a slice kept across
// runs: put records each vertex it marks, and clear returns those to 0, so
// the slice is all 0 between runs and a run costs the vertices it marks,
// not the graph.
type Marks struct {
	state  []uint8
	marked []int32
	q      levelQueue // the unit searches' queue, reused
	// cut, ups: the buffers of changes, reused (a batch's are read until
	// the next run).
	cut, ups [][2]int32
}

// start makes the marks cover n indexes (new ones 0) for a run.
func (m *Marks) start(n int) {
	if len(m.state) < n {
		m.state = append(m.state, make([]uint8, n-len(m.state))...)
	}
}

// put sets v's state to x (not 0).
func (m *Marks) put(v int32, x uint8) {
	m.marked = append(m.marked, v)
	m.state[v] = x
}

// clear ends a run: every state is 0 again.
func (m *Marks) clear() {
	for _, v := range m.marked {
		m.state[v] = 0
	}
	m.marked = m.marked[:0]
}

// Bytes is the marks' memory, their buffers included.
func (m *Marks) Bytes() int64 {
	return SliceBytes(m.state) + SliceBytes(m.marked) + m.q.bytes() + SliceBytes(m.cut) + SliceBytes(m.ups)
}
