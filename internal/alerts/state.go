package alerts

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

// ledger is what a sink knows of its alerts against the topic: those this
// replica raised that the topic does not hold yet (pending, in the order
// they were raised), and those the topic holds that this replica has not
// raised yet (ahead: another replica is further). An alert is matched by
// its ID (the same trigger gives the same ID on every replica), as a
// multiset: the same ID raised twice is two alerts.
//
// INVARIANT: an ID is never both pending and ahead: raise consumes an
// ahead entry before it queues, see consumes a pending one before it
// records one ahead.
//
// Not safe for concurrent use: the sink guards it with its mu.
type ledger struct {
	q    []*item            // pending, oldest first, from head; gone items are left until compacted
	head int                // q[:head] are gone
	byID map[string][]*item // pending items not gone, by ID, oldest first
	n    int                // pending items not gone

	ahead      map[string][]aheadEntry // IDs on the topic not raised here, oldest first
	aheadOrder []aheadRef              // the ahead entries in the order seen (for the cap); consumed ones linger until compacted
	aheadN     int
	aheadSeq   uint64 // the seq of the next ahead entry

	max int // at most this many pending, and this many ahead
	// droppedPending, droppedAhead count entries dropped at the cap.
	droppedPending, droppedAhead uint64
}

// item is one pending alert: its record, built once.
type item struct {
	id   string
	rec  *kgo.Record
	src  *analytics.AlertSource
	gone bool // seen on the topic, or dropped
	sent bool // produced in a transaction that committed (or may have: see resync)
}

// aheadEntry is an alert seen on the topic that this replica has not
// raised: its source record, by which it is forgotten once this replica is
// past it (nil: none, forgotten at the cap only).
type aheadEntry struct {
	src *analytics.AlertSource
	seq uint64 // position in aheadOrder's stream, to drop the oldest
}

type aheadRef struct {
	id  string
	seq uint64
}

func newLedger(limit int) *ledger {
	return &ledger{byID: map[string][]*item{}, ahead: map[string][]aheadEntry{}, max: limit}
}

// raise records that this replica raised it: false when the topic holds
// it already (an ahead entry is consumed), else it is queued.
func (l *ledger) raise(it *item) bool {
	if es := l.ahead[it.id]; len(es) > 0 {
		l.consumeAhead(it.id, es)
		return false
	}
	if l.n >= l.max {
		l.dropOldestPending()
	}
	l.q = append(l.q, it)
	l.byID[it.id] = append(l.byID[it.id], it)
	l.n++
	return true
}

// see records that the topic holds an alert of that ID (source src): a
// pending one is done; else it is ahead.
func (l *ledger) see(id string, src *analytics.AlertSource) {
	if its := l.byID[id]; len(its) > 0 {
		it := its[0]
		l.popID(id)
		it.gone = true
		l.n--
		l.compact()
		return
	}
	if l.aheadN >= l.max {
		l.dropOldestAhead()
	}
	l.aheadSeq++
	l.ahead[id] = append(l.ahead[id], aheadEntry{src: src, seq: l.aheadSeq})
	l.aheadOrder = append(l.aheadOrder, aheadRef{id, l.aheadSeq})
	l.aheadN++
}

func (l *ledger) popID(id string) {
	its := l.byID[id]
	if len(its) == 1 {
		delete(l.byID, id)
	} else {
		l.byID[id] = its[1:]
	}
}

func (l *ledger) consumeAhead(id string, es []aheadEntry) {
	if len(es) == 1 {
		delete(l.ahead, id)
	} else {
		l.ahead[id] = es[1:]
	}
	l.aheadN--
	if len(l.aheadOrder) > 2*l.aheadN+64 {
		l.forget(func(*analytics.AlertSource) bool { return false }) // drops the consumed refs only
	}
}

// dropOldestPending drops the oldest pending alert (the cap).
func (l *ledger) dropOldestPending() {
	for i := l.head; i < len(l.q); i++ {
		if it := l.q[i]; !it.gone {
			l.removeItem(it)
			l.droppedPending++
			l.compact()
			return
		}
	}
}

