// Package kafkabench is `graphtide bench kafka`: it produces an RMAT edge
// stream to a fresh topic once, then measures in the same run the rate at
// which a plain franz-go consumer reads the topic (the limit), the rate at
// which the ingest path reads it into a fresh store (final flush included),
// and, at a steady produce rate of half the measured ingest rate, the p99
// time from a record's produce timestamp to its visibility to snapshots.
package kafkabench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/genkafka"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// Config of one run.
type Config struct {
	Brokers           []string
	Scale, EdgeFactor int
	Seed              uint64
	Partitions        int
	Dir               string        // scratch space for the stores
	SteadyFor         time.Duration // length of the visibility phase
	Log               io.Writer
}

// Result is the JSON line the command prints last.
type Result struct {
	Edges             int     `json:"edges"`
	Partitions        int     `json:"partitions"`
	ProduceEdgesPerS  float64 `json:"produce_edges_per_sec"`
	RawConsumePerSec  float64 `json:"raw_consume_edges_per_sec"`
	IngestPerSec      float64 `json:"ingest_edges_per_sec"`
	IngestOverRaw     float64 `json:"ingest_over_raw"`
	SteadyRate        int     `json:"steady_rate_edges_per_sec"`
	VisibilityP50Ms   float64 `json:"visibility_p50_ms"`
	VisibilityP99Ms   float64 `json:"visibility_p99_ms"`
	VisibilitySamples int     `json:"visibility_samples"`
}

// Run performs the benchmark.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	logf := func(f string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, f+"\n", a...)
		}
	}
	r := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}
	if err := r.Validate(); err != nil {
		return res, err
	}
	edges := r.Generate()
	res.Edges, res.Partitions = len(edges), cfg.Partitions
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("graphtide-bench-%d", stamp)
	if err := createTopic(ctx, adm, topic, cfg.Partitions); err != nil {
		return res, err
	}
	defer adm.DeleteTopics(context.Background(), topic)

	st, err := genkafka.Produce(ctx, genkafka.Config{Brokers: cfg.Brokers, Topic: topic, Format: decode.FormatBinary, Seed: cfg.Seed}, edges)
	if err != nil {
		return res, err
	}
	res.ProduceEdgesPerS = float64(len(edges)) / st.Elapsed.Seconds()
	logf("produced %d records to %s (%d partitions) at %.0f/s", len(edges), topic, cfg.Partitions, res.ProduceEdgesPerS)

	// The limit: a plain consumer reading every record.
	raw, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(32<<20))
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	n := 0
	for n < len(edges) && ctx.Err() == nil {
		f := raw.PollRecords(ctx, 20000)
		n += f.NumRecords()
	}
	raw.Close()
	res.RawConsumePerSec = float64(n) / time.Since(t0).Seconds()
	logf("raw consume: %.0f records/s", res.RawConsumePerSec)

	// The ingest path into a fresh store, final flush included.
	rate, err := ingestAll(ctx, cfg, topic, len(edges), filepath.Join(cfg.Dir, "ingest"))
	if err != nil {
		return res, err
	}
	res.IngestPerSec = rate
	res.IngestOverRaw = rate / res.RawConsumePerSec
	logf("ingest: %.0f edges/s (%.2f of raw consume)", rate, res.IngestOverRaw)

	// Visibility at a steady rate of half the ingest capacity.
	res.SteadyRate = int(rate / 2)
	lat, err := visibility(ctx, cfg, res.SteadyRate, edges, filepath.Join(cfg.Dir, "steady"), stamp)
	if err != nil {
		return res, err
	}
	if len(lat) == 0 {
		return res, fmt.Errorf("no visibility samples")
	}
	slices.Sort(lat)
	res.VisibilitySamples = len(lat)
	res.VisibilityP50Ms = float64(lat[len(lat)/2].Microseconds()) / 1000
	res.VisibilityP99Ms = float64(lat[len(lat)*99/100].Microseconds()) / 1000
	logf("visibility at %d edges/s: p50 %.1f ms, p99 %.1f ms over %d records", res.SteadyRate, res.VisibilityP50Ms, res.VisibilityP99Ms, len(lat))
	return res, nil
}

func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	resp, err := adm.CreateTopics(ctx, int32(partitions), -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func newStore(dir string) (*engine.Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return engine.Open(dir, nil)
}

// ingestAll runs the ingester until every record of topic is durable.
func ingestAll(ctx context.Context, cfg Config, topic string, total int, dir string) (float64, error) {
	s, err := newStore(dir)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	in, err := ingest.New(s, nil, ingest.Config{Brokers: cfg.Brokers, Topics: []string{topic}, Group: topic + "-ingest",
		DeadLetterTopic: topic + "-dlq", FlushInterval: time.Second})
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- in.Run(rctx) }()
	var applied int64
	for applied < int64(total) {
		select {
		case err := <-done:
			cancel()
			return 0, fmt.Errorf("ingest stopped early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		applied = 0
		for _, ps := range in.Applied() {
			for _, o := range ps {
				applied += o
			}
		}
	}
	if err := s.Flush(); err != nil {
		cancel()
		return 0, err
	}
	elapsed := time.Since(t0)
	cancel()
	if err := <-done; err != nil {
		return 0, err
	}
	return float64(total) / elapsed.Seconds(), nil
}

// visibility produces at rate for cfg.SteadyFor into a new topic while the
// ingester runs, and returns each record's produce-to-visible latency.
func visibility(ctx context.Context, cfg Config, rate int, edges []gen.Edge, dir string, stamp int64) ([]time.Duration, error) {
	topic := fmt.Sprintf("graphtide-bench-steady-%d", stamp)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := createTopic(ctx, adm, topic, cfg.Partitions); err != nil {
		return nil, err
	}
	defer adm.DeleteTopics(context.Background(), topic)
	s, err := newStore(dir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var mu sync.Mutex
	var lat []time.Duration
	in, err := ingest.New(s, nil, ingest.Config{Brokers: cfg.Brokers, Topics: []string{topic}, Group: topic + "-g",
		DeadLetterTopic: topic + "-dlq", ResetPolicy: "earliest",
		OnVisible: func(produced []time.Time, visible time.Time) {
			mu.Lock()
			for _, p := range produced {
				lat = append(lat, visible.Sub(p))
			}
			mu.Unlock()
		}})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	n := min(len(edges), int(float64(rate)*cfg.SteadyFor.Seconds()))
	if _, err := genkafka.Produce(ctx, genkafka.Config{Brokers: cfg.Brokers, Topic: topic, Format: decode.FormatBinary, Rate: rate, Seed: 9}, edges[:n]); err != nil {
		cancel()
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := len(lat)
		mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	return lat, nil
}
