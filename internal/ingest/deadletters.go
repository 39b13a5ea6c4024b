package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/kafkaconn"
)

// The dead letters part of the Ingester (the rules are in deadletter.go):
// the blocked partitions, the attempts to write their dead letters, and
// the dead-letter topic's limit. It asks a dlClient (the Kafka client)
// to produce and to read the limit, and tells the Ingester which
// partitions to hold, resume and move past; it pauses nothing itself
// (the pauses part does, ingester_deadletter.go has the wiring).

// deadRecord is a record to dead-letter and why.
type deadRecord struct {
	r      *kgo.Record
	reason string
}

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// deletePartitions deletes the partitions of gone from m and returns
// those it held.
func deletePartitions[V any](m map[tp]V, gone map[string][]int32) map[string][]int32 {
	deleted := map[string][]int32{}
	for t, ps := range gone {
		for _, p := range ps {
			if _, ok := m[tp{t, p}]; ok {
				delete(m, tp{t, p})
				deleted[t] = append(deleted[t], p)
			}
		}
	}
	return deleted
}

// dlBlock is a partition paused at a record whose dead letter is not
// acknowledged yet.
type dlBlock struct {
	tp
	offset int64 // the record's offset: the partition's position stays here
	epoch  int32 // its leader epoch, for SetOffsets
	src    *kgo.Record
	reason string // why the record is dead-lettered
	size   int    // bytes held for the record (key and value)
	since  time.Time

	// The attempts. Protected by deadLetters.mu.
	running bool  // an attempt is in flight: no other starts
	acked   bool  // the dead letter is acknowledged: the poll loop unblocks
	lastErr error // why the last attempt failed
	next    time.Time
	backoff time.Duration
	tries   int
}

// deadLetters holds what the dead-letter path shares between the poll
// loop, the dead-letter worker, rebalance callbacks and Ready.
type deadLetters struct {
	topic   string
	timeout time.Duration // Config.DeadLetterTimeout: one attempt's bound
	metrics *Metrics
	logger  *slog.Logger

	// produceMu: producers hold it shared while they hand records to the
	// client; changing the client's batch limit holds it exclusively, so
	// that no record is buffered under the old limit meanwhile.
	produceMu sync.RWMutex
	// clientLimit is what ProducerBatchMaxBytesFn answers for the topic:
	// the limit franz-go counts a batch against.
	clientLimit atomic.Int32
	inflight    atomic.Int64 // dead letters handed to the client, not yet answered

	mu sync.Mutex
	// topicLimit is the topic's max.message.bytes as last read (or
	// assumed: limitKnown is false). Protected by mu.
	topicLimit int32
	limitKnown bool
	limitStale bool // read it again before the next attempt; Protected by mu.
	// blocks are the blocked partitions. Protected by mu.
	blocks map[tp]*dlBlock
	wake   chan struct{} // tells the worker about a new block
	// deadLog aggregates the log lines of records dead-lettered, by topic
	// (logsummary.go).
	deadLog *repeats
}

// newDeadLetters is the part of c's dead-letter topic.
func newDeadLetters(c *Config) *deadLetters {
	d := &deadLetters{topic: c.DeadLetterTopic, timeout: c.DeadLetterTimeout, metrics: c.Metrics, logger: c.Logger,
		topicLimit: DefaultMaxMessageBytes, limitStale: true, blocks: map[tp]*dlBlock{}, wake: make(chan struct{}, 1)}
	d.clientLimit.Store(1000012) // franz-go's default, until the topic's is read
	return d
}

// dlClient is what the dead letters ask of the Kafka client (kafkaDL
// over *kgo.Client; a fake in the tests).
type dlClient interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
	// ensureTopic creates topic if it is missing.
	ensureTopic(ctx context.Context, topic string) error
	// maxMessageBytes reads topic's max.message.bytes.
	maxMessageBytes(ctx context.Context, topic string) (int32, error)
	// purge makes the client read topic's batch limit again.
	purge(topic string)
	// batchCap is the largest batch limit the client takes.
	batchCap() int32
}

// kafkaDL is the dlClient of a Kafka client.
type kafkaDL struct{ *kgo.Client }

func (k kafkaDL) ensureTopic(ctx context.Context, topic string) error {
	return kafkaconn.EnsureTopic(ctx, k.Client, topic, 1)
}

func (k kafkaDL) maxMessageBytes(ctx context.Context, topic string) (int32, error) {
	return describeMaxMessageBytes(ctx, kadm.NewClient(k.Client), topic)
}

