package ingest

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestDeadLetterNotAcknowledgedPausesOnlyItsPartition: the brokers answer
// every produce to the dead-letter topic with a retriable error
// (NOT_ENOUGH_REPLICAS) until the test lets them through. The poison
// record's dead letter is not acknowledged within DeadLetterTimeout, so
// its partition pauses at it while the other partition keeps ingesting,
// Ready says why and the metric is set; once produces go through, the
// partition resumes after the record and the store equals the oracle.
func TestDeadLetterNotAcknowledgedPausesOnlyItsPartition(t *testing.T) {
	const dlt = "graphtide-dead-letters"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "edges"), kfake.SeedTopics(1, dlt))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dltID := c.TopicInfo(dlt).TopicID
	var broken atomic.Bool
	broken.Store(true)
	var refused atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.ProduceRequest)
		toDLT := false
		for _, rt := range req.Topics {
			toDLT = toDLT || rt.Topic == dlt || rt.TopicID == dltID
		}
		if !toDLT || !broken.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	addrs := c.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("edges"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	want := oracle{}
	var recs []*kgo.Record
	add := func(p int32, n int, base uint64) {
		for i := 0; i < n; i++ {
			e := decode.Edge{Op: decode.OpUpsert, Src: base + uint64(i), Dst: base + uint64(i) + 1, Weight: float64(i), HasWeight: true}
			want.apply(e)
			recs = append(recs, &kgo.Record{Partition: p, Value: decode.AppendBinary(nil, e)})
		}
	}
	add(0, 50, 0)
	add(1, 50, 1000)
	poison := &kgo.Record{Partition: 1, Key: []byte("poison"), Value: []byte{9, 9, 9}}
	recs = append(recs, poison)
	// What follows the poison record in partition 1 waits for it.
	after := oracle{}
	for i := 0; i < 50; i++ {
		e := decode.Edge{Op: decode.OpUpsert, Src: 2000 + uint64(i), Dst: 2001 + uint64(i), Weight: 1, HasWeight: true}
		after.apply(e)
		recs = append(recs, &kgo.Record{Partition: 1, Value: decode.AppendBinary(nil, e)})
	}
	add(0, 50, 3000)
	ctx := context.Background()
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := NewMetrics(nil)
	in, err := New(s, nil, Config{Brokers: addrs, Topics: []string{"edges"}, FlushInterval: 50 * time.Millisecond,
		DeadLetterTimeout: time.Second, MaxPollRecords: 20, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("30 s without %s (applied %v, ready %v)", what, in.Applied(), in.Ready())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitUntil("partition 1 blocked at the poison record, partition 0 ingested", func() bool {
		p0, _ := in.Durable().Get("edges", 0)
		p1, _ := in.Durable().Get("edges", 1)
		err := in.Ready()
		return p0 == 100 && p1 == poison.Offset && err != nil && strings.Contains(err.Error(), "dead letters cannot be written")
	})
	if v := testutil.ToFloat64(m.DeadLetterBlocked.WithLabelValues("edges", "1")); v != 1 {
		t.Errorf("blocked metric of partition 1: %v", v)
	}
	if n := in.BufferedFetchBytes(); n < int64(len(poison.Key)+len(poison.Value)) {
		t.Errorf("BufferedFetchBytes %d does not count the record held for its dead letter", n)
	}
	if !strings.Contains(in.Ready().Error(), "not acknowledged within") && !strings.Contains(in.Ready().Error(), "NOT_ENOUGH_REPLICAS") {
		t.Errorf("Ready does not say why: %v", in.Ready())
	}
	// Partition 0 keeps flowing while partition 1 waits.
	more := oracle{}
	var recs0 []*kgo.Record
	for i := 0; i < 30; i++ {
		e := decode.Edge{Op: decode.OpUpsert, Src: 5000 + uint64(i), Dst: 5001 + uint64(i), Weight: 2, HasWeight: true}
		more.apply(e)
		recs0 = append(recs0, &kgo.Record{Partition: 0, Value: decode.AppendBinary(nil, e)})
	}
	if err := prod.ProduceSync(ctx, recs0...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for k, v := range more {
		want[k] = v
	}
	waitUntil("partition 0's new records", func() bool { p0, _ := in.Durable().Get("edges", 0); return p0 == 130 })
	if o, _ := in.Applied().Get("edges", 1); o != poison.Offset {
		t.Fatalf("partition 1 applied to %d, want %d", o, poison.Offset)
	}
	if d := diff(want, storeContents(t, s)); d != "" {
		t.Fatalf("while blocked, the store differs from the records before the poison one: %s", d)
	}
	if refused.Load() < 1 || testutil.ToFloat64(m.DeadLetterFailures) < 1 {
		t.Errorf("refused %d produces, counted %v failures", refused.Load(), testutil.ToFloat64(m.DeadLetterFailures))
	}

	broken.Store(false)
	waitUntil("partition 1 resumed after the poison record", func() bool {
		p1, _ := in.Durable().Get("edges", 1)
		return p1 == poison.Offset+51 && in.Ready() == nil
	})
	for k, v := range after {
		want[k] = v
	}
	if d := diff(want, storeContents(t, s)); d != "" {
		t.Fatalf("store differs from the oracle: %s", d)
	}
	if v := testutil.ToFloat64(m.DeadLetterBlocked.WithLabelValues("edges", "1")); v != 0 {
		t.Errorf("blocked metric of partition 1 after it resumed: %v", v)
	}
	if v := testutil.ToFloat64(m.DeadLetters.WithLabelValues("edges")); v != 1 {
		t.Errorf("dead letters counted: %v", v)
	}
	// Written once: the attempt that outlived the timeout was not
	// doubled by a retry.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(dlt), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	defer pcancel()
	for pctx.Err() == nil {
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			got++
			if string(r.Value) != string(poison.Value) {
				t.Errorf("dead letter %q", r.Value)
			}
		})
	}
	if got != 1 {
		t.Errorf("the dead-letter topic holds %d records, want 1", got)
	}
}

// TestReadyReasons: each health reason makes Ready say why (after the
// assignment's reason), and Ready unwraps to each.
func TestReadyReasons(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges"}, ReadyGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer in.cl.Close()
	if err := in.Ready(); err == nil || err.Error() != "no partitions assigned yet" {
		t.Fatalf("fresh: %v", err)
	}
	in.asg.assign(map[string][]int32{"edges": {0, 1}})
	in.asg.evaluate(nil)
	if err := in.Ready(); err != nil {
		t.Fatalf("assigned: %v", err)
	}

	in.health.lastAnswer.Store(time.Now().Add(-time.Minute).UnixNano())
	in.health.noteErr(errors.New("dial tcp 127.0.0.1:1: connection refused"))
	in.onLost(context.Background(), nil, map[string][]int32{"edges": {1}})
	in.health.stallSince.Store(time.Now().Add(-2 * time.Second).UnixNano())
	err = in.Ready()
	for _, want := range []string{"no Kafka broker has answered for 1m0", "connection refused", "partitions edges[1] were lost", "the store has stalled for 2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Ready: %v; want it to say %q", err, want)
		}
	}
	var re readyError
	if !errors.As(err, &re) || len(re) != 3 {
		t.Errorf("Ready's error %T does not unwrap to the three reasons", err)
	}

	// Each goes away: an answer, a new assignment, the store catching up.
	in.health.lastAnswer.Store(time.Now().UnixNano())
	in.onAssigned(context.Background(), nil, map[string][]int32{"edges": {1}})
	in.health.stallSince.Store(0)
	if err := in.Ready(); err != nil {
		t.Fatalf("after recovering: %v", err)
	}
	// A stall within the grace is not reported.
	in.health.stallSince.Store(time.Now().UnixNano())
	if err := in.Ready(); err != nil {
		t.Fatalf("a fresh stall: %v", err)
	}
	in.health.stallSince.Store(0)

	// A JoinGroup written after the last answer and pending (the group
	// waits for a dead member's session): the silence is the rebalance's,
	// until joinWait.
	in.health.OnBrokerWrite(kgo.BrokerMetadata{}, kmsg.NewPtrHeartbeatRequest().Key(), 10, 0, 0, nil)
	if in.health.joinSent.Load() != 0 {
		t.Fatal("a heartbeat counted as a join")
	}
	in.health.lastAnswer.Store(time.Now().Add(-40 * time.Second).UnixNano())
	in.health.OnBrokerWrite(kgo.BrokerMetadata{}, joinGroupKey, 10, 0, 0, nil)
	in.health.joinSent.Store(time.Now().Add(-35 * time.Second).UnixNano())
	err = in.Ready()
	if err == nil || !strings.Contains(err.Error(), "waiting 35") || !strings.Contains(err.Error(), `consumer group "graphtide" to rebalance`) || strings.Contains(err.Error(), "no Kafka broker") {
		t.Errorf("a pending join: Ready says %v", err)
	}
	in.health.joinSent.Store(time.Now().Add(-joinWait - time.Second).UnixNano())
	if err := in.Ready(); err == nil || !strings.Contains(err.Error(), "no Kafka broker has answered for 40") {
		t.Errorf("a join pending past joinWait: Ready says %v", err)
	}
	// An answer after the join: the join was answered.
	in.health.joinSent.Store(time.Now().Add(-35 * time.Second).UnixNano())
	in.health.lastAnswer.Store(time.Now().UnixNano())
	if err := in.Ready(); err != nil {
		t.Errorf("answered: %v", err)
	}
}

