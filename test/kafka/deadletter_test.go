package kafkatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// letterHeaders returns a dead letter's headers by name.
func letterHeaders(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// checkLetter checks that a dead letter carries pr: its origin, a value
// that is pr's or (cut) a prefix of it, and the original size and SHA-256.
func checkLetter(t *testing.T, l *kgo.Record, pr *record, wantTruncated bool) {
	t.Helper()
	h := letterHeaders(l)
	sum := sha256.Sum256(pr.value)
	if origin := fmt.Sprintf("%s/%s/%s", h[ingest.HeaderSourceTopic], h[ingest.HeaderSourcePartition], h[ingest.HeaderSourceOffset]); origin != fmt.Sprintf("%s/%d/%d", pr.topic, pr.part, pr.offset) {
		t.Errorf("%s: dead letter names %s", pr.poison, origin)
	}
	if !strings.HasPrefix(h[ingest.HeaderReason], "decode binary: ") {
		t.Errorf("%s: reason %q", pr.poison, h[ingest.HeaderReason])
	}
	if h[ingest.HeaderOriginalSize] != strconv.Itoa(len(pr.value)) {
		t.Errorf("%s: original size header %q, want %d", pr.poison, h[ingest.HeaderOriginalSize], len(pr.value))
	}
	if h[ingest.HeaderSHA256] != hex.EncodeToString(sum[:]) {
		t.Errorf("%s: SHA-256 header %q, want %x", pr.poison, h[ingest.HeaderSHA256], sum)
	}
	if h[ingest.HeaderTruncated] != strconv.FormatBool(wantTruncated) {
		t.Errorf("%s: truncated header %q, want %v", pr.poison, h[ingest.HeaderTruncated], wantTruncated)
	}
	switch {
	case wantTruncated && (len(l.Value) >= len(pr.value) || !bytes.HasPrefix(pr.value, l.Value)):
		t.Errorf("%s: dead letter value of %d bytes is not a cut of the original's %d", pr.poison, len(l.Value), len(pr.value))
	case !wantTruncated && !bytes.Equal(l.Value, pr.value):
		t.Errorf("%s: dead letter value of %d bytes, want the original's %d", pr.poison, len(l.Value), len(pr.value))
	}
	if !bytes.Equal(l.Key, pr.key) {
		t.Errorf("%s: dead letter key %q, want %q", pr.poison, l.Key, pr.key)
	}
	// The cut value still identifies the original: its SHA-256 matches
	// the header only for the whole value.
	if wantTruncated && len(l.Value) < len(pr.value)/2 {
		t.Errorf("%s: only %d of %d bytes kept: the dead letter should use the topic's limit", pr.poison, len(l.Value), len(pr.value))
	}
}

// TestLargePoisonRecords: an undecodable record of about 1 MB (the broker
// admits it; its dead letter with headers is over franz-go's default
// ProducerBatchMaxBytes of 1,000,012, which stalled every partition
// forever), and one as large as the topic admits (its dead letter with
// headers exceeds the dead-letter topic's limit, so its value is cut),
// among good records of two partitions. Both are dead-lettered, the cut
// one with the original size and SHA-256 in headers; the good records are
// all ingested.
func TestLargePoisonRecords(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic, dead := uniq("bigpoison"), uniq("bigpoison-dead")
	createTopic(t, topic, 2)
	createTopic(t, dead, 1)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	st := newStream(topic, 2, decode.FormatBinary, "", 0, 300, 2, seed)
	// 9 is no op: the whole value is undecodable.
	mb := &record{topic: topic, part: 0, poison: "1 MB", key: []byte("poison 1 MB"), value: bytes.Repeat([]byte{9}, 1_040_000), offset: -1}
	// The largest record a topic with Kafka's default message.max.bytes
	// admits, near enough: batch (61 bytes) + record <= 1048588.
	full := &record{topic: topic, part: 1, poison: "full size", key: []byte("poison full"), value: bytes.Repeat([]byte{9}, ingest.DefaultMaxMessageBytes-61-40), offset: -1}
	var recs []*record
	recs = append(recs, st.records(200)...)
	recs = append(recs, mb)
	recs = append(recs, st.records(200)...)
	recs = append(recs, full)
	recs = append(recs, st.records(200)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t, kgo.ProducerBatchMaxBytes(ingest.DefaultMaxMessageBytes+4)), recs); err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, topic)

	s, dict := openStore(t, t.TempDir(), 1<<20)
	defer s.Close()
	defer dict.Close()
	log, _ := testLogger(t, "ingester")
	m := ingest.NewMetrics(nil)
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("bigpoison-group"),
		DeadLetterTopic: dead, FlushInterval: 100 * time.Millisecond, MaxPollRecords: 100,
		Logger: log, Metrics: m,
	})
	run.waitDurable(t, end, 2*time.Minute)
	if err := run.in.Ready(); err != nil {
		t.Errorf("not ready after ingesting everything: %v", err)
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkStore(t, "after ingest", s, dict, oracleOf(recs, nil))

	letters := consumeAll(t, dead, 2, 2*time.Second, time.Minute)
	if len(letters) != 2 {
		t.Fatalf("%d dead letters, want 2", len(letters))
	}
	for _, l := range letters {
		switch letterHeaders(l)[ingest.HeaderSourceOffset] {
		case strconv.FormatInt(mb.offset, 10):
			checkLetter(t, l, mb, false)
		case strconv.FormatInt(full.offset, 10):
			checkLetter(t, l, full, true)
		default:
			t.Errorf("dead letter of offset %s", letterHeaders(l)[ingest.HeaderSourceOffset])
		}
	}
	if got := testutil.ToFloat64(m.DeadLetters.WithLabelValues(topic)); got != 2 {
		t.Errorf("dead letters counted: %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.DeadLettersTruncated); got != 1 {
		t.Errorf("truncated dead letters counted: %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.DeadLetterFailures); got != 0 {
		t.Errorf("dead-letter failures counted: %v, want 0", got)
	}
}

// TestDeadLetterTopicUnwritable: the dead letter of a record of partition
// 1 cannot be written, first because the dead-letter topic's
// max.message.bytes is too small for even its headers (refused before it
// is sent), then because the topic is compacted and the record has no key
// (the broker refuses it for good: INVALID_RECORD). (A retriable error
// past the dead-letter timeout is tested against kfake in
// internal/ingest: on this single KRaft broker min.insync.replicas is a
// cluster setting.) Either way: partition 1 pauses at the record
// (the records before it are applied, none from it on, and the recorded
// position stops at it, also across a restart of the ingester), the other
// partitions keep flowing (records produced meanwhile arrive), Ready
// says why, the metric names the partition, failures are counted; once
// the topic's configuration is fixed the partition resumes by itself and
// the store equals the oracle of every good record, each dead letter
// written once.
func TestDeadLetterTopicUnwritable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		key        []byte
		bad, fixed map[string]string
	}{
		{"max.message.bytes too small", []byte("poison"), map[string]string{"max.message.bytes": "200"}, map[string]string{"max.message.bytes": "1048588"}},
		{"compacted, no key", nil, map[string]string{"cleanup.policy": "compact"}, map[string]string{"cleanup.policy": "delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testDeadLetterTopicUnwritable(t, tc.key, tc.bad, tc.fixed) })
	}
}

func testDeadLetterTopicUnwritable(t *testing.T, key []byte, bad, fixed map[string]string) {
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic, dead := uniq("dlq-blocked"), uniq("dlq-blocked-dead")
	createTopic(t, topic, 3)
	createTopicConfigured(t, addrs, dead, 1, bad)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	st := newStream(topic, 3, decode.FormatBinary, "", 0, 600, 2, seed)
	poison := &record{topic: topic, part: 1, poison: "garbage", key: key, value: []byte{9, 9, 9}, offset: -1}
	var recs []*record
	recs = append(recs, st.records(300)...)
	recs = append(recs, poison)
	recs = append(recs, st.records(300)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod := newProducer(t)
	if err := produce(ctx, prod, recs); err != nil {
		t.Fatal(err)
	}
	// Partition 1 stops at the poison record; the others go to the end.
	blockedAt := func() ingest.Position {
		p := endOffsets(t, adm, topic)
		p.Set(topic, 1, poison.offset)
		return p
	}
	keep := func(r *record) bool { return r.part != 1 || r.offset < poison.offset }

	dir := t.TempDir()
	s, dict := openStore(t, dir, 1<<20)
	defer s.Close()
	defer dict.Close()
	log, lb := testLogger(t, "ingester")
	m := ingest.NewMetrics(nil)
	cfg := ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("dlq-blocked-group"),
		DeadLetterTopic: dead, DeadLetterTimeout: 2 * time.Second, FlushInterval: 100 * time.Millisecond, MaxPollRecords: 50,
		Logger: log, Metrics: m,
	}
	run := startIngester(t, s, dict, cfg)
	// blocked waits until partition 1 is blocked at the poison record and
	// everything else up to want is durable, and checks what says so.
	blocked := func(run *running, want ingest.Position, what string) {
		t.Helper()
		run.waitDurable(t, want, 2*time.Minute)
		ok := waitFor(time.Minute, func() bool {
			err := run.in.Ready()
			return err != nil && strings.Contains(err.Error(), "dead letters cannot be written") &&
				testutil.ToFloat64(m.DeadLetterBlocked.WithLabelValues(topic, "1")) == 1
		})
		if !ok {
			t.Fatalf("%s: partition 1 not reported blocked: ready %v, metric %v", what, run.in.Ready(), testutil.ToFloat64(m.DeadLetterBlocked.WithLabelValues(topic, "1")))
		}
		err := run.in.Ready()
		t.Logf("%s: ready: %v", what, err)
		if !strings.Contains(err.Error(), fmt.Sprintf("partition %s/1 is paused at offset %d", topic, poison.offset)) {
			t.Errorf("%s: Ready does not name the partition and offset: %v", what, err)
		}
		for _, p := range []string{"0", "2"} {
			if v := testutil.ToFloat64(m.DeadLetterBlocked.WithLabelValues(topic, p)); v != 0 {
				t.Errorf("%s: partition %s reported blocked (%v)", what, p, v)
			}
		}
		if o, _ := run.in.Applied().Get(topic, 1); o != poison.offset {
			t.Errorf("%s: partition 1 applied up to %d, want exactly the poison record's offset %d", what, o, poison.offset)
		}
		if testutil.ToFloat64(m.DeadLetterFailures) == 0 {
			t.Errorf("%s: no dead-letter failure counted", what)
		}
	}
	blocked(run, blockedAt(), "first run")

	// Records produced while partition 1 is blocked: those of the other
	// partitions arrive, none of partition 1.
	more := st.records(300)
	if err := produce(ctx, prod, more); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, more...)
	blocked(run, blockedAt(), "records produced while blocked")
	checkStore(t, "while blocked", s, dict, oracleOf(recs, keep))

	// A restart while blocked resumes at the poison record: the recorded
	// position does not pass it.
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if o, _ := storePosition(t, s).Get(topic, 1); o != poison.offset {
		t.Errorf("after a stop while blocked, the store recorded partition 1 at %d, want the poison record's offset %d", o, poison.offset)
	}
	checkStore(t, "stopped while blocked", s, dict, oracleOf(recs, keep))
	run = startIngester(t, s, dict, cfg)
	blocked(run, blockedAt(), "restarted")

	// Fix the dead-letter topic: partition 1 resumes by itself.
	var alter []kadm.AlterConfig
	for k, v := range fixed {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
	}
	resp, err := adm.AlterTopicConfigs(ctx, alter, dead)
	if err == nil {
		_, err = resp.On(dead, nil)
	}
	if err == nil {
		for _, r := range resp {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("altering %s: %v", dead, err)
	}
	end := endOffsets(t, adm, topic)
	run.waitDurable(t, end, 2*time.Minute)
	if !waitFor(30*time.Second, func() bool { return run.in.Ready() == nil }) {
		t.Errorf("not ready after the dead letter was written: %v", run.in.Ready())
	}
	if v := testutil.ToFloat64(m.DeadLetterBlocked.WithLabelValues(topic, "1")); v != 0 {
		t.Errorf("partition 1 still reported blocked (%v)", v)
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkStore(t, "after the dead-letter topic was fixed", s, dict, oracleOf(recs, nil))
	if got := storePosition(t, s); !samePosition(restrict(got, end), end) {
		t.Errorf("store's recorded position %s, want %s", fmtPos(got), fmtPos(end))
	}
	letters := consumeAll(t, dead, 1, 2*time.Second, time.Minute)
	if len(letters) != 1 {
		t.Fatalf("%d dead letters, want the poison record's once", len(letters))
	}
	checkLetter(t, letters[0], poison, false)
	if !lb.contains("record dead-lettered; the partition resumes after it") {
		t.Errorf("the log does not say that partition 1 resumed")
	}
}

// createTopicConfigured creates topic on the cluster of addrs with the
// given topic configuration.
func createTopicConfigured(t testing.TB, addrs []string, topic string, partitions int, configs map[string]string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, kgo.SeedBrokers(addrs...)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := map[string]*string{}
	for k, v := range configs {
		c[k] = kadm.StringPtr(v)
	}
	resp, err := adm.CreateTopics(ctx, int32(partitions), 1, c, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topic %s with %v: %v", topic, configs, err)
	}
	createTopicAt(t, addrs, topic, partitions) // waits for its leaders
}
