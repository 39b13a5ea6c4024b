package ingest

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestBinding: the source binding part alone. A store that recorded
// edges (ID 1) and w (ID 2) on cluster "c" binds to the brokers' IDs;
// with w re-created and discarded, w's recorded ID is dropped; a topic
// new to the run is learnt once; another ID or cluster while running is a
// mismatch naming both IDs; a position records the IDs it is bound to.
func TestBinding(t *testing.T) {
	rec := Recorded{ClusterID: "c", TopicIDs: map[string]TopicID{"edges": {1}, "w": {2}}, Position: Position{"edges": {0: 5}, "w": {0: 1}}}
	var logs bytes.Buffer
	b := newBinding(rec, "g", slog.New(slog.NewTextHandler(&logs, nil)))

	src := sourceInfo{cluster: "c", ids: map[string]TopicID{"edges": {1}, "w": {3}}, partitions: map[string]int32{"edges": 2, "w": 1}}
	mm := b.check(src, []string{"edges", "w"})
	if mm == nil || len(mm.Topics) != 1 || mm.Topics[0].Topic != "w" || mm.Topics[0].Recorded != (TopicID{2}) || mm.Topics[0].Found != (TopicID{3}) {
		t.Fatalf("check: %v, want w re-created (ID 2 recorded, 3 found)", mm)
	}
	if mm := b.check(src, []string{"edges"}); mm != nil {
		t.Fatalf("check of edges only: %v", mm)
	}
	// ResetSourcePosition discards w: the run records the brokers' IDs.
	b.bind(src, mm)
	r, err := DecodeRecorded(b.encode(Position{"edges": {0: 6}, "w": {0: 0}}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Graph != "g" || r.ClusterID != "c" || r.TopicIDs["edges"] != (TopicID{1}) || r.TopicIDs["w"] != (TopicID{3}) {
		t.Fatalf("bound to %+v", r)
	}
	if n := b.partitionCounts(); n["edges"] != 2 || n["w"] != 1 || len(n) != 2 {
		t.Fatalf("partition counts %v", n)
	}

	// An assignment of a topic new to the run: its ID is learnt, said once.
	src.ids["new"], src.partitions["new"] = TopicID{4}, 3
	for range 2 {
		if mm := b.learn(src, []string{"edges", "new"}); mm != nil {
			t.Fatalf("learn: %v", mm)
		}
	}
	if b.topicID("new") != (TopicID{4}) || b.partitionCounts()["new"] != 3 {
		t.Fatalf("new: ID %v, %d partitions", b.topicID("new"), b.partitionCounts()["new"])
	}
	if n := strings.Count(logs.String(), "topic appeared"); n != 1 {
		t.Fatalf("%d lines say the topic appeared, want 1:\n%s", n, logs.String())
	}

	// Re-created under the running ingester; a topic gone is waited for.
	again := sourceInfo{cluster: "c", ids: map[string]TopicID{"edges": {9}, "w": {3}}, partitions: map[string]int32{"edges": 2}}
	mm = b.learn(again, []string{"edges", "w"})
	if mm == nil || !mm.WhileRunning || len(mm.Topics) != 1 || mm.Topics[0].Found != (TopicID{9}) {
		t.Fatalf("learn of a re-created topic: %v", mm)
	}
	if mm := b.recreated(sourceInfo{cluster: "c", ids: map[string]TopicID{}}, []string{"edges"}); mm != nil {
		t.Fatalf("a topic gone: %v, want it waited for", mm)
	}
	if mm := b.recreated(again, []string{"w", "edges"}); mm == nil || len(mm.Topics) != 1 || mm.Topics[0].Topic != "edges" {
		t.Fatalf("recreated: %v", mm)
	}
	if mm := b.recreated(sourceInfo{cluster: "other"}, nil); mm == nil || !mm.OtherCluster() {
		t.Fatalf("another cluster: %v", mm)
	}
	if mm := b.learn(sourceInfo{cluster: "other"}, nil); mm == nil || !mm.OtherCluster() {
		t.Fatalf("learn on another cluster: %v", mm)
	}
}

// TestBindingOtherCluster: discarding another cluster's offsets keeps
// none of the recorded IDs.
func TestBindingOtherCluster(t *testing.T) {
	rec := Recorded{ClusterID: "old", TopicIDs: map[string]TopicID{"edges": {1}, "gone": {2}}, Position: Position{"edges": {0: 5}}}
	b := newBinding(rec, "", slog.New(slog.DiscardHandler))
	src := sourceInfo{cluster: "new", ids: map[string]TopicID{"edges": {7}}, partitions: map[string]int32{"edges": 1}}
	mm := b.check(src, []string{"edges"})
	if mm == nil || !mm.OtherCluster() {
		t.Fatalf("check: %v", mm)
	}
	b.bind(src, mm)
	if b.topicID("gone") != (TopicID{}) || b.topicID("edges") != (TopicID{7}) {
		t.Fatalf("IDs after binding to another cluster: gone %v, edges %v", b.topicID("gone"), b.topicID("edges"))
	}
}

// TestIDCheckDue: fetch errors make the poll loop read the IDs at most
// every idCheckEvery.
func TestIDCheckDue(t *testing.T) {
	b := newBinding(Recorded{}, "", slog.New(slog.DiscardHandler))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		at  time.Duration
		due bool
	}{{0, true}, {time.Second, false}, {idCheckEvery, true}, {idCheckEvery + time.Second, false}, {2 * idCheckEvery, true}} {
		if got := b.idCheckDue(t0.Add(c.at)); got != c.due {
			t.Errorf("at %v: due %v, want %v", c.at, got, c.due)
		}
	}
}
