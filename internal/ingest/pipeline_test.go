package ingest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

func pos(next int64) Position {
	p := Position{}
	p.Set("edges", 0, next)
	return p
}

// TestApplierStopsAtFirstFailure: once a batch fails, no later batch is
// applied and no later flush starts, so the applied position never skips
// the failed batch's records. A flush started after a good batch covers
// exactly up to its sequence number and records its position.
func TestApplierStopsAtFirstFailure(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges"}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.cl.Close()
	p := startApplier(liveEnv{in})
	defer p.stop()

	job := func(next int64, src, dst uint64, flush bool) *applyJob {
		j := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		j.reset()
		j.add(decode.Edge{Op: decode.OpUpsert, Src: src, Dst: dst})
		j.records, j.pos, j.flush = 1, pos(next), flush
		j.stamps = append(j.stamps, time.Now())
		j.batch.SetSourcePosition(j.pos.Encode())
		p.jobs <- j
		return j
	}
	// A good batch with a flush after it.
	j := job(1, 1, 2, true)
	if got := <-p.done; got != j || got.err != nil || !got.flushed || got.seq == 0 || got.flushTarget != got.seq {
		t.Fatalf("first job: err %v, seq %d, flushed %v up to %d", got.err, got.seq, got.flushed, got.flushTarget)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	raw, err := s.SourcePosition()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodePosition(raw); err != nil || !reflect.DeepEqual(got, pos(1)) {
		t.Fatalf("the store recorded position %v (%v), want %v", got, err, pos(1))
	}
	p.free = append(p.free, j)

	// A batch the store rejects (vertex id out of range), then a good one.
	bad := job(2, engine.MaxVertex+1, 0, false)
	after := job(3, 3, 4, true)
	if got := <-p.done; got != bad || got.err == nil {
		t.Fatalf("bad job: err %v", got.err)
	}
	if got := <-p.done; got != after || !errors.Is(got.err, bad.err) || got.flushed || got.seq != 0 {
		t.Fatalf("job after the failure: err %v (want %v), seq %d, flushed %v", got.err, bad.err, got.seq, got.flushed)
	}
	if got := in.Applied(); !reflect.DeepEqual(got, pos(1)) {
		t.Fatalf("applied %v, want %v", got, pos(1))
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	for _, e := range [][2]uint64{{1, 2}, {3, 4}} {
		ns, _, err := sn.Neighbors(e[0], engine.Out, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if has := len(ns) == 1 && ns[0] == e[1]; has != (e[0] == 1) {
			t.Errorf("edge %v in the store: %v", e, has)
		}
	}
}

// TestRebalanceHandoffExactlyOnce runs ingesters of one group on separate
// stores while records keep arriving: a second and a third member join
// mid-stream and take partitions from the others, then the first leaves.
// A member flushes and commits when partitions are revoked and when it
// stops, and a member that gets a partition starts at the committed
// offset, so every record must be in exactly one store. A batch of a
// revoked partition applied after the revoke (the poll loop allowing the
// rebalance with batches in flight) would put its records in two.
//
// Separate stores in one group split the graph: without
// ResetSourcePosition the members would pause (test/kafka's
// TestSplitGroupPauses); with it they ingest what they are assigned, as
// here.
func TestRebalanceHandoffExactlyOnce(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "edges"))
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
	// Record i carries edge (i, i+1); producing goes on until stop.
	stop := make(chan struct{})
	produced := make(chan int, 1)
	go func() {
		i := 0
		for ; ; i += 500 {
			select {
			case <-stop:
				produced <- i
				return
			default:
			}
			var recs []*kgo.Record
			for k := i; k < i+500; k++ {
				e := decode.Edge{Op: decode.OpUpsert, Src: uint64(k), Dst: uint64(k) + 1}
				recs = append(recs, &kgo.Record{Key: strconv.AppendInt(nil, int64(k), 10), Value: decode.AppendBinary(nil, e)})
			}
			if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Error(err)
				produced <- i
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()

	type member struct {
		s      *engine.Store
		in     *Ingester
		cancel context.CancelFunc
		done   chan error
	}
	var members []*member
	defer func() {
		for _, m := range members {
			m.cancel()
			<-m.done
			m.s.Close()
		}
	}()
	start := func() *member {
		s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 256 << 10})
		if err != nil {
			t.Fatal(err)
		}
		// A slow OnVisible makes the applier the bottleneck, so that
		// batches are in flight whenever a rebalance comes; small fetches
		// make every batch hold records of several partitions.
		in, err := New(s, nil, Config{Brokers: addrs, Topics: []string{"edges"}, Group: "handoff",
			FlushInterval: 20 * time.Millisecond, MaxPollRecords: 100, ResetSourcePosition: true,
			ClientOpts: []kgo.Opt{kgo.FetchMaxPartitionBytes(2 << 10)},
			OnVisible:  func([]time.Time, time.Time) { time.Sleep(time.Millisecond) }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{s: s, in: in, cancel: cancel, done: make(chan error, 1)}
		go func() { m.done <- in.Run(ctx) }()
		members = append(members, m)
		return m
	}
	waitApplied := func(in *Ingester, n int64) {
		deadline := time.Now().Add(30 * time.Second)
		for applied(in) < n {
			if time.Now().After(deadline) {
				t.Fatalf("a member applied %d records, want %d", applied(in), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	first := start()
	waitApplied(first.in, 5000)
	waitApplied(start().in, 2000)
	third := start()
	waitApplied(third.in, 2000)
	first.cancel()
	if err := <-first.done; err != nil {
		t.Fatal(err)
	}
	first.done <- nil // for the deferred cleanup
	waitApplied(third.in, applied(third.in)+2000)
	close(stop)
	n := <-produced
	if t.Failed() {
		t.FailNow()
	}

	// Done when the group's committed offsets (committed after each
	// member's flushes) cover every record.
	adm := kadm.NewClient(prod)
	deadline := time.Now().Add(30 * time.Second)
	for {
		offs, err := adm.FetchOffsets(context.Background(), "handoff")
		var sum int64
		if err == nil {
			offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		}
		if sum == int64(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets cover %d of %d records (last error %v)", sum, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var contents []oracle
	for _, m := range members {
		m.cancel()
		if err := <-m.done; err != nil {
			t.Fatal(err)
		}
		m.done <- nil
		contents = append(contents, storeContents(t, m.s))
	}
	var sizes []int
	total := 0
	for _, g := range contents {
		sizes = append(sizes, len(g))
		total += len(g)
	}
	var twice, missing []string
	for i := uint64(0); i < uint64(n); i++ {
		in := 0
		for _, g := range contents {
			if _, ok := g[edgeKey{i, i + 1}]; ok {
				in++
			}
		}
		switch {
		case in > 1:
			twice = append(twice, fmt.Sprint(i))
		case in == 0:
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(twice) > 0 || len(missing) > 0 || total != n {
		t.Fatalf("%d records, edges per store %v: %d records in more than one store (e.g. %v), %d in none (e.g. %v)",
			n, sizes, len(twice), head(twice), len(missing), head(missing))
	}
	t.Logf("%d records, edges per store %v", n, sizes)
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// applied is the number of records below in's applied position.
func applied(in *Ingester) (sum int64) {
	for _, ps := range in.Applied() {
		for _, o := range ps {
			sum += o
		}
	}
	return sum
}

// TestDurableFollowsStoreFlushes: with no timed flush in sight, the
// MemGraphs filling up make batches durable by themselves; the ingester
// notices from the store's durable seq, reports as durable exactly the
// position the store recorded, and commits it for lag tools.
func TestDurableFollowsStoreFlushes(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addrs := c.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 20000
	var recs []*kgo.Record
	for i := range n {
		e := decode.Edge{Op: decode.OpUpsert, Src: uint64(i), Dst: uint64(i) + 1}
		recs = append(recs, &kgo.Record{Key: strconv.AppendInt(nil, int64(i), 10), Value: decode.AppendBinary(nil, e)})
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := New(s, nil, Config{Brokers: addrs, Topics: []string{"edges"}, Group: "durable",
		FlushInterval: time.Hour, MaxPollRecords: 500})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	recorded := func() Position {
		raw, err := s.SourcePosition()
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodePosition(raw)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Everything applied, and no store flush for a while: the store's
	// recorded position is final (no timed flush for an hour).
	deadline := time.Now().Add(20 * time.Second)
	last, lastChange := recorded(), time.Now()
	for applied(in) < n || time.Since(lastChange) < 300*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("applied %d of %d records; the store recorded %v", applied(in), n, last)
		}
		time.Sleep(10 * time.Millisecond)
		if r := recorded(); !reflect.DeepEqual(r, last) {
			last, lastChange = r, time.Now()
		}
	}
	adm := kadm.NewClient(prod)
	deadline = time.Now().Add(2 * time.Second)
	for {
		durable := in.Durable()
		var committed, sum int64
		if offs, err := adm.FetchOffsets(context.Background(), "durable"); err == nil {
			offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
		}
		for _, ps := range durable {
			for _, o := range ps {
				sum += o
			}
		}
		if sum > 0 && reflect.DeepEqual(durable, last) && committed == sum {
			if sum >= n {
				t.Fatalf("everything durable without a timed or final flush: %v", durable)
			}
			t.Logf("durable %d of %d records, committed %d", sum, n, committed)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("durable %v, the store recorded %v, committed %d", durable, last, committed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
