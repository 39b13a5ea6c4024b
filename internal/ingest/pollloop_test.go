package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
)

// The poll loop's state machine (pollState) against a fake environment:
// no broker, no store. Records are text lines "src dst" on topic "edges";
// rec(p, o) is the record at offset o of partition p, whose edge is
// (p, o), so that what was applied can be traced back to records.

// fakeRec is a record of topic "edges".
type fakeRec struct {
	p   int32
	off int64
	val string
}

// rec is the record at (p, off) holding the edge (p, off).
func rec(p int32, off int64) fakeRec { return fakeRec{p, off, fmt.Sprintf("%d %d", p, off)} }

// recs is rec(p, from) .. rec(p, to).
func recs(p int32, from, to int64) []fakeRec {
	var out []fakeRec
	for o := from; o <= to; o++ {
		out = append(out, rec(p, o))
	}
	return out
}

// fakeStep is what one poll returns. A poll that does not wait (batches in
// flight) takes a step only if it has records (they are "buffered"); a
// waiting poll takes any step, and one without records moves the clock on
// to the poll's deadline, as a poll that times out does.
type fakeStep struct {
	recs    []fakeRec
	empty   []int32       // partitions answered with no records (an empty fetch)
	advance time.Duration // the clock moves on by this much when the step is taken
	do      func(e *fakeEnv)
}

func idle(n int) []fakeStep { return make([]fakeStep, n) }

// fakeApply is one batch the fake store applied.
type fakeApply struct {
	seq         uint64
	pos         Position
	records     int
	edges       [][2]uint64
	ops         []engine.Op
	afterRevoke bool // applied after a revoke ran
}

// fakeEnv implements pollEnv. The applier goroutine calls apply and
// flushAsync: everything is under mu.
type fakeEnv struct {
	cancel context.CancelFunc

	mu    sync.Mutex
	clock time.Time
	steps []fakeStep

	// The store: seq is the newest batch's sequence number, durable the
	// store's durable seq. autoDurable: every batch is durable at once (a
	// MemGraph that flushes by itself). A started flush ends at the next
	// look at the durable seq, unless holdFlushes.
	seq, durable  uint64
	autoDurable   bool
	holdFlushes   bool
	pendingFlush  []uint64
	flushStarts   []time.Time
	applyDelay    time.Duration // real time each apply takes
	beforeApply   func()        // called as each apply begins, under mu
	failApply     int           // the apply (1-based) that fails; 0: none
	errApply      error
	applies       []fakeApply
	applyCalls    int
	polledPos     Position // after every record polled so far
	appliedPos    Position // what the Ingester publishes as applied
	durablePos    Position // ... and as durable
	durableSeqRec uint64   // the seq durablePos corresponds to

	// When the loop asked for checkpoints; the first checkpointsFail of
	// them fail (owed).
	checkpoints     []time.Time
	checkpointsFail int

	// The group: assigned partitions; every commit (durable offsets of
	// the assigned partitions), with the store's durable seq then.
	assigned   map[int32]bool
	commits    []Position
	commitSeqs []uint64

	// Rebalances: waiting is franz-go's signal; onAllow are the callbacks
	// of the rebalance that runs at the next allowRebalance (it may be
	// pending without the signal).
	waiting   bool
	onAllow   func(e *fakeEnv)
	revoked   bool
	atRevoke  Position // the applied position when the revoke ran
	revokeErr string   // what the revoke found wrong

	// Assignment: partitions taken into history; a changed source.
	pending        Position
	commitAssigned bool
	fatal          error

	// Dead letters: partitions whose dead letters fail (once: the first
	// block's retry succeeds when acked is set); blocked partitions; the
	// records dead-lettered and acknowledged.
	dlFail    map[int32]bool
	blocks    map[tp]int64
	acked     map[tp]bool
	dlWrites  []int64
	dlReasons []string

	nkeys   int
	syncErr error
}

func newFakeEnv(cancel context.CancelFunc, steps ...[]fakeStep) *fakeEnv {
	e := &fakeEnv{cancel: cancel, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		polledPos: Position{}, appliedPos: Position{}, durablePos: Position{}, assigned: map[int32]bool{0: true, 1: true},
		blocks: map[tp]int64{}, acked: map[tp]bool{}, dlFail: map[int32]bool{}, errApply: errors.New("fake apply failed")}
	for _, s := range steps {
		e.steps = append(e.steps, s...)
	}
	return e
}

var _ pollEnv = (*fakeEnv)(nil)

func (e *fakeEnv) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clock
}