func (k kafkaDL) purge(topic string) { k.PurgeTopicsFromProducing(topic) }

func (k kafkaDL) batchCap() int32 { return clientCap(k.Client) }

// limit is the batch limit a dead letter must fit now: the smaller of the
// topic's and the client's.
func (d *deadLetters) limit() int32 {
	d.mu.Lock()
	t := d.topicLimit
	d.mu.Unlock()
	return min(t, d.clientLimit.Load())
}

// clientCap is the largest batch limit the client can take: franz-go
// keeps the whole produce request within BrokerMaxWriteBytes.
func clientCap(cl *kgo.Client) int32 {
	maxWrite := int32(100 << 20)
	if v, ok := cl.OptValue(kgo.BrokerMaxWriteBytes).(int32); ok {
		maxWrite = v
	}
	return min(maxWrite-4096, 1<<30)
}

// prepare readies the topic before Run fetches: it creates the topic if
// it is missing, so that clusters without topic auto-creation work (a
// failure is logged: the producer retries until the topic exists), and
// reads its limit.
func (d *deadLetters) prepare(ctx context.Context, cl dlClient) {
	if err := cl.ensureTopic(ctx, d.topic); err != nil {
		d.logger.Warn("could not create the dead-letter topic", "topic", d.topic, "err", err)
	}
	d.readLimit(ctx, cl, 2*time.Second)
}

// readLimit reads the dead-letter topic's max.message.bytes and makes the
// client's batch limit follow it. If it cannot be read, the last known
// limit stays (Kafka's default at first). While the brokers do not know
// the topic, it asks again for up to patience: at start, right after
// prepare created it, the broker that answers may not know it yet (a
// WARN for what is normal on a first start).
func (d *deadLetters) readLimit(ctx context.Context, cl dlClient, patience time.Duration) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	limit, err := cl.maxMessageBytes(rctx, d.topic)
retry:
	for wait, until := 50*time.Millisecond, time.Now().Add(patience); errors.Is(err, kerr.UnknownTopicOrPartition) && time.Now().Add(wait).Before(until); wait *= 2 {
		select {
		case <-rctx.Done():
			break retry
		case <-time.After(wait):
		}
		limit, err = cl.maxMessageBytes(rctx, d.topic)
	}
	if err != nil {
		assumed := d.assumedLimit()
		d.logger.Warn("could not read the dead-letter topic's max.message.bytes; assuming the last known limit (at first Kafka's default)", "topic", d.topic, "limit", assumed, "err", err)
		d.followLimit(cl, assumed)
		return
	}
	if d.learnLimit(limit) {
		d.logger.Info("dead-letter topic limit", "topic", d.topic, "max_message_bytes", limit)
	}
	d.followLimit(cl, limit)
}

// assumedLimit is the topic's limit as last read or assumed.
func (d *deadLetters) assumedLimit() int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.topicLimit
}

// learnLimit records the topic's limit as read, and reports whether it
// is news.
func (d *deadLetters) learnLimit(limit int32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	news := d.topicLimit != limit || !d.limitKnown
	d.topicLimit, d.limitKnown, d.limitStale = limit, true, false
	return news
}

// followLimit sets the client's batch limit for the dead-letter topic to
// limit (within what the client allows) when no dead letter is in
// flight; franz-go reads it again once the topic is purged from its
// producer.
func (d *deadLetters) followLimit(cl dlClient, limit int32) {
	d.follow(max(min(limit, cl.batchCap()), 512), func() { cl.purge(d.topic) })
}

// follow makes want the client's batch limit (purge makes the client read
// it again) when no dead letter is in flight.
func (d *deadLetters) follow(want int32, purge func()) {
	if d.clientLimit.Load() == want {
		return
	}
	d.produceMu.Lock()
	defer d.produceMu.Unlock()
	if d.inflight.Load() > 0 {
		return // the smaller limit applies meanwhile; changed with the next attempt
	}
	d.clientLimit.Store(want)
	purge()
}

// batchLimit is what the client's ProducerBatchMaxBytesFn answers.
func (d *deadLetters) batchLimit() int32 { return d.clientLimit.Load() }

// describeMaxMessageBytes reads a topic's max.message.bytes.
func describeMaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string) (int32, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return 0, err
	}
	if rc.Err != nil {
		return 0, rc.Err
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			v, err := strconv.ParseInt(*c.Value, 10, 32)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("max.message.bytes %q: not a size", *c.Value)
			}
			return int32(v), nil
		}
	}
	return 0, errors.New("the topic's configuration has no max.message.bytes")
}

