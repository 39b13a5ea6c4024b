package views

import (
	"fmt"
	"time"
)

// Window is a sliding window over the stream: the last Edges operations
// and/or the operations applied within the last Duration (by the time they
// were applied). Zero fields do not bound; a zero Window is no window.
type Window struct {
	Edges    int
	Duration time.Duration
}

// DefaultMaxWindowEdges bounds the operations a window holds when
// StreamOptions.MaxWindowEdges is 0.
const DefaultMaxWindowEdges = 1 << 20

func (w Window) enabled() bool { return w.Edges > 0 || w.Duration > 0 }

func (w Window) validate() error {
	if w.Edges < 0 || w.Duration < 0 {
		return fmt.Errorf("views: window bounds must not be negative, got %d edges and %v", w.Edges, w.Duration)
	}
	return nil
}

// window holds the operations inside a Window, oldest first, and says
// which leave it. Not safe for concurrent use.
type window struct {
	cfg Window
	max int // hard bound on what is held: beyond it the oldest leave early
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
	return &window{cfg: cfg, max: maxEdges}
}

func (w *window) len() int { return len(w.q) - w.at }

// advance adds the new operations, then appends to expired every held
// operation that the window no longer covers at time now (Unix ns).
func (w *window) advance(added []Edge, now int64, expired []Edge) []Edge {
	w.q = append(w.q, added...)
	n := w.len()
	drop := 0
	if n > w.max {
		drop = n - w.max
		if w.cfg.Edges == 0 || w.cfg.Edges > w.max {
			w.early += uint64(drop)
		}
	}
	if w.cfg.Duration > 0 {
		cut := now - int64(w.cfg.Duration)
		for drop < n && w.q[w.at+drop].Time <= cut {
			drop++
		}
	}
	expired = append(expired, w.q[w.at:w.at+drop]...)
	w.at += drop
	if w.at > len(w.q)/2 && w.at > 1024 {
		w.q = append(w.q[:0], w.q[w.at:]...)
		w.at = 0
	}
	return expired
}

// reset empties the window (after lost data).
func (w *window) reset() { w.q, w.at = w.q[:0], 0 }
