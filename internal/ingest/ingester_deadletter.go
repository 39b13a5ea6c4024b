package ingest

import "context"

// The Ingester's side of the dead letters: it passes the dead letters'
// answers to the pauses part and the client (which partitions to hold,
// resume and move past) and to the writes part (the writes to answer).

// sendDeadLetters produces the dead letters of one poll (deadLetters.send)
// and holds the partitions cut at a record whose dead letter failed; it
// reports whether any was.
func (in *Ingester) sendDeadLetters(ctx context.Context, dead []deadRecord) (bool, error) {
	cut, err := in.dl.send(ctx, kafkaDL{in.cl}, dead)
	if err != nil || len(cut) == 0 {
		return false, err
	}
	in.block(cut)
	return true, nil
}

// block pauses the partitions of bs at their records. Fetching of a
// blocked partition stays paused whatever else pauses and resumes
// fetching (see setPaused).
func (in *Ingester) block(bs map[tp]*dlBlock) {
	in.pauses.holdDeadLetters(in.dl.block(bs))
}

// unblockAcked resumes every blocked partition whose dead letter is
// acknowledged: its fetch position moves to the record after the blocked
// one, and polled (returned) advances past it; a write among them hears
// of it now (one written at once heard at its decode). It returns how
// many records that covers. Called by the poll loop right after a poll
// returned something: rebalances are held off until it allows them, so
// no partition is revoked meanwhile (SetOffsets needs that).
func (in *Ingester) unblockAcked(polled Position) (Position, int) {
	u := in.dl.unblock(polled)
	if len(u.done) == 0 {
		return polled, 0
	}
	in.cl.SetOffsets(u.offsets)
	in.pauses.releaseDeadLetters(u.resume, false)
	for _, b := range u.done {
		if in.wr.holds(b.topic) {
			in.wr.deadLettered(writeFailure{requestOf(b.src), b.reason, b.partition, b.offset})
		}
	}
	return u.next, len(u.done)
}

// dropBlocks forgets the blocks of partitions that are no longer assigned
// (revoked or lost) and resumes their fetching, so that a later
// assignment fetches them again: the position stays at the blocked
// record, where a new assignment starts (and dead-letters it again).
func (in *Ingester) dropBlocks(gone map[string][]int32) {
	if in.dl == nil {
		return
	}
	if resume := in.dl.drop(gone); len(resume) > 0 {
		in.pauses.releaseDeadLetters(resume, true)
	}
}
