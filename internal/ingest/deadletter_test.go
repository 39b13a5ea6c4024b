package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func headerMap(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// encodedBatchSize encodes rec as the only record of a v2 record batch
// with kmsg and returns the batch's size as a broker measures it against
// max.message.bytes (the batch plus 12 bytes of log overhead): the sizing
// is checked against Kafka's own layout, not against itself.
func encodedBatchSize(t *testing.T, rec *kgo.Record) int {
	t.Helper()
	kr := kmsg.Record{Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	b := kmsg.RecordBatch{Magic: 2, NumRecords: 1, Records: encodeRecord(kr)}
	return len(b.AppendTo(nil))
}

// encodeRecord encodes r with its length prefix set.
func encodeRecord(r kmsg.Record) []byte {
	r.Length = 0
	r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero length takes one byte
	return r.AppendTo(nil)
}

func TestRecordWireSizeMatchesKafka(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 127, 128, 8191, 8192, 1 << 20} {
		rec := &kgo.Record{Key: bytes.Repeat([]byte("k"), n%300), Value: bytes.Repeat([]byte{7}, n),
			Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("b")}, {Key: strings.Repeat("h", n%200), Value: bytes.Repeat([]byte("v"), n%100)}}}
		kr := kmsg.Record{Key: rec.Key, Value: rec.Value}
		for _, h := range rec.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		if got, want := recordWireSize(rec.Key, rec.Value, rec.Headers), len(encodeRecord(kr)); got != want {
			t.Errorf("value %d bytes: recordWireSize %d, kmsg encodes %d", n, got, want)
		}
		// A batch of it is 61 bytes more than the record, +12 at the broker.
		if got, want := encodedBatchSize(t, rec), recordWireSize(rec.Key, rec.Value, rec.Headers)+61; got != want {
			t.Errorf("value %d bytes: batch %d, want record + 61 = %d", n, got, want)
		}
	}
}

