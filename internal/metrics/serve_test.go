package metrics_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/graphtide/graphtide/internal/metrics/metricstest"
)

// subjects maps each metric subject that issue 5 asks serve to export to
// the metrics that cover it, with their types.
var subjects = []struct {
	subject string
	metrics map[string]dto.MetricType
}{
	{"ingest records, edges and bytes", map[string]dto.MetricType{
		"graphtide_ingest_records_total": dto.MetricType_COUNTER,
		"graphtide_ingest_edges_total":   dto.MetricType_COUNTER,
		"graphtide_ingest_bytes_total":   dto.MetricType_COUNTER,
	}},
	{"decode errors", map[string]dto.MetricType{"graphtide_ingest_decode_errors_total": dto.MetricType_COUNTER}},
	{"dead letters", map[string]dto.MetricType{"graphtide_ingest_dead_letters_total": dto.MetricType_COUNTER}},
	{"consumer lag per partition", map[string]dto.MetricType{"graphtide_ingest_consumer_lag_records": dto.MetricType_GAUGE}},
	{"batch sizes", map[string]dto.MetricType{"graphtide_ingest_batch_edges": dto.MetricType_HISTOGRAM}},
	{"apply latency", map[string]dto.MetricType{"graphtide_ingest_apply_duration_seconds": dto.MetricType_HISTOGRAM}},
	{"visibility latency", map[string]dto.MetricType{"graphtide_ingest_visibility_seconds": dto.MetricType_HISTOGRAM}},
	{"flush counts, durations and bytes", map[string]dto.MetricType{
		"graphtide_store_flushes_total":             dto.MetricType_COUNTER,
		"graphtide_store_flush_seconds_total":       dto.MetricType_COUNTER,
		"graphtide_store_flush_written_bytes_total": dto.MetricType_COUNTER,
		"graphtide_ingest_flush_duration_seconds":   dto.MetricType_HISTOGRAM,
	}},
	{"compaction counts, durations and bytes", map[string]dto.MetricType{
		"graphtide_store_compactions_total":              dto.MetricType_COUNTER,
		"graphtide_store_compaction_seconds_total":       dto.MetricType_COUNTER,
		"graphtide_store_compaction_read_bytes_total":    dto.MetricType_COUNTER,
		"graphtide_store_compaction_written_bytes_total": dto.MetricType_COUNTER,
	}},
	{"write stalls", map[string]dto.MetricType{
		"graphtide_store_write_stalls_total":        dto.MetricType_COUNTER,
		"graphtide_store_write_stall_seconds_total": dto.MetricType_COUNTER,
		"graphtide_ingest_fetch_pauses_total":       dto.MetricType_COUNTER,
	}},
	{"levels, file counts and sizes", map[string]dto.MetricType{
		"graphtide_store_level_files":             dto.MetricType_GAUGE,
		"graphtide_store_level_bytes":             dto.MetricType_GAUGE,
		"graphtide_store_level_edge_versions":     dto.MetricType_GAUGE,
		"graphtide_store_files":                   dto.MetricType_GAUGE,
		"graphtide_store_disk_bytes":              dto.MetricType_GAUGE,
		"graphtide_store_memgraph_bytes":          dto.MetricType_GAUGE,
		"graphtide_store_memgraph_pool_bytes":     dto.MetricType_GAUGE,
		"graphtide_store_apply_cpu_seconds_total": dto.MetricType_COUNTER,
	}},
	{"write amplification", map[string]dto.MetricType{"graphtide_store_write_amplification_ratio": dto.MetricType_GAUGE}},
	{"read amplification", map[string]dto.MetricType{"graphtide_store_read_amplification_runs": dto.MetricType_GAUGE}},
	{"background errors", map[string]dto.MetricType{"graphtide_store_background_errors_total": dto.MetricType_COUNTER}},
	{"snapshot and view counts", map[string]dto.MetricType{
		"graphtide_store_snapshots_open": dto.MetricType_GAUGE,
		"graphtide_views_open":           dto.MetricType_GAUGE,
		"graphtide_views_created_total":  dto.MetricType_COUNTER,
		"graphtide_views_streams_open":   dto.MetricType_GAUGE,
	}},
	{"view ages", map[string]dto.MetricType{
		"graphtide_views_oldest_age_seconds":   dto.MetricType_GAUGE,
		"graphtide_views_oldest_lag_sequences": dto.MetricType_GAUGE,
	}},
	{"analytics update latency", map[string]dto.MetricType{"graphtide_analytics_update_duration_seconds": dto.MetricType_HISTOGRAM}},
	{"analytics staleness", map[string]dto.MetricType{
		"graphtide_analytics_staleness_sequences": dto.MetricType_GAUGE,
		"graphtide_analytics_ready":               dto.MetricType_GAUGE,
	}},
	{"Go runtime", map[string]dto.MetricType{
		"go_goroutines":                 dto.MetricType_GAUGE,
		"go_gc_duration_seconds":        dto.MetricType_SUMMARY,
		"go_memstats_heap_alloc_bytes":  dto.MetricType_GAUGE,
		"process_resident_memory_bytes": dto.MetricType_GAUGE,
		"process_open_fds":              dto.MetricType_GAUGE,
	}},
	{"franz-go client (kprom)", map[string]dto.MetricType{
		"graphtide_kafka_connects_total":       dto.MetricType_COUNTER,
		"graphtide_kafka_read_bytes_total":     dto.MetricType_COUNTER,
		"graphtide_kafka_fetch_bytes_total":    dto.MetricType_COUNTER,
		"graphtide_kafka_write_bytes_total":    dto.MetricType_COUNTER,
		"graphtide_kafka_produce_bytes_total":  dto.MetricType_COUNTER,
		"graphtide_kafka_buffered_fetch_bytes": dto.MetricType_GAUGE,
	}},
}

