// Package staticcsr is a plain, immutable, in-memory compressed sparse row
// (CSR) graph. It is the baseline for the "scan every out-neighbor of every
// vertex" benchmark, the best case any streaming store can be compared
// against, and the oracle that tests check graphtide's answers with.
//
// A CSR built from an edge list holds each distinct (src, dst) pair once,
// regardless of how often it occurs in the input, and lists each vertex's
// out-neighbors in ascending order. Memory is 8 bytes per distinct edge plus
// 8 bytes per vertex (plus one).
package staticcsr

import (
	"fmt"
	"slices"

	"github.com/graphtide/graphtide/internal/gen"
)

// CSR is an immutable directed graph over vertex ids 0 .. NumVertices()-1.
// It is safe for concurrent readers.
type CSR struct {
	// offsets[v] .. offsets[v+1] delimit v's neighbors in targets.
	offsets []uint64
	targets []uint64
}

// Build returns the CSR of edges over numVertices vertices: edges are
// grouped by src with a counting sort, each vertex's neighbors are sorted by
// dst, and duplicate (src, dst) pairs are kept once. The input slice is not
// modified. Build panics if an endpoint is >= numVertices, since that means
// the caller passed the wrong vertex count.
func Build(numVertices uint64, edges []gen.Edge) *CSR {
	offsets := make([]uint64, numVertices+1)
	for i, e := range edges {
		if e.Src >= numVertices || e.Dst >= numVertices {
			panic(fmt.Sprintf("staticcsr: edge %d (%d -> %d) has an endpoint outside [0, %d)",
				i, e.Src, e.Dst, numVertices))
		}
		offsets[e.Src+1]++
	}
	for v := range numVertices {
		offsets[v+1] += offsets[v]
	}

	// Scatter dsts into their src's segment.
	targets := make([]uint64, len(edges))
	next := slices.Clone(offsets[:numVertices])
	for _, e := range edges {
		targets[next[e.Src]] = e.Dst
		next[e.Src]++
	}

	// Sort and deduplicate each segment, compacting in place. The write
	// position never passes the read position, and offsets[v+1] is read
	// before it is overwritten on the next iteration.
	var w uint64
	for v := range numVertices {
		start, end := offsets[v], offsets[v+1]
		offsets[v] = w
		seg := targets[start:end]
		slices.Sort(seg)
		for i, d := range seg {
			if i > 0 && d == seg[i-1] {
				continue
			}
			targets[w] = d
			w++
		}
	}
	offsets[numVertices] = w
	return &CSR{offsets: offsets, targets: slices.Clip(targets[:w])}
}

// NumVertices returns the size of the vertex id space.
func (c *CSR) NumVertices() uint64 { return uint64(len(c.offsets) - 1) }

// NumEdges returns the number of distinct edges.
func (c *CSR) NumEdges() uint64 { return uint64(len(c.targets)) }

// Neighbors returns v's out-neighbors in ascending order. The slice aliases
// the CSR's storage and must not be modified; its capacity is clipped so
// appending to it cannot corrupt the graph. It panics if v >= NumVertices().
func (c *CSR) Neighbors(v uint64) []uint64 {
	c.checkVertex(v)
	return c.targets[c.offsets[v]:c.offsets[v+1]:c.offsets[v+1]]
}

// Degree returns the number of distinct out-neighbors of v. It panics if
// v >= NumVertices().
func (c *CSR) Degree(v uint64) uint64 {
	c.checkVertex(v)
	return c.offsets[v+1] - c.offsets[v]
}

func (c *CSR) checkVertex(v uint64) {
	if v >= c.NumVertices() {
		panic(fmt.Sprintf("staticcsr: vertex %d outside [0, %d)", v, c.NumVertices()))
	}
}
