package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/writes"
)

// The writes topic's rules (writes.go), applied to records by hand: no
// broker, an ingester over a store and an outcome log.

func writesIngester(t *testing.T, retention time.Duration) (*Ingester, *engine.Store, *writes.Log) {
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
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges", "w"},
		Writes: &WritesConfig{Topic: "w", Log: l, Retention: retention}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.cl.Close() })
	return in, s, l
}

// applyAt applies the write req, with key, as the record at offset off of
// partition 0 of the writes topic.
func applyAt(t *testing.T, in *Ingester, off int64, key string, req writes.Request) error {
	t.Helper()
	v, err := writes.Encode(&req)
	if err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: "w", Offset: off, Value: v}
	if key != "" {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: writes.HeaderKey, Value: []byte(key)})
	}
	w, err := decodeWrite(in.decs["w"], r, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.applyWrite(w, in.encodePosition(Position{"w": {0: off + 1}}))
	return err
}

func edgeThere(t *testing.T, s *engine.Store, src, dst uint64) bool {
	t.Helper()
	sn, err := s.Snapshot()
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
	in, s, _ := writesIngester(t, time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(applyAt(t, in, 0, "", add34c)) // refused: 1->2 is absent
	must(applyAt(t, in, 1, "", add12))
	must(applyAt(t, in, 0, "", add34c)) // replayed: 1->2 is there now
	if edgeThere(t, s, 3, 4) {
		t.Fatal("a refused write was applied on its replay")
	}
	must(applyAt(t, in, 2, "", writes.Request{Ops: json.RawMessage(`[{"op":"add","src":5,"dst":6}]`), Conditions: if12})) // applied
	must(applyAt(t, in, 3, "", del12))
	must(applyAt(t, in, 4, "", writes.Request{Ops: json.RawMessage(`[{"op":"delete","src":5,"dst":6}]`)}))
	must(applyAt(t, in, 2, "", writes.Request{Ops: json.RawMessage(`[{"op":"add","src":5,"dst":6}]`), Conditions: if12}))
	if !edgeThere(t, s, 5, 6) {
		t.Fatal("an applied write was not applied on its replay")
	}
}

// TestReplayedRetryStaysADuplicateAfterPrune: a retry's record applies
// nothing, also when it is replayed after the first record of its key was
// pruned from the log (the retry has an entry of its own).
func TestReplayedRetryStaysADuplicateAfterPrune(t *testing.T) {
	in, s, l := writesIngester(t, time.Nanosecond)
	// Old entries of another topic first, so that the prune (of a prefix)
	// drops enough to rewrite the file.
	for i := range 1100 {
		if err := l.Append(writes.Entry{Topic: "old", Offset: int64(i), Key: fmt.Sprint("f", i), At: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	for off, w := range []struct {
		key string
		req writes.Request
	}{{"k", add12}, {"", del12}, {"k", add12}} {
		if err := applyAt(t, in, int64(off), w.key, w.req); err != nil {
			t.Fatal(err)
		}
	}
	if edgeThere(t, s, 1, 2) {
		t.Fatal("the retry applied its batch")
	}
	// The durable position covers the first record only.
	in.pos.flushed(Position{"w": {0: 1}}, 1)
	time.Sleep(time.Millisecond)
	in.pruneWrites(time.Now())
	if _, ok := l.At("w", 0, 0); ok {
		t.Fatal("the first record's entry was kept: the test prunes nothing")
	}
	if _, ok := l.At("w", 0, 2); !ok {
		t.Fatal("the retry's entry was pruned though the durable position does not cover it")
	}
	// A crash replays the delete and the retry.
	if err := applyAt(t, in, 1, "", del12); err != nil {
		t.Fatal(err)
	}
	if err := applyAt(t, in, 2, "k", add12); err != nil {
		t.Fatal(err)
	}
	if edgeThere(t, s, 1, 2) {
		t.Fatal("the retry, answered as a duplicate, was applied on its replay")
	}
}

// TestPruneKeepsWhatACheckpointReplays: entries the durable position
// covers but the newest checkpoint's does not stay.
func TestPruneKeepsWhatACheckpointReplays(t *testing.T) {
	in, _, l := writesIngester(t, time.Nanosecond)
	for off := range 3000 {
		if err := applyAt(t, in, int64(off), fmt.Sprint("k", off), add12); err != nil {
			t.Fatal(err)
		}
	}
	in.pos.flushed(Position{"w": {0: 3000}}, 1)
	in.pos.checkpointed(Position{"w": {0: 2000}}, 1)
	time.Sleep(time.Millisecond)
	in.pruneWrites(time.Now())
	if l.Len() != 1000 {
		t.Fatalf("%d entries left, want the 1000 the checkpoint would replay", l.Len())
	}
	in.pos.checkpointed(Position{}, 1) // a checkpoint of unknown position
	in.pruneWrites(time.Now())
	if l.Len() != 1000 {
		t.Fatalf("%d entries left after a prune with the checkpoint unknown", l.Len())
	}
}

// TestLoggedOutcomeBelongsToItsRecord: an entry of another incarnation of
// the topic (another topic ID) does not decide a record at its offset;
// an entry of this one for another batch at the same offset stops
// ingestion rather than guess.
func TestLoggedOutcomeBelongsToItsRecord(t *testing.T) {
	in, s, _ := writesIngester(t, time.Hour)
	if err := applyAt(t, in, 0, "", add34c); err != nil { // refused
		t.Fatal(err)
	}
	if err := applyAt(t, in, 1, "", add12); err != nil {
		t.Fatal(err)
	}
	other := writes.Request{Ops: json.RawMessage(`[{"op":"add","src":7,"dst":8}]`), Conditions: if12}
	if err := applyAt(t, in, 0, "", other); err == nil || !strings.Contains(err.Error(), "for another batch than that record holds") {
		t.Fatalf("another batch at a logged offset: %v", err)
	}
	in.src.bind(sourceInfo{ids: map[string]TopicID{"w": {9}}}, nil) // the topic was re-created
	if err := applyAt(t, in, 0, "", other); err != nil {
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
	in, _, _ := writesIngester(t, time.Hour)
	wt := writes.NewWaiters()
	in.cfg.Writes.Waiters = wt
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
