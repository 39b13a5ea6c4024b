package main

import (
	"testing"
)

// TestBenchMixedSmall runs bench mixed at a tiny scale and checks the JSON
// line: every phase applied batches and timed them, the phases with readers
// finished scans, and the flat keys and the ratio are there.
func TestBenchMixedSmall(t *testing.T) {
	out, _, err := execute(t, "mixed", "--scale", "10", "--edge-factor", "8", "--duration", "300ms",
		"--rate", "2000", "--vertex-deletes", "0.01", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	for _, k := range []string{"apply_p50_ms_readers0", "apply_p99_ms_readers0", "apply_p99_ms_readers2",
		"apply_p99_ms_readers4", "apply_max_ms_readers4", "apply_p99_readers4_over_readers0",
		"scans_per_sec_readers2", "scans_per_sec_readers4", "scanned_edges_per_sec_readers4"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, res[k])
		}
	}
	if res["edges"].(float64) != 8192 || res["preloaded_edges"].(float64) != 4096 {
		t.Errorf("edges %v, preloaded %v; want 8192 and 4096", res["edges"], res["preloaded_edges"])
	}
	phases, _ := res["phases"].([]any)
	if len(phases) != 3 {
		t.Fatalf("phases = %v, want 3", res["phases"])
	}
	for i, want := range []float64{0, 2, 4} {
		p := phases[i].(map[string]any)
		if p["readers"].(float64) != want || p["batches"].(float64) < 1 {
			t.Errorf("phase %d: %v", i, p)
		}
		if scans := p["scans"].(float64); (want == 0) != (scans == 0) {
			t.Errorf("phase %d with %v readers finished %v scans", i, want, scans)
		}
		if p["apply_max_ms"].(float64) < p["apply_p99_ms"].(float64) || p["apply_p99_ms"].(float64) < p["apply_p50_ms"].(float64) {
			t.Errorf("phase %d: percentiles out of order: %v", i, p)
		}
	}
}

func TestBenchMixedBadFlags(t *testing.T) {
	wantFlagErrors(t, []string{"mixed"}, map[string]string{
		"--scale 99":         "--scale must be between 1 and 26, got 99",
		"--batch-size 0":     "--batch-size must be between 1 and 1000000, got 0",
		"--preload 1":        "--preload must be in [0, 1), got 1",
		"--rate -1":          "--rate must be between 0 (unpaced) and 1000000 batches/s, got -1",
		"--readers 0,65":     "--readers counts must be between 0 and 64, got 65",
		"--duration 0s":      "--duration must be between 1ms and 1h, got 0s",
		"--edge-deletes 0.6": "--edge-deletes and --vertex-deletes must be non-negative and at most 0.5 together, got 0.6 and 0.0001",
		"--memgraph-mib 0":   "--memgraph-mib must be between 1 and 65536, got 0",
		"--hubs -1":          "--hubs must be between 0 and 10000, got -1",
	})
}
