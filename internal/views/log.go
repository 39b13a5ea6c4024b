package views

import (
	"context"
	"sort"
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
)

// Edge is one applied operation as stream views hand it out.
type Edge struct {
	Seq  uint64    // sequence number of the batch that applied it
	Op   engine.Op // Src, Dst, Weight, Kind (a vertex delete has Dst 0)
	Time int64     // when it was applied, Unix nanoseconds
	Ref  uint64    // where it came from (engine.Batch.Tag; serve: the Kafka record), 0 when unknown
}

// edgeLog is a bounded ring of the newest applied operations, in sequence
// order, fed by the store's ApplyObserver. Positions count every operation
// ever appended: the op at position p lives in buf[p % len(buf)] while
// p >= oldest(). Appends never wait for readers: a reader that falls behind
// the ring finds its position gone (lost).
type edgeLog struct {
	mu      sync.RWMutex
	buf     []Edge // Protected by mu.
	head    uint64 // next position; Protected by mu.
	lastSeq uint64 // seq of the newest batch appended; Protected by mu.
	dropped uint64 // seq of the newest op dropped from the ring; Protected by mu.
	// start: every op with a seq above it is logged (ops at or below it
	// may have been applied before the log existed). Protected by mu.
	start  uint64
	notify chan struct{} // closed and replaced by every append; Protected by mu.
	closed bool          // Protected by mu.
	// payBytes is the bytes of the payloads (Op.EventRef, Op.Props) the
	// ring holds, at most payCap: an operation whose payload would take
	// it past that is logged without its payload, counted in payDropped
	// (the store keeps it; stream views and monitors see the operation
	// without it). So the log's memory is its slots plus payCap, whatever
	// the records carry. Protected by mu.
	payBytes, payCap, payDropped uint64
}

// PayloadBytesPerOp is what the edge log allows for payloads (event
// references and properties) per operation of its capacity, on average.
const PayloadBytesPerOp = 32

func newEdgeLog(capacity int, startSeq uint64) *edgeLog {
	return &edgeLog{buf: make([]Edge, capacity), lastSeq: startSeq, notify: make(chan struct{}),
		payCap: uint64(capacity) * PayloadBytesPerOp}
}

// payloadBytes is the memory of e's payload.
func payloadBytes(e *Edge) uint64 { return uint64(len(e.Op.EventRef) + len(e.Op.Props)) }

// append adds a batch. It runs on the store's writer goroutine.
func (l *edgeLog) append(seq uint64, b *engine.Batch, now int64) {
	l.mu.Lock()
	n := b.Len()
	c := len(l.buf)
	first := 0
	if n > c { // only the newest c ops can be kept
		first = n - c
		l.head += uint64(first)
		l.dropped = seq
	}
	b.Refs(func(i int, ref uint64) {
		if i < first {
			return
		}
		slot := &l.buf[l.head%uint64(c)]
		if l.head >= uint64(c) {
			l.dropped = max(l.dropped, slot.Seq)
		}
		l.payBytes -= payloadBytes(slot) // a slot never logged holds none
		*slot = Edge{Seq: seq, Op: b.Op(i), Time: now, Ref: ref}
		if pb := payloadBytes(slot); pb > 0 {
			if l.payBytes+pb > l.payCap {
				slot.Op.EventRef, slot.Op.Props = "", ""
				l.payDropped++
			} else {
				l.payBytes += pb
			}
		}
		l.head++
	})
	l.lastSeq = seq
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
}

func (l *edgeLog) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.notify)
	}
	l.mu.Unlock()
}

// state returns the head position, the oldest retained one and the newest
// seq appended.
func (l *edgeLog) state() (head, oldest, lastSeq uint64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.head, l.oldestLocked(), l.lastSeq
}

// payloads returns the bytes of payloads held and the operations logged
// without theirs.
func (l *edgeLog) payloads() (held, dropped uint64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.payBytes, l.payDropped
}

