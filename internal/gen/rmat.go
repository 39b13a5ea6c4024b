package gen

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/graphtide/graphtide/internal/edgefile"
)

// Edge is a directed edge from Src to Dst (the edge files' edge).
type Edge = edgefile.Edge

// Graph500 default quadrant probabilities; D = 1 - A - B - C = 0.05.
const (
	DefaultA = 0.57
	DefaultB = 0.19
	DefaultC = 0.19
)

// Limits on the RMAT parameters accepted by [RMAT.Validate].
const (
	MinScale = 1
	MaxScale = 32
)

// RMAT configures a Graph500 Kronecker/R-MAT edge generator. See the package
// documentation for the model and its guarantees.
//
// If A, B and C are all zero the Graph500 defaults [DefaultA], [DefaultB] and
// [DefaultC] are used; otherwise they are used as given and D = 1-A-B-C.
type RMAT struct {
	Scale      int    // log2 of the number of vertices, MinScale..MaxScale
	EdgeFactor int    // edges per vertex, at least 1
	Seed       uint64 // seed for every random choice
	A, B, C    float64
}

// NumVertices returns 2^Scale, the size of the vertex id space.
func (r RMAT) NumVertices() uint64 { return 1 << r.Scale }

// NumEdges returns EdgeFactor * 2^Scale, the number of edges generated.
// It is only meaningful for a configuration that passes Validate.
func (r RMAT) NumEdges() int { return r.EdgeFactor << r.Scale }

// Probabilities returns the quadrant probabilities in effect, applying the
// defaults when A, B and C are all zero.
func (r RMAT) Probabilities() (a, b, c, d float64) {
	a, b, c = r.A, r.B, r.C
	if a == 0 && b == 0 && c == 0 {
		a, b, c = DefaultA, DefaultB, DefaultC
	}
	return a, b, c, 1 - a - b - c
}

// Validate reports whether the configuration can be generated.
func (r RMAT) Validate() error {
	if r.Scale < MinScale || r.Scale > MaxScale {
		return fmt.Errorf("rmat: scale must be between %d and %d, got %d", MinScale, MaxScale, r.Scale)
	}
	if r.EdgeFactor < 1 {
		return fmt.Errorf("rmat: edge factor must be at least 1, got %d", r.EdgeFactor)
	}
	if r.EdgeFactor > math.MaxInt>>r.Scale {
		return fmt.Errorf("rmat: edge factor %d at scale %d overflows the edge count", r.EdgeFactor, r.Scale)
	}
	a, b, c, _ := r.Probabilities()
	for _, p := range []struct {
		name string
		v    float64
	}{{"a", a}, {"b", b}, {"c", c}} {
		if math.IsNaN(p.v) || p.v < 0 || p.v > 1 {
			return fmt.Errorf("rmat: probability %s must be in [0, 1], got %v", p.name, p.v)
		}
	}
	// Allow for rounding in sums such as 0.57+0.19+0.19+0.05.
	if a+b+c > 1+1e-9 {
		return fmt.Errorf("rmat: probabilities a+b+c must not exceed 1, got %v", a+b+c)
	}
	return nil
}

// Generate returns the NumEdges() edges of the graph, with vertex ids
// permuted and the list shuffled, as Graph500 does. It panics if Validate
// reports an error; callers taking user input should call Validate first.
func (r RMAT) Generate() []Edge {
	edges, _ := r.GenerateWithTail(0)
	return edges
}

// GenerateWithTail returns Generate's edges and, in more, the next tail
// edges the same sampler draws after them (the same distribution and the
// same vertex permutation, in generation order): a stream of further
// edges of the same graph, whose hubs are the graph's hubs. It panics if
// Validate reports an error or tail is negative.
func (r RMAT) GenerateWithTail(tail int) (edges, more []Edge) {
	s := r.newSampler()
	edges = make([]Edge, r.NumEdges())
	for i := range edges {
		edges[i] = s.next()
	}
	more = make([]Edge, tail)
	for i := range more {
		more[i] = s.next()
	}
	shuffleEdges(r.Seed, edges)
	return edges, more
}

