package mixedbench

import (
	"context"
	"encoding/json"
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
		{Set: func(c *Config) { c.BatchSize = 0 }, Want: "--batch-size must be between 1 and 1000000, got 0"},
		{Set: func(c *Config) { c.Preload = 1 }, Want: "--preload must be in [0, 1), got 1"},
		{Set: func(c *Config) { c.Rate = -1 }, Want: "--rate must be between 0 (unpaced) and 1000000 batches/s, got -1"},
		{Set: func(c *Config) { c.Readers = []int{0, 65} }, Want: "--readers counts must be between 0 and 64, got 65"},
		{Set: func(c *Config) { c.Readers = nil }, Want: "--readers needs at least one reader count"},
		{Set: func(c *Config) { c.Phase = 0 }, Want: "--duration must be between 1ms and 1h, got 0s"},
		{Set: func(c *Config) { c.EdgeDeletes = 0.6 }, Want: "--edge-deletes and --vertex-deletes must be non-negative and at most 0.5 together, got 0.6 and 0.0001"},
		{Set: func(c *Config) { c.VertexDeletes = -0.1 }, Want: "--edge-deletes and --vertex-deletes must be non-negative and at most 0.5 together, got 0.05 and -0.1"},
		{Set: func(c *Config) { c.MemGraphMiB = 0 }, Want: "--memgraph-mib must be between 1 and 65536, got 0"},
		{Set: func(c *Config) { c.Hubs = -1 }, Want: "--hubs must be between 0 and 10000, got -1"},
	})
}

// TestHubs: the vertices with the most out-edges, most first, ties by id.
func TestHubs(t *testing.T) {
	edges := []gen.Edge{{Src: 5, Dst: 1}, {Src: 3, Dst: 1}, {Src: 5, Dst: 2}, {Src: 3, Dst: 2}, {Src: 9, Dst: 1}, {Src: 5, Dst: 3}, {Src: 1, Dst: 9}}
	if got, want := hubs(edges, 3), []uint64{5, 3, 1}; !slices.Equal(got, want) {
		t.Errorf("hubs = %v, want %v", got, want)
	}
	if got := hubs(edges, 10); len(got) != 4 {
		t.Errorf("hubs of 10 among 4 sources = %v", got)
	}
}

// TestMarshalAddsFlatKeys: the result's JSON carries each phase's figures
// under flat keys too, and the p99 ratios against the phase without
// readers when both ran.
func TestMarshalAddsFlatKeys(t *testing.T) {
	line, err := json.Marshal(Result{Phases: []Phase{{Readers: 0, ApplyP99Ms: 2}, {Readers: 4, ApplyP99Ms: 3, ScansPerSec: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	if m["apply_p99_ms_readers0"] != 2.0 || m["apply_p99_ms_readers4"] != 3.0 || m["scans_per_sec_readers4"] != 7.0 || m["apply_p99_readers4_over_readers0"] != 1.5 {
		t.Errorf("flat keys: %s", line)
	}
	if _, ok := m["apply_p99_readers2_over_readers0"]; ok {
		t.Errorf("a ratio of a phase that did not run: %s", line)
	}
	if ps, _ := m["phases"].([]any); len(ps) != 2 {
		t.Errorf("phases: %s", line)
	}
}

// TestRunSmall runs the benchmark at a tiny size and checks its JSON:
// every field the page reads is there, the counts are those configured
// (half of edge-factor x 2^scale draws preloaded), every phase applied
// batches and timed them, and the phases with readers, and only they,
// finished scans.
func TestRunSmall(t *testing.T) {
	res, err := Run(context.Background(), Config{Scale: 10, EdgeFactor: 8, Seed: 1, Dir: t.TempDir(), BatchSize: 100, MemGraphMiB: 64,
		Preload: 0.5, Readers: []int{0, 2, 4}, Phase: 300 * time.Millisecond, Rate: 2000, EdgeDeletes: 0.05, VertexDeletes: 0.01, Hubs: 8})
	if err != nil {
		t.Fatal(err)
	}
	_, m := benchtest.PageFields(t, "mixed", res)
	for _, k := range []string{"apply_p50_ms_readers0", "apply_p99_ms_readers0", "apply_p99_ms_readers2",
		"apply_p99_ms_readers4", "apply_max_ms_readers4", "apply_p99_readers4_over_readers0",
		"scans_per_sec_readers2", "scans_per_sec_readers4", "scanned_edges_per_sec_readers4"} {
		if v, ok := m[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, m[k])
		}
	}
	if res.Edges != 8192 || res.Preloaded != 4096 || res.BatchSize != 100 || res.Rate != 2000 || res.PhaseSec != 0.3 || len(res.Hubs) != 8 {
		t.Errorf("edges %d, preloaded %d, batch %d, rate %d, phase %vs, hubs %v; want 8192, 4096, 100, 2000, 0.3, 8 hubs",
			res.Edges, res.Preloaded, res.BatchSize, res.Rate, res.PhaseSec, res.Hubs)
	}
	if len(res.Phases) != 3 {
		t.Fatalf("phases = %+v, want 3", res.Phases)
	}
	for i, want := range []int{0, 2, 4} {
		p := res.Phases[i]
		if p.Readers != want || p.Batches < 1 || p.BatchesPerSec <= 0 || p.ApplyP50Ms <= 0 {
			t.Errorf("phase %d: %+v", i, p)
		}
		if (want == 0) != (p.Scans == 0) {
			t.Errorf("phase %d with %d readers finished %d scans", i, want, p.Scans)
		}
		if p.ApplyMaxMs < p.ApplyP999Ms || p.ApplyP999Ms < p.ApplyP99Ms || p.ApplyP99Ms < p.ApplyP50Ms {
			t.Errorf("phase %d: percentiles out of order: %+v", i, p)
		}
	}
}
