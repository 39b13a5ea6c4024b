// Package kafkabench is `graphtide bench kafka`: it produces an RMAT edge
// stream to a fresh topic once, then measures in the same run the rate at
// which a plain franz-go consumer reads the topic (the limit), the rate at
// which the ingest path reads it into a fresh store (final flush included),
// and, at a steady produce rate of half the measured ingest rate, the p99
// time from a record's produce timestamp to its visibility to snapshots.
//
// Fairness: both consumers use the ingester's fetch settings
// (ingest.FetchOptions) and poll size; the plain consumer runs without
// and with the ingester's record pool (ingest.RecordPool, records
// recycled once read) and the faster run is the limit. Both rates are
// timed from the first record batch the client reads off the wire, so
// neither includes connecting, the group join or offset lookups; those
// are reported apart as *_startup_ms. The ingest rate includes the final
// flush. The ingested
// store is scanned afterwards and must hold exactly the distinct produced
// edges (count and checksum against a static CSR), or the run fails.
//
// The same edges are also applied straight to a fresh store in the
// ingester's batch size (store_apply_edges_per_sec): ingest cannot beat
// that rate, and with the CPU seconds of each phase it shows what the
// store and what Kafka cost on a machine where broker and consumer share
// the cores.
package kafkabench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/genkafka"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/staticcsr"
	"github.com/graphtide/graphtide/internal/views"
)

// Config of one run.
type Config struct {
	Kafka             kafkaconn.Options // the brokers, TLS and SASL, as serve's flags
	conn              []kgo.Opt         // Kafka's TLS and SASL options (set by Run)
	Scale, EdgeFactor int
	Seed              uint64
	Partitions        int
	Dir               string        // scratch space for the stores
	SteadyFor         time.Duration // length of the visibility phase
	CPUProfile        string        // if set, a Go CPU profile of the ingest phase goes here
	// LatencyDump, if set, receives one line per record of the visibility
	// phase: produce time (Unix µs) and produce-to-visible latency (µs).
	LatencyDump string
	Log         io.Writer
}

// DefaultConfig is the command's defaults, without the brokers and Dir.
func DefaultConfig() Config {
	return Config{Scale: 20, EdgeFactor: 16, Seed: 1, Partitions: 4, SteadyFor: 10 * time.Second}
}

// Bounds of Config.Scale and Config.EdgeFactor.
const (
	MaxScale      = 26
	MaxEdgeFactor = 64
)

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	c.Kafka.AddFlags(fs, c.Kafka.Brokers, "Kafka bootstrap brokers (required)")
	bench.GraphFlags(fs, &c.Scale, &c.EdgeFactor, &c.Seed, "log2 of the vertex count of the RMAT graph", "random seed")
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "partitions of the benchmark topics")
	fs.DurationVar(&c.SteadyFor, "steady-for", c.SteadyFor, "length of the steady-rate visibility phase")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a Go CPU profile of the ingest phase to this file")
	fs.StringVar(&c.LatencyDump, "latency-dump", c.LatencyDump, "write each visibility-phase record's produce time and latency (µs) to this file")
	_ = fs.MarkHidden("cpuprofile")
	_ = fs.MarkHidden("latency-dump")
}

// Validate checks the settings; its messages name the command's flags.
func (c Config) Validate() error {
	if len(c.Kafka.Brokers) == 0 {
		return errors.New("--brokers is required (start one with deploy/kafka/kafka.sh)")
	}
	if err := c.Kafka.Validate(); err != nil {
		return err
	}
	if err := bench.ValidateGraph(c.Scale, c.EdgeFactor, MaxScale, MaxEdgeFactor); err != nil {
		return err
	}
	if c.Partitions < 1 || c.Partitions > 1024 {
		return fmt.Errorf("--partitions must be between 1 and 1024, got %d", c.Partitions)
	}
	if c.SteadyFor < time.Second {
		return fmt.Errorf("--steady-for must be at least 1s, got %v", c.SteadyFor)
	}
	return nil
}

