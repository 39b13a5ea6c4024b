package writes

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// Result is what the applier tells the request that produced a write.
type Result struct {
	Outcome
	// Duplicate: the key was seen before; Outcome is the first write's.
	Duplicate bool
	// Mismatch: the key was seen before with another batch (nothing
	// applied; Outcome is the first write's).
	Mismatch bool
	// Partition and Offset of the first write with the key (of this one
	// when it is not a duplicate).
	Partition int32
	Offset    int64
	// Err: the record could not be applied at all (a dead letter: a
	// vertex id out of range, say); nothing of it is applied.
	Err string
}

// Waiters hands results to the requests waiting for them. Safe for
// concurrent use.
type Waiters struct {
	mu sync.Mutex
	m  map[string]chan Result // Protected by mu.
}

// NewWaiters returns an empty set.
func NewWaiters() *Waiters { return &Waiters{m: map[string]chan Result{}} }

// Add registers a new request and returns its id (for HeaderRequest) and
// the channel its result arrives on (at most one, never closed). Call
// Done(id) when no longer waiting.
func (w *Waiters) Add() (string, <-chan Result) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	id := hex.EncodeToString(b[:])
	ch := make(chan Result, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return id, ch
}

// Done forgets the request id.
func (w *Waiters) Done(id string) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// Deliver hands r to the request id if it waits here (a record replayed,
// or produced by another process, has no waiter). It never blocks.
func (w *Waiters) Deliver(id string, r Result) {
	if w == nil || id == "" {
		return
	}
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		ch <- r
	}
}
