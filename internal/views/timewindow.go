package views

import (
	"cmp"
	"slices"
	"time"
)

// TimeWindow is a sliding window of a Duration in event time: it holds
// items by the time each counts at (Unix microseconds: event times reach
// the year 9999, beyond int64 nanoseconds), and a watermark, the newest
// time seen less Lateness, drives it. An item leaves once its time is at or before
// the watermark less Duration; an item that arrives already there is late:
// it is counted (Late) and never held. At most max items are held (the
// oldest leave early, counted by Early). The same items in the same order
// give the same windows, whenever they are replayed.
//
// The items held are q[qh:], those that came in order (each at or after
// the one before it: the run of a stream in time order), oldest first, and
// h, those that did not, a min-heap: so that the oldest of an in-order
// stream leaves from the front of q, the next in memory, not from a heap's
// root through its levels.
//
// INVARIANT: q[qh:] is sorted by (t, n) and h is a min-heap by (t, n);
// every held item has t above maxT - lateness - dur. Not safe for
// concurrent use.
type TimeWindow[T any] struct {
	dur, lateness int64 // µs
	max           int
	q             []timed[T]
	qh            int
	h             []timed[T]
	ahead         []T    // scratch of oldestInOrder
	n             uint64 // items ever held: a tie-break that keeps arrival order
	maxT          int64  // the newest time seen (0: none yet)
	late, early   uint64
}

type timed[T any] struct {
	t int64
	n uint64
	v T
}

// NewTimeWindow returns an empty window (dur above 0; most, the most items
// held, at least 1).
func NewTimeWindow[T any](dur, lateness time.Duration, most int) *TimeWindow[T] {
	return &TimeWindow[T]{dur: int64(dur / time.Microsecond), lateness: int64(lateness / time.Microsecond), max: most}
}

// EventMicros is the time an operation counts at in a window: its event
// time (Op.EventTime) when it has one, else when it was applied; Unix µs.
func EventMicros(e Edge) int64 {
	if e.Op.EventTime > 0 {
		return e.Op.EventTime
	}
	return e.Time / 1000
}

// cut is the time at or before which nothing is held.
func (w *TimeWindow[T]) cut() int64 { return w.maxT - w.lateness - w.dur }

// Add takes v, which counts at time t (Unix µs), and calls leave with every
// item that leaves the window, oldest first. It returns false when v is
// late (not held).
func (w *TimeWindow[T]) Add(t int64, v T, leave func(T)) bool {
	if w.maxT != 0 && t <= w.cut() {
		w.late++
		return false
	}
	w.maxT = max(w.maxT, t)
	x := timed[T]{t, w.n, v}
	w.n++
	if n := len(w.q); n == w.qh || w.q[n-1].t <= t { // in order (n only grows)
		w.q = append(w.q, x)
	} else {
		w.push(x)
	}
	for w.Len() > 0 && w.oldest().t <= w.cut() {
		leave(w.pop())
	}
	for w.Len() > w.max {
		w.early++
		leave(w.pop())
	}
	return true
}

// Len is the number of items held.
func (w *TimeWindow[T]) Len() int { return len(w.q) - w.qh + len(w.h) }

// oldestInOrder is up to k of the items that came in order, oldest
// first, without a copy (see ItemWindow.Oldest).
func (w *TimeWindow[T]) oldestInOrder(k int) []T {
	q := w.q[w.qh:min(w.qh+k, len(w.q))]
	vs := w.ahead[:0]
	for _, x := range q {
		vs = append(vs, x.v)
	}
	w.ahead = vs
	return vs
}

// capacity is the room of the held items' arrays.
func (w *TimeWindow[T]) capacity() int { return cap(w.q) + cap(w.h) }

// oldest is the item that leaves next (Len above 0).
func (w *TimeWindow[T]) oldest() *timed[T] {
	if w.fromQ() {
		return &w.q[w.qh]
	}
	return &w.h[0]
}

// fromQ reports whether the oldest item is q's first (Len above 0).
func (w *TimeWindow[T]) fromQ() bool {
	return w.qh < len(w.q) && (len(w.h) == 0 || before(&w.q[w.qh], &w.h[0]))
}

func before[T any](a, b *timed[T]) bool { return a.t < b.t || a.t == b.t && a.n < b.n }

// remap replaces every held item v by f(v) (see ItemWindow.Remap).
func (w *TimeWindow[T]) remap(f func(T) T) {
	for i := w.qh; i < len(w.q); i++ {
		w.q[i].v = f(w.q[i].v)
	}
	for i := range w.h {
		w.h[i].v = f(w.h[i].v)
	}
}

// Late counts the items that arrived late.
func (w *TimeWindow[T]) Late() uint64 { return w.late }

// Early counts the items that left before their time because the window
// was full.
func (w *TimeWindow[T]) Early() uint64 { return w.early }

// Items returns a copy of the held items in the order they leave (time,
// then arrival): adding them to an empty window in that order rebuilds
// this one.
func (w *TimeWindow[T]) Items() []T {
	h := append(slices.Clone(w.q[w.qh:]), w.h...)
	slices.SortFunc(h, func(a, b timed[T]) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.n, b.n)) })
	vs := make([]T, len(h))
	for i, x := range h {
		vs[i] = x.v
	}
	return vs
}

// Reset empties the window and forgets the watermark (the counts stay).
func (w *TimeWindow[T]) Reset() {
	clear(w.q)
	clear(w.h)
	w.q, w.qh, w.h, w.maxT = w.q[:0], 0, w.h[:0], 0
}

func (w *TimeWindow[T]) less(i, j int) bool { return before(&w.h[i], &w.h[j]) }

func (w *TimeWindow[T]) push(x timed[T]) {
	w.h = append(w.h, x)
	for i := len(w.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !w.less(i, p) {
			break
		}
		w.h[i], w.h[p] = w.h[p], w.h[i]
		i = p
	}
}

// pop takes the oldest item out (Len above 0).
func (w *TimeWindow[T]) pop() T {
	if w.fromQ() {
		v := w.q[w.qh].v
		w.q[w.qh] = timed[T]{}
		w.qh++
		switch {
		case w.qh == len(w.q):
			w.q, w.qh = w.q[:0], 0
		case w.qh >= 1024 && w.qh > len(w.q)/2:
			n := copy(w.q, w.q[w.qh:])
			clear(w.q[n:])
			w.q, w.qh = w.q[:n], 0
		}
		return v
	}
	return w.popHeap()
}

// popHeap takes the root of h out.
func (w *TimeWindow[T]) popHeap() T {
	top := w.h[0].v
	n := len(w.h) - 1
	w.h[0] = w.h[n]
	var zero timed[T]
	w.h[n] = zero
	w.h = w.h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && w.less(l, m) {
			m = l
		}
		if l+1 < n && w.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		w.h[i], w.h[m] = w.h[m], w.h[i]
		i = m
	}
	return top
}
