package ingest

import (
	"math/bits"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the ingest path. Built by NewMetrics; a nil registerer gives
// working, unregistered metrics.
type Metrics struct {
	Records     *prometheus.CounterVec // by topic
	Edges       prometheus.Counter
	Vertices    prometheus.Counter     // vertex records set
	Bytes       *prometheus.CounterVec // by topic
	DecodeErrs  *prometheus.CounterVec // by topic
	DeadLetters *prometheus.CounterVec // by topic
	BatchEdges  prometheus.Histogram
	ApplySecs   prometheus.Histogram
	FlushSecs   prometheus.Histogram
	Paused      prometheus.Counter
	FetchErrs   prometheus.Counter
	Lag         *prometheus.GaugeVec // by topic and partition
	Visibility  *LatencyHistogram    // record produce time -> visible in snapshots
	// SourceConflict is 1 while ingestion is paused because the
	// assignment would split the graph between stores (see Ingester.Ready),
	// or, partitioned, since a topic's partition count changed (checkCount),
	// else 0; SourceConflicts counts the times that began.
	SourceConflict  prometheus.Gauge
	SourceConflicts prometheus.Counter
	// DeadLetterBlocked is, per assigned partition, 1 while it is paused
	// because the dead letter of one of its records cannot be written,
	// else 0 (its sum is the number of such partitions);
	// DeadLetterFailures counts failed attempts to write a dead letter;
	// DeadLettersTruncated counts dead letters whose value (or key) was cut
	// to fit the dead-letter topic's limit.
	DeadLetterBlocked    *prometheus.GaugeVec // by topic and partition
	DeadLetterFailures   prometheus.Counter
	DeadLettersTruncated prometheus.Counter
	// Writes counts the writes topic's batches by outcome: applied,
	// refused (a precondition failed), duplicate (a retry of a key:
	// nothing applied), reused (a key reused with another batch: nothing
	// applied), dead_letter (could not be decoded), other_graph (addressed
	// to another graph: skipped).
	Writes *prometheus.CounterVec
}

// NewMetrics builds the metrics and registers them with reg when not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_ingest_records_total", Help: "Kafka records consumed, counted once their batch is applied (fresh reads see them).",
		}, []string{"topic"}),
		Edges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_edges_total", Help: "Edge operations applied to the store.",
		}),
		Vertices: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_vertex_records_total", Help: "Vertex records (add_vertex operations) applied to the store.",
		}),
		Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_ingest_bytes_total", Help: "Bytes of record values consumed.",
		}, []string{"topic"}),
		DecodeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_ingest_decode_errors_total", Help: "Records rejected by the decoder.",
		}, []string{"topic"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_ingest_dead_letters_total", Help: "Records written to the dead-letter topic.",
		}, []string{"topic"}),
		BatchEdges: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "graphtide_ingest_batch_edges", Help: "Edge operations per Apply call.",
			Buckets: prometheus.ExponentialBuckets(16, 4, 8),
		}),
		ApplySecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "graphtide_ingest_apply_duration_seconds", Help: "Time of one Apply call, write stalls included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
		}),
		FlushSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "graphtide_ingest_flush_duration_seconds", Help: "Time to make ingested data durable and commit offsets: from a batch being applied to its offsets being committed, or a blocking flush (revoke, shutdown).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}),
		Paused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_fetch_pauses_total", Help: "Times fetching was paused because the store stalled.",
		}),
		FetchErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_fetch_errors_total", Help: "Fetch errors returned by the Kafka client (retried).",
		}),
		Visibility: NewLatencyHistogram("graphtide_ingest_visibility_seconds",
			"From a record's produce timestamp to its edges being visible to new snapshots."),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "graphtide_ingest_consumer_lag_records", Help: "High watermark minus next offset, per partition.",
		}, []string{"topic", "partition"}),
		SourceConflict: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "graphtide_ingest_source_conflict",
			Help: "1 while ingestion is paused because the consumer group's assignment would split the graph between stores (partitions held by another member, or whose history is in another store), or, in partitioned mode, since a topic's partition count changed (its keys moved), else 0.",
		}),
		SourceConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_source_conflicts_total",
			Help: "Times ingestion paused because the consumer group's assignment would split the graph between stores.",
		}),
		DeadLetterBlocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "graphtide_ingest_dead_letter_blocked_partitions",
			Help: "Per assigned partition: 1 while it is paused at a record whose dead letter cannot be written (the dead-letter topic is missing, refuses it, or does not answer), else 0. Sum it for the number of blocked partitions.",
		}, []string{"topic", "partition"}),
		DeadLetterFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_dead_letter_failures_total", Help: "Failed attempts to write a dead letter (each pauses or keeps paused the partition of its record).",
		}),
		DeadLettersTruncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_dead_letters_truncated_total", Help: "Dead letters whose value (or key) was cut to fit the dead-letter topic's max.message.bytes; their headers carry the original size and SHA-256.",
		}),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_writes_total", Help: "Batches of the writes topic (POST /v1/batches) by outcome: applied, refused (a precondition failed), duplicate (a retried idempotency key), reused (a key reused with another batch), dead_letter, other_graph (addressed to another graph: skipped).",
		}, []string{"outcome"}),
	}
	for _, o := range writeOutcomes {
		m.Writes.WithLabelValues(o) // every series from the start
	}
	if reg != nil {
		reg.MustRegister(m.Writes, m.Records, m.Edges, m.Vertices, m.Bytes, m.DecodeErrs, m.DeadLetters, m.BatchEdges, m.ApplySecs,
			m.FlushSecs, m.Paused, m.FetchErrs, m.Lag, m.Visibility, m.SourceConflict, m.SourceConflicts,
			m.DeadLetterBlocked, m.DeadLetterFailures, m.DeadLettersTruncated)
	}
	return m
}

