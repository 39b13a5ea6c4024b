package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"

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
