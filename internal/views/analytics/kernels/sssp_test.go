package kernels

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/views"
)

// newStore opens a store and its views manager, with small segments and
// a vertex index whose layout is rebuilt early, as package analytics's
// test harness does.
func newStore(t *testing.T) (*engine.Store, *views.Manager) {
	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10, TargetSegmentBytes: 16 << 10,
		SizeRatio: 3, L0CompactionTrigger: 2, MaxLevels: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, err := views.NewManager(s, views.Config{IndexRebuildMin: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return s, m
}

// TestSSSPWholeWeights: with every weight whole the topology packs them
// and the sssp kernel keeps 32-bit distances, on every worker. On a
// 12,000-vertex graph
// with hubs, zero weights and both id bands, its distances equal
// Dijkstra's; with weights near MaxWhole, whose sums pass 32 bits, it
// falls back to float64 distances, also exact; and a weight that is not
// whole unpacks the lists, again exact.
func TestSSSPWholeWeights(t *testing.T) {
	volume.Mark(t)
	for _, c := range []struct {
		name   string
		weight func(r *rand.Rand) float64
		whole  bool
	}{
		{"weights 0-255", func(r *rand.Rand) float64 { return float64(r.IntN(256)) }, true},
		{"near MaxWhole", func(r *rand.Rand) float64 { return float64(views.MaxWhole - r.IntN(3)) }, true},
		{"one not whole", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, m := newStore(t)
			r := rand.New(rand.NewPCG(5, 6))
			g := testref.Edges{}
			var b engine.Batch
			id := func() uint64 {
				x := uint64(r.IntN(12000))
				if x < 200 {
					x %= 8 // hubs
				}
				if x%5 == 0 {
					return engine.HighIDBase + x
				}
				return x
			}
			w := c.weight
			if w == nil {
				w = func(r *rand.Rand) float64 { return float64(1 + r.IntN(9)) }
			}
			for range 100000 {
				src, dst, wt := id(), id(), w(r)
				b.InsertWeighted(src, dst, wt)
				g[[2]uint64{src, dst}] = wt
			}
			if !c.whole {
				b.InsertWeighted(1, 2, 2.5)
				g[[2]uint64{1, 2}] = 2.5
			}
			if _, err := s.Apply(&b); err != nil {
				t.Fatal(err)
			}
			v, _ := m.Static(views.StaticOptions{})
			defer v.Release()
			topo, err := views.BuildTopo(context.Background(), v)
			if err != nil {
				t.Fatal(err)
			}
			if topo.Out.Whole() != c.whole {
				t.Fatalf("Whole() = %v", topo.Out.Whole())
			}
			if topo.Out.Edges() < settleAlone {
				t.Fatalf("test: %d edges, below %d: the kernel runs on one worker", topo.Out.Edges(), settleAlone)
			}
			root := uint64(1)
			dist, err := SSSP(context.Background(), topo, Index(topo, root))
			if err != nil {
				t.Fatal(err)
			}
			want := testref.Dijkstra(g, root)
			over := false
			for x := range g.Vertices() {
				i, _ := topo.IDs.Index(x)
				wd, ok := want[x]
				if got := dist[i]; ok != !math.IsInf(got, 1) || ok && got != wd {
					t.Fatalf("vertex %d: distance %v, Dijkstra's %v (reachable %v)", x, got, wd, ok)
				}
				over = over || wd >= math.MaxUint32
			}
			if c.name == "near MaxWhole" && !over {
				t.Fatal("test: no distance passes 32 bits")
			}
		})
	}
}
