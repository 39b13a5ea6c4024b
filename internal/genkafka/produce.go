// Package genkafka produces a generated edge stream to a Kafka topic, in
// any of the record formats ingest reads, at an optional steady rate, with
// a configurable share of deletes of earlier edges.
package genkafka

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
)

// Config of one Produce call.
type Config struct {
	Brokers     []string
	Topic       string
	Format      decode.Format
	Rate        int     // edges per second; 0 = as fast as possible
	DeleteShare float64 // 0..1: share of events that delete an earlier edge
	Seed        uint64
	ClientOpts  []kgo.Opt
	// Timeout is how long to wait for a broker to answer, before the
	// first record and for each record to be acknowledged; default 30s,
	// at least 1s. Past it Produce gives up with an error that says so.
	Timeout time.Duration
	// Acked, if set, counts the records the brokers acknowledged (for
	// progress).
	Acked *atomic.Int64
}

// DefaultTimeout is Config.Timeout when it is zero.
const DefaultTimeout = 30 * time.Second

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// WaitForBroker returns once a broker of cl answers, or an error that
// names the brokers and the timeout when none does within timeout (or
// ctx's error if ctx ends first). Brokers that refuse this client's TLS
// or SASL settings are not waited for: that is a *kafkaconn.RefusedError
// once the same refusal came three times in a row.
func WaitForBroker(ctx context.Context, cl *kgo.Client, brokers []string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	refusals := 0
	for {
		err := cl.Ping(wctx)
		if err == nil {
			return nil
		}
		if re := kafkaconn.Refused(err); re == nil {
			refusals = 0
		} else if refusals++; refusals == 3 {
			return re
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			last = err
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			why := "no answer"
			if last != nil {
				why = last.Error()
			}
			return fmt.Errorf("no Kafka broker answered at %s within %v (--timeout): %s", strings.Join(brokers, ","), timeout, why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ProduceError explains a produce failure; a record not acknowledged in
// time means that the brokers stopped answering.
func ProduceError(topic string, brokers []string, timeout time.Duration, err error) error {
	if errors.Is(err, kgo.ErrRecordTimeout) {
		return fmt.Errorf("producing to %s: no Kafka broker at %s acknowledged a record within %v (--timeout): %w", topic, strings.Join(brokers, ","), timeout, err)
	}
	return fmt.Errorf("producing to %s: %w", topic, err)
}

// ClientOpts are the options of a producer that gives up on a record not
// acknowledged within timeout.
func ClientOpts(timeout time.Duration) []kgo.Opt {
	return []kgo.Opt{kgo.RecordDeliveryTimeout(timeout)}
}

// Check returns an error when no broker of cfg answers within its
// Timeout: gen calls it before generating a stream that may take long.
func Check(ctx context.Context, cfg Config) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return WaitForBroker(ctx, cl, cfg.Brokers, cfg.timeout())
}

// Stats of a finished Produce.
type Stats struct {
	Upserts, Deletes int
	Elapsed          time.Duration
}

// Produce sends one record per event, keyed by source vertex so that all
// events of an edge keep their order within one partition. Event i upserts
// edges[i], or, with probability DeleteShare, deletes an edge of an earlier
// event; the stream is deterministic for (edges, DeleteShare, Seed).
func Produce(ctx context.Context, cfg Config, edges []gen.Edge) (Stats, error) {
	var st Stats
	if cfg.DeleteShare < 0 || cfg.DeleteShare >= 1 {
		return st, fmt.Errorf("delete share must be in [0, 1), got %v", cfg.DeleteShare)
	}
	timeout := cfg.timeout()
	if timeout < time.Second {
		return st, fmt.Errorf("timeout must be at least 1s, got %v", timeout)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}, ClientOpts(timeout)...)
	opts = append(opts, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return st, err
	}
	defer cl.Close()
	if err := WaitForBroker(ctx, cl, cfg.Brokers, timeout); err != nil {
		return st, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 77))
	start := time.Now()
	a := newAcks(cfg.Acked)
	var buf []byte
	var key []byte
	produced := 0
	for i := 0; i < len(edges); i++ {
		e := decode.Edge{Op: decode.OpUpsert, Src: edges[i].Src, Dst: edges[i].Dst}
		if i > 0 && r.Float64() < cfg.DeleteShare {
			old := edges[r.IntN(i)]
			e = decode.Edge{Op: decode.OpDeleteEdge, Src: old.Src, Dst: old.Dst}
			st.Deletes++
		} else {
			st.Upserts++
		}
		switch cfg.Format {
		case decode.FormatJSON:
			buf = decode.AppendJSON(buf[:0], e, "", "")
		case decode.FormatText:
			buf = decode.AppendText(buf[:0], e)
		default:
			buf = decode.AppendBinary(buf[:0], e)
		}
		key = strconv.AppendUint(key[:0], e.Src, 10)
		rec := &kgo.Record{Key: append([]byte(nil), key...), Value: append([]byte(nil), buf...)}
		cl.Produce(ctx, rec, a.done)
		produced++
		if cfg.Rate > 0 && produced%100 == 0 {
			due := start.Add(time.Duration(float64(produced) / float64(cfg.Rate) * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err := a.failed(cfg.Topic, cfg.Brokers, timeout); err != nil {
			return st, err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return st, fmt.Errorf("producing to %s: flush: %w", cfg.Topic, err)
	}
	if err := a.failed(cfg.Topic, cfg.Brokers, timeout); err != nil {
		return st, err
	}
	st.Elapsed = time.Since(start)
	return st, ctx.Err()
}
