package engine

import (
	"fmt"

	"github.com/graphtide/graphtide/internal/core"
)

// EventsFrom is Events from the skip-th event of the newest-first list on
// (so that a reader goes through an edge's events a page at a time, in
// memory that follows the page): at most limit of them, and whether more
// follow. The snapshot pins what the list holds, so pages of one snapshot
// neither miss nor repeat an event.
func (sn *Snapshot) EventsFrom(src, dst uint64, t uint16, since int64, skip uint64, limit int) (evs []Event, more, folded bool, err error) {
	if limit < 1 {
		return nil, false, false, fmt.Errorf("%w: events limit must be positive, got %d", ErrInvalid, limit)
	}
	if int(t) >= MaxEdgeTypes {
		return nil, false, false, fmt.Errorf("%w: edge type %d out of range (max %d)", ErrInvalid, t, MaxEdgeTypes-1)
	}
	size := min(limit, pageStart)
	seqs, w, tm, x := make([]uint64, size), make([]float64, size), make([]int64, size), make([]core.EdgeExt, size)
	pay := make([]byte, 4<<10)
	err = sn.read(func(c *core.Snapshot) error {
		for {
			n, pl, m, f, e := c.EdgeEvents(src, dst, uint32(t), since, skip+uint64(len(evs)), seqs, w, tm, x, pay)
			if e != nil && e.Code == core.CodeBuffer && pl > len(pay) {
				pay = make([]byte, pl)
				continue
			}
			if e != nil {
				return fmt.Errorf("events of %d -> %d: %w", src, dst, fromCore(e))
			}
			folded = f
			taken := 0
			for ; taken < n && len(evs) < limit; taken++ {
				i := taken
				ref, props, err := sn.store.decodeExt(&x[i], pay)
				if err != nil {
					return fmt.Errorf("events of %d -> %d: %w", src, dst, err)
				}
				evs = append(evs, Event{Seq: seqs[i], Weight: w[i], Time: tm[i], EventRef: ref, Props: props})
			}
			more = m || taken < n
			if !more || len(evs) >= limit {
				return nil
			}
			if n == 0 {
				return fmt.Errorf("events of %d -> %d: no progress reading a page (a bug)", src, dst)
			}
			if k := min(limit-len(evs), 2*len(seqs)); k > len(seqs) {
				seqs, w, tm, x = make([]uint64, k), make([]float64, k), make([]int64, k), make([]core.EdgeExt, k)
			}
		}
	})
	if err != nil {
		return nil, false, false, err
	}
	return evs, more, folded, nil
}
