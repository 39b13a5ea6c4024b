package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// The poll loop: the state machine of exactly-once ingestion (doc.go has
// the lifecycle). pollState holds its state and takes its steps; pollEnv
// is everything it needs from outside (the Kafka client, the store, the key
// dictionary, the dead letters, the clock): liveEnv (pollenv.go) in
// production, a fake in the unit tests.
//
//	run: takeAssignment -> settle (take back finished jobs, commit what is
//	    durable, allow a waiting rebalance once nothing is in flight)
//	    -> poll -> handleFetches (unblock, decode, dead letters, keys)
//	    -> dispatch the job to the applier; on ctx done: drain

// pollEnv is the poll loop's environment. Every method but apply and
// flushAsync (called by the applier goroutine, one at a time, in order) is
// called by the poll loop's goroutine only.
type pollEnv interface {
	batchApplier

	// now is the clock of every age and deadline the loop keeps.
	now() time.Time

	// poll returns what the client has buffered (at most MaxPollRecords),
	// at once if until is zero, else waiting for records until then or
	// until ctx ends; fetch errors are counted and logged unless the
	// client is closed or ctx ended. A poll that returns records holds
	// rebalances off until allowRebalance.
	poll(ctx context.Context, until time.Time) kgo.Fetches
	// rebalanceWaiting reports whether a rebalance waits for
	// allowRebalance.
	rebalanceWaiting() bool
	// allowRebalance lets a waiting rebalance run (its callbacks flush and
	// commit on a revoke, judge an assignment; see onRevoked).
	allowRebalance()
	// takeAssignment returns polled with the partitions newly taken into
	// the store's history added at their start offsets (never modifying
	// polled), whether an accepted assignment wants the durable offsets
	// committed, and the error that ends Run if the source changed.
	takeAssignment(polled Position) (next Position, commit bool, err error)
	// commit commits the durable offsets of the assigned partitions (a
	// failure is logged: the store's position is the truth).
	commit(ctx context.Context)

	// durableSeq reads the store's durable sequence number.
	durableSeq() (uint64, error)
	// markDurable records pos, the position after the batch of sequence
	// number seq, as durable unless a newer one is recorded (a blocking
	// flush on revoke), and reports whether it did.
	markDurable(seq uint64, pos Position) bool

	// keys is the key dictionary's size (0 without one); syncKeys makes
	// its new keys durable.
	keys() int
	syncKeys() error

	// deadLetter writes the dead letters of one poll (deadletter.go) and
	// blocks each partition whose dead letter failed at its record; it
	// reports whether it blocked any, or ctx's error if ctx ended first.
	deadLetter(ctx context.Context, dead []deadRecord) (blocked bool, err error)
	// cuts returns the offset each blocked partition is cut at (nil: none).
	cuts() map[tp]int64
	// holdCuts returns the cut of each partition an export holds whose
	// records in fetches reach it, and pauses those partitions (cut.go);
	// endHolds, called after the poll is decoded, resumes them at their
	// cut once the export released them; holding reports that it waits
	// to.
	holdCuts(fetches kgo.Fetches) map[tp]int64
	endHolds()
	holding() bool
	// noteEnds records the brokers' end offsets (high watermarks) a poll's
	// fetches gave, for how far behind ingestion is (Ingester.Behind).
	noteEnds(lags []partitionLag)
	// unblockAcked resumes the blocked partitions whose dead letter is
	// acknowledged (only right after a poll returned something) and
	// returns polled advanced past their records and how many they are.
	unblockAcked(polled Position) (Position, int)
	// holdLost is told of partitions whose log lost records past the
	// position while they were consumed (their fetch resumed at the log
	// start: logstart.go) and returns those to hold: none of their records
	// is decoded, and their fetching pauses (with AcceptLostRecords none:
	// a WARN names what was lost, and the records are taken).
	holdLost(lost []LostRecords) []LostRecords
}