func (e *fakeEnv) poll(ctx context.Context, until time.Time) kgo.Fetches {
	e.mu.Lock()
	if len(e.steps) == 0 {
		e.mu.Unlock()
		e.cancel() // the script is done: Run's ctx ends
		return nil
	}
	st := e.steps[0]
	if until.IsZero() && len(st.recs) == 0 {
		e.mu.Unlock()
		return nil // nothing buffered
	}
	e.steps = e.steps[1:]
	e.clock = e.clock.Add(st.advance)
	if !until.IsZero() && len(st.recs) == 0 && until.After(e.clock) {
		e.clock = until
	}
	e.mu.Unlock()
	if st.do != nil {
		st.do(e)
	}
	e.mu.Lock()
	for _, r := range st.recs {
		if cur, ok := e.polledPos.Get("edges", r.p); !ok || r.off >= cur {
			e.polledPos.Set("edges", r.p, r.off+1)
		}
	}
	e.mu.Unlock()
	return fetchesOf(st.recs, st.empty)
}

// fetchesOf is one fetch of topic "edges" holding rs, partitions in order
// of first appearance, and an empty answer for each of empty.
func fetchesOf(rs []fakeRec, empty []int32) kgo.Fetches {
	if len(rs) == 0 && len(empty) == 0 {
		return nil
	}
	ft := kgo.FetchTopic{Topic: "edges"}
	at := map[int32]int{}
	for _, r := range rs {
		i, ok := at[r.p]
		if !ok {
			i = len(ft.Partitions)
			at[r.p] = i
			ft.Partitions = append(ft.Partitions, kgo.FetchPartition{Partition: r.p, HighWatermark: 1000})
		}
		fp := &ft.Partitions[i]
		fp.Records = append(fp.Records, &kgo.Record{Topic: "edges", Partition: r.p, Offset: r.off, Value: []byte(r.val)})
	}
	for _, p := range empty {
		ft.Partitions = append(ft.Partitions, kgo.FetchPartition{Partition: p, HighWatermark: 1000})
	}
	return kgo.Fetches{{Topics: []kgo.FetchTopic{ft}}}
}

func (e *fakeEnv) noteEnds([]partitionLag) {}

// holdLost holds every partition it is told of (the fake fetches start
// every log at 0: none).
func (e *fakeEnv) holdLost(lost []LostRecords) []LostRecords { return lost }

func (e *fakeEnv) rebalanceWaiting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.waiting
}

func (e *fakeEnv) allowRebalance() {
	e.mu.Lock()
	f := e.onAllow
	e.waiting, e.onAllow = false, nil
	e.mu.Unlock()
	if f != nil {
		f(e)
	}
}

// revoke returns the callbacks of a rebalance that revokes ps, as
// onRevoked does: flush (everything applied becomes durable), commit,
// then the partitions go. It notes whether records polled so far were not
// all applied when it ran.
func revoke(ps ...int32) func(e *fakeEnv) {
	return func(e *fakeEnv) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.revoked = true
		e.atRevoke = e.appliedPos.Clone()
		if !reflect.DeepEqual(e.appliedPos, e.polledPos) {
			e.revokeErr = fmt.Sprintf("the revoke ran with %v applied, want every record polled before it: %v", e.appliedPos, e.polledPos)
		}
		e.durable = e.seq
		e.durablePos, e.durableSeqRec = e.appliedPos, e.seq
		e.commitLocked()
		for _, p := range ps {
			delete(e.assigned, p)
		}
	}
}

func (e *fakeEnv) takeAssignment(polled Position) (Position, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fatal != nil {
		return polled, false, e.fatal
	}
	next := polled
	if len(e.pending) > 0 {
		next = polled.Clone()
		for t, ps := range e.pending {
			for p, o := range ps {
				if _, ok := next.Get(t, p); !ok {
					next.Set(t, p, o)
				}
			}
		}
		e.pending = nil
	}
	c := e.commitAssigned
	e.commitAssigned = false
	return next, c, nil
}

func (e *fakeEnv) commit(context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.commitLocked()
}

func (e *fakeEnv) commitLocked() {
	c := Position{}
	for p := range e.assigned {
		if o, ok := e.durablePos.Get("edges", p); ok {
			c.Set("edges", p, o)
		}
	}
	if len(c) > 0 {
		e.commits = append(e.commits, c)
		e.commitSeqs = append(e.commitSeqs, e.durable)
	}
}

func (e *fakeEnv) durableSeq() (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.holdFlushes {
		for _, f := range e.pendingFlush {
			e.durable = max(e.durable, f)
		}
		e.pendingFlush = nil
	}
	return e.durable, nil
}

func (e *fakeEnv) markDurable(seq uint64, pos Position) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if seq <= e.durableSeqRec {
		return false
	}
	e.durablePos, e.durableSeqRec = pos, seq
	return true
}

func (e *fakeEnv) keys() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nkeys
}

func (e *fakeEnv) syncKeys() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.syncErr
}