// removeItem takes it out of byID and marks it gone.
func (l *ledger) removeItem(it *item) {
	its := l.byID[it.id]
	for j, x := range its {
		if x == it {
			its = append(its[:j:j], its[j+1:]...)
			break
		}
	}
	if len(its) == 0 {
		delete(l.byID, it.id)
	} else {
		l.byID[it.id] = its
	}
	it.gone = true
	l.n--
}

// dropOldestAhead forgets the oldest ahead entry still held (the cap).
func (l *ledger) dropOldestAhead() {
	for len(l.aheadOrder) > 0 {
		r := l.aheadOrder[0]
		l.aheadOrder = l.aheadOrder[1:]
		if l.removeAhead(r, nil) {
			l.droppedAhead++
			return
		}
	}
}

// removeAhead removes the ahead entry r refers to when it is still held
// and drop (nil: any) says so of it; it reports whether it did.
func (l *ledger) removeAhead(r aheadRef, drop func(aheadEntry) bool) bool {
	es := l.ahead[r.id]
	for j, e := range es {
		if e.seq != r.seq {
			continue
		}
		if drop != nil && !drop(e) {
			return false
		}
		es = append(es[:j:j], es[j+1:]...)
		if len(es) == 0 {
			delete(l.ahead, r.id)
		} else {
			l.ahead[r.id] = es
		}
		l.aheadN--
		return true
	}
	return false
}

// holds reports whether the ahead entry r refers to is still held.
func (l *ledger) holds(r aheadRef) bool {
	for _, e := range l.ahead[r.id] {
		if e.seq == r.seq {
			return true
		}
	}
	return false
}

// compact drops gone items from the head, and copies the queue once more
// than half of it is gone.
func (l *ledger) compact() {
	for l.head < len(l.q) && l.q[l.head].gone {
		l.q[l.head] = nil
		l.head++
	}
	if l.head == len(l.q) {
		l.q, l.head = l.q[:0], 0
		return
	}
	if l.head > len(l.q)/2 {
		l.q = append(l.q[:0:0], l.q[l.head:]...)
		l.head = 0
	}
}

// unsent returns up to n pending items not sent, oldest first.
func (l *ledger) unsent(n int) []*item {
	var out []*item
	for i := l.head; i < len(l.q) && len(out) < n; i++ {
		if it := l.q[i]; !it.gone && !it.sent {
			out = append(out, it)
		}
	}
	return out
}

// resend marks every pending item unsent: after a takeover or a
// transaction of unknown outcome, once the topic is read to its end, what
// is still pending is not on it.
func (l *ledger) resend() {
	for i := l.head; i < len(l.q); i++ {
		l.q[i].sent = false
	}
}

// forget drops the ahead entries for which below holds of their source
// record (the analytics are past it: no replay raises them again), and
// the references of consumed entries.
func (l *ledger) forget(below func(*analytics.AlertSource) bool) {
	keep := l.aheadOrder[:0]
	for _, r := range l.aheadOrder {
		gone := l.removeAhead(r, func(e aheadEntry) bool { return e.src != nil && below(e.src) })
		if !gone && l.holds(r) {
			keep = append(keep, r)
		}
	}
	l.aheadOrder = keep
}

// pending returns the pending items, oldest first.
func (l *ledger) pending() []*item {
	var out []*item
	for i := l.head; i < len(l.q); i++ {
		if !l.q[i].gone {
			out = append(out, l.q[i])
		}
	}
	return out
}

// aheadList returns the ahead entries in the order seen.
func (l *ledger) aheadList() []aheadSaved {
	out := make([]aheadSaved, 0, l.aheadN)
	for _, r := range l.aheadOrder {
		for _, e := range l.ahead[r.id] {
			if e.seq == r.seq {
				out = append(out, aheadSaved{ID: r.id, Source: e.src})
			}
		}
	}
	return out
}
