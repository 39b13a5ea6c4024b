package views

import (
	"fmt"
	"slices"
	"time"
)

// Window is a sliding window over the stream: the last Edges operations
// and/or the operations of the last Duration in event time. Zero fields do
// not bound; a zero Window is no window.
//
// A Duration window runs on event time (TimeWindow): an operation counts
// at its event time (engine.Op.EventTime, as its record gave it), or when
// it has none at its apply time; the watermark is the newest such time
// seen less Lateness; an operation leaves once its time is at or before
// the watermark less Duration, and one that arrives already there is late:
// counted, handed out apart (StreamBatch.Late), never in the window. So a
// replay after a crash gives the windows it gave the first time, as far as
// the operations have event times (an apply time is new on replay). With
// Edges too, the window holds at most that many, the oldest in event time
// leaving first.
type Window struct {
	Edges    int
	Duration time.Duration
	Lateness time.Duration
}

// DefaultMaxWindowEdges bounds the operations a window holds when
// StreamOptions.MaxWindowEdges is 0.
const DefaultMaxWindowEdges = 1 << 20

func (w Window) enabled() bool { return w.Edges > 0 || w.Duration > 0 }

func (w Window) validate() error {
	if w.Edges < 0 || w.Duration < 0 || w.Lateness < 0 {
		return fmt.Errorf("views: window bounds must not be negative, got %d edges, %v and lateness %v", w.Edges, w.Duration, w.Lateness)
	}
	return nil
}

// ItemWindow holds the items inside a Window, whatever they stand for
// (a stream view's operations, a monitor's record of them), and says which
// leave it: a TimeWindow for a Duration window, else the last Edges in the
// order they came. At most a hard bound of them are held; beyond it the
// oldest leave early. Not safe for concurrent use.
type ItemWindow[T any] struct {
	tw  *TimeWindow[T] // a Duration window; nil: q
	q   []T
	at  int // q[at:] is held; the front is compacted lazily
	max int // the most held: Window.Edges, or the hard bound when lower
	// hard: max is the hard bound, not Window.Edges (Early counts).
	hard  bool
	early uint64 // of q
}

// NewItemWindow returns an empty window of cfg holding at most maxItems
// (0: DefaultMaxWindowEdges).
func NewItemWindow[T any](cfg Window, maxItems int) *ItemWindow[T] {
	if maxItems <= 0 {
		maxItems = DefaultMaxWindowEdges
	}
	w := &ItemWindow[T]{max: maxItems, hard: true}
	if cfg.Edges > 0 && cfg.Edges <= maxItems {
		w.max, w.hard = cfg.Edges, false
	}
	if cfg.Duration > 0 {
		w.tw = NewTimeWindow[T](cfg.Duration, cfg.Lateness, w.max)
	}
	return w
}

// Add takes v, which counts at time t (Unix µs: see EventMicros; a window
// without a duration ignores it), and calls leave with every item that
// leaves the window, oldest first. It returns false when v is late (not
// held).
func (w *ItemWindow[T]) Add(t int64, v T, leave func(T)) bool {
	if w.tw != nil {
		return w.tw.Add(t, v, leave)
	}
	w.q = append(w.q, v)
	if len(w.q)-w.at > w.max {
		w.early++
		leave(w.q[w.at])
		var zero T
		w.q[w.at] = zero
		w.at++
		if w.at > len(w.q)/2 && w.at > 1024 {
			w.q = append(w.q[:0], w.q[w.at:]...)
			w.at = 0
		}
	}
	return true
}

// Oldest returns, without a copy, up to k of the held items that leave
// soonest, oldest first: for a Duration window only those that came in
// time order (the others leave in between), so a hint (what to load
// ahead), not the exact order. The slice is valid until the next Add.
func (w *ItemWindow[T]) Oldest(k int) []T {
	if w.tw != nil {
		return w.tw.oldestInOrder(k)
	}
	return w.q[w.at:min(w.at+k, len(w.q))]
}

// Max is the most items held.
func (w *ItemWindow[T]) Max() int { return w.max }

// Len is the number of items held.
func (w *ItemWindow[T]) Len() int {
	if w.tw != nil {
		return w.tw.Len()
	}
	return len(w.q) - w.at
}

// Late counts the items that arrived late (a Duration window's).
func (w *ItemWindow[T]) Late() uint64 {
	if w.tw != nil {
		return w.tw.Late()
	}
	return 0
}

// Early counts the items that left before their time because the hard
// bound was reached.
func (w *ItemWindow[T]) Early() uint64 {
	switch {
	case !w.hard:
		return 0
	case w.tw != nil:
		return w.tw.Early()
	}
	return w.early
}

// Items returns a copy of the held items in the order they leave: adding
// them to an empty window of the same Window in that order rebuilds this
// one.
func (w *ItemWindow[T]) Items() []T {
	if w.tw != nil {
		return w.tw.Items()
	}
	return slices.Clone(w.q[w.at:])
}

// Remap replaces every held item v by f(v), keeping their order (a
// caller that moves what its items refer to).
func (w *ItemWindow[T]) Remap(f func(T) T) {
	if w.tw != nil {
		w.tw.remap(f)
		return
	}
	for i := w.at; i < len(w.q); i++ {
		w.q[i] = f(w.q[i])
	}
}

// SetLate sets the late count (a window rebuilt from Items).
func (w *ItemWindow[T]) SetLate(n uint64) {
	if w.tw != nil {
		w.tw.late = n
	}
}

// Bytes is the memory of the held items' array, item bytes each.
func (w *ItemWindow[T]) Bytes(item int64) int64 {
	if w.tw != nil {
		return (item + 16) * int64(w.tw.capacity()) // and its time and arrival number
	}
	return item * int64(cap(w.q))
}

// Reset empties the window (after lost data; the counts stay).
func (w *ItemWindow[T]) Reset() {
	clear(w.q)
	w.q, w.at = w.q[:0], 0
	if w.tw != nil {
		w.tw.Reset()
	}
}

// advance adds a pull's new operations to w and returns the late ones
// (not held) and every held operation that left, oldest first.
func advance(w *ItemWindow[Edge], added []Edge) (late, expired []Edge) {
	leave := func(e Edge) { expired = append(expired, e) }
	for _, e := range added {
		if !w.Add(EventMicros(e), e, leave) {
			late = append(late, e)
		}
	}
	return late, expired
}
