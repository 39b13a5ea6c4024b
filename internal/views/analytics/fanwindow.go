package analytics

import (
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// fanWindow is the fraud monitor's fan-in window: the last cfg.Edges
// operations and/or those applied within the last cfg.Duration (at most
// views.DefaultMaxWindowEdges), taken in one at a time, with the upserts
// into each vertex counted. A vertex crosses when an upsert takes its
// count above the threshold; it re-arms once the count falls back to it.
//
// INVARIANT (between calls): count holds, for every vertex with an upsert
// in q[at:], how many; above is exactly the vertices whose count exceeds
// threshold. Not safe for concurrent use.
type fanWindow struct {
	cfg       views.Window
	max       int
	threshold float64
	q         []winOp
	at        int // q[at:] is held; the front is compacted lazily
	count     map[uint64]uint64
	above     map[uint64]bool
}

// winOp is one operation in the window.
type winOp struct {
	dst    uint64
	time   int64 // when it was applied, Unix ns
	upsert bool
}

func newFanWindow(cfg views.Window, threshold float64) *fanWindow {
	m := views.DefaultMaxWindowEdges
	if cfg.Edges > 0 && cfg.Edges < m {
		m = cfg.Edges
	}
	return &fanWindow{cfg: cfg, max: m, threshold: threshold, count: map[uint64]uint64{}, above: map[uint64]bool{}}
}

func (w *fanWindow) len() int { return len(w.q) - w.at }

// add takes in one operation: what the window no longer covers at its
// time leaves first, then it enters (and the oldest leaves if the window
// is full). It returns the vertex it made cross, if any.
func (w *fanWindow) add(e views.Edge) (VertexValue, bool) {
	w.expire(e.Time)
	op := winOp{dst: e.Op.Dst, time: e.Time, upsert: e.Op.Kind == engine.OpUpsert}
	w.q = append(w.q, op)
	if op.upsert {
		w.count[op.dst]++
	}
	if w.len() > w.max {
		w.drop(w.len() - w.max)
	}
	if !op.upsert {
		return VertexValue{}, false
	}
	n := w.count[op.dst]
	if float64(n) > w.threshold && !w.above[op.dst] {
		w.above[op.dst] = true
		return VertexValue{op.dst, float64(n)}, true
	}
	return VertexValue{}, false
}

// expire drops what a duration window no longer covers at now (Unix ns).
func (w *fanWindow) expire(now int64) {
	if w.cfg.Duration <= 0 {
		return
	}
	cut := now - int64(w.cfg.Duration)
	n := 0
	for n < w.len() && w.q[w.at+n].time <= cut {
		n++
	}
	w.drop(n)
}

// drop removes the n oldest operations.
func (w *fanWindow) drop(n int) {
	for _, op := range w.q[w.at : w.at+n] {
		if !op.upsert {
			continue
		}
		c := w.count[op.dst] - 1
		if c == 0 {
			delete(w.count, op.dst)
		} else {
			w.count[op.dst] = c
		}
		if float64(c) <= w.threshold {
			delete(w.above, op.dst)
		}
	}
	w.at += n
	if w.at > len(w.q)/2 && w.at > 1024 {
		w.q = append(w.q[:0], w.q[w.at:]...)
		w.at = 0
	}
}

func (w *fanWindow) reset() {
	w.q, w.at = w.q[:0], 0
	clear(w.count)
	clear(w.above)
}

func (w *fanWindow) aboveCounts() map[uint64]uint64 { return countsOf(w.above, w.count) }

// winOpBytes is what one held operation costs.
const winOpBytes = 24

func (w *fanWindow) bytes() int64 {
	return mapEntryBytes*int64(len(w.count)+len(w.above)) + winOpBytes*int64(cap(w.q))
}
