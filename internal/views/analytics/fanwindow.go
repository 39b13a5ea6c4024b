package analytics

import (
	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// fanWindow is the window of the fanin and fanout monitors and of the
// fraud monitor's fan-in (a views.ItemWindow: with a duration, in event
// time, late operations counted and never held; else the last cfg.Edges
// operations in log order), taken in one operation at a time, with the
// upserts into each vertex (byDst: fan-in) or out of it (fan-out)
// counted. A vertex crosses when an upsert takes its count above the
// threshold; it re-arms once the count falls back to it. So its counts
// and crossings, each raised by the upsert that made it, depend on the
// order of the operations only, not on how pulls cut them: a replay of
// the same operations after a restart raises the same alerts.
//
// INVARIANT (between calls): count holds, for every vertex with a held
// upsert, how many; above is exactly the vertices whose count exceeds
// threshold. Not safe for concurrent use.
type fanWindow struct {
	cfg       views.Window
	byDst     bool
	threshold float64
	win       *views.ItemWindow[winOp]
	count     map[uint64]uint64
	above     map[uint64]bool
}

// winOp is one operation in the window.
type winOp struct {
	key    uint64 // the vertex it counts for: its destination (byDst) or source
	time   int64  // when it counts (views.EventMicros), Unix µs
	upsert bool
}

func newFanWindow(cfg views.Window, byDst bool, threshold float64) *fanWindow {
	return &fanWindow{cfg: cfg, byDst: byDst, threshold: threshold, win: views.NewItemWindow[winOp](cfg, 0),
		count: map[uint64]uint64{}, above: map[uint64]bool{}}
}

// add takes in one operation (what the window then no longer covers
// leaves) and returns the vertex it made cross, if any.
func (w *fanWindow) add(e views.Edge) (VertexValue, bool) {
	k := e.Op.Src
	if w.byDst {
		k = e.Op.Dst
	}
	op := winOp{key: k, time: views.EventMicros(e), upsert: e.Op.Kind == engine.OpUpsert}
	// It counts in before what it pushes out leaves: they change places at
	// once, so a vertex it keeps above the threshold does not cross again.
	if op.upsert {
		w.count[op.key]++
	}
	if !w.win.Add(op.time, op, w.uncount) {
		w.uncount(op) // late: never in
		return VertexValue{}, false
	}
	if !op.upsert {
		return VertexValue{}, false
	}
	n := w.count[op.key]
	if float64(n) > w.threshold && !w.above[op.key] {
		w.above[op.key] = true
		return VertexValue{op.key, float64(n)}, true
	}
	return VertexValue{}, false
}

// uncount takes op (an upsert: others are not counted) out of the counts.
func (w *fanWindow) uncount(op winOp) {
	if !op.upsert {
		return
	}
	c := w.count[op.key] - 1
	if c == 0 {
		delete(w.count, op.key)
	} else {
		w.count[op.key] = c
	}
	if float64(c) <= w.threshold {
		delete(w.above, op.key)
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

// save writes the window's operations (each one's vertex, time and
// whether it upserts, in the order they leave) and its late count; the
// counts are made again from them on load.
func (w *fanWindow) save(e *checkpoint.Encoder) {
	ops := w.win.Items() // a copy, in the order they leave
	keys, times := make([]uint64, len(ops)), make([]uint64, len(ops))
	ups := make([]byte, len(ops))
	for i, op := range ops {
		keys[i], times[i] = op.key, uint64(op.time)
		if op.upsert {
			ups[i] = 1
		}
	}
	e.Uint64s(keys)
	e.Uint64s(times)
	e.Bytes(ups)
	e.U64(w.win.Late())
}

// loadFanWindow reads what save wrote into a new window like w (its
// settings), checking that the operations fit one window; a problem is
// reported through d (nil returned).
func loadFanWindow(d *checkpoint.Decoder, like *fanWindow) *fanWindow {
	keys, times, ups, late := d.Uint64s(), d.Uint64s(), d.Bytes(), d.U64()
	if d.Err() != nil {
		return nil
	}
	w := newFanWindow(like.cfg, like.byDst, like.threshold)
	if most := w.win.Max(); len(times) != len(keys) || len(ups) != len(keys) || len(keys) > most {
		d.Fail("a window of %d, %d and %d values (at most %d)", len(keys), len(times), len(ups), most)
		return nil
	}
	left := false
	for i := range keys {
		if ups[i] > 1 {
			d.Fail("an upsert flag of %d", ups[i])
			return nil
		}
		if i > 0 && w.cfg.Duration > 0 && int64(times[i]) < int64(times[i-1]) {
			d.Fail("a duration window's operations out of time order at %d", i)
			return nil
		}
		// In the order they leave, none is late and none leaves (they were
		// all held together).
		op := winOp{key: keys[i], time: int64(times[i]), upsert: ups[i] == 1}
		if !w.win.Add(op.time, op, func(winOp) { left = true }) || left {
			d.Fail("the window's operations do not fit one window (at %d)", i)
			return nil
		}
		if op.upsert {
			w.count[op.key]++
		}
	}
	for v, n := range w.count {
		if float64(n) > w.threshold {
			w.above[v] = true
		}
	}
	w.win.SetLate(late)
	return w
}
