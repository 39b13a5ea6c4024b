package metrics

import (
	"regexp"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/views"
)

// Serve holds every metric `graphtide serve` exports.
type Serve struct {
	Ingest    *ingest.Metrics
	Kafka     *Kafka // franz-go's own client metrics (pass as a kgo hook)
	Analytics *AnalyticsMetrics
}

// NewServe registers, with reg, the Go runtime and process collectors, the
// store's, the views', the ingest path's, the Kafka client's and the
// analytics' metrics.
func NewServe(reg prometheus.Registerer, store *engine.Store, m *views.Manager) *Serve {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(NewStoreCollector(store), NewViewsCollector(m))
	return &Serve{
		Ingest:    ingest.NewMetrics(reg),
		Kafka:     newKafka(reg),
		Analytics: NewAnalyticsMetrics(reg, store),
	}
}

// Recorder is a Registerer that remembers the name of every metric
// registered with it (through the collectors' descriptions), so that a
// test can list every metric serve can export, observed yet or not.
type Recorder struct {
	prometheus.Registerer
	names map[string]bool
}

// NewRecorder wraps reg.
func NewRecorder(reg prometheus.Registerer) *Recorder {
	return &Recorder{Registerer: reg, names: map[string]bool{}}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *Recorder) note(c prometheus.Collector) {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
}

// Register implements prometheus.Registerer.
func (r *Recorder) Register(c prometheus.Collector) error {
	r.note(c)
	return r.Registerer.Register(c)
}

// MustRegister implements prometheus.Registerer.
func (r *Recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		r.note(c)
	}
	r.Registerer.MustRegister(cs...)
}

// Names lists the recorded metric names, sorted.
func (r *Recorder) Names() []string {
	out := make([]string, 0, len(r.names))
	for n := range r.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
