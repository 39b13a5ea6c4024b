package views

import (
	"cmp"
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
)

// sortedGraph is a Graph of edges sorted by source (then destination),
// over ids, for BuildTopo in a benchmark (edgesGraph's map is too large
// at scale 20).
type sortedGraph struct {
	noGathers
	ids   IDSpace
	edges []gen.Edge
}

func (g sortedGraph) IDs() (IDSpace, error) { return g.ids, nil }
func (g sortedGraph) Seq() uint64           { return 0 }
func (g sortedGraph) HasIn() bool           { return false }
func (g sortedGraph) Each(dir engine.Direction, weights bool, f func(v uint64, nbrs []uint64, ws []float64)) error {
	var nb []uint64
	for k := 0; k < len(g.edges); {
		x := k
		nb = nb[:0]
		for ; x < len(g.edges) && g.edges[x].Src == g.edges[k].Src; x++ {
			nb = append(nb, g.edges[x].Dst)
		}
		f(g.edges[k].Src, nb, nil)
		k = x
	}
	return nil
}

// BenchmarkTopoAdvanceKron applies batches of 10,000 operations to the
// topology of a Kronecker graph (Graph500's, ids permuted) of scale
// GT_BENCH_SCALE (default 18): a share GT_BENCH_DEL (default 0.05) deletes
// edges drawn from the graph (so endpoints in proportion to their
// edges), the rest inserts new edges of the graph's own sampler (its
// hubs get them). GT_BENCH_HUBS (default 0) of the vertices with the most
// edges are deleted too, spread over the batches, each in place of an
// operation. One op is one operation; the topology's work counters, edge
// changes and bytes per edge are reported beside the time:
//
//	GT_BENCH_SCALE=20 go test -run - -bench TopoAdvanceKron -benchtime 400000x ./internal/views
//	GT_BENCH_SCALE=20 GT_BENCH_DEL=0.5 GT_BENCH_HUBS=8 go test -run - -bench TopoAdvanceKron -benchtime 400000x ./internal/views
func BenchmarkTopoAdvanceKron(b *testing.B) {
	scale := 18
	if s, err := strconv.Atoi(os.Getenv("GT_BENCH_SCALE")); err == nil {
		scale = s
	}
	del := 0.05
	if s, err := strconv.ParseFloat(os.Getenv("GT_BENCH_DEL"), 64); err == nil {
		del = s
	}
	hubs := 0
	if s, err := strconv.Atoi(os.Getenv("GT_BENCH_HUBS")); err == nil {
		hubs = s
	}
	const batch = 10000
	k := gen.Kronecker{Scale: scale, EdgeFactor: 16, Seed: 1, A: gen.DefaultA, B: gen.DefaultB, C: gen.DefaultC}
	edges, more := k.GenerateWithTail(batch * 200)
	sorted := slices.Clone(edges)
	slices.SortFunc(sorted, func(a, b gen.Edge) int { return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst)) })
	ids := identityIDs(b, int(k.NumVertices()))
	g, err := BuildTopo(context.Background(), sortedGraph{ids: ids, edges: sorted})
	if err != nil {
		b.Fatal(err)
	}
	// The hubs, most edges first, and the batches that delete one.
	byEdges := make([]int32, g.Len())
	for i := range byEdges {
		byEdges[i] = int32(i)
	}
	slices.SortFunc(byEdges, func(x, y int32) int {
		return cmp.Compare(g.Out.Deg(y)+g.In.Deg(y), g.Out.Deg(x)+g.In.Deg(x))
	})
	hubAt := map[int]uint64{}
	if batches := (b.N + batch - 1) / batch; hubs > 0 {
		for h := range min(hubs, len(byEdges)) {
			hubAt[h*batches/hubs] = ids.ID(int(byEdges[h]))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ops := make([]Edge, batch)
	seq := uint64(1)
	g.Out.takeStats()
	g.In.takeStats()
	g.takeChanges()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		b.StopTimer()
		for x := range ops {
			if rng.Float64() < del || len(more) == 0 {
				e := edges[rng.IntN(len(edges))]
				ops[x] = Edge{Seq: seq, Op: engine.Op{Src: e.Src, Dst: e.Dst, Kind: engine.OpDeleteEdge}}
			} else {
				e := more[0]
				more = more[1:]
				ops[x] = Edge{Seq: seq, Op: engine.Op{Src: e.Src, Dst: e.Dst, Weight: 1, Kind: engine.OpUpsert}}
			}
		}
		if v, ok := hubAt[n/batch]; ok {
			ops[batch/2] = Edge{Seq: seq, Op: engine.Op{Src: v, Kind: engine.OpDeleteVertex}}
		}
		b.StartTimer()
		if err := g.Apply(ops, ids, seq, nil, nil); err != nil {
			b.Fatal(err)
		}
		seq++
	}
	b.StopTimer()
	st := g.Out.takeStats()
	st.add(g.In.takeStats())
	b.ReportMetric(float64(st.compactions)/float64(b.N)*1e4, "compactions/10Kops")
	b.ReportMetric(float64(st.elementsCompacted)/float64(b.N), "compacted/op")
	b.ReportMetric(float64(st.elementsMoved)/float64(b.N), "moved/op")
	b.ReportMetric(float64(g.takeChanges())/float64(b.N), "changes/op")
	b.ReportMetric(float64(g.Bytes())/float64(g.Out.Edges()), "bytes/edge")
}
