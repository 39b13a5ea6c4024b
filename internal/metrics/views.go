package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// ViewsCollector exports a views.Manager's Stats on every scrape.
type ViewsCollector struct {
	m                                                                  *views.Manager
	open, created, oldestAge, oldestLag, streams, lost, logOps, logCap *prometheus.Desc
}

// NewViewsCollector returns a collector over m; register it with a registry.
func NewViewsCollector(m *views.Manager) *ViewsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("graphtide_views_"+name, help, labels, nil)
	}
	return &ViewsCollector{m: m,
		open:      d("open", "Static views alive, streams' attached views included.", "kind"),
		created:   d("created_total", "Static views created.", "kind"),
		oldestAge: d("oldest_age_seconds", "Age of the oldest live static view."),
		oldestLag: d("oldest_lag_sequences", "Sequence numbers the oldest live static view is behind the newest batch."),
		streams:   d("streams_open", "Stream views (stateless and stateful) registered."),
		lost:      d("stream_lost_total", "Times a stream view fell behind the edge log and lost operations."),
		logOps:    d("log_operations", "Operations the edge log holds for stream views."),
		logCap:    d("log_capacity_operations", "Operations the edge log can hold."),
	}
}

// Describe implements prometheus.Collector.
func (c *ViewsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.created, c.oldestAge, c.oldestLag, c.streams, c.lost, c.logOps, c.logCap} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ViewsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.Stats()
	for _, k := range []views.Kind{views.Fresh, views.Stale, views.Private} {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(st.ViewsOpen[k]), k.String())
		ch <- prometheus.MustNewConstMetric(c.created, prometheus.CounterValue, float64(st.ViewsCreated[k]), k.String())
	}
	lag := 0.0
	if st.ViewsOpen[views.Fresh]+st.ViewsOpen[views.Stale]+st.ViewsOpen[views.Private] > 0 && st.LogLastSeq > st.OldestViewSeq {
		lag = float64(st.LogLastSeq - st.OldestViewSeq)
	}
	ch <- prometheus.MustNewConstMetric(c.oldestAge, prometheus.GaugeValue, st.OldestViewAge.Seconds())
	ch <- prometheus.MustNewConstMetric(c.oldestLag, prometheus.GaugeValue, lag)
	ch <- prometheus.MustNewConstMetric(c.streams, prometheus.GaugeValue, float64(st.Streams))
	ch <- prometheus.MustNewConstMetric(c.lost, prometheus.CounterValue, float64(st.LostEvents))
	ch <- prometheus.MustNewConstMetric(c.logOps, prometheus.GaugeValue, float64(st.LogRetained))
	ch <- prometheus.MustNewConstMetric(c.logCap, prometheus.GaugeValue, float64(st.LogCapacity))
}

// AnalyticsMetrics are the metrics of an analytics.Registry: its Hooks
// feed the histograms and counters; the collector part reports staleness
// on every scrape.
type AnalyticsMetrics struct {
	reg       *analytics.Registry
	store     *engine.Store
	duration  *prometheus.HistogramVec
	freshness *prometheus.HistogramVec
	alerts    *prometheus.CounterVec
	staleness *prometheus.Desc
	ready     *prometheus.Desc
	age       *prometheus.Desc
	memory    *prometheus.Desc
	cutShort  *prometheus.Desc
	// Checkpoints of the graph analytics (serve's checkpoint).
	checkpoints    *prometheus.CounterVec
	checkpointSecs prometheus.Histogram
}

