package kafkatest

// Regression tests for three bugs of internal/ingest that this package
// found (fixed in commit 613a5d0, "ingest: fix three bugs found by the
// real-broker tests"). Each describes the bug and how it showed.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
)

// TestDeadLetterOutageAtShutdown: Run advanced its applied position over
// every record of a poll while decoding it, before the poll's batch was
// applied. If producing the poll's dead letters fails until ctx ends, Run
// breaks out with "this poll is not applied", but the shutdown flush then
// copies that position into Durable() and commits it as the group's offsets.
// Durable() then claimed records the store never received, and a partition
// that the store had no recorded position for resumed, on the next start,
// from the committed offset: past the poll's good records, which were lost.
// (Fix: the position moves only after the poll's batch is applied.)
func TestDeadLetterOutageAtShutdown(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("dlq-outage")
	createTopic(t, topic, 1)
	st := newStream(topic, 1, decode.FormatBinary, "", 0, 100, 1, 7)
	recs := st.records(20)
	recs = append(recs, &record{topic: topic, poison: "garbage", value: []byte{9, 9, 9}, key: []byte("poison"), offset: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, topic)

	dir := t.TempDir()
	s, dict := openStore(t, dir, 1<<20)
	defer s.Close()
	defer dict.Close()
	group := uniq("dlq-outage-group")
	log, lb := testLogger(t, "ingester")
	cfg := ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: group,
		// Not a legal topic name: producing dead letters fails until Run
		// is cancelled (as it would with the dead-letter topic missing and
		// not creatable, or the broker gone, at shutdown).
		DeadLetterTopic: "gt dead letters that cannot exist", FlushInterval: 100 * time.Millisecond,
		Logger: log,
	}
	run := startIngester(t, s, dict, cfg)
	if !waitFor(30*time.Second, func() bool { return lb.contains("producing dead letters failed") }) {
		t.Fatal("the ingester never tried to produce the dead letter")
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	stored := storePosition(t, s)
	if d := run.in.Durable(); !covers(stored, d) {
		t.Errorf("after Run returned, Durable() is %s but the store recorded only %s: Durable() claims records that were never applied", fmtPos(d), fmtPos(stored))
	}

	// Start again with a working dead-letter topic: the 20 good records
	// must be ingested and the poison record dead-lettered.
	cfg.DeadLetterTopic = uniq("dlq-outage-dead")
	run = startIngester(t, s, dict, cfg)
	if !waitFor(8*time.Second, func() bool { return covers(run.in.Durable(), end) && covers(storePosition(t, s), end) }) {
		t.Errorf("restarted on the same store and group, the ingester never applied the records below %s (store position %s): it resumed from the group's committed offset, past records the store never received",
			fmtPos(end), fmtPos(storePosition(t, s)))
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkStore(t, "after the restart", s, dict, oracleOf(recs, nil))
}

// TestKeyDictSyncedBeforeBackgroundFlush: the key dictionary must be synced
// before any store data that uses its new ids becomes durable (keydict's
// contract). The ingester synced it only in its timed flush(), but the
// store also makes data durable, with its source position, in the
// background whenever a MemGraph fills (engine doc: "a batch survives a
// crash once a flush covering it has completed (Flush, or the background
// flush of a full MemGraph)"). After a crash the store held edges whose key
// ids the dictionary never recorded, and since the store's position was
// past those records they were never replayed: the reopened dictionary
// handed the same ids to other keys. With the default 64 MiB MemGraph and
// 2 s flush interval this happens whenever more than a MemGraph of keyed
// edges arrives within one flush interval. (Fix: the dictionary is synced
// before a batch that assigned new ids is applied.)
//
// The test runs the ingester in a child process with a flush interval
// longer than the test, waits until the store has recorded a position by a
// background flush, kills it, and checks that every key id in the store is
// known to the dictionary and maps to the right key.
func TestKeyDictSyncedBeforeBackgroundFlush(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	topic := uniq("keysync")
	createTopic(t, topic, 1)
	var recs []*record
	for i := 0; i < 4000; i++ {
		e := event{op: decode.OpUpsert, src: vid{key: fmt.Sprintf("k%d", i)}, dst: vid{key: fmt.Sprintf("k%d", i+1)}, w: float64(i), hasW: true}
		recs = append(recs, &record{topic: topic, events: []event{e}, value: encode(decode.FormatJSON, []event{e}), offset: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	_, log := testLogger(t, "the child process")
	ch := startChild(t, childConfig{
		Brokers: addrs, Topics: []string{topic}, Formats: map[string]decode.Format{topic: decode.FormatJSON},
		Group: uniq("keysync-group"), Instance: "keysync", DeadLetter: uniq("keysync-dead"), Dir: dir,
		MemBytes: 64 << 10, FlushEvery: 10 * time.Minute, MaxPoll: 200,
	}, log)
	if !waitFor(30*time.Second, func() bool { return !ch.alive() || len(ch.storePos()) > 0 }) || !ch.alive() {
		ch.kill(t)
		t.Fatalf("no background flush recorded a position within 30 s (child: %v)", ch.err)
	}
	ch.kill(t)

	s, dict := openStore(t, dir, 64<<10)
	defer s.Close()
	defer dict.Close()
	pos := storePosition(t, s)
	t.Logf("store position after the crash %s; key dictionary holds %d keys", fmtPos(pos), dict.Len())
	checkStore(t, "after the crash", s, dict, oracleOf(recs, below(pos)))
}

// TestKeyResolverErrorNotDeadLettered: decode's contract says an error that
// is not a *decode.Error comes from the KeyResolver (the key dictionary
// failed, e.g. a sticky write or fsync error, or it is closed): "the record
// is not at fault and must not be dead-lettered; stop or retry instead".
// The ingester dead-lettered every decode error and counted it as a decode
// error, so good records were thrown away when the dictionary failed (and,
// with background flushes of the store, their position could become
// durable: they were never replayed). (Fix: Run dead-letters only
// *decode.Error and otherwise returns without applying the poll.)
//
// The test gives the ingester a closed dictionary, then restarts it with a
// working one: nothing may be dead-lettered or counted as a decode error,
// nothing may be recorded as applied, and the restart must ingest it all.
func TestKeyResolverErrorNotDeadLettered(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("resolver")
	createTopic(t, topic, 1)
	recs := newStream(topic, 1, decode.FormatJSON, "who", 0, 50, 1, 11).records(5)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, dict := openStore(t, dir, 1<<20)
	defer s.Close()
	dict.Close() // a failed dictionary: ID returns ErrClosed
	dead := uniq("resolver-dead")
	log, _ := testLogger(t, "ingester")
	m := ingest.NewMetrics(nil)
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("resolver-group"), Format: decode.FormatJSON,
		DeadLetterTopic: dead, FlushInterval: 100 * time.Millisecond, Logger: log, Metrics: m,
	})
	select {
	case err := <-run.done:
		run.done <- err
		if err == nil {
			t.Errorf("Run returned nil with a failed key dictionary")
		}
		t.Logf("Run returned: %v", err)
	case <-time.After(20 * time.Second):
		t.Errorf("Run still running 20 s after the key dictionary failed")
	}
	_ = run.stop(t)
	if got := testutil.ToFloat64(m.DeadLetters.WithLabelValues(topic)); got != 0 {
		t.Errorf("%v good records were dead-lettered because the key dictionary failed", got)
	}
	if got := testutil.ToFloat64(m.DecodeErrs.WithLabelValues(topic)); got != 0 {
		t.Errorf("%v key-dictionary failures were counted as decode errors", got)
	}
	if n, _ := endOffsets(t, adm, dead).Get(dead, 0); n > 0 {
		t.Errorf("the dead-letter topic holds %d records", n)
	}
	if p := storePosition(t, s); len(p) > 0 {
		t.Errorf("the store recorded position %s although nothing could be applied", fmtPos(p))
	}

	// With a working dictionary, a restart ingests everything.
	dict, err := keydict.Open(dir + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	end := endOffsets(t, adm, topic)
	run = startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("resolver-group"), Format: decode.FormatJSON,
		DeadLetterTopic: dead, FlushInterval: 100 * time.Millisecond, Logger: log, Metrics: m,
	})
	run.waitDurable(t, end, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkStore(t, "after the restart", s, dict, oracleOf(recs, nil))
}
