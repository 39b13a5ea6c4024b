package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Dead letters: how a record that cannot be ingested reaches the
// dead-letter topic without ever stopping more than its own partition.
//
//	poll loop: decode a poll -> the records to dead-letter -> produce them
//	    all (sized to fit, below) and wait up to DeadLetterTimeout
//	    -> every partition whose dead letter was acknowledged goes on
//	    -> a partition with one that failed (or is not answered in time)
//	       is cut at that record: the poll is decoded again without it
//	       and what follows it, so the batch holds the partition's
//	       records before it and its position stays at the record; the
//	       partition is paused (a "block") and Ready says why
//	dead-letter worker (its own goroutine): retries each block's dead
//	    letter with backoff, reading the topic's limit again first
//	poll loop, right after a poll (rebalances are held off then): a block
//	    whose dead letter is acknowledged -> SetOffsets to the record
//	    after it, its position advances past it with the next batch, the
//	    partition resumes
//
// INVARIANT: no record of a blocked partition at or after the blocked
// record is applied, and its position does not pass the record, until
// the record's dead letter is acknowledged. A crash meanwhile resumes at
// the record, which is dead-lettered again: a dead letter may be produced
// more than once (its headers name the source record), a record is never
// lost.
//
// Sizing: a dead letter is one record in a batch of its own kind (no
// compression) that must fit both the dead-letter topic's
// max.message.bytes, read with kadm (the broker's default when it cannot
// be read), and the client's ProducerBatchMaxBytes, which follows the
// topic's limit (franz-go reads it when it first produces to a partition:
// the topic is purged from the producer when the limit changes). A value
// that does not fit is cut, and the headers carry the original size and
// SHA-256; a key that does not fit either is cut too, with its own size
// and SHA-256 headers. A dead letter whose headers alone do not fit cannot
// be written (its partition blocks until the limit is raised).

// Dead-letter headers.
const (
	HeaderReason          = "graphtide-error"
	HeaderSourceTopic     = "graphtide-source-topic"
	HeaderSourcePartition = "graphtide-source-partition"
	HeaderSourceOffset    = "graphtide-source-offset"
	// HeaderOriginalSize is the size in bytes of the source record's value.
	HeaderOriginalSize = "graphtide-original-size"
	// HeaderSHA256 is the SHA-256 of the source record's whole value, in
	// lower-case hex.
	HeaderSHA256 = "graphtide-sha256"
	// HeaderTruncated is "true" when the dead letter's value is only the
	// first bytes of the source record's value (it did not fit the
	// dead-letter topic's limit), else "false".
	HeaderTruncated = "graphtide-truncated"
	// HeaderOriginalKeySize and HeaderKeySHA256 are present only when the
	// key had to be cut too: the source key's size and SHA-256 (hex).
	HeaderOriginalKeySize = "graphtide-original-key-size"
	HeaderKeySHA256       = "graphtide-key-sha256"
)

// maxReasonBytes bounds the reason header.
const maxReasonBytes = 1024

// DefaultMaxMessageBytes is Kafka's default message.max.bytes: the
// dead-letter topic's limit assumed while it cannot be read.
const DefaultMaxMessageBytes = 1048588

// recordBatchOverhead is what a record batch of one record adds to the
// record, as franz-go counts it against ProducerBatchMaxBytes (61 bytes of
// batch header and a 4-byte length; the broker counts 12 bytes of log
// overhead instead of the 4, so the client's count is the larger).
// deadLetterSlack is kept free on top, for what a future client may count.
const (
	recordBatchOverhead = 65
	deadLetterSlack     = 64
)

// varintLen is the length of v as a zigzag varint (Kafka's record fields).
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// recordWireSize is the size of r on the wire as the first record of a
// batch, length prefix included (franz-go's recordNumbersAt with zero
// timestamp and offset deltas).
func recordWireSize(key, value []byte, headers []kgo.RecordHeader) int {
	l := 1 + 1 + 1 + // attributes, timestamp delta, offset delta
		varintLen(int64(len(key))) + len(key) +
		varintLen(int64(len(value))) + len(value) +
		varintLen(int64(len(headers)))
	for _, h := range headers {
		l += varintLen(int64(len(h.Key))) + len(h.Key) + varintLen(int64(len(h.Value))) + len(h.Value)
	}
	return varintLen(int64(l)) + l
}

// deadLetterBudget returns how many bytes of a record a batch limit leaves.
func deadLetterBudget(limit int32) int {
	return int(limit) - recordBatchOverhead - deadLetterSlack
}

// cutUTF8 returns s cut to at most n bytes at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// errDeadLetterTooLarge: the dead letter's headers (and a cut key) alone
// exceed the dead-letter topic's limit.
type errDeadLetterTooLarge struct {
	topic       string
	need, limit int
}

