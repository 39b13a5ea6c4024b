package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// testConfig is a server's configuration for the tests: the smallest
// memory budget, binary records of topic "edges" in group "g" (the
// embedded broker), quick flushes.
func testConfig(t *testing.T, dir string) Config {
	t.Helper()
	plan, err := budget.Divide(budget.MinBudget, budget.Explicit{})
	if err != nil {
		t.Fatal(err)
	}
	return Config{Dir: dir, Plan: plan, Topics: []string{"edges"}, Group: "g", Format: decode.FormatBinary,
		DeadLetterTopic: "dlq", DeadLetterTimeout: 10 * time.Second, ReadyGrace: 30 * time.Second,
		FlushInterval: 50 * time.Millisecond, Reset: "earliest"}
}

// TestServerIngestsAndStopsDurably: a server with its embedded broker
// ingests what is produced to it, its store then holds exactly those
// edges (a map oracle), and after Run returns everything is flushed: the
// directory reopens with the same graph. Half the vertices have sparse
// 64-bit ids: the store holds them mapped to dense ids of the key band,
// which read back as the numbers sent, before and after the restart.
// Its wcc and bfs are checkpointed while it runs idle and at the stop, and
// restored, unchanged, by the restart.
func TestServerIngestsAndStopsDurably(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.CheckpointInterval = 300 * time.Millisecond
	cfg.HistoryRetention = time.Hour // the time index is kept while serve runs
	// "late": a root no edge has named yet (it gets its key id now).
	cfg.Analytics = []analytics.Spec{{Type: "wcc"}, {Type: "bfs", Root: "0"}, {Name: "late", Type: "bfs", Root: "key:no-edge-yet"}}
	cfg.HTTP = HTTPConfig{Addr: "127.0.0.1:0", RequestTimeout: time.Second, PathBudget: 1000}
	plan := cfg.Plan
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if srv.HTTPAddr() == "" || len(srv.Brokers()) == 0 {
		t.Fatalf("http %q, brokers %v", srv.HTTPAddr(), srv.Brokers())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	want := testref.Edges{}
	var recs []*kgo.Record
	sparse := func(v uint64) uint64 {
		if v%2 == 1 {
			return (v*0x9E3779B97F4A7C15)%(keydict.KeyBase-keydict.MapFrom) + keydict.MapFrom
		}
		return v
	}
	for _, e := range (gen.RMAT{Scale: 8, EdgeFactor: 4, Seed: 3}).Generate() {
		src, dst := sparse(e.Src), sparse(e.Dst)
		recs = append(recs, &kgo.Record{Topic: "edges", Value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpUpsert, Src: src, Dst: dst, Weight: 1})})
		want[[2]uint64{src, dst}] = 1
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(srv.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// edgesOf reads the store's edges with the ids as sent.
	edgesOf := func(srv *Server) testref.Edges {
		dict := srv.Keys()
		v, err := srv.Views().Static(views.StaticOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		got := testref.Edges{}
		if err := v.Each(engine.Out, true, func(u uint64, nb []uint64, ws []float64) {
			for i, w := range nb {
				for _, x := range []uint64{u, w} {
					if x >= keydict.MapFrom && !keydict.IsKeyID(x) {
						t.Fatalf("the store holds the number %d as it is", x)
					}
				}
				got[[2]uint64{dict.SourceID(u), dict.SourceID(w)}] = ws[i]
			}
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(edgesOf(srv)) != len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("ingested %d of %d edges", len(edgesOf(srv)), len(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// summaries waits until the analytics reflect the whole store.
	summaries := func(srv *Server) string {
		sm, err := srv.Store().Metrics()
		if err != nil {
			t.Fatal(err)
		}
		var out []analytics.Result
		for _, name := range []string{"wcc", "bfs"} {
			var res analytics.Result
			for res, _ = srv.Analytics().Result(name); !res.Ready || res.Seq != sm.LastSeq; res, _ = srv.Analytics().Result(name) {
				if time.Now().After(deadline) {
					t.Fatalf("%s at seq %d (ready %v), the store at %d", name, res.Seq, res.Ready, sm.LastSeq)
				}
				time.Sleep(10 * time.Millisecond)
			}
			out = append(out, res)
		}
		b, err := json.Marshal([]any{out[0].Summary, out[1].Summary})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := summaries(srv)
	// Idle now: a timed flush checkpoints what was applied since.
	for _, err := os.Stat(datadir.CheckpointPath(dir)); err != nil; _, err = os.Stat(datadir.CheckpointPath(dir)) {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint while serve ran idle: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(datadir.CheckpointPath(dir)); err != nil {
		t.Fatalf("no checkpoint after the stop: %v", err)
	}
	// The time index sampled the store while it ran, and at the stop: its
	// newest sample names a seq that ingested something.
	times, err := history.Open(filepath.Join(dir, history.FileName), ^uint64(0), true)
	if err != nil {
		t.Fatal(err)
	}
	if seq, ok := times.SeqAt(time.Now()); !ok || seq == 0 || times.Len() == 0 {
		t.Fatalf("the time index after the run: %d samples, newest seq %d (%v)", times.Len(), seq, ok)
	}
	// Closed and durable: the directory opens again, with the same graph,
	// and the analytics resume from the checkpoint.
	srv2, err := Open(context.Background(), Config{Dir: dir, Plan: plan, Topics: []string{"edges"}, Group: "g",
		Format: decode.FormatBinary, Reset: "earliest", HTTP: HTTPConfig{DisableListening: true},
		Analytics: cfg.Analytics, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatalf("reopening after Run: %v", err)
	}
	defer srv2.Close()
	if after := summaries(srv2); after != before {
		t.Fatalf("the analytics after the restart: %s, before it: %s", after, before)
	}
	for _, name := range []string{"wcc", "bfs"} {
		if res, _ := srv2.Analytics().Result(name); !res.Restored || res.Recomputes != 0 {
			t.Fatalf("%s was not restored from the checkpoint: %+v", name, res)
		}
	}
	got := edgesOf(srv2)
	if len(got) != len(want) {
		t.Fatalf("after a restart the store holds %d edges, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("edge %v: weight %v, want %v", k, got[k], w)
		}
	}
}
