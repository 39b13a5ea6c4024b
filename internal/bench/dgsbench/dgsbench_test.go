package dgsbench

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/testkit/benchtest"
)

// TestConfig: the defaults are valid, and each setting out of range is
// refused with a message naming its flag.
func TestConfig(t *testing.T) {
	benchtest.WantRefusals(t, DefaultConfig, (*Config).Validate, []benchtest.Refusal[Config]{
		{Set: func(c *Config) { c.Scale = 99 }, Want: "--scale must be between 1 and 26, got 99"},
		{Set: func(c *Config) { c.EdgeFactor = 0 }, Want: "--edge-factor must be at least 1 and edge-factor x 2^scale must fit in 63 bits, got 0"},
		{Set: func(c *Config) { c.Load = 1 }, Want: "--load must be in (0, 1), got 1"},
		{Set: func(c *Config) { c.Load = 0 }, Want: "--load must be in (0, 1), got 0"},
		{Set: func(c *Config) { c.Ops = 5 }, Want: "--ops must be between 100 and 100000000, got 5"},
		{Set: func(c *Config) { c.WriteBatch = 0 }, Want: "--write-batch must be between 1 and 100000, got 0"},
		{Set: func(c *Config) { c.Readers = 65 }, Want: "--readers must be between 0 and 64, got 65"},
		{Set: func(c *Config) { c.Duration = time.Millisecond }, Want: "--duration must be between 10ms and 1h, got 1ms"},
	})
}

// TestCSR: the baseline CSR holds each distinct edge once, its lists
// sorted, and finds exactly those edges; checked against a set of the
// edges, on a random graph with repeats.
func TestCSR(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var edges []gen.Edge
	set := map[[2]uint64]bool{}
	for range 2000 {
		e := gen.Edge{Src: rng.Uint64N(60), Dst: rng.Uint64N(70)}
		edges = append(edges, e)
		set[[2]uint64{e.Src, e.Dst}] = true
	}
	g := newCSR(edges)
	if len(g.nbrs) != len(set) || len(g.off) != 71 {
		t.Fatalf("%d edges over %d vertices, want %d over 70", len(g.nbrs), len(g.off)-1, len(set))
	}
	for v := range uint64(72) {
		l := g.nbrsOf(v)
		if !slices.IsSorted(l) || len(slices.Compact(slices.Clone(l))) != len(l) || g.degree(v) != len(l) {
			t.Errorf("vertex %d: neighbors %v", v, l)
		}
		for u := range uint64(72) {
			if g.has(v, u) != set[[2]uint64{v, u}] {
				t.Errorf("has(%d, %d) = %v", v, u, g.has(v, u))
			}
		}
	}
	if g.has(3, math.MaxUint32+1) {
		t.Error("has an edge to an id past 32 bits")
	}
	for range 100 {
		if e := g.edge(rng); !set[e] {
			t.Errorf("drew %v, not an edge", e)
		}
	}
	if want := int64(71*8 + len(set)*4); g.bytes() != want {
		t.Errorf("bytes = %d, want %d", g.bytes(), want)
	}
}

// TestOp: an operation's rate and its latencies' percentiles (nearest
// rank, of the latencies sorted).
func TestOp(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(100-i) * time.Microsecond // 100 µs down to 1 µs
	}
	o := op(500, 2*time.Second, lat)
	if o.Ops != 500 || o.OpsPerSec != 250 || o.P50Us != 51 || o.P99Us != 100 {
		t.Errorf("op = %+v, want 500 ops, 250/s, p50 51 µs, p99 100 µs", o)
	}
}

