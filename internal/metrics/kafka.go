package metrics

import (
	"math"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// KafkaNamespace prefixes the Kafka client's metrics.
const KafkaNamespace = "graphtide_kafka"

// Kafka is the Kafka client's metrics: franz-go's kprom plugin (pass it to
// the client as a kgo hook), registered through kafkaRegisterer, which
// makes three changes to what kprom exports:
//
//   - every series of its counters exists at 0 from the start for the
//     brokers and topics the client knows (Topics; the seed brokers from
//     the client's creation on, every other broker from the client's first
//     connection attempt to it), instead of appearing at their first
//     event, which Prometheus' increase() and rate() cannot see;
//   - its two gauges named like counters are renamed:
//     buffered_fetch_records_total is buffered_fetch_records and
//     buffered_produce_records_total is buffered_produce_records;
//   - what kprom registers but never feeds with serve's options (the
//     compressed-bytes, batch and record counters and the latency
//     histograms, all off by default) is not registered.
type Kafka struct {
	*kprom.Metrics
	reg *kafkaRegisterer
}

// newKafka builds the Kafka client's metrics; kprom registers them with
// reg when the client is created.
func newKafka(reg prometheus.Registerer) *Kafka {
	kr := &kafkaRegisterer{reg: reg, wrapped: map[prometheus.Collector]prometheus.Collector{}, nodes: map[string]bool{}}
	return &Kafka{Metrics: kprom.NewMetrics(KafkaNamespace, kprom.Registerer(kr)), reg: kr}
}

// Topics sets the topics the client consumes (fetch_*) and produces to
// (produce_*): their series start at 0. Call it before the client is
// created or at any time after.
func (k *Kafka) Topics(consumed, produced []string) {
	k.reg.setTopics(consumed, produced)
}

// OnNewClient implements kgo.HookNewClient: kprom registers its metrics,
// then the seed brokers' series start at 0.
func (k *Kafka) OnNewClient(cl *kgo.Client) {
	k.Metrics.OnNewClient(cl)
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	for i := range seeds {
		// franz-go's internal ids of seed brokers (kgo.NodeName).
		k.reg.addNode(kgo.NodeName(int32(math.MinInt32 + i)))
	}
}

// OnBrokerConnect implements kgo.HookBrokerConnect: the broker's series
// start at 0 before kprom counts its first connection (or error).
func (k *Kafka) OnBrokerConnect(meta kgo.BrokerMetadata, d time.Duration, conn net.Conn, err error) {
	k.reg.addNode(kgo.NodeName(meta.NodeID))
	k.Metrics.OnBrokerConnect(meta, d, conn, err)
}

// kafkaUnfed are kprom's metrics (without the namespace) that serve's
// options never feed: kprom registers them all the same.
var kafkaUnfed = map[string]bool{
	"produce_compressed_bytes_total": true, "produce_batches_total": true, "produce_records_total": true,
	"fetch_compressed_bytes_total": true, "fetch_batches_total": true, "fetch_records_total": true,
	"write_wait_seconds": true, "write_time_seconds": true, "read_wait_seconds": true, "read_time_seconds": true,
	"request_duration_e2e_seconds": true, "request_throttled_seconds": true,
}

// kafkaRenamed are kprom's gauges named like counters, with their names.
var kafkaRenamed = map[string]string{
	"buffered_fetch_records_total":   "buffered_fetch_records",
	"buffered_produce_records_total": "buffered_produce_records",
}

// kafkaRegisterer is the prometheus.Registerer kprom registers with (see
// Kafka).
type kafkaRegisterer struct {
	reg prometheus.Registerer

	mu sync.Mutex
	// wrapped maps each collector kprom registered to what was registered
	// in its place (nil: nothing, an unfed metric), for Unregister.
	// Protected by mu.
	wrapped map[prometheus.Collector]prometheus.Collector
	// vecs are kprom's registered counters with their label names; nodes
	// and consumed, produced the label values known. INVARIANT: every vec
	// has a series for every combination of known values of its labels.
	// Protected by mu.
	vecs               []kafkaVec
	nodes              map[string]bool
	consumed, produced []string
}

type kafkaVec struct {
	name   string // without the namespace
	vec    *prometheus.CounterVec
	labels []string
}

var descName = regexp.MustCompile(`fqName: "([^"]*)".*variableLabels: \{([^}]*)\}`)

// describe returns the name (without the namespace) and label names of
// c's one metric; ok is false if it describes none or several.
func describe(c prometheus.Collector) (name string, labels []string, ok bool) {
	ch := make(chan *prometheus.Desc, 4)
	go func() { c.Describe(ch); close(ch) }()
	n := 0
	for d := range ch {
		n++
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			name = strings.TrimPrefix(m[1], KafkaNamespace+"_")
			if m[2] != "" {
				labels = strings.Split(m[2], ",")
			}
		}
	}
	return name, labels, n == 1 && name != ""
}

