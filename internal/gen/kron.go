package gen

import (
	"cmp"
	"slices"
)

// Kronecker configures the Graph500 Kronecker graph as a simple graph: the
// RMAT generator's EdgeFactor·2^Scale draws (the same quadrant
// probabilities, no noise, the same seeded random permutation of the
// vertex ids) with self-loops and repeated edges dropped, the rest
// shuffled. This is the graph Graph500's kernels traverse, and the one
// other systems' benchmarks (Differential Dataflow, GAPBS) are usually
// given; it has fewer than EdgeFactor·2^Scale edges (about 0.96 of them at
// scale 20, edge factor 16), and its hubs' degrees are their distinct
// neighbors.
//
// The draws are those of RMAT with the same fields: the Kronecker graph of
// a seed is the R-MAT graph of that seed made simple, so the two families
// differ only in the self-loops and repeats the R-MAT one keeps.
type Kronecker struct {
	Scale      int    // log2 of the number of vertices, MinScale..MaxScale
	EdgeFactor int    // draws per vertex, at least 1
	Seed       uint64 // seed for every random choice
	A, B, C    float64
}

func (k Kronecker) rmat() RMAT {
	return RMAT(k)
}

// Validate reports whether the configuration can be generated.
func (k Kronecker) Validate() error { return k.rmat().Validate() }

// NumVertices returns 2^Scale, the size of the vertex id space.
func (k Kronecker) NumVertices() uint64 { return k.rmat().NumVertices() }

// Generate returns the graph's edges: distinct, without self-loops,
// shuffled. It panics if Validate reports an error.
func (k Kronecker) Generate() []Edge {
	edges, _ := k.GenerateWithTail(0)
	return edges
}

// GenerateWithTail returns Generate's edges and, in more, up to tail
// further edges drawn by the same sampler after the graph's draws (the
// same distribution and permutation, in generation order), each new: not
// a self-loop, not an edge of the graph, not drawn before. So more is a
// stream of insertions into the graph that lands on its hubs as the
// graph's own edges do. It holds fewer than tail edges only when the
// draws stop finding new edges (64 draws per edge asked for, plus 4096,
// have been made: only on graphs too small to hold them). It panics if
// Validate reports an error or tail is negative.
func (k Kronecker) GenerateWithTail(tail int) (edges, more []Edge) {
	r := k.rmat()
	s := r.newSampler()
	edges = make([]Edge, 0, r.NumEdges())
	for range r.NumEdges() {
		if e := s.next(); e.Src != e.Dst {
			edges = append(edges, e)
		}
	}
	// Sorted, the repeats are adjacent (and equal: which one is kept does
	// not matter); the shuffle below fixes the order.
	slices.SortFunc(edges, compareEdges)
	edges = slices.Compact(edges)
	more = make([]Edge, 0, tail)
	drawn := make(map[Edge]struct{}, tail)
	for tries := 64*tail + 4096; len(more) < tail && tries > 0; tries-- {
		e := s.next()
		if e.Src == e.Dst {
			continue
		}
		if _, ok := slices.BinarySearchFunc(edges, e, compareEdges); ok {
			continue
		}
		if _, ok := drawn[e]; ok {
			continue
		}
		drawn[e] = struct{}{}
		more = append(more, e)
	}
	shuffleEdges(r.Seed, edges)
	return edges, more
}

func compareEdges(a, b Edge) int {
	return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst))
}
