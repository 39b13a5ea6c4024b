// Package alerts delivers the alerts of graphtide's monitors to Kafka: one
// JSON record per alert (the analytics.Alert fields), keyed by the vertex,
// with headers naming the analytic and the kind.
//
// Publishing never blocks the analytic that raised the alerts: records go
// to the client's buffer (bounded); when it is full an alert is dropped and
// counted, never queued without bound.
package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Header names of alert records.
const (
	HeaderAnalytic = "graphtide-analytic"
	HeaderKind     = "graphtide-alert-kind"
)

// KafkaSink is an analytics.AlertSink producing to a topic.
type KafkaSink struct {
	cl    *kgo.Client
	topic string
	log   *slog.Logger
	// ext, when set, turns the store's vertex ids into the ids the sources
	// gave (a mapped number's id into the number; see keydict.NumID).
	// Set before the first Publish.
	ext     func(uint64) uint64
	sent    atomic.Uint64
	dropped atomic.Uint64
	failed  atomic.Uint64
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
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 1, -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		log.Warn("could not create the alert topic (producing retries)", "topic", topic, "err", err)
	}
	return &KafkaSink{cl: cl, topic: topic, log: log}, nil
}

// SetVertexIDs makes alerts carry the vertex ids the sources gave: ext
// maps a store id to it. Call it before the sink gets its first alert.
func (k *KafkaSink) SetVertexIDs(ext func(uint64) uint64) { k.ext = ext }

// Publish implements analytics.AlertSink without blocking.
func (k *KafkaSink) Publish(al []analytics.Alert) {
	for _, a := range al {
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
		rec := &kgo.Record{Key: []byte(strconv.FormatUint(a.Vertex, 10)), Value: v, Headers: []kgo.RecordHeader{
			{Key: HeaderAnalytic, Value: []byte(a.Analytic)}, {Key: HeaderKind, Value: []byte(a.Kind)}}}
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