func (l *edgeLog) oldestLocked() uint64 {
	if c := uint64(len(l.buf)); l.head > c {
		return l.head - c
	}
	return 0
}

// readChunk is how many ops read copies per hold of the read lock, so
// that a long read never holds up append (and with it Apply) for long.
const readChunk = 1 << 14

// read appends to out the ops at positions [from, to). ok is false when
// from is no longer retained, or is overwritten while being read (what was
// appended is then to be dropped).
func (l *edgeLog) read(from, to uint64, out []Edge) ([]Edge, bool) {
	first := true
	for {
		l.mu.RLock()
		if first {
			to, first = min(to, l.head), false
		}
		if from < l.oldestLocked() {
			l.mu.RUnlock()
			return out, false
		}
		end := min(to, from+readChunk)
		c := uint64(len(l.buf))
		for p := from; p < end; {
			i := p % c
			k := min(end-p, c-i)
			out = append(out, l.buf[i:i+k]...)
			p += k
		}
		l.mu.RUnlock()
		if end >= to {
			return out, true
		}
		from = end
	}
}

// posAfterSeq returns the first position holding an op with a seq above
// seq (head when none), and false when ops at or below seq may already be
// gone from the ring past from.
func (l *edgeLog) posAfterSeq(from, seq uint64) (uint64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	lo := l.oldestLocked()
	if from < lo {
		return 0, false
	}
	c := uint64(len(l.buf))
	n := int(l.head - from)
	k := sort.Search(n, func(i int) bool { return l.buf[(from+uint64(i))%c].Seq > seq })
	return from + uint64(k), true
}

// batchEnd returns the position after the batch of the op at position p
// (the first op of a later batch, or head) and that batch's seq; false
// when p is no longer retained or not yet written.
func (l *edgeLog) batchEnd(p uint64) (uint64, uint64, bool) {
	l.mu.RLock()
	if p < l.oldestLocked() || p >= l.head {
		l.mu.RUnlock()
		return 0, 0, false
	}
	seq := l.buf[p%uint64(len(l.buf))].Seq
	l.mu.RUnlock()
	end, ok := l.posAfterSeq(p, seq)
	return end, seq, ok
}

// firstAfter returns the position of the first op with a seq above seq
// (head when none), and false when some such op was already dropped or
// never logged.
func (l *edgeLog) firstAfter(seq uint64) (uint64, bool) {
	l.mu.RLock()
	dropped, oldest, start := l.dropped, l.oldestLocked(), l.start
	l.mu.RUnlock()
	if dropped > seq || seq < start {
		return 0, false
	}
	return l.posAfterSeq(oldest, seq)
}

// waitNew blocks until at least n ops exist from position from on (see wait).
func (l *edgeLog) waitNew(ctx context.Context, from uint64, n int) error {
	return l.wait(ctx, func(head, _ uint64) bool { return head-from >= uint64(n) })
}

// wait blocks until cond(head, lastSeq) holds, the log closes (ErrClosed)
// or ctx ends.
func (l *edgeLog) wait(ctx context.Context, cond func(head, lastSeq uint64) bool) error {
	for {
		l.mu.RLock()
		ok, closed, ch := cond(l.head, l.lastSeq), l.closed, l.notify
		l.mu.RUnlock()
		if ok {
			return nil
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// appliedAfter returns when the first op with a seq above seq was applied
// (Unix nanoseconds), and false when no such op is logged yet. When that op
// is no longer retained, it returns the time of the oldest op retained, of
// which the one asked for is no younger.
func (l *edgeLog) appliedAfter(seq uint64) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.head == 0 || seq >= l.lastSeq {
		return 0, false
	}
	lo := l.oldestLocked()
	c := uint64(len(l.buf))
	n := int(l.head - lo)
	k := sort.Search(n, func(i int) bool { return l.buf[(lo+uint64(i))%c].Seq > seq })
	if k == n {
		return 0, false
	}
	return l.buf[(lo+uint64(k))%c].Time, true
}
