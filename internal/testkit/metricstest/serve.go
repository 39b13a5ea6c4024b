// Package metricstest builds, for tests, the metrics registry of a running
// `graphtide serve`: the real server (internal/server) with its embedded
// broker, fed with real data so that every labelled vector has samples
// (NewServe), or freshly started with nothing ingested, its /metrics
// served over HTTP (NewFresh).
//
// The internal/metrics naming and first-scrape tests and the deploy/ test
// (every metric the dashboard and the alerting rules use exists) build on
// it.
package metricstest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/metrics"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Topic is the topic the fixture produces to and ingests from; WritesTopic
// is serve's writes topic, DeadLetterTopic its dead-letter topic and
// AlertTopic its alert topic;
// Analytics are the analytics it runs.
const (
	Topic           = "edges"
	WritesTopic     = "writes"
	DeadLetterTopic = "dead-letters"
	AlertTopic      = "alerts"
)

// Analytics are the fixture's analytics: "wcc" and the fan-in monitor
// "hubs".
var Analytics = []string{"type=wcc", "type=fanin,threshold=40,window_edges=5000,name=hubs"}

// Serve is a running server and its registry.
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
	// Server is the running server; its HTTPAddr serves /metrics (NewFresh
	// only).
	Server *server.Server
}

// open opens a server with the fixture's configuration, listening on a
// loopback port if listen, and a Recorder over its pedantic registry.
func open(ctx context.Context, t testing.TB, listen bool) (*server.Server, *prometheus.Registry, *metrics.Recorder) {
	t.Helper()
	var specs []analytics.Spec
	for _, s := range Analytics {
		sp, err := analytics.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := sp.Validate(); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp)
	}
	reg := prometheus.NewPedanticRegistry()
	rec := metrics.NewRecorder(reg)
	srv, err := server.Open(ctx, server.Config{
		Dir: t.TempDir(),
		// Small MemGraphs, so that flushes run; no Go memory limit.
		Plan:   budget.Plan{Total: 256 << 20, MemGraphBytes: 64 << 10, EdgeLogOps: 1 << 16},
		Topics: []string{Topic}, Group: "metricstest", Format: decode.FormatBinary, DeadLetterTopic: DeadLetterTopic, WritesTopic: WritesTopic, AlertTopic: AlertTopic,
		DeadLetterTimeout: 10 * time.Second, ReadyGrace: 30 * time.Second, FlushInterval: 50 * time.Millisecond, Reset: "earliest",
		Analytics: specs, HTTP: server.HTTPConfig{Addr: "127.0.0.1:0", DisableListening: !listen}, Registry: reg, Registerer: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv, reg, rec
}

// run runs srv until the test ends.
func run(ctx context.Context, t testing.TB, srv *server.Server, cancel context.CancelFunc) {
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
}

// NewFresh starts a server as NewServe does, serving HTTP on a loopback
// port, and returns once it is ready (every partition of its topics
// assigned, as its embedded broker creates them: Topic with 4, WritesTopic
// with 1), with nothing produced or ingested. Everything is stopped by
// t.Cleanup.
func NewFresh(t testing.TB) *Serve {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, reg, rec := open(ctx, t, true)
	run(ctx, t, srv, cancel)
	url := "http://" + srv.HTTPAddr() + "/readyz"
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("metricstest: the fresh server is not ready after 60 s (%v)", err)
		}
	}
	return &Serve{Registry: reg, Recorder: rec, Metrics: srv.Metrics(), Store: srv.Store(), Views: srv.Views(), Server: srv}
}

// NewServe starts a server (embedded broker, small MemGraphs, analytics
// "wcc" and "hubs", a fan-in monitor), produces an R-MAT stream (scale 9,
// 2048 one-edge records, 4 partitions) and a few undecodable records, and
// returns once everything is ingested and flushed, the analytics have
// caught up, and "hubs" has raised an alert. Everything is stopped by
// t.Cleanup; gather before the test ends (kprom unregisters its metrics
// when its client closes).
func NewServe(t testing.TB) *Serve {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, reg, rec := open(ctx, t, false)
	run(ctx, t, srv, cancel)

	edges := gen.RMAT{Scale: 9, EdgeFactor: 4, Seed: 5}.Generate()
	recs := make([]*kgo.Record, 0, len(edges)+3)
	for _, e := range edges {
		recs = append(recs, &kgo.Record{Topic: Topic, Value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpUpsert, Src: e.Src, Dst: e.Dst})})
	}
	const poison = 3
	for i := 0; i < poison; i++ {
		recs = append(recs, &kgo.Record{Topic: Topic, Value: []byte{9, 9, 9}})
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(srv.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	if err := prod.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	store, areg := srv.Store(), srv.Analytics()
	s := &Serve{Registry: reg, Recorder: rec, Metrics: srv.Metrics(), Store: store, Views: srv.Views(), Edges: len(edges), Poison: poison, Server: srv}
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

// Promtool returns the path of Prometheus's promtool: $GRAPHTIDE_PROMTOOL,
// else promtool on PATH (`make test` runs scripts/deps.sh, which installs
// Debian's prometheus package for it). Without it the test fails, or,
// under -short, is skipped.
func Promtool(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GRAPHTIDE_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skipf("no promtool (-short): %v", err)
		}
		t.Fatalf("no promtool: %v (scripts/deps.sh installs it: Debian's prometheus package; or set GRAPHTIDE_PROMTOOL)", err)
	}
	return p
}
