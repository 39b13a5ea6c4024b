package servebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/testkit/benchtest"
)

// TestConfig: the defaults with a broker are valid, and each setting out
// of range is refused with a message naming its flag.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Brokers = []string{"127.0.0.1:9092"}
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	benchtest.WantRefusalPrefixes(t, valid, (*Config).Validate, []benchtest.Refusal[Config]{
		{Set: func(c *Config) { c.Brokers = nil }, Want: "--brokers is required (start one with deploy/kafka/kafka.sh)"},
		{Set: func(c *Config) { c.Scale = 25 }, Want: "--scale must be between 1 and 24, got 25"},
		{Set: func(c *Config) { c.EdgeFactor = 65 }, Want: "--edge-factor must be between 1 and 64, got 65"},
		{Set: func(c *Config) { c.Partitions = 0 }, Want: "--partitions must be between 1 and 1024, got 0"},
		{Set: func(c *Config) { c.Deletes = 0.6 }, Want: "--deletes must be between 0 and 0.5, got 0.6"},
		{Set: func(c *Config) { c.Budget = "lots" }, Want: "--memory-budget: "},
		{Set: func(c *Config) { c.EdgeEvents = -1 }, Want: "--edge-events must be between 0 and 100000000, got -1"},
		{Set: func(c *Config) { c.EdgeAccounts = 1 }, Want: "--edge-accounts must be between 2 and 100000000, got 1"},
	})
}

// TestDefaults: a Config for Run needs a binary, brokers and a directory;
// the rest defaults to the command's.
func TestDefaults(t *testing.T) {
	if err := (&Config{Brokers: []string{"b:9092"}, Dir: "d"}).defaults(); err == nil {
		t.Error("a Config without Binary was accepted")
	}
	c := Config{Binary: "graphtide", Brokers: []string{"b:9092"}, Dir: "d"}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	if c.Partitions != 4 || c.Budget != "1GiB" || len(c.Analytics) != len(DefaultAnalytics) || c.CatchUpWait != 10*time.Minute || c.Log == nil {
		t.Errorf("defaults: %+v", c)
	}
}

// TestResultJSON: a result carries every field the page reads, and the
// fields the command's help names (within_budget, edge_events and its
// figures), under those names.
func TestResultJSON(t *testing.T) {
	run := EventsServe{CPUNsPerEvent: 2000, EventsPerSec: 1e5, StoreBytesPerEdge: 70, CPUOverReplace: 1, StoreBytesOverRepl: 1,
		CompactedBytesPerEdge: 50, CompactedBytesOverRepl: 1}
	res := Result{Events: 100, Budget: 1 << 30, PeakRSS: 3 << 28, PeakAnon: 1 << 29, PeakFile: 1 << 28, PeakRSSOverBudget: 0.75,
		PeakAnonOverBudget: 0.5, WithinBudget: true, ProduceSeconds: 1, CatchUpSeconds: 2, EventsPerSec: 50,
		MemoryByComponent: map[string]int64{"memgraphs": 1}, BudgetByComponent: map[string]int64{"store": 1, "total": 1},
		Analytics: DefaultAnalytics, Scale: 10, EdgeFactor: 8, DeleteShare: 0.05, ServeLog: "serve.log", FraudPullsCutShort: 1,
		EdgeEvents: &EventsResult{Payments: 10, Accounts: 5, DistinctPairs: 8, EventsPerPair: 1.25, Replace: run, Accumulate: run, Props: run}}
	line, m := benchtest.PageFields(t, "serve", res)
	ev, _ := m["edge_events"].(map[string]any)
	acc, _ := ev["accumulate"].(map[string]any)
	if m["within_budget"] != true || acc["cpu_ns_per_event"] != 2000.0 || acc["store_bytes_per_edge"] != 70.0 || acc["compacted_bytes_per_edge"] != 50.0 {
		t.Errorf("the keys the help names: %s", line)
	}
	// Without pulls cut short or edge events, neither is there (the page
	// reads them as none).
	res.FraudPullsCutShort, res.EdgeEvents = 0, nil
	if line, _ = json.Marshal(res); strings.Contains(string(line), "fraud_pulls_cut_short") || strings.Contains(string(line), "edge_events") {
		t.Errorf("empty figures in %s", line)
	}
}