// batchApplier is what the applier goroutine needs (pipeline.go).
type batchApplier interface {
	// apply hands j's batch to the store, bound to the position j.pos,
	// publishes that position as applied, and returns the batch's
	// sequence number.
	apply(j *applyJob) (uint64, error)
	// flushAsync starts a background flush of everything applied and
	// returns the sequence number that is durable once it ends.
	flushAsync() (uint64, error)
	// checkpoint makes everything applied durable and runs
	// Config.Checkpoint (a job that asks for it, after its batch). owed:
	// Config.Checkpoint failed (logged), so the poll loop asks again
	// after the interval, with or without new records.
	checkpoint() (owed bool, err error)
}

// pollState is the poll loop's state. Owned by the poll loop's goroutine.
type pollState struct {
	env           pollEnv
	flushInterval time.Duration
	decs          map[string]decode.Decoder
	rec           decode.Record  // decodeRecord's scratch
	topicIndex    map[string]int // each topic's index in Config.Topics (record references)
	// writesTopic is Config.Writes' topic ("": none), whose records are
	// decoded into writes; waiters hear of those that are dead letters.
	writesTopic string
	// graph is Config.Graph; otherGraphLogged is when records of each
	// other graph were last logged. Owned by the poll loop's goroutine.
	graph            string
	otherGraphLogged map[string]time.Time
	// wr is the writes topic's part (nil: none), which answers the writes
	// that are dead letters.
	wr *writesTopic
	// accumulate is Config.Accumulate (nil: none).
	accumulate *engine.TypeSet
	log        *slog.Logger
	metrics    *Metrics

	// p is the pipeline to the applier.
	// INVARIANT: allowRebalance is called only when p.inflight == 0: a poll
	// that returned records holds rebalances off until then, so a revoke's
	// flush covers every record polled so far and no batch of a revoked
	// partition is applied after it. While batches keep coming the
	// pipeline rarely empties by itself: when a rebalance is waiting (or
	// allowRebalanceEvery passed) no batch is handed over until the
	// applier has caught up (settle).
	p *pipeline
	// polled is the position after every batch handed to the applier.
	// INVARIANT: it equals the applied position whenever nothing is in
	// flight; it is never modified in place (jobs in flight share its
	// maps), only replaced.
	polled Position
	// d is which applied batches the store has made durable.
	d durability
	// lastAllow is when allowRebalance was last called.
	lastAllow time.Time
	// commitAssigned: an accepted assignment wants the durable offsets
	// committed.
	commitAssigned bool
	// Memory (holdMemory): goMemory and gc are budget.GoMemory and
	// runtime.GC (fakes in tests); gcAt is when the last forced
	// collection began.
	goMemory func() (held, limit int64)
	gc       func()
	gcAt     time.Time
	// Checkpoints (Config.Checkpoint): ckEvery is the interval (0: none),
	// ckAt when the last was asked for, ckDirty that a batch was handed
	// over since without one, or that the last failed (owed).
	ckEvery time.Duration
	ckAt    time.Time
	ckDirty bool
	// owner: partitioned mode's check of each record (nil: not
	// partitioned).
	owner *ownerCheck
}

// newPollState starts the poll loop's state at polled, the position
// applied so far; wr is the writes topic's part (nil: none).
func newPollState(env pollEnv, p *pipeline, polled Position, cfg *Config, decs map[string]decode.Decoder, wr *writesTopic) *pollState {
	ti := map[string]int{}
	for i, t := range cfg.Topics {
		ti[t] = i
	}
	s := &pollState{env: env, flushInterval: cfg.FlushInterval, decs: decs, topicIndex: ti, log: cfg.Logger, metrics: cfg.Metrics,
		p: p, polled: polled, lastAllow: env.now(), ckAt: env.now(),
		goMemory: budget.GoMemory, gc: runtime.GC}
	if cfg.Checkpoint != nil {
		s.ckEvery = cfg.CheckpointInterval
	}
	if cfg.Accumulate.Len() > 0 {
		acc := cfg.Accumulate
		s.accumulate = &acc
	}
	if cfg.Writes != nil {
		s.writesTopic, s.wr = cfg.Writes.Topic, wr
		s.graph, s.otherGraphLogged = cfg.Graph, map[string]time.Time{}
	}
	return s
}

