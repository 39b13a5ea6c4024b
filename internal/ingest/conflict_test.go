package ingest

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/graphtide/graphtide/internal/engine"
)

// syncBuffer is a log destination safe for the timer's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.b.String(), s)
}

// conflictIngester is an ingester of topics "edges" (2 partitions, both
// with history and assigned here) and "new" (1 partition, no history),
// with a grace of 300ms, its log and metrics; nothing is running.
func conflictIngester(t *testing.T) (*Ingester, *syncBuffer) {
	t.Helper()
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	lb := &syncBuffer{}
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges", "new"}, Group: "g",
		ReadyGrace: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(lb, nil)), Metrics: NewMetrics(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.cl.Close)
	in.src.bind(sourceInfo{partitions: map[string]int32{"edges": 2, "new": 1}}, nil)
	in.asg.takeHistory(Position{"edges": {0: 0, 1: 0}})
	in.asg.assign(map[string][]int32{"edges": {0, 1}})
	return in, lb
}

// conflictState is what a conflict shows: ERROR lines, the counter and the
// gauge, Ready's reason about the assignment (the brokers of this
// ingester never answer: Ready's other reasons are not the test's).
func conflictState(in *Ingester, lb *syncBuffer) (errs int, count, gauge float64, ready string) {
	if err := in.asg.ready(); err != nil {
		ready = err.Error()
	}
	return lb.count("level=ERROR"), testutil.ToFloat64(in.cfg.Metrics.SourceConflicts), testutil.ToFloat64(in.cfg.Metrics.SourceConflict), ready
}

func conflictPaused(in *Ingester) bool {
	return in.pauses.paused(pauseConflict)
}

// TestConflictOfNewPartitionsWaits: partitions of a topic new to the store
// that are not assigned here (what a group shows for a moment when a
// topic appears while it forms: the leader assigned from metadata that
// did not list it yet) pause fetching but are not reported as a source
// conflict while the group may still assign them: no ERROR, no count, the
// gauge at 0, Ready says it waits. Assigned within the grace, nothing is
// ever reported; still elsewhere after it, the conflict is reported as
// before (ERROR, count, gauge). A certain conflict (history here of
// partitions assigned elsewhere) is reported at once.
func TestConflictOfNewPartitionsWaits(t *testing.T) {
	t.Run("assigned within the grace", func(t *testing.T) {
		in, lb := conflictIngester(t)
		in.evaluate(nil)
		in.evaluate(nil) // judged again: still one INFO line
		errs, count, gauge, ready := conflictState(in, lb)
		if errs != 0 || count != 0 || gauge != 0 || !strings.HasPrefix(ready, `waiting for consumer group "g" to assign partitions new[0]`) {
			t.Fatalf("new partitions not assigned yet: %d ERROR lines, count %v, gauge %v, Ready %q", errs, count, gauge, ready)
		}
		if n := lb.count("level=INFO msg=\"waiting for the consumer group to assign"); n != 1 {
			t.Errorf("%d INFO lines about the wait, want 1", n)
		}
		if !conflictPaused(in) {
			t.Error("fetching is not paused while the assignment is incomplete")
		}
		// The rebalance that follows assigns the partition.
		in.asg.assign(map[string][]int32{"new": {0}})
		in.asg.noteStart("new", 0, 0, false)
		in.evaluate(nil)
		time.Sleep(600 * time.Millisecond) // past the grace: the timer finds nothing to report
		errs, count, gauge, ready = conflictState(in, lb)
		if errs != 0 || count != 0 || gauge != 0 || ready != "" {
			t.Fatalf("after the assignment: %d ERROR lines, count %v, gauge %v, Ready %q\n%s", errs, count, gauge, ready, lb.b.String())
		}
		if conflictPaused(in) {
			t.Error("fetching is still paused")
		}
	})
	t.Run("still elsewhere after the grace", func(t *testing.T) {
		in, lb := conflictIngester(t)
		in.evaluate(nil)
		if errs, count, gauge, _ := conflictState(in, lb); errs != 0 || count != 0 || gauge != 0 {
			t.Fatalf("within the grace: %d ERROR lines, count %v, gauge %v", errs, count, gauge)
		}
		var errs int
		var count, gauge float64
		var ready string
		deadline := time.Now().Add(10 * time.Second)
		for errs == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			errs, count, gauge, ready = conflictState(in, lb)
		}
		if errs != 1 || count != 1 || gauge != 1 || !strings.HasPrefix(ready, "source conflict: partitions new[0] are assigned to another member") {
			t.Fatalf("after the grace: %d ERROR lines, count %v, gauge %v, Ready %q", errs, count, gauge, ready)
		}
		if lb.count("level=ERROR msg="+strconv.Quote("ingestion paused: "+ready)) != 1 {
			t.Errorf("the ERROR line is not Ready's reason %q:\n%s", ready, lb.b.String())
		}
		in.evaluate(nil) // the same conflict judged again: not logged or counted twice
		if errs, count, gauge, _ := conflictState(in, lb); errs != 1 || count != 1 || gauge != 1 {
			t.Errorf("judged again: %d ERROR lines, count %v, gauge %v", errs, count, gauge)
		}
	})
	t.Run("certain", func(t *testing.T) {
		in, lb := conflictIngester(t)
		in.asg.takeHistory(Position{"new": {0: 0}}) // this store holds the history of new[0]
		in.evaluate(nil)
		errs, count, gauge, ready := conflictState(in, lb)
		if errs != 1 || count != 1 || gauge != 1 || !strings.Contains(ready, "(this store holds the history of new[0])") {
			t.Fatalf("history elsewhere: %d ERROR lines, count %v, gauge %v, Ready %q", errs, count, gauge, ready)
		}
	})
}