// produce builds src's dead letter at the current limit and hands it to
// cl; done receives the outcome once (a build failure at once).
func (d *deadLetters) produce(ctx context.Context, cl dlClient, src *kgo.Record, reason string, done func(error)) {
	d.produceMu.RLock()
	defer d.produceMu.RUnlock()
	letter, truncated, err := buildDeadLetter(d.topic, src, reason, d.limit())
	if err != nil {
		done(err)
		return
	}
	if truncated {
		d.metrics.DeadLettersTruncated.Inc()
	}
	d.inflight.Add(1)
	cl.Produce(ctx, letter, func(_ *kgo.Record, err error) {
		d.inflight.Add(-1)
		done(err)
	})
}

// noteError counts a failed attempt and marks the topic's limit
// for reading again when the failure may be about it.
func (d *deadLetters) noteError(err error) {
	d.metrics.DeadLetterFailures.Inc()
	var tooLarge *errDeadLetterTooLarge
	brokerTooLarge := errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)
	if brokerTooLarge || errors.As(err, &tooLarge) || errors.Is(err, kerr.UnknownTopicOrPartition) {
		d.mu.Lock()
		d.limitStale = true
		if brokerTooLarge && !d.limitKnown {
			// The assumed limit is too high: halve it until the topic's
			// can be read or the dead letter fits.
			d.topicLimit = max(d.topicLimit/2, 1024)
		}
		d.mu.Unlock()
	}
}

// send produces the dead letters of one poll and waits for them up to
// the timeout (less when a partition is blocked already: the topic is
// known to be in trouble). It returns, per partition, the first record
// whose dead letter was not acknowledged: the partition is cut there
// (see block). The answer to an attempt still in flight then goes to
// that block (the worker does not try again meanwhile, so that the dead
// letter is not written twice). It returns ctx's error if ctx ends
// first.
func (d *deadLetters) send(ctx context.Context, cl dlClient, dead []deadRecord) (map[tp]*dlBlock, error) {
	atts, all := d.start(ctx, cl, dead)
	wait := d.timeout
	if d.blocked() > 0 {
		wait = min(wait, time.Second)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-all:
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	cut := d.cut(dead, atts, wait)
	d.countWritten(dead, atts, cut)
	return cut, nil
}

// start produces the dead letters of dead, one attempt each; all is
// closed once every one is answered in time (an answer after cut handed
// the attempt over goes to its block instead).
func (d *deadLetters) start(ctx context.Context, cl dlClient, dead []deadRecord) (atts []*dlAttempt, all chan struct{}) {
	atts = make([]*dlAttempt, len(dead))
	var left atomic.Int64
	left.Store(int64(len(dead)))
	all = make(chan struct{})
	for i, dr := range dead {
		a := &dlAttempt{}
		atts[i] = a
		d.produce(ctx, cl, dr.r, dr.reason, func(err error) {
			if late := a.finish(err); late != nil {
				late(err)
				return
			}
			if left.Add(-1) == 0 {
				close(all)
			}
		})
	}
	return atts, all
}

// cut returns the block of each partition at its first record whose dead
// letter failed or was not answered within wait; the answers of those
// still in flight go to their blocks from now on.
func (d *deadLetters) cut(dead []deadRecord, atts []*dlAttempt, wait time.Duration) map[tp]*dlBlock {
	cut := map[tp]*dlBlock{}
	var pending []*dlAttempt
	for i, dr := range dead {
		r, a := dr.r, atts[i]
		k := tp{r.Topic, r.Partition}
		done, err := a.outcome()
		if done && err == nil {
			continue
		}
		if b := cut[k]; b != nil && b.offset < r.Offset {
			continue // the partition is cut at an earlier record
		}
		b := newBlock(dr, err)
		if !done {
			b.lastErr = fmt.Errorf("not acknowledged within %v (still trying)", wait)
			b.running = true
			pending = append(pending, a)
			d.metrics.DeadLetterFailures.Inc()
		} else {
			d.noteError(err)
		}
		cut[k] = b
		a.block = b
	}
	// The answers still to come go to their blocks (an attempt whose
	// record is past its partition's cut is dropped: the record is
	// consumed again once the partition resumes).
	for _, a := range pending {
		if b := a.block; b != nil && cut[b.tp] == b {
			a.handOver(func(err error) { d.attemptDone(b, err) })
		}
	}
	return cut
}

// newBlock is the block of dr's partition at its record, whose last
// attempt failed with err; it holds a copy of the record (with only the
// request id of its headers, to answer a write).
func newBlock(dr deadRecord, err error) *dlBlock {
	r := dr.r
	return &dlBlock{tp: tp{r.Topic, r.Partition}, offset: r.Offset, epoch: r.LeaderEpoch,
		src: &kgo.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: append([]byte(nil), r.Key...), Value: append([]byte(nil), r.Value...),
			Headers: requestHeader(r)},
		reason: dr.reason, size: len(r.Key) + len(r.Value), since: time.Now(), lastErr: err}
}