// TestRunSmall runs the benchmark at a tiny size and checks its JSON:
// every field the page reads is there, every operation ran and was timed
// (the run itself checks each lookup and list against the CSR, and fails
// on a wrong one), the counts are those configured, and the ratios are
// the store's rates over the faster CSR's.
func TestRunSmall(t *testing.T) {
	res, err := Run(context.Background(), Config{Scale: 10, EdgeFactor: 8, Seed: 1, Dir: t.TempDir(), Load: 0.8, Ops: 500,
		WriteBatch: 1, Readers: 2, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, m := benchtest.PageFields(t, "dgs", res)
	for _, k := range []string{"load_edges_per_sec", "searchedge_ops_per_sec", "insedge_ops_per_sec", "deledge_ops_per_sec",
		"scannbr_ops_per_sec", "scannbr_edges_per_sec", "csr_scannbr_edges_per_sec", "searchedge_store_over_csr",
		"scannbr_store_over_csr", "mixed_50_50_ops_per_sec", "mixed_80_20_ops_per_sec", "concurrent_read_ops_per_sec",
		"disk_bytes_per_edge", "csr_bytes_per_edge", "peak_rss_bytes", "insvtx_ops_per_sec", "getvtx_ops_per_sec",
		"getvtx_store_over_map", "cpp_csr_searchedge_ops_per_sec", "cpp_csr_scannbr_edges_per_sec",
		"searchedge_single_store_over_csr", "csr_go_over_cpp_searchedge", "csr_go_over_cpp_scannbr"} {
		if v, ok := m[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, m[k])
		}
	}
	checkCounts(t, res)
	// The store's reads are against the faster CSR, in Go or in C++.
	for _, c := range []struct {
		name              string
		ratio, store, csr float64
		cpp               float64
	}{
		{"searchedge_store_over_csr", res.SearchEdgeOverCSR, res.SearchEdge.OpsPerSec, res.CSRSearchEdge.OpsPerSec, res.CppCSRSearchEdgeOpsPerSec},
		{"searchedge_single_store_over_csr", res.SearchEdgeSingleOverCSR, res.SearchEdgeSingle.OpsPerSec, res.CSRSearchEdge.OpsPerSec, res.CppCSRSearchEdgeOpsPerSec},
		{"scannbr_store_over_csr", res.ScanNbrOverCSR, res.ScanNbrEdgesPerSec, res.CSRScanNbrEdgesPerSec, res.CppCSRScanNbrEdgesPerSec},
	} {
		if want := c.store / max(c.csr, c.cpp); math.Abs(c.ratio-want) > 1e-9*want {
			t.Errorf("%s = %v, want %v (the store over the faster CSR)", c.name, c.ratio, want)
		}
	}
	for k, o := range map[string]Op{"insedge": res.InsEdge, "insvtx": res.InsVtx, "getvtx": res.GetVtx, "map_getvtx": res.MapGetVtx,
		"searchedge": res.SearchEdge, "searchedge_single": res.SearchEdgeSingle, "csr_searchedge": res.CSRSearchEdge, "scannbr": res.ScanNbr,
		"deledge": res.DelEdge, "cond_insedge": res.CondInsEdge, "cond_insedge_refused": res.CondInsEdgeRefused, "concurrent_writer": res.ConcurrentWriter} {
		if o.Ops < 1 || o.P50Us <= 0 || o.P99Us < o.P50Us {
			t.Errorf("%s = %v: want ops, and 0 < p50 <= p99", k, o)
		}
	}
}

// checkCounts: the run's counts are those configured. The graph is the
// edges applied, the loaded share and the --ops inserts of the stream's
// edge-factor x 2^scale draws: it has at most as many distinct edges as
// the whole stream, and at least that less the draws not applied; the
// CSR's bytes are 8 per offset and 4 per neighbor.
func checkCounts(t *testing.T, res Result) {
	t.Helper()
	distinct := map[[2]uint64]bool{}
	for _, e := range (gen.RMAT{Scale: 10, EdgeFactor: 8, Seed: 1}).Generate() {
		distinct[[2]uint64{e.Src, e.Dst}] = true
	}
	applied := 6553 + 500
	if res.Edges != 8192 || res.LoadedEdges != 6553 || res.WriteBatch != 1 || res.ConcurrentReaders != 2 || res.InsEdge.Ops != 500 {
		t.Errorf("edges %d, loaded %d, write batch %d, readers %d, INSEDGE %d; want 8192, 6553 (80%%), 1, 2, 500",
			res.Edges, res.LoadedEdges, res.WriteBatch, res.ConcurrentReaders, res.InsEdge.Ops)
	}
	if res.GraphEdges > len(distinct) || res.GraphEdges < len(distinct)-(8192-applied) || res.GraphVertices > 1024 {
		t.Errorf("graph of %d edges over %d vertices; the stream has %d distinct edges over 1024 ids, %d of its draws applied",
			res.GraphEdges, res.GraphVertices, len(distinct), applied)
	}
	if want := float64(8*(res.GraphVertices+1)+4*res.GraphEdges) / float64(res.GraphEdges); res.CSRBytesPerEdge != want {
		t.Errorf("csr_bytes_per_edge = %v, want %v", res.CSRBytesPerEdge, want)
	}
}
