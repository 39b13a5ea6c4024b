package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/graphid"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/writes"
)

// writer is POST /v1/batches' way into the writes topic (api.Writer): it
// produces the batch (acks from every in-sync replica, idempotent: the
// franz-go defaults) with a request id, and waits for the applier to hand
// back the outcome under that id.
type writer struct {
	cl      *kgo.Client // Owned by writer; closed by close.
	topic   string
	graph   string // the graph the batches are for (graphid.HeaderGraph; "": none)
	waiters *writes.Waiters
}

// newWriter connects a producer to the writes topic, creating the topic
// (one partition: one order for every write) when missing; a failure to
// create it is logged (the topic may exist, or be created by an admin).
func (s *Server) newWriter(ctx context.Context, opts []kgo.Opt) (*writer, error) {
	topic := s.cfg.WritesTopic
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("the writes topic's producer: %w", err)
	}
	if err := kafkaconn.EnsureTopic(ctx, cl, topic, 1); err != nil {
		s.log.Warn("could not create the writes topic (POST /v1/batches waits for it)", "topic", topic, "err", err)
	}
	return &writer{cl: cl, topic: topic, graph: s.cfg.Graph, waiters: writes.NewWaiters()}, nil
}

// Submit implements api.Writer.
func (w *writer) Submit(ctx context.Context, r *writes.Request) (writes.Result, error) {
	value, err := writes.Encode(r)
	if err != nil {
		return writes.Result{}, err
	}
	id, ch := w.waiters.Add()
	defer w.waiters.Done(id)
	rec := &kgo.Record{Topic: w.topic, Value: value, Headers: []kgo.RecordHeader{{Key: writes.HeaderRequest, Value: []byte(id)}}}
	if w.graph != "" {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: graphid.HeaderGraph, Value: []byte(w.graph)})
	}
	if r.IdempotencyKey != "" {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: writes.HeaderKey, Value: []byte(r.IdempotencyKey)})
	}
	if err := w.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		if errors.Is(err, kerr.MessageTooLarge) {
			return writes.Result{}, fmt.Errorf("%w (%d bytes)", writes.ErrTooLarge, len(value))
		}
		return writes.Result{}, fmt.Errorf("the writes topic %s did not take the batch (it may still be applied%s): %w", w.topic, retryHint(r), err)
	}
	select {
	case res := <-ch:
		return res, nil
	case <-ctx.Done():
		return writes.Result{}, fmt.Errorf("the batch is in the writes topic (partition %d, offset %d) but its outcome did not come within the deadline: ingestion is behind or paused (see /readyz), or the record went to the dead letters%s",
			rec.Partition, rec.Offset, retryHint(r))
	}
}

// retryHint says how to learn a write's outcome.
func retryHint(r *writes.Request) string {
	if r.IdempotencyKey == "" {
		return "; it has no idempotency key: a retry may apply it twice"
	}
	return ": retry with the same idempotency key to learn its outcome"
}

func (w *writer) close() { w.cl.Close() }
