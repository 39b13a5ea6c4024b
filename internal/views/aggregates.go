package views

import (
	"fmt"

	"github.com/graphtide/graphtide/internal/engine"
)

// Reads of edge aggregates through a static view (engine aggregate.go):
// the neighbors' pages with their aggregates and payloads, and an
// accumulate edge's events. A private view holds neither: its pages come
// without those columns (every edge reads as replace) and it lists no
// events.

// NeighborsPageExt is NeighborsPage with weights and the edges' aggregates
// and payloads (engine.Snapshot.NeighborsPageExt).
func (v *StaticView) NeighborsPageExt(u uint64, dir engine.Direction, after *engine.EdgeCursor, limit int) (engine.Page, error) {
	if err := v.checkDir(dir); err != nil {
		return engine.Page{}, err
	}
	if limit < 1 {
		return engine.Page{}, fmt.Errorf("views: page limit must be positive, got %d", limit)
	}
	var p engine.Page
	err := v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g == nil {
			p, err = sn.NeighborsPageExt(u, dir, after, limit)
			return err
		}
		p = g.page(u, dir, after, limit, true)
		return nil
	})
	return p, err
}

// EventsFrom lists the events of the accumulate edge (src, dst, t) held
// one by one with time >= since, newest first, from the skip-th on, at
// most limit (engine.Snapshot.EventsFrom); more says some follow, folded
// that older ones were folded into the edge. A private view has none.
func (v *StaticView) EventsFrom(src, dst uint64, t uint16, since int64, skip uint64, limit int) (evs []engine.Event, more, folded bool, err error) {
	err = v.read(func(sn *engine.Snapshot, g *memGraph) (err error) {
		if g != nil {
			return nil
		}
		evs, more, folded, err = sn.EventsFrom(src, dst, t, since, skip, limit)
		return err
	})
	return evs, more, folded, err
}