// TestReadyMaxLag: Behind is the assigned partitions' end offsets minus
// their applied positions, together, the end offsets from the lag loop or
// a fetch (the newest kept); with ReadyMaxLag, Ready says so while that is
// above it (naming the partition most behind), not at it, not without the
// limit, and not for a partition revoked since.
func TestReadyMaxLag(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges"}, ReadyMaxLag: -1}); err == nil || !strings.Contains(err.Error(), "ready max lag") {
		t.Fatalf("a negative limit: %v", err)
	}
	for _, limit := range []int64{0, 100} {
		in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges"}, ReadyMaxLag: limit})
		if err != nil {
			t.Fatal(err)
		}
		in.health.lastAnswer.Store(time.Now().UnixNano())
		if n, ok := in.Behind(); n != 0 || ok {
			t.Fatalf("nothing measured: Behind says %d, %v", n, ok)
		}
		in.asg.assign(map[string][]int32{"edges": {0, 1, 2}})
		in.asg.evaluate(nil)
		in.noteEnds([]partitionLag{{tp: tp{"edges", 0}, end: 130}, {tp: tp{"other", 0}, end: 1000}}) // other/0 is not assigned: not counted
		in.pos.setApplied(1, Position{"edges": {0: 100, 1: 100, 2: 100}})
		in.noteEnds([]partitionLag{{tp: tp{"edges", 1}, end: 170}, {tp: tp{"edges", 2}, end: 100}, {tp: tp{"edges", 0}, end: 120}}) // an older end of 0: kept at 130
		if err := in.Ready(); err != nil {
			t.Fatalf("limit %d, 100 records behind: %v", limit, err)
		}
		if n, ok := in.Behind(); n != 100 || !ok {
			t.Fatalf("100 records behind: Behind says %d, %v", n, ok)
		}
		in.pos.setApplied(1, Position{"edges": {0: 100, 1: 100, 2: 99}})
		err = in.Ready()
		if limit == 0 {
			if err != nil {
				t.Fatalf("no limit, 101 records behind: %v", err)
			}
		} else if want := "101 records behind the brokers' end offsets (more than --ready-max-lag 100; the most behind: edges/1 by 70)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("limit 100, 101 records behind: %v; want it to say %q", err, want)
		}
		// Partition 1 goes to another member: 31 behind.
		in.removeAssigned(map[string][]int32{"edges": {1}})
		if err := in.Ready(); err != nil {
			t.Fatalf("limit %d, after the revoke: %v", limit, err)
		}
		if n, ok := in.Behind(); n != 31 || !ok {
			t.Fatalf("after the revoke: Behind says %d, %v, want 31", n, ok)
		}
		in.cl.Close()
	}
}

