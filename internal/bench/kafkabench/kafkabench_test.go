package kafkabench

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/testkit/benchtest"
)

// TestConfig: the defaults with a broker are valid, and each setting out
// of range is refused with a message naming its flag.
func TestConfig(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Kafka.Brokers = []string{"127.0.0.1:9092"}
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	benchtest.WantRefusals(t, valid, (*Config).Validate, []benchtest.Refusal[Config]{
		{Set: func(c *Config) { c.Kafka.Brokers = nil }, Want: "--brokers is required (start one with deploy/kafka/kafka.sh)"},
		{Set: func(c *Config) { c.Kafka.SASLUser = "u" }, Want: "--sasl-user and --sasl-password need --sasl-mechanism"},
		{Set: func(c *Config) { c.Scale = 27 }, Want: "--scale must be between 1 and 26, got 27"},
		{Set: func(c *Config) { c.EdgeFactor = 65 }, Want: "--edge-factor must be between 1 and 64, got 65"},
		{Set: func(c *Config) { c.Partitions = 0 }, Want: "--partitions must be between 1 and 1024, got 0"},
		{Set: func(c *Config) { c.Partitions = 1025 }, Want: "--partitions must be between 1 and 1024, got 1025"},
		{Set: func(c *Config) { c.SteadyFor = 500 * time.Millisecond }, Want: "--steady-for must be at least 1s, got 500ms"},
	})
}

// TestPercentileMs: the p-th percentile by nearest rank, of the
// durations sorted, in milliseconds.
func TestPercentileMs(t *testing.T) {
	d := make([]time.Duration, 200)
	for i := range d {
		d[i] = time.Duration(200-i) * time.Millisecond // 200 ms down to 1 ms
	}
	if p50, p99 := percentileMs(d, 50), percentileMs(d, 99); p50 != 101 || p99 != 199 {
		t.Errorf("p50 %v, p99 %v; want 101 and 199", p50, p99)
	}
}

// TestRunEmbedded runs the benchmark against franz-go's in-process fake
// broker at a small size and checks its JSON: every field the page reads
// is there, the rates are positive, the store holds the generated graph's
// distinct edges (counted here), the ratios are of the rates reported,
// and the stages' CPU seconds add up to at most the ingest phase's.
func TestRunEmbedded(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := DefaultConfig()
	cfg.Kafka.Brokers, cfg.Scale, cfg.EdgeFactor, cfg.Partitions, cfg.SteadyFor, cfg.Dir = c.ListenAddrs(), 10, 4, 2, time.Second, t.TempDir()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	benchtest.PageFields(t, "kafka", res)
	for k, v := range map[string]float64{"produce_edges_per_sec": res.ProduceEdgesPerS, "raw_consume_edges_per_sec": res.RawConsumePerSec,
		"ingest_edges_per_sec": res.IngestPerSec, "store_apply_edges_per_sec": res.StoreApplyPerSec, "visibility_p99_ms": res.VisibilityP99Ms,
		"visibility_samples": float64(res.VisibilitySamples), "steady_rate_edges_per_sec": float64(res.SteadyRate)} {
		if v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, v)
		}
	}
	distinct := map[[2]uint64]bool{}
	for _, e := range (gen.RMAT{Scale: 10, EdgeFactor: 4, Seed: 1}).Generate() {
		distinct[[2]uint64{e.Src, e.Dst}] = true
	}
	if res.Edges != 4096 || res.Partitions != 2 || res.StoreEdges != uint64(len(distinct)) {
		t.Errorf("edges %d, partitions %d, store edges %d; want 4096, 2, %d", res.Edges, res.Partitions, res.StoreEdges, len(distinct))
	}
	if res.RawConsumePerSec != max(res.RawPlainPerSec, res.RawPooledPerSec) || res.IngestOverRaw != res.IngestPerSec/res.RawConsumePerSec ||
		res.IngestOverStoreApply != res.IngestPerSec/res.StoreApplyPerSec || res.SteadyRate != int(res.IngestPerSec/2) {
		t.Errorf("raw %v of plain %v and pooled %v, ingest over raw %v, over store apply %v, steady rate %d: not of the rates reported",
			res.RawConsumePerSec, res.RawPlainPerSec, res.RawPooledPerSec, res.IngestOverRaw, res.IngestOverStoreApply, res.SteadyRate)
	}
	if res.VisibilityP99Ms < res.VisibilityP50Ms || res.ProduceAckP99Ms < res.ProduceAckP50Ms {
		t.Errorf("visibility p50 %v p99 %v, produce ack p50 %v p99 %v: percentiles out of order",
			res.VisibilityP50Ms, res.VisibilityP99Ms, res.ProduceAckP50Ms, res.ProduceAckP99Ms)
	}
	// Within what a 100 Hz profile resolves (at this scale there may be
	// no sample at all: bench.TestStageProfile checks the attribution).
	if res.IngestStageCPUSec == nil {
		t.Error("ingest_stage_cpu_sec is null, want the stages' CPU seconds")
	}
	sum := 0.0
	for _, v := range res.IngestStageCPUSec {
		sum += v
	}
	if sum > res.IngestCPUSec+0.2 {
		t.Errorf("ingest_stage_cpu_sec = %v (sum %.2f), ingest_cpu_sec %.2f: want stages adding up to at most the total", res.IngestStageCPUSec, sum, res.IngestCPUSec)
	}
}
