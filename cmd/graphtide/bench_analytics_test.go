package main

import (
	"testing"
)

// TestBenchAnalyticsSmall runs bench analytics at a small scale: the run
// itself fails unless the analytics agree on the view and on the CSR, and
// unless every incremental update stays incremental on the inserts.
func TestBenchAnalyticsSmall(t *testing.T) {
	out, _, err := execute(t, "bench", "analytics", "--scale", "12", "--edge-factor", "8", "--repeats", "1",
		"--batch-size", "500", "--stream-fraction", "0.05", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	keys := []string{"bfs_view_sec", "bfs_csr_sec", "wcc_view_sec", "wcc_csr_sec", "pr_view_sec", "pr_csr_sec"}
	for _, a := range []string{"bfs", "wcc", "pagerank", "sssp", "degree"} {
		keys = append(keys, a+"_incremental_sec", a+"_recompute_sec")
	}
	for _, k := range keys {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, res[k])
		}
	}
	// 5% of 32768 edges in batches of 500.
	if res["streamed_edges"].(float64) != 1638 || res["batches"].(float64) != 4 {
		t.Errorf("streamed %v edges in %v batches, want 1638 in 4", res["streamed_edges"], res["batches"])
	}
}

func TestBenchAnalyticsBadFlags(t *testing.T) {
	wantFlagErrors(t, []string{"bench", "analytics"}, map[string]string{
		"--scale 40":          "--scale must be between 1 and 26, got 40",
		"--batch-size 0":      "--batch-size must be between 1 and 10000000, got 0",
		"--stream-fraction 2": "--stream-fraction must be in (0, 1], got 2",
		"--repeats 0":         "--repeats must be between 1 and 100, got 0",
		"--edge-factor 65":    "--edge-factor must be between 1 and 64, got 65",
	})
}