// TestFetchConfig: the fetch buffers default to today's values and are
// validated.
func TestFetchConfig(t *testing.T) {
	c := Config{Brokers: []string{"b"}, Topics: []string{"t"}}
	o, err := c.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.FetchMaxBytes != 32<<20 || o.FetchMaxPartitionBytes != 1<<20 || o.MaxConcurrentFetches != 4 {
		t.Errorf("defaults %d %d %d", o.FetchMaxBytes, o.FetchMaxPartitionBytes, o.MaxConcurrentFetches)
	}
	for _, bad := range []Config{
		{FetchMaxBytes: 100},
		{FetchMaxBytes: 200 << 20},
		{FetchMaxBytes: 1 << 20, FetchMaxPartitionBytes: 2 << 20},
		{MaxConcurrentFetches: -1},
		{MaxConcurrentFetches: 65},
		{DeadLetterTimeout: time.Millisecond},
		{ReadyGrace: time.Millisecond},
	} {
		bad.Brokers, bad.Topics = c.Brokers, c.Topics
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	small := Config{Brokers: c.Brokers, Topics: c.Topics, FetchMaxBytes: 64 << 10}
	if o, err := small.withDefaults(); err != nil || o.FetchMaxPartitionBytes != 64<<10 {
		t.Errorf("a small FetchMaxBytes: partition bytes %d, %v", o.FetchMaxPartitionBytes, err)
	}
}

// TestFetchBuffersReachTheClient: the Config's fetch buffers are the
// client's.
func TestFetchBuffersReachTheClient(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges"},
		FetchMaxBytes: 8 << 20, FetchMaxPartitionBytes: 256 << 10, MaxConcurrentFetches: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer in.cl.Close()
	if v := in.cl.OptValue(kgo.FetchMaxBytes); v != int32(8<<20) {
		t.Errorf("FetchMaxBytes %v", v)
	}
	if v := in.cl.OptValue(kgo.FetchMaxPartitionBytes); v != int32(256<<10) {
		t.Errorf("FetchMaxPartitionBytes %v", v)
	}
	if v := in.cl.OptValue(kgo.MaxConcurrentFetches); v != 2 {
		t.Errorf("MaxConcurrentFetches %v", v)
	}
	if n := in.BufferedFetchBytes(); n != 0 {
		t.Errorf("BufferedFetchBytes before Run: %d", n)
	}
}

// TestDeadLetterPauseOutlivesOtherPauses: a partition paused for its dead
// letter stays paused when the other reasons to pause (a stall, a
// conflict) end and fetching of the rest resumes.
func TestDeadLetterPauseOutlivesOtherPauses(t *testing.T) {
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
	in.asg.assign(map[string][]int32{"edges": {0, 1, 2}})
	in.block(map[tp]*dlBlock{{"edges", 1}: {tp: tp{"edges", 1}, offset: 7, src: &kgo.Record{}, since: time.Now(), lastErr: errors.New("refused")}})
	list := func() partitionSet {
		ps := partitionSet{}
		for t, xs := range in.cl.PauseFetchPartitions(nil) {
			for _, p := range xs {
				ps.add(t, p)
			}
		}
		return ps
	}
	if got := list().String(); got != "edges[1]" {
		t.Fatalf("after the block: paused %s", got)
	}
	in.setPaused(pauseStall, true, nil)
	in.setPaused(pauseConflict, true, nil)
	if got := list().String(); got != "edges[0,1,2]" {
		t.Fatalf("stalled and conflicting: paused %s", got)
	}
	in.setPaused(pauseStall, false, nil)
	in.setPaused(pauseConflict, false, nil)
	if got := list().String(); got != "edges[1]" {
		t.Fatalf("after the stall and the conflict: paused %s, want the blocked partition only", got)
	}
	// The dead letter is written: the partition resumes (unless fetching
	// is paused for another reason, which then resumes it).
	in.dl.mu.Lock()
	in.dl.blocks[tp{"edges", 1}].acked = true
	in.dl.mu.Unlock()
	in.setPaused(pauseStall, true, nil)
	if _, n := in.unblockAcked(Position{"edges": {1: 7}}); n != 1 {
		t.Fatalf("unblocked %d", n)
	}
	if got := list().String(); got != "edges[0,1,2]" {
		t.Fatalf("unblocked while stalled: paused %s", got)
	}
	in.setPaused(pauseStall, false, nil)
	if got := list().String(); got != "" {
		t.Fatalf("everything resumed: still paused %s", got)
	}
}

// TestHealthPart: the health part alone, the other parts' answers given
// as values. End offsets are kept for assigned partitions only, the
// newest; the lag loop's listing sets the lag series of what is assigned
// when it lands; a partition that goes drops its end and series; the
// reasons list silence, lag, lost partitions, dead letters and a stall in
// that order.
func TestHealthPart(t *testing.T) {
	m := NewMetrics(nil)
	cfg := Config{Group: "g", Brokers: []string{"b1"}, ReadyGrace: time.Second, ReadyMaxLag: 10, Metrics: m}
	h := newHealth(&cfg)
	h.setLogInterval(slog.New(slog.DiscardHandler), time.Hour)
	defer h.closeLogs()
	assigned := map[string][]int32{"e": {0, 1}}
	isAssigned := func(t string, p int32) bool { return slices.Contains(assigned[t], p) }
	applied := Position{"e": {0: 100, 1: 50}}
	lagFrom := func(t string, p int32) (int64, bool) { return applied.Get(t, p) }

	if n, _, _, known := h.summary(lagFrom); n != 0 || known {
		t.Fatalf("nothing known: %d, %v", n, known)
	}
	h.noteEnds([]partitionLag{{tp: tp{"e", 0}, end: 104}, {tp: tp{"e", 2}, end: 999}, {tp: tp{"e", 0}, end: 103}}, isAssigned)
	listed := kadm.ListedOffsets{"e": {
		0: {Topic: "e", Partition: 0, Offset: 102},
		1: {Topic: "e", Partition: 1, Offset: 58},
		2: {Topic: "e", Partition: 2, Offset: 70},
	}}
	h.setLags(listed, func() map[string][]int32 { return assigned }, lagFrom)
	// e/0: 104 (newest) - 100 = 4; e/1: 58 - 50 = 8; e/2 not assigned.
	if n, worst, wl, known := h.summary(lagFrom); n != 12 || worst != (tp{"e", 1}) || wl != 8 || !known {
		t.Fatalf("summary: %d, worst %v by %d, %v; want 12, e/1 by 8", n, worst, wl, known)
	}
	if v := testutil.ToFloat64(m.Lag.WithLabelValues("e", "1")); v != 8 {
		t.Errorf("lag of e/1: %v", v)
	}
	if v := testutil.ToFloat64(m.Lag.WithLabelValues("e", "0")); v != 2 {
		t.Errorf("lag of e/0 (listed 102): %v", v)
	}
	now := time.Now()
	h.stallBegan(now.Add(-3 * time.Second))
	h.lastAnswer.Store(now.Add(-2 * time.Second).UnixNano())
	errs := h.reasons(now, healthView{lost: partitionSet{"e": {3: true}}, deadLetters: []string{"dead letters cannot be written"}, lagFrom: lagFrom})
	want := []string{"no Kafka broker has answered for 2s (more than --ready-grace 1s; brokers b1)", "12 records behind", "partitions e[3] were lost", "dead letters cannot be written", "the store has stalled for 3s"}
	if len(errs) != len(want) {
		t.Fatalf("reasons %v, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("reason %d: %q, want it to begin %q", i, errs[i], w)
		}
	}
	// e/1 goes to another member.
	assigned = map[string][]int32{"e": {0}}
	h.forget(map[string][]int32{"e": {1}})
	h.stallEnded(3 * time.Second)
	h.lastAnswer.Store(now.UnixNano())
	if n, _, _, _ := h.summary(lagFrom); n != 4 {
		t.Fatalf("after the revoke: %d behind, want 4", n)
	}
	if n := testutil.CollectAndCount(m.Lag); n != 1 {
		t.Errorf("%d lag series after the revoke, want 1", n)
	}
	if errs := h.reasons(now, healthView{lagFrom: lagFrom}); len(errs) != 0 {
		t.Errorf("recovered: %v", errs)
	}
}
