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
	if v, ok := res["max_sparse_over_dense"].(float64); !ok || v <= 0 {
		t.Errorf("max_sparse_over_dense = %v", res["max_sparse_over_dense"])
	}
}

func TestBenchAnalyticsBadFlags(t *testing.T) {
	wantFlagErrors(t, []string{"bench", "analytics"}, map[string]string{
		"--scale 40":          "--scale must be between 1 and 26, got 40",
		"--batch-size 0":      "--batch-size must be between 1 and 10000000, got 0",
		"--stream-fraction 2": "--stream-fraction must be in (0, 1], got 2",
		"--repeats 0":         "--repeats must be between 1 and 100, got 0",
		"--edge-factor 65":    "--edge-factor must be between 1 and 64, got 65",
		"--ids sparse":        `--ids must start with dense (the baseline), got "sparse"`,
		"--ids dense,odd":     `--ids: "odd" is not one of dense, sparse, unmapped, keys, or is repeated`,
		"--ids dense,dense":   `--ids: "dense" is not one of dense, sparse, unmapped, keys, or is repeated`,
	})
}
