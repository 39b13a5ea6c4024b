package main

import (
	"testing"
)

// TestBenchMixedSmall: bench mixed's flags reach its configuration (its
// figures and checks are mixedbench's tests').
func TestBenchMixedSmall(t *testing.T) {
	out, _, err := execute(t, "mixed", "--scale", "10", "--edge-factor", "8", "--duration", "300ms", "--readers", "0,2",
		"--rate", "2000", "--batch-size", "50", "--preload", "0.25", "--hubs", "3", "--vertex-deletes", "0.01", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["edges"] != 8192.0 || res["preloaded_edges"] != 2048.0 || res["batch_size"] != 50.0 || res["rate_batches_per_sec"] != 2000.0 || res["phase_sec"] != 0.3 {
		t.Errorf("edges %v, preloaded %v, batch %v, rate %v, phase %v; want 8192, 2048, 50, 2000, 0.3",
			res["edges"], res["preloaded_edges"], res["batch_size"], res["rate_batches_per_sec"], res["phase_sec"])
	}
	if hubs, _ := res["hubs"].([]any); len(hubs) != 3 {
		t.Errorf("hubs = %v, want 3", res["hubs"])
	}
	if phases, _ := res["phases"].([]any); len(phases) != 2 {
		t.Errorf("phases = %v, want 2 (--readers 0,2)", res["phases"])
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
