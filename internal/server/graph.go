package server

import (
	"fmt"

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

// newStoreInEdges is whether a store serve creates keeps in-edges: as
// --in-edges says when given (Config.InEdges), else yes, but in
// partitioned mode (Owners), where it keeps none: an owner would hold only
// the in-edges from its own vertices, and dir=in is refused there. An
// existing store keeps what it was created with.
func newStoreInEdges(cfg Config) bool {
	if cfg.InEdges != nil {
		return *cfg.InEdges
	}
	return cfg.Owners == nil
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
	// An unreadable position is ingest.New's to refuse (or discard, with
	// --reset-source-position): the store is then taken as new.
	recorded, old := err == nil && rec.Graph != "", err == nil && len(raw) > 0 && rec.Graph == ""
	given := c.Graph
	switch {
	case recorded:
		if given != "" && given != rec.Graph {
			return &ingest.GraphMismatchError{Recorded: rec.Graph, Given: given, Dir: c.Dir}
		}
		c.Graph = rec.Graph
	case old && given == "":
		// Recorded before graphs had names: the names of then (c.Graph "").
		s.log.Warn("this store recorded no graph (its position was written by an older graphtide): it keeps the Kafka names every graph shared then, which another graph on this cluster may use too; give it a graph of its own with --graph (its default topics then move to graphtide.<graph>.*: let the old writes topic drain first)",
			"names", fmt.Sprintf("%+v", graphid.Defaults("")))
	case old:
		s.log.Warn("this store recorded no graph (written by an older graphtide); it becomes graph "+given+" (--graph), recorded with its next flush", "graph", given)
	case given == "":
		c.Graph = graphid.Derive(c.Topics)
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
