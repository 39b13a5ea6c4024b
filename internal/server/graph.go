package server

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/graphid"
	"github.com/graphtide/graphtide/internal/ingest"
)

// A store holds one graph (package graphid), and the Kafka names serve
// would otherwise share with every other graph on the cluster default
// from the graph's name: the consumer group graphtide.<graph>, the
// topics graphtide.<graph>.writes, .alerts and .dead-letters. Which graph:
//
//   - a store that recorded a graph (with its position, at its first
//     flush of ingested records) is that graph, whatever --topics says
//     later; --graph naming another is refused (ingest.GraphMismatchError);
//   - a new store is --graph, else graphid.Derive(--topics): replicas
//     started on the same topics derive the same graph, and so share its
//     writes and alert topics, as they must;
//   - a store whose position was recorded before graphs had names keeps
//     the names every store shared then (graphid.Defaults("")), and says
//     so at start, until --graph gives it a graph of its own.
//
// A name given by a flag (the environment or the config file) is used as
// given: Derive lists those that default from the graph.

// DeriveNames says which Kafka names of Config default from the graph.
type DeriveNames struct {
	Group, Writes, Alerts, DeadLetters bool
}

// wantsWrites reports whether cfg has a writes topic, before the graph is
// resolved (the data directory opens its outcome log first): one given, or
// derived outside partitioned mode.
func wantsWrites(cfg Config) bool {
	return cfg.WritesTopic != "" || cfg.Derive.Writes && cfg.Owners == nil
}

// resolveGraph decides the store's graph (above) once the data directory
// is open, and fills the names that default from it.
func (s *Server) resolveGraph() error {
	c := &s.cfg
	raw, err := s.dir.Store.SourcePosition()
	if err != nil {
		return err
	}
	rec, err := ingest.DecodeRecorded(raw)
	unreadable := err != nil // ingest.New refuses it (or discards it, with --reset-source-position)
	given := c.Graph
	switch {
	case !unreadable && rec.Graph != "":
		if given != "" && given != rec.Graph {
			return &ingest.GraphMismatchError{Recorded: rec.Graph, Given: given}
		}
		c.Graph = rec.Graph
	case !unreadable && len(raw) > 0 && given == "":
		// Recorded before graphs had names: the names of then.
		c.Graph = ""
		s.log.Warn("this store recorded no graph (its position was written by an older graphtide): it keeps the Kafka names every graph shared then, which another graph on this cluster may use too; give it a graph of its own with --graph (its default topics then move to graphtide.<graph>.*: let the old writes topic drain first)",
			"names", fmt.Sprintf("%+v", graphid.Defaults("")))
	case given == "":
		c.Graph = graphid.Derive(c.Topics)
	}
	if len(raw) > 0 && !unreadable && rec.Graph == "" && given != "" {
		s.log.Warn("this store recorded no graph (written by an older graphtide); it becomes graph "+given+" (--graph), recorded with its next flush", "graph", given)
	}
	d := graphid.Defaults(c.Graph)
	if c.Derive.Group {
		c.Group = d.Group
	}
	if c.Derive.Writes {
		c.WritesTopic = d.Writes
		if c.Owners != nil {
			c.WritesTopic = "" // partitioned mode takes no writes topic
		}
	}
	if c.Derive.Alerts {
		c.AlertTopic = d.Alerts
	}
	if c.Derive.DeadLetters {
		c.DeadLetterTopic = d.DeadLetters
	}
	if err := checkTopicNames(c.Topics, c.WritesTopic, c.DeadLetterTopic, c.AlertTopic, c.Mappings); err != nil {
		return err
	}
	s.log.Info("graph", "graph", c.Graph, "group", c.Group, "writes_topic", c.WritesTopic, "alert_topic", c.AlertTopic, "dead_letter_topic", c.DeadLetterTopic)
	return nil
}

// Names are the graph a server holds and the Kafka names it uses.
type Names struct {
	Graph                                      string // "": a store that recorded none
	Group, WritesTopic, AlertTopic, DeadLetter string // "": none (writes, alerts)
}

// Names returns the server's graph and Kafka names, as resolved at Open.
func (s *Server) Names() Names {
	c := s.cfg
	return Names{Graph: c.Graph, Group: c.Group, WritesTopic: c.WritesTopic, AlertTopic: c.AlertTopic, DeadLetter: c.DeadLetterTopic}
}

// registerSinkMetrics exports what the alert sink does.
func registerSinkMetrics(reg prometheus.Registerer, sink *alerts.KafkaSink) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "graphtide_alerts_producing",
			Help: "1 while this replica produces the graph's alerts to the alert topic (the member of the alert producers' group that holds its partition 0), else 0; summed over the replicas of a graph, 1 (0 for longer than --alert-failover-timeout: nobody produces)."},
			func() float64 {
				if sink.Stats().Leading {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "graphtide_alerts_pending",
			Help: "Alerts this replica raised that the alert topic does not hold yet (the producer, this replica or another, has not produced them)."},
			func() float64 { return float64(sink.Stats().Pending) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "graphtide_alerts_produced_total",
			Help: "Alerts this replica produced to the alert topic (committed)."},
			func() float64 { return float64(sink.Stats().Produced) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "graphtide_alerts_dropped_total",
			Help: "Alerts dropped because too many waited for the alert topic (100000); no analytics checkpoint is taken after one, so that a restart raises it again."},
			func() float64 { return float64(sink.Stats().Dropped) }),
	)
}
