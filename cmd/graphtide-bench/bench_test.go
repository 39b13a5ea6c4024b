package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/bench"
)

// TestBenchIngestSmall: bench ingest's flags reach its configuration (its
// figures and checks are ingestbench's tests').
func TestBenchIngestSmall(t *testing.T) {
	out, _, err := execute(t, "ingest", "--scale", "6", "--edge-factor", "16", "--dir", t.TempDir(), "--memgraph-mib", "2",
		"--hub-versions", "100", "--skip-pebble", "--events", "3000", "--accounts", "300", "--batch-size", "500")
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["edges"] != 1024.0 || res["batch_size"] != 500.0 || res["memgraph_bytes"] != float64(2<<20) || res["pebble_edges_per_sec"] != 0.0 {
		t.Errorf("edges %v, batch_size %v, memgraph_bytes %v, pebble_edges_per_sec %v; want 1024, 500, %d, 0 (skipped)",
			res["edges"], res["batch_size"], res["memgraph_bytes"], res["pebble_edges_per_sec"], 2<<20)
	}
	ev, _ := res["edge_events"].(map[string]any)
	if ev["events"] != 3000.0 || ev["accounts"] != 300.0 {
		t.Errorf("edge_events: events %v, accounts %v; want 3000, 300", ev["events"], ev["accounts"])
	}
}

func TestBenchIngestBadFlags(t *testing.T) {
	wantFlagErrors(t, []string{"ingest"}, map[string]string{
		"--batch-size 0":   "--batch-size must be between 1 and 10000000, got 0",
		"--scale 99":       "--scale must be between 1 and 32, got 99",
		"--memgraph-mib 0": "--memgraph-mib must be between 1 and 65536, got 0",
		"--hub-versions 1": "--hub-versions must be between 2 and 20000000, got 1",
		"--events -1":      "--events must be between 0 and 100000000, got -1",
		"--accounts 1":     "--accounts must be between 2 and 100000000, got 1",
	})
	dir := t.TempDir()
	if _, _, err := execute(t, "ingest", "--scale", "4", "--dir", dir, "--hub-versions", "100", "--events", "0"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "ingest", "--scale", "4", "--dir", dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("reusing a benchmark dir: %v", err)
	}
}

// wantFlagErrors runs the command cmd with each case's flags (split at
// spaces) and wants it refused with exactly that case's message.
func wantFlagErrors(t *testing.T, cmd []string, cases map[string]string) {
	t.Helper()
	for args, want := range cases {
		_, _, err := execute(t, append(slices.Clone(cmd), strings.Fields(args)...)...)
		if err == nil || err.Error() != want {
			t.Errorf("%s %s: got %v, want %q", strings.Join(cmd, " "), args, err, want)
		}
	}
}

// lastJSONLine parses the benchmark result line that ends out.
func lastJSONLine(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	return res
}

// fixedCalibration stands for the machine's calibration in this package's
// tests (the real one, a few seconds of work, slower under the race
// detector, is tested in internal/bench).
var fixedCalibration = bench.Calibration{LoadAvg1m: 1.5, SortMs: 70, CopyGBps: 9, RandomReadNs: 120}

func init() {
	calibrateMachine = func() (bench.Calibration, error) { return fixedCalibration, nil }
}

// TestBenchResultCarriesCalibration: a benchmark's JSON starts with the
// calibration measured before it ran, unless --calibrate=false.
func TestBenchResultCarriesCalibration(t *testing.T) {
	for _, calibrate := range []bool{true, false} {
		args := []string{"decode", "--records", "500", "--accounts", "50", "--repeats", "1"}
		if !calibrate {
			args = append(args, "--calibrate=false")
		}
		out, _, err := execute(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Calibration *bench.Calibration `json:"calibration"`
			Native      map[string]any     `json:"native"`
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := lines[len(lines)-1]
		if err := json.Unmarshal([]byte(last), &res); err != nil {
			t.Fatal(err)
		}
		switch {
		case res.Native == nil:
			t.Errorf("--calibrate=%v: the result lost its own fields: %s", calibrate, last)
		case calibrate && (res.Calibration == nil || *res.Calibration != fixedCalibration || !strings.HasPrefix(last, `{"calibration":`)):
			t.Errorf("the result does not start with the calibration %+v: %s", fixedCalibration, last)
		case !calibrate && res.Calibration != nil:
			t.Errorf("--calibrate=false: the result carries a calibration: %s", last)
		}
	}
}

// TestBenchDecodeSmall: bench decode's flags reach its configuration (its
// figures and checks are decodebench's tests').
func TestBenchDecodeSmall(t *testing.T) {
	out, _, err := execute(t, "decode", "--records", "3000", "--accounts", "500", "--repeats", "1")
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["records"] != 3000.0 {
		t.Errorf("records = %v, want 3000", res["records"])
	}
	if v, ok := res["mapped_over_native"].(float64); !ok || v <= 0 {
		t.Errorf("mapped_over_native = %v", res["mapped_over_native"])
	}
	wantFlagErrors(t, []string{"decode"}, map[string]string{
		"--records 0":  "--records must be between 1 and 100000000, got 0",
		"--accounts 1": "--accounts must be between 2 and 100000000, got 1",
		"--repeats 0":  "--repeats must be between 1 and 100, got 0",
	})
}

// TestBenchMonitorsSmall: bench monitors' flags reach its configuration
// (its figures and checks are monitorsbench's tests').
func TestBenchMonitorsSmall(t *testing.T) {
	out, _, err := execute(t, "monitors", "--payments", "6000", "--accounts", "500", "--days", "2", "--batch-size", "500",
		"--window", "6h", "--recompute-every", "4", "--dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["payments"] != 6000.0 || res["accounts"] != 500.0 || res["days"] != 2.0 || res["batches"] != 12.0 || res["window_sec"] != 21600.0 {
		t.Errorf("payments %v, accounts %v, days %v, batches %v, window_sec %v; want 6000, 500, 2, 12, 21600", res["payments"], res["accounts"], res["days"], res["batches"], res["window_sec"])
	}
	if fanin, _ := res["monitors"].(map[string]any)["fanin_events"].(map[string]any); fanin["recomputes"] != 3.0 {
		t.Errorf("monitors.fanin_events.recomputes = %v, want 3 (--recompute-every 4 of 12 batches)", fanin["recomputes"])
	}
	wantFlagErrors(t, []string{"monitors"}, map[string]string{
		"--payments 0":        "--payments must be between 1 and 100000000, got 0",
		"--accounts 1":        "--accounts must be between 2 and 100000000, got 1",
		"--days 0":            "--days must be between 1 and 3650, got 0",
		"--batch-size 0":      "--batch-size must be between 1 and 1000000, got 0",
		"--recompute-every 0": "--recompute-every must be at least 1, got 0",
	})
}