func (e *fakeEnv) deadLetter(_ context.Context, dead []deadRecord) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	blocked := false
	for _, d := range dead {
		k := tp{d.r.Topic, d.r.Partition}
		if o, ok := e.blocks[k]; ok && o <= d.r.Offset {
			continue
		}
		if e.dlFail[d.r.Partition] {
			e.blocks[k] = d.r.Offset
			blocked = true
			continue
		}
		e.dlWrites = append(e.dlWrites, d.r.Offset)
		e.dlReasons = append(e.dlReasons, d.reason)
	}
	return blocked, nil
}

func (e *fakeEnv) holdCuts(kgo.Fetches) map[tp]int64 { return nil }

func (e *fakeEnv) endHolds() {}

func (e *fakeEnv) holding() bool { return false }

func (e *fakeEnv) cuts() map[tp]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.blocks) == 0 {
		return nil
	}
	c := map[tp]int64{}
	for k, o := range e.blocks {
		c[k] = o
	}
	return c
}

// ack makes the blocked partitions' dead letters acknowledged.
func (e *fakeEnv) ack() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, o := range e.blocks {
		e.acked[k] = true
		e.dlWrites = append(e.dlWrites, o)
	}
}

func (e *fakeEnv) unblockAcked(polled Position) (Position, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	next, n := polled, 0
	for k, o := range e.blocks {
		if !e.acked[k] {
			continue
		}
		if n == 0 {
			next = polled.Clone()
		}
		n++
		delete(e.blocks, k)
		delete(e.acked, k)
		if cur, ok := next.Get(k.topic, k.partition); !ok || cur <= o {
			next.Set(k.topic, k.partition, o+1)
		}
	}
	return next, n
}

