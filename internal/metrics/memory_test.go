package metrics

import (
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// TestMemoryCollector: the plan's parts and what each component holds, by
// component, each from its own source.
func TestMemoryCollector(t *testing.T) {
	if got := unsafe.Sizeof(views.Edge{}); got != budget.EdgeBytes {
		t.Fatalf("views.Edge takes %d bytes, the budget counts %d", got, budget.EdgeBytes)
	}
	if budget.EdgeLogBytes != budget.EdgeBytes+views.PayloadBytesPerOp {
		t.Fatalf("the budget counts %d bytes per edge log operation, the log holds %d and %d of payload", budget.EdgeLogBytes, budget.EdgeBytes, views.PayloadBytesPerOp)
	}
	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vm, err := views.NewManager(s, views.Config{LogCapacity: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	var b engine.Batch
	for i := uint64(0); i < 500; i++ {
		b.Insert(i, i+1)
	}
	// Applied and flushed (the flushed MemGraph's memory is pooled for the
	// next), then one edge more.
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	var one engine.Batch
	one.Insert(1, 3)
	if _, err := s.Apply(&one); err != nil {
		t.Fatal(err)
	}
	// The flush thread drops the flushed MemGraph (giving its memory to
	// the pool) just after Flush returns; from then on nothing takes from
	// the pool, so it only grows while the collector reads it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if m, _ := s.Metrics(); m.MemGraphPoolBytes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flushed MemGraph's memory never reached the pool")
		}
	}
	before, _ := s.Metrics()
	plan, err := budget.Divide(budget.DefaultBudget, budget.Explicit{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewMemoryCollector(MemorySources{Plan: plan, Store: s, Views: vm,
		Analytics: func() int64 { return 12345 }, KafkaFetch: func() int64 { return 678 }, Keys: func() int64 { return 910 },
		WritesLog: func() int64 { return 1112 }}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	for _, mf := range mfs {
		got[mf.GetName()] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			got[mf.GetName()][m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	for name, v := range plan.Parts() {
		if got["graphtide_memory_budget_bytes"][name] != float64(v) {
			t.Errorf("budget of %s: %v, plan says %d", name, got["graphtide_memory_budget_bytes"][name], v)
		}
	}
	after, _ := s.Metrics()
	used := got["graphtide_memory_bytes"]
	if lo, hi := before.MemGraphBytes+before.MemGraphPoolBytes, after.MemGraphBytes+after.MemGraphPoolBytes; used["memgraphs"] < float64(lo) || used["memgraphs"] > float64(hi) || before.MemGraphBytes == 0 {
		t.Errorf("memgraphs %v, the store says %d held and %d pooled before, %d and %d after", used["memgraphs"],
			before.MemGraphBytes, before.MemGraphPoolBytes, after.MemGraphBytes, after.MemGraphPoolBytes)
	}
	if used["edge_log"] != 1000*budget.EdgeBytes || used["analytics"] != 12345 || used["kafka_fetch"] != 678 || used["key_dictionary"] != 910 || used["writes_log"] != 1112 ||
		used["go_runtime"] <= 0 {
		t.Errorf("memory by component: %v", used)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