// NewAnalyticsMetrics builds the metrics and registers them with reg when
// not nil. Pass Hooks() in the registry's config, then Attach the registry.
func NewAnalyticsMetrics(reg prometheus.Registerer, store *engine.Store) *AnalyticsMetrics {
	m := &AnalyticsMetrics{
		store: store,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "graphtide_analytics_update_duration_seconds",
			Help:    "Time of one analytic update, by analytic and mode (incremental or recompute).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"analytic", "mode"}),
		freshness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "graphtide_analytics_freshness_seconds",
			Help:    "Time from a batch's apply to an analytic's result reflecting it, by analytic: the wait for the pull, the shared topology's advance and the update (observed per update, for its oldest operation).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}, []string{"analytic"}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_analytics_alerts_total", Help: "Alerts raised, by analytic and kind.",
		}, []string{"analytic", "kind"}),
		staleness: prometheus.NewDesc("graphtide_analytics_staleness_sequences",
			"Sequence numbers an analytic's result is behind the newest batch.", []string{"analytic"}, nil),
		ready: prometheus.NewDesc("graphtide_analytics_ready",
			"1 once an analytic's first full compute has finished.", []string{"analytic"}, nil),
		age: prometheus.NewDesc("graphtide_analytics_update_age_seconds",
			"How long the oldest operation an analytic's result does not reflect yet has waited (0 when it reflects all).", []string{"analytic"}, nil),
		memory: prometheus.NewDesc("graphtide_analytics_memory_bytes",
			"Memory an analytic holds: per-vertex state, windows, the pull in progress.", []string{"analytic"}, nil),
		cutShort: prometheus.NewDesc("graphtide_analytics_pulls_cut_short_total",
			"Pulls of an analytic cut short by their time or memory limit (fraud: pull_timeout, pull_memory_mib).", []string{"analytic"}, nil),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "graphtide_analytics_checkpoints_total", Help: "Checkpoints of the graph analytics, by result (ok or failed).",
		}, []string{"result"}),
		checkpointSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "graphtide_analytics_checkpoint_duration_seconds",
			Help:    "Time of one checkpoint of the graph analytics (ingestion waits for it).",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 9),
		}),
	}
	m.checkpoints.WithLabelValues("ok")
	m.checkpoints.WithLabelValues("failed")
	if reg != nil {
		reg.MustRegister(m.duration, m.freshness, m.alerts, m.checkpoints, m.checkpointSecs, m)
	}
	return m
}

// Hooks feed the metrics from the registry.
func (m *AnalyticsMetrics) Hooks() analytics.Hooks {
	return analytics.Hooks{
		Updated: func(name string, recompute bool, d time.Duration) {
			mode := "incremental"
			if recompute {
				mode = "recompute"
			}
			m.duration.WithLabelValues(name, mode).Observe(d.Seconds())
		},
		Fresh:   func(name string, _ uint64, d time.Duration) { m.freshness.WithLabelValues(name).Observe(d.Seconds()) },
		Alerted: func(name, kind string, n int) { m.alerts.WithLabelValues(name, kind).Add(float64(n)) },
		// An analytic's series exist from its registration, at 0 (a series
		// created at its first event hides that event from increase()),
		// and go with it.
		Registered: func(s analytics.Spec) {
			for _, k := range s.AlertKinds() {
				m.alerts.WithLabelValues(s.Name, k)
			}
			for _, mode := range []string{"incremental", "recompute"} {
				m.duration.WithLabelValues(s.Name, mode)
			}
			m.freshness.WithLabelValues(s.Name)
		},
		Unregistered: func(name string) {
			m.alerts.DeletePartialMatch(prometheus.Labels{"analytic": name})
			m.duration.DeletePartialMatch(prometheus.Labels{"analytic": name})
			m.freshness.DeletePartialMatch(prometheus.Labels{"analytic": name})
		},
	}
}

// Checkpointed records one checkpoint: its error (nil: it was written)
// and how long it took.
func (m *AnalyticsMetrics) Checkpointed(err error, d time.Duration) {
	if err != nil {
		m.checkpoints.WithLabelValues("failed").Inc()
		return
	}
	m.checkpoints.WithLabelValues("ok").Inc()
	m.checkpointSecs.Observe(d.Seconds())
}

// Attach sets the registry whose staleness is reported.
func (m *AnalyticsMetrics) Attach(r *analytics.Registry) { m.reg = r }

// Describe implements prometheus.Collector (the staleness part).
func (m *AnalyticsMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.staleness
	ch <- m.ready
	ch <- m.age
	ch <- m.memory
	ch <- m.cutShort
}

// Collect implements prometheus.Collector (the staleness part).
func (m *AnalyticsMetrics) Collect(ch chan<- prometheus.Metric) {
	if m.reg == nil {
		return
	}
	sm, err := m.store.Metrics()
	if err != nil {
		return
	}
	for name, f := range m.reg.Freshness(sm.LastSeq) {
		ready := 0.0
		if f.Ready {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(m.staleness, prometheus.GaugeValue, float64(f.Behind), name)
		ch <- prometheus.MustNewConstMetric(m.ready, prometheus.GaugeValue, ready, name)
		ch <- prometheus.MustNewConstMetric(m.age, prometheus.GaugeValue, f.Age.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(m.memory, prometheus.GaugeValue, float64(f.MemoryBytes), name)
		ch <- prometheus.MustNewConstMetric(m.cutShort, prometheus.CounterValue, float64(f.PullsCutShort), name)
	}
}
