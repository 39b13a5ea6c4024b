package ingest

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/graphid"
	"github.com/graphtide/graphtide/internal/kafkaconn"
)

// A store belongs to one graph (Config.Graph, package graphid): the name is
// recorded with every position, and New refuses a store that recorded
// another (GraphMismatchError). The writes topic is the graph's: its
// records carry the graph they are for (graphid.HeaderGraph), and a record
// for another graph, on a writes topic two graphs were given by mistake,
// is skipped: not applied, not dead-lettered (its bytes are another
// graph's), counted (graphtide_writes_total{outcome="other_graph"}) and
// logged once per graph and minute. A record without the header (written
// before records carried one) is applied.

// GraphMismatchError reports a store that recorded another graph than the
// one it is started as.
type GraphMismatchError struct {
	Recorded, Given string
	// Dir is the store's data directory, when the caller knows it (serve
	// sets it): the error names it.
	Dir string
}

func (e *GraphMismatchError) Error() string {
	given := fmt.Sprintf("graph %q", e.Given)
	if e.Given == "" {
		given = "no graph"
	}
	store := "the store"
	if e.Dir != "" {
		store = "the store in " + e.Dir
	}
	newStore := "start a new store in another --dir"
	if e.Given != "" {
		newStore = fmt.Sprintf("to start graph %q, give it a new store in another --dir", e.Given)
	}
	return fmt.Sprintf("ingest: %s belongs to graph %q (recorded with its position) but is started as %s: a store holds one graph, and its writes and alerts are that graph's; to use this store, leave --graph out (the store keeps its own) or give --graph %s; or %s",
		store, e.Recorded, given, e.Recorded, newStore)
}

// otherGraph reports whether r, a record of the writes topic, is
// addressed to another graph than ours.
func otherGraph(r *kgo.Record, ours string) (string, bool) {
	g := kafkaconn.Header(r, graphid.HeaderGraph) // "": a record that names no graph
	return g, g != "" && g != ours
}