// Result is the JSON line the command prints last.
type Result struct {
	Edges             int     `json:"edges"`
	Partitions        int     `json:"partitions"`
	ProduceEdgesPerS  float64 `json:"produce_edges_per_sec"`
	RawConsumePerSec  float64 `json:"raw_consume_edges_per_sec"` // the faster of the two below
	RawPlainPerSec    float64 `json:"raw_consume_plain_edges_per_sec"`
	RawPooledPerSec   float64 `json:"raw_consume_pooled_edges_per_sec"`
	IngestPerSec      float64 `json:"ingest_edges_per_sec"`
	IngestOverRaw     float64 `json:"ingest_over_raw"`
	SteadyRate        int     `json:"steady_rate_edges_per_sec"`
	VisibilityP50Ms   float64 `json:"visibility_p50_ms"`
	VisibilityP99Ms   float64 `json:"visibility_p99_ms"`
	VisibilitySamples int     `json:"visibility_samples"`
	// From a record's produce timestamp to the broker's acknowledgement as
	// the producer sees it, in the visibility phase (1 record in 16): the
	// part of the visibility latency spent before the broker has the
	// record.
	ProduceAckP50Ms float64 `json:"produce_ack_p50_ms"`
	ProduceAckP99Ms float64 `json:"produce_ack_p99_ms"`
	// Client creation to the first record batch read: connection and
	// offset lookup for the plain consumer; dead-letter topic check,
	// group join and offset lookup for the ingester.
	RawStartupMs    float64 `json:"raw_startup_ms"`
	IngestStartupMs float64 `json:"ingest_startup_ms"`
	// StoreEdges is the distinct edge count the ingested store holds
	// (checked equal to the generated graph's).
	StoreEdges uint64 `json:"store_edges"`
	// StoreApplyPerSec is the same edges applied straight to a fresh
	// store in the ingester's batch size, final flush included: the
	// ingest rate if consuming from Kafka cost nothing.
	StoreApplyPerSec     float64 `json:"store_apply_edges_per_sec"`
	IngestOverStoreApply float64 `json:"ingest_over_store_apply"`
	// CPU seconds of this process (not the broker's) in each phase.
	RawCPUSec        float64 `json:"raw_consume_cpu_sec"`
	IngestCPUSec     float64 `json:"ingest_cpu_sec"`
	StoreApplyCPUSec float64 `json:"store_apply_cpu_sec"`
	// IngestStageCPUSec splits the ingest phase's CPU seconds by stage,
	// from a CPU profile (bench.Stages): store_apply (the store's Apply,
	// its C++ included), core_background (the core's flush and
	// compaction threads), batch_building, decode, kafka_client
	// (franz-go), ingest_loop (the poll loop, positions, pools), go_gc,
	// store_flush_wait and other.
	IngestStageCPUSec map[string]float64 `json:"ingest_stage_cpu_sec"`
	Timing            string             `json:"timing"`
}

