package genkafka

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/ownership"
	"github.com/graphtide/graphtide/internal/progress"
)

// LinesConfig of one ProduceLines call ('graphtide produce').
type LinesConfig struct {
	Brokers    []string
	ClientOpts []kgo.Opt
	Topic      string
	// KeyBySource keys each record by its source vertex (SourceKey), so
	// that every event of a vertex lands on one partition, in order.
	KeyBySource bool
	// KeyPointer, when set, keys each JSON record by the value at this
	// JSON pointer instead (KeyAt: "/from_account" for payments of that
	// shape); a record without it gets no key.
	KeyPointer string
	// Partitions, when above 0, is the topic's partition count: it is
	// created with that many if missing, and must have that many if not
	// (partitioned mode routes by the count: see EnsurePartitions).
	Partitions int
	Timeout    time.Duration // as Config.Timeout
	// Read and Acked, if set, count the bytes read and the records the
	// brokers acknowledged (for progress).
	Read, Acked *atomic.Int64
}

// ProduceFiles is 'graphtide produce': ProduceLines of files (stdin when
// there are none), its progress drawn on errOut (package progress: bytes
// read of the files' size when they are all files, else records; a plain
// line every interval off a terminal), and what it produced printed on
// out. cfg.Read and cfg.Acked are its own.
func ProduceFiles(ctx context.Context, cfg LinesConfig, files []string, stdin io.Reader, out, errOut io.Writer, every time.Duration) error {
	if len(files) == 0 {
		files = []string{"-"}
	}
	var total int64
	doneUnit := "bytes"
	for _, f := range files {
		info, err := os.Stat(f)
		if f == "-" || err != nil || !info.Mode().IsRegular() {
			total, doneUnit = 0, ""
			break
		}
		total += info.Size()
	}
	t0 := time.Now()
	var read, acked atomic.Int64
	cfg.Read, cfg.Acked = &read, &acked
	prog := progress.New(errOut, progress.IsTerminal(errOut), "produce", "records", doneUnit, total, every, t0)
	done := acked.Load
	if doneUnit != "" {
		done = read.Load
	}
	stop := prog.Follow(done, acked.Load)
	defer stop()
	n, err := ProduceLines(ctx, cfg, files, stdin)
	if err != nil {
		return err
	}
	stop()
	fmt.Fprintf(out, "produced %d records to topic %s in %s\n", n, cfg.Topic, time.Since(t0).Round(time.Millisecond))
	return nil
}

