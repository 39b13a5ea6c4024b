package staticcsr

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/gen"
)

func edge(src, dst uint64) gen.Edge { return gen.Edge{Src: src, Dst: dst} }

// oracle is the obvious map-of-sets representation of a simple graph.
type oracle map[uint64]map[uint64]struct{}

func newOracle(edges []gen.Edge) oracle {
	o := oracle{}
	for _, e := range edges {
		if o[e.Src] == nil {
			o[e.Src] = map[uint64]struct{}{}
		}
		o[e.Src][e.Dst] = struct{}{}
	}
	return o
}

func (o oracle) neighbors(v uint64) []uint64 {
	var out []uint64
	for d := range o[v] {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func checkAgainstOracle(t *testing.T, n uint64, edges []gen.Edge) {
	t.Helper()
	input := slices.Clone(edges)
	c := Build(n, edges)
	if !slices.Equal(input, edges) {
		t.Fatal("Build modified its input")
	}
	o := newOracle(edges)
	if c.NumVertices() != n {
		t.Fatalf("NumVertices = %d, want %d", c.NumVertices(), n)
	}
	var total uint64
	for v := range n {
		want := o.neighbors(v)
		got := c.Neighbors(v)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("Neighbors(%d) = %v, want %v", v, got, want)
		}
		if c.Degree(v) != uint64(len(want)) {
			t.Fatalf("Degree(%d) = %d, want %d", v, c.Degree(v), len(want))
		}
		total += uint64(len(want))
	}
	if c.NumEdges() != total {
		t.Fatalf("NumEdges = %d, want %d distinct edges", c.NumEdges(), total)
	}
}

func TestBuildSmall(t *testing.T) {
	edges := []gen.Edge{edge(2, 1), edge(0, 3), edge(2, 1), edge(0, 0), edge(2, 0), edge(0, 3), edge(4, 4), edge(4, 4)}
	checkAgainstOracle(t, 6, edges) // vertices 1, 3 and 5 have no out-edges
	c := Build(6, edges)
	if got := c.Neighbors(0); !slices.Equal(got, []uint64{0, 3}) {
		t.Errorf("Neighbors(0) = %v, want [0 3]", got)
	}
	if got := c.Neighbors(2); !slices.Equal(got, []uint64{0, 1}) {
		t.Errorf("Neighbors(2) = %v, want [0 1]", got)
	}
	if c.NumEdges() != 5 {
		t.Errorf("NumEdges = %d, want 5", c.NumEdges())
	}
}

func TestBuildEmpty(t *testing.T) {
	checkAgainstOracle(t, 0, nil)
	checkAgainstOracle(t, 3, nil)
}

func TestBuildRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 1 + rng.Uint64N(64)
		edges := make([]gen.Edge, rng.IntN(500))
		for i := range edges {
			// Small id space forces many duplicates.
			edges[i] = gen.Edge{Src: rng.Uint64N(n), Dst: rng.Uint64N(n)}
		}
		checkAgainstOracle(t, n, edges)
	}
}

func TestBuildRMAT(t *testing.T) {
	r := gen.RMAT{Scale: 10, EdgeFactor: 16, Seed: 4}
	edges := r.Generate()
	checkAgainstOracle(t, r.NumVertices(), edges)
	if c := Build(r.NumVertices(), edges); c.NumEdges() >= uint64(len(edges)) {
		t.Errorf("RMAT graph has %d distinct of %d edges; expected duplicates to be removed", c.NumEdges(), len(edges))
	}
}

func TestNeighborsAppendDoesNotCorrupt(t *testing.T) {
	c := Build(3, []gen.Edge{edge(0, 1), edge(1, 2)})
	_ = append(c.Neighbors(0), 99)
	if got := c.Neighbors(1); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("appending to Neighbors(0) changed Neighbors(1) to %v", got)
	}
}

func expectPanic(t *testing.T, substr string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		p := recover()
		if s, _ := p.(string); !strings.Contains(s, substr) {
			t.Errorf("recovered %v, want a panic containing %q", p, substr)
		}
	}()
	f()
}

func TestPanics(t *testing.T) {
	expectPanic(t, "edge 1 (0 -> 3) has an endpoint outside [0, 3)", func() {
		Build(3, []gen.Edge{edge(0, 1), edge(0, 3)})
	})
	c := Build(3, nil)
	expectPanic(t, "vertex 3 outside [0, 3)", func() { c.Neighbors(3) })
	expectPanic(t, "vertex 7 outside [0, 3)", func() { c.Degree(7) })
}

// BenchmarkScan is the baseline "visit every out-neighbor of every vertex"
// loop at scale 16.
func BenchmarkScan(b *testing.B) {
	r := gen.RMAT{Scale: 16, EdgeFactor: 16, Seed: 1}
	c := Build(r.NumVertices(), r.Generate())
	b.SetBytes(int64(c.NumEdges()) * 8)
	b.ResetTimer()
	var sum uint64
	for b.Loop() {
		for v := range c.NumVertices() {
			for _, d := range c.Neighbors(v) {
				sum += d
			}
		}
	}
	b.ReportMetric(float64(c.NumEdges())*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
	if sum == 0 {
		b.Fatal("scan visited no edges")
	}
}

func BenchmarkBuild(b *testing.B) {
	r := gen.RMAT{Scale: 16, EdgeFactor: 16, Seed: 1}
	edges := r.Generate()
	b.SetBytes(int64(len(edges)) * 16)
	for b.Loop() {
		Build(r.NumVertices(), edges)
	}
}
