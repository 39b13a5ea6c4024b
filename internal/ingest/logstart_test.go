package ingest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/ownership"
)

// lostFixture is a kfake cluster with topic "edges", a producer that
// keeps an oracle per partition, and a store.
type lostFixture struct {
	t     *testing.T
	c     *kfake.Cluster
	addrs []string
	prod  *kgo.Client
	adm   *kadm.Client
	s     *engine.Store
	// recs are the edges produced to each partition, by offset.
	recs map[int32][]decode.Edge
	// owners, when above 0, is partitioned mode's partition count: each
	// edge's source vertex is one of its partition's (ownerCheck).
	owners int32
	next   uint64 // the next source vertex to try
}

func newLostFixture(t *testing.T, partitions int32) *lostFixture {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f := &lostFixture{t: t, c: c, addrs: c.ListenAddrs(), recs: map[int32][]decode.Edge{}}
	if f.prod, err = kgo.NewClient(kgo.SeedBrokers(f.addrs...), kgo.DefaultProduceTopic("edges"), kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.prod.Close)
	f.adm = kadm.NewClient(f.prod)
	if f.s, err = engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.s.Close() })
	return f
}

// produce appends n edges to partition p, each from a vertex of its own.
func (f *lostFixture) produce(p int32, n int) {
	f.t.Helper()
	var rs []*kgo.Record
	part := ownership.NewPartitioner()
	for i := 0; i < n; i++ {
		f.next++
		for f.owners > 0 && part.Of(strconv.FormatUint(f.next, 10), f.owners) != p {
			f.next++
		}
		e := decode.Edge{Op: decode.OpUpsert, Src: f.next, Dst: 7, Weight: 1, HasWeight: true}
		f.recs[p] = append(f.recs[p], e)
		rs = append(rs, &kgo.Record{Partition: p, Value: decode.AppendBinary(nil, e)})
	}
	if err := f.prod.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		f.t.Fatal(err)
	}
}

// addPartition adds a partition to the topic, and makes the producer see
// it.
func (f *lostFixture) addPartition() {
	f.t.Helper()
	if _, err := f.adm.CreatePartitions(context.Background(), 1, "edges"); err != nil {
		f.t.Fatal(err)
	}
	f.prod.Close()
	var err error
	if f.prod, err = kgo.NewClient(kgo.SeedBrokers(f.addrs...), kgo.DefaultProduceTopic("edges"), kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(f.prod.Close)
	f.adm = kadm.NewClient(f.prod)
}

// deleteBefore deletes partition p's records below off (DeleteRecords).
func (f *lostFixture) deleteBefore(p int32, off int64) {
	f.t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "edges", Partition: p, At: off, LeaderEpoch: -1})
	resp, err := f.adm.DeleteRecords(context.Background(), os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		f.t.Fatal(err)
	}
	starts, err := f.adm.ListStartOffsets(context.Background(), "edges")
	if err != nil {
		f.t.Fatal(err)
	}
	if so, _ := starts.Lookup("edges", p); so.Offset != off {
		f.t.Fatalf("after DeleteRecords edges/%d starts at %d, want %d", p, so.Offset, off)
	}
}

// oracle is the edges of each partition p of from, from offset from[p]
// on, up to offset upTo[p] when there is one.
func (f *lostFixture) oracle(from, upTo map[int32]int64) oracle {
	o := oracle{}
	for p, off := range from {
		end := int64(len(f.recs[p]))
		if u, ok := upTo[p]; ok {
			end = u
		}
		for _, e := range f.recs[p][off:end] {
			o.apply(e)
		}
	}
	return o
}