// countWritten counts and logs the dead letters acknowledged in time.
// Those of a cut partition after its cut record go again once it resumes:
// they are not counted here.
func (d *deadLetters) countWritten(dead []deadRecord, atts []*dlAttempt, cut map[tp]*dlBlock) {
	for i, dr := range dead {
		r := dr.r
		if b := cut[tp{r.Topic, r.Partition}]; b != nil && r.Offset >= b.offset {
			continue
		}
		if done, err := atts[i].outcome(); done && err == nil {
			d.metrics.DeadLetters.WithLabelValues(r.Topic).Inc()
			if d.deadLog.note(r.Topic) { // the first of its topic in the interval; the others are counted
				d.logger.Warn("record dead-lettered", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", cutUTF8(dr.reason, maxReasonBytes))
			}
		}
	}
}

// dlAttempt is one poll's attempt to write a dead letter; its answer goes
// to deadLetter, or, once deadLetter stopped waiting, to late.
type dlAttempt struct {
	mu    sync.Mutex
	done  bool
	err   error
	late  func(error)
	block *dlBlock // the block it belongs to, if its record is cut at
}

// finish records the answer, or returns the function it goes to.
func (a *dlAttempt) finish(err error) func(error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.late != nil {
		return a.late
	}
	a.done, a.err = true, err
	return nil
}

func (a *dlAttempt) outcome() (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done, a.err
}

// handOver sends the answer to late from now on (at once if it came
// meanwhile).
func (a *dlAttempt) handOver(late func(error)) {
	a.mu.Lock()
	if !a.done {
		a.late = late
		a.mu.Unlock()
		return
	}
	err := a.err
	a.mu.Unlock()
	late(err)
}

// attemptDone records the answer to an attempt to write b's dead letter.
func (d *deadLetters) attemptDone(b *dlBlock, err error) {
	if err != nil {
		d.noteError(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b.running = false
	b.tries++
	if err == nil {
		b.acked = true
		return
	}
	b.lastErr = err
	b.backoff = min(2*max(b.backoff, 50*time.Millisecond), 30*time.Second)
	b.next = time.Now().Add(b.backoff)
}

// blocked returns the number of blocked partitions.
func (d *deadLetters) blocked() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.blocks)
}

// cuts returns the offset each blocked partition is cut at.
func (d *deadLetters) cuts() map[tp]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.blocks) == 0 {
		return nil
	}
	c := make(map[tp]int64, len(d.blocks))
	for k, b := range d.blocks {
		c[k] = b.offset
	}
	return c
}