// shuffleEdges shuffles edges in place with the seed's shuffle stream
// (Fisher–Yates), as Graph500 does.
func shuffleEdges(seed uint64, edges []Edge) {
	shuffle := newPCG(seed, streamShuffle)
	for i := len(edges) - 1; i > 0; i-- {
		j := uint64n(shuffle, uint64(i)+1)
		edges[i], edges[j] = edges[j], edges[i]
	}
}

// All returns an iterator over the same edges as Generate, in generation
// (unshuffled) order, without materializing the edge list. Each iteration
// restarts the deterministic sequence. It panics, when iterated, if Validate
// reports an error.
func (r RMAT) All() iter.Seq[Edge] {
	return func(yield func(Edge) bool) {
		s := r.newSampler()
		for range r.NumEdges() {
			if !yield(s.next()) {
				return
			}
		}
	}
}

// Independent PCG streams derived from the seed. Generate and All share the
// permutation and edge streams, which is what makes their multisets equal.
const (
	streamPermutation = 0x7065726d75746174 // "permutat"
	streamEdges       = 0x6564676573747265 // "edgestre"
	streamShuffle     = 0x73687566666c6521 // "shuffle!"
)

// newPCG returns a PCG source for one stream of a seed. Both state words are
// passed through splitmix64 so that nearby seeds give unrelated streams
// (PCG states differing only in the high word stay correlated in the low
// word forever).
func newPCG(seed, stream uint64) *rand.PCG {
	return rand.NewPCG(splitmix64(seed^stream), splitmix64(splitmix64(seed)+stream))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// uint64n returns a uniform integer in [0, n) using Lemire's multiply-shift
// with rejection. It is implemented here rather than taken from rand.Rand so
// that the output sequence is pinned by this package.
func uint64n(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// sampler draws R-MAT edges one at a time and maps them through the vertex
// permutation.
type sampler struct {
	src   *rand.PCG
	scale int
	perm  []uint64
	// Quadrant thresholds on a 32-bit uniform draw: u < ta is quadrant A,
	// u < tab is B, u < tabc is C, otherwise D.
	ta, tab, tabc uint64
}

func (r RMAT) newSampler() *sampler {
	if err := r.Validate(); err != nil {
		panic("gen: invalid RMAT configuration: " + err.Error())
	}
	a, b, c, _ := r.Probabilities()
	threshold := func(p float64) uint64 {
		if p >= 1 {
			return 1 << 32
		}
		return uint64(p * (1 << 32))
	}
	s := &sampler{
		src:   newPCG(r.Seed, streamEdges),
		scale: r.Scale,
		perm:  make([]uint64, r.NumVertices()),
		ta:    threshold(a),
		tab:   threshold(a + b),
		tabc:  threshold(a + b + c),
	}
	// Fisher–Yates "inside-out" construction of a random permutation of
	// 0..n-1, as Graph500's randperm relabelling.
	permSrc := newPCG(r.Seed, streamPermutation)
	for i := range s.perm {
		j := uint64n(permSrc, uint64(i)+1)
		s.perm[i] = s.perm[j]
		s.perm[j] = uint64(i)
	}
	return s
}

// next draws one edge. Each PCG output supplies two 32-bit uniform draws,
// the low half for an even bit level and the high half for the next odd one;
// 2^-32 resolution is far finer than the probabilities. For an odd scale the
// high half of the last output is drawn but its bit is masked off.
func (s *sampler) next() Edge {
	// Locals keep the thresholds in registers across the PCG calls.
	rng, ta, tab, tabc := s.src, s.ta, s.tab, s.tabc
	var src, dst uint64
	for bit := 0; bit < s.scale; bit += 2 {
		x := rng.Uint64()
		for half := range 2 {
			u := x & 0xffffffff
			x >>= 32
			// Branch-free quadrant selection: the src bit is set in C and D
			// (u >= tab); the dst bit is set in B (ta <= u < tab) and D
			// (u >= tabc).
			srcBit := b2u(u >= tab)
			dstBit := b2u(u >= ta) ^ srcBit ^ b2u(u >= tabc)
			src |= srcBit << (bit + half)
			dst |= dstBit << (bit + half)
		}
	}
	mask := uint64(1)<<s.scale - 1
	return Edge{Src: s.perm[src&mask], Dst: s.perm[dst&mask]}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
