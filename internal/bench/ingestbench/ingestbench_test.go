package ingestbench

import (
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/testkit/benchtest"
)

// TestConfig: the defaults are valid, and each setting out of range is
// refused with a message naming its flag; with --input the graph's
// settings are not the graph's.
func TestConfig(t *testing.T) {
	benchtest.WantRefusals(t, DefaultConfig, (*Config).Validate, []benchtest.Refusal[Config]{
		{Set: func(c *Config) { c.BatchSize = 0 }, Want: "--batch-size must be between 1 and 10000000, got 0"},
		{Set: func(c *Config) { c.Scale = 99 }, Want: "--scale must be between 1 and 32, got 99"},
		{Set: func(c *Config) { c.EdgeFactor = 0 }, Want: "--edge-factor must be at least 1 and edge-factor x 2^scale must fit in 63 bits, got 0"},
		{Set: func(c *Config) { c.MemGraphMiB = 0 }, Want: "--memgraph-mib must be between 1 and 65536, got 0"},
		{Set: func(c *Config) { c.HubVersions = 1 }, Want: "--hub-versions must be between 2 and 20000000, got 1"},
		{Set: func(c *Config) { c.Events = -1 }, Want: "--events must be between 0 and 100000000, got -1"},
		{Set: func(c *Config) { c.Accounts = 1 }, Want: "--accounts must be between 2 and 100000000, got 1"},
	})
	cfg := DefaultConfig()
	cfg.Input, cfg.Scale = "edges.bin", 99
	if err := cfg.Validate(); err != nil {
		t.Errorf("--input with --scale 99: %v", err)
	}
}

// TestRunSmall runs the benchmark at a tiny size, edge events included,
// and checks its JSON: every field the page reads is there, every figure
// is positive, the counts are those configured (an R-MAT graph of
// edge-factor x 2^scale draws over 2^scale ids, its distinct edges
// counted here), and a store that keeps in-edges holds every edge twice.
// The store's scan is checked against the static CSR by the run itself (a
// mismatch fails it).
func TestRunSmall(t *testing.T) {
	events, accounts := 6000, 200
	cfg := Config{Scale: 10, EdgeFactor: 8, Seed: 1, Dir: t.TempDir(), BatchSize: 10000, MemGraphMiB: 1,
		HubVersions: 5000, Events: events, Accounts: accounts}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, m := benchtest.PageFields(t, "ingest", res)
	for _, k := range []string{"edges", "store_edges_per_sec", "pebble_edges_per_sec", "csr_build_edges_per_sec",
		"store_scan_sec", "csr_scan_sec", "store_bytes_per_edge", "peak_rss_bytes",
		"store_in_edges_edges_per_sec", "in_edges_over_out_only", "apply_cpu_ns_per_edge_direction",
		"apply_cpu_ns_per_edge_direction_first_memgraph", "apply_process_cpu_ns_per_edge_direction", "apply_cpu_ns_per_edge_direction_in_edges", "memgraph_bytes_per_version", "hub_degree_ms", "hub_page_ms", "hub_first_degree_ms", "hub_first_degree_after_burst_ms", "hub_first_page_after_burst_ms",
		"scan_after_vertex_deletes_over_clean", "ingest_cpu_ns_per_edge", "ingest_cpu_ns_per_edge_in_edges", "in_edges_cpu_over_out_only",
		"store_in_edges_bytes_per_edge", "in_edges_bytes_over_out_only", "pebble_bytes_per_edge", "store_vs_pebble", "scan_store_over_csr"} {
		if v, ok := m[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, m[k])
		}
	}
	if res.InEdgesBytesOverOutOnly <= 1 {
		t.Errorf("in_edges_bytes_over_out_only = %v, want above 1", res.InEdgesBytesOverOutOnly)
	}
	distinct := map[[2]uint64]bool{}
	for _, e := range (gen.RMAT{Scale: 10, EdgeFactor: 8, Seed: 1}).Generate() {
		distinct[[2]uint64{e.Src, e.Dst}] = true
	}
	if res.Edges != 8192 || res.Vertices != 1024 || res.DistinctEdges != uint64(len(distinct)) || res.BatchSize != 10000 || res.MemGraphBytes != 1<<20 {
		t.Errorf("edges %d, vertices %d, distinct %d, batch %d, memgraph bytes %d; want 8192, 1024, %d, 10000, %d",
			res.Edges, res.Vertices, res.DistinctEdges, res.BatchSize, res.MemGraphBytes, len(distinct), 1<<20)
	}
	checkEdgeEvents(t, res.EdgeEvents, events, accounts)
}

