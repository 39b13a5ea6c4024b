package ingest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestLatencyHistogramMatchesPrometheus checks LatencyHistogram against a
// prometheus.Histogram with the buckets it documents, on random durations
// and on every bucket boundary and its neighbors.
func TestLatencyHistogramMatchesPrometheus(t *testing.T) {
	h := NewLatencyHistogram("lat_seconds", "test")
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lat_seconds", Help: "test",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, LatencyBuckets)})
	var ds []time.Duration
	for k := range LatencyBuckets + 2 {
		b := time.Millisecond << k
		ds = append(ds, b-1, b, b+1)
	}
	ds = append(ds, 0, -time.Second, time.Hour)
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ds = append(ds, time.Duration(r.Int64N(int64(40*time.Second))))
	}
	now := time.Now()
	var starts []time.Time
	for i, d := range ds {
		ref.Observe(d.Seconds())
		if i%3 == 0 {
			h.Observe(d)
		} else {
			starts = append(starts, now.Add(-d))
		}
	}
	h.ObserveSince(now, starts[:len(starts)/2])
	h.ObserveSince(now, starts[len(starts)/2:])
	h.ObserveSince(now, nil)

	got, want := collect(t, h), collect(t, ref)
	if got.GetSampleCount() != want.GetSampleCount() {
		t.Fatalf("count %d, want %d", got.GetSampleCount(), want.GetSampleCount())
	}
	if d := got.GetSampleSum() - want.GetSampleSum(); d > 1e-6 || d < -1e-6 {
		t.Errorf("sum %v, want %v", got.GetSampleSum(), want.GetSampleSum())
	}
	gb, wb := got.GetBucket(), want.GetBucket()
	if len(gb) != len(wb) {
		t.Fatalf("%d buckets, want %d", len(gb), len(wb))
	}
	for i := range wb {
		if gb[i].GetUpperBound() != wb[i].GetUpperBound() || gb[i].GetCumulativeCount() != wb[i].GetCumulativeCount() {
			t.Errorf("bucket %d: le=%v count %d, want le=%v count %d", i,
				gb[i].GetUpperBound(), gb[i].GetCumulativeCount(), wb[i].GetUpperBound(), wb[i].GetCumulativeCount())
		}
	}
}

// collect gathers the one histogram c exports.
func collect(t *testing.T, c prometheus.Collector) *dto.Histogram {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

func BenchmarkLatencyHistogramObserveSince(b *testing.B) {
	h := NewLatencyHistogram("lat_seconds", "test")
	now := time.Now()
	starts := make([]time.Time, 20000)
	for i := range starts {
		starts[i] = now.Add(-time.Duration(i) * time.Microsecond * 7)
	}
	b.ResetTimer()
	for range b.N {
		h.ObserveSince(now, starts)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(starts)), "ns/observation")
}
