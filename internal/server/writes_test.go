package server_test

import (
	"context"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/writes"
)

// graphOf reads the store's type-0 out-edges.
func graphOf(t *testing.T, srv *server.Server) map[writestest.Edge]float64 {
	t.Helper()
	v, err := srv.Views().Static(views.StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	got := map[writestest.Edge]float64{}
	if err := v.Each(engine.Out, true, func(u uint64, nb []uint64, ws []float64) {
		for i, w := range nb {
			got[writestest.Edge{Src: u, Dst: w}] = ws[i]
		}
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func sameGraph(t *testing.T, got, want map[writestest.Edge]float64) {
	t.Helper()
	for e, w := range want {
		if g, ok := got[e]; !ok || g != w {
			t.Errorf("edge %v: store %v (%v), oracle %v", e, g, ok, w)
		}
	}
	for e := range got {
		if _, ok := want[e]; !ok {
			t.Errorf("edge %v is in the store, not in the oracle", e)
		}
	}
}

// TestWritesAreSerializableAndApplyOnce: clients race each other with
// conditional batches on a few vertices through POST /v1/batches, retry
// some with their idempotency keys and reuse some keys with other
// batches. The writes topic, replayed serially on a map (the oracle),
// must give every answer (each key's first outcome, the failed condition,
// one non-duplicate answer per key) and the store's graph; and after a
// restart, retries get the same answers and change nothing.
func TestWritesAreSerializableAndApplyOnce(t *testing.T) {
	dir := t.TempDir()
	run := func() (*server.Server, func(), *api.Client) {
		srv, stop := writestest.Serve(t, server.Config{Dir: dir})
		c, err := api.NewClient("http://"+srv.HTTPAddr(), api.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return srv, stop, c
	}
	srv, stopServe, c := run()
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	answers, unanswered := writestest.RunClients(ctx, c, 4, 60, 8, 1)
	if unanswered > 0 || ctx.Err() != nil {
		t.Fatalf("%d sends got no answer (%v)", unanswered, ctx.Err())
	}
	recs, err := writestest.ReadTopic(ctx, srv.Brokers(), "writes")
	if err != nil {
		t.Fatal(err)
	}
	oracle, err := writestest.Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	applied, refused, dups := 0, 0, 0
	for _, a := range answers {
		switch {
		case a.Resp.Duplicate:
			dups++
		case a.Status == 200:
			applied++
		case a.Status == 409:
			refused++
		}
	}
	t.Logf("%d answers: %d applied, %d refused, %d duplicates; %d records", len(answers), applied, refused, dups, len(recs))
	if applied < 20 || refused < 20 || dups < 10 {
		t.Fatalf("%d applied, %d refused, %d duplicates: the test exercises too little", applied, refused, dups)
	}
	for _, p := range writestest.Check(oracle, answers) {
		t.Error(p)
	}
	sameGraph(t, graphOf(t, srv), oracle.Graph)
	// The metrics count the outcomes.
	wantCount := map[string]int{}
	for _, o := range oracle.ByOffset {
		if o.Applied {
			wantCount["applied"]++
		} else {
			wantCount["refused"]++
		}
	}
	for _, a := range answers {
		if a.Reused {
			wantCount["reused"]++
		}
	}
	wantCount["duplicate"] = len(recs) - len(oracle.ByOffset) - wantCount["reused"]
	for o, n := range wantCount {
		if got := testutil.ToFloat64(srv.Metrics().Ingest.Writes.WithLabelValues(o)); int(got) != n {
			t.Errorf("graphtide_writes_total{outcome=%q} = %v, want %d", o, got, n)
		}
	}
	stopServe()

	// A restart: the outcomes are remembered; retries apply nothing.
	srv, _, c = run()
	var again []writestest.Answer
	for _, a := range answers[:40] {
		if a.Reused {
			continue
		}
		// Rebuild the first request of the key from the topic.
		for _, r := range recs {
			if r.Key != a.Key || r.Offset != oracle.ByKey[a.Key].Offset {
				continue
			}
			req, err := writestest.RequestOf(r)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.PostBatch(ctx, req)
			status := 200
			if err != nil {
				t.Fatalf("retry of %s after the restart: %v", a.Key, err)
			}
			if !resp.Applied {
				status = 409
			}
			if !resp.Duplicate {
				t.Errorf("retry of %s after the restart: not a duplicate: %+v", a.Key, resp)
			}
			again = append(again, writestest.Answer{Key: a.Key, Status: status, Resp: resp})
		}
	}
	for _, p := range writestest.Check(oracle, again) {
		t.Error("after the restart: " + p)
	}
	sameGraph(t, graphOf(t, srv), oracle.Graph)
	// An unconditional batch without a key still applies, after the rest.
	resp, err := c.PostBatch(ctx, &writes.Request{Ops: []byte(`[{"src":100,"dst":101,"weight":3}]`)})
	if err != nil || !resp.Applied || resp.Duplicate {
		t.Fatalf("a plain batch: %+v, %v", resp, err)
	}
	if g := graphOf(t, srv); g[writestest.Edge{Src: 100, Dst: 101}] != 3 {
		t.Fatal("a plain batch is not visible when its answer comes")
	}
}

// TestRestartAfterPlainWritesOnly: a store whose writes topic saw only
// plain batches (no entry in writes.log) starts again: the log's file is
// there from the first start, marking that it goes with the store.
func TestRestartAfterPlainWritesOnly(t *testing.T) {
	dir := t.TempDir()
	srv, stop := writestest.Serve(t, server.Config{Dir: dir})
	c, err := api.NewClient("http://"+srv.HTTPAddr(), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.PostBatch(context.Background(), &writes.Request{Ops: []byte(`[{"src":1,"dst":2}]`)}); err != nil || !r.Applied {
		t.Fatalf("a plain batch: %+v, %v", r, err)
	}
	if err := srv.Store().Flush(); err != nil { // the position names the writes topic
		t.Fatal(err)
	}
	stop()
	srv, _ = writestest.Serve(t, server.Config{Dir: dir})
	if g := graphOf(t, srv); g[writestest.Edge{Src: 1, Dst: 2}] != 1 || len(g) != 1 {
		t.Fatalf("after the restart: %v", g)
	}
}
