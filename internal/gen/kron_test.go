package gen

import (
	"slices"
	"testing"
)

// TestKroneckerIsTheRMATGraphMadeSimple checks the Kronecker graph against
// an oracle built here from the R-MAT draws of the same seed: the same
// set of edges once self-loops and repeats are dropped, none of them left,
// and a shuffled order.
func TestKroneckerIsTheRMATGraphMadeSimple(t *testing.T) {
	k := Kronecker{Scale: 10, EdgeFactor: 16, Seed: 5}
	got := k.Generate()
	want := map[Edge]bool{}
	for _, e := range (RMAT{Scale: 10, EdgeFactor: 16, Seed: 5}).Generate() {
		if e.Src != e.Dst {
			want[e] = true
		}
	}
	seen := map[Edge]bool{}
	for _, e := range got {
		if e.Src == e.Dst {
			t.Fatalf("self-loop %v", e)
		}
		if seen[e] {
			t.Fatalf("edge %v twice", e)
		}
		if !want[e] {
			t.Fatalf("edge %v is not one of the R-MAT draws", e)
		}
		seen[e] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("%d edges, want the %d distinct R-MAT draws that are not self-loops", len(seen), len(want))
	}
	if slices.IsSortedFunc(got, compareEdges) {
		t.Error("the edges come out sorted: the shuffle did nothing")
	}
	// At scale 10 a share of the 16,384 draws repeat; not most of them.
	if n := len(got); n > 16384 || n < 16384/2 {
		t.Errorf("%d edges of 16,384 draws", n)
	}
}

func TestKroneckerDeterministic(t *testing.T) {
	k := Kronecker{Scale: 9, EdgeFactor: 8, Seed: 3}
	a, am := k.GenerateWithTail(100)
	b, bm := k.GenerateWithTail(100)
	if !slices.Equal(a, b) || !slices.Equal(am, bm) {
		t.Fatal("the same configuration gave different edges")
	}
	c, cm := Kronecker{Scale: 9, EdgeFactor: 8, Seed: 4}.GenerateWithTail(100)
	if slices.Equal(a[:100], c[:100]) || slices.Equal(am, cm) {
		t.Fatal("seeds 3 and 4 gave the same edges")
	}
	if g := k.Generate(); !slices.Equal(g, a) {
		t.Fatal("Generate and GenerateWithTail give different graphs")
	}
}

// TestPermutationIsABijection checks the vertex relabelling both
// generators share: every id once, and not the identity.
func TestPermutationIsABijection(t *testing.T) {
	for _, scale := range []int{1, 5, 12} {
		s := RMAT{Scale: scale, EdgeFactor: 1, Seed: 8}.newSampler()
		p := slices.Clone(s.perm)
		slices.Sort(p)
		for i, v := range p {
			if v != uint64(i) {
				t.Fatalf("scale %d: the permutation misses id %d", scale, i)
			}
		}
		if scale > 1 && slices.IsSorted(s.perm) {
			t.Errorf("scale %d: the permutation is the identity", scale)
		}
	}
}

// degrees returns out-degrees (and in-degrees) over n vertex ids.
func degrees(n uint64, edges []Edge) (out, in []int) {
	out, in = make([]int, n), make([]int, n)
	for _, e := range edges {
		out[e.Src]++
		in[e.Dst]++
	}
	return out, in
}

// topShare is the share of all edges that the top 1% of vertices by
// degree hold.
func topShare(deg []int) float64 {
	d := slices.Clone(deg)
	slices.Sort(d)
	slices.Reverse(d)
	top, all := 0, 0
	for i, x := range d {
		if i < len(d)/100 {
			top += x
		}
		all += x
	}
	return float64(top) / float64(all)
}

