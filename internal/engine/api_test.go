package engine

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOptionsValidation(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{MemGraphBytes: 1000}, "MemGraphBytes must be between 65536 and"},
		{Options{SizeRatio: 1}, "SizeRatio must be between 2 and 1000"},
		{Options{L0CompactionTrigger: -1}, "L0CompactionTrigger must be between 1 and 64"},
		{Options{MaxLevels: 17}, "MaxLevels must be between 2 and 16"},
		{Options{TargetSegmentBytes: 1 << 40}, "TargetSegmentBytes must be between"},
	}
	for _, c := range cases {
		_, err := Open(t.TempDir(), &c.o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want ErrInvalid containing %q", c.o, err, c.want)
		}
	}
}

func TestInEdgesFixedAtCreation(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, &Options{InEdges: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(dir, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "in_edges") {
		t.Fatalf("reopen with other InEdges = %v", err)
	}
	// As stored: the existing store keeps in-edges; a new one takes InEdges.
	s, err = Open(dir, &Options{InEdgesAsStored: true})
	if err != nil || !s.InEdges() {
		t.Fatalf("open as stored: %v, in-edges %v", err, err == nil && s.InEdges())
	}
	s.Close()
	s, err = Open(t.TempDir(), &Options{InEdgesAsStored: true})
	if err != nil || s.InEdges() {
		t.Fatalf("new store as stored: %v", err)
	}
	s.Close()
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open = %v, want ErrLocked", err)
	}
}

func TestBadBatchRejectedWhole(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	b.Insert(1, 2)
	b.InsertWeighted(1, 3, math.NaN())
	if _, err := s.Apply(&b); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "op 1") {
		t.Fatalf("NaN weight: %v", err)
	}
	b.Reset()
	b.Insert(MaxVertex+1, 1)
	if _, err := s.Apply(&b); !errors.Is(err, ErrInvalid) {
		t.Fatalf("vertex out of range: %v", err)
	}
	sn, _ := s.Snapshot()
	defer sn.Release()
	if d, _ := sn.Degree(1, Out); d != 0 {
		t.Fatalf("a rejected batch left %d edges", d)
	}
	if _, err := sn.Degree(1, In); !errors.Is(err, ErrInvalid) {
		t.Fatalf("in-edges on a store without them: %v", err)
	}
}

