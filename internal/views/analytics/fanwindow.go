package analytics

import (
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// fanWindow is the fraud monitor's fan-in window, taken in one operation
// at a time, with the upserts into each vertex counted: with a duration,
// a views.TimeWindow in event time (late operations counted, never held);
// else the last cfg.Edges operations in log order. At most
// views.DefaultMaxWindowEdges (or cfg.Edges) are held. A vertex crosses
// when an upsert takes its count above the threshold; it re-arms once the
// count falls back to it.
//
// INVARIANT (between calls): count holds, for every vertex with a held
// upsert, how many; above is exactly the vertices whose count exceeds
// threshold. Not safe for concurrent use.
type fanWindow struct {
	cfg       views.Window
	max       int
	threshold float64
	tw        *views.TimeWindow[winOp] // a duration window; nil: q
	q         []winOp
	at        int // q[at:] is held; the front is compacted lazily
	count     map[uint64]uint64
	above     map[uint64]bool
}

// winOp is one operation in the window.
type winOp struct {
	dst    uint64
	time   int64 // when it counts (views.EventMicros), Unix µs
	upsert bool
}

func newFanWindow(cfg views.Window, threshold float64) *fanWindow {
	m := views.DefaultMaxWindowEdges
	if cfg.Edges > 0 && cfg.Edges < m {
		m = cfg.Edges
	}
	w := &fanWindow{cfg: cfg, max: m, threshold: threshold, count: map[uint64]uint64{}, above: map[uint64]bool{}}
	if cfg.Duration > 0 {
		w.tw = views.NewTimeWindow[winOp](cfg.Duration, cfg.Lateness, m)
	}
	return w
}

func (w *fanWindow) len() int {
	if w.tw != nil {
		return w.tw.Len()
	}
	return len(w.q) - w.at
}

// late counts the operations that came late for a duration window.
func (w *fanWindow) late() uint64 {
	if w.tw != nil {
		return w.tw.Late()
	}
	return 0
}

// add takes in one operation (what the window then no longer covers
// leaves) and returns the vertex it made cross, if any.
func (w *fanWindow) add(e views.Edge) (VertexValue, bool) {
	op := winOp{dst: e.Op.Dst, time: views.EventMicros(e), upsert: e.Op.Kind == engine.OpUpsert}
	// It counts in before what it pushes out leaves: they change places at
	// once, so a vertex it keeps above the threshold does not cross again.
	if op.upsert {
		w.count[op.dst]++
	}
	if w.tw != nil {
		if !w.tw.Add(op.time, op, w.uncount) {
			w.uncount(op) // late: never in
			return VertexValue{}, false
		}
	} else {
		w.q = append(w.q, op)
	}
	if w.tw == nil && w.len() > w.max {
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

// uncount takes op (an upsert: others are not counted) out of the counts.
func (w *fanWindow) uncount(op winOp) {
	if !op.upsert {
		return
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

// drop removes the n oldest operations of q.
func (w *fanWindow) drop(n int) {
	for _, op := range w.q[w.at : w.at+n] {
		w.uncount(op)
	}
	w.at += n
	if w.at > len(w.q)/2 && w.at > 1024 {
		w.q = append(w.q[:0], w.q[w.at:]...)
		w.at = 0
	}
}

// held returns a copy of the held operations, in the order they leave.
func (w *fanWindow) held() []winOp {
	if w.tw != nil {
		ops, _ := w.tw.Items()
		return ops
	}
	return slices.Clone(w.q[w.at:])
}

func (w *fanWindow) reset() {
	w.q, w.at = w.q[:0], 0
	if w.tw != nil {
		w.tw.Reset()
	}
	clear(w.count)
	clear(w.above)
}

func (w *fanWindow) aboveCounts() map[uint64]uint64 { return countsOf(w.above, w.count) }

// winOpBytes is what one held operation costs (a duration window's heap
// entry is 16 bytes more: its time and arrival number).
const winOpBytes = 24

func (w *fanWindow) bytes() int64 {
	held := winOpBytes * int64(cap(w.q))
	if w.tw != nil {
		held = (winOpBytes + 16) * int64(w.tw.Cap())
	}
	return mapEntryBytes*int64(len(w.count)+len(w.above)) + held
}