// durableCheckEvery is how often an idle poll loop looks whether the
// store made applied batches durable, to commit their offsets; a busy one
// looks at most every durableCheckFloor.
const (
	durableCheckEvery = 50 * time.Millisecond
	durableCheckFloor = 5 * time.Millisecond
)

// allowRebalanceEvery bounds how long the poll loop keeps batches in
// flight without a pause in which a rebalance may run, should franz-go's
// signal that one is waiting go amiss.
const allowRebalanceEvery = time.Second

// blockedPollEvery bounds an idle poll while a partition is blocked on its
// dead letter, so that it resumes soon after the dead letter is written.
const blockedPollEvery = 200 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// run polls, decodes and hands batches to the applier until ctx ends (it
// returns nil with nothing in flight) or the store, the key dictionary or
// the source fails (it returns why; a failure of the dictionary or the
// source leaves the poll at hand unapplied).
func (s *pollState) run(ctx context.Context) error {
	for {
		if err := s.takeAssignment(); err != nil {
			return err
		}
		if err := s.settle(ctx); err != nil {
			return err
		}
		s.holdMemory()
		fetches, ok, err := s.poll(ctx)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return s.drain() // this poll is not applied
		}
		j, stop, err := s.handleFetches(ctx, fetches)
		if err != nil || stop {
			return err
		}
		s.dispatch(j)
	}
}

// forcedGCEvery is the least time between two collections the poll loop
// forces (holdMemory): a live heap at the limit does not make every poll
// wait for one.
const forcedGCEvery = time.Second

// holdMemory collects garbage on the poll loop's goroutine, so that the
// next poll waits for it, when the Go runtime holds more than its memory
// limit (GOMEMLIMIT: serve sets it from --memory-budget), at most once
// every forcedGCEvery. The limit is soft: a collection starved of CPU lets
// the heap grow past it while ingestion and the analytics that follow it
// keep allocating; ingestion, which allocates the most, waits for the
// collection instead.
func (s *pollState) holdMemory() {
	now := s.env.now()
	if !s.gcAt.IsZero() && now.Sub(s.gcAt) < forcedGCEvery {
		return
	}
	if held, limit := s.goMemory(); held <= limit {
		return
	}
	s.gcAt = now
	s.gc()
}

// takeAssignment adds the partitions taken into history to polled, at
// their start offsets, so that the next recorded position names them; a
// changed source ends the loop once nothing is in flight.
func (s *pollState) takeAssignment() error {
	next, commit, err := s.env.takeAssignment(s.polled)
	if err != nil {
		if derr := s.drain(); derr != nil {
			return derr
		}
		return err
	}
	s.polled = next
	s.commitAssigned = s.commitAssigned || commit
	return nil
}

// settle does what is due between polls: take back finished jobs without
// waiting, commit what the store has made durable (and the offsets of a
// new assignment), let a waiting rebalance run, and make sure a job is
// free to fill.
func (s *pollState) settle(ctx context.Context) error {
	if err := s.collect(); err != nil {
		return err
	}
	if (len(s.d.batches) > 0 || s.d.flushing) && s.env.now().Sub(s.d.checked) >= durableCheckFloor {
		s.commitDurable(ctx)
	}
	if s.commitAssigned {
		s.commitAssigned = false
		s.env.commit(ctx)
	}
	if err := s.allowRebalance(); err != nil {
		return err
	}
	if len(s.p.free) == 0 {
		return s.finish(<-s.p.done)
	}
	return nil
}

