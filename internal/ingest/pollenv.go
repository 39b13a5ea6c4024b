package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// liveEnv is the poll loop's environment in production (see pollEnv): the
// Ingester's Kafka client, store, key dictionary and dead letters.
type liveEnv struct{ in *Ingester }

var _ pollEnv = liveEnv{}

func (e liveEnv) now() time.Time { return time.Now() }

func (e liveEnv) poll(ctx context.Context, until time.Time) kgo.Fetches {
	in := e.in
	var fetches kgo.Fetches
	if until.IsZero() {
		//nolint:staticcheck // SA1012: franz-go reads a nil context as "return what is buffered, without waiting"
		fetches = in.cl.PollRecords(nil, in.cfg.MaxPollRecords)
	} else {
		pctx, cancel := context.WithDeadline(ctx, until)
		fetches = in.cl.PollRecords(pctx, in.cfg.MaxPollRecords)
		cancel()
	}
	if !fetches.IsClientClosed() && ctx.Err() == nil {
		in.noteFetchErrors(ctx, fetches)
	}
	return fetches
}

func (e liveEnv) rebalanceWaiting() bool { return e.in.asg.rebalanceWaiting.Load() }

func (e liveEnv) allowRebalance() {
	e.in.asg.rebalanceWaiting.Store(false)
	e.in.cl.AllowRebalance()
}

func (e liveEnv) takeAssignment(polled Position) (Position, bool, error) {
	next, err := e.in.takePending(polled)
	if err != nil {
		return polled, false, err
	}
	return next, e.in.asg.commitAssigned.Swap(false), nil
}

func (e liveEnv) commit(ctx context.Context) { e.in.commit(ctx) }

func (e liveEnv) durableSeq() (uint64, error) { return e.in.store.DurableSeq() }

func (e liveEnv) markDurable(seq uint64, pos Position) bool {
	if !e.in.pos.markDurable(seq, pos) {
		return false
	}
	durable, ck := e.in.pos.pruneFloor()
	e.in.wr.prune(time.Now(), durable, ck)
	return true
}

func (e liveEnv) keys() int {
	if e.in.dict == nil {
		return 0
	}
	return e.in.dict.Len()
}

func (e liveEnv) syncKeys() error {
	if e.in.dict == nil {
		return nil
	}
	return e.in.dict.Sync()
}

func (e liveEnv) deadLetter(ctx context.Context, dead []deadRecord) (bool, error) {
	return e.in.sendDeadLetters(ctx, dead)
}

func (e liveEnv) cuts() map[tp]int64 { return e.in.dl.cuts() }

func (e liveEnv) holdCuts(fetches kgo.Fetches) map[tp]int64 { return e.in.holdCuts(fetches) }

func (e liveEnv) endHolds() { e.in.endHolds() }

func (e liveEnv) holding() bool { return e.in.holding() }

func (e liveEnv) noteEnds(lags []partitionLag) { e.in.noteEnds(lags) }

func (e liveEnv) unblockAcked(polled Position) (Position, int) { return e.in.unblockAcked(polled) }

func (e liveEnv) holdLost(lost []LostRecords) []LostRecords { return e.in.lostWhileRunning(lost) }

// apply binds j's batch to the source and the position after it, applies
// it (see Ingester.apply), publishes the position as applied and records
// visibility.
func (e liveEnv) apply(j *applyJob) (uint64, error) {
	in := e.in
	var seq uint64
	var err error
	if len(j.writes) > 0 {
		seq, err = in.wr.applyJob(j, in.src.topicID(in.cfg.Writes.Topic), in.encodePosition)
	} else {
		j.batch.SetSourcePosition(in.encodePosition(j.pos))
		seq, err = in.apply(&j.batch)
	}
	if err != nil {
		return 0, err
	}
	in.pos.setApplied(seq, j.pos)
	now := time.Now()
	in.cfg.Metrics.Visibility.ObserveSince(now, j.stamps)
	if in.cfg.OnVisible != nil {
		in.cfg.OnVisible(j.stamps, now)
	}
	return seq, nil
}

// checkpoint makes everything applied durable and calls Config.Checkpoint
// with the position after it, unless nothing was applied since the last.
// It runs on the applier's goroutine: no batch is applied meanwhile. A
// failure of Config.Checkpoint is logged and owed: the poll loop asks
// again after the interval, also when no record comes meanwhile.
func (e liveEnv) checkpoint() (owed bool, err error) {
	in := e.in
	c := &in.cfg
	in.pos.lockFlush()
	err = in.flush()
	in.pos.unlockFlush()
	if err != nil {
		return false, err
	}
	pos, seq, due := in.pos.checkpointDue()
	if !due {
		return false, nil // nothing new since the last
	}
	// Config.Checkpoint reports what it wrote (serve: "analytics
	// checkpointed"); a failure is reported here.
	if err := c.Checkpoint(context.Background(), in.encodePosition(pos)); err != nil {
		c.Logger.Warn("checkpoint failed; ingestion goes on, the next is tried after the interval", "err", err)
		return true, nil
	}
	in.pos.checkpointed(pos, seq)
	return false, nil
}

func (e liveEnv) flushAsync() (uint64, error) {
	target, err := e.in.store.FlushAsync()
	if err != nil {
		return 0, fmt.Errorf("ingest: flush: %w", err)
	}
	return target, nil
}