// timing describes, in the result, how both rates are timed.
const timing = "both rates timed from the first fetched record batch; ingest includes the final flush"

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
	var err error
	if cfg.conn, err = cfg.Kafka.ClientOpts(); err != nil {
		return res, err
	}
	edges := r.Generate()
	res.Edges, res.Partitions = len(edges), cfg.Partitions
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Kafka.Brokers...)}, cfg.conn...)...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("graphtide-bench-%d", stamp)
	if err := bench.CreateTopic(ctx, adm, topic, cfg.Partitions); err != nil {
		return res, err
	}
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }() // best effort: a benchmark topic left behind is harmless

	st, err := genkafka.Produce(ctx, genkafka.Config{Brokers: cfg.Kafka.Brokers, ClientOpts: cfg.conn, Topic: topic, Format: decode.FormatBinary, Seed: cfg.Seed}, edges)
	if err != nil {
		return res, err
	}
	res.ProduceEdgesPerS = float64(len(edges)) / st.Elapsed.Seconds()
	logf("produced %d records to %s (%d partitions) at %.0f/s", len(edges), topic, cfg.Partitions, res.ProduceEdgesPerS)

	res.Timing = timing
	want := staticcsr.Build(uint64(1)<<cfg.Scale, edges)

	// The limit: a plain consumer reading every record, with the
	// ingester's fetch settings and poll size, once as is and once with
	// the ingester's record pool; the faster one counts.
	for _, pooled := range []bool{false, true} {
		rr, err := rawConsume(ctx, cfg, topic, len(edges), pooled)
		if err != nil {
			return res, err
		}
		if pooled {
			res.RawPooledPerSec = rr.rate
		} else {
			res.RawPlainPerSec = rr.rate
		}
		logf("raw consume (record pool %v): %.0f records/s (startup %.0f ms, not timed)", pooled, rr.rate, ms(rr.startup))
		if rr.rate > res.RawConsumePerSec {
			res.RawConsumePerSec, res.RawStartupMs, res.RawCPUSec = rr.rate, ms(rr.startup), rr.cpu.Seconds()
		}
	}

	// The ingest path into a fresh store, final flush included.
	prof, err := bench.StartStageProfile(cfg.CPUProfile)
	if err != nil {
		return res, err
	}
	ir, err := ingestAll(ctx, cfg, topic, len(edges), filepath.Join(cfg.Dir, "ingest"), want)
	stages, perr := prof.Stop()
	if err != nil {
		return res, err
	}
	if perr != nil {
		return res, perr
	}
	res.IngestStageCPUSec = stages
	res.IngestPerSec, res.IngestStartupMs, res.StoreEdges = ir.rate, ms(ir.startup), ir.storeEdges
	res.IngestCPUSec = ir.cpu.Seconds()
	res.IngestOverRaw = ir.rate / res.RawConsumePerSec
	logf("ingest: %.0f edges/s (%.2f of raw consume; startup %.0f ms, not timed; final flush %.0f ms, timed); store holds the %d distinct edges",
		ir.rate, res.IngestOverRaw, res.IngestStartupMs, ms(ir.finalFlush), ir.storeEdges)
	logf("ingest CPU seconds by stage (profile): %s", bench.FormatStages(stages))

	// The store alone: what ingest would reach if Kafka cost nothing.
	sr, scpu, err := storeApply(edges, filepath.Join(cfg.Dir, "apply"))
	if err != nil {
		return res, err
	}
	res.StoreApplyPerSec, res.StoreApplyCPUSec = sr, scpu.Seconds()
	res.IngestOverStoreApply = ir.rate / sr
	logf("store alone: %.0f edges/s in batches of %d, final flush included (ingest: %.2f of it); CPU seconds of this process: raw consume %.2f, ingest %.2f, store alone %.2f",
		sr, ingest.DefaultMaxPollRecords, res.IngestOverStoreApply, res.RawCPUSec, res.IngestCPUSec, res.StoreApplyCPUSec)

	// Visibility at a steady rate of half the ingest capacity.
	res.SteadyRate = int(ir.rate / 2)
	var acks ackLatency
	lat, err := visibility(ctx, cfg, res.SteadyRate, edges, filepath.Join(cfg.Dir, "steady"), stamp, &acks)
	if err != nil {
		return res, err
	}
	if len(lat) == 0 || len(acks.lat) == 0 {
		return res, fmt.Errorf("no visibility samples")
	}
	res.VisibilitySamples = len(lat)
	res.VisibilityP50Ms, res.VisibilityP99Ms = percentileMs(lat, 50), percentileMs(lat, 99)
	res.ProduceAckP50Ms, res.ProduceAckP99Ms = percentileMs(acks.lat, 50), percentileMs(acks.lat, 99)
	logf("visibility at %d edges/s: p50 %.1f ms, p99 %.1f ms over %d records (produce to broker ack: p50 %.1f ms, p99 %.1f ms)",
		res.SteadyRate, res.VisibilityP50Ms, res.VisibilityP99Ms, len(lat), res.ProduceAckP50Ms, res.ProduceAckP99Ms)
	return res, nil
}

// percentileMs sorts d and returns its p-th percentile in milliseconds.
func percentileMs(d []time.Duration, p int) float64 {
	slices.Sort(d)
	return ms(d[len(d)*p/100])
}

// ackLatency is a franz-go producer hook that samples, for one record in
// 16, the time from its produce timestamp to the broker's acknowledgement.
type ackLatency struct {
	mu  sync.Mutex
	lat []time.Duration // Protected by mu.
}

func (a *ackLatency) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil || r.Offset%16 != 0 {
		return
	}
	d := time.Since(r.Timestamp)
	a.mu.Lock()
	a.lat = append(a.lat, d)
	a.mu.Unlock()
}

type rawResult struct {
	rate    float64       // records per second from the first fetched batch to the last record
	startup time.Duration // from creating the client to its first fetched batch
	cpu     time.Duration // CPU time of this process meanwhile
}

// rawConsume reads total records of topic from the start with a plain
// consumer that has the ingester's fetch settings and poll size; pooled
// gives it the ingester's record pool, and it recycles every record.
// Without the pool the client allocates more and the garbage collector
// works more, on the other core if one is free; with it, the poll loop
// touches every record.
func rawConsume(ctx context.Context, cfg Config, topic string, total int, pooled bool) (rawResult, error) {
	var rr rawResult
	var first firstBatch
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Kafka.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&first)}, ingest.FetchOptions()...)
	opts = append(opts, cfg.conn...)
	if pooled {
		opts = append(opts, kgo.WithPools(ingest.NewRecordPool()))
	}
	t0, c0 := time.Now(), bench.ProcessCPU()
	raw, err := kgo.NewClient(opts...)
	if err != nil {
		return rr, err
	}
	defer raw.Close()
	n := 0
	for n < total && ctx.Err() == nil {
		f := raw.PollRecords(ctx, ingest.DefaultMaxPollRecords)
		if pooled {
			f.EachRecord(func(r *kgo.Record) { r.Recycle() })
		}
		n += f.NumRecords()
	}
	end := time.Now()
	if err := ctx.Err(); err != nil {
		return rr, err
	}
	rr.cpu = bench.ProcessCPU() - c0
	rr.rate = float64(n) / end.Sub(first.at()).Seconds()
	rr.startup = first.at().Sub(t0)
	return rr, nil
}

