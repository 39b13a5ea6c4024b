package views

import (
	"fmt"
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

// window holds the operations inside a Window and says which leave it:
// a TimeWindow for a Duration window, else the last Edges in log order.
// Not safe for concurrent use.
type window struct {
	cfg Window
	max int // hard bound on what is held: beyond it the oldest leave early
	tw  *TimeWindow[Edge]
	q   []Edge
	at  int // q[at:] is held; the front is compacted lazily
	// early counts operations that left before their time because of max.
	early uint64
}

func newWindow(cfg Window, maxEdges int) *window {
	if maxEdges <= 0 {
		maxEdges = DefaultMaxWindowEdges
	}
	if cfg.Edges > 0 && cfg.Edges < maxEdges {
		maxEdges = cfg.Edges
	}
	w := &window{cfg: cfg, max: maxEdges}
	if cfg.Duration > 0 {
		w.tw = NewTimeWindow[Edge](cfg.Duration, cfg.Lateness, maxEdges)
	}
	return w
}

func (w *window) len() int {
	if w.tw != nil {
		return w.tw.Len()
	}
	return len(w.q) - w.at
}

// late counts the operations that arrived late.
func (w *window) late() uint64 {
	if w.tw != nil {
		return w.tw.Late()
	}
	return 0
}

// advance adds the new operations and returns the late ones (not held)
// and every held operation that left, oldest first.
func (w *window) advance(added []Edge) (late, expired []Edge) {
	if w.tw != nil {
		leave := func(e Edge) { expired = append(expired, e) }
		early := w.tw.Early()
		for _, e := range added {
			if !w.tw.Add(EventMicros(e), e, leave) {
				late = append(late, e)
			}
		}
		if w.cfg.Edges == 0 || w.cfg.Edges > w.max {
			w.early += w.tw.Early() - early
		}
		return late, expired
	}
	w.q = append(w.q, added...)
	n := w.len()
	drop := 0
	if n > w.max {
		drop = n - w.max
		if w.cfg.Edges == 0 || w.cfg.Edges > w.max {
			w.early += uint64(drop)
		}
	}
	expired = append(expired, w.q[w.at:w.at+drop]...)
	w.at += drop
	if w.at > len(w.q)/2 && w.at > 1024 {
		w.q = append(w.q[:0], w.q[w.at:]...)
		w.at = 0
	}
	return nil, expired
}

// reset empties the window (after lost data).
func (w *window) reset() {
	w.q, w.at = w.q[:0], 0
	if w.tw != nil {
		w.tw.Reset()
	}
}
