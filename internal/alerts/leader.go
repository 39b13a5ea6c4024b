package alerts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Who produces, and how a producer takes over:
//
//	standby --(assigned partition 0)--> fence --> read to end --> leading
//	   ^                                   |            |            |
//	   +------(revoked, lost, fenced)------+------------+------------+
//
// fence: a new transactional client under TransactionalID loads its
// producer ID, which bumps the epoch: the previous producer's open
// transaction is aborted and nothing it sends later commits. read to end:
// the topic's end offsets are listed after the fence, and the watcher
// reads up to them; every alert committed before the fence is then in
// the ledger, and what is still pending is not on the topic. leading:
// pending alerts are produced, oldest first, in transactions. A
// transaction that fails is aborted and the take-over is done again
// (fence, read to end): its outcome may be unknown, and the topic, read to
// its end, says. A producer fenced while the group still says it leads
// waits for the group's next assignment instead of fencing back (for two
// session timeouts at most: then the fencer cannot hold the partition).

// maxTxRecords is the most alerts one transaction carries.
const maxTxRecords = 1000

// electionClient joins the election group: a member subscribed to the
// topic that never fetches (its topic is paused), whose assignment of
// partition 0 is the lease.
func (k *KafkaSink) electionClient() (*kgo.Client, error) {
	holds := func(m map[string][]int32) bool { return slices.Contains(m[k.cfg.Topic], 0) }
	cl, err := kgo.NewClient(append(k.connOpts(),
		kgo.ConsumerGroup(ElectionGroup(k.cfg)), kgo.ConsumeTopics(k.cfg.Topic),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(k.cfg.SessionTimeout), kgo.HeartbeatInterval(k.cfg.SessionTimeout/10),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if holds(m) {
				k.gen.Add(1)
				k.leading.Store(true)
				k.log.Info("this replica produces the alerts now (it holds the alert producers' group)", "topic", k.cfg.Topic,
					"group", ElectionGroup(k.cfg))
				k.poke()
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { k.resign(holds(m), "revoked") }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { k.resign(holds(m), "lost") }),
	)...)
	if err != nil {
		return nil, fmt.Errorf("alerts: joining the alert producers' group: %w", err)
	}
	cl.PauseFetchTopics(k.cfg.Topic)
	return cl, nil
}

// resign ends this replica's production when it gave up partition 0.
func (k *KafkaSink) resign(held bool, how string) {
	if !held || !k.leading.Load() {
		return
	}
	k.gen.Add(1)
	k.leading.Store(false)
	k.log.Info("this replica no longer produces the alerts ("+how+"); another takes over", "topic", k.cfg.Topic)
	k.poke()
}

// producer is the state of the producer loop. Owned by its goroutine.
type producer struct {
	tx  *kgo.Client // nil: none (standby, or to be made again)
	gen uint64      // the leadership generation tx was made for
	// fencedAt: fenced while leading in this generation, at fencedTime; no
	// new take-over until the generation changes, or twice the session
	// timeout has passed (the fencer was a member the group has dropped
	// since, which can no longer be assigned the partition).
	fencedAt   uint64
	fencedTime time.Time
}

