package monitorsbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/testkit/benchtest"
)

// TestConfig: the defaults are valid, and each setting out of range is
// refused with a message naming its flag.
func TestConfig(t *testing.T) {
	benchtest.WantRefusalPrefixes(t, DefaultConfig, (*Config).Validate, []benchtest.Refusal[Config]{
		{Set: func(c *Config) { c.Payments = 0 }, Want: "--payments must be between 1 and 100000000, got 0"},
		{Set: func(c *Config) { c.Accounts = 1 }, Want: "--accounts must be between 2 and 100000000, got 1"},
		{Set: func(c *Config) { c.Days = 0 }, Want: "--days must be between 1 and 3650, got 0"},
		{Set: func(c *Config) { c.Days = 3651 }, Want: "--days must be between 1 and 3650, got 3651"},
		{Set: func(c *Config) { c.BatchSize = 0 }, Want: "--batch-size must be between 1 and 1000000, got 0"},
		{Set: func(c *Config) { c.Window = time.Millisecond }, Want: "--window must be between 1s and "},
		{Set: func(c *Config) { c.RecomputeEvery = 0 }, Want: "--recompute-every must be at least 1, got 0"},
	})
}

// TestStream: the payments are in time order within --days of the
// stream's start, among --accounts accounts, never to the payer, of
// 0.01..1,000.00.
func TestStream(t *testing.T) {
	cfg := Config{Payments: 5000, Accounts: 50, Days: 3, Seed: 7}
	pays := stream(cfg)
	if len(pays) != 5000 {
		t.Fatalf("%d payments, want 5000", len(pays))
	}
	end := eventsStart + (72 * time.Hour).Microseconds()
	for i, p := range pays {
		if p.src >= 50 || p.dst >= 50 || p.src == p.dst || p.amount < 0.01 || p.amount > 1000 || p.time < eventsStart || p.time >= end ||
			i > 0 && p.time < pays[i-1].time {
			t.Fatalf("payment %d: %+v (the one before %+v)", i, p, pays[max(i-1, 0)])
		}
	}
	if time.UnixMicro(eventsStart).UTC() != time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) {
		t.Errorf("eventsStart is %v, want 2026-11-01T00:00:00Z", time.UnixMicro(eventsStart).UTC())
	}
}

// TestRunSmall runs the benchmark at a tiny size and checks its JSON:
// every field the page reads is there, the counts are those configured,
// and each monitor's figures are positive, with a recompute every 4th
// batch. The comparison of every account's measure after each recompute
// with the update's is the benchmark's own (a mismatch fails the run).
func TestRunSmall(t *testing.T) {
	res, err := Run(context.Background(), Config{Payments: 6000, Accounts: 500, Days: 2, Seed: 1, BatchSize: 500,
		Window: 6 * time.Hour, RecomputeEvery: 4, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	benchtest.PageFields(t, "monitors", res)
	if res.Payments != 6000 || res.Accounts != 500 || res.Days != 2 || res.BatchSize != 500 || res.Batches != 12 || res.WindowSec != 21600 {
		t.Errorf("payments %d, accounts %d, days %d, batch size %d, batches %d, window_sec %v; want 6000, 500, 2, 500, 12, 21600",
			res.Payments, res.Accounts, res.Days, res.BatchSize, res.Batches, res.WindowSec)
	}
	names := []string{"fanin_events", "fanin_senders", "fanin_amount", "fanout_senders", "fanout_amount", "mule", "rings_timed"}
	if len(res.Monitors) != len(names) {
		t.Errorf("monitors %v, want %v", res.Monitors, names)
	}
	for _, n := range names {
		m := res.Monitors[n]
		if m == nil {
			t.Errorf("no monitor %s", n)
			continue
		}
		if m.UpdateMeanUs <= 0 || m.UpdateP99Us <= 0 || m.UpdateMaxUs <= 0 || m.RecomputeMeanUs <= 0 || m.WindowEvents <= 0 ||
			m.RecomputeOverUpdate <= 0 || m.UpdateNsPerEvent <= 0 || m.RecomputeNsPerEvent <= 0 || m.Alerts < 0 {
			t.Errorf("monitors.%s = %+v, want positive figures", n, m)
		}
		if m.UpdateMaxUs < m.UpdateP99Us {
			t.Errorf("monitors.%s: update max %v below its p99 %v", n, m.UpdateMaxUs, m.UpdateP99Us)
		}
		if m.Recomputes != 3 {
			t.Errorf("monitors.%s.recomputes = %d, want 3 (batches 4, 8, 12)", n, m.Recomputes)
		}
		if !strings.Contains(m.Spec, "type=") {
			t.Errorf("monitors.%s.spec = %q", n, m.Spec)
		}
	}
	// 6,000 payments over 2 days: 3,000 a day, so a 6h window holds about
	// 750 of them and a max_span of 1h about 125 (plus what arrived within
	// a second of the window's edge).
	if w := res.Monitors["fanin_senders"].WindowEvents; w < 600 || w > 900 {
		t.Errorf("fanin_senders window_events = %v, want about 750", w)
	}
	if w := res.Monitors["rings_timed"].WindowEvents; w < 80 || w > 180 {
		t.Errorf("rings_timed window_events = %v, want about 125", w)
	}
}
