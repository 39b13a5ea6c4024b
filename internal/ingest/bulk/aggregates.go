package bulk

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/typedict"
)

// Edge types' aggregates (decode.Mapping.Types), for serve and load: the
// names resolved through the type dictionary, then given to the store,
// which records them (engine.Store.SetAggregate): a later start without
// the mapping has them still.

// ResolveAggregates gives the aggregates their type numbers through the
// type dictionary (assigning numbers to names it has not seen).
func ResolveAggregates(as []decode.TypeAggregate, types *typedict.Dict) (map[uint16]decode.TypeAggregate, error) {
	out := map[uint16]decode.TypeAggregate{}
	for _, a := range as {
		var t uint16
		switch n, err := strconv.ParseUint(a.Type, 10, 16); {
		case a.Type == typedict.Default:
		case err == nil:
			t = uint16(n)
		default:
			if t, err = types.ID(a.Type); err != nil {
				return nil, fmt.Errorf("types: %s: %w", a.Type, err)
			}
		}
		out[t] = a
	}
	return out, nil
}

// ConfigureAggregates gives the store its types' aggregates (before
// anything is applied), which records them, and returns the set of the
// types the store accumulates: those as, and those it recorded before (a
// type as does not name keeps what the store recorded). Every aggregate
// is checked before any is recorded: one that would make a type the
// store records as accumulate replace is refused, naming the type, and
// nothing changes.
func ConfigureAggregates(st *engine.Store, as map[uint16]decode.TypeAggregate) (engine.TypeSet, error) {
	ts := make([]uint16, 0, len(as))
	for t := range as {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	agg := func(a decode.TypeAggregate) engine.Aggregate {
		return engine.Aggregate{Accumulate: a.Accumulate, Retain: a.Retain}
	}
	for _, t := range ts {
		a := as[t]
		var conflict *engine.AggregateConflictError
		switch err := st.CheckAggregate(t, agg(a)); {
		case errors.As(err, &conflict):
			return engine.TypeSet{}, fmt.Errorf("types: %s: the mapping makes %s replace, but the store records it as accumulate (retain %v): its edges' next events would replace the events they hold. A type's aggregate is the store's: say aggregate: accumulate for %s (its retain may change), or map the records that should replace to a new type name",
				a.Type, a.Type, conflict.Recorded.Retain, a.Type)
		case err != nil:
			return engine.TypeSet{}, fmt.Errorf("types: %s: %w", a.Type, err)
		}
	}
	for _, t := range ts {
		if err := st.SetAggregate(t, agg(as[t])); err != nil {
			return engine.TypeSet{}, fmt.Errorf("types: %s: %w", as[t].Type, err)
		}
	}
	var acc engine.TypeSet
	for t := range st.Aggregates() {
		acc.Add(t)
	}
	return acc, nil
}