// run starts an ingester on the fixture's store; stop it with the
// returned function, which checks Run's result.
func (f *lostFixture) run(cfg Config) (*Ingester, func()) {
	f.t.Helper()
	cfg.Brokers, cfg.Topics = f.addrs, []string{"edges"}
	if cfg.Group == "" {
		cfg.Group = "g"
	}
	cfg.FlushInterval = 20 * time.Millisecond
	cfg.ClientOpts = []kgo.Opt{kgo.FetchMaxWait(lostFetchMaxWait)}
	in, err := New(f.s, nil, cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	return in, func() {
		f.t.Helper()
		cancel()
		if err := <-done; err != nil {
			f.t.Fatalf("Run: %v", err)
		}
	}
}

// waitUntil polls cond for up to 30 s.
func (f *lostFixture) waitUntil(in *Ingester, what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("30 s without %s (durable %v, ready %v)", what, in.Durable(), in.Ready())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// durableAt reports whether in's durable position is exactly want on the
// partitions of want.
func durableAt(in *Ingester, want map[int32]int64) bool {
	d := in.Durable()
	for p, o := range want {
		if got, ok := d.Get("edges", p); !ok || got != o {
			return false
		}
	}
	return true
}

// TestLostLogStartGroupMode: a new store on a topic whose partition 1 no
// longer starts at offset 0 (DeleteRecords) ingests partition 0 and
// pauses partition 1, Ready naming it, its log start and the flag; with
// AcceptLostRecords it starts there. Then, the store down, records of
// partition 1 beyond its position are deleted (as retention does) and a
// partition 2 is added whose log lost its start: both pause, partition 0
// flows on; --reset latest takes partition 2 at its end but still pauses
// partition 1, which the store has history of.
func TestLostLogStartGroupMode(t *testing.T) {
	f := newLostFixture(t, 2)
	f.produce(0, 60)
	f.produce(1, 60)
	f.deleteBefore(1, 25)

	in, stop := f.run(Config{})
	f.waitUntil(in, "partition 0 ingested and partition 1 held", func() bool {
		return durableAt(in, map[int32]int64{0: 60}) && in.Ready() != nil && strings.Contains(in.Ready().Error(), "records lost")
	})
	var lre *LostRecordsError
	if err := in.Ready(); !errors.As(err, &lre) || len(lre.Lost) != 1 || lre.Lost[0] != (LostRecords{Topic: "edges", Partition: 1, Need: 0, LogStart: 25, New: true}) {
		t.Fatalf("Ready: %v", err)
	}
	for _, part := range []string{"edges/1", "log starts at offset 25", "--accept-lost-records"} {
		if !strings.Contains(in.Ready().Error(), part) {
			t.Errorf("Ready does not say %q: %v", part, in.Ready())
		}
	}
	time.Sleep(200 * time.Millisecond) // partition 1 stays paused
	if _, ok := in.Applied().Get("edges", 1); ok {
		t.Fatalf("partition 1 was ingested: applied %v", in.Applied())
	}
	if d := diff(f.oracle(map[int32]int64{0: 0}, nil), storeContents(t, f.s)); d != "" {
		t.Fatalf("the store holds more or less than partition 0: %s", d)
	}
	stop()

	in, stop = f.run(Config{AcceptLostRecords: true})
	f.waitUntil(in, "partition 1 ingested from its log start", func() bool {
		return durableAt(in, map[int32]int64{0: 60, 1: 60}) && in.Ready() == nil
	})
	if d := diff(f.oracle(map[int32]int64{0: 0, 1: 25}, nil), storeContents(t, f.s)); d != "" {
		t.Fatalf("the store after --accept-lost-records: %s", d)
	}
	stop()

	// The store is down: partition 1 grows and loses records past the
	// store's position (60); a partition 2 is added and loses its start.
	f.produce(1, 40)
	f.deleteBefore(1, 80)
	f.addPartition()
	f.produce(2, 30)
	f.deleteBefore(2, 10)
	for _, policy := range []string{"earliest", "latest"} {
		in, stop = f.run(Config{ResetPolicy: policy})
		f.produce(0, 5) // partition 0 flows meanwhile
		want := map[int32]int64{0: int64(len(f.recs[0]))}
		f.waitUntil(in, "partition 0 ingested, partitions 1 (and 2) held", func() bool {
			return durableAt(in, want) && in.Ready() != nil && strings.Contains(in.Ready().Error(), "records lost")
		})
		lre = nil
		if !errors.As(in.Ready(), &lre) {
			t.Fatalf("%s: Ready: %v", policy, in.Ready())
		}
		wantLost := []LostRecords{{Topic: "edges", Partition: 1, Need: 60, LogStart: 80}}
		if policy == "earliest" {
			wantLost = append(wantLost, LostRecords{Topic: "edges", Partition: 2, Need: 0, LogStart: 10, New: true})
		}
		if len(lre.Lost) != len(wantLost) {
			t.Fatalf("%s: Ready names %v, want %v", policy, lre.Lost, wantLost)
		}
		for i := range wantLost {
			if lre.Lost[i] != wantLost[i] {
				t.Fatalf("%s: Ready names %v, want %v", policy, lre.Lost, wantLost)
			}
		}
		if !strings.Contains(in.Ready().Error(), "holds edges/1 up to offset 60, but its log now starts at offset 80") {
			t.Errorf("%s: Ready: %v", policy, in.Ready())
		}
		time.Sleep(200 * time.Millisecond)
		if o, _ := in.Applied().Get("edges", 1); o != 60 {
			t.Fatalf("%s: partition 1 applied to %d, want it held at 60", policy, o)
		}
		if policy == "earliest" {
			if _, ok := in.Applied().Get("edges", 2); ok {
				t.Fatalf("partition 2 was ingested: %v", in.Applied())
			}
		} else {
			// Taken at its end (30) when assigned: what comes next is
			// ingested.
			f.produce(2, 3)
			f.waitUntil(in, "partition 2 ingested from its end (--reset latest)", func() bool { return durableAt(in, map[int32]int64{2: 33}) })
		}
		stop()
	}
	// What partition 2 held before --reset latest took it at its end is
	// not in the store; nothing of partition 1 after offset 60 is.
	if d := diff(f.oracle(map[int32]int64{0: 0, 1: 25, 2: 30}, map[int32]int64{1: 60}), storeContents(t, f.s)); d != "" {
		t.Fatalf("the store: %s", d)
	}
}

// TestLostLogStartPartitionedMode: partitioned mode refuses to start when
// an owned partition's log lost records the store needs, naming it, and
// starts it at its log start with AcceptLostRecords.
func TestLostLogStartPartitionedMode(t *testing.T) {
	f := newLostFixture(t, 2)
	f.owners = 2
	f.produce(0, 40)
	f.produce(1, 40)
	f.deleteBefore(0, 15)
	// kfake answers GROUP_ID_NOT_FOUND for the offsets of a group it does
	// not know (Kafka: none): give the group an offset of another topic.
	ctx := context.Background()
	if _, err := f.adm.CreateTopic(ctx, 1, 1, nil, "other"); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "other", Partition: 0, At: 0, LeaderEpoch: -1})
	if resp, err := f.adm.CommitOffsets(ctx, "owners", os); err != nil || resp.Error() != nil {
		t.Fatal(err, resp.Error())
	}
	in, err := New(f.s, nil, Config{Brokers: f.addrs, Topics: []string{"edges"}, Group: "owners", Own: []int32{0, 1}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = in.Run(rctx)
	var lre *LostRecordsError
	if !errors.As(err, &lre) || len(lre.Lost) != 1 || lre.Lost[0] != (LostRecords{Topic: "edges", Partition: 0, Need: 0, LogStart: 15, New: true}) {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(err.Error(), "serve does not start") || !strings.Contains(err.Error(), "--accept-lost-records") {
		t.Errorf("Run's error: %v", err)
	}
	if raw, _ := f.s.SourcePosition(); len(raw) != 0 {
		t.Fatalf("the store recorded a position: %x", raw)
	}

	in, stop := f.run(Config{Group: "owners", Own: []int32{0, 1}, Partitions: 2, AcceptLostRecords: true})
	f.waitUntil(in, "both partitions ingested", func() bool { return durableAt(in, map[int32]int64{0: 40, 1: 40}) })
	stop()
	if d := diff(f.oracle(map[int32]int64{0: 15, 1: 0}, nil), storeContents(t, f.s)); d != "" {
		t.Fatalf("the store: %s", d)
	}

	// A new owner adopting partition 0 (the group committed offsets for
	// it) replays it from the start of its log: refused too.
	s2, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	in, err = New(s2, nil, Config{Brokers: f.addrs, Topics: []string{"edges"}, Group: "owners", Own: []int32{0}, Adopt: []int32{0}, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	rctx2, cancel2 := context.WithTimeout(ctx, 30*time.Second)
	defer cancel2()
	err = in.Run(rctx2)
	lre = nil
	if !errors.As(err, &lre) || len(lre.Lost) != 1 || lre.Lost[0] != (LostRecords{Topic: "edges", Partition: 0, Need: 0, LogStart: 15, New: true}) {
		t.Fatalf("Run adopting partition 0: %v", err)
	}
}

// TestLostRecordsWhileRunning: while partition 1's fetching is held up
// (paused here; in production a slow store, a long pause, a retention
// shorter than an outage), its log loses records past the ingester's
// position; when its fetch resumes, franz-go jumps to the log start. The
// ingester holds the partition at its position instead, Ready naming what
// was lost, while partition 0 flows on; one running with
// AcceptLostRecords takes the records from the log start.
// lostFetchMaxWait is the lost-records fixture's FetchMaxWait.
const lostFetchMaxWait = 200 * time.Millisecond

func TestLostRecordsWhileRunning(t *testing.T) {
	f := newLostFixture(t, 2)
	f.produce(0, 30)
	f.produce(1, 30)
	// outrun holds partition 1's fetching while n records are produced to
	// it and those below its log start logStart deleted.
	outrun := func(in *Ingester, n int, logStart int64) {
		t.Helper()
		in.cl.PauseFetchPartitions(map[string][]int32{"edges": {1}})
		// A fetch in flight when the pause was asked still returns (franz-go
		// issues no new one for a paused partition, but does not cancel one
		// sent): it would bring the records produced next. The broker
		// answers it within the fixture's FetchMaxWait (200ms) of nothing
		// new: wait that out before producing.
		time.Sleep(3 * lostFetchMaxWait)
		f.produce(1, n)
		f.deleteBefore(1, logStart)
		in.cl.ResumeFetchPartitions(map[string][]int32{"edges": {1}})
	}

	in, stop := f.run(Config{})
	f.waitUntil(in, "both partitions ingested", func() bool { return durableAt(in, map[int32]int64{0: 30, 1: 30}) })
	outrun(in, 40, 50)
	f.waitUntil(in, "partition 1 held", func() bool { return in.Ready() != nil && strings.Contains(in.Ready().Error(), "records lost") })
	var lre *LostRecordsError
	if !errors.As(in.Ready(), &lre) || len(lre.Lost) != 1 || lre.Lost[0] != (LostRecords{Topic: "edges", Partition: 1, Need: 30, LogStart: 50}) {
		t.Fatalf("Ready: %v", in.Ready())
	}
	f.produce(0, 10)
	f.waitUntil(in, "partition 0 ingested on", func() bool { return durableAt(in, map[int32]int64{0: 40}) })
	if o, _ := in.Applied().Get("edges", 1); o != 30 {
		t.Fatalf("partition 1 applied to %d, want it held at 30", o)
	}
	stop()
	if d := diff(f.oracle(map[int32]int64{0: 0, 1: 0}, map[int32]int64{1: 30}), storeContents(t, f.s)); d != "" {
		t.Fatalf("the store while partition 1 is held: %s", d)
	}

	in, stop = f.run(Config{AcceptLostRecords: true})
	f.waitUntil(in, "partition 1 ingested from its log start", func() bool { return durableAt(in, map[int32]int64{0: 40, 1: 70}) && in.Ready() == nil })
	outrun(in, 10, 75)
	f.waitUntil(in, "partition 1 ingested from its new log start", func() bool { return durableAt(in, map[int32]int64{1: 80}) && in.Ready() == nil })
	stop()
	want := f.oracle(map[int32]int64{0: 0, 1: 0}, map[int32]int64{1: 30})
	for k, v := range f.oracle(map[int32]int64{1: 50}, map[int32]int64{1: 70}) {
		want[k] = v
	}
	for k, v := range f.oracle(map[int32]int64{1: 75}, nil) {
		want[k] = v
	}
	if d := diff(want, storeContents(t, f.s)); d != "" {
		t.Fatalf("the store: %s", d)
	}
}

// TestLostLogStartNewPartitionWhileRunning: a running ingester is
// assigned a partition added to its topic whose log has lost its start by
// then: it pauses that partition and is not ready, naming it, while Run
// goes on and the other partitions flow.
func TestLostLogStartNewPartitionWhileRunning(t *testing.T) {
	f := newLostFixture(t, 2)
	f.produce(0, 20)
	f.produce(1, 20)
	in, stop := f.run(Config{})
	defer stop()
	f.waitUntil(in, "both partitions ingested", func() bool { return durableAt(in, map[int32]int64{0: 20, 1: 20}) && in.Ready() == nil })
	// The ingester refreshes its metadata every 5 minutes by default: it
	// learns of the partition when told to, after its start is gone.
	f.addPartition()
	f.produce(2, 30)
	f.deleteBefore(2, 12)
	in.cl.ForceMetadataRefresh()
	f.waitUntil(in, "partition 2 held", func() bool { return len(lostOf(in)) > 0 })
	if got := lostOf(in); len(got) != 1 || got[0] != (LostRecords{Topic: "edges", Partition: 2, Need: 0, LogStart: 12, New: true}) {
		t.Fatalf("Ready names %+v", got)
	}
	f.produce(0, 5)
	f.produce(1, 5)
	f.waitUntil(in, "partitions 0 and 1 ingested on", func() bool { return durableAt(in, map[int32]int64{0: 25, 1: 25}) })
	if _, ok := in.Applied().Get("edges", 2); ok {
		t.Fatalf("partition 2 was ingested: %v", in.Applied())
	}
	if d := diff(f.oracle(map[int32]int64{0: 0, 1: 0}, nil), storeContents(t, f.s)); d != "" {
		t.Fatalf("the store: %s", d)
	}
}

// lostOf is what in's Ready names as lost (nil: nothing).
func lostOf(in *Ingester) []LostRecords {
	var lre *LostRecordsError
	if errors.As(in.Ready(), &lre) {
		return lre.Lost
	}
	return nil
}