// checkEdgeEvents: the edge-events comparison's configuration and
// figures. Its checks of what the store read back are the benchmark's own
// (a mismatch fails the run); here the figures must be there, the pair
// counts those of the payments stream, and the layouts' sizes must order
// as what they store does: an accumulate edge keeps a count and a first
// time, properties keep a reference and a document per edge, and a retain
// keeps the last day's events one by one.
func checkEdgeEvents(t *testing.T, ev EventsResult, events, accounts int) {
	t.Helper()
	if ev.Events != events || ev.Accounts != accounts || ev.Rounds != 3 {
		t.Errorf("events %d, accounts %d, rounds %d; want %d, %d, 3", ev.Events, ev.Accounts, ev.Rounds, events, accounts)
	}
	pairs := map[[2]uint64]bool{}
	for _, p := range bench.PaymentStream(events, accounts, 1) {
		pairs[[2]uint64{p.Src, p.Dst}] = true
	}
	if ev.DistinctPairs != len(pairs) || ev.EventsPerPair != float64(events)/float64(len(pairs)) ||
		ev.RepeatShare != float64(events-len(pairs))/float64(events) {
		t.Errorf("distinct_pairs %d, events_per_pair %v, repeat_share %v; the stream has %d distinct pairs of %d payments",
			ev.DistinctPairs, ev.EventsPerPair, ev.RepeatShare, len(pairs), events)
	}
	// Three payments in four go to one of the payer's 8 regular payees: at
	// most 8 x accounts + events/4 distinct pairs, so pairs repeat; and
	// the random fourth and the payees spread them over at least a sixth
	// of the payments.
	if most := 8*accounts + events/4; ev.DistinctPairs > most || ev.DistinctPairs < events/6 {
		t.Errorf("distinct_pairs = %d, want between %d and %d", ev.DistinctPairs, events/6, most)
	}
	bytes := map[string]float64{}
	for name, v := range map[string]EventsVariant{"replace": ev.Replace, "accumulate": ev.Accumulate,
		"accumulate_props": ev.AccumulateProps, "accumulate_props_retain": ev.AccumulatePropsRetain} {
		if v.ApplyCPUNsPerEvent <= 0 || v.IngestCPUNsPerEvent <= 0 || v.EventsPerSec <= 0 || v.BytesPerEdge <= 0 ||
			v.ApplyCPUOverReplace <= 0 || v.IngestCPUOverReplace <= 0 || v.BytesOverReplace <= 0 {
			t.Errorf("edge_events.%s = %+v, want positive figures", name, v)
		}
		bytes[name] = v.BytesPerEdge
	}
	if r := ev.Replace.BytesOverReplace; r != 1 {
		t.Errorf("replace's bytes_over_replace = %v, want 1", r)
	}
	if !(bytes["replace"] < bytes["accumulate"] && bytes["accumulate"] < bytes["accumulate_props"] && bytes["accumulate_props"] < bytes["accumulate_props_retain"]) {
		t.Errorf("bytes per edge %v, want replace < accumulate < accumulate_props < accumulate_props_retain", bytes)
	}
}

// TestRunRefusesAUsedDir: a benchmark directory that is not empty is
// refused (the run would measure on top of another's files).
func TestRunRefusesAUsedDir(t *testing.T) {
	cfg := Config{Scale: 4, EdgeFactor: 16, Seed: 1, Dir: t.TempDir(), BatchSize: 100, MemGraphMiB: 64, HubVersions: 100, SkipPebble: true}
	if _, err := Run(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(cfg); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("reusing a benchmark dir: %v", err)
	}
}
