package analytics

import "sync"

// guarded holds a graph analytic's state: a recompute builds a new state
// and swaps it in whole (readers keep the old one until then), an
// incremental update changes it in place under the write lock.
type guarded[S interface {
	comparable
	Sequence() uint64
}] struct {
	mu sync.RWMutex
	st S // Protected by mu; the zero S until the first compute.
}

// Seq is the sequence number the state corresponds to (0 before the first
// compute).
func (g *guarded[S]) Seq() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var zero S
	if g.st == zero {
		return 0
	}
	return g.st.Sequence()
}

func (g *guarded[S]) swap(st S) {
	g.mu.Lock()
	g.st = st
	g.mu.Unlock()
}

// unlocked runs f without the write lock its caller holds (an update that
// falls back to a recompute, which swaps the state itself).
func (g *guarded[S]) unlocked(f func() error) error {
	g.mu.Unlock()
	defer g.mu.Lock()
	return f()
}
