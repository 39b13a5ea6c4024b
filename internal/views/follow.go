package views

import (
	"context"
	"fmt"
)

// Following the edge log from a sequence number: what the HTTP API's
// follow mode of GET /v1/changes reads. A follower holds only a position;
// it never registers with the Manager, and the log never waits for it: a
// follower that falls further behind than the log's capacity finds its
// position gone (a *LogGoneError).

// LogGoneError says that some operation after Seq is not in the edge log:
// dropped (the log keeps the newest LogCapacity operations) or applied
// before the Manager started (the log starts empty). Oldest is the oldest
// seq that can be followed from now.
type LogGoneError struct {
	Seq, Oldest uint64
}

func (e *LogGoneError) Error() string {
	return fmt.Sprintf("views: the operations after seq %d are no longer in the edge log (the oldest seq to follow from is %d)", e.Seq, e.Oldest)
}

// LogSeqs returns the oldest seq whose following operations the edge log
// still holds all of, and the newest seq applied.
func (m *Manager) LogSeqs() (oldest, newest uint64) {
	l := m.log
	l.mu.RLock()
	defer l.mu.RUnlock()
	return max(l.start, l.dropped), l.lastSeq
}

// LogPosition returns the log position of a follower that has had the
// operations of the batches up to seq (skip 0), or those before batch seq
// and the first skip operations of batch seq (which holds at least that
// many): where it goes on. A *LogGoneError when some operation after that
// is gone; an error when seq is above the newest seq, or batch seq holds
// fewer than skip operations.
func (m *Manager) LogPosition(seq, skip uint64) (uint64, error) {
	l := m.log
	if _, newest := m.LogSeqs(); seq > newest {
		return 0, fmt.Errorf("views: seq %d is above the newest, %d", seq, newest)
	}
	if skip == 0 {
		p, ok := l.firstAfter(seq)
		if !ok {
			oldest, _ := m.LogSeqs()
			return 0, &LogGoneError{Seq: seq, Oldest: oldest}
		}
		return p, nil
	}
	p, ok := l.firstAfter(seq - 1) // batch seq's first operation
	l.mu.RLock()
	defer l.mu.RUnlock()
	c := uint64(len(l.buf))
	switch {
	case seq == 0:
		return 0, fmt.Errorf("views: seq 0 has no operations")
	case !ok || p < l.oldestLocked():
		return 0, &LogGoneError{Seq: seq - 1, Oldest: max(l.start, l.dropped)}
	case p+skip > l.head || l.buf[p%c].Seq != seq || l.buf[(p+skip-1)%c].Seq != seq:
		return 0, fmt.Errorf("views: batch %d holds fewer than %d operations", seq, skip)
	}
	return p + skip, nil
}

// ReadLog waits until the log holds an operation at position pos (or ctx
// ends, or the manager closes: ErrClosed), then appends up to n
// operations from pos to out. ends reports whether the last one returned
// ends its batch. A *LogGoneError (Seq 0: the reader knows where it was)
// when pos is no longer held.
func (m *Manager) ReadLog(ctx context.Context, pos uint64, n int, out []Edge) (es []Edge, ends bool, err error) {
	if n < 1 {
		return out, false, fmt.Errorf("views: read of %d operations", n)
	}
	l := m.log
	if head, _, _ := l.state(); pos > head {
		return out, false, fmt.Errorf("views: log position %d is past the head, %d", pos, head)
	}
	if err := l.waitNew(ctx, pos, 1); err != nil {
		return out, false, err
	}
	k := len(out)
	out, ok := l.read(pos, pos+uint64(n), out)
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !ok || len(out) == k { // nothing read: pos was dropped meanwhile
		return out[:k], false, &LogGoneError{Oldest: max(l.start, l.dropped)}
	}
	next := pos + uint64(len(out)-k)
	c := uint64(len(l.buf))
	// A batch is appended whole under l.mu: the op at head-1 ends its
	// batch; any other ends it when the next one is of another seq.
	ends = next == l.head || next >= l.oldestLocked() && l.buf[next%c].Seq != out[len(out)-1].Seq
	return out, ends, nil
}
