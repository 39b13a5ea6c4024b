package analytics

import (
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// fanWindow is the fraud monitor's fan-in window (a views.ItemWindow:
// with a duration, in event time, late operations counted and never held;
// else the last cfg.Edges operations in log order), taken in one
// operation at a time, with the upserts into each vertex counted. A vertex
// crosses when an upsert takes its count above the threshold; it re-arms
// once the count falls back to it.
//
// INVARIANT (between calls): count holds, for every vertex with a held
// upsert, how many; above is exactly the vertices whose count exceeds
// threshold. Not safe for concurrent use.
type fanWindow struct {
	cfg       views.Window
	threshold float64
	win       *views.ItemWindow[winOp]
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
	return &fanWindow{cfg: cfg, threshold: threshold, win: views.NewItemWindow[winOp](cfg, 0),
		count: map[uint64]uint64{}, above: map[uint64]bool{}}
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
	if !w.win.Add(op.time, op, w.uncount) {
		w.uncount(op) // late: never in
		return VertexValue{}, false
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

func (w *fanWindow) reset() {
	w.win.Reset()
	clear(w.count)
	clear(w.above)
}

func (w *fanWindow) aboveCounts() map[uint64]uint64 { return countsOf(w.above, w.count) }

// winOpBytes is what one held operation costs.
const winOpBytes = 24

func (w *fanWindow) bytes() int64 {
	return mapEntryBytes*int64(len(w.count)+len(w.above)) + w.win.Bytes(winOpBytes)
}
