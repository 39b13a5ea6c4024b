package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaFamilies gathers reg's graphtide_kafka_ families by name.
func kafkaFamilies(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), KafkaNamespace+"_") {
			out[mf.GetName()] = mf
		}
	}
	return out
}

// labelSets lists a family's series as "name=value,..." strings.
func labelSets(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		out[strings.Join(ls, ",")] = m.GetCounter().GetValue()
	}
	return out
}

// TestKafkaMetrics: with a client of a one-broker cluster, the Kafka
// metrics are kprom's, except that the per-broker and per-topic counters
// have their series at 0 for the seed broker before any connection and
// for the broker once connected, for the topics given; the two gauges
// kprom names like counters are renamed; what kprom never feeds is not
// registered. A closed client's metrics go. (One client: kprom keeps its
// collectors in fields that a second client's creation would overwrite
// under the first one's hooks.)
func TestKafkaMetrics(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	k := newKafka(reg)
	k.Topics([]string{"in", ""}, []string{"dead"})

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("in"), kgo.WithHooks(k))
	if err != nil {
		t.Fatal(err)
	}
	// From the client's creation on (it may connect at once): the seed
	// broker's series.
	fams := kafkaFamilies(t, reg)
	if got, ok := labelSets(fams[KafkaNamespace+"_connect_errors_total"])["node_id=seed_0"]; !ok || got != 0 {
		t.Errorf("once created: connect errors of seed_0 %v (present %v), want 0", got, ok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	// The client knows the broker (node 0) once it connects to it (to
	// fetch, as it consumes).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := labelSets(kafkaFamilies(t, reg)[KafkaNamespace+"_connects_total"])["node_id=0"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client did not connect to broker 0 within 10 s")
		}
	}
	nodes := []string{"seed_0", "0"}
	// Again: a gather collects the families concurrently, so the one
	// above may have seen the broker in one family and not yet in another.
	fams = kafkaFamilies(t, reg)
	for _, name := range []string{"connect_errors_total", "disconnects_total", "read_errors_total", "write_errors_total"} {
		got := labelSets(fams[KafkaNamespace+"_"+name])
		for _, n := range nodes {
			if v, ok := got["node_id="+n]; !ok || v != 0 {
				t.Errorf("%s of node %s: %v (present %v), want 0", name, n, v, ok)
			}
		}
	}
	fetch, produce := labelSets(fams[KafkaNamespace+"_fetch_bytes_total"]), labelSets(fams[KafkaNamespace+"_produce_bytes_total"])
	for _, n := range nodes {
		if _, ok := fetch["node_id="+n+",topic=in"]; !ok {
			t.Errorf("no fetch bytes of in from %s: %v", n, fetch)
		}
		if _, ok := produce["node_id="+n+",topic=dead"]; !ok {
			t.Errorf("no produce bytes of dead to %s: %v", n, produce)
		}
	}
	if len(fetch) != len(nodes) || len(produce) != len(nodes) {
		t.Errorf("fetch bytes %v, produce bytes %v: one series per node and topic given", fetch, produce)
	}
	for name, mf := range fams {
		short := strings.TrimPrefix(name, KafkaNamespace+"_")
		switch {
		case kafkaUnfed[short]:
			t.Errorf("%s is registered, though never fed", name)
		case kafkaRenamed[short] != "":
			t.Errorf("%s is exported under kprom's name", name)
		case strings.HasSuffix(name, "_total") && mf.GetType() != dto.MetricType_COUNTER:
			t.Errorf("%s is a %v named like a counter", name, mf.GetType())
		}
	}
	for _, name := range []string{"buffered_fetch_records", "buffered_produce_records"} {
		if mf := fams[KafkaNamespace+"_"+name]; mf == nil || mf.GetType() != dto.MetricType_GAUGE || len(mf.GetMetric()) != 1 {
			t.Errorf("%s: %v", name, mf)
		}
	}
	cl.Close()
	if fams := kafkaFamilies(t, reg); len(fams) != 0 {
		t.Errorf("after the client closed, %d Kafka families remain", len(fams))
	}
}