// writeOutcomes are the values of graphtide_writes_total's outcome label.
var writeOutcomes = []string{"applied", "refused", "duplicate", "reused", "dead_letter", "other_graph"}

// forTopics creates, at 0, the series of the per-topic counters for each
// of topics (New calls it with the configured topics). A series created at
// its first event starts above 0, and Prometheus' increase() and rate()
// never see that first event: two dead letters made no alert.
func (m *Metrics) forTopics(topics []string) {
	for _, t := range topics {
		m.Records.WithLabelValues(t)
		m.Bytes.WithLabelValues(t)
		m.DecodeErrs.WithLabelValues(t)
		m.DeadLetters.WithLabelValues(t)
	}
}

// LatencyBuckets is the number of finite buckets of a LatencyHistogram:
// upper bounds 1 ms x 2^k for k = 0..LatencyBuckets-1 (1 ms to 32.768 s),
// as prometheus.ExponentialBuckets(0.001, 2, LatencyBuckets).
const LatencyBuckets = 16

// LatencyHistogram is a Prometheus histogram of durations in seconds with
// the buckets described at LatencyBuckets. Unlike prometheus.Histogram it
// takes a whole batch of observations at once, counting them locally and
// adding them under one lock: the ingest path observes every record, and
// a per-record Observe cost more than the decoding.
type LatencyHistogram struct {
	desc *prometheus.Desc

	mu sync.Mutex
	// counts per bucket, not cumulative; the last one is +Inf.
	// Protected by mu.
	counts [LatencyBuckets + 1]uint64
	count  uint64  // Protected by mu.
	sum    float64 // seconds; Protected by mu.
}

// NewLatencyHistogram returns an empty histogram named name.
func NewLatencyHistogram(name, help string) *LatencyHistogram {
	return &LatencyHistogram{desc: prometheus.NewDesc(name, help, nil, nil)}
}

// latencyBucket returns the index of the bucket d falls in: the smallest k
// with d <= 1ms x 2^k, or LatencyBuckets (+Inf).
func latencyBucket(d time.Duration) int {
	if d <= time.Millisecond {
		return 0
	}
	// With q = ceil(d / 1ms) >= 2: d <= 2^k ms  <=>  q <= 2^k  <=>
	// bits.Len64(q-1) <= k.
	q := (uint64(d) + uint64(time.Millisecond) - 1) / uint64(time.Millisecond)
	return min(bits.Len64(q-1), LatencyBuckets)
}

// ObserveSince observes now - t for every t in starts.
func (h *LatencyHistogram) ObserveSince(now time.Time, starts []time.Time) {
	if len(starts) == 0 {
		return
	}
	var local [LatencyBuckets + 1]uint64
	var sum time.Duration
	for _, t := range starts {
		d := now.Sub(t)
		local[latencyBucket(d)]++
		sum += d
	}
	h.mu.Lock()
	for i, c := range local {
		h.counts[i] += c
	}
	h.count += uint64(len(starts))
	h.sum += sum.Seconds()
	h.mu.Unlock()
}

// Observe observes one duration.
func (h *LatencyHistogram) Observe(d time.Duration) {
	h.mu.Lock()
	h.counts[latencyBucket(d)]++
	h.count++
	h.sum += d.Seconds()
	h.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (h *LatencyHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h *LatencyHistogram) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	buckets := make(map[float64]uint64, LatencyBuckets)
	var cum uint64
	for k := range LatencyBuckets {
		cum += h.counts[k]
		buckets[latencyBound(k)] = cum
	}
	count, sum := h.count, h.sum
	h.mu.Unlock()
	ch <- prometheus.MustNewConstHistogram(h.desc, count, sum, buckets)
}

// latencyBound is the upper bound of bucket k in seconds, computed as
// prometheus.ExponentialBuckets does.
func latencyBound(k int) float64 {
	b := 0.001
	for range k {
		b *= 2
	}
	return b
}
