// Package genkafka produces a generated edge stream to a Kafka topic, in
// any of the record formats ingest reads, at an optional steady rate, with
// a configurable share of deletes of earlier edges.
package genkafka

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/ingest/decode"
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
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return st, err
	}
	defer cl.Close()
	r := rand.New(rand.NewPCG(cfg.Seed, 77))
	start := time.Now()
	var errc = make(chan error, 1)
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
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
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
		select {
		case err := <-errc:
			return st, fmt.Errorf("produce: %w", err)
		default:
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return st, fmt.Errorf("produce: flush: %w", err)
	}
	select {
	case err := <-errc:
		return st, fmt.Errorf("produce: %w", err)
	default:
	}
	st.Elapsed = time.Since(start)
	return st, ctx.Err()
}
