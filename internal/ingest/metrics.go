package ingest

import "github.com/prometheus/client_golang/prometheus"

// Metrics of the ingest path. Built by NewMetrics; a nil registerer gives
// working, unregistered metrics.
type Metrics struct {
	Records     *prometheus.CounterVec // by topic
	Edges       prometheus.Counter
	Bytes       *prometheus.CounterVec // by topic
	DecodeErrs  *prometheus.CounterVec // by topic
	DeadLetters *prometheus.CounterVec // by topic
	BatchEdges  prometheus.Histogram
	ApplySecs   prometheus.Histogram
	FlushSecs   prometheus.Histogram
	Paused      prometheus.Counter
	FetchErrs   prometheus.Counter
	Lag         *prometheus.GaugeVec // by topic and partition
	Visibility  prometheus.Histogram // record produce time -> visible in snapshots
}

// NewMetrics builds the metrics and registers them with reg when not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_ingest_records_total", Help: "Kafka records consumed.",
		}, []string{"topic"}),
		Edges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_edges_total", Help: "Edge operations applied to the store.",
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
			Name: "graphtide_ingest_flush_duration_seconds", Help: "Time to make ingested data durable and commit offsets.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}),
		Paused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_fetch_pauses_total", Help: "Times fetching was paused because the store stalled.",
		}),
		FetchErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "graphtide_ingest_fetch_errors_total", Help: "Fetch errors returned by the Kafka client (retried).",
		}),
		Visibility: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "graphtide_ingest_visibility_seconds", Help: "From a record's produce timestamp to its edges being visible to new snapshots.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "graphtide_ingest_consumer_lag_records", Help: "High watermark minus next offset, per partition.",
		}, []string{"topic", "partition"}),
	}
	if reg != nil {
		reg.MustRegister(m.Records, m.Edges, m.Bytes, m.DecodeErrs, m.DeadLetters, m.BatchEdges, m.ApplySecs,
			m.FlushSecs, m.Paused, m.FetchErrs, m.Lag, m.Visibility)
	}
	return m
}
