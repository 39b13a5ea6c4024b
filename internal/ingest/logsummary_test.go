package ingest

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// logLines returns the lines of lb whose msg starts with prefix.
func logLines(lb *syncBuffer, prefix string) []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var out []string
	for _, l := range strings.Split(lb.b.String(), "\n") {
		if strings.Contains(l, `msg="`+prefix) || strings.Contains(l, "msg="+prefix) {
			out = append(out, l)
		}
	}
	return out
}

// attrInt is the integer attribute key of a log line (0 if absent).
func attrInt(t *testing.T, line, key string) int {
	t.Helper()
	m := regexp.MustCompile(` ` + key + `=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStallsLogOneLinePerInterval (issue 40: a 26-second ingest logged 52
// INFO lines, "store stalled; fetching paused" and "store caught up;
// fetching resumed" per stall): 30 stalls of 60ms each, with a log
// interval of 300ms, make one line per interval with stalls, and the
// stalls the lines count are the fetch pauses the metric counts; a stall
// that outlasts an interval is reported as in progress.
func TestStallsLogOneLinePerInterval(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lb := &syncBuffer{}
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"edges"},
		Logger: slog.New(slog.NewTextHandler(lb, nil)), Metrics: NewMetrics(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer in.cl.Close()
	const interval = 300 * time.Millisecond
	in.setLogInterval(interval)
	var b engine.Batch
	b.Insert(1, 2)
	t0 := time.Now()
	const stalls = 30
	for range stalls {
		if _, err := in.applyWith(&b, func() (uint64, error) { time.Sleep(60 * time.Millisecond); return 1, nil }); err != nil {
			t.Fatal(err)
		}
	}
	// One that outlasts an interval: reported while in progress.
	if _, err := in.applyWith(&b, func() (uint64, error) { time.Sleep(2 * interval); return 1, nil }); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(t0)
	in.closeLogs()
	lines := logLines(lb, "store")
	n, inProgress := 0, 0
	for _, l := range lines {
		n += attrInt(t, l, "times")
		if strings.Contains(l, "in_progress_for=") {
			inProgress++
		}
	}
	paused := int(testutil.ToFloat64(in.cfg.Metrics.Paused))
	if paused != stalls+1 || n != paused {
		t.Errorf("the lines count %d stalls, the metric %v; want %d", n, paused, stalls+1)
	}
	if most := int(elapsed/interval) + 2; len(lines) > most || len(lines) < 2 {
		t.Errorf("%d lines about stalls in %v with a %v interval; want between 2 and %d:\n%s", len(lines), elapsed, interval, most, strings.Join(lines, "\n"))
	}
	if inProgress == 0 {
		t.Errorf("no line reported the stall in progress:\n%s", strings.Join(lines, "\n"))
	}
	// Nothing more while nothing stalls.
	before := len(logLines(lb, "store"))
	time.Sleep(2 * interval)
	if after := len(logLines(lb, "store")); after != before {
		t.Errorf("%d lines about stalls while nothing stalled", after-before)
	}
}

// TestDeadLettersLogAggregated: a flood of 400 undecodable records makes
// one full WARN line per interval (the first dead letter, with its
// offset and reason) and one line counting the rest, not a line per
// record; the lines account for every dead letter the metric counts.
func TestDeadLettersLogAggregated(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addrs := c.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic("edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const poison = 400
	var recs []*kgo.Record
	for i := range poison {
		recs = append(recs, &kgo.Record{Value: []byte{9, 9, 9}})
		recs = append(recs, &kgo.Record{Value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpUpsert, Src: uint64(i), Dst: uint64(i + 1)})})
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lb := &syncBuffer{}
	m := NewMetrics(nil)
	in, err := New(s, nil, Config{Brokers: addrs, Topics: []string{"edges"}, FlushInterval: 50 * time.Millisecond, Metrics: m,
		Logger: slog.New(slog.NewTextHandler(lb, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const interval = 200 * time.Millisecond
	in.setLogInterval(interval)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- in.Run(ctx) }()
	for deadline := time.Now().Add(30 * time.Second); testutil.ToFloat64(m.DeadLetters.WithLabelValues("edges")) < poison; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v dead letters after 30 s, want %d", testutil.ToFloat64(m.DeadLetters.WithLabelValues("edges")), poison)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(t0)
	full := logLines(lb, "record dead-lettered")
	more := logLines(lb, "more records dead-lettered")
	n := len(full)
	for _, l := range more {
		n += attrInt(t, l, "records")
		if !strings.Contains(l, "topic=edges") {
			t.Errorf("a summary line without its topic: %s", l)
		}
	}
	if n != poison {
		t.Errorf("the log accounts for %d dead letters (%d full lines, %d summaries), want %d", n, len(full), len(more), poison)
	}
	if most := int(elapsed/interval) + 2; len(full) > most || len(more) > most {
		t.Errorf("%d full lines and %d summaries of %d dead letters in %v with a %v interval; want at most %d of each", len(full), len(more), poison, elapsed, interval, most)
	}
	for _, l := range full {
		if !strings.Contains(l, "offset=") || !strings.Contains(l, "reason=") {
			t.Errorf("a full line without offset and reason: %s", l)
		}
	}
}

// TestFetchErrorsLogAggregated: fetch errors repeated at every poll (a
// broker restarting) make, per interval, one full WARN line per topic and
// error and one line counting the repeats; every error is counted.
func TestFetchErrorsLogAggregated(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lb := &syncBuffer{}
	in, err := New(s, nil, Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"a", "b"},
		Logger: slog.New(slog.NewTextHandler(lb, nil)), Metrics: NewMetrics(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer in.cl.Close()
	in.setLogInterval(time.Hour) // one interval: closeLogs ends it
	refused := errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
	fetches := kgo.Fetches{{Topics: []kgo.FetchTopic{
		{Topic: "a", Partitions: []kgo.FetchPartition{{Partition: 0, Err: refused}, {Partition: 1, Err: refused}}},
		{Topic: "b", Partitions: []kgo.FetchPartition{{Partition: 0, Err: refused}}},
	}}}
	for range 50 {
		in.noteFetchErrors(context.Background(), fetches)
	}
	in.closeLogs()
	full, more := logLines(lb, "fetch error (retrying)"), logLines(lb, "fetch error repeated")
	if len(full) != 2 || len(more) != 2 {
		t.Fatalf("%d full lines and %d summaries, want 2 and 2 (one per topic):\n%s", len(full), len(more), lb.b.String())
	}
	n := len(full)
	for _, l := range more {
		n += attrInt(t, l, "times")
	}
	if n != 150 || testutil.ToFloat64(in.cfg.Metrics.FetchErrs) != 150 {
		t.Errorf("the lines account for %d errors, the metric %v; want 150", n, testutil.ToFloat64(in.cfg.Metrics.FetchErrs))
	}
}

// TestDeadLetterLimitOfANewTopic: at start the dead-letter topic, created
// a moment ago, may be unknown to the broker asked for its
// max.message.bytes for a moment; that is normal on a first start and is
// waited for, without the WARN that the limit could not be read.
func TestDeadLetterLimitOfANewTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var unknown atomic.Int32
	c.ControlKey(int16(kmsg.DescribeConfigs), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if unknown.Add(1) > 3 {
			return nil, nil, false
		}
		req := kr.(*kmsg.DescribeConfigsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range req.Resources {
			r := kmsg.NewDescribeConfigsResponseResource()
			r.ResourceType, r.ResourceName, r.ErrorCode = rr.ResourceType, rr.ResourceName, kerr.UnknownTopicOrPartition.Code
			resp.Resources = append(resp.Resources, r)
		}
		return resp, nil, true
	})
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lb := &syncBuffer{}
	in, err := New(s, nil, Config{Brokers: c.ListenAddrs(), Topics: []string{"edges"}, Metrics: NewMetrics(nil),
		Logger: slog.New(slog.NewTextHandler(lb, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	for deadline := time.Now().Add(20 * time.Second); len(logLines(lb, "dead-letter topic limit"))+len(logLines(lb, "could not read the dead-letter")) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dead-letter topic's limit was not read within 20 s")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w := logLines(lb, "could not read the dead-letter"); len(w) > 0 || unknown.Load() <= 3 {
		t.Errorf("%d answers, the WARN %q", unknown.Load(), w)
	}
	if l := logLines(lb, "dead-letter topic limit"); len(l) != 1 || !strings.Contains(l[0], "max_message_bytes=") {
		t.Errorf("the limit line: %q", l)
	}
}