// TestPaymentJSON: a payment as the producer sends it, with the
// fields the mappings read.
func TestPaymentJSON(t *testing.T) {
	b, err := paymentJSON(6, bench.Payment{Src: 3, Dst: 9, Amount: 12.5, Time: time.Date(2026, 11, 23, 10, 15, 0, 0, time.UTC).UnixMicro()})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"event_id": "e-6", "from_account": "acct-3", "to_account": "acct-9", "amount": 12.5, "currency": "EUR",
		"channel": "wallet", "ts": "2026-11-23T10:15:00Z", "type": "payment"}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("payment %s, want %v", b, want)
	}
}

// TestScrape: a metric's samples by their label values; another metric
// that shares its prefix and comments are not its samples.
func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `# HELP graphtide_memory_bytes Memory.
# TYPE graphtide_memory_bytes gauge
graphtide_memory_bytes{component="memgraphs"} 1024
graphtide_memory_bytes{component="go_runtime",kind="heap"} 2.5e+06
graphtide_memory_bytes_total 7
graphtide_memory_bytes{component="broken" 5
graphtide_other 1
`)
	}))
	defer srv.Close()
	got, err := scrape(srv.URL, "graphtide_memory_bytes")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["memgraphs"] != 1024 || got["go_runtime,heap"] != 2_500_000 {
		t.Errorf("scrape = %v, want memgraphs 1024 and go_runtime,heap 2500000", got)
	}
}

// TestCaughtUp: serve has caught up when it ingested every record and
// every analytic is ready at the store's newest seq.
func TestCaughtUp(t *testing.T) {
	records, seq := 90, uint64(7)
	analytics := []api.AnalyticResult{{Ready: true, Seq: 7}, {Ready: true, Seq: 7}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintf(w, "graphtide_ingest_records_total{partition=\"0\"} %d\ngraphtide_ingest_records_total{partition=\"1\"} 10\n", records)
		case "/v1/stats":
			_ = json.NewEncoder(w).Encode(api.StatsResponse{Store: api.StoreStats{LastSeq: seq}})
		case "/v1/analytics":
			_ = json.NewEncoder(w).Encode(api.AnalyticsResponse{Analytics: analytics})
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		name    string
		set     func()
		events  int
		want    bool
		wantErr bool
	}{
		{"all there", func() {}, 100, true, false},
		{"a record short", func() {}, 101, false, false},
		{"an analytic behind", func() { analytics[1].Seq = 6 }, 100, false, false},
		{"an analytic not ready", func() { analytics[1] = api.AnalyticResult{Seq: 7} }, 100, false, false},
	} {
		c.set()
		got, err := caughtUp(srv.URL, c.events)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%s: caughtUp = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestWaitFor: it returns once the condition holds, with the condition's
// error, when the process exits, or at the timeout.
func TestWaitFor(t *testing.T) {
	ctx := context.Background()
	n := 0
	if err := waitFor(ctx, make(chan error, 1), time.Minute, func() (bool, error) { n++; return n == 2, nil }); err != nil || n != 2 {
		t.Errorf("a condition that holds the second time: %v after %d polls", err, n)
	}
	boom := errors.New("boom")
	if err := waitFor(ctx, make(chan error, 1), time.Minute, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("a failing condition: %v", err)
	}
	exited := make(chan error, 1)
	exited <- errors.New("exit status 2")
	if err := waitFor(ctx, exited, time.Minute, func() (bool, error) { return false, nil }); err == nil || !strings.Contains(err.Error(), "serve exited: exit status 2") {
		t.Errorf("an exited process: %v", err)
	}
	if len(exited) != 1 {
		t.Error("waitFor took the exit and did not put it back for the caller")
	}
	if err := waitFor(ctx, make(chan error, 1), time.Millisecond, func() (bool, error) { return false, nil }); err == nil || !strings.Contains(err.Error(), "not within 1ms") {
		t.Errorf("a timeout: %v", err)
	}
}

// TestDirBytes: the regular files' sizes under a directory, nested ones
// included.
func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"x": 100, "a/y": 20, "a/b/z": 3} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := dirBytes(dir); err != nil || n != 123 {
		t.Errorf("dirBytes = %d, %v; want 123", n, err)
	}
}

// TestProcessCPU: this process's CPU time grows as it works (in clock
// ticks of 10 ms: work until one passes, for at most 5 s).
func TestProcessCPU(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	after, x := before, uint64(1)
	for t0 := time.Now(); after == before && time.Since(t0) < 5*time.Second; {
		for range 1_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if after, err = processCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before || after%(10*time.Millisecond) != 0 || x == 0 {
		t.Errorf("CPU time %v, then %v after up to 5 s of work: want more, in ticks of 10 ms", before, after)
	}
}