func (e *fakeEnv) apply(j *applyJob) (uint64, error) {
	if d := e.applyDelay; d > 0 {
		time.Sleep(d)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applyCalls++
	if e.beforeApply != nil {
		e.beforeApply()
	}
	if e.applyCalls == e.failApply {
		return 0, e.errApply
	}
	e.seq++
	a := fakeApply{seq: e.seq, pos: j.pos, records: j.records, afterRevoke: e.revoked}
	for i := range j.batch.Len() {
		op := j.batch.Op(i)
		a.edges = append(a.edges, [2]uint64{op.Src, op.Dst})
		a.ops = append(a.ops, op)
	}
	e.applies = append(e.applies, a)
	e.appliedPos = j.pos
	if e.autoDurable {
		e.durable = e.seq
	}
	return e.seq, nil
}

func (e *fakeEnv) flushAsync() (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flushStarts = append(e.flushStarts, e.clock)
	e.pendingFlush = append(e.pendingFlush, e.seq)
	return e.seq, nil
}

// checkpoint records when the loop asked for a checkpoint (liveEnv's is
// tested through serve).
func (e *fakeEnv) checkpoint() (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.checkpoints = append(e.checkpoints, e.clock)
	if e.checkpointsFail > 0 {
		e.checkpointsFail--
		return true, nil
	}
	return false, nil
}

// set runs f under the fake's lock (a step's do).
func set(f func(e *fakeEnv)) func(e *fakeEnv) {
	return func(e *fakeEnv) {
		e.mu.Lock()
		defer e.mu.Unlock()
		f(e)
	}
}

// runLoop runs a poll loop over e, from nothing applied, until e's script
// is done; it returns run's error and checks that nothing is left in
// flight when run returns nil.
func runLoop(ctx context.Context, t *testing.T, e *fakeEnv, flushInterval time.Duration, keys decode.KeyResolver) error {
	t.Helper()
	inflight, err := runLoopInflight(ctx, e, flushInterval, keys)
	if err == nil && inflight != 0 {
		t.Errorf("run returned nil with %d batches in flight", inflight)
	}
	return err
}

// runLoopInflight is runLoop without the check: it returns the batches
// in flight when run returned, and run's error.
func runLoopInflight(ctx context.Context, e *fakeEnv, flushInterval time.Duration, keys decode.KeyResolver) (int, error) {
	return runLoopConfig(ctx, e, Config{FlushInterval: flushInterval}, keys)
}

// runLoopConfig is runLoopInflight with a Config (logger and metrics
// filled in).
func runLoopConfig(ctx context.Context, e *fakeEnv, cfg Config, keys decode.KeyResolver) (int, error) {
	return runLoopDecoder(ctx, e, cfg, decode.New(decode.FormatText, keys))
}

// runLoopDecoder is runLoopConfig with topic edges' decoder.
func runLoopDecoder(ctx context.Context, e *fakeEnv, cfg Config, dc decode.Decoder) (int, error) {
	return runLoopState(ctx, e, cfg, dc, nil)
}

// runLoopState is runLoopDecoder with setup, if not nil, called on the
// loop's state before it runs (to put fakes in).
func runLoopState(ctx context.Context, e *fakeEnv, cfg Config, dc decode.Decoder, setup func(s *pollState)) (int, error) {
	cfg.Logger = slog.New(slog.DiscardHandler)
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	decs := map[string]decode.Decoder{"edges": dc}
	p := startApplier(e)
	defer p.stop()
	s := newPollState(e, p, Position{}, &cfg, decs, nil)
	if setup != nil {
		setup(s)
	}
	err := s.run(ctx)
	return s.p.inflight, err
}

func newLoopEnv(t *testing.T, steps ...[]fakeStep) (*fakeEnv, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return newFakeEnv(cancel, steps...), ctx
}

func at(offs ...int64) Position {
	p := Position{}
	for i := 0; i+1 < len(offs); i += 2 {
		p.Set("edges", int32(offs[i]), offs[i+1])
	}
	return p
}

// TestPollCommitsOnlyDurable: the offsets after a batch are committed only
// once the store's durable seq covers that batch, and then at once.
func TestPollCommitsOnlyDurable(t *testing.T) {
	e, ctx := newLoopEnv(t,
		[]fakeStep{{recs: recs(0, 0, 2)}}, idle(3), // batch 1: p0 up to 3
		[]fakeStep{{recs: recs(0, 3, 4)}}, idle(3), // batch 2: p0 up to 5
		[]fakeStep{{do: set(func(e *fakeEnv) { e.durable = 1 })}}, idle(3),
		[]fakeStep{{recs: recs(1, 0, 0)}}, idle(3), // batch 3: p1 up to 1
		[]fakeStep{{do: set(func(e *fakeEnv) { e.durable = 3 })}}, idle(3),
	)
	if err := runLoop(ctx, t, e, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	want := []Position{at(0, 3), at(0, 5, 1, 1)}
	if !reflect.DeepEqual(e.commits, want) {
		t.Fatalf("commits %v, want %v (batch 1 once seq 1 was durable, nothing for batch 2 alone, then batches 2 and 3 at seq 3)", e.commits, want)
	}
	if want := []uint64{1, 3}; !reflect.DeepEqual(e.commitSeqs, want) {
		t.Fatalf("committed at durable seqs %v, want %v", e.commitSeqs, want)
	}
	if len(e.flushStarts) != 0 {
		t.Fatalf("timed flushes started at %v; FlushInterval is an hour", e.flushStarts)
	}
}

// TestPollRevokeCommitsWhatIsDurable: when a rebalance is waiting, the
// loop stops handing batches over until the applier has caught up, and
// only then lets it run: the revoke's flush covers every record polled,
// and its commit is exactly that; nothing later (not durable) is
// committed, nor committed again.
func TestPollRevokeCommitsWhatIsDurable(t *testing.T) {
	e, ctx := newLoopEnv(t,
		[]fakeStep{{recs: append(recs(0, 0, 2), recs(1, 0, 2)...)}},
		// Buffered while the first is applied; the rebalance is signalled.
		[]fakeStep{{recs: append(recs(0, 3, 4), rec(1, 3)), do: set(func(e *fakeEnv) {
			e.waiting, e.onAllow = true, revoke(1)
		})}},
		[]fakeStep{{recs: recs(0, 5, 6)}}, idle(5),
	)
	e.applyDelay = 20 * time.Millisecond
	if err := runLoop(ctx, t, e, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if !e.revoked {
		t.Fatal("the rebalance never ran")
	}
	if e.revokeErr != "" {
		t.Fatal(e.revokeErr)
	}
	want := []Position{at(0, 5, 1, 4)}
	if !reflect.DeepEqual(e.commits, want) {
		t.Fatalf("commits %v, want only the revoke's %v (p0 up to 7 never became durable)", e.commits, want)
	}
	if last := e.applies[len(e.applies)-1].pos; !reflect.DeepEqual(last, at(0, 7, 1, 4)) {
		t.Fatalf("the last batch's position is %v, want p0 up to 7 (and p1's kept)", last)
	}
}

// TestPollRevokedPartitionNotAppliedAfter: records of a partition polled
// before its revoke are all applied before the revoke runs, whether
// franz-go signals the waiting rebalance, or does not and
// allowRebalanceEvery passes, or does not and the pipeline empties by
// itself; none is applied after it, and the partition is not committed
// after it. Signalled, or once allowRebalanceEvery passed, the revoke
// runs before the next poll although batches keep coming.
func TestPollRevokedPartitionNotAppliedAfter(t *testing.T) {
	for _, c := range []struct {
		name     string
		signal   bool
		advance  time.Duration
		revokeAt Position // the applied position the revoke runs at (nil: any)
	}{
		{"signalled", true, 0, at(0, 3, 1, 4)},
		{"allowRebalanceEvery", false, 2 * allowRebalanceEvery, at(0, 3, 1, 4)},
		{"unsignalled", false, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, ctx := newLoopEnv(t,
				[]fakeStep{{recs: append(recs(0, 0, 1), recs(1, 0, 1)...)}},
				// Buffered while the first batch is applied.
				[]fakeStep{{recs: append(recs(1, 2, 3), rec(0, 2)), advance: c.advance, do: set(func(e *fakeEnv) {
					e.waiting, e.onAllow = c.signal, revoke(1)
				})}},
				[]fakeStep{{recs: recs(0, 3, 4)}, {recs: recs(0, 5, 6)}, {recs: recs(0, 7, 8)}}, idle(3),
				[]fakeStep{{do: set(func(e *fakeEnv) { e.durable = e.seq })}}, idle(3),
			)
			e.applyDelay = 20 * time.Millisecond
			if err := runLoop(ctx, t, e, time.Hour, nil); err != nil {
				t.Fatal(err)
			}
			if !e.revoked {
				t.Fatal("the rebalance never ran")
			}
			if e.revokeErr != "" {
				t.Fatal(e.revokeErr)
			}
			if c.revokeAt != nil && !reflect.DeepEqual(e.atRevoke, c.revokeAt) {
				t.Fatalf("the revoke ran with %v applied, want %v: no poll between the rebalance's turn and the revoke", e.atRevoke, c.revokeAt)
			}
			var applied []string
			for _, a := range e.applies {
				for _, ed := range a.edges {
					if ed[0] == 1 && a.afterRevoke {
						t.Errorf("record %d of the revoked partition 1 applied after the revoke", ed[1])
					}
					applied = append(applied, fmt.Sprint(ed))
				}
			}
			if got, want := strings.Join(applied, " "), "[0 0] [0 1] [1 0] [1 1] [1 2] [1 3] [0 2] [0 3] [0 4] [0 5] [0 6] [0 7] [0 8]"; got != want {
				t.Errorf("applied %s, want %s", got, want)
			}
			// The revoke commits what it made durable; then only p0,
			// once durable, if a batch came after the revoke. (Without a
			// signal, the last poll may come before the revoke or after.)
			want := []Position{e.atRevoke}
			if o, _ := e.appliedPos.Get("edges", 0); !reflect.DeepEqual(e.appliedPos, e.atRevoke) {
				want = append(want, at(0, o))
			}
			if !reflect.DeepEqual(e.commits, want) {
				t.Fatalf("commits %v, want %v", e.commits, want)
			}
			if !reflect.DeepEqual(e.appliedPos, at(0, 9, 1, 4)) {
				t.Fatalf("applied %v, want p0 up to 9, p1 up to 4", e.appliedPos)
			}
		})
	}
}

// TestPollCountsRecordsOnceApplied: graphtide_ingest_records_total and
// graphtide_ingest_bytes_total count a poll's records once its batch is
// applied, not when it is decoded: a reader who waits for the counter to
// reach N finds the N records' operations in every fresh read (the docs'
// tours wait so). The loop polls on while a batch applies.
func TestPollCountsRecordsOnceApplied(t *testing.T) {
	polls := [][]fakeRec{recs(0, 0, 2), recs(0, 3, 4), recs(1, 0, 0)}
	var steps [][]fakeStep
	bytes := 0
	for _, p := range polls {
		steps = append(steps, []fakeStep{{recs: p}})
		for _, r := range p {
			bytes += len(r.val)
		}
	}
	e, ctx := newLoopEnv(t, append(steps, idle(3))...)
	e.applyDelay = 20 * time.Millisecond
	m := NewMetrics(nil)
	var seen []float64 // the counter as each apply began
	e.beforeApply = func() { seen = append(seen, testutil.ToFloat64(m.Records.WithLabelValues("edges"))) }
	if _, err := runLoopDecoder(ctx, e, Config{FlushInterval: time.Hour, Metrics: m}, decode.New(decode.FormatText, nil)); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	applied := 0
	for i, a := range e.applies {
		if seen[i] != float64(applied) {
			t.Fatalf("apply %d began with the counter at %v, want %d (the records of the batches applied before it)", i+1, seen[i], applied)
		}
		applied += a.records
	}
	if applied != 6 {
		t.Fatalf("%d records applied, want 6", applied)
	}
	if got := testutil.ToFloat64(m.Records.WithLabelValues("edges")); got != float64(applied) {
		t.Fatalf("records_total %v once every batch was applied, want %d", got, applied)
	}
	if got := testutil.ToFloat64(m.Bytes.WithLabelValues("edges")); got != float64(bytes) {
		t.Fatalf("bytes_total %v once every batch was applied, want %d", got, bytes)
	}
}

// TestPollDrainsOnExit: when ctx ends, the loop returns only once the
// batches in flight are applied, and does not apply the poll at hand.
func TestPollDrainsOnExit(t *testing.T) {
	e, ctx := newLoopEnv(t,
		[]fakeStep{{recs: recs(0, 0, 1)}},
		[]fakeStep{{recs: recs(0, 2, 3)}},
		[]fakeStep{{recs: recs(0, 4, 5), do: func(e *fakeEnv) { e.cancel() }}},
	)
	e.applyDelay = 20 * time.Millisecond
	if err := runLoop(ctx, t, e, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !reflect.DeepEqual(e.appliedPos, at(0, 4)) {
		t.Fatalf("applied %v when the loop returned, want p0 up to 4 (the last poll, at ctx's end, not applied)", e.appliedPos)
	}
}

// TestPollApplyFailureStops: a failed apply ends the loop with its error;
// no batch after it is applied and no offset after it is committed, even
// when the store says everything is durable.
func TestPollApplyFailureStops(t *testing.T) {
	e, ctx := newLoopEnv(t,
		[]fakeStep{{recs: recs(0, 0, 1)}}, idle(2), // batch 1, durable
		[]fakeStep{{recs: recs(0, 2, 3)}}, // batch 2 fails...
		[]fakeStep{{recs: recs(0, 4, 5)}}, // ... so 3 is not applied
		idle(20),
	)
	e.autoDurable, e.failApply = true, 2
	e.applyDelay = 5 * time.Millisecond
	err := runLoop(ctx, t, e, time.Hour, nil)
	if !errors.Is(err, e.errApply) {
		t.Fatalf("run returned %v, want the apply's error", err)
	}
	if len(e.applies) != 1 || e.applyCalls != 2 {
		t.Fatalf("%d batches applied (%d attempts), want only the first (and the failed one tried)", len(e.applies), e.applyCalls)
	}
	checkStoppedAt(t, e, at(0, 2))
}

// checkStoppedAt: after a failure, nothing past upTo was committed and the
// loop polled no further (steps are left).
func checkStoppedAt(t *testing.T, e *fakeEnv, upTo Position) {
	t.Helper()
	for _, c := range e.commits {
		if !reflect.DeepEqual(c, upTo) {
			t.Fatalf("committed %v, beyond %v", c, upTo)
		}
	}
	if len(e.steps) == 0 {
		t.Fatal("the loop went on polling after the failure")
	}
}

// TestPollTimedFlush: a batch that does not become durable by itself gets
// a timed flush FlushInterval after it was applied (not before), and its
// offsets are committed once that flush ends. One flush at a time.
func TestPollTimedFlush(t *testing.T) {
	const interval = time.Second
	var start time.Time
	e, ctx := newLoopEnv(t,
		[]fakeStep{{recs: recs(0, 0, 1), do: set(func(e *fakeEnv) { start = e.clock })}},
		idle(int(interval/durableCheckEvery)+10),
	)
	e.holdFlushes = true
	e.steps[25].do = set(func(e *fakeEnv) { e.holdFlushes = false })
	if err := runLoop(ctx, t, e, interval, nil); err != nil {
		t.Fatal(err)
	}
	if len(e.flushStarts) != 1 {
		t.Fatalf("%d timed flushes started (the first at %v), want 1", len(e.flushStarts), e.flushStarts[:min(len(e.flushStarts), 1)])
	}
	if d := e.flushStarts[0].Sub(start); d < interval || d > interval+durableCheckEvery {
		t.Fatalf("the timed flush started %v after the batch was applied, want FlushInterval (%v) after, within %v", d, interval, durableCheckEvery)
	}
	if want := []Position{at(0, 2)}; !reflect.DeepEqual(e.commits, want) {
		t.Fatalf("commits %v, want %v once the flush ended", e.commits, want)
	}
}

// TestPollCheckpoints: with Config.Checkpoint, the loop asks for a
// checkpoint once CheckpointInterval has passed with a batch applied since
// the last, whether the stream keeps flowing or has gone idle, and not
// while nothing new was applied.
func TestPollCheckpoints(t *testing.T) {
	const every = time.Second
	var first, second time.Time
	steps := idle(60)
	steps[0] = fakeStep{recs: recs(0, 0, 1), do: set(func(e *fakeEnv) { first = e.clock })}
	steps[40] = fakeStep{recs: recs(0, 2, 3), do: set(func(e *fakeEnv) { second = e.clock })}
	e, ctx := newLoopEnv(t, steps)
	e.autoDurable = true
	cfg := Config{FlushInterval: 200 * time.Millisecond, CheckpointInterval: every, Checkpoint: func(context.Context, []byte) error { return nil }}
	if _, err := runLoopConfig(ctx, e, cfg, nil); err != nil {
		t.Fatal(err)
	}
	if len(e.checkpoints) != 2 {
		t.Fatalf("checkpoints at %v, want 2 (one per batch, after the interval); batches at %v and %v, clock at the end %v", e.checkpoints, first, second, e.clock)
	}
	if d := e.checkpoints[0].Sub(first); d < 0 || d > every+cfg.FlushInterval {
		t.Fatalf("the first checkpoint came %v after the batch, want within the interval and one idle poll", d)
	}
	if e.checkpoints[1].Before(second) || e.checkpoints[1].Sub(e.checkpoints[0]) < every {
		t.Fatalf("the second checkpoint at %v: the second batch at %v, the first checkpoint at %v", e.checkpoints[1], second, e.checkpoints[0])
	}
}

// TestPollRetriesAFailedCheckpoint: a checkpoint that fails (an analytic
// did not catch up in time) is asked for again after the interval while
// no record comes, until one succeeds; then no more while idle.
func TestPollRetriesAFailedCheckpoint(t *testing.T) {
	const every = time.Second
	steps := idle(60)
	steps[0] = fakeStep{recs: recs(0, 0, 1)}
	e, ctx := newLoopEnv(t, steps)
	e.autoDurable = true
	e.checkpointsFail = 2
	cfg := Config{FlushInterval: 200 * time.Millisecond, CheckpointInterval: every, Checkpoint: func(context.Context, []byte) error { return nil }}
	if _, err := runLoopConfig(ctx, e, cfg, nil); err != nil {
		t.Fatal(err)
	}
	if len(e.checkpoints) != 3 {
		t.Fatalf("checkpoints at %v, want 3 (two that failed, then one that succeeded, then none while idle); clock at the end %v", e.checkpoints, e.clock)
	}
	for i := 1; i < len(e.checkpoints); i++ {
		if d := e.checkpoints[i].Sub(e.checkpoints[i-1]); d < every || d > every+cfg.FlushInterval {
			t.Fatalf("checkpoint %d came %v after the one before, want the interval and at most one idle poll: %v", i+1, d, e.checkpoints)
		}
	}
}

// TestPollCollectsGarbageOverTheMemoryLimit: while the Go runtime holds
// more than its memory limit, the loop collects garbage before it polls
// again, at most once every forcedGCEvery; under the limit, never.
func TestPollCollectsGarbageOverTheMemoryLimit(t *testing.T) {
	const limit = 100 << 20
	steps := idle(60)
	steps[0] = fakeStep{recs: recs(0, 0, 1)}
	e, ctx := newLoopEnv(t, steps)
	e.autoDurable = true
	start := e.clock
	const overFor = 4 * time.Second // then under the limit
	var gcs []time.Time
	_, err := runLoopState(ctx, e, Config{FlushInterval: 200 * time.Millisecond}, decode.New(decode.FormatText, nil), func(s *pollState) {
		s.goMemory = func() (int64, int64) {
			if e.now().Sub(start) < overFor {
				return limit + 1, limit
			}
			return limit, limit
		}
		s.gc = func() { gcs = append(gcs, e.now()) }
	})
	if err != nil {
		t.Fatal(err)
	}
	if e.clock.Sub(start) < 2*overFor {
		t.Fatalf("the script ran %v, want at least %v", e.clock.Sub(start), 2*overFor)
	}
	if len(gcs) < int(overFor/forcedGCEvery)-1 {
		t.Fatalf("%d forced collections in %v over the limit, want one every %v: %v", len(gcs), overFor, forcedGCEvery, gcs)
	}
	for i, at := range gcs {
		if at.Sub(start) >= overFor {
			t.Fatalf("a collection %v after the start, with the memory under the limit from %v", at.Sub(start), overFor)
		}
		if i > 0 && at.Sub(gcs[i-1]) < forcedGCEvery {
			t.Fatalf("collections %v apart (%v), want at least %v", at.Sub(gcs[i-1]), gcs, forcedGCEvery)
		}
	}
}

// TestPollDeadLettersCovered: a record dead-lettered is covered by the
// position of the batch of its poll; one whose dead letter fails blocks
// its partition there (the position stops at it, nothing after it is
// applied) until the dead letter is acknowledged, and the position passes
// it with the next batch, even one with no records of its own.
func TestPollDeadLettersCovered(t *testing.T) {
	e, ctx := newLoopEnv(t,
		[]fakeStep{{recs: []fakeRec{rec(0, 0), {0, 1, "not an edge"}, rec(0, 2)}}}, idle(2),
		[]fakeStep{{recs: []fakeRec{rec(1, 0), {1, 1, "not an edge"}, rec(1, 2)}, do: set(func(e *fakeEnv) { e.dlFail[1] = true })}}, idle(2),
		[]fakeStep{{do: func(e *fakeEnv) { e.ack() }}},
		[]fakeStep{{empty: []int32{1}}}, idle(2),
		[]fakeStep{{recs: recs(1, 2, 3)}}, idle(2),
	)
	e.autoDurable = true
	if err := runLoop(ctx, t, e, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range e.applies {
		got = append(got, fmt.Sprintf("%v %d %v", a.edges, a.records, fmtOffsets(a.pos)))
	}
	want := []string{
		"[[0 0] [0 2]] 3 edges[0:3]",     // the dead letter of p0@1 is covered
		"[[1 0]] 1 edges[0:3,1:1]",       // p1 is cut at its record 1
		"[] 1 edges[0:3,1:2]",            // acknowledged: covered by an empty batch
		"[[1 2] [1 3]] 2 edges[0:3,1:4]", // p1 goes on after it
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("applied (edges, records, position):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want := []int64{1, 1}; !reflect.DeepEqual(e.dlWrites, want) {
		t.Fatalf("dead letters written of offsets %v, want %v", e.dlWrites, want)
	}
	if last := e.commits[len(e.commits)-1]; !reflect.DeepEqual(last, at(0, 3, 1, 4)) {
		t.Fatalf("last commit %v, want p0 3 p1 4", last)
	}
}

// failingKeys is a key dictionary that fails for the key "boom" and
// grows by one for any other new key.
type failingKeys struct {
	e   *fakeEnv
	ids map[string]uint64
}

var errKeys = errors.New("fake dictionary failed")

func (k *failingKeys) ID(key string) (uint64, error) {
	if key == "boom" {
		return 0, errKeys
	}
	if id, ok := k.ids[key]; ok {
		return id, nil
	}
	id := keydict.KeyBase + uint64(len(k.ids))
	k.ids[key] = id
	k.e.mu.Lock()
	k.e.nkeys++
	k.e.mu.Unlock()
	return id, nil
}

// TestPollDictionaryFailureStops: when the key dictionary fails (resolving
// a key, or syncing new keys), the loop ends with its error without
// applying the poll at hand: a restart consumes it again.
func TestPollDictionaryFailureStops(t *testing.T) {
	for _, c := range []struct {
		name string
		poll []fakeRec
		sync error
	}{
		{"resolve", []fakeRec{rec(0, 1), {0, 2, "a boom"}}, nil},
		{"sync", []fakeRec{rec(0, 1), {0, 2, "a b"}}, errKeys},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, ctx := newLoopEnv(t,
				[]fakeStep{{recs: []fakeRec{rec(0, 0)}}}, idle(2),
				[]fakeStep{{recs: c.poll, do: set(func(e *fakeEnv) { e.syncErr = c.sync })}}, idle(5),
			)
			e.autoDurable = true
			err := runLoop(ctx, t, e, time.Hour, &failingKeys{e: e, ids: map[string]uint64{}})
			if !errors.Is(err, errKeys) {
				t.Fatalf("run returned %v, want the dictionary's error", err)
			}
			if len(e.applies) != 1 || !reflect.DeepEqual(e.applies[0].pos, at(0, 1)) {
				t.Fatalf("applied %+v, want only the first poll (p0 up to 1)", e.applies)
			}
			checkStoppedAt(t, e, at(0, 1))
		})
	}
}

// TestPollAssignment: partitions taken into history join the position of
// the next batch at their start offsets; an accepted assignment has the
// durable offsets committed at once; a changed source ends the loop once
// the batches in flight are applied, without polling again.
func TestPollAssignment(t *testing.T) {
	errSource := errors.New("fake source changed")
	ncommits := -1
	e, ctx := newLoopEnv(t,
		[]fakeStep{{recs: recs(0, 0, 1)}}, idle(2),
		[]fakeStep{{do: set(func(e *fakeEnv) {
			e.assigned[2], e.pending, e.commitAssigned = true, at(2, 10), true
			ncommits = len(e.commits)
		})}},
		[]fakeStep{{recs: recs(0, 2, 3)}},
		[]fakeStep{{recs: recs(0, 4, 5), do: set(func(e *fakeEnv) { e.fatal = errSource })}},
		idle(5),
	)
	e.autoDurable, e.applyDelay = true, 10*time.Millisecond
	inflight, err := runLoopInflight(ctx, e, time.Hour, nil)
	if !errors.Is(err, errSource) {
		t.Fatalf("run returned %v, want the source's error", err)
	}
	if inflight != 0 {
		t.Fatalf("run returned with %d batches in flight, want them applied first", inflight)
	}
	var got []string
	for _, a := range e.applies {
		got = append(got, fmtOffsets(a.pos))
	}
	if want := []string{"edges[0:2]", "edges[0:4,2:10]", "edges[0:6,2:10]"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("applied positions %v, want %v", got, want)
	}
	if ncommits < 0 || len(e.commits) <= ncommits || !reflect.DeepEqual(e.commits[ncommits], at(0, 2)) {
		t.Fatalf("commits %v: want the durable p0 2 committed right after the assignment (commit %d)", e.commits, ncommits)
	}
	if len(e.steps) != 5 {
		t.Fatalf("%d idle polls left of 5: the loop polled after the source changed", len(e.steps))
	}
}
