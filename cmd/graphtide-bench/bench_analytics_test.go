package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchAnalyticsSmall runs bench analytics at a small scale: the run
// itself fails unless the kernels agree on the view's topology and the
// CSR's, under every id layout, and unless every update agrees with a
// recompute on the same graph.
func TestBenchAnalyticsSmall(t *testing.T) {
	out, _, err := execute(t, "analytics", "--scale", "12", "--edge-factor", "8", "--repeats", "1",
		"--batch-size", "500", "--stream-fraction", "0.05", "--delete-fraction", "0.2", "--vertex-delete-fraction", "0.01", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	kernels, _ := res["kernels"].(map[string]any)
	for _, a := range []string{"bfs", "wcc", "pagerank", "sssp"} {
		k, _ := kernels[a].(map[string]any)
		for _, f := range []string{"view_sec", "csr_sec", "fresh_sec", "view_over_csr", "fresh_over_view"} {
			if v, ok := k[f].(float64); !ok || v <= 0 {
				t.Errorf("kernels.%s.%s = %v, want a positive number", a, f, k[f])
			}
		}
	}
	pr, _ := kernels["pagerank"].(map[string]any)
	for _, f := range []string{"iterations", "fresh_iterations"} {
		if v, ok := pr[f].(float64); !ok || v < 1 || v > 20 {
			t.Errorf("kernels.pagerank.%s = %v, want 1 to 20", f, pr[f])
		}
	}
	inc, _ := res["incremental"].(map[string]any)
	for _, a := range []string{"bfs", "wcc", "pagerank", "sssp", "degree"} {
		x, _ := inc[a].(map[string]any)
		for _, f := range []string{"batch_sec", "batch_p99_sec", "update_sec", "max_update_sec", "warmup_update_sec", "recompute_sec", "speedup"} {
			if v, ok := x[f].(float64); !ok || v <= 0 {
				t.Errorf("incremental.%s.%s = %v, want a positive number", a, f, x[f])
			}
		}
		if b, _ := x["batches"].(float64); b != res["batches"].(float64) || b < 3 {
			t.Errorf("incremental.%s.batches = %v of %v", a, x["batches"], res["batches"])
		}
		// What a user waits for holds the update it waits for.
		if x["batch_sec"].(float64) <= x["update_sec"].(float64) || x["batch_p99_sec"].(float64) < x["batch_sec"].(float64) {
			t.Errorf("incremental.%s: batch_sec %v (p99 %v), update_sec %v", a, x["batch_sec"], x["batch_p99_sec"], x["update_sec"])
		}
	}
	checkBatchFigures(t, res)
	// 5% of 32768 edges streamed, with about 21% deletes among them, in
	// batches of 500.
	if ops := res["streamed_ops"].(float64); ops < 1638 || ops > 1638*1.4 || res["vertex_deletes"].(float64) == 0 {
		t.Errorf("streamed %v ops with %v vertex deletes", ops, res["vertex_deletes"])
	}
	topo, _ := res["topology"].(map[string]any)
	for _, f := range []string{"bytes_per_edge", "bytes_per_edge_after_stream"} {
		if b, _ := topo[f].(float64); b < 8 || b > 40 {
			t.Errorf("topology.%s = %v", f, topo[f])
		}
	}
	if c, _ := topo["advance_counters"].(map[string]any); c["advances"] != res["batches"] || c["ops"] != res["streamed_ops"] {
		t.Errorf("topology.advance_counters = %v, want %v advances of %v operations in all", c, res["batches"], res["streamed_ops"])
	}
	if res["graph"] != "rmat" || res["stream_source"] != "generator" || fmt.Sprint(res["checked_against_reference"]) != "[bfs wcc sssp]" {
		t.Errorf("graph %v, stream from %v, checked %v", res["graph"], res["stream_source"], res["checked_against_reference"])
	}
	// Every layout measured (the run fails unless their results agree),
	// and each ratio against dense ids reported.
	ids, _ := res["ids"].(map[string]any)
	for _, l := range []string{"dense", "sparse", "unmapped", "keys"} {
		fig, _ := ids[l].(map[string]any)
		if fig == nil {
			t.Fatalf("no figures for %s ids: %v", l, res["ids"])
		}
		for _, k := range []string{"recompute_sec", "update_sec"} {
			m, _ := fig[k].(map[string]any)
			if len(m) < 4 {
				t.Errorf("%s ids: %s = %v", l, k, fig[k])
			}
		}
	}
	// Mapped sparse ids are dense in the store; unmapped ones are hashed.
	if h := ids["sparse"].(map[string]any)["index_hashed"]; h.(float64) != 0 {
		t.Errorf("sparse ids: %v vertices were hashed, want none (they are mapped): %v", h, ids["sparse"])
	}
	if h := ids["unmapped"].(map[string]any)["index_hashed"]; h.(float64) == 0 {
		t.Errorf("unmapped ids: no vertex was hashed (%v)", ids["unmapped"])
	}
	for _, l := range []string{"sparse_over_dense", "unmapped_over_dense", "keys_over_dense"} {
		m, _ := res[l].(map[string]any)
		for _, a := range []string{"bfs", "wcc", "pagerank", "sssp"} {
			for _, k := range []string{a + "_recompute", a + "_update"} {
				if v, ok := m[k].(float64); !ok || v <= 0 {
					t.Errorf("%s[%s] = %v, want a positive ratio", l, k, m[k])
				}
			}
		}
	}
}

// checkBatchFigures checks the per-batch figures of a run's JSON.
func checkBatchFigures(t *testing.T, res map[string]any) {
	t.Helper()
	b, _ := res["batch"].(map[string]any)
	for _, f := range []string{"ops", "edge_changes", "apply_sec", "apply_p99_sec", "advance_sec", "advance_p99_sec", "advance_us_per_op",
		"advance_us_per_change", "all_sec", "all_p99_sec", "advance_alloc_bytes_per_op", "update_alloc_bytes_per_op"} {
		if v, ok := b[f].(float64); !ok || v <= 0 {
			t.Errorf("batch.%s = %v, want a positive number", f, b[f])
		}
	}
	// Per operation and per edge change, the same advance.
	perBatch := b["advance_us_per_op"].(float64) * b["ops"].(float64)
	if c := b["advance_us_per_change"].(float64) * b["edge_changes"].(float64); math.Abs(c-perBatch) > 1e-6*perBatch {
		t.Errorf("the advance per batch is %v µs by operations, %v by edge changes", perBatch, c)
	}
	if b["batches"] != res["batches"].(float64)-1 {
		t.Errorf("batch figures over %v batches of %v (the warm-up left out)", b["batches"], res["batches"])
	}
	// All five analytics after the batch take longer than any one of them.
	inc, _ := res["incremental"].(map[string]any)
	for a, x := range inc {
		if bs := x.(map[string]any)["batch_sec"].(float64); bs > b["all_sec"].(float64) {
			t.Errorf("%s's batch_sec %v is more than all five's %v", a, bs, b["all_sec"])
		}
	}
}

// TestBenchAnalyticsKron runs the Kronecker family with hub vertex deletes,
// its analytics also registered together (--registry).
func TestBenchAnalyticsKron(t *testing.T) {
	out, _, err := execute(t, "analytics", "--graph", "kron", "--scale", "11", "--edge-factor", "8", "--repeats", "1", "--ids", "dense",
		"--batch-size", "300", "--stream-fraction", "0.05", "--delete-fraction", "0.5", "--hub-vertex-deletes", "4", "--registry", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["graph"] != "kron" || res["hub_vertex_deletes"] != 4.0 || res["vertex_deletes"].(float64) < 4 || res["batches"].(float64) < 3 {
		t.Errorf("graph %v, %v hub vertex deletes of %v, %v batches", res["graph"], res["hub_vertex_deletes"], res["vertex_deletes"], res["batches"])
	}
	// A simple graph: the topology holds every loaded edge.
	if topo := res["topology"].(map[string]any); topo["edges"] != res["edges"] {
		t.Errorf("%v edges loaded, %v in the topology", res["edges"], topo["edges"])
	}
	checkBatchFigures(t, res)
	// A hub's delete removes its edges: more edge changes than operations.
	if c := res["topology"].(map[string]any)["advance_counters"].(map[string]any); !(c["changes"].(float64) > c["ops"].(float64)) {
		t.Errorf("%v edge changes for %v operations with hub vertex deletes", c["changes"], c["ops"])
	}
	reg, _ := res["registry"].(map[string]any)
	if as, _ := reg["analytics"].(map[string]any); len(as) != 5 || !(reg["all_sec"].(float64) > 0) {
		t.Errorf("registry figures %v", reg)
	}
	for a, x := range reg["analytics"].(map[string]any) {
		for _, f := range []string{"batch_sec", "batch_p99_sec", "update_sec"} {
			if v, ok := x.(map[string]any)[f].(float64); !ok || v <= 0 {
				t.Errorf("registry.analytics.%s.%s = %v, want a positive number", a, f, x.(map[string]any)[f])
			}
		}
	}
}

// writeRandomEL writes an edge file of 6,000 random weighted edges among
// 1,500 vertices (weights 1 to 9) and returns its path.
func writeRandomEL(t *testing.T, seed1, seed2 uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "g.el")
	var b strings.Builder
	r := rand.New(rand.NewPCG(seed1, seed2))
	for range 6000 {
		fmt.Fprintf(&b, "%d %d %d\n", r.IntN(1500), r.IntN(1500), 1+r.IntN(9))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBenchAnalyticsInput runs the benchmark on an edge file with weights
// and a given root.
func TestBenchAnalyticsInput(t *testing.T) {
	path := writeRandomEL(t, 1, 2)
	out, _, err := execute(t, "analytics", "--input", path, "--root", "7", "--repeats", "1",
		"--batch-size", "100", "--stream-fraction", "0.1", "--delete-fraction", "0.5", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["root"].(float64) != 7 || res["weighted"] != true || res["input"] != path {
		t.Errorf("root %v, weighted %v, input %v", res["root"], res["weighted"], res["input"])
	}
	if ids, _ := res["ids"].(map[string]any); len(ids) != 1 || ids["dense"] == nil {
		t.Errorf("with --input only dense ids are measured: %v", res["ids"])
	}
	// A share of the file too small to stream one edge is refused.
	_, _, err = execute(t, "analytics", "--input", path, "--stream-fraction", "0.0001", "--dir", t.TempDir())
	if want := "--stream-fraction 0.0001 of 6000 edges streams none: raise it"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// TestBenchAnalyticsKernelsOnly times the bare kernels on the whole edge
// file (a share too small to stream is fine here: nothing streams), each
// --repeats times, and measures nothing else.
func TestBenchAnalyticsKernelsOnly(t *testing.T) {
	path := writeRandomEL(t, 3, 4)
	out, _, err := execute(t, "analytics", "--input", path, "--kernels-only", "--repeats", "3", "--stream-fraction", "0.0001")
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	ks, _ := res["kernels_only"].(map[string]any)
	for _, name := range []string{"bfs", "wcc", "pagerank", "sssp"} {
		k, _ := ks[name].(map[string]any)
		if lo, med := k["min_sec"], k["median_sec"]; lo == nil || med == nil || !(lo.(float64) > 0 && lo.(float64) <= med.(float64)) {
			t.Errorf("%s: %v", name, k)
		}
	}
	if pr, _ := ks["pagerank"].(map[string]any); pr["iterations"] == nil || !(pr["per_iteration_sec"].(float64) > 0) {
		t.Errorf("pagerank: %v", pr)
	}
	if len(ks) != 4 || res["incremental"] != nil || res["batches"].(float64) != 0 {
		t.Errorf("--kernels-only measured more: %v", res)
	}
}

func TestBenchAnalyticsBadFlags(t *testing.T) {
	wantFlagErrors(t, []string{"analytics"}, map[string]string{
		"--scale 40":                            "--scale must be between 1 and 26, got 40",
		"--batch-size 0":                        "--batch-size must be between 1 and 10000000, got 0",
		"--stream-fraction 2":                   "--stream-fraction must be in (0, 1], got 2",
		"--repeats 0":                           "--repeats must be between 1 and 100, got 0",
		"--edge-factor 65":                      "--edge-factor must be between 1 and 64, got 65",
		"--ids sparse":                          `--ids must start with dense (the baseline), got "sparse"`,
		"--ids dense,odd":                       `--ids: "odd" is not one of dense, sparse, unmapped, keys, or is repeated`,
		"--ids dense,dense":                     `--ids: "dense" is not one of dense, sparse, unmapped, keys, or is repeated`,
		"--delete-fraction 2":                   "--delete-fraction and --vertex-delete-fraction must be at least 0 and add up to at most 1, got 2 and 0.0001",
		"--root -5":                             "--root must be a vertex id below 2^62 (or -1: the vertex with the most out-edges), got -5",
		"--pagerank-tolerance 0":                "--pagerank-tolerance must be between 1e-15 and 1, got 0",
		"--graph er":                            `--graph must be rmat or kron, got "er"`,
		"--hub-vertex-deletes -1":               "--hub-vertex-deletes must be between 0 and 1000000, got -1",
		"--stream s.ops --hub-vertex-deletes 2": "--hub-vertex-deletes shapes a generated stream: --stream s.ops is streamed as it is",
	})
}