// collect takes back the jobs the applier has finished, without waiting.
func (s *pollState) collect() error {
	for s.p.inflight > 0 {
		select {
		case j := <-s.p.done:
			if err := s.finish(j); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// allowRebalance lets a waiting rebalance run once nothing is in flight,
// draining the pipeline first if one waits (or allowRebalanceEvery
// passed); see the INVARIANT at p.
func (s *pollState) allowRebalance() error {
	if s.p.inflight > 0 && (s.env.rebalanceWaiting() || s.env.now().Sub(s.lastAllow) >= allowRebalanceEvery) {
		if err := s.drain(); err != nil {
			return err
		}
	}
	if s.p.inflight == 0 {
		s.env.allowRebalance()
		s.lastAllow = s.env.now()
	}
	return nil
}

// countTaken adds j's records and bytes to the metrics, once nothing of
// its poll is left to apply.
func (s *pollState) countTaken(j *applyJob) {
	for _, c := range j.taken {
		s.metrics.Records.WithLabelValues(c.topic).Add(float64(c.records))
		s.metrics.Bytes.WithLabelValues(c.topic).Add(float64(c.bytes))
	}
	j.taken = j.taken[:0]
}

// finish takes back a job the applier is done with: an applied batch
// waits to become durable; a started flush tells its target.
func (s *pollState) finish(j *applyJob) error {
	s.p.inflight--
	if j.err != nil {
		return j.err
	}
	s.countTaken(j)
	if j.records > 0 {
		s.d.batches = append(s.d.batches, appliedBatch{seq: j.seq, pos: j.pos, at: s.env.now()})
	}
	if j.flushed {
		s.d.target, s.d.targetKnown = j.flushTarget, true
	}
	if j.ckOwed {
		s.ckDirty = true // retried once the interval has passed again
	}
	s.p.free = append(s.p.free, j)
	return nil
}

// drain waits until nothing is in flight.
func (s *pollState) drain() error {
	for s.p.inflight > 0 {
		if err := s.finish(<-s.p.done); err != nil {
			return err
		}
	}
	return nil
}

// flushDue reports whether to start a timed flush: a batch has been
// applied for FlushInterval without becoming durable, and no flush of
// ours is running. While MemGraphs fill up and flush by themselves more
// often than that, no timed flush is needed; and starting one while a
// flush runs would block Apply until that flush ends.
func (s *pollState) flushDue() bool {
	return !s.d.flushing && len(s.d.batches) > 0 && s.env.now().Sub(s.d.batches[0].at) >= s.flushInterval
}

// poll returns the next fetches. With batches in flight it takes what the
// client has buffered without waiting, and if that is nothing (and no
// flush is due) waits for the applier instead and reports !ok. Otherwise
// it waits for records: while something applied is not durable yet no
// longer than durableCheckEvery, so that offsets are committed soon after
// a flush (ours or the store's own) ends, and no longer than until a timed
// flush is due, so that an idle stream still becomes durable within about
// FlushInterval.
func (s *pollState) poll(ctx context.Context) (fetches kgo.Fetches, ok bool, err error) {
	if s.p.inflight > 0 {
		fetches = s.env.poll(ctx, time.Time{})
		if fetches.NumRecords() == 0 && !s.flushDue() && ctx.Err() == nil {
			return nil, false, s.finish(<-s.p.done)
		}
		return fetches, true, nil
	}
	now := s.env.now()
	deadline := now.Add(s.flushInterval)
	if s.d.flushing || len(s.d.batches) > 0 {
		deadline = now.Add(min(s.flushInterval, durableCheckEvery))
	}
	if !s.d.flushing && len(s.d.batches) > 0 {
		deadline = minTime(deadline, s.d.batches[0].at.Add(s.flushInterval))
	}
	if len(s.env.cuts()) > 0 || s.env.holding() {
		// A blocked partition resumes right after a poll once its dead
		// letter is acknowledged, a held one once its export released it.
		deadline = minTime(deadline, now.Add(blockedPollEvery))
	}
	return s.env.poll(ctx, deadline), true, nil
}

// handleFetches makes a job of a poll: partitions whose dead letter is now
// acknowledged resume after it, partitions whose log lost records past
// the position are held (heldLost), the records are decoded, the
// undecodable ones dead-lettered, new keys synced. It returns the job (nil: nothing to
// hand over), or stop (with nothing in flight) when ctx ended, or the
// error that ends Run without applying the poll.
func (s *pollState) handleFetches(ctx context.Context, fetches kgo.Fetches) (j *applyJob, stop bool, err error) {
	j = s.p.free[len(s.p.free)-1]
	s.p.free = s.p.free[:len(s.p.free)-1]
	j.reset()
	keysBefore := s.env.keys()
	// Only while this poll holds rebalances off (it returned something):
	// SetOffsets must not race a revoke.
	unblocked := 0
	if len(fetches) > 0 {
		s.polled, unblocked = s.env.unblockAcked(s.polled)
	}
	held := withCuts(s.heldLost(fetches), s.env.holdCuts(fetches))
	defer s.env.endHolds() // after this poll is decoded with the hold's cuts
	dec := s.decodeInto(j, fetches, withCuts(s.env.cuts(), held))
	if dec.fatal == nil && len(dec.dead) > 0 {
		// Before the position past them can become durable.
		blocked, err := s.env.deadLetter(ctx, dec.dead)
		if err != nil {
			return nil, true, s.drain() // ctx ended; this poll is not applied
		}
		if blocked {
			// Those partitions stop at the record whose dead letter
			// failed: decode the poll again without it and what follows
			// it in its partition.
			j.reset()
			dec = s.decodeInto(j, fetches, withCuts(s.env.cuts(), held))
		}
	}
	if dec.fatal != nil {
		// Stop without applying this poll; a restart resumes from the
		// durable position and consumes it again.
		return nil, true, dec.fatal
	}
	s.countDecoded(j, dec)
	for _, f := range dec.deadWrites {
		s.wr.deadLettered(f)
	}
	next := dec.next
	if unblocked > 0 {
		// The dead-lettered records are covered by this batch.
		j.records += unblocked
		if next == nil {
			next = s.polled
		}
	}
	// Everything needed is in j now: the records' memory goes back to the
	// client's pool.
	fetches.EachRecord(func(r *kgo.Record) { r.Recycle() })
	if s.env.keys() != keysBefore {
		// New key ids must be durable before any data using them can be:
		// the store may flush this batch in the background at once.
		if err := s.env.syncKeys(); err != nil {
			return nil, true, fmt.Errorf("ingest: key dictionary: %w", err)
		}
	}
	if j.records > 0 {
		j.pos = next
	}
	return j, false, nil
}

// heldLost finds the partitions of fetches whose records begin past the
// position with the log now starting past it too: the log lost the
// records between while they were consumed (retention outran ingestion;
// franz-go then resumes at the log start without a word). It returns a
// cut at the position for each that the environment holds.
func (s *pollState) heldLost(fetches kgo.Fetches) map[tp]int64 {
	var lost []LostRecords
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		if cur, ok := s.polled.Get(fp.Topic, fp.Partition); ok && fp.Records[0].Offset > cur && fp.LogStartOffset > cur {
			lost = append(lost, LostRecords{Topic: fp.Topic, Partition: fp.Partition, Need: cur, LogStart: fp.LogStartOffset})
		}
	})
	if len(lost) == 0 {
		return nil
	}
	held := map[tp]int64{}
	for _, l := range s.env.holdLost(lost) {
		held[tp{l.Topic, l.Partition}] = l.Need
	}
	return held
}

// withCuts is cuts with extra's added (cuts itself when extra is empty):
// a partition in both is cut at the lesser offset.
func withCuts(cuts, extra map[tp]int64) map[tp]int64 {
	if len(extra) == 0 {
		return cuts
	}
	all := make(map[tp]int64, len(cuts)+len(extra))
	for k, o := range cuts {
		all[k] = o
	}
	for k, o := range extra {
		if c, ok := all[k]; !ok || o < c {
			all[k] = o
		}
	}
	return all
}

// dispatch hands j (made by handleFetches) to the applier, asking for a
// timed flush after it if one is due; a job with neither goes back.
//
// Timed flushes do not stop the loop: the applier asks the store to
// freeze its MemGraph and flush it in the background right after the
// batch; commitDurable commits the offsets once the store's durable seq
// covers it.
func (s *pollState) dispatch(j *applyJob) {
	j.flush = s.flushDue()
	// A checkpoint once the interval has passed and a batch came since
	// the last (this one, or an earlier: an idle stream's poll, which
	// returns at least every FlushInterval, asks for it too).
	if now := s.env.now(); s.ckEvery > 0 && (s.ckDirty || j.records > 0) && now.Sub(s.ckAt) >= s.ckEvery {
		j.checkpoint, s.ckAt, s.ckDirty = true, now, false
	} else if j.records > 0 {
		s.ckDirty = true
	}
	if j.records == 0 && !j.flush && !j.checkpoint {
		s.countTaken(j) // nothing to apply: what it took in is final
		s.p.free = append(s.p.free, j)
		return
	}
	if j.flush {
		s.d.flushing, s.d.targetKnown = true, false
	}
	if j.records > 0 {
		s.polled = j.pos
	}
	s.p.inflight++
	s.p.jobs <- j
}

// durability is the poll loop's view of which applied batches the store
// has made durable (by timed flushes or by MemGraphs filling up).
type durability struct {
	// batches applied and not yet known durable.
	// INVARIANT: in seq order (the applier applies in order); a batch
	// leaves only once the store's durable seq covers it.
	batches []appliedBatch
	checked time.Time // the last look at the store's durable seq
	// flushing: a timed flush of ours runs; its target (the seq that is
	// durable when it ends) is known once the applier started it.
	// INVARIANT: at most one timed flush of ours runs (flushDue).
	flushing, targetKnown bool
	target                uint64
}

// appliedBatch is an applied batch: its store sequence number and the
// position after it.
type appliedBatch struct {
	seq uint64
	pos Position
	at  time.Time // when the poll loop learnt it was applied
}

// commitDurable takes the batches the store has made durable off d and
// commits the position after the newest of them. The store records with
// each flush the position of the newest batch it covers, so this is the
// position the store would resume from after a crash.
func (s *pollState) commitDurable(ctx context.Context) {
	d := &s.d
	durableSeq, err := s.env.durableSeq()
	if err != nil {
		return
	}
	now := s.env.now()
	d.checked = now
	if d.flushing && d.targetKnown && durableSeq >= d.target {
		d.flushing = false
	}
	n := 0
	for n < len(d.batches) && d.batches[n].seq <= durableSeq {
		n++
	}
	if n == 0 {
		return
	}
	newest := d.batches[n-1]
	d.batches = append(d.batches[:0], d.batches[n:]...)
	if s.env.markDurable(newest.seq, newest.pos) {
		s.env.commit(ctx)
		s.metrics.FlushSecs.Observe(now.Sub(newest.at).Seconds())
	}
}

// decoded is what decodeInto made of a poll.
type decoded struct {
	// next is the position after the records decoded (nil: none).
	next Position
	// dead are the records to dead-letter, with the reasons.
	dead []deadRecord
	// fatal: the key dictionary failed (Run returns it).
	fatal error
	// deadWrites are the writes among dead, for their waiters.
	deadWrites []writeFailure
	// otherGraph counts the writes-topic records skipped as addressed to
	// another graph, by graph.
	otherGraph map[string]int
	// For the metrics once the poll is final (countDecoded): per topic.
	records, bytes, decodeErrs map[string]int
	lag                        []partitionLag
}

type partitionLag struct {
	tp
	lag int64 // the end offset minus the position after the poll
	end int64 // the end offset (the fetch's high watermark)
}

// decodeInto decodes fetches into j's batch (and produce timestamps) and
// returns the position after them, computed from polled, and the records
// to dead-letter. Records of a partition below its offset in polled were
// applied before and are skipped (they come again only if the client's
// position went back, e.g. after partitions were lost with batches in
// flight); records of a partition in cuts from its offset there on are
// left out (its dead letter could not be written: see deadletter.go), and
// its position stops at that offset.
func (s *pollState) decodeInto(j *applyJob, fetches kgo.Fetches, cuts map[tp]int64) (dec decoded) {
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if dec.fatal != nil {
			return
		}
		cutAt, isCut := cuts[tp{fp.Topic, fp.Partition}]
		recs := s.toDecode(fp, cutAt, isCut)
		if len(recs) == 0 {
			return
		}
		if dec.next == nil {
			dec.next = s.polled.Clone()
			dec.records, dec.bytes, dec.decodeErrs = map[string]int{}, map[string]int{}, map[string]int{}
		}
		ti, known := s.topicIndex[fp.Topic]
		if !known {
			ti = -1
		}
		nbytes := 0
		for _, r := range recs {
			nbytes += len(r.Value)
			j.stamps = append(j.stamps, r.Timestamp)
			if dec.fatal = s.decodeOne(j, &dec, r, recordRef(ti, r.Partition, r.Offset)); dec.fatal != nil {
				return
			}
		}
		j.records += len(recs)
		dec.records[fp.Topic] += len(recs)
		dec.bytes[fp.Topic] += nbytes
		o := recs[len(recs)-1].Offset + 1
		if isCut {
			o = cutAt // the records between are not records (a gap)
		}
		if cur, ok := dec.next.Get(fp.Topic, fp.Partition); !ok || o > cur {
			dec.next.Set(fp.Topic, fp.Partition, o)
		}
		dec.lag = append(dec.lag, partitionLag{tp{fp.Topic, fp.Partition}, max(fp.HighWatermark-o, 0), fp.HighWatermark})
	})
	return dec
}