// produceLoop produces pending alerts while this sink leads, until ctx
// ends or Close asks for a last delivery.
func (k *KafkaSink) produceLoop(ctx context.Context) {
	var p producer
	defer func() {
		if p.tx != nil {
			p.tx.Close()
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	backoff := time.Duration(0)
	for {
		closing := false
		select {
		case <-ctx.Done():
			return
		case <-k.closing:
			closing = true
		case <-k.wake:
		case <-tick.C:
		}
		if backoff > 0 && !closing {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		err := k.step(ctx, &p, closing)
		switch {
		case closing:
			if err != nil && ctx.Err() == nil {
				k.log.Warn("alerts not delivered before shutdown: another replica, or the next start, produces them", "topic", k.cfg.Topic, "err", err)
			}
			return
		case err != nil && ctx.Err() == nil:
			k.log.Warn("producing alerts failed; retrying", "topic", k.cfg.Topic, "err", err)
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		default:
			backoff = 0
		}
	}
}

// step does what the producer must do now: resign, take over, produce what
// is pending (everything, when closing).
func (k *KafkaSink) step(ctx context.Context, p *producer, closing bool) error {
	g := k.gen.Load()
	fenced := p.fencedAt == g && time.Since(p.fencedTime) < 2*k.cfg.SessionTimeout
	if !k.leading.Load() || fenced {
		if p.tx != nil && p.gen != g {
			p.tx.Close()
			p.tx = nil
		}
		return nil
	}
	if p.tx == nil || p.gen != g {
		if err := k.takeOver(ctx, p, g); err != nil {
			return err
		}
	}
	if !closing {
		time.Sleep(k.cfg.Linger) // let a burst gather into one transaction
	}
	for {
		k.mu.Lock()
		batch := k.led.unsent(maxTxRecords)
		k.mu.Unlock()
		if len(batch) == 0 || k.gen.Load() != g {
			return nil
		}
		if err := k.transact(ctx, p.tx, batch); err != nil {
			k.txErrs.Add(1)
			p.tx.Close()
			p.tx = nil
			if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
				// Another replica took over: it is the producer, whatever
				// the group has told this one yet.
				p.fencedAt, p.fencedTime = g, time.Now()
				k.log.Info("another replica fenced this one's alert producer; waiting for the group's next assignment", "topic", k.cfg.Topic)
				return nil
			}
			return err // the next step takes over again: fence, read to end
		}
		if !closing && len(batch) < maxTxRecords {
			return nil
		}
	}
}

// takeOver makes a transactional client for generation g, fences the
// previous producer and reads the topic to its end.
func (k *KafkaSink) takeOver(ctx context.Context, p *producer, g uint64) error {
	if p.tx != nil {
		p.tx.Close()
		p.tx = nil
	}
	tx, err := kgo.NewClient(append(k.connOpts(), kgo.TransactionalID(TransactionalID(k.cfg)),
		kgo.DefaultProduceTopic(k.cfg.Topic), kgo.TransactionTimeout(time.Minute), kgo.ProducerLinger(0))...)
	if err != nil {
		return fmt.Errorf("alerts: the alert producer: %w", err)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, _, err := tx.ProducerID(tctx); err != nil {
		tx.Close()
		return fmt.Errorf("alerts: taking over the alert producer's transactional ID: %w", err)
	}
	starts, err := k.listEnds(tctx, true)
	if err != nil {
		tx.Close()
		return err
	}
	ends, err := k.listEnds(tctx, false)
	if err != nil {
		tx.Close()
		return err
	}
	if !k.watchAlso(starts, ends) {
		tx.Close()
		return errors.New("alerts: the alert topic is not read yet")
	}
	t0 := time.Now()
	if err := k.waitWatched(tctx, ends); err != nil {
		tx.Close()
		return fmt.Errorf("alerts: reading the alert topic to its end before producing: %w", err)
	}
	k.mu.Lock()
	k.led.resend()
	pending := k.led.n
	k.mu.Unlock()
	p.tx, p.gen = tx, g
	k.log.Info("took over the alert producer: the previous one is fenced and the topic read to its end", "topic", k.cfg.Topic,
		"pending", pending, "read_seconds", time.Since(t0).Seconds(), "ends", fmt.Sprint(ends), "partitions", sortedPartitions(ends))
	return nil
}

// transact produces batch in one transaction and commits it; the alerts
// are marked sent once it commits.
func (k *KafkaSink) transact(ctx context.Context, tx *kgo.Client, batch []*item) error {
	if err := tx.BeginTransaction(); err != nil {
		return err
	}
	errs := make(chan error, len(batch))
	for _, it := range batch {
		r := *it.rec // franz-go fills in the record it is given; the item's stays as built
		tx.Produce(ctx, &r, func(_ *kgo.Record, err error) { errs <- err })
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ferr := tx.Flush(fctx)
	var perr error
	for range batch {
		if err := <-errs; err != nil && perr == nil {
			perr = err
		}
	}
	if err := errors.Join(ferr, perr); err != nil {
		_ = tx.AbortBufferedRecords(fctx)
		_ = tx.EndTransaction(fctx, kgo.TryAbort)
		return err
	}
	if err := tx.EndTransaction(fctx, kgo.TryCommit); err != nil {
		_ = tx.EndTransaction(fctx, kgo.TryAbort)
		return err
	}
	k.mu.Lock()
	for _, it := range batch {
		it.sent = true
	}
	k.mu.Unlock()
	if err := k.confirm(ctx, batch); err != nil {
		return err
	}
	k.produced.Add(uint64(len(batch)))
	return nil
}

// confirm waits until the watcher has read the topic past a transaction
// the client reported committed, and fails unless the topic holds every
// alert of batch. The client's word is not enough: franz-go 1.22 under
// KIP-890 part 2 ends a transaction whose produce it has not yet counted
// as added (a race with its own produce response) with an abort, and
// returns nil from EndTransaction(TryCommit); the alerts would stay
// marked sent and never reach the topic. On failure the caller takes the
// producer over again (fence, read to end), which produces them again.
func (k *KafkaSink) confirm(ctx context.Context, batch []*item) error {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ends, err := k.listEnds(cctx, false)
	if err != nil {
		return err
	}
	if err := k.waitWatched(cctx, ends); err != nil {
		return fmt.Errorf("alerts: reading the alert topic past a committed transaction: %w", err)
	}
	k.mu.Lock()
	missing := 0
	for _, it := range batch {
		if !it.gone {
			missing++
		}
	}
	k.mu.Unlock()
	if missing > 0 {
		return fmt.Errorf("alerts: %d of the %d alerts of a transaction reported committed are not on the alert topic; producing them again", missing, len(batch))
	}
	return nil
}
