// Package alerts delivers the alerts of graphtide's monitors to Kafka: one
// JSON record per alert (the analytics.Alert fields), keyed by the vertex,
// with headers naming the analytic, the kind and the alert's ID.
//
// Publishing never blocks the analytic that raised the alerts: records go
// to the client's buffer (bounded); when it is full an alert is dropped and
// counted, never queued without bound.
//
// Exactly once across restarts, with the analytics' checkpoints: a
// checkpoint waits until every alert published before it is acknowledged
// (and fails once one was dropped or failed, so that a restart goes back
// to a checkpoint before it and raises it again), and records
// the topic's end offsets; a restart from that checkpoint reads the alerts
// produced since then and skips their IDs when the replay raises them
// again (Checkpoint, Resume).
package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Header names of alert records.
const (
	HeaderAnalytic = "graphtide-analytic"
	HeaderKind     = "graphtide-alert-kind"
	HeaderID       = "graphtide-alert-id"
)

// KafkaSink is an analytics.AlertSink producing to a topic.
type KafkaSink struct {
	cl    *kgo.Client
	topic string
	log   *slog.Logger
	opts  []kgo.Opt // brokers, TLS, SASL: for the reader Resume makes
	// ext, when set, turns the store's vertex ids into the ids the sources
	// gave (a mapped number's id into the number; see keydict.NumID).
	// Set before the first Publish.
	ext     func(uint64) uint64
	sent    atomic.Uint64
	dropped atomic.Uint64
	failed  atomic.Uint64

	mu sync.Mutex
	// skip holds the IDs of the alerts delivered since the checkpoint a
	// restart resumed from (Resume): a replay raises them again. Protected
	// by mu.
	skip map[string]struct{}
}

// NewKafkaSink connects to brokers (opts: TLS, SASL, hooks), creates the
// topic when missing (a failure is logged: producing retries), and returns
// the sink. Close it to flush what is buffered.
func NewKafkaSink(ctx context.Context, brokers []string, topic string, log *slog.Logger, opts ...kgo.Opt) (*KafkaSink, error) {
	if topic == "" {
		return nil, errors.New("alerts: the alert topic must not be empty")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(100000), kgo.AllowAutoTopicCreation()}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("alerts: kafka client: %w", err)
	}
	if err := kafkaconn.EnsureTopic(ctx, cl, topic, 1); err != nil {
		log.Warn("could not create the alert topic (producing retries)", "topic", topic, "err", err)
	}
	return &KafkaSink{cl: cl, topic: topic, log: log, opts: append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)}, nil
}

// SetVertexIDs makes alerts carry the vertex ids the sources gave: ext
// maps a store id to it. Call it before the sink gets its first alert.
func (k *KafkaSink) SetVertexIDs(ext func(uint64) uint64) { k.ext = ext }

// Publish implements analytics.AlertSink without blocking. An alert whose
// ID was delivered before a restart (Resume) is skipped.
func (k *KafkaSink) Publish(al []analytics.Alert) {
	for _, a := range al {
		if k.delivered(a.ID) {
			continue
		}
		if k.ext != nil {
			a.Vertex = k.ext(a.Vertex)
			if a.Cycle != nil {
				c := make([]uint64, len(a.Cycle))
				for i, v := range a.Cycle {
					c[i] = k.ext(v)
				}
				a.Cycle = c
			}
		}
		v, err := json.Marshal(a)
		if err != nil {
			k.failed.Add(1)
			continue
		}
		// Keyed by the vertex: its string key, else its id.
		key := a.VertexKey
		if key == "" {
			key = strconv.FormatUint(a.Vertex, 10)
		}
		rec := &kgo.Record{Key: []byte(key), Value: v, Headers: []kgo.RecordHeader{
			{Key: HeaderAnalytic, Value: []byte(a.Analytic)}, {Key: HeaderKind, Value: []byte(a.Kind)}, {Key: HeaderID, Value: []byte(a.ID)}}}
		k.cl.TryProduce(context.Background(), rec, func(_ *kgo.Record, err error) {
			switch {
			case err == nil:
				k.sent.Add(1)
			case errors.Is(err, kgo.ErrMaxBuffered):
				if k.dropped.Add(1) == 1 {
					k.log.Warn("alert buffer full: alerts are dropped (still readable over HTTP)", "topic", k.topic)
				}
			default:
				k.failed.Add(1)
				k.log.Error("producing an alert failed", "topic", k.topic, "err", err)
			}
		})
	}
}

