package metrics_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/testkit/metricstest"
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
	{"analytics freshness", map[string]dto.MetricType{"graphtide_analytics_freshness_seconds": dto.MetricType_HISTOGRAM}},
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
		"graphtide_kafka_connects_total":           dto.MetricType_COUNTER,
		"graphtide_kafka_read_bytes_total":         dto.MetricType_COUNTER,
		"graphtide_kafka_fetch_bytes_total":        dto.MetricType_COUNTER,
		"graphtide_kafka_write_bytes_total":        dto.MetricType_COUNTER,
		"graphtide_kafka_produce_bytes_total":      dto.MetricType_COUNTER,
		"graphtide_kafka_buffered_fetch_bytes":     dto.MetricType_GAUGE,
		"graphtide_kafka_buffered_fetch_records":   dto.MetricType_GAUGE,
		"graphtide_kafka_buffered_produce_records": dto.MetricType_GAUGE,
		"graphtide_kafka_connect_errors_total":     dto.MetricType_COUNTER,
		"graphtide_kafka_read_errors_total":        dto.MetricType_COUNTER,
		"graphtide_kafka_write_errors_total":       dto.MetricType_COUNTER,
	}},
}

// TestServeMetricsConventions builds serve's complete registry, with data
// flowing, and checks it: promlint finds nothing (kprom's gauges that were
// named like counters are renamed), every metric graphtide registers was
// exported (so promlint saw it), and every subject of issue 5 is covered.
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
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	// Lint only sees families with samples: every metric of ours must
	// have been exported by the fixture.
	recorded := map[string]bool{}
	for _, n := range f.Recorder.Names() {
		recorded[n] = true
		if strings.HasPrefix(n, "graphtide_") && gathered[n] == nil {
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

// scrape GETs /metrics of the server at addr and parses it.
func scrape(t *testing.T, addr string) ([]byte, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return body, fams
}

// series returns the value of the series of family name with exactly the
// labels want (a counter's or gauge's value; a histogram's count), and
// whether it exists.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := fams[name]
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && want[l.GetName()] == l.GetValue()
		}
		if match {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestFirstScrape scrapes the /metrics of a freshly started serve (ready,
// nothing ingested; issue 40: per-topic counters created at their first
// event hid it from increase(), two dead letters made no alert, and the
// Kafka error panels said "No data"). Every metric serve registers has a
// series; every per-topic counter has one at 0 for each topic serve
// consumes, every per-partition gauge one for each partition the broker
// lists, every enumerated label (write outcome, checkpoint result, an
// analytic's alert kinds and update modes) each of its values, and the
// Kafka client's counters one per broker. promtool check metrics accepts
// the scrape. Then two undecodable records move the dead-letter counter
// from 0 to 2, as increase() sees it.
func TestFirstScrape(t *testing.T) {
	promtool := metricstest.Promtool(t)
	f := metricstest.NewFresh(t)
	addr := f.Server.HTTPAddr()

	// The topics and their partitions, as the broker lists them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.Server.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics := []string{metricstest.Topic, metricstest.WritesTopic}
	td, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err == nil {
		err = td.Error()
	}
	if err != nil || len(td) != 2 {
		t.Fatalf("listing the topics: %v (%d)", err, len(td))
	}

	// The lag of a new assignment is listed right after it: wait for it.
	var body []byte
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		body, fams = scrape(t, addr)
		all := true
		for _, d := range td {
			for p := range d.Partitions {
				_, ok := series(fams, "graphtide_ingest_consumer_lag_records", map[string]string{"topic": d.Topic, "partition": strconv.Itoa(int(p))})
				all = all && ok
			}
		}
		if all || time.Now().After(deadline) {
			break
		}
	}

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	for _, n := range f.Recorder.Names() {
		if fams[n] == nil {
			t.Errorf("%s is registered but has no series in the first scrape", n)
		}
	}
	zero := func(name string, labels map[string]string) {
		t.Helper()
		if v, ok := series(fams, name, labels); !ok || v != 0 {
			t.Errorf("%s%v: %v (present %v), want a series at 0", name, labels, v, ok)
		}
	}
	for _, top := range topics {
		for _, c := range []string{"records", "bytes", "decode_errors", "dead_letters"} {
			zero("graphtide_ingest_"+c+"_total", map[string]string{"topic": top})
		}
	}
	for _, d := range td {
		for p := range d.Partitions {
			l := map[string]string{"topic": d.Topic, "partition": strconv.Itoa(int(p))}
			zero("graphtide_ingest_dead_letter_blocked_partitions", l)
			if _, ok := series(fams, "graphtide_ingest_consumer_lag_records", l); !ok {
				t.Errorf("no consumer lag of %s/%d", d.Topic, p)
			}
		}
	}
	// The enumerated labels, as the README documents them.
	for _, o := range []string{"applied", "refused", "duplicate", "reused", "dead_letter", "other_graph"} {
		zero("graphtide_writes_total", map[string]string{"outcome": o})
	}
	for _, r := range []string{"ok", "failed"} {
		zero("graphtide_analytics_checkpoints_total", map[string]string{"result": r})
	}
	zero("graphtide_analytics_alerts_total", map[string]string{"analytic": "hubs", "kind": "fan_in"})
	for _, a := range []string{"wcc", "hubs"} {
		for _, mode := range []string{"incremental", "recompute"} {
			if _, ok := series(fams, "graphtide_analytics_update_duration_seconds", map[string]string{"analytic": a, "mode": mode}); !ok {
				t.Errorf("no update duration of %s, mode %s", a, mode)
			}
		}
		if _, ok := series(fams, "graphtide_analytics_freshness_seconds", map[string]string{"analytic": a}); !ok {
			t.Errorf("no freshness of %s", a)
		}
	}
	// The Kafka client's: per broker (the seed from the start, the broker
	// it found from its first connection), and per topic it consumes or
	// produces to (dead letters).
	nodes := map[string]bool{}
	for _, m := range fams["graphtide_kafka_connects_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "node_id" {
				nodes[l.GetValue()] = true
			}
		}
	}
	if !nodes["seed_0"] || len(nodes) < 2 {
		t.Errorf("the Kafka client's connections are by node %v, want the seed and the broker", nodes)
	}
	for n := range nodes {
		for _, c := range []string{"connect_errors", "write_errors", "read_errors", "disconnects"} {
			zero("graphtide_kafka_"+c+"_total", map[string]string{"node_id": n})
		}
		for _, top := range topics {
			if _, ok := series(fams, "graphtide_kafka_fetch_bytes_total", map[string]string{"node_id": n, "topic": top}); !ok {
				t.Errorf("no fetch bytes of %s from %s", top, n)
			}
		}
		if _, ok := series(fams, "graphtide_kafka_produce_bytes_total", map[string]string{"node_id": n, "topic": metricstest.DeadLetterTopic}); !ok {
			t.Errorf("no produce bytes of %s to %s", metricstest.DeadLetterTopic, n)
		}
	}
	if t.Failed() {
		t.Logf("the first scrape:\n%s", body)
	}

	// Two dead letters: the counter goes from the 0 above to 2.
	poison := []*kgo.Record{{Topic: metricstest.Topic, Value: []byte{9, 9, 9}}, {Topic: metricstest.Topic, Value: []byte{9, 9, 9}}}
	if err := cl.ProduceSync(ctx, poison...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, fams = scrape(t, addr)
		v, _ := series(fams, "graphtide_ingest_dead_letters_total", map[string]string{"topic": metricstest.Topic})
		if v == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("graphtide_ingest_dead_letters_total{topic=%q} is %v after two dead letters", metricstest.Topic, v)
		}
	}
}
