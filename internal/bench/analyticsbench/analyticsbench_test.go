package analyticsbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/bench/ddbase"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// tiny is a configuration that runs in about a second.
func tiny(t *testing.T) Config {
	c := DefaultConfig()
	c.Scale, c.EdgeFactor, c.Repeats, c.BatchSize, c.StreamFraction = 9, 8, 1, 200, 0.1
	c.DeleteFraction, c.VertexDeleteFraction, c.IDs, c.Dir = 0.2, 0.01, []string{"dense"}, t.TempDir()
	return c
}

func TestParseOps(t *testing.T) {
	good := "# a comment\n+ 1 2\n+ 3 4 0.5\n+ 5 6 -0\n- 1 2\nx 7\n# another\n+ 4611686018427387903 0 1e-300\n"
	ops, err := parseOps("s.txt", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Op{
		{Src: 1, Dst: 2, Weight: 1, Kind: engine.OpUpsert},
		{Src: 3, Dst: 4, Weight: 0.5, Kind: engine.OpUpsert},
		{Src: 5, Dst: 6, Weight: math.Copysign(0, -1), Kind: engine.OpUpsert},
		{Src: 1, Dst: 2, Kind: engine.OpDeleteEdge},
		{Src: 7, Kind: engine.OpDeleteVertex},
		{Src: 1<<62 - 1, Dst: 0, Weight: 1e-300, Kind: engine.OpUpsert},
	}
	if !slices.Equal(ops, want) || !math.Signbit(ops[2].Weight) {
		t.Fatalf("got %+v\nwant %+v", ops, want)
	}
	// Written back, they read the same (a weight of 1 is left out).
	var b []byte
	for _, o := range ops {
		b = appendOp(b, o)
	}
	if again, err := parseOps("again", strings.NewReader(string(b))); err != nil || !slices.Equal(again, ops) || !math.Signbit(again[2].Weight) {
		t.Fatalf("written back as\n%s read %+v, %v", b, again, err)
	}
	if !strings.HasPrefix(string(b), "+ 1 2\n+ 3 4 0.5\n+ 5 6 -0\n- 1 2\nx 7\n") {
		t.Errorf("written as\n%s", b)
	}
	for _, bad := range []string{
		"", "+ 1", "+ 1 2 3 4", "+  1 2", "+ 1 2 ", " + 1 2", "+\t1 2", "- 1 2 3", "x 1 2", "x", "* 1 2",
		"+ -1 2", "+ 1 +2", "+ 1 4611686018427387904", "+ 1 2 NaN", "+ 1 2 Inf", "+ 1 2 one", "- a b", "x 0x10",
		"+ 1 2\r",
	} {
		_, err := parseOps("bad.txt", strings.NewReader("+ 1 2\n# fine\n"+bad+"\n+ 3 4\n"))
		var se *StreamError
		if !errors.As(err, &se) || se.Line != 3 || se.Path != "bad.txt" || !strings.HasPrefix(err.Error(), "bad.txt:3: ") {
			t.Errorf("%q: got %v, want an error at bad.txt:3", bad, err)
		}
	}
}

// TestStreamRoundTrip runs each family with --save-graph and
// --save-stream, then the saved graph as --input with the saved stream as
// --stream: the same graph, the same batches (the stream it saves again is
// the same file), and the kernels checked against the reference on it.
func TestStreamRoundTrip(t *testing.T) {
	for _, family := range []string{"rmat", "kron"} {
		t.Run(family, func(t *testing.T) {
			dir := t.TempDir()
			c := tiny(t)
			c.Graph, c.HubVertexDeletes = family, 2
			c.SaveGraph, c.SaveStream = filepath.Join(dir, "g.el"), filepath.Join(dir, "s.txt")
			first, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			c2 := tiny(t)
			c2.Input, c2.Stream = c.SaveGraph, c.SaveStream
			c2.SaveGraph, c2.SaveStream = filepath.Join(dir, "g2.el"), filepath.Join(dir, "s2.txt")
			second, err := Run(context.Background(), c2)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range [][2]string{{c.SaveGraph, c2.SaveGraph}, {c.SaveStream, c2.SaveStream}} {
				a, _ := os.ReadFile(p[0])
				b, _ := os.ReadFile(p[1])
				if len(a) == 0 || string(a) != string(b) {
					t.Errorf("%s and %s differ (%d and %d bytes)", p[0], p[1], len(a), len(b))
				}
			}
			if first.Graph != family || second.Graph != "input" || first.StreamSource != "generator" || second.StreamSource != "file" {
				t.Errorf("graph %q then %q, stream from %q then %q", first.Graph, second.Graph, first.StreamSource, second.StreamSource)
			}
			if first.Edges != second.Edges || first.Root != second.Root || first.StreamedOps != second.StreamedOps ||
				first.Batches != second.Batches || first.VertexDeletes != second.VertexDeletes || first.Batches < 3 {
				t.Errorf("first run %d edges, root %d, %d ops in %d batches, %d vertex deletes; the replay %d, %d, %d, %d, %d",
					first.Edges, first.Root, first.StreamedOps, first.Batches, first.VertexDeletes,
					second.Edges, second.Root, second.StreamedOps, second.Batches, second.VertexDeletes)
			}
			if first.Topology.EdgesAfterBatch != second.Topology.EdgesAfterBatch || first.Topology.Edges != second.Topology.Edges {
				t.Errorf("topology of %d then %d edges (%d and %d before)", first.Topology.EdgesAfterBatch, second.Topology.EdgesAfterBatch,
					first.Topology.Edges, second.Topology.Edges)
			}
			for _, r := range []Result{first, second} {
				if !slices.Equal(r.Checked, []string{"bfs", "wcc", "sssp"}) {
					t.Errorf("checked against the reference: %v", r.Checked)
				}
			}
			if first.HubVertexDeletes != 2 {
				t.Errorf("%d hub vertex deletes, want 2", first.HubVertexDeletes)
			}
		})
	}
}

// TestMalformedStreamRefused: a bad line of --stream stops the run before
// anything is loaded, naming the file and the line.
func TestMalformedStreamRefused(t *testing.T) {
	c := tiny(t)
	c.Stream = filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(c.Stream, []byte("+ 1 2\n- 1 2\n+ 1 2 3 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), c)
	var se *StreamError
	if !errors.As(err, &se) || se.Line != 3 || !strings.HasPrefix(err.Error(), c.Stream+":3: ") {
		t.Fatalf("got %v, want an error at %s:3", err, c.Stream)
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) != 0 {
		t.Errorf("the run made %d entries in its directory before refusing the stream", len(ents))
	}
	if err := os.WriteFile(c.Stream, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), c); err == nil || err.Error() != c.Stream+" holds no operations" {
		t.Errorf("an empty stream: %v", err)
	}
}

// TestPacedRegistryNeedsTwoBatches: --registry-interval with a stream of
// one batch (nothing after the warm-up to pace) is refused at once,
// saying what to change; it used to wait 10 minutes for a result that
// would not come.
func TestPacedRegistryNeedsTwoBatches(t *testing.T) {
	c := tiny(t)
	c.Registry, c.RegistryInterval, c.BatchSize = true, 5*time.Millisecond, 1<<20
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Run(ctx, c); err == nil || !strings.Contains(err.Error(), "--registry-interval paces the batches after the first, and the stream has 1") {
		t.Fatalf("got %v", err)
	}
}

// TestInputLoadsTheWholeFile: with --input the kernels run on every edge
// of the file (the stream is generated beside it), and --save-graph
// writes the file's edges back as they were.
func TestInputLoadsTheWholeFile(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		fmt.Fprintf(&b, "%d %d %d\n", r.IntN(700), r.IntN(700), 1+r.IntN(9))
	}
	in := filepath.Join(dir, "in.el")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := tiny(t)
	c.Input, c.Root, c.SaveGraph = in, 3, filepath.Join(dir, "out.el")
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Edges != 3000 || res.StreamSource != "beside" || !res.Weighted {
		t.Errorf("%d edges loaded of 3000, stream %q, weighted %v", res.Edges, res.StreamSource, res.Weighted)
	}
	if out, _ := os.ReadFile(c.SaveGraph); string(out) != b.String() {
		t.Errorf("the saved graph is not the file (%d bytes, want %d)", len(out), b.Len())
	}
	// The distinct edges of the file, all in the topology.
	distinct := map[[2]int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var s, d, w int
		fmt.Sscan(line, &s, &d, &w)
		distinct[[2]int{s, d}] = true
	}
	if res.Topology.Edges != int64(len(distinct)) {
		t.Errorf("the topology holds %d edges, the file %d distinct ones", res.Topology.Edges, len(distinct))
	}
}

// loadedDegreeTouched sums the loaded out-degrees of the distinct sources
// of the stream's upserts: how much of the graph its inserts land on.
func loadedDegreeTouched(edges []wedge, ops [][]engine.Op) int {
	out := map[uint64]int{}
	for _, e := range edges {
		out[e.src]++
	}
	seen, sum := map[uint64]bool{}, 0
	for _, b := range ops {
		for _, o := range b {
			if o.Kind == engine.OpUpsert && !seen[o.Src] {
				seen[o.Src] = true
				sum += out[o.Src]
			}
		}
	}
	return sum
}

// TestGeneratedStreamHitsTheHubs: the generated stream's inserts land on
// the loaded graph's hubs, for every family, far more than inserts from
// another seed's graph (another permutation: what the stream of
// `--scale` was).
func TestGeneratedStreamHitsTheHubs(t *testing.T) {
	c := tiny(t)
	c.Scale, c.EdgeFactor, c.BatchSize, c.StreamFraction, c.DeleteFraction = 13, 16, 1000, 0.01, 0
	other := gen.RMAT{Scale: c.Scale, EdgeFactor: c.EdgeFactor, Seed: c.Seed + 1}.Generate()
	for _, family := range []string{"rmat", "kron", "input"} {
		cfg := c
		cfg.Graph = family
		if family == "input" {
			cfg.Input = filepath.Join(t.TempDir(), "g.el")
			var b strings.Builder
			for _, e := range (gen.Kronecker{Scale: c.Scale, EdgeFactor: c.EdgeFactor, Seed: 9}).Generate() {
				fmt.Fprintf(&b, "%d %d\n", e.Src, e.Dst)
			}
			if err := os.WriteFile(cfg.Input, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		src, err := sourceGraph(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var upserts int
		for _, b := range src.ops {
			upserts += len(b)
		}
		unrelated := make([]engine.Op, upserts)
		for i, e := range other[:upserts] {
			unrelated[i] = engine.Op{Src: e.Src, Dst: e.Dst, Kind: engine.OpUpsert}
		}
		got, base := loadedDegreeTouched(src.edges, src.ops), loadedDegreeTouched(src.edges, [][]engine.Op{unrelated})
		t.Logf("%s: the stream's %d inserts touch sources holding %d loaded edges; another seed's as many edges, %d", family, upserts, got, base)
		if got < 3*base {
			t.Errorf("%s: the stream's inserts touch sources holding %d loaded edges, another permutation's %d", family, got, base)
		}
	}
}

// TestHubVertexDeletes: the hubs deleted are the vertices with the most
// edges, spread over the stream, and the rest of the stream is as without
// them.
func TestHubVertexDeletes(t *testing.T) {
	c := tiny(t)
	c.VertexDeleteFraction = 0
	edges := []wedge{{1, 2, 1}, {1, 3, 1}, {1, 4, 1}, {2, 3, 1}, {4, 2, 1}, {5, 6, 1}}
	hubs := topVertices(edges, 7, 3)
	// Edges: 1 has 3, 2 has 3, 3 and 4 have 2 each.
	if !slices.Equal(hubs, []uint64{1, 2, 3}) {
		t.Fatalf("hubs %v, want [1 2 3]", hubs)
	}
	extra := make([]wedge, 400)
	for i := range extra {
		extra[i] = wedge{uint64(10 + i), uint64(11 + i), 1}
	}
	plain := newStream(edges, extra, nil, c)
	with := newStream(edges, extra, hubs, c)
	var at []int
	var rest []engine.Op
	for k, o := range with {
		if o.Kind == engine.OpDeleteVertex {
			at = append(at, k)
			continue
		}
		rest = append(rest, o)
	}
	if !slices.Equal(rest, plain) || len(at) != 3 {
		t.Fatalf("%d vertex deletes; the rest equal to the stream without them: %v", len(at), slices.Equal(rest, plain))
	}
	n := len(plain)
	for i, k := range at {
		if want := (i+1)*n/4 + i; k != want || with[k].Src != hubs[i] {
			t.Errorf("hub %d deleted at %d (%v), want vertex %d at %d", i, k, with[k], hubs[i], want)
		}
	}
}

// TestReferenceKernels checks the reference kernels against package
// testref's on a random weighted graph, then that checkReference catches
// analytics computed on another graph (one edge less) and passes them on
// the same graph.
func TestReferenceKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var edges []wedge
	oracle := testref.Edges{}
	const nv = 300
	for range 700 {
		e := wedge{uint64(r.IntN(nv)), uint64(r.IntN(nv)), float64(1 + r.IntN(5))}
		edges = append(edges, e)
		oracle[[2]uint64{e.src, e.dst}] = e.w
	}
	root := edges[0].src
	g := newRefGraph(newEdgeGraph(nv, edges))
	lv := testref.BFS(oracle, root)
	comp, size := testref.Components(oracle)
	dist := testref.Dijkstra(oracle, root)
	gotLv, gotDist := g.levels(root), g.distances(root)
	least, sizes := g.components()
	for v := range uint64(nv) {
		want, ok := lv[v]
		if !ok {
			want = -1
		}
		if gotLv[v] != want {
			t.Fatalf("vertex %d: level %d, testref %d", v, gotLv[v], want)
		}
		c, ok := comp[v]
		sz := size[c]
		if !ok {
			c, sz = v, 1
		}
		if least[v] != c || sizes[v] != sz {
			t.Fatalf("vertex %d: component %d of %d, testref %d of %d", v, least[v], sizes[v], c, sz)
		}
		d, ok := dist[v]
		if !ok {
			d = math.Inf(1)
		}
		if gotDist[v] != d {
			t.Fatalf("vertex %d: distance %v, testref %v", v, gotDist[v], d)
		}
	}

	compute := func(es []wedge) map[string]analytics.Analytic {
		topo, err := views.BuildTopo(context.Background(), newEdgeGraph(nv, es))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]analytics.Analytic{}
		for _, k := range kernelSpecs {
			a, err := newAnalytic(withRoot(k.spec, root), root)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.(analytics.TopoAnalytic).Recompute(context.Background(), topo); err != nil {
				t.Fatal(err)
			}
			out[k.name] = a
		}
		return out
	}
	if checked, err := checkReference(g, root, compute(edges)); err != nil || len(checked) != 3 {
		t.Fatalf("the same graph: %v, %v", checked, err)
	}
	// Leave out, in turn, each of root's first out-edges: some change
	// bfs, wcc or sssp.
	caught := 0
	for k, e := range edges {
		if e.src != root {
			continue
		}
		less := slices.Delete(slices.Clone(edges), k, k+1)
		if _, err := checkReference(g, root, compute(less)); err != nil {
			caught++
			t.Logf("without %d -> %d: %v", e.src, e.dst, err)
		}
	}
	if caught == 0 {
		t.Fatal("no edge of the root left out was caught")
	}
}

// TestRegistry runs the stream through an analytics registry too (as
// serve runs its analytics): every analytic's result reaches each batch,
// no later than the last of them, and after the stream the registry's
// results equal those driven batch by batch (the run checks it).
func TestRegistry(t *testing.T) {
	c := tiny(t)
	c.Registry, c.Graph = true, "kron"
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Registry
	if f == nil || f.Batches != res.Batches-1 || len(f.Analytics) != 5 {
		t.Fatalf("registry figures %+v of %d batches", f, res.Batches)
	}
	for name, a := range f.Analytics {
		if a.BatchSec <= 0 || a.BatchP99Sec < a.BatchSec || a.BatchSec > f.AllSec || a.UpdateSec <= 0 {
			t.Errorf("%s: %+v, all five %v", name, a, f.AllSec)
		}
	}
	if f.Analytics["pagerank"].Recomputes != res.Incremental["pagerank"].Fallbacks {
		t.Errorf("pagerank recomputed %d times in the registry, %d driven here", f.Analytics["pagerank"].Recomputes, res.Incremental["pagerank"].Fallbacks)
	}
}

// TestRegistryPaced feeds the registry a batch every interval without
// waiting (--registry-interval): every analytic takes every batch, in at
// most as many updates as batches, each with its freshness; the run
// checks the results after the stream against those driven batch by
// batch, as without pacing.
func TestRegistryPaced(t *testing.T) {
	c := tiny(t)
	c.Registry, c.Graph, c.RegistryInterval = true, "kron", 5*time.Millisecond
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Registry
	if f == nil || f.Batches != res.Batches-1 || len(f.Analytics) != 5 || f.IntervalSec != 0.005 || f.AllSec != 0 {
		t.Fatalf("registry figures %+v of %d batches", f, res.Batches)
	}
	for name, a := range f.Analytics {
		if a.Updates < 1 || a.Updates > f.Batches || a.FreshSec <= 0 || a.FreshP99Sec < a.FreshSec || a.BatchSec != 0 {
			t.Errorf("%s: %+v over %d batches", name, a, f.Batches)
		}
	}
	c.Registry = false
	if err := c.Validate(); err == nil {
		t.Error("--registry-interval without --registry was accepted")
	}
}

// summaryOnly is an analytic that has only a summary (sameAsDD reads no
// more).
type summaryOnly struct{ s any }

func (a summaryOnly) Spec() analytics.Spec      { return analytics.Spec{} }
func (a summaryOnly) Summary() any              { return a.s }
func (a summaryOnly) Vertex(uint64) (any, bool) { return nil, false }
func (a summaryOnly) Seq() uint64               { return 0 }

// TestSameAsDD: graphtide's bfs and wcc results are compared with the
// baseline's summary, and a difference fails the run.
func TestSameAsDD(t *testing.T) {
	bfs := summaryOnly{analytics.BFSSummary{Reached: 6, Levels: []int{1, 3, 2}}} // levels sum to 3+4
	if got, err := sameAsDD("bfs", bfs, ddbase.Summary{Reached: 6, LevelSum: 7}, false); err != nil || !strings.Contains(got, "6 vertices reached, levels summing to 7") {
		t.Errorf("equal bfs: %q, %v", got, err)
	}
	for _, dd := range []ddbase.Summary{{Reached: 5, LevelSum: 7}, {Reached: 6, LevelSum: 8}} {
		if _, err := sameAsDD("bfs", bfs, dd, false); err == nil {
			t.Errorf("bfs against %+v: no error", dd)
		}
	}
	if got, err := sameAsDD("bfs", bfs, ddbase.Summary{Reached: 1}, true); err != nil || !strings.Contains(got, "not compared") {
		t.Errorf("a deleted root: %q, %v", got, err)
	}
	wcc := summaryOnly{analytics.WCCSummary{Components: 4, Largest: 90}}
	if _, err := sameAsDD("wcc", wcc, ddbase.Summary{Largest: 90, Components: 17}, false); err != nil {
		t.Errorf("equal wcc: %v", err)
	}
	if _, err := sameAsDD("wcc", wcc, ddbase.Summary{Largest: 89}, false); err == nil {
		t.Error("wcc against another largest component: no error")
	}
}

// TestDifferentialDataflow runs --dd on both families when the baseline is
// built (make dd): its figures are there and its results equal graphtide's
// (the run fails otherwise).
func TestDifferentialDataflow(t *testing.T) {
	bin, err := ddbase.Find(context.Background(), "../../..")
	if errors.Is(err, ddbase.ErrNotBuilt) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"rmat", "kron"} {
		c := tiny(t)
		c.Graph, c.DD, c.Registry = g, bin, g == "kron"
		res, err := Run(context.Background(), c)
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if res.DD == nil || len(res.DD.Analytics) != 2 {
			t.Fatalf("%s: figures %+v", g, res.DD)
		}
		for name, a := range res.DD.Analytics {
			if a.Rounds != res.Batches-1 || a.RoundSec <= 0 || a.Ratio <= 0 || a.Checked == "" ||
				a.GraphtideBatchSec != res.Incremental[name].BatchSec || a.Ratio != a.GraphtideBatchSec/a.RoundSec {
				t.Errorf("%s %s: %+v over %d batches", g, name, a, res.Batches)
			}
			// Registered with the others too, with --registry only.
			if reg := res.Registry; (reg != nil) != (a.RegistrySec > 0) || reg != nil && a.RegistrySec != reg.Analytics[name].BatchSec {
				t.Errorf("%s %s: registered %v, the registry's %+v", g, name, a.RegistrySec, reg)
			}
		}
	}
}