func (e *errDeadLetterTooLarge) Error() string {
	return fmt.Sprintf("the dead letter needs at least %d bytes with its headers, more than the dead-letter topic %s admits (max.message.bytes and the client's ProducerBatchMaxBytes leave %d); raise the topic's max.message.bytes",
		e.need+recordBatchOverhead+deadLetterSlack, e.topic, e.limit)
}

// buildDeadLetter returns the dead letter of src for topic, cut to fit a
// batch limit of limit bytes (see deadLetterBudget): the source key and
// value, cut if they must be, and the headers that name the source record,
// the reason, the value's size and SHA-256. It returns an
// *errDeadLetterTooLarge if the headers do not fit. The record it returns
// holds copies: src may be recycled.
func buildDeadLetter(topic string, src *kgo.Record, reason string, limit int32) (letter *kgo.Record, truncated bool, err error) {
	budget := deadLetterBudget(limit)
	sum := sha256.Sum256(src.Value)
	h := []kgo.RecordHeader{
		{Key: HeaderReason, Value: []byte(cutUTF8(reason, maxReasonBytes))},
		{Key: HeaderSourceTopic, Value: []byte(src.Topic)},
		{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(int(src.Partition)))},
		{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(src.Offset, 10))},
		{Key: HeaderOriginalSize, Value: []byte(strconv.Itoa(len(src.Value)))},
		{Key: HeaderSHA256, Value: []byte(hex.EncodeToString(sum[:]))},
		{Key: HeaderTruncated, Value: []byte("false")},
	}
	key, value := src.Key, src.Value
	if recordWireSize(key, value, h) > budget {
		truncated = true
		h[len(h)-1].Value = []byte("true")
		if recordWireSize(key, nil, h) > budget {
			// Even an empty value leaves no room for the key: cut it too.
			ksum := sha256.Sum256(src.Key)
			h = append(h,
				kgo.RecordHeader{Key: HeaderOriginalKeySize, Value: []byte(strconv.Itoa(len(src.Key)))},
				kgo.RecordHeader{Key: HeaderKeySHA256, Value: []byte(hex.EncodeToString(ksum[:]))})
			need := recordWireSize(nil, nil, h)
			if need > budget {
				return nil, false, &errDeadLetterTooLarge{topic: topic, need: need, limit: int(limit)}
			}
			key = key[:longestFit(len(key), func(n int) bool { return recordWireSize(key[:n], nil, h) <= budget })]
		}
		value = value[:longestFit(len(value), func(n int) bool { return recordWireSize(key, value[:n], h) <= budget })]
	}
	return &kgo.Record{
		Topic:   topic,
		Key:     append([]byte(nil), key...),
		Value:   append([]byte(nil), value...),
		Headers: h,
	}, truncated, nil
}

// longestFit returns the largest n in [0, most] with fits(n), given that
// fits is monotone (true up to some n) and fits(0).
func longestFit(most int, fits func(int) bool) int {
	lo, hi := 0, most // fits(lo); the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

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
	topic string

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
	blocks  map[tp]*dlBlock
	wake    chan struct{} // tells the worker about a new block
	metrics *Metrics
	// deadLog aggregates the log lines of records dead-lettered, by topic
	// (logsummary.go).
	deadLog *repeats
}

func newDeadLetters(topic string, m *Metrics) *deadLetters {
	d := &deadLetters{topic: topic, metrics: m, topicLimit: DefaultMaxMessageBytes, limitStale: true,
		blocks: map[tp]*dlBlock{}, wake: make(chan struct{}, 1)}
	d.clientLimit.Store(1000012) // franz-go's default, until the topic's is read
	return d
}

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

