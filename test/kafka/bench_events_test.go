package kafkatest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/bench/servebench"
)

// TestBenchServeEdgeEvents: bench serve's edge-events comparison (serve
// through a field mapping as replace, accumulate and accumulate with
// properties, on the real broker) runs and reports its figures.
func TestBenchServeEdgeEvents(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := servebench.DefaultConfig()
	cfg.Binary, cfg.Brokers, cfg.Partitions, cfg.Dir, cfg.Log, cfg.CatchUpWait = bin, addrs, 2, t.TempDir(), testWriter{t}, 2*time.Minute
	res, err := servebench.RunEvents(ctx, cfg, 20000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Payments != 20000 || res.Accounts != 1000 {
		t.Errorf("payments %d, accounts %d; want 20000, 1000", res.Payments, res.Accounts)
	}
	// Three payments in four go to one of 8 regular payees of the payer:
	// at most 8,000 + 5,000 distinct pairs of 1,000 accounts.
	if res.DistinctPairs < 4000 || res.DistinctPairs > 13000 || res.EventsPerPair <= 1 {
		t.Errorf("distinct pairs %d, %.2f payments per pair", res.DistinctPairs, res.EventsPerPair)
	}
	for name, o := range map[string]servebench.EventsServe{"replace": res.Replace, "accumulate": res.Accumulate, "accumulate_props": res.Props} {
		if o.CPUNsPerEvent <= 0 || o.EventsPerSec <= 0 || o.StoreBytesPerEdge <= 0 || o.CPUOverReplace <= 0 || o.StoreBytesOverRepl <= 0 {
			t.Errorf("%s: %+v, want every figure positive", name, o)
		}
	}
	if !strings.Contains(res.Mappings[1], "types=payment:accumulate") || !strings.Contains(res.Mappings[2], "event_id=/event_id") {
		t.Errorf("mappings %q", res.Mappings)
	}
}