// ProduceLines sends every non-empty line (spaces trimmed) of the files,
// in order, as one record; "-" is stdin. It returns the records produced,
// all acknowledged when the error is nil.
func ProduceLines(ctx context.Context, cfg LinesConfig, files []string, stdin io.Reader) (int, error) {
	timeout := Config{Timeout: cfg.Timeout}.timeout()
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.ProducerLinger(5 * time.Millisecond)}, ClientOpts(timeout)...)
	cl, err := kgo.NewClient(append(opts, cfg.ClientOpts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := WaitForBroker(ctx, cl, cfg.Brokers, timeout); err != nil {
		return 0, err
	}
	if cfg.Partitions > 0 {
		if err := EnsurePartitions(ctx, cl, cfg.Topic, cfg.Partitions); err != nil {
			return 0, err
		}
	}
	read := cfg.Read
	if read == nil {
		read = new(atomic.Int64)
	}
	a := newAcks(cfg.Acked)
	failed := func() error { return a.failed(cfg.Topic, cfg.Brokers, timeout) }
	n := 0
	for _, f := range files {
		r := stdin
		if f != "-" {
			fh, err := os.Open(f)
			if err != nil {
				return n, err
			}
			defer fh.Close()
			r = fh
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), 1<<24)
		for sc.Scan() {
			read.Add(int64(len(sc.Bytes())) + 1)
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			rec := &kgo.Record{Value: []byte(text)}
			switch {
			case cfg.KeyPointer != "":
				rec.Key = []byte(KeyAt(text, cfg.KeyPointer))
			case cfg.KeyBySource:
				rec.Key = []byte(SourceKey(text))
			}
			cl.Produce(ctx, rec, a.done)
			n++
			if err := failed(); err != nil {
				return n, err
			}
		}
		if err := sc.Err(); err != nil {
			return n, fmt.Errorf("%s: %w", f, err)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return n, err
	}
	return n, failed()
}

// SourceKey returns the key of a JSON or text record line: the source
// vertex of its (first) event, as ownership.Key writes it (a number as its
// canonical decimal), so that every event of a vertex lands on one
// partition, in order, the one partitioned mode routes the vertex to: a
// JSON object's (or an array's first object's) "src"; a text line's first
// field, after a "d", "dv" or "v" marker. "" when there is none.
func SourceKey(line string) string {
	if strings.HasPrefix(line, "{") || strings.HasPrefix(line, "[") {
		var ev struct {
			Src json.RawMessage `json:"src"`
		}
		raw := []byte(line)
		if strings.HasPrefix(line, "[") {
			var evs []json.RawMessage
			if json.Unmarshal(raw, &evs) != nil || len(evs) == 0 {
				return ""
			}
			raw = evs[0]
		}
		if json.Unmarshal(raw, &ev) != nil || len(ev.Src) == 0 {
			return ""
		}
		var key string
		if json.Unmarshal(ev.Src, &key) == nil {
			return key // a string key, as it is
		}
		var n json.Number
		if json.Unmarshal(ev.Src, &n) == nil {
			return ownership.Key(n.String())
		}
		return ""
	}
	f := strings.Fields(line)
	if len(f) > 1 && (f[0] == "d" || f[0] == "dv" || f[0] == "v") {
		return ownership.Key(f[1])
	}
	if len(f) > 0 {
		return ownership.Key(f[0])
	}
	return ""
}

// KeyAt returns the key of a JSON record line at the JSON pointer ptr
// (RFC 6901, "/a/b"; in an array, its first object's): a string as it
// is, a number as ownership.Key writes it, as SourceKey does for "src".
// "" when the line is not JSON or has nothing there.
func KeyAt(line, ptr string) string {
	var v any
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return ""
	}
	if a, ok := v.([]any); ok {
		if len(a) == 0 {
			return ""
		}
		v = a[0]
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		if v, ok = m[tok]; !ok {
			return ""
		}
	}
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return ownership.Key(x.String())
	}
	return ""
}

// acks collects the outcome of asynchronous produces: the first error, and
// a count of the records acknowledged.
type acks struct {
	errc  chan error    // holds the first error
	acked *atomic.Int64 // may be nil
}

func newAcks(acked *atomic.Int64) *acks { return &acks{errc: make(chan error, 1), acked: acked} }

// done is the produce callback.
func (a *acks) done(_ *kgo.Record, err error) {
	if err != nil {
		select {
		case a.errc <- err:
		default:
		}
		return
	}
	if a.acked != nil {
		a.acked.Add(1)
	}
}

// failed returns, without waiting, the first produce error (as
// ProduceError says it), or nil.
func (a *acks) failed(topic string, brokers []string, timeout time.Duration) error {
	select {
	case err := <-a.errc:
		return ProduceError(topic, brokers, timeout, err)
	default:
		return nil
	}
}

// EnsurePartitions creates topic with n partitions (and the brokers'
// default replication) if it does not exist, and otherwise checks that it
// has n: records keyed by source vertex go to murmur2(key) mod the count,
// which serve's partitioned mode routes by, so a topic of another count
// is an error, not something to fix silently (adding partitions would
// move keys that have history).
func EnsurePartitions(ctx context.Context, cl *kgo.Client, topic string, n int) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(n), -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		return nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s with %d partitions: %w", topic, n, err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		return fmt.Errorf("reading topic %s: %w", topic, err)
	}
	if got := len(td[topic].Partitions); got != n {
		return fmt.Errorf("topic %s exists with %d partitions, not %d (--partitions): produce to a topic of %d partitions, or give --partitions %d", topic, got, n, n, got)
	}
	return nil
}
