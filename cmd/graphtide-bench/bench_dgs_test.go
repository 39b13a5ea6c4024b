package main

import (
	"testing"
)

// TestBenchDGSSmall: bench dgs's flags reach its configuration (its
// figures and checks are dgsbench's tests').
func TestBenchDGSSmall(t *testing.T) {
	out, _, err := execute(t, "dgs", "--scale", "10", "--edge-factor", "8", "--ops", "500", "--load", "0.5",
		"--write-batch", "2", "--readers", "1", "--duration", "200ms", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["edges"] != 8192.0 || res["loaded_edges"] != 4096.0 || res["write_batch"] != 2.0 || res["concurrent_readers"] != 1.0 {
		t.Errorf("edges %v, loaded %v, write batch %v, readers %v; want 8192, 4096, 2, 1", res["edges"], res["loaded_edges"], res["write_batch"], res["concurrent_readers"])
	}
	if ins, _ := res["insedge"].(map[string]any); ins["ops"] != 500.0 {
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