func TestBuildDeadLetter(t *testing.T) {
	src := func(key, value []byte) *kgo.Record {
		return &kgo.Record{Topic: "edges", Partition: 3, Offset: 12345, Key: key, Value: value}
	}
	check := func(t *testing.T, in *kgo.Record, out *kgo.Record, limit int32, wantTrunc, wantKeyCut bool) {
		t.Helper()
		h := headerMap(out)
		sum := sha256.Sum256(in.Value)
		if h[HeaderSourceTopic] != "edges" || h[HeaderSourcePartition] != "3" || h[HeaderSourceOffset] != "12345" || h[HeaderReason] == "" {
			t.Errorf("source headers %v", h)
		}
		if h[HeaderOriginalSize] != strconv.Itoa(len(in.Value)) || h[HeaderSHA256] != hex.EncodeToString(sum[:]) {
			t.Errorf("size/sha headers %q %q, want %d %x", h[HeaderOriginalSize], h[HeaderSHA256], len(in.Value), sum)
		}
		if h[HeaderTruncated] != strconv.FormatBool(wantTrunc) {
			t.Errorf("truncated header %q, want %v", h[HeaderTruncated], wantTrunc)
		}
		if !bytes.HasPrefix(in.Value, out.Value) || !wantTrunc && len(out.Value) != len(in.Value) {
			t.Errorf("value of %d bytes is not the original's (%d bytes) or its prefix", len(out.Value), len(in.Value))
		}
		_, keyCut := h[HeaderOriginalKeySize]
		if keyCut != wantKeyCut || !bytes.HasPrefix(in.Key, out.Key) || !keyCut && !bytes.Equal(in.Key, out.Key) {
			t.Errorf("key: cut %v (want %v), %d of %d bytes", keyCut, wantKeyCut, len(out.Key), len(in.Key))
		}
		if keyCut {
			ks := sha256.Sum256(in.Key)
			if h[HeaderOriginalKeySize] != strconv.Itoa(len(in.Key)) || h[HeaderKeySHA256] != hex.EncodeToString(ks[:]) {
				t.Errorf("key headers %q %q", h[HeaderOriginalKeySize], h[HeaderKeySHA256])
			}
		}
		// What the broker measures fits the limit; and a cut value is as
		// long as it can be (one byte more would not fit the budget).
		if n := encodedBatchSize(t, out) + 12; n > int(limit) {
			t.Errorf("the dead letter's batch is %d bytes at the broker, over the limit %d", n, limit)
		}
		if wantTrunc && !keyCut && recordWireSize(out.Key, in.Value[:len(out.Value)+1], out.Headers) <= deadLetterBudget(limit) {
			t.Errorf("value cut to %d bytes: one more byte would still fit", len(out.Value))
		}
	}
	const reason = "decode binary: unknown op 9 at byte 0"

	small := src([]byte("k"), []byte{9, 9, 9})
	out, trunc, err := buildDeadLetter("dlq", small, reason, DefaultMaxMessageBytes)
	if err != nil || trunc {
		t.Fatalf("small record: %v truncated %v", err, trunc)
	}
	check(t, small, out, DefaultMaxMessageBytes, false, false)
	if out.Topic != "dlq" {
		t.Errorf("topic %q", out.Topic)
	}

	// About 1 MB: fits the broker's default whole (not the client's
	// default 1,000,012, which is why the limit is raised).
	mb := src([]byte("p0"), bytes.Repeat([]byte{9}, 1_040_000))
	out, trunc, err = buildDeadLetter("dlq", mb, reason, DefaultMaxMessageBytes)
	if err != nil || trunc {
		t.Fatalf("1 MB record: %v truncated %v", err, trunc)
	}
	check(t, mb, out, DefaultMaxMessageBytes, false, false)

	// As large as a topic with the default limit admits: with the headers
	// the dead letter would not fit, so its value is cut.
	full := src([]byte("p0"), bytes.Repeat([]byte{9}, DefaultMaxMessageBytes-61-12-16))
	out, trunc, err = buildDeadLetter("dlq", full, reason, DefaultMaxMessageBytes)
	if err != nil || !trunc {
		t.Fatalf("full-size record: %v truncated %v", err, trunc)
	}
	check(t, full, out, DefaultMaxMessageBytes, true, false)

	// Every limit from tiny to large: a value cut, then the key cut too,
	// then no dead letter at all.
	huge := src(bytes.Repeat([]byte("K"), 5000), bytes.Repeat([]byte{1}, 20000))
	var tooLarge *errDeadLetterTooLarge
	sawKeyCut, sawRefused := false, false
	for limit := int32(300); limit < 30000; limit += 97 {
		out, trunc, err := buildDeadLetter("dlq", huge, strings.Repeat("r", 3000), limit)
		if errors.As(err, &tooLarge) {
			sawRefused = true
			if !strings.Contains(err.Error(), "max.message.bytes") {
				t.Errorf("limit %d: %v", limit, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		keyCut := len(out.Key) < len(huge.Key)
		sawKeyCut = sawKeyCut || keyCut
		check(t, huge, out, limit, trunc, keyCut)
		if h := headerMap(out); len(h[HeaderReason]) > maxReasonBytes {
			t.Errorf("reason header of %d bytes", len(h[HeaderReason]))
		}
	}
	if !sawKeyCut || !sawRefused {
		t.Errorf("the limits tried saw a cut key %v, a refused dead letter %v; want both", sawKeyCut, sawRefused)
	}
}

func TestCutUTF8(t *testing.T) {
	s := "aé€😀"
	for n := 0; n <= len(s)+1; n++ {
		c := cutUTF8(s, n)
		if len(c) > n || !strings.HasPrefix(s, c) || !utf8ValidString(c) {
			t.Errorf("cutUTF8(%q, %d) = %q", s, n, c)
		}
	}
}

func utf8ValidString(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestLongestFit(t *testing.T) {
	for most := 0; most < 40; most++ {
		for limit := 0; limit <= most; limit++ {
			if got := longestFit(most, func(n int) bool { return n <= limit }); got != limit {
				t.Fatalf("longestFit(%d, <= %d) = %d", most, limit, got)
			}
		}
	}
}

// TestDeadLettersPart: the dead letters part alone, against a fake
// producer. A produce builds the dead letter at the limit; a broker's
// "too large" while the topic's limit is unknown halves the assumed
// limit and marks it for reading again; a block is retried when its
// backoff is due, one attempt at a time, doubles its backoff on failure,
// and once acknowledged is taken back (or dropped with its partition).
func TestDeadLettersPart(t *testing.T) {
	m := NewMetrics(nil)
	d := newDeadLetters(&Config{DeadLetterTopic: "dlt", Metrics: m, Logger: slog.New(slog.DiscardHandler)})
	src := &kgo.Record{Topic: "edges", Partition: 1, Offset: 7, Value: []byte("bad")}
	p := newFakeDLClient()
	var got []error
	d.produce(context.Background(), p, src, "why", func(err error) { got = append(got, err) })
	if len(p.produced) != 1 || p.produced[0] != "edges/1@7 to dlt: key=0B value=3B truncated=false" || len(got) != 1 || got[0] != nil {
		t.Fatalf("produced %v, answers %v", p.produced, got)
	}
	if d.inflight.Load() != 0 {
		t.Fatalf("%d in flight after the answer", d.inflight.Load())
	}
	d.noteError(kerr.MessageTooLarge)
	if d.assumedLimit() != DefaultMaxMessageBytes/2 || !d.limitStale {
		t.Fatalf("after a broker's too large: limit %d, stale %v", d.assumedLimit(), d.limitStale)
	}
	if !d.learnLimit(5000) || d.learnLimit(5000) || d.limitStale {
		t.Fatal("learnLimit: the first read is news, the same again is not, and the limit is no longer stale")
	}
	d.noteError(kerr.MessageTooLarge) // known now: not halved
	if d.assumedLimit() != 5000 || testutil.ToFloat64(m.DeadLetterFailures) != 2 {
		t.Fatalf("limit %d, failures %v", d.assumedLimit(), testutil.ToFloat64(m.DeadLetterFailures))
	}

	t0 := time.Now()
	held, n := d.addBlocks(map[tp]*dlBlock{{"edges", 1}: {tp: tp{"edges", 1}, offset: 7, src: src}, {"edges", 2}: {tp: tp{"edges", 2}, offset: 3, src: src}})
	if len(held) != 2 || n != 2 || d.blocked() != 2 {
		t.Fatalf("held %v, %d blocked", held, n)
	}
	if c := d.cuts(); c[tp{"edges", 1}] != 7 || c[tp{"edges", 2}] != 3 {
		t.Fatalf("cuts %v", c)
	}
	if due, _ := d.due(t0); len(due) != 0 {
		t.Fatalf("due before the first backoff: %d", len(due))
	}
	due, stale := d.due(t0.Add(200 * time.Millisecond))
	if len(due) != 2 || !stale {
		t.Fatalf("due after the backoff: %d, stale %v", len(due), stale)
	}
	if again, _ := d.due(t0.Add(time.Hour)); len(again) != 0 {
		t.Fatalf("%d attempts started while theirs run", len(again))
	}
	for _, b := range due {
		if b.partition == 1 {
			d.attemptDone(b, nil)
		} else {
			d.attemptDone(b, errors.New("refused"))
			if b.backoff != 200*time.Millisecond || b.tries != 1 || b.lastErr == nil {
				t.Fatalf("after a failed retry: backoff %v, tries %d, err %v", b.backoff, b.tries, b.lastErr)
			}
		}
	}
	done, left := d.takeAcked()
	if len(done) != 1 || done[0].partition != 1 || left != 1 {
		t.Fatalf("taken %v, %d left", done, left)
	}
	if dropped := d.drop(map[string][]int32{"edges": {1, 2}}); len(dropped["edges"]) != 1 || dropped["edges"][0] != 2 || d.blocked() != 0 {
		t.Fatalf("dropped %v, %d blocked", dropped, d.blocked())
	}
}