// TestKroneckerDegreeShape compares the Kronecker graph's degree
// distribution with R-MAT's of the same seed: the same hubs (the
// permutation of the same draws), skewed alike (the top 1% of vertices
// hold more than 0.6 of R-MAT's share of the edges: at scale 12 a hub's
// draws repeat often, so its distinct edges are about 0.4 of them), hubs' degrees smaller by their
// repeats only, and the largest hub is the image of vertex 0 (quadrant A
// at every level), which the permutation moves away from id 0.
func TestKroneckerDegreeShape(t *testing.T) {
	const scale = 12
	r := RMAT{Scale: scale, EdgeFactor: 16, Seed: 11}
	k := Kronecker{Scale: scale, EdgeFactor: 16, Seed: 11}
	rOut, rIn := degrees(r.NumVertices(), r.Generate())
	kOut, kIn := degrees(k.NumVertices(), k.Generate())
	perm := r.newSampler().perm
	for name, pair := range map[string][2][]int{"out": {rOut, kOut}, "in": {rIn, kIn}} {
		rd, kd := pair[0], pair[1]
		hub := slices.Index(kd, slices.Max(kd))
		if uint64(hub) != perm[0] || hub == 0 {
			t.Errorf("%s: the largest hub is %d, want the image of vertex 0, %d (not 0)", name, hub, perm[0])
		}
		if rh := slices.Index(rd, slices.Max(rd)); rh != hub {
			t.Errorf("%s: R-MAT's largest hub is %d, Kronecker's %d", name, rh, hub)
		}
		for v := range kd {
			if kd[v] > rd[v] {
				t.Fatalf("%s: vertex %d has degree %d, more than its %d R-MAT draws", name, v, kd[v], rd[v])
			}
		}
		rs, ks := topShare(rd), topShare(kd)
		if ks < 0.6*rs || ks > rs || ks < 0.15 {
			t.Errorf("%s: the top 1%% hold %.3f of the Kronecker edges, %.3f of R-MAT's", name, ks, rs)
		}
		t.Logf("%s: top 1%% hold %.3f (R-MAT %.3f); largest hub %d (R-MAT %d)", name, ks, rs, kd[hub], rd[hub])
	}
}

// TestTailsComeFromTheSameGraph checks the streamed tails of both
// families: drawn from the same permutation, so they land on the graph's
// hubs (the sum of the loaded out-degrees of the sources a tail touches is
// far above what as many edges of another seed's graph touch, as the
// bench's stream did before), and the Kronecker tail holds only new
// edges.
func TestTailsComeFromTheSameGraph(t *testing.T) {
	const scale, n = 12, 2000
	r := RMAT{Scale: scale, EdgeFactor: 16, Seed: 2}
	edges, more := r.GenerateWithTail(n)
	if len(more) != n || !slices.Equal(edges, r.Generate()) {
		t.Fatalf("tail of %d (want %d), or a graph other than Generate's", len(more), n)
	}
	other := RMAT{Scale: scale, EdgeFactor: 16, Seed: 3}.Generate()[:n]
	out, _ := degrees(r.NumVertices(), edges)
	touched := func(es []Edge) int {
		seen, sum := map[uint64]bool{}, 0
		for _, e := range es {
			if !seen[e.Src] {
				seen[e.Src] = true
				sum += out[e.Src]
			}
		}
		return sum
	}
	if a, b := touched(more), touched(other); a < 3*b {
		t.Errorf("the tail's sources hold %d loaded edges, another seed's as many edges' %d: not the same hubs", a, b)
	}

	k := Kronecker{Scale: scale, EdgeFactor: 16, Seed: 2}
	kEdges, kMore := k.GenerateWithTail(n)
	have := map[Edge]bool{}
	for _, e := range kEdges {
		have[e] = true
	}
	for _, e := range kMore {
		if e.Src == e.Dst || have[e] {
			t.Fatalf("tail edge %v is a self-loop or already there", e)
		}
		have[e] = true
	}
	if len(kMore) != n {
		t.Fatalf("Kronecker tail of %d, want %d", len(kMore), n)
	}
	// A graph too small for the tail asked: it stops, short.
	if _, m := (Kronecker{Scale: 2, EdgeFactor: 4, Seed: 1}).GenerateWithTail(100); len(m) > 12 {
		t.Fatalf("%d new edges in a 4-vertex graph", len(m))
	}
}
