package ingest

import "sync"

// positions is the source positions part of the Ingester: where ingestion
// stands in each partition, applied to the store, durable, and at the
// newest analytics checkpoint, and the start offsets of the partitions
// taken into the store's history this run. It talks to no other part: the
// Ingester hands it the positions the poll loop, the applier and the
// flushes produce, and the partitions the assignment accepts.
//
// A Position it holds is never modified in place: a new one replaces the
// old, so that a reader may keep the one it got (jobs in flight share
// their maps).
type positions struct {
	// flushMu serializes the blocking flushes (Ingester.flushAndCommit,
	// the applier's checkpoint) so that durable never goes back to the
	// position of a flush that began earlier.
	flushMu sync.Mutex

	mu sync.Mutex
	// applied is everything applied to the store, appliedSeq the seq of
	// the batch that completed it (0: none applied by this Ingester yet,
	// nor the store's newest noted). Protected by mu.
	// INVARIANT: while Run runs only the applier goroutine replaces them,
	// together, right after the batch that completes applied is in the
	// store.
	applied    Position
	appliedSeq uint64
	// ends are the newest batch ends (seq and the position after it), a
	// ring: the newest at ends[(next-1) % maxBatchEnds]. Protected by mu.
	// INVARIANT: the entries from next on (cyclically) are older than
	// those before it; unused ones have a nil pos.
	ends [maxBatchEnds]batchEnd
	next int
	// durable is covered by a completed flush, durableSeq the store
	// sequence number it corresponds to. Protected by mu.
	// INVARIANT: durableSeq only grows while Run runs (markDurable;
	// blocking flushes are serialized by flushMu).
	durable    Position
	durableSeq uint64
	// accepted holds the start offsets of the partitions the store's
	// history took this run. Protected by mu.
	accepted Position
	// pending are partitions history took (with their start offsets) that
	// the poll loop has not yet added to its position, so that the next
	// recorded position names them. Protected by mu.
	// INVARIANT: every partition of pending is in accepted.
	pending Position
	// checkpoint is the position of the newest analytics checkpoint (from
	// which serve replays after a restart; nil: none), checkpointSeq the
	// durable seq the last Config.Checkpoint was given. Protected by mu.
	checkpoint    Position
	checkpointSeq uint64
}

// batchEnd is a batch's seq and the position after it.
type batchEnd struct {
	seq uint64
	pos Position
}

// maxBatchEnds is how many batch ends positions keeps: an export of a
// cut the instance passed finds the batch that ended there among them.
// Each holds a Position the applied one was (shared, never copied).
const maxBatchEnds = 256

// newPositions starts at applied (the store's recorded position, or a
// replay's), durable (the store's) and the newest analytics checkpoint's
// position (nil: none).
func newPositions(applied, durable, checkpoint Position) *positions {
	return &positions{applied: applied, durable: durable, accepted: Position{}, pending: Position{}, checkpoint: checkpoint}
}

// appliedNow returns the applied position itself: never modified in
// place, it may be kept but not changed.
func (s *positions) appliedNow() Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// durableNow returns the durable position itself (see appliedNow).
func (s *positions) durableNow() Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.durable
}

// setApplied publishes p as applied: the batch of sequence number seq,
// which completes it, is in the store.
func (s *positions) setApplied(seq uint64, p Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied, s.appliedSeq = p, seq
	s.ends[s.next] = batchEnd{seq, p}
	s.next = (s.next + 1) % maxBatchEnds
}

// appliedAt returns the applied position and the seq of the batch that
// completed it, as one pair.
func (s *positions) appliedAt() (uint64, Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appliedSeq, s.applied
}

// endingAt returns the seq of the newest kept batch after which the
// position was at cut (Stand, for the partitions owns reports), and that
// position.
func (s *positions) endingAt(cut Position, owns func(string, int32) bool) (uint64, Position, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i <= maxBatchEnds; i++ {
		e := s.ends[(s.next-i+maxBatchEnds)%maxBatchEnds]
		if e.pos == nil {
			break
		}
		if st, err := Stand(e.pos, cut, owns); err == nil && st == AtCut {
			return e.seq, e.pos, true
		}
	}
	return 0, nil, false
}

// discard drops the applied and durable offsets of the store's whole
// position (all), or of topics: they belong to another source.
func (s *positions) discard(all bool, topics ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if all {
		s.applied, s.durable = Position{}, Position{}
		return
	}
	applied, durable := s.applied.Clone(), s.durable.Clone()
	for _, t := range topics {
		delete(applied, t)
		delete(durable, t)
	}
	s.applied, s.durable = applied, durable
}

// lockFlush and unlockFlush bracket a blocking flush (see flushMu).
func (s *positions) lockFlush()   { s.flushMu.Lock() }
func (s *positions) unlockFlush() { s.flushMu.Unlock() }

// flushed records that a blocking flush made p, the applied position
// when it began, durable at the store's durable seq.
func (s *positions) flushed(p Position, seq uint64) {
	s.mu.Lock()
	s.durable, s.durableSeq = p, seq
	s.mu.Unlock()
}

// markDurable records p, the position after the batch of sequence number
// seq, as durable unless a newer one is recorded (a blocking flush on
// revoke), and reports whether it did.
func (s *positions) markDurable(seq uint64, p Position) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq <= s.durableSeq {
		return false
	}
	s.durable, s.durableSeq = p, seq
	return true
}

// checkpointDue returns the applied position and the durable seq for a
// checkpoint (called right after a blocking flush, nothing applied
// meanwhile), or false when nothing became durable since the last one.
func (s *positions) checkpointDue() (Position, uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.durableSeq == s.checkpointSeq {
		return nil, 0, false
	}
	return s.applied, s.durableSeq, true
}

// checkpointed records a checkpoint written at p, durable at seq.
func (s *positions) checkpointed(p Position, seq uint64) {
	s.mu.Lock()
	s.checkpoint, s.checkpointSeq = p, seq
	s.mu.Unlock()
}

// pruneFloor returns the durable position and the newest checkpoint's
// (nil: none): what a replay after a restart could start from.
func (s *positions) pruneFloor() (durable, checkpoint Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.durable, s.checkpoint
}

// resumeAt returns where a partition the store has history for resumes:
// the position after everything applied, or the start offset it was
// taken at; with followGroup (ResetSourcePosition), a partition with
// nothing applied follows the group's offsets instead (false).
func (s *positions) resumeAt(t string, p int32, followGroup bool) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.applied.Get(t, p); ok {
		return o, true
	}
	if !followGroup {
		return s.accepted.Get(t, p)
	}
	return 0, false
}

// accept notes the partitions the store's history took, at their start
// offsets, for the poll loop to add to its position (takePending).
func (s *positions) accept(taken Position) {
	if len(taken) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, ps := range taken {
		for p, o := range ps {
			s.accepted.Set(t, p, o)
			s.pending.Set(t, p, o)
		}
	}
}

// takePending returns polled with the partitions accepted since the last
// call that it lacks added at their start offsets (polled itself when
// there are none; never modified in place).
func (s *positions) takePending(polled Position) Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return polled
	}
	next := polled.Clone()
	for t, ps := range s.pending {
		for p, o := range ps {
			if _, ok := next.Get(t, p); !ok {
				next.Set(t, p, o)
			}
		}
	}
	s.pending = Position{}
	return next
}
