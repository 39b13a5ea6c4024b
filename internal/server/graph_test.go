package server_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/graphid"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/inspect"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
	"github.com/graphtide/graphtide/internal/writes"
)

var deriveAll = server.DeriveNames{Group: true, Writes: true, Alerts: true, DeadLetters: true}

// A new store takes the graph of its topics and the names that default
// from it; once it recorded the graph it keeps it whatever --topics says
// later, and refuses to be started as another.
func TestStoreKeepsItsGraph(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{Dir: dir, Topics: []string{"payments"}, Derive: deriveAll}
	srv, stop := writestest.Serve(t, cfg)
	want := server.Names{Graph: "payments", Group: "graphtide.payments", WritesTopic: "graphtide.payments.writes",
		AlertTopic: "graphtide.payments.alerts", DeadLetter: "graphtide.payments.dead-letters"}
	if got := srv.Names(); got != want {
		t.Fatalf("names %+v, want %+v", got, want)
	}
	// A write records a position, and with it the graph.
	c, err := api.NewClient("http://"+srv.HTTPAddr(), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PostBatch(context.Background(), &writes.Request{Ops: []byte(`[{"src":1,"dst":2}]`)}); err != nil {
		t.Fatal(err)
	}
	stop()
	rec := recorded(t, dir)
	if rec.Graph != "payments" {
		t.Fatalf("the store recorded graph %q", rec.Graph)
	}
	var out bytes.Buffer
	if err := inspect.Run(dir, false, false, &out); err != nil || !strings.Contains(out.String(), "\ngraph: payments\n") {
		t.Fatalf("inspect: %v\n%s", err, out.String())
	}
	// More topics later: the graph, and its names, stay.
	cfg.Topics = []string{"payments", "refunds"}
	srv, stop = writestest.Serve(t, cfg)
	if got := srv.Names(); got != want {
		t.Fatalf("with another topic: names %+v, want %+v", got, want)
	}
	stop()
	// Started as another graph: refused, naming both.
	cfg.Graph = "ledger"
	plan, err := budget.Divide(512<<20, budget.Explicit{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Plan = plan
	_, err = server.Open(context.Background(), withDefaults(cfg))
	var gm *ingest.GraphMismatchError
	if !errors.As(err, &gm) || gm.Recorded != "payments" || gm.Given != "ledger" {
		t.Fatalf("started as another graph: %v", err)
	}
	// The error names the directory and both ways out.
	for _, w := range []string{"the store in " + cfg.Dir, "leave --graph out", "another --dir"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the graph mismatch error lacks %q: %v", w, err)
		}
	}
}

// withDefaults fills what writestest.Serve would.
func withDefaults(cfg server.Config) server.Config {
	cfg.FlushInterval = 50 * time.Millisecond
	cfg.Reset = "earliest"
	cfg.WritesRetention = time.Hour
	cfg.HTTP.DisableListening = true
	return cfg
}

// recorded is the source position the store in dir recorded.
func recorded(t *testing.T, dir string) ingest.Recorded {
	t.Helper()
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	raw, err := d.Store.SourcePosition()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ingest.DecodeRecorded(raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A store whose position was recorded before graphs had names keeps the
// names every graph shared then.
func TestStoreWithoutAGraphKeepsTheOldNames(t *testing.T) {
	dir := t.TempDir()
	st, err := engine.Open(datadir.StorePath(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b engine.Batch
	b.Insert(1, 2)
	old := ingest.Recorded{Position: ingest.Position{"edges": {0: 1}}} // version 2: no graph
	b.SetSourcePosition(old.Encode())
	if _, err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	srv, stop := writestest.Serve(t, server.Config{Dir: dir, Topics: []string{"edges"}, Derive: deriveAll})
	d := graphid.Defaults("")
	want := server.Names{Group: d.Group, WritesTopic: d.Writes, AlertTopic: d.Alerts, DeadLetter: d.DeadLetters}
	if got := srv.Names(); got != want {
		t.Fatalf("names %+v, want the old ones %+v", got, want)
	}
	stop()
}

// Two graphs on one cluster: with the default names each has its own
// writes topic; given one writes topic by mistake, each skips the other's
// batches (counted), and neither graph holds the other's edge.
func TestGraphsDoNotMix(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "payments", "edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := kafkaconn.Options{Brokers: c.ListenAddrs()}
	pay, _ := writestest.Serve(t, server.Config{Kafka: brokers, Topics: []string{"payments"}, Derive: deriveAll})
	edges, _ := writestest.Serve(t, server.Config{Kafka: brokers, Topics: []string{"edges"}, Derive: deriveAll})
	if pay.Names().WritesTopic == edges.Names().WritesTopic || pay.Names().AlertTopic == edges.Names().AlertTopic ||
		pay.Names().Group == edges.Names().Group || pay.Names().DeadLetter == edges.Names().DeadLetter {
		t.Fatalf("two graphs share names: %+v and %+v", pay.Names(), edges.Names())
	}
	// A third graph given the payments graph's writes topic.
	shared := server.Config{Kafka: brokers, Topics: []string{"edges"}, Graph: "mistake", Derive: deriveAll}
	shared.Derive.Writes = false
	shared.WritesTopic = pay.Names().WritesTopic
	mistake, _ := writestest.Serve(t, shared)
	cl, err := api.NewClient("http://"+pay.HTTPAddr(), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.PostBatch(context.Background(), &writes.Request{Ops: []byte(`[{"src":124414,"dst":77}]`)})
	if err != nil || !res.Applied {
		t.Fatalf("the payments graph's write: %+v, %v", res, err)
	}
	skipped := func() float64 {
		return testutil.ToFloat64(mistake.Metrics().Ingest.Writes.WithLabelValues("other_graph"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for skipped() < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := skipped(); n != 1 {
		t.Fatalf("the third graph skipped %v records of the payments graph's, want 1", n)
	}
	if applied := testutil.ToFloat64(mistake.Metrics().Ingest.Writes.WithLabelValues("applied")); applied != 0 {
		t.Fatalf("the third graph applied %v of the payments graph's writes", applied)
	}
	for name, srv := range map[string]*server.Server{"edges": edges, "mistake": mistake} {
		if got := graphOf(t, srv); len(got) != 0 {
			t.Errorf("graph %s holds %v", name, got)
		}
	}
	if got := graphOf(t, pay); len(got) != 1 {
		t.Errorf("the payments graph holds %v", got)
	}
}
