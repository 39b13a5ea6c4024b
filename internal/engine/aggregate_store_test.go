package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The edge types' aggregates and retention's watermark are the store's
// (aggregate.go): recorded when set, had by every later Open without
// configuration, never turned from accumulate into replace.

// upsertAt applies one upsert of type t from src to dst with weight w at
// event time tm.
func upsertAt(t testing.TB, s *Store, src, dst uint64, typ uint16, w float64, tm int64) {
	t.Helper()
	var b Batch
	b.InsertWeighted(src, dst, w)
	b.SetType(typ)
	b.SetEventTime(tm)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
}

// edgeOf reads the edge src -> dst of type typ.
func edgeOf(t testing.TB, s *Store, src, dst uint64, typ uint16) edgeRead {
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
	for i, ty := range c.Types {
		if ty == typ {
			return edgeRead{c.Counts[i], c.Weights[i], c.Times[i], c.FirstTimes[i], c.Refs[i], c.Props[i]}
		}
	}
	t.Fatalf("no edge %d -> %d of type %d", src, dst, typ)
	return edgeRead{}
}

func TestAggregatesAreTheStores(t *testing.T) {
	dir := t.TempDir()
	acc := Aggregate{Accumulate: true, Retain: time.Hour}
	s, err := Open(dir, &Options{Aggregates: map[uint16]Aggregate{3: acc}})
	if err != nil {
		t.Fatal(err)
	}
	upsertAt(t, s, 1, 2, 3, 5, 1_000_000)
	upsertAt(t, s, 1, 2, 3, 7, 2_000_000)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened without a word about the types: type 3 accumulates still,
	// and its next upsert adds to the edge rather than replacing it.
	s, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.AggregateOf(3); got != acc {
		t.Fatalf("reopened: AggregateOf(3) = %+v, want %+v", got, acc)
	}
	if got := s.Aggregates(); len(got) != 1 || got[3] != acc {
		t.Fatalf("reopened: Aggregates() = %+v", got)
	}
	if got := s.NewestEventTime(); got != 2_000_000 {
		t.Fatalf("reopened: NewestEventTime() = %d, want 2000000", got)
	}
	upsertAt(t, s, 1, 2, 3, 11, 3_000_000)
	if got, want := edgeOf(t, s, 1, 2, 3), (edgeRead{count: 3, w: 23, time: 3_000_000, first: 1_000_000}); got != want {
		t.Fatalf("after a reopen without configuration: %+v, want %+v", got, want)
	}
	// accumulate -> replace is refused, the store unchanged.
	var conflict *AggregateConflictError
	if err := s.SetAggregate(3, Aggregate{}); !errors.As(err, &conflict) || conflict.Type != 3 || conflict.Recorded != acc || !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetAggregate(3, replace) = %v, want an AggregateConflictError", err)
	}
	if err := s.CheckAggregate(3, Aggregate{}); !errors.As(err, &conflict) {
		t.Fatalf("CheckAggregate(3, replace) = %v", err)
	}
	if got := s.AggregateOf(3); got != acc {
		t.Fatalf("after a refused SetAggregate: %+v", got)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// An Open whose configuration makes type 3 replace fails, naming it,
	// and records none of its other aggregates.
	_, err = Open(dir, &Options{Aggregates: map[uint16]Aggregate{3: {}, 4: {Accumulate: true}}})
	if !errors.As(err, &conflict) || conflict.Type != 3 || !strings.Contains(err.Error(), "edge type 3 accumulates") {
		t.Fatalf("Open making type 3 replace: %v", err)
	}
	s, err = Open(dir, &Options{Aggregates: map[uint16]Aggregate{3: {Accumulate: true, Retain: 2 * time.Hour}}})
	if err != nil {
		t.Fatalf("a retain change: %v", err)
	}
	if got := s.AggregateOf(4); got.Accumulate {
		t.Fatalf("the refused Open recorded type 4: %+v", got)
	}
	// replace -> accumulate: allowed and recorded.
	if err := s.SetAggregate(4, Aggregate{Accumulate: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		s, err = Open(dir, &Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		want := map[uint16]Aggregate{3: {Accumulate: true, Retain: 2 * time.Hour}, 4: {Accumulate: true}}
		if got := s.Aggregates(); len(got) != 2 || got[3] != want[3] || got[4] != want[4] {
			t.Fatalf("read-only %v: Aggregates() = %+v, want %+v", ro, got, want)
		}
		if got, want := edgeOf(t, s, 1, 2, 3), (edgeRead{count: 3, w: 23, time: 3_000_000, first: 1_000_000}); got != want {
			t.Fatalf("read-only %v: %+v, want %+v", ro, got, want)
		}
		if ro {
			if err := s.SetAggregate(3, Aggregate{Accumulate: true}); !errors.Is(err, ErrInvalid) {
				t.Fatalf("read-only: recording a change: %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// An offline compaction after a reopen (graphtide compact) folds what a
// compaction of the store before the reopen folds: the recorded watermark
// and retain decide, without configuration. Against two oracles: the
// events a live store's compaction leaves listed, and the rule (events
// within the retain of the newest event time are listed one by one, older
// ones fold; event times grow with the seq, so the older ones of an edge
// are one run of operands and fold into one when there are several).
func TestOfflineCompactionAfterReopenFolds(t *testing.T) {
	const retain = 10 * time.Second
	opts := func(aggs map[uint16]Aggregate) *Options {
		o := smallOptions(true)
		o.DisableAutoCompaction = true
		o.Aggregates = aggs
		return o
	}
	aggs := map[uint16]Aggregate{0: {Accumulate: true, Retain: retain}}
	offline, live := t.TempDir(), t.TempDir()
	so, err := Open(offline, opts(aggs))
	if err != nil {
		t.Fatal(err)
	}
	sl, err := Open(live, opts(aggs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sl.Close() }()
	type event struct {
		w  float64
		tm int64
	}
	events := map[[2]uint64][]event{}
	r := rand.New(rand.NewPCG(7, 8))
	tm := int64(1_700_000_000_000_000)
	for range 30 {
		var b Batch
		for range 20 {
			k := [2]uint64{r.Uint64N(4), r.Uint64N(4)}
			tm += int64(r.IntN(1_000_000))
			w := float64(1 + r.IntN(50))
			b.InsertWeighted(k[0], k[1], w)
			b.SetEventTime(tm)
			events[k] = append(events[k], event{w, tm})
		}
		for _, s := range []*Store{so, sl} {
			if _, err := s.Apply(&b); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	newest := tm
	if err := so.Close(); err != nil {
		t.Fatal(err)
	}
	so, err = Open(offline, opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { so.Close() }()
	if got := so.NewestEventTime(); got != newest {
		t.Fatalf("reopened: NewestEventTime() = %d, want %d", got, newest)
	}
	for _, s := range []*Store{so, sl} {
		if err := s.CompactAll(); err != nil {
			t.Fatal(err)
		}
	}
	list := func(s *Store, k [2]uint64) ([]Event, bool, edgeRead) {
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		evs, folded, err := sn.Events(k[0], k[1], 0, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i := range evs {
			evs[i].Seq = 0 // the two stores' seqs are alike, but not the point
		}
		return evs, folded, edgeOf(t, s, k[0], k[1], 0)
	}
	cutoff := newest - retain.Microseconds()
	foldedEdges := 0
	for k, es := range events {
		var want []Event
		var sum float64
		old := 0
		for _, e := range es {
			sum += e.w
			if e.tm < cutoff {
				old++
			}
		}
		for i := len(es) - 1; i >= 0; i-- {
			if es[i].tm >= cutoff || old == 1 {
				want = append(want, Event{Weight: es[i].w, Time: es[i].tm})
			}
		}
		gotOff, foldedOff, edgeOff := list(so, k)
		gotLive, foldedLive, edgeLive := list(sl, k)
		what := fmt.Sprintf("edge %d -> %d (%d events, %d older than the retain)", k[0], k[1], len(es), old)
		if !slices.Equal(gotOff, want) || foldedOff != (old > 1) {
			t.Errorf("%s: offline compaction lists %+v (folded %v), want %+v (folded %v)", what, gotOff, foldedOff, want, old > 1)
		}
		if !slices.Equal(gotOff, gotLive) || foldedOff != foldedLive || edgeOff != edgeLive {
			t.Errorf("%s: offline %+v %v %+v, live %+v %v %+v", what, gotOff, foldedOff, edgeOff, gotLive, foldedLive, edgeLive)
		}
		if edgeOff.count != uint64(len(es)) || edgeOff.w != sum || edgeOff.first != es[0].tm || edgeOff.time != es[len(es)-1].tm {
			t.Errorf("%s: reads %+v, want count %d sum %v", what, edgeOff, len(es), sum)
		}
		if old > 1 {
			foldedEdges++
		}
	}
	if foldedEdges == 0 {
		t.Fatal("no edge had events to fold: the test tests nothing")
	}
}

// The crash child of aggregates (crashAggregateEnv): records type 3's
// aggregate, says so, and waits to be killed before using it.
const crashAggregateEnv = "GRAPHTIDE_ENGINE_CRASH_AGGREGATE"

func aggregateCrashChild(dir string) {
	s, err := Open(dir, nil)
	if err != nil {
		os.Stderr.WriteString("child open: " + err.Error() + "\n")
		os.Exit(2)
	}
	if err := s.SetAggregate(3, Aggregate{Accumulate: true, Retain: 90 * time.Minute}); err != nil {
		os.Stderr.WriteString("child set aggregate: " + err.Error() + "\n")
		os.Exit(2)
	}
	os.Stdout.WriteString("recorded\n")
	select {} // killed here
}

// A crash between SetAggregate's return and the first upsert that uses
// it: the reopened store has the type as recorded.
func TestAggregateSurvivesACrashBeforeItsUse(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	cmd := startCrashChildSaying(t, dir, crashAggregateEnv, "recorded", "the crash child said")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.AggregateOf(3), (Aggregate{Accumulate: true, Retain: 90 * time.Minute}); got != want {
		t.Fatalf("after the crash: AggregateOf(3) = %+v, want %+v", got, want)
	}
	upsertAt(t, s, 1, 2, 3, 4, 10)
	upsertAt(t, s, 1, 2, 3, 6, 20)
	if got := edgeOf(t, s, 1, 2, 3); got.count != 2 || got.w != 10 {
		t.Fatalf("upserts after the crash: %+v, want 2 events summing 10", got)
	}
}