// toDecode is the records of fp to decode: those at or after the
// position polled so far (records fetched again below it are skipped,
// with a WARN), and, when its partition is cut (isCut), before cutAt.
func (s *pollState) toDecode(fp kgo.FetchTopicPartition, cutAt int64, isCut bool) []*kgo.Record {
	recs := fp.Records
	if len(recs) == 0 {
		return nil
	}
	if cur, ok := s.polled.Get(fp.Topic, fp.Partition); ok && recs[0].Offset < cur {
		n := 0
		for n < len(recs) && recs[n].Offset < cur {
			n++
		}
		s.log.Warn("skipping records fetched again below the position already applied", "topic", fp.Topic, "partition", fp.Partition, "from", recs[0].Offset, "records", n, "position", cur)
		recs = recs[n:]
	}
	if isCut {
		n := 0
		for n < len(recs) && recs[n].Offset < cutAt {
			n++
		}
		recs = recs[:n]
	}
	return recs
}

// decodeOne decodes r (its reference ref) into j: a write of the writes
// topic into j.writes (skipped if addressed to another graph), any other
// record into j's batch; a record at fault goes to dec.dead. It returns
// an error only when the key dictionary failed.
func (s *pollState) decodeOne(j *applyJob, dec *decoded, r *kgo.Record, ref uint64) error {
	dc := s.decs[r.Topic]
	var err error
	var w *pendingWrite
	if r.Topic == s.writesTopic {
		if g, other := otherGraph(r, s.graph); other {
			if dec.otherGraph == nil {
				dec.otherGraph = map[string]int{}
			}
			dec.otherGraph[g]++
			return nil
		}
		w, err = decodeWrite(dc, r, ref, s.accumulate)
		if err == nil {
			j.writes = append(j.writes, w)
			return nil
		}
	} else {
		j.batch.Tag(ref)
		j.src, j.accumulate = r, s.accumulate
		err = s.decodeChecked(dc, r, j.emit)
		j.src = nil
	}
	if err == nil {
		return nil
	}
	var de *decode.Error
	var me *MisplacedError
	if errors.As(err, &de) || errors.As(err, &me) {
		dec.decodeErrs[r.Topic]++
		dec.dead = append(dec.dead, deadRecord{r: r, reason: err.Error()})
		if w != nil {
			dec.deadWrites = append(dec.deadWrites, writeFailure{w.request, err.Error(), r.Partition, r.Offset})
		}
		return nil
	}
	// The key dictionary failed: the record is not at fault.
	return fmt.Errorf("ingest: key dictionary failed at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
}

// decodeChecked decodes r into emit; in partitioned mode (owner) only once
// every event's source vertex is found to belong to r's partition, else
// it returns a *MisplacedError and emits nothing.
func (s *pollState) decodeChecked(dc decode.Decoder, r *kgo.Record, emit func(decode.Edge)) error {
	c := s.owner
	if c == nil {
		return s.decodeRecord(dc, r, emit)
	}
	c.buf = c.buf[:0]
	if err := s.decodeRecord(dc, r, c.add); err != nil {
		return err
	}
	if err := c.misplaced(r.Partition); err != nil {
		return err
	}
	for _, e := range c.buf {
		emit(e)
	}
	return nil
}

// decodeRecord decodes r with dc: its value, or the whole record (key and
// headers too) when dc reads records (a mapping).
func (s *pollState) decodeRecord(dc decode.Decoder, r *kgo.Record, emit func(decode.Edge)) error {
	rd, ok := dc.(decode.RecordDecoder)
	if !ok {
		return dc.Decode(r.Value, emit)
	}
	s.rec.Key, s.rec.Value, s.rec.Headers = r.Key, r.Value, s.rec.Headers[:0]
	for _, h := range r.Headers {
		s.rec.Headers = append(s.rec.Headers, decode.Header(h))
	}
	err := rd.DecodeRecord(&s.rec, emit)
	s.rec = decode.Record{Headers: s.rec.Headers[:0]} // keeps no record alive
	return err
}

// topicCount is what a poll took in from one topic.
type topicCount struct {
	topic          string
	records, bytes int
}

// countDecoded adds a final decode of a poll to the metrics, except its
// records and bytes, which j keeps until its batch is applied (countTaken).
func (s *pollState) countDecoded(j *applyJob, dec decoded) {
	m := s.metrics
	for t, n := range dec.records {
		j.taken = append(j.taken, topicCount{topic: t, records: n, bytes: dec.bytes[t]})
	}
	for t, n := range dec.decodeErrs {
		m.DecodeErrs.WithLabelValues(t).Add(float64(n))
	}
	for _, l := range dec.lag {
		m.Lag.WithLabelValues(l.topic, strconv.Itoa(int(l.partition))).Set(float64(l.lag))
	}
	if len(dec.lag) > 0 {
		s.env.noteEnds(dec.lag)
	}
	for g, n := range dec.otherGraph {
		m.Writes.WithLabelValues("other_graph").Add(float64(n))
		if last, ok := s.otherGraphLogged[g]; !ok || time.Since(last) >= time.Minute {
			s.otherGraphLogged[g] = time.Now()
			s.log.Warn("skipped records of the writes topic addressed to another graph (two graphs were given one writes topic: give each its own, or leave --writes-topic out); said once a minute per graph, graphtide_writes_total{outcome=\"other_graph\"} counts them",
				"topic", s.writesTopic, "graph", s.graph, "their_graph", g, "records", n)
		}
	}
}
