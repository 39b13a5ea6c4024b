package server

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestServeOtherClusterSaysWhatToDo: a store filled from one cluster (an
// embedded broker) started against another (the embedded broker's
// directory gone: a new cluster ID) is refused with an error that names
// the data directory and the ways out: the cluster it was filled from,
// another --dir, or --reset-source-position.
func TestServeOtherClusterSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	prod, err := kgo.NewClient(kgo.SeedBrokers(srv.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	rec := &kgo.Record{Topic: "edges", Value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpUpsert, Src: 1, Dst: 2, Weight: 1})}
	if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	// Wait until the edge's offset is recorded with a flush.
	deadline := time.Now().Add(30 * time.Second)
	for {
		raw, err := srv.Store().SourcePosition()
		if err != nil {
			t.Fatal(err)
		}
		if rec, err := ingest.DecodeRecorded(raw); err == nil && len(rec.Position) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve recorded no position")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(datadir.EmbeddedBrokerPath(dir)); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	srv, err = Open(ctx2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Run(ctx2)
	var mm *ingest.SourceMismatchError
	if !errors.As(err, &mm) || !mm.OtherCluster() || mm.Dir != dir {
		t.Fatalf("Run on another cluster: %v, want a *SourceMismatchError of another cluster naming %s", err, dir)
	}
	for _, w := range []string{"the store in " + dir, "point --brokers at the cluster", "another --dir", "--reset-source-position"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q: %v", w, err)
		}
	}
}