// kpromFindings are the promlint problems of franz-go's kprom (v1.5.0)
// metrics, exported under graphtide_kafka_: third-party names, kept as
// kprom documents them. Any other problem fails the test.
var kpromFindings = map[string]string{
	// Gauges (records buffered now) named like counters.
	"graphtide_kafka_buffered_fetch_records_total":   `non-counter metrics should not have "_total" suffix`,
	"graphtide_kafka_buffered_produce_records_total": `non-counter metrics should not have "_total" suffix`,
}

// TestServeMetricsConventions builds serve's complete registry, with data
// flowing, and checks it: promlint finds nothing in graphtide's own
// metrics, every metric graphtide registers was exported (so promlint saw
// it), and every subject of issue 5 is covered.
func TestServeMetricsConventions(t *testing.T) {
	f := metricstest.NewServe(t)
	mfs, err := f.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		gathered[mf.GetName()] = mf
	}

	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if kpromFindings[p.Metric] == p.Text {
			t.Logf("promlint (kprom's name, left as is): %s: %s", p.Metric, p.Text)
			continue
		}
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	// Lint only sees families with samples: every metric of ours must
	// have been exported by the fixture.
	recorded := map[string]bool{}
	for _, n := range f.Recorder.Names() {
		recorded[n] = true
		if strings.HasPrefix(n, "graphtide_") && !strings.HasPrefix(n, "graphtide_kafka_") && gathered[n] == nil {
			t.Errorf("%s is registered but had no sample: promlint did not see it", n)
		}
	}
	var ours []string
	for n := range gathered {
		if strings.HasPrefix(n, "graphtide_") {
			ours = append(ours, n)
		}
	}
	sort.Strings(ours)
	t.Logf("graphtide metrics exported: %d (%s)", len(ours), strings.Join(ours, " "))

	for _, s := range subjects {
		for name, typ := range s.metrics {
			switch mf := gathered[name]; {
			case !recorded[name]:
				t.Errorf("%s: %s is not registered by metrics.NewServe", s.subject, name)
			case mf == nil:
				t.Errorf("%s: %s is registered but was not exported", s.subject, name)
			case mf.GetType() != typ:
				t.Errorf("%s: %s is a %v, want a %v", s.subject, name, mf.GetType(), typ)
			}
		}
	}
}
