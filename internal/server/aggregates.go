package server

import (
	"fmt"
	"sort"

	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// Edge types' aggregates: the mappings' types sections (decode.Mapping.
// Types) say which types accumulate. They are the store's configuration,
// not the topic's: serve merges them (one aggregate per type, whatever
// mapping gives it) and, once the data directory is open, gives each
// type its number through the type dictionary (a name not seen yet is
// assigned one now, before any record can name it) and configures the
// store and the ingester with them (bulk.ResolveAggregates and
// ConfigureAggregates, which load uses too). The store records them: a
// start without the mappings (or whose mappings leave a type out) keeps
// the types as recorded, and one whose mapping would make a recorded
// accumulate type replace is refused at start, naming the type, before
// any record is read.

// configuredAggregate is one type's aggregate and the topic whose mapping
// gave it (for errors).
type configuredAggregate struct {
	decode.TypeAggregate
	topic string
}

// MappingAggregates merges the mappings' types, sorted by type, refusing
// a type two mappings give different aggregates, naming both topics.
func MappingAggregates(ms map[string]decode.Mapping) ([]decode.TypeAggregate, error) {
	topics := make([]string, 0, len(ms))
	for t := range ms {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	byType := map[string]configuredAggregate{}
	for _, t := range topics {
		as, err := ms[t].TypeAggregates()
		if err != nil {
			return nil, fmt.Errorf("mapping of topic %s: %w", t, err)
		}
		for _, a := range as {
			if o, ok := byType[a.Type]; ok && o.TypeAggregate != a {
				return nil, fmt.Errorf("types: the mappings of topics %s and %s give type %s two aggregates (%s and %s): a type's aggregate is the store's, give it one",
					o.topic, t, a.Type, aggregateText(o.TypeAggregate), aggregateText(a))
			}
			byType[a.Type] = configuredAggregate{a, t}
		}
	}
	out := make([]decode.TypeAggregate, 0, len(byType))
	for _, a := range byType {
		out = append(out, a.TypeAggregate)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out, nil
}

// aggregateText is an aggregate as a mapping spells it.
func aggregateText(a decode.TypeAggregate) string {
	if !a.Accumulate {
		return decode.AggregateReplace
	}
	return fmt.Sprintf("%s, retain %v", decode.AggregateAccumulate, a.Retain)
}