// block adds the blocks of bs (the poll loop calls it before the batch
// without them is handed over), tells the worker, and returns their
// partitions, to be held.
func (d *deadLetters) block(bs map[tp]*dlBlock) []tp {
	held, n := d.addBlocks(bs)
	for k, b := range bs {
		d.metrics.DecodeErrs.WithLabelValues(k.topic).Inc()
		d.metrics.DeadLetterBlocked.WithLabelValues(k.topic, strconv.Itoa(int(k.partition))).Set(1)
		d.logger.Error("producing dead letters failed; the partition is paused at the record until its dead letter can be written (other partitions go on)",
			"topic", k.topic, "partition", k.partition, "offset", b.offset, "dead_letter_topic", d.topic, "err", b.lastErr, "blocked_partitions", n)
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return held
}

// addBlocks adds the blocks of bs, each to be retried after its backoff
// (100 ms at first), and returns their partitions and how many are
// blocked now.
func (d *deadLetters) addBlocks(bs map[tp]*dlBlock) ([]tp, int) {
	held := make([]tp, 0, len(bs))
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, b := range bs {
		if b.backoff == 0 {
			b.backoff = 100 * time.Millisecond
			b.next = time.Now().Add(b.backoff)
		}
		d.blocks[k] = b
		held = append(held, k)
	}
	return held, len(d.blocks)
}

// takeAcked removes the blocks whose dead letter is acknowledged and
// returns them, with how many are left.
func (d *deadLetters) takeAcked() ([]*dlBlock, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var done []*dlBlock
	for k, b := range d.blocks {
		if b.acked {
			done = append(done, b)
			delete(d.blocks, k)
		}
	}
	return done, len(d.blocks)
}

// unblocked is what ends the blocks whose dead letters are acknowledged.
type unblocked struct {
	done []*dlBlock
	// next is the polled position advanced past each done record.
	next Position
	// offsets are the fetch offsets after the done records; resume their
	// partitions.
	offsets map[string]map[int32]kgo.EpochOffset
	resume  map[string][]int32
}

// unblock takes the blocks whose dead letter is acknowledged, counts and
// logs them, and returns where their partitions go on: the record after
// the blocked one, polled advanced past it.
func (d *deadLetters) unblock(polled Position) unblocked {
	done, n := d.takeAcked()
	u := unblocked{done: done, next: polled, offsets: map[string]map[int32]kgo.EpochOffset{}, resume: map[string][]int32{}}
	if len(done) == 0 {
		return u
	}
	u.next = polled.Clone()
	for _, b := range done {
		if u.offsets[b.topic] == nil {
			u.offsets[b.topic] = map[int32]kgo.EpochOffset{}
		}
		u.offsets[b.topic][b.partition] = kgo.EpochOffset{Epoch: b.epoch, Offset: b.offset + 1}
		u.resume[b.topic] = append(u.resume[b.topic], b.partition)
		if cur, ok := u.next.Get(b.topic, b.partition); !ok || cur <= b.offset {
			u.next.Set(b.topic, b.partition, b.offset+1)
		}
	}
	m := d.metrics
	for _, b := range done {
		m.DeadLetters.WithLabelValues(b.topic).Inc()
		m.Records.WithLabelValues(b.topic).Inc()
		m.Bytes.WithLabelValues(b.topic).Add(float64(len(b.src.Value)))
		m.DeadLetterBlocked.WithLabelValues(b.topic, strconv.Itoa(int(b.partition))).Set(0)
		d.logger.Warn("record dead-lettered; the partition resumes after it", "topic", b.topic, "partition", b.partition, "offset", b.offset,
			"blocked_for", time.Since(b.since).Round(time.Millisecond), "attempts", b.tries+1, "blocked_partitions", n)
	}
	return u
}

// drop removes the blocks of partitions in gone (revoked or lost) and
// returns those partitions: whoever is assigned them next dead-letters
// their records again.
func (d *deadLetters) drop(gone map[string][]int32) map[string][]int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	dropped := deletePartitions(d.blocks, gone)
	if len(dropped) > 0 {
		d.logger.Info("blocked partitions went to another member; their dead letters are retried by whoever consumes them", "partitions", dropped)
	}
	return dropped
}

// due marks the blocks whose next attempt is due at now as running and
// returns them, and whether the topic's limit must be read first.
func (d *deadLetters) due(now time.Time) ([]*dlBlock, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var due []*dlBlock
	for _, b := range d.blocks {
		if !b.running && !b.acked && !now.Before(b.next) {
			b.running = true
			due = append(due, b)
		}
	}
	return due, d.limitStale
}

// run retries the dead letters of blocked partitions until ctx ends: one
// attempt at a time per partition, with backoff (100 ms doubling to
// 30 s), reading the topic's limit again first when an attempt failed in
// a way that may be about it. A late acknowledgement of an attempt that
// timed out counts too.
func (d *deadLetters) run(ctx context.Context, cl dlClient) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.wake:
		}
		d.retry(ctx, cl, time.Now())
	}
}

// retry starts the attempts due at now.
func (d *deadLetters) retry(ctx context.Context, cl dlClient, now time.Time) {
	due, stale := d.due(now)
	if len(due) == 0 {
		return
	}
	if stale {
		d.readLimit(ctx, cl, 0)
	}
	for _, b := range due {
		d.produce(ctx, cl, b.src, b.reason, func(err error) { d.attemptDone(b, err) })
	}
}

// reasons describes the blocked partitions for Ready.
func (d *deadLetters) reasons() []string {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, b := range d.blocks {
		out = append(out, fmt.Sprintf("dead letters cannot be written to %s: partition %s/%d is paused at offset %d since %s (%d attempts; last: %v)",
			d.topic, b.topic, b.partition, b.offset, b.since.UTC().Format(time.RFC3339), b.tries+1, b.lastErr))
	}
	return out
}

// heldBytes is the memory held for blocked records.
func (d *deadLetters) heldBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, b := range d.blocks {
		n += int64(b.size)
	}
	return n
}