// readDeadLetterLimit reads the dead-letter topic's max.message.bytes and
// makes the client's batch limit follow it. If it cannot be read, the
// last known limit stays (Kafka's default at first). While the brokers do
// not know the topic, it asks again for up to patience: at start, right
// after ensureDeadLetterTopic created it, the broker that answers may not
// know it yet (a WARN for what is normal on a first start).
func (in *Ingester) readDeadLetterLimit(ctx context.Context, patience time.Duration) {
	d := in.dl
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	limit, err := describeMaxMessageBytes(rctx, kadm.NewClient(in.cl), d.topic)
retry:
	for wait, until := 50*time.Millisecond, time.Now().Add(patience); errors.Is(err, kerr.UnknownTopicOrPartition) && time.Now().Add(wait).Before(until); wait *= 2 {
		select {
		case <-rctx.Done():
			break retry
		case <-time.After(wait):
		}
		limit, err = describeMaxMessageBytes(rctx, kadm.NewClient(in.cl), d.topic)
	}
	if err != nil {
		assumed := d.assumedLimit()
		in.cfg.Logger.Warn("could not read the dead-letter topic's max.message.bytes; assuming the last known limit (at first Kafka's default)", "topic", d.topic, "limit", assumed, "err", err)
		in.followDeadLetterLimit(assumed)
		return
	}
	if d.learnLimit(limit) {
		in.cfg.Logger.Info("dead-letter topic limit", "topic", d.topic, "max_message_bytes", limit)
	}
	in.followDeadLetterLimit(limit)
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

// followDeadLetterLimit sets the client's batch limit for the dead-letter
// topic to limit (within what the client allows) when no dead letter is
// in flight; franz-go reads it again once the topic is purged from its
// producer.
func (in *Ingester) followDeadLetterLimit(limit int32) {
	in.dl.follow(max(min(limit, clientCap(in.cl)), 512), func() { in.cl.PurgeTopicsFromProducing(in.dl.topic) })
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

// produceDeadLetter builds src's dead letter at the current limit and
// hands it to the client; done receives the outcome once (a build
// failure at once).
func (in *Ingester) produceDeadLetter(ctx context.Context, src *kgo.Record, reason string, done func(error)) {
	in.dl.produce(ctx, in.cl, src, reason, done)
}

// producer is what the dead letters ask of the Kafka client
// (*kgo.Client).
type producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
}

// produce builds src's dead letter at the current limit and hands it to
// p; done receives the outcome once (a build failure at once).
func (d *deadLetters) produce(ctx context.Context, p producer, src *kgo.Record, reason string, done func(error)) {
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
	p.Produce(ctx, letter, func(_ *kgo.Record, err error) {
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

// deadLetter produces the dead letters of one poll and waits for them up
// to DeadLetterTimeout (less when a partition is blocked already: the
// topic is known to be in trouble). It returns, per partition, the first
// record whose dead letter was not acknowledged: the partition is cut
// there (see block). The answer to an attempt still in flight then goes
// to that block (the worker does not try again meanwhile, so that the
// dead letter is not written twice). It returns ctx's error if ctx ends
// first.
func (in *Ingester) deadLetter(ctx context.Context, dead []deadRecord) (map[tp]*dlBlock, error) {
	atts := make([]*dlAttempt, len(dead))
	var left atomic.Int64
	left.Store(int64(len(dead)))
	all := make(chan struct{})
	for i, dr := range dead {
		a := &dlAttempt{}
		atts[i] = a
		in.produceDeadLetter(ctx, dr.r, dr.reason, func(err error) {
			if late := a.finish(err); late != nil {
				late(err)
				return
			}
			if left.Add(-1) == 0 {
				close(all)
			}
		})
	}
	wait := in.cfg.DeadLetterTimeout
	if in.dl.blocked() > 0 {
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
		b := &dlBlock{tp: k, offset: r.Offset, epoch: r.LeaderEpoch,
			src: &kgo.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: append([]byte(nil), r.Key...), Value: append([]byte(nil), r.Value...),
				Headers: requestHeader(r)},
			reason: dr.reason, size: len(r.Key) + len(r.Value), since: time.Now(), lastErr: err}
		if !done {
			b.lastErr = fmt.Errorf("not acknowledged within %v (still trying)", wait)
			b.running = true
			pending = append(pending, a)
			in.cfg.Metrics.DeadLetterFailures.Inc()
		} else {
			in.dl.noteError(err)
		}
		cut[k] = b
		a.block = b
	}
	// The answers still to come go to their blocks (an attempt whose
	// record is past its partition's cut is dropped: the record is
	// consumed again once the partition resumes).
	for _, a := range pending {
		if b := a.block; b != nil && cut[b.tp] == b {
			a.handOver(func(err error) { in.dl.attemptDone(b, err) })
		}
	}
	// Dead letters of a cut partition after its cut record go again once
	// it resumes: they are not counted here.
	for i, dr := range dead {
		r := dr.r
		if b := cut[tp{r.Topic, r.Partition}]; b != nil && r.Offset >= b.offset {
			continue
		}
		if done, err := atts[i].outcome(); done && err == nil {
			in.cfg.Metrics.DeadLetters.WithLabelValues(r.Topic).Inc()
			if in.dl.deadLog.note(r.Topic) { // the first of its topic in the interval; the others are counted
				in.cfg.Logger.Warn("record dead-lettered", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", cutUTF8(dr.reason, maxReasonBytes))
			}
		}
	}
	return cut, nil
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

// block pauses the partitions of bs at their records (the poll loop calls
// it before the batch without them is handed over). Fetching of a blocked
// partition stays paused whatever else pauses and resumes fetching (see
// setPaused).
func (in *Ingester) block(bs map[tp]*dlBlock) {
	d := in.dl
	held, n := d.addBlocks(bs)
	in.pauses.holdDeadLetters(held)
	for k, b := range bs {
		in.cfg.Metrics.DecodeErrs.WithLabelValues(k.topic).Inc()
		in.cfg.Metrics.DeadLetterBlocked.WithLabelValues(k.topic, strconv.Itoa(int(k.partition))).Set(1)
		in.cfg.Logger.Error("producing dead letters failed; the partition is paused at the record until its dead letter can be written (other partitions go on)",
			"topic", k.topic, "partition", k.partition, "offset", b.offset, "dead_letter_topic", d.topic, "err", b.lastErr, "blocked_partitions", n)
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
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

// drop removes the blocks of partitions in gone and returns those
// partitions.
func (d *deadLetters) drop(gone map[string][]int32) map[string][]int32 {
	dropped := map[string][]int32{}
	d.mu.Lock()
	defer d.mu.Unlock()
	for t, ps := range gone {
		for _, p := range ps {
			if _, ok := d.blocks[tp{t, p}]; ok {
				delete(d.blocks, tp{t, p})
				dropped[t] = append(dropped[t], p)
			}
		}
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

// unblockAcked resumes every blocked partition whose dead letter is
// acknowledged: its fetch position moves to the record after the blocked
// one, and polled (returned) advances past it. It returns how many records
// that covers. Called by the poll loop right after a poll returned
// something: rebalances are held off until it allows them, so no
// partition is revoked meanwhile (SetOffsets needs that).
func (in *Ingester) unblockAcked(polled Position) (Position, int) {
	done, n := in.dl.takeAcked()
	if len(done) == 0 {
		return polled, 0
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	resume := map[string][]int32{}
	next := polled.Clone()
	for _, b := range done {
		if set[b.topic] == nil {
			set[b.topic] = map[int32]kgo.EpochOffset{}
		}
		set[b.topic][b.partition] = kgo.EpochOffset{Epoch: b.epoch, Offset: b.offset + 1}
		resume[b.topic] = append(resume[b.topic], b.partition)
		if cur, ok := next.Get(b.topic, b.partition); !ok || cur <= b.offset {
			next.Set(b.topic, b.partition, b.offset+1)
		}
	}
	in.cl.SetOffsets(set)
	in.pauses.releaseDeadLetters(resume, false)
	m := in.cfg.Metrics
	for _, b := range done {
		m.DeadLetters.WithLabelValues(b.topic).Inc()
		m.Records.WithLabelValues(b.topic).Inc()
		m.Bytes.WithLabelValues(b.topic).Add(float64(len(b.src.Value)))
		m.DeadLetterBlocked.WithLabelValues(b.topic, strconv.Itoa(int(b.partition))).Set(0)
		if w := in.cfg.Writes; w != nil && b.topic == w.Topic {
			// A write whose dead letter had to wait: its request hears of
			// it now (one written at once heard at its decode).
			in.wr.deadLettered(writeFailure{requestOf(b.src), b.reason, b.partition, b.offset})
		}
		in.cfg.Logger.Warn("record dead-lettered; the partition resumes after it", "topic", b.topic, "partition", b.partition, "offset", b.offset,
			"blocked_for", time.Since(b.since).Round(time.Millisecond), "attempts", b.tries+1, "blocked_partitions", n)
	}
	return next, len(done)
}

// dropBlocks forgets the blocks of partitions that are no longer assigned
// (revoked or lost) and resumes their fetching, so that a later
// assignment fetches them again: the position stays at the blocked
// record, where a new assignment starts (and dead-letters it again).
func (in *Ingester) dropBlocks(gone map[string][]int32) {
	if in.dl == nil {
		return
	}
	resume := in.dl.drop(gone)
	if len(resume) == 0 {
		return
	}
	in.pauses.releaseDeadLetters(resume, true)
	in.cfg.Logger.Info("blocked partitions went to another member; their dead letters are retried by whoever consumes them", "partitions", resume)
}

// deadLetterWorker retries the dead letters of blocked partitions until
// ctx ends: one attempt at a time per partition, with backoff (100 ms
// doubling to 30 s), reading the topic's limit again first when an
// attempt failed in a way that may be about it. A late acknowledgement of
// an attempt that timed out counts too.
func (in *Ingester) deadLetterWorker(ctx context.Context) {
	d := in.dl
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.wake:
		}
		due, stale := d.due(time.Now())
		if len(due) == 0 {
			continue
		}
		if stale {
			in.readDeadLetterLimit(ctx, 0)
		}
		for _, b := range due {
			in.produceDeadLetter(ctx, b.src, b.reason, func(err error) { in.dl.attemptDone(b, err) })
		}
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
