package main

import (
	"math"
	"testing"
)

// TestBenchDGSSmall runs bench dgs at a tiny scale and checks the JSON
// line: every operation ran and was timed (the run itself checks each
// lookup and list against the CSR, and fails on a wrong one), and the
// ratios and memory figures are there.
func TestBenchDGSSmall(t *testing.T) {
	out, _, err := execute(t, "dgs", "--scale", "10", "--edge-factor", "8", "--ops", "500",
		"--duration", "200ms", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	for _, k := range []string{"load_edges_per_sec", "searchedge_ops_per_sec", "insedge_ops_per_sec", "deledge_ops_per_sec",
		"scannbr_ops_per_sec", "scannbr_edges_per_sec", "csr_scannbr_edges_per_sec", "searchedge_store_over_csr",
		"scannbr_store_over_csr", "mixed_50_50_ops_per_sec", "mixed_80_20_ops_per_sec", "concurrent_read_ops_per_sec",
		"disk_bytes_per_edge", "csr_bytes_per_edge", "peak_rss_bytes", "insvtx_ops_per_sec", "getvtx_ops_per_sec",
		"getvtx_store_over_map", "cpp_csr_searchedge_ops_per_sec", "cpp_csr_scannbr_edges_per_sec",
		"searchedge_single_store_over_csr", "csr_go_over_cpp_searchedge", "csr_go_over_cpp_scannbr"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, res[k])
		}
	}
	if res["edges"].(float64) != 8192 || res["loaded_edges"].(float64) != 6553 {
		t.Errorf("edges %v, loaded %v; want 8192 and 6553", res["edges"], res["loaded_edges"])
	}
	// The store's reads are against the faster CSR, in Go or in C++.
	num := func(k string) float64 { v, _ := res[k].(float64); return v }
	rate := func(k string) float64 { o, _ := res[k].(map[string]any); v, _ := o["ops_per_sec"].(float64); return v }
	for _, c := range []struct {
		ratio      string
		store, csr float64
		cpp        string
	}{
		{"searchedge_store_over_csr", rate("searchedge"), rate("csr_searchedge"), "cpp_csr_searchedge_ops_per_sec"},
		{"searchedge_single_store_over_csr", rate("searchedge_single"), rate("csr_searchedge"), "cpp_csr_searchedge_ops_per_sec"},
		{"scannbr_store_over_csr", num("scannbr_edges_per_sec"), num("csr_scannbr_edges_per_sec"), "cpp_csr_scannbr_edges_per_sec"},
	} {
		if want := c.store / max(c.csr, num(c.cpp)); math.Abs(num(c.ratio)-want) > 1e-9*want {
			t.Errorf("%s = %v, want %v (the store over the faster CSR)", c.ratio, num(c.ratio), want)
		}
	}
	for _, k := range []string{"insedge", "insvtx", "getvtx", "map_getvtx", "searchedge", "searchedge_single", "csr_searchedge", "scannbr", "deledge",
		"cond_insedge", "cond_insedge_refused", "concurrent_writer"} {
		o, _ := res[k].(map[string]any)
		if o == nil || o["ops"].(float64) < 1 || o["p99_us"].(float64) < o["p50_us"].(float64) || o["p50_us"].(float64) <= 0 {
			t.Errorf("%s = %v: want ops, and 0 < p50 <= p99", k, res[k])
		}
	}
	if ins := res["insedge"].(map[string]any); ins["ops"].(float64) != 500 {
		t.Errorf("INSEDGE ran %v operations, want 500", ins["ops"])
	}
}

func TestBenchDGSBadFlags(t *testing.T) {
	wantFlagErrors(t, []string{"dgs"}, map[string]string{
		"--scale 99":      "--scale must be between 1 and 26, got 99",
		"--load 1":        "--load must be in (0, 1), got 1",
		"--ops 5":         "--ops must be between 100 and 100000000, got 5",
		"--write-batch 0": "--write-batch must be between 1 and 100000, got 0",
		"--readers 65":    "--readers must be between 0 and 64, got 65",
		"--duration 1ms":  "--duration must be between 10ms and 1h, got 1ms",
		"--edge-factor 0": "--edge-factor must be at least 1 and edge-factor x 2^scale must fit in 63 bits, got 0",
	})
}