func TestReleasedAndClosedErrors(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sn, _ := s.Snapshot()
	sn.Release()
	sn.Release()
	if _, err := sn.Degree(1, Out); !errors.Is(err, ErrReleased) {
		t.Fatalf("released snapshot: %v", err)
	}
	live, _ := s.Snapshot()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := live.Neighbors(1, Out, nil, nil); !errors.Is(err, ErrReleased) {
		t.Fatalf("snapshot after close: %v", err)
	}
	live.Release()
	var b Batch
	b.Insert(1, 2)
	if _, err := s.Apply(&b); !errors.Is(err, ErrClosed) {
		t.Fatalf("apply after close: %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("double close: %v", err)
	}
}

// Ops of one batch apply in order, also around vertex deletes.
func TestBatchOrderSemantics(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{InEdges: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	b.Insert(1, 2)
	b.Insert(3, 1)
	b.Insert(4, 5)
	s.Apply(&b)
	b.Reset()
	b.Insert(1, 9)            // dies with vertex 1 below
	b.DeleteVertex(1)         // removes 1->2, 3->1, 1->9
	b.InsertWeighted(1, 7, 3) // survives: after the delete
	b.InsertWeighted(4, 5, 2)
	b.DeleteEdge(4, 5)
	b.InsertWeighted(4, 6, 1)
	b.InsertWeighted(4, 6, 8) // later op wins
	s.Apply(&b)
	want := oracle{{1, 7}: 3, {4, 6}: 8}
	for _, step := range []func() error{func() error { return nil }, s.Flush, s.CompactAll} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		sn, _ := s.Snapshot()
		checkSnapshot(t, sn, want, true, []uint64{1, 2, 3, 4, 5, 6, 7, 9})
		sn.Release()
	}
}

// A batch with no ops still carries a source position; Flush must make it
// durable (an idle consumer advancing past filtered records does this).
func TestFlushRecordsPositionOfEmptyBatch(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.SetSourcePosition([]byte("p1"))
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p, _ := s.SourcePosition(); string(p) != "p1" {
		t.Fatalf("position after reopen = %q, want p1", p)
	}
}

// FlushAsync returns at once; the data becomes durable in the background,
// with its source position, and Metrics says when.
func TestFlushAsyncBecomesDurable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Insert(4, 5)
	b.SetSourcePosition([]byte("async"))
	seq, _ := s.Apply(&b)
	target, err := s.FlushAsync()
	if err != nil || target < seq {
		t.Fatalf("FlushAsync = %d, %v; want >= %d", target, err, seq)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, _ := s.Metrics()
		if m.DurableSeq >= target {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("durable seq stuck at %d, want %d", m.DurableSeq, target)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close() // discards nothing: everything was durable
	s, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p, _ := s.SourcePosition(); string(p) != "async" {
		t.Fatalf("position = %q, want async", p)
	}
	sn, _ := s.Snapshot()
	defer sn.Release()
	checkSnapshot(t, sn, oracle{{4, 5}: 1}, false, []uint64{4})
}

// processCPU is this process's CPU time so far (all threads).
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Metrics.ApplyCPU counts the CPU time of Apply's threads: it grows with
// every batch, by no more than the whole process used meanwhile.
func TestApplyCPUIsCounted(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{MemGraphBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	for i := range uint64(50_000) {
		b.Insert(i*7919%100_003, i)
	}
	m0, _ := s.Metrics()
	if m0.ApplyCPU != 0 {
		t.Fatalf("ApplyCPU = %v before any Apply", m0.ApplyCPU)
	}
	prev := m0.ApplyCPU
	for i := range 3 {
		p0 := processCPU(t)
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		used := processCPU(t) - p0
		m, _ := s.Metrics()
		d := m.ApplyCPU - prev
		// Both clocks count in the same scheduler time; a microsecond of
		// rounding either way.
		if d <= 0 || d > used+time.Microsecond {
			t.Fatalf("batch %d: ApplyCPU grew by %v while the process used %v", i, d, used)
		}
		prev = m.ApplyCPU
	}
}

// Tag gives the operations added after it its reference, up to the next
// Tag; those before the first have none; Reset forgets the tags.
func TestBatchTags(t *testing.T) {
	var b Batch
	b.Insert(1, 2)
	b.Tag(7)
	b.Insert(2, 3)
	b.DeleteEdge(2, 3)
	b.Tag(8)
	b.Tag(9) // replaces 8: no operation was added between
	b.DeleteVertex(4)
	b.Tag(0)
	b.Insert(5, 6)
	var got []uint64
	b.Refs(func(i int, ref uint64) {
		if i != len(got) {
			t.Fatalf("op %d out of order", i)
		}
		got = append(got, ref)
	})
	if fmt.Sprint(got) != "[0 7 7 9 0]" {
		t.Fatalf("refs %v", got)
	}
	b.Reset()
	b.Insert(1, 1)
	b.Refs(func(_ int, ref uint64) {
		if ref != 0 {
			t.Fatalf("a tag survived Reset: %d", ref)
		}
	})
}

// TestBatchEventTimes: an event time belongs to the op added last; ops
// without one read 0, before and after the first that has one; Reset
// forgets them; the observer sees them.
func TestBatchEventTimes(t *testing.T) {
	var b Batch
	b.SetEventTime(5) // nothing added yet: nothing to time
	b.Insert(1, 2)
	b.InsertWeighted(2, 3, 4)
	b.SetEventTime(1_700_000_000_000_000)
	b.DeleteEdge(1, 2)
	b.DeleteVertex(3)
	b.SetEventTime(1_700_000_000_000_001)
	b.SetEventTime(-1) // not a time: ignored
	want := []int64{0, 1_700_000_000_000_000, 0, 1_700_000_000_000_001}
	for i, w := range want {
		if got := b.Op(i).EventTime; got != w {
			t.Errorf("op %d: event time %d, want %d", i, got, w)
		}
		// Time: the zero time for none, else those µs in UTC.
		wt := time.Time{}
		if w != 0 {
			wt = time.Unix(w/1_000_000, w%1_000_000*1000).UTC()
		}
		if got := b.Op(i).Time(); !got.Equal(wt) || got.Location() != time.UTC {
			t.Errorf("op %d: Time %v, want %v", i, got, wt)
		}
	}
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seen []int64
	s.SetApplyObserver(func(_ uint64, ob *Batch) {
		for i := 0; i < ob.Len(); i++ {
			seen = append(seen, ob.Op(i).EventTime)
		}
	})
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("the observer saw %v, want %v", seen, want)
	}
	b.Reset()
	b.Insert(1, 2)
	if b.Op(0).EventTime != 0 {
		t.Fatal("Reset kept an event time")
	}
}
