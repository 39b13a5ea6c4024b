package server

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestNoShutdownCheckpointBeforeTheReplay: serve is restarted from a
// checkpoint older than its store (as after a SIGKILL between a flush and
// the next checkpoint) and stopped at once, mostly before it has replayed
// anything. Its shutdown must not checkpoint the restored bfs at the
// store's position: bfs has not seen the records after its checkpoint,
// and the next start would take it as current (it then served wrong
// levels for good). The next start replays, and bfs equals the reference
// on the oracle of everything produced, also when restored after it.
func TestNoShutdownCheckpointBeforeTheReplay(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.CheckpointInterval = time.Hour // only the stops checkpoint
	cfg.Analytics = []analytics.Spec{{Type: "bfs", Root: "0"}}
	cfg.HTTP = HTTPConfig{DisableListening: true}
	oracle := testref.Edges{}
	ckpt := datadir.CheckpointPath(dir)
	// serve opens a server and runs it until ctx ends: with a live ctx it
	// produces recs, waits until bfs has the oracle's levels, and stops
	// it; with one already cancelled it stops before it ingests.
	serve := func(ctx context.Context, recs []*kgo.Record) *Server {
		t.Helper()
		srv, err := Open(context.Background(), cfg) // (restoring asks the brokers)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		if ctx.Err() == nil {
			if len(recs) > 0 {
				prod, err := kgo.NewClient(kgo.SeedBrokers(srv.Brokers()...))
				if err != nil {
					t.Fatal(err)
				}
				if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				prod.Close()
			}
			deadline := time.Now().Add(20 * time.Second)
			for bad := bfsDiff(srv, oracle); bad != ""; bad = bfsDiff(srv, oracle) {
				if time.Now().After(deadline) {
					t.Fatalf("bfs never reached the oracle's levels: %s", bad)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return srv
	}
	rec := func(op decode.Op, s, d uint64) *kgo.Record {
		return &kgo.Record{Topic: "edges", Value: decode.AppendBinary(nil, decode.Edge{Op: op, Src: s, Dst: d, Weight: 1})}
	}
	// 1. A chain 0 -> 1 -> ... -> 40 and shortcuts; checkpointed at the stop.
	var recs []*kgo.Record
	for v := uint64(0); v < 40; v++ {
		recs = append(recs, rec(decode.OpUpsert, v, v+1))
		oracle[[2]uint64{v, v + 1}] = 1
		if v%5 == 0 {
			recs = append(recs, rec(decode.OpUpsert, v, v+5))
			oracle[[2]uint64{v, v + 5}] = 1
		}
	}
	serve(context.Background(), recs)
	// Each cycle: 2. a change that moves levels (the shortcuts deleted,
	// then chain edges cut and added back), after which the checkpoint of
	// the stop is lost, as with a SIGKILL after the flush; 3. serve
	// restored from the checkpoint before it and stopped at once: before
	// it replays anything (most runs) no checkpoint may be written, after
	// part of the replay one at that part's position; 4. the next start
	// replays what is left, and bfs reaches the reference's levels (serve
	// waits for them; a checkpoint of 3 that took the restored bfs as
	// current would keep it at the earlier levels). Several cycles, since
	// a stop in 3 comes before any replay only in most runs.
	type change struct {
		op   decode.Op
		s, d uint64
	}
	cycles := [][]change{nil, {{decode.OpDeleteEdge, 12, 13}}, {{decode.OpUpsert, 12, 13}}, {{decode.OpDeleteEdge, 30, 31}}}
	for v := uint64(0); v < 40; v += 5 {
		cycles[0] = append(cycles[0], change{decode.OpDeleteEdge, v, v + 5})
	}
	for c, cs := range cycles {
		before, err := os.ReadFile(ckpt)
		if err != nil {
			t.Fatalf("cycle %d: no checkpoint: %v", c, err)
		}
		recs = recs[:0]
		for _, x := range cs {
			recs = append(recs, rec(x.op, x.s, x.d))
			if x.op == decode.OpDeleteEdge {
				delete(oracle, [2]uint64{x.s, x.d})
			} else {
				oracle[[2]uint64{x.s, x.d}] = 1
			}
		}
		serve(context.Background(), recs)
		if err := os.WriteFile(ckpt, before, 0o644); err != nil {
			t.Fatal(err)
		}
		stopped, cancel := context.WithCancel(context.Background())
		cancel()
		serve(stopped, nil)
		serve(context.Background(), nil)
	}
	srv, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if bad := bfsDiff(srv, oracle); bad != "" {
		t.Fatalf("restored after the replay: %s", bad)
	}
}

// bfsDiff is "" when srv's bfs holds the reference's level for every
// vertex of the oracle's graph (from root 0), else the first difference.
func bfsDiff(srv *Server, oracle testref.Edges) string {
	want := testref.BFS(oracle, 0)
	for v := range oracle.Vertices() {
		got, _, err := srv.Analytics().Vertex("bfs", v)
		if err != nil {
			return err.Error()
		}
		l, ok := want[v]
		if !ok {
			l = -1
		}
		if lv, isLevel := got.(analytics.VertexLevel); !isLevel || lv.Level != l {
			return fmt.Sprintf("vertex %d: %+v, the reference's level %d", v, got, l)
		}
	}
	return ""
}
