// Package metricstest builds, for tests, the metrics registry of a running
// `graphtide serve`: the same construction as cmd/graphtide/serve.go
// (metrics.NewServe over a real store and views.Manager, the ingester's
// franz-go client with the kprom hook, an analytics.Registry with the
// AnalyticsMetrics hooks attached), fed with real data through franz-go's
// in-process fake broker (kfake) so that every labelled vector has samples.
//
// The internal/metrics naming test and the deploy/ test (every metric the
// dashboard and the alerting rules use exists) both build on it.
package metricstest

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/metrics"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Topic is the topic the fixture produces to and ingests from.
const Topic = "edges"

// Serve is a running ingest pipeline and its registry.
type Serve struct {
	// Registry is what /metrics serves (a pedantic registry: it also
	// checks that every collector describes what it collects).
	Registry *prometheus.Registry
	// Recorder wraps Registry and saw every registration, kprom's
	// (registered when the ingester's client was created) included.
	Recorder *metrics.Recorder
	Metrics  *metrics.Serve
	Store    *engine.Store
	Views    *views.Manager
	// Edges and Poison are how many edge records and undecodable records
	// were produced and ingested.
	Edges, Poison int
}

// NewServe starts the pipeline, produces an R-MAT stream (scale 9, 2048
// one-edge records, 4 partitions) and a few undecodable records, and
// returns once everything is ingested and flushed, the analytics "wcc"
// and "hubs" (a fan-in monitor) have caught up, and "hubs" has raised an
// alert. Everything is stopped by t.Cleanup; gather before the test ends
// (kprom unregisters its metrics when its client closes).
func NewServe(t testing.TB) *Serve {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, Topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()

	edges := gen.RMAT{Scale: 9, EdgeFactor: 4, Seed: 5}.Generate()
	recs := make([]*kgo.Record, 0, len(edges)+3)
	for _, e := range edges {
		recs = append(recs, &kgo.Record{Topic: Topic, Value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpUpsert, Src: e.Src, Dst: e.Dst})})
	}
	const poison = 3
	for i := 0; i < poison; i++ {
		recs = append(recs, &kgo.Record{Topic: Topic, Value: []byte{9, 9, 9}})
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	if err := prod.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// As runServe: store, key dictionary, views manager, registry, NewServe,
	// the kprom hook on the ingester's client, the analytics registry
	// with the metrics' hooks, attached.
	dir := t.TempDir()
	store, err := engine.Open(filepath.Join(dir, "store"), &engine.Options{MemGraphBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	dict, err := keydict.Open(filepath.Join(dir, "keys.dict"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dict.Close() })
	vm, err := views.NewManager(store, views.Config{LogCapacity: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)

	reg := prometheus.NewPedanticRegistry()
	rec := metrics.NewRecorder(reg)
	sm := metrics.NewServe(rec, store, vm)

	areg := analytics.NewRegistry(vm, analytics.RegistryConfig{Hooks: sm.Analytics.Hooks(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(areg.Close)
	sm.Analytics.Attach(areg)
	for _, s := range []string{"type=wcc", "type=fanin,threshold=40,window_edges=5000,name=hubs"} {
		sp, err := analytics.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := areg.Register(sp); err != nil {
			t.Fatal(err)
		}
	}

	in, err := ingest.New(store, dict, ingest.Config{
		Brokers: brokers, Topics: []string{Topic}, Group: "metricstest", FlushInterval: 50 * time.Millisecond,
		ClientOpts: []kgo.Opt{kgo.WithHooks(sm.Kafka)}, Metrics: sm.Ingest,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ingester: %v", err)
		}
	})

	s := &Serve{Registry: reg, Recorder: rec, Metrics: sm, Store: store, Views: vm, Edges: len(edges), Poison: poison}
	want := map[string]float64{
		"graphtide_ingest_edges_total":        float64(len(edges)),
		"graphtide_ingest_dead_letters_total": poison,
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		missing := ""
		for name, v := range want {
			if got := Sum(mfs, name); got != v {
				missing = fmt.Sprintf("%s = %v, want %v", name, got, v)
			}
		}
		sm, err := store.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if missing == "" && sm.DurableSeq != sm.LastSeq {
			missing = "a flush covering every batch"
		}
		for _, r := range areg.Results() {
			if missing == "" && (!r.Ready || r.Seq != sm.LastSeq) {
				missing = fmt.Sprintf("analytic %s to catch up", r.Spec.Name)
			}
		}
		if missing == "" && Sum(mfs, "graphtide_analytics_alerts_total") == 0 {
			missing = "an alert from hubs"
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("metricstest: timed out waiting for %s", missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Sum adds every sample of the counter, gauge or untyped family name in
// mfs (0 when absent).
func Sum(mfs []*dto.MetricFamily, name string) float64 {
	var v float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return v
}
