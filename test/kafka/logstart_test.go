package kafkatest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// deleteRecordsBefore deletes the records of topic/partition below off on
// the broker (kadm DeleteRecords, as retention would) and checks that the
// log now starts there.
func deleteRecordsBefore(t *testing.T, adm *kadm.Client, topic string, partition int32, off int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: off, LeaderEpoch: -1})
	resp, err := adm.DeleteRecords(ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords %s/%d before %d: %v", topic, partition, off, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if so, _ := starts.Lookup(topic, partition); so.Offset != off {
		t.Fatalf("after DeleteRecords %s/%d starts at %d, want %d", topic, partition, so.Offset, off)
	}
}

// onlyPartitions is p's offsets of the partitions ps of topic.
func onlyPartitions(p ingest.Position, topic string, ps ...int32) ingest.Position {
	out := ingest.Position{}
	for _, q := range ps {
		if o, ok := p.Get(topic, q); ok {
			out.Set(topic, q, o)
		}
	}
	return out
}

// lostIn returns the partitions the ingester's Ready names as having lost
// records (nil: Ready names none).
func lostIn(in *ingest.Ingester) []ingest.LostRecords {
	var lre *ingest.LostRecordsError
	if errors.As(in.Ready(), &lre) {
		return lre.Lost
	}
	return nil
}

// TestLostLogStart, on the real broker: records deleted from the start of
// a partition's log (DeleteRecords, as retention does) are never skipped
// silently.
//
//  1. A new store on a topic whose partition 1 no longer starts at 0
//     ingests the other partitions and holds partition 1, Ready naming the
//     partition, its log start and --accept-lost-records;
//  2. with AcceptLostRecords it ingests partition 1 from its log start;
//  3. the store down, more records arrive and partition 2 loses records
//     past the store's position: the restarted store holds partition 2
//     at its position, the others flow;
//  4. with AcceptLostRecords it goes on from the log start.
//
// After each step the store equals the oracle of exactly the records it
// should hold (the stream's partitions touch disjoint edges).
func TestLostLogStart(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("logstart")
	createTopic(t, topic, 3)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	st := newStream(topic, 3, decode.FormatBinary, "", 0, 1500, 2, seed)
	recs := st.records(3000)
	first, second := recs[:2000], recs[2000:]
	ctx := context.Background()
	if err := produce(ctx, newProducer(t), first); err != nil {
		t.Fatal(err)
	}
	end1 := endOffsets(t, adm, topic)
	l1 := end1[topic][1] / 2
	deleteRecordsBefore(t, adm, topic, 1, l1)

	dir := t.TempDir()
	s, dict := openStore(t, dir, 256<<10)
	defer s.Close()
	defer dict.Close()
	log, _ := testLogger(t, "ingester")
	cfg := ingest.Config{Brokers: addrs, Topics: []string{topic}, Group: uniq("logstart-group"), DeadLetterTopic: uniq("logstart-dead"),
		FlushInterval: 100 * time.Millisecond, Logger: log}
	// keep says which records a store holds: those of partition p from
	// from[p] (absent: none) up to upTo[p] (absent: all).
	keep := func(from, upTo map[int32]int64) func(*record) bool {
		return func(r *record) bool {
			f, ok := from[r.part]
			u, bounded := upTo[r.part]
			return ok && r.offset >= f && (!bounded || r.offset < u)
		}
	}

	// 1. A new store on a log that lost its start.
	run := startIngester(t, s, dict, cfg)
	run.waitDurable(t, onlyPartitions(end1, topic, 0, 2), 2*time.Minute)
	if !waitFor(30*time.Second, func() bool { return len(lostIn(run.in)) > 0 }) {
		t.Fatalf("Ready does not say partition 1 lost records: %v", run.in.Ready())
	}
	if got, want := lostIn(run.in), (ingest.LostRecords{Topic: topic, Partition: 1, Need: 0, LogStart: l1, New: true}); len(got) != 1 || got[0] != want {
		t.Fatalf("Ready names %+v, want %+v", got, want)
	}
	for _, part := range []string{topic + "/1", "log starts at offset", "--accept-lost-records"} {
		if !strings.Contains(run.in.Ready().Error(), part) {
			t.Errorf("Ready does not say %q: %v", part, run.in.Ready())
		}
	}
	time.Sleep(time.Second)
	if o, ok := run.in.Applied().Get(topic, 1); ok {
		t.Fatalf("partition 1 was ingested, to %d", o)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	checkStore(t, "1. holding partition 1", s, dict, oracleOf(recs, keep(map[int32]int64{0: 0, 2: 0}, nil)))

	// 2. --accept-lost-records.
	acfg := cfg
	acfg.AcceptLostRecords = true
	run = startIngester(t, s, dict, acfg)
	run.waitDurable(t, end1, 2*time.Minute)
	if err := run.in.Ready(); err != nil {
		t.Errorf("Ready after accepting: %v", err)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	checkStore(t, "2. accepted", s, dict, oracleOf(recs, keep(map[int32]int64{0: 0, 1: l1, 2: 0}, nil)))

	// 3. The store is down; retention passes its position in partition 2.
	if err := produce(ctx, newProducer(t), second); err != nil {
		t.Fatal(err)
	}
	end2 := endOffsets(t, adm, topic)
	s2 := end1[topic][2]
	d2 := s2 + (end2[topic][2]-s2)/2
	if d2 <= s2 {
		t.Fatalf("partition 2 got too few records (%d to %d)", s2, end2[topic][2])
	}
	deleteRecordsBefore(t, adm, topic, 2, d2)
	run = startIngester(t, s, dict, cfg)
	run.waitDurable(t, onlyPartitions(end2, topic, 0, 1), 2*time.Minute)
	if !waitFor(30*time.Second, func() bool { return len(lostIn(run.in)) > 0 }) {
		t.Fatalf("Ready does not say partition 2 lost records: %v", run.in.Ready())
	}
	if got, want := lostIn(run.in), (ingest.LostRecords{Topic: topic, Partition: 2, Need: s2, LogStart: d2}); len(got) != 1 || got[0] != want {
		t.Fatalf("Ready names %+v, want %+v", got, want)
	}
	time.Sleep(time.Second)
	if o, _ := run.in.Applied().Get(topic, 2); o != s2 {
		t.Fatalf("partition 2 applied to %d, want it held at %d", o, s2)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	checkStore(t, "3. holding partition 2", s, dict, oracleOf(recs, keep(map[int32]int64{0: 0, 1: l1, 2: 0}, map[int32]int64{2: s2})))

	// 4. --accept-lost-records again.
	run = startIngester(t, s, dict, acfg)
	run.waitDurable(t, end2, 2*time.Minute)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	lost2 := func(r *record) bool { return r.part == 2 && r.offset >= s2 && r.offset < d2 }
	want := oracleOf(recs, func(r *record) bool { return keep(map[int32]int64{0: 0, 1: l1, 2: 0}, nil)(r) && !lost2(r) })
	checkStore(t, "4. accepted", s, dict, want)
	if got := storePosition(t, s); !samePosition(restrict(got, end2), end2) {
		t.Errorf("store's recorded position %s, want %s", fmtPos(got), fmtPos(end2))
	}
}
