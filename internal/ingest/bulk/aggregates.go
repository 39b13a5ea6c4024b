package bulk

import (
	"fmt"
	"strconv"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/typedict"
)

// Edge types' aggregates (decode.Mapping.Types), for serve and load: the
// names resolved through the type dictionary, then given to the store.

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
// anything is applied) and returns the set of the accumulate types.
func ConfigureAggregates(st *engine.Store, as map[uint16]decode.TypeAggregate) (engine.TypeSet, error) {
	var acc engine.TypeSet
	for t, a := range as {
		if err := st.SetAggregate(t, engine.Aggregate{Accumulate: a.Accumulate, Retain: a.Retain}); err != nil {
			return acc, fmt.Errorf("types: %s: %w", a.Type, err)
		}
		if a.Accumulate {
			acc.Add(t)
		}
	}
	return acc, nil
}