// delivered reports whether the alert of that ID was delivered before the
// restart (and forgets it: an ID is raised again at most once).
func (k *KafkaSink) delivered(id string) bool {
	if id == "" {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.skip[id]; ok {
		delete(k.skip, id)
		return true
	}
	return false
}

// Checkpoint waits until every alert published so far is acknowledged and
// returns the alert topic's end offsets (JSON, partition to offset): where
// alerts published after it begin. It fails once an alert was dropped or
// failed, and from then on: the checkpoint must not be taken past an alert
// that was not delivered (a restart goes back to the checkpoint before it
// and raises it again).
func (k *KafkaSink) Checkpoint(ctx context.Context) ([]byte, error) {
	if err := k.cl.Flush(ctx); err != nil {
		return nil, fmt.Errorf("alerts: waiting for the alerts to be acknowledged: %w", err)
	}
	if n := k.dropped.Load() + k.failed.Load(); n > 0 {
		return nil, fmt.Errorf("alerts: %d alert(s) were dropped or failed: no checkpoint is taken after them, so that a restart raises them again", n)
	}
	ends, err := k.endOffsets(ctx)
	if err != nil {
		return nil, err
	}
	pos := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { pos[o.Partition] = o.Offset })
	return json.Marshal(pos)
}

// endOffsets lists the alert topic's end offsets.
func (k *KafkaSink) endOffsets(ctx context.Context) (kadm.ListedOffsets, error) {
	ends, err := kadm.NewClient(k.cl).ListEndOffsets(ctx, k.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("alerts: the alert topic's end offsets: %w", err)
	}
	return ends, nil
}

// Resume reads the alerts produced since pos (what Checkpoint returned)
// up to the topic's end now, and skips their IDs when they are published
// again. Call it before anything is published.
func (k *KafkaSink) Resume(ctx context.Context, pos []byte) error {
	from := map[int32]int64{}
	if err := json.Unmarshal(pos, &from); err != nil {
		return fmt.Errorf("alerts: the checkpoint's alert position: %w", err)
	}
	ends, err := k.endOffsets(ctx)
	if err != nil {
		return err
	}
	offs := map[int32]kgo.Offset{}
	left := map[int32]int64{} // partition -> end offset still to reach
	ends.Each(func(o kadm.ListedOffset) {
		start := from[o.Partition] // a partition new since: from its start
		if start < o.Offset {
			offs[o.Partition] = kgo.NewOffset().At(start)
			left[o.Partition] = o.Offset
		}
	})
	skip := map[string]struct{}{}
	if len(offs) > 0 {
		cl, err := kgo.NewClient(append(slices.Clone(k.opts), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{k.topic: offs}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
		if err != nil {
			return fmt.Errorf("alerts: reading the alerts since the checkpoint: %w", err)
		}
		defer cl.Close()
		for len(left) > 0 {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("alerts: reading the alerts since the checkpoint: %w", err)
			}
			var ferr error
			fs.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				return fmt.Errorf("alerts: reading the alerts since the checkpoint: %w", ferr)
			}
			fs.EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == HeaderID {
						skip[string(h.Value)] = struct{}{}
					}
				}
				if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
					delete(left, r.Partition)
				}
			})
		}
	}
	k.mu.Lock()
	k.skip = skip
	k.mu.Unlock()
	k.log.Info("alerts since the checkpoint read: a replay raising them again skips them", "topic", k.topic, "alerts", len(skip))
	return nil
}

// Stats returns the alerts acknowledged, dropped (buffer full) and failed.
func (k *KafkaSink) Stats() (sent, dropped, failed uint64) {
	return k.sent.Load(), k.dropped.Load(), k.failed.Load()
}

// Close flushes buffered alerts (until ctx ends) and closes the client.
func (k *KafkaSink) Close(ctx context.Context) {
	if err := k.cl.Flush(ctx); err != nil {
		k.log.Warn("alerts not delivered before shutdown", "err", err)
	}
	k.cl.Close()
}
