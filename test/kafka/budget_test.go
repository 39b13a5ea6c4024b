package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/bench/servebench"
	"github.com/graphtide/graphtide/internal/budget"
)

// TestServeStaysWithinItsBudget runs graphtide serve with the smallest
// memory budget, a BFS, components and a fraud monitor with a low
// threshold, on a Kronecker stream with hubs and deletes from the real
// broker (large enough to fill the MemGraphs of a store with in-edges, the
// default, several times over), and checks that its anonymous memory never exceeded the budget
// (sampled from /proc; file-backed pages are page cache, reported by the
// benchmark) and that every component's memory is exported.
func TestServeStaysWithinItsBudget(t *testing.T) {
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := servebench.Run(ctx, servebench.Config{Binary: bin, Brokers: addrs, Scale: 16, EdgeFactor: 16,
		Deletes: 0.05, Seed: 3, Budget: "256MiB", Dir: t.TempDir(), Log: testWriter{t},
		Analytics: []string{"type=bfs,root={hub}", "type=wcc", "type=fraud,max_cycle=4,threshold=5"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events: peak anonymous %s, peak resident %s (file-backed %s), budget %s; by component %v",
		res.Events, budget.Format(res.PeakAnon), budget.Format(res.PeakRSS), budget.Format(res.PeakFile),
		budget.Format(res.Budget), res.MemoryByComponent)
	if res.PeakAnon == 0 || !res.WithinBudget {
		t.Errorf("peak anonymous memory %s, budget %s", budget.Format(res.PeakAnon), budget.Format(res.Budget))
	}
	for _, c := range []string{"memgraphs", "edge_log", "kafka_fetch", "alerts", "go_runtime"} {
		if _, ok := res.MemoryByComponent[c]; !ok {
			t.Errorf("graphtide_memory_bytes has no component %q: %v", c, res.MemoryByComponent)
		}
	}
	if res.BudgetByComponent["total"] != res.Budget {
		t.Errorf("graphtide_memory_budget_bytes total %d, want %d", res.BudgetByComponent["total"], res.Budget)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}
