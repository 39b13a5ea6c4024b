package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// MemorySources says where each part of serve's memory is measured. Nil
// funcs report nothing.
type MemorySources struct {
	Plan       budget.Plan
	Store      *engine.Store  // its MemGraphs
	Views      *views.Manager // its edge log
	Analytics  func() int64   // what the analytics hold
	Alerts     func() int64   // the alerts kept for reading
	KafkaFetch func() int64   // the Kafka consumer's buffered fetches
	Keys       func() int64   // the key dictionary (keys and mapped numbers)
	WritesLog  func() int64   // the writes topic's outcome log (nil: no writes topic)
}

// memoryCollector exports graphtide_memory_budget_bytes (the plan) and
// graphtide_memory_bytes (what each part holds now) by component.
type memoryCollector struct {
	src          MemorySources
	budget, used *prometheus.Desc
}

// NewMemoryCollector returns the collector of serve's memory by component.
func NewMemoryCollector(src MemorySources) prometheus.Collector {
	return &memoryCollector{src: src,
		budget: prometheus.NewDesc("graphtide_memory_budget_bytes",
			"The share of --memory-budget each component is sized to (total: the budget; go_runtime_rest: what is left to the Go runtime and GC headroom within GOMEMLIMIT; headroom: the sixteenth no part holds, for the soft limit and the store to pass their shares by).",
			[]string{"component"}, nil),
		used: prometheus.NewDesc("graphtide_memory_bytes",
			"Memory each component holds now: memgraphs (the store's write buffers, and the memory of flushed ones kept for the next), edge_log, analytics, alerts (the newest alerts, kept for reading), kafka_fetch, key_dictionary (string keys and mapped numbers, estimated; part of go_runtime_rest in the budget), writes_log (the writes topic's outcome log, estimated; part of go_runtime_rest too), go_runtime (all Go memory not returned to the OS).",
			[]string{"component"}, nil),
	}
}

func (c *memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.budget
	ch <- c.used
}

func (c *memoryCollector) Collect(ch chan<- prometheus.Metric) {
	for name, v := range c.src.Plan.Parts() {
		ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, float64(v), name)
	}
	used := func(name string, v int64) {
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(v), name)
	}
	if c.src.Store != nil {
		if m, err := c.src.Store.Metrics(); err == nil {
			used("memgraphs", int64(m.MemGraphBytes+m.MemGraphPoolBytes))
		}
	}
	if c.src.Views != nil {
		st := c.src.Views.Stats()
		used("edge_log", int64(st.LogCapacity)*budget.EdgeBytes+int64(st.LogPayloadBytes))
	}
	if c.src.Analytics != nil {
		used("analytics", c.src.Analytics())
	}
	if c.src.Alerts != nil {
		used("alerts", c.src.Alerts())
	}
	if c.src.KafkaFetch != nil {
		used("kafka_fetch", c.src.KafkaFetch())
	}
	if c.src.Keys != nil {
		used("key_dictionary", c.src.Keys())
	}
	if c.src.WritesLog != nil {
		used("writes_log", c.src.WritesLog())
	}
	held, _ := budget.GoMemory()
	used("go_runtime", held)
}