// firstBatch is a franz-go hook that notes when the client read its first
// record batch off the wire.
type firstBatch struct{ ns atomic.Int64 }

func (f *firstBatch) OnFetchBatchRead(kgo.BrokerMetadata, string, int32, kgo.FetchBatchMetrics) {
	if f.ns.Load() == 0 {
		f.ns.CompareAndSwap(0, time.Now().UnixNano())
	}
}

func (f *firstBatch) at() time.Time { return time.Unix(0, f.ns.Load()) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// checkStore scans every out-neighbor list of s and checks the edge count
// and the checksum of all dsts against want; it returns the edge count.
func checkStore(s *engine.Store, want *staticcsr.CSR) (uint64, error) {
	var wantN, wantSum uint64
	for v := uint64(0); v < want.NumVertices(); v++ {
		for _, d := range want.Neighbors(v) {
			wantN++
			wantSum += d
		}
	}
	sn, err := s.Snapshot()
	if err != nil {
		return 0, err
	}
	defer sn.Release()
	buf := engine.NewScanBuffer(1<<14, 1<<18, false)
	var n, sum uint64
	for lo, bound := uint64(0), sn.VertexBound(); lo < bound; {
		next, err := sn.Scan(lo, bound, engine.Out, buf)
		if err != nil {
			return 0, err
		}
		for _, d := range buf.Dsts {
			sum += d
		}
		n += uint64(len(buf.Dsts))
		lo = next
	}
	if n != wantN || sum != wantSum {
		return n, fmt.Errorf("the ingested store holds %d edges (dst checksum %d), want the %d distinct produced edges (checksum %d)", n, sum, wantN, wantSum)
	}
	return n, nil
}

func newStore(dir string) (*engine.Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return engine.Open(dir, nil)
}

// newServeStore opens a store as serve runs it: with a views manager,
// whose edge log (fed by every Apply) serves stream views and analytics.
func newServeStore(dir string) (*engine.Store, func(), error) {
	s, err := newStore(dir)
	if err != nil {
		return nil, nil, err
	}
	vm, err := views.NewManager(s, views.Config{})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, func() { vm.Close(); s.Close() }, nil
}

// storeApply applies edges straight to a fresh store in dir, in batches
// of the ingester's poll size and one upsert per edge as the ingester
// builds them, and returns the rate (final flush included) and the CPU
// time of this process meanwhile.
func storeApply(edges []gen.Edge, dir string) (float64, time.Duration, error) {
	s, err := newStore(dir)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	var b engine.Batch
	t0, c0 := time.Now(), bench.ProcessCPU()
	for lo := 0; lo < len(edges); lo += ingest.DefaultMaxPollRecords {
		b.Reset()
		for _, e := range edges[lo:min(lo+ingest.DefaultMaxPollRecords, len(edges))] {
			b.InsertWeighted(e.Src, e.Dst, 1)
		}
		if _, err := s.Apply(&b); err != nil {
			return 0, 0, err
		}
	}
	if err := s.Flush(); err != nil {
		return 0, 0, err
	}
	return float64(len(edges)) / time.Since(t0).Seconds(), bench.ProcessCPU() - c0, nil
}

type ingestResult struct {
	cpu        time.Duration // CPU time of this process from creating the ingester to the end of the final flush
	rate       float64       // edges per second from the first fetched batch to the end of the final flush
	startup    time.Duration // from creating the ingester to its first fetched batch
	finalFlush time.Duration
	storeEdges uint64
}

// ingestAll runs the ingester until every record of topic is applied,
// flushes the store, stops the ingester and checks the store against want.
func ingestAll(ctx context.Context, cfg Config, topic string, total int, dir string, want *staticcsr.CSR) (ingestResult, error) {
	var ir ingestResult
	s, closeStore, err := newServeStore(dir)
	if err != nil {
		return ir, err
	}
	defer closeStore()
	var first firstBatch
	var applied atomic.Int64
	all := make(chan struct{})
	t0, c0 := time.Now(), bench.ProcessCPU()
	in, err := ingest.New(s, nil, ingest.Config{Brokers: cfg.Kafka.Brokers, Topics: []string{topic}, Group: topic + "-ingest",
		DeadLetterTopic: topic + "-dlq", FlushInterval: time.Second, ClientOpts: append([]kgo.Opt{kgo.WithHooks(&first)}, cfg.conn...),
		OnVisible: func(produced []time.Time, _ time.Time) {
			if applied.Add(int64(len(produced))) == int64(total) {
				close(all)
			}
		}})
	if err != nil {
		return ir, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	select {
	case <-all:
	case err := <-done:
		return ir, fmt.Errorf("ingest stopped early: %w", err)
	}
	tf := time.Now()
	if err := s.Flush(); err != nil {
		return ir, err
	}
	end := time.Now()
	ir.cpu = bench.ProcessCPU() - c0
	cancel()
	if err := <-done; err != nil {
		return ir, err
	}
	var pos int64
	for _, ps := range in.Applied() {
		for _, o := range ps {
			pos += o
		}
	}
	if pos != int64(total) {
		return ir, fmt.Errorf("ingest: applied position covers %d records, want %d", pos, total)
	}
	ir.rate = float64(total) / end.Sub(first.at()).Seconds()
	ir.startup, ir.finalFlush = first.at().Sub(t0), end.Sub(tf)
	ir.storeEdges, err = checkStore(s, want)
	return ir, err
}

// visibility produces at rate for cfg.SteadyFor into a new topic while the
// ingester runs, and returns each record's produce-to-visible latency. The
// ingester joins its group before the first record is produced: the
// figure is about the steady state, and the startup is reported apart.
// The store must end with exactly the produced edges.
func visibility(ctx context.Context, cfg Config, rate int, edges []gen.Edge, dir string, stamp int64, acks *ackLatency) ([]time.Duration, error) {
	topic := fmt.Sprintf("graphtide-bench-steady-%d", stamp)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Kafka.Brokers...)}, cfg.conn...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := bench.CreateTopic(ctx, adm, topic, cfg.Partitions); err != nil {
		return nil, err
	}
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }() // best effort: a benchmark topic left behind is harmless
	s, closeStore, err := newServeStore(dir)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	// The records produced, and their latencies, allocated up front: the
	// callback runs on the ingest path, and growing a slice of millions of
	// entries there is a copy the Go runtime cannot preempt, which held a
	// garbage collection's stop-the-world (and so the whole process, the
	// producer too) for up to half a second.
	n := min(len(edges), int(float64(rate)*cfg.SteadyFor.Seconds()))
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	var dump []int64 // produce times (Unix µs), parallel to lat, when dumping
	dumpPath := cfg.LatencyDump
	if dumpPath != "" {
		dump = make([]int64, 0, n)
	}
	in, err := ingest.New(s, nil, ingest.Config{Brokers: cfg.Kafka.Brokers, Topics: []string{topic}, Group: topic + "-g",
		DeadLetterTopic: topic + "-dlq", ResetPolicy: "earliest", ClientOpts: cfg.conn,
		OnVisible: func(produced []time.Time, visible time.Time) {
			mu.Lock()
			for _, p := range produced {
				lat = append(lat, visible.Sub(p))
			}
			if dumpPath != "" {
				for _, p := range produced {
					dump = append(dump, p.UnixMicro())
				}
			}
			mu.Unlock()
		}})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	for in.Ready() != nil {
		select {
		case err := <-done:
			return nil, fmt.Errorf("ingest stopped early: %w", err)
		case <-time.After(time.Millisecond):
		}
	}
	if _, err := genkafka.Produce(ctx, genkafka.Config{Brokers: cfg.Kafka.Brokers, Topic: topic, Format: decode.FormatBinary, Rate: rate, Seed: 9,
		ClientOpts: append([]kgo.Opt{kgo.WithHooks(acks)}, cfg.conn...)}, edges[:n]); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := len(lat)
		mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("visibility: only %d of %d records became visible within 30 s of the last produce", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		return nil, err
	}
	if _, err := checkStore(s, staticcsr.Build(uint64(1)<<cfg.Scale, edges[:n])); err != nil {
		return nil, fmt.Errorf("visibility phase: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if dumpPath != "" {
		if err := writeLatencies(dumpPath, dump, lat); err != nil {
			return nil, err
		}
	}
	return lat, nil
}

func writeLatencies(path string, produced []int64, lat []time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i, p := range produced {
		fmt.Fprintf(w, "%d %d\n", p, lat[i].Microseconds())
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