// Register implements prometheus.Registerer.
func (r *kafkaRegisterer) Register(c prometheus.Collector) error {
	name, labels, ok := describe(c)
	if !ok {
		return r.reg.Register(c) // not one metric: as kprom made it
	}
	reg := c
	switch {
	case kafkaUnfed[name]:
		reg = nil
	case kafkaRenamed[name] != "":
		reg = &renamedGauge{inner: c, desc: prometheus.NewDesc(KafkaNamespace+"_"+kafkaRenamed[name], renamedHelp[name], nil, nil)}
	}
	if reg != nil {
		if err := r.reg.Register(reg); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrapped[c] = reg
	if v, ok := c.(*prometheus.CounterVec); ok && reg != nil {
		kv := kafkaVec{name: name, vec: v, labels: labels}
		r.vecs = append(r.vecs, kv)
		r.fill(kv)
	}
	return nil
}

// renamedHelp is the help of the renamed gauges (kprom's says "Total").
var renamedHelp = map[string]string{
	"buffered_fetch_records_total":   "Records buffered within the client, fetched and not yet consumed.",
	"buffered_produce_records_total": "Records buffered within the client, waiting to be produced.",
}

// MustRegister implements prometheus.Registerer.
func (r *kafkaRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (r *kafkaRegisterer) Unregister(c prometheus.Collector) bool {
	r.mu.Lock()
	reg, ok := r.wrapped[c]
	delete(r.wrapped, c)
	for i, kv := range r.vecs {
		if prometheus.Collector(kv.vec) == c {
			r.vecs = append(r.vecs[:i], r.vecs[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
	switch {
	case !ok:
		return r.reg.Unregister(c)
	case reg == nil:
		return true
	}
	return r.reg.Unregister(reg)
}

func (r *kafkaRegisterer) setTopics(consumed, produced []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.consumed, r.produced = nonEmpty(consumed), nonEmpty(produced)
	for _, kv := range r.vecs {
		r.fill(kv)
	}
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (r *kafkaRegisterer) addNode(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes[node] {
		return
	}
	r.nodes[node] = true
	for _, kv := range r.vecs {
		r.fill(kv)
	}
}

// fill creates every series of kv for the known label values. A label
// other than node_id and topic gets none (the metrics tests then find a
// counter without series). r.mu must be held.
func (r *kafkaRegisterer) fill(kv kafkaVec) {
	values := make([][]string, len(kv.labels))
	for i, l := range kv.labels {
		switch {
		case l == "node_id":
			for n := range r.nodes {
				values[i] = append(values[i], n)
			}
		case l == "topic" && strings.HasPrefix(kv.name, "fetch_"):
			values[i] = r.consumed
		case l == "topic" && strings.HasPrefix(kv.name, "produce_"):
			values[i] = r.produced
		}
	}
	lvs := make([]string, len(kv.labels))
	var each func(i int)
	each = func(i int) {
		if i == len(lvs) {
			kv.vec.WithLabelValues(lvs...)
			return
		}
		for _, v := range values[i] {
			lvs[i] = v
			each(i + 1)
		}
	}
	each(0)
}

// renamedGauge exports the gauge inner collects under desc.
type renamedGauge struct {
	inner prometheus.Collector
	desc  *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (g *renamedGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *renamedGauge) Collect(ch chan<- prometheus.Metric) {
	in := make(chan prometheus.Metric, 1)
	go func() { g.inner.Collect(in); close(in) }()
	for m := range in {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil || pb.GetGauge() == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, pb.GetGauge().GetValue())
	}
}
