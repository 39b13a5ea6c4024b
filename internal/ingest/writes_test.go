package ingest

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/writes"
)

// The writes topic's part (writes.go) alone: no broker and no Ingester,
// a fake store (a real store's Apply and ApplyIfThen, counted) and an
// outcome log.

// fakeWritesStore is a writesStore over a store, counting its calls.
type fakeWritesStore struct {
	s              *engine.Store
	applies, evals int
}

func (f *fakeWritesStore) apply(b *engine.Batch) (uint64, error) {
	f.applies++
	return f.s.Apply(b)
}

func (f *fakeWritesStore) applyIfThen(b *engine.Batch, conds []engine.Condition, before func(uint64, *engine.PreconditionError) error) (uint64, error) {
	f.evals++
	return f.s.ApplyIfThen(b, conds, before)
}

// writesPart is a writes part for topic "w" over a new store and log.
func writesPart(t *testing.T, retention time.Duration) (*writesTopic, *fakeWritesStore, *writes.Log) {
	t.Helper()
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := writes.OpenLog(filepath.Join(t.TempDir(), writes.LogFileName), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := WritesConfig{Topic: "w", Log: l, Retention: retention}.withDefaults([]string{"edges", "w"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeWritesStore{s: s}
	return newWritesTopic(c, fs, nil, nil, NewMetrics(nil), slog.New(slog.DiscardHandler)), fs, l
}

// applyAt applies the write req, with key, as the record at offset off of
// partition 0 of the writes topic, whose ID is id.
func applyAt(t *testing.T, w *writesTopic, id TopicID, off int64, key string, req writes.Request) error {
	t.Helper()
	v, err := writes.Encode(&req)
	if err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: "w", Offset: off, Value: v}
	if key != "" {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: writes.HeaderKey, Value: []byte(key)})
	}
	pw, err := decodeWrite(decode.New(decode.FormatJSON, nil), r, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.apply(pw, Recorded{Position: Position{"w": {0: off + 1}}}.Encode(), id)
	return err
}

func edgeThere(t *testing.T, f *fakeWritesStore, src, dst uint64) bool {
	t.Helper()
	sn, err := f.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	c, err := sn.Edge(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return len(c.Types) > 0
}

var (
	add12  = writes.Request{Ops: json.RawMessage(`[{"op":"add","src":1,"dst":2}]`)}
	del12  = writes.Request{Ops: json.RawMessage(`[{"op":"delete","src":1,"dst":2}]`)}
	add34  = writes.Request{Ops: json.RawMessage(`[{"op":"add","src":3,"dst":4}]`)}
	if12   = []writes.Condition{{Kind: writes.KindEdgeExists, Src: json.RawMessage(`1`), Dst: json.RawMessage(`2`)}}
	add34c = writes.Request{Ops: add34.Ops, Conditions: if12}
)

// TestReplayRepeatsTheLoggedOutcome: a conditional write refused at its
// point is refused again when its record is replayed on a state where
// its condition holds, and one applied is applied again where it would
// fail (a replay from a checkpoint replays on a state ahead of it).
func TestReplayRepeatsTheLoggedOutcome(t *testing.T) {
	w, s, _ := writesPart(t, time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(applyAt(t, w, TopicID{}, 0, "", add34c)) // refused: 1->2 is absent
	must(applyAt(t, w, TopicID{}, 1, "", add12))
	// So far: the refused write's evaluation and the empty batch in its
	// place, then the add.
	if s.evals != 1 || s.applies != 2 {
		t.Fatalf("%d evaluations and %d applies, want 1 and 2", s.evals, s.applies)
	}
	must(applyAt(t, w, TopicID{}, 0, "", add34c)) // replayed: 1->2 is there now
	if edgeThere(t, s, 3, 4) {
		t.Fatal("a refused write was applied on its replay")
	}
	if s.evals != 1 || s.applies != 3 {
		t.Fatalf("the replay: %d evaluations and %d applies, want the logged outcome repeated (1 and 3)", s.evals, s.applies)
	}
	must(applyAt(t, w, TopicID{}, 2, "", writes.Request{Ops: json.RawMessage(`[{"op":"add","src":5,"dst":6}]`), Conditions: if12})) // applied
	must(applyAt(t, w, TopicID{}, 3, "", del12))
	must(applyAt(t, w, TopicID{}, 4, "", writes.Request{Ops: json.RawMessage(`[{"op":"delete","src":5,"dst":6}]`)}))
	must(applyAt(t, w, TopicID{}, 2, "", writes.Request{Ops: json.RawMessage(`[{"op":"add","src":5,"dst":6}]`), Conditions: if12}))
	if !edgeThere(t, s, 5, 6) {
		t.Fatal("an applied write was not applied on its replay")
	}
}

// TestReplayedRetryStaysADuplicateAfterPrune: a retry's record applies
// nothing, also when it is replayed after the first record of its key was
// pruned from the log (the retry has an entry of its own).
func TestReplayedRetryStaysADuplicateAfterPrune(t *testing.T) {
	w, s, l := writesPart(t, time.Nanosecond)
	// Old entries of another topic first, so that the prune (of a prefix)
	// drops enough to rewrite the file.
	for i := range 1100 {
		if err := l.Append(writes.Entry{Topic: "old", Offset: int64(i), Key: fmt.Sprint("f", i), At: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	for off, r := range []struct {
		key string
		req writes.Request
	}{{"k", add12}, {"", del12}, {"k", add12}} {
		if err := applyAt(t, w, TopicID{}, int64(off), r.key, r.req); err != nil {
			t.Fatal(err)
		}
	}
	if edgeThere(t, s, 1, 2) {
		t.Fatal("the retry applied its batch")
	}
	// The durable position covers the first record only.
	time.Sleep(time.Millisecond)
	w.prune(time.Now(), Position{"w": {0: 1}}, nil)
	if _, ok := l.At("w", 0, 0); ok {
		t.Fatal("the first record's entry was kept: the test prunes nothing")
	}
	if _, ok := l.At("w", 0, 2); !ok {
		t.Fatal("the retry's entry was pruned though the durable position does not cover it")
	}
	// A crash replays the delete and the retry.
	if err := applyAt(t, w, TopicID{}, 1, "", del12); err != nil {
		t.Fatal(err)
	}
	if err := applyAt(t, w, TopicID{}, 2, "k", add12); err != nil {
		t.Fatal(err)
	}
	if edgeThere(t, s, 1, 2) {
		t.Fatal("the retry, answered as a duplicate, was applied on its replay")
	}
}

// TestPruneKeepsWhatACheckpointReplays: entries the durable position
// covers but the newest checkpoint's does not stay.
func TestPruneKeepsWhatACheckpointReplays(t *testing.T) {
	w, _, l := writesPart(t, time.Nanosecond)
	for off := range 3000 {
		if err := applyAt(t, w, TopicID{}, int64(off), fmt.Sprint("k", off), add12); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Millisecond)
	w.prune(time.Now(), Position{"w": {0: 3000}}, Position{"w": {0: 2000}})
	if l.Len() != 1000 {
		t.Fatalf("%d entries left, want the 1000 the checkpoint would replay", l.Len())
	}
	w.prune(time.Now(), Position{"w": {0: 3000}}, Position{}) // a checkpoint of unknown position
	if l.Len() != 1000 {
		t.Fatalf("%d entries left after a prune with the checkpoint unknown", l.Len())
	}
}

// TestLoggedOutcomeBelongsToItsRecord: an entry of another incarnation of
// the topic (another topic ID) does not decide a record at its offset;
// an entry of this one for another batch at the same offset stops
// ingestion rather than guess.
func TestLoggedOutcomeBelongsToItsRecord(t *testing.T) {
	w, s, _ := writesPart(t, time.Hour)
	if err := applyAt(t, w, TopicID{}, 0, "", add34c); err != nil { // refused
		t.Fatal(err)
	}
	if err := applyAt(t, w, TopicID{}, 1, "", add12); err != nil {
		t.Fatal(err)
	}
	other := writes.Request{Ops: json.RawMessage(`[{"op":"add","src":7,"dst":8}]`), Conditions: if12}
	if err := applyAt(t, w, TopicID{}, 0, "", other); err == nil || !strings.Contains(err.Error(), "for another batch than that record holds") {
		t.Fatalf("another batch at a logged offset: %v", err)
	}
	// The topic was re-created: another ID.
	if err := applyAt(t, w, TopicID{9}, 0, "", other); err != nil {
		t.Fatal(err)
	}
	if !edgeThere(t, s, 7, 8) {
		t.Fatal("a record of the re-created topic was decided by the old topic's entry")
	}
}

// TestMissingLogIsRefused: a store that consumed the writes topic does
// not start with its outcome log gone, and refuses again at the next try.
func TestMissingLogIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b engine.Batch
	b.Insert(1, 2)
	b.SetSourcePosition(Recorded{Position: Position{"w": {0: 5}}}.Encode())
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), writes.LogFileName)
	for range 2 {
		l, err := writes.OpenLog(path, false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"w"}, Writes: &WritesConfig{Topic: "w", Log: l}})
		l.Close()
		if err == nil || !strings.Contains(err.Error(), "outcome log") {
			t.Fatalf("a missing log: %v", err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("the refused start left %s behind: %v", path, err)
		}
	}
}

// TestDeadLetteredWriteIsAnsweredWhenItsBlockEnds: a write whose dead
// letter could not be written at once is answered (with why) when the
// dead letter is acknowledged and its partition resumes.
func TestDeadLetteredWriteIsAnsweredWhenItsBlockEnds(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := writes.OpenLog(filepath.Join(t.TempDir(), writes.LogFileName), false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wt := writes.NewWaiters()
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges", "w"},
		Writes: &WritesConfig{Topic: "w", Log: l, Waiters: wt}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.cl.Close()
	id, ch := wt.Add()
	r := &kgo.Record{Topic: "w", Partition: 0, Offset: 7, Value: []byte("not a batch"),
		Headers: []kgo.RecordHeader{{Key: "other", Value: []byte("x")}, {Key: writes.HeaderRequest, Value: []byte(id)}}}
	src := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: r.Value, Headers: requestHeader(r)}
	r.Headers[1].Value[0] ^= 1 // the block keeps a copy
	in.dl.mu.Lock()
	in.dl.blocks[tp{"w", 0}] = &dlBlock{tp: tp{"w", 0}, offset: 7, src: src, reason: "writes: not a batch", acked: true, since: time.Now()}
	in.dl.mu.Unlock()
	next, n := in.unblockAcked(Position{"w": {0: 7}})
	if o, _ := next.Get("w", 0); o != 8 || n != 1 {
		t.Fatalf("unblocked to %d, %d records", o, n)
	}
	select {
	case res := <-ch:
		if res.Err != "writes: not a batch" || res.Offset != 7 {
			t.Fatalf("answered %+v", res)
		}
	default:
		t.Fatal("the write's request was not answered")
	}
}
