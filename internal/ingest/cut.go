package ingest

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The cut part of the Ingester: what an export as of a Kafka position
// (package export) needs of ingestion. The applied position is published
// with the seq of the batch that completed it (positions.appliedAt), the
// newest batch ends are kept (positions.endingAt), and a hold stops
// ingestion exactly at a cut: records of a held partition from its cut's
// offset on are not applied, and its fetching pauses, until the export
// releases it.
//
// A hold is partitioned mode's (Config.Own): the instance assigns itself
// its partitions, so no rebalance can revoke a held partition, and the
// records a hold left out are fetched again by seeking back to the cut.

// cutHold is the hold of one export. Owned by cutHolds.
type cutHold struct {
	at map[tp]int64 // the held partitions and their cut offsets
	// reached are the partitions whose records reached the cut: those
	// records were left out, and their fetching is paused.
	reached map[tp]bool
	// released: the export is done; the poll loop seeks the reached
	// partitions back to their cut and resumes them.
	released bool
}

// cutHolds is the hold of the export that holds ingestion, if any.
type cutHolds struct {
	mu sync.Mutex
	// h is the hold (nil: none). Protected by mu.
	// INVARIANT: at most one; a new one only once the poll loop ended
	// the last (endHolds).
	h *cutHold
}

// ErrHeld is HoldAt's error while another export holds ingestion.
var ErrHeld = errors.New("ingest: another export holds ingestion at its cut")

// HoldAt holds ingestion at cut: records of each partition of cut from
// its offset on are not applied until Release. Only in partitioned mode
// (Config.Own), and one hold at a time (ErrHeld).
func (in *Ingester) HoldAt(cut Position) error {
	if in.cfg.Own == nil {
		return errors.New("ingest: a hold at a cut needs partitioned mode (--own-partitions): an instance of a consumer group cannot seek back a partition a rebalance may take")
	}
	at := map[tp]int64{}
	for t, ps := range cut {
		for p, o := range ps {
			at[tp{t, p}] = o
		}
	}
	in.holds.mu.Lock()
	defer in.holds.mu.Unlock()
	if in.holds.h != nil {
		return ErrHeld
	}
	in.holds.h = &cutHold{at: at, reached: map[tp]bool{}}
	return nil
}

// Release ends the hold: the poll loop resumes the held partitions at
// their cut after its next poll.
func (in *Ingester) Release() {
	in.holds.mu.Lock()
	defer in.holds.mu.Unlock()
	if in.holds.h != nil {
		in.holds.h.released = true
	}
}

// holding reports whether a hold waits for the poll loop to end it.
func (in *Ingester) holding() bool {
	in.holds.mu.Lock()
	defer in.holds.mu.Unlock()
	return in.holds.h != nil && in.holds.h.released
}

// holdCuts returns the cut of each held partition whose records in
// fetches reach its cut, and pauses their fetching: decodeInto leaves out
// their records from the cut on, and stops their position at it.
func (in *Ingester) holdCuts(fetches kgo.Fetches) map[tp]int64 {
	in.holds.mu.Lock()
	defer in.holds.mu.Unlock()
	h := in.holds.h
	if h == nil {
		return nil
	}
	var cuts map[tp]int64
	var pause []tp
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		k := tp{fp.Topic, fp.Partition}
		c, held := h.at[k]
		if !held || len(fp.Records) == 0 || fp.Records[len(fp.Records)-1].Offset < c {
			return
		}
		if cuts == nil {
			cuts = map[tp]int64{}
		}
		cuts[k] = c
		if !h.reached[k] {
			h.reached[k] = true
			pause = append(pause, k)
		}
	})
	if len(pause) > 0 {
		in.pauses.holdCut(pause)
	}
	return cuts
}

// endHolds ends a released hold (called by the poll loop after it decoded
// a poll, before the next): the partitions it paused are sought back to
// their cut, where their position stands, and resumed.
func (in *Ingester) endHolds() {
	in.holds.mu.Lock()
	defer in.holds.mu.Unlock()
	h := in.holds.h
	if h == nil || !h.released {
		return
	}
	in.holds.h = nil
	if len(h.reached) == 0 {
		return
	}
	offs := map[string]map[int32]kgo.EpochOffset{}
	resume := map[string][]int32{}
	for k := range h.reached {
		if offs[k.topic] == nil {
			offs[k.topic] = map[int32]kgo.EpochOffset{}
		}
		offs[k.topic][k.partition] = kgo.EpochOffset{Epoch: -1, Offset: h.at[k]}
		resume[k.topic] = append(resume[k.topic], k.partition)
	}
	in.cl.SetOffsets(offs)
	in.pauses.releaseCut(resume)
}

// AppliedAt returns the seq of the newest batch the ingester applied and
// the position after it (not to be modified), as one pair: a snapshot of
// that seq holds exactly the records below that position.
func (in *Ingester) AppliedAt() (uint64, Position) { return in.pos.appliedAt() }

// BatchEndingAt returns the seq of a recent batch (positions keeps the
// newest maxBatchEnds) after which the position was at cut (Stand), and
// that position as this instance's share of cut (shareOf).
func (in *Ingester) BatchEndingAt(cut Position) (uint64, Position, bool) {
	seq, pos, ok := in.pos.endingAt(cut, in.owns)
	if ok {
		pos = shareOf(pos, cut, in.owns)
	}
	return seq, pos, ok
}

// Standing is how a position stands against a cut.
type Standing int

const (
	// BeforeCut is a position with some partition below its cut's offset, none above.
	BeforeCut Standing = iota
	// AtCut is a position with every partition at its cut's offset.
	AtCut
	// PastCut is a position with some partition above its cut's offset.
	PastCut
)

// Stand says how pos stands against cut, for an instance that holds the
// partitions owns reports: one of them that cut names and pos does not
// has nothing applied yet, as if at offset 0 (so it is at a cut of 0, as
// an empty writes topic is, and before any other). A partition of pos
// that cut lacks is an error: a cut names every partition an instance
// holds.
func Stand(pos, cut Position, owns func(topic string, partition int32) bool) (Standing, error) {
	st := AtCut
	for t, ps := range pos {
		for p, o := range ps {
			c, ok := cut.Get(t, p)
			switch {
			case !ok:
				return 0, fmt.Errorf("the cut names no offset for %s/%d, which this instance holds", t, p)
			case o > c:
				return PastCut, nil
			case o < c:
				st = BeforeCut
			}
		}
	}
	for t, ps := range cut {
		for p := range ps {
			if _, ok := pos.Get(t, p); !ok && owns(t, p) && cut[t][p] > 0 {
				st = BeforeCut
			}
		}
	}
	return st, nil
}

// owns reports whether this instance holds partition p of t: in
// partitioned mode one of Own of one of Topics, else any partition of
// Topics (an instance of a group holds the graph whole).
func (in *Ingester) owns(t string, p int32) bool {
	if !slices.Contains(in.cfg.Topics, t) {
		return false
	}
	return in.cfg.Own == nil || slices.Contains(in.cfg.Own, p)
}

// StandAt returns the seq of the newest batch applied, the position after
// it, and how that position stands against cut (Stand). At the cut, the
// position names every partition of cut this instance holds (shareOf).
func (in *Ingester) StandAt(cut Position) (uint64, Position, Standing, error) {
	seq, pos := in.pos.appliedAt()
	st, err := Stand(pos, cut, in.owns)
	if st == AtCut && err == nil {
		pos = shareOf(pos, cut, in.owns)
	}
	return seq, pos, st, err
}

// shareOf is pos, at cut, with the partitions of cut that owns holds and
// pos does not name (nothing applied: at a cut of 0) added at 0: this
// instance's share of the cut. pos itself is not modified.
func shareOf(pos, cut Position, owns func(string, int32) bool) Position {
	var out Position
	for t, ps := range cut {
		for p, o := range ps {
			if _, ok := pos.Get(t, p); !ok && owns(t, p) {
				if out == nil {
					out = pos.Clone()
				}
				out.Set(t, p, o)
			}
		}
	}
	if out == nil {
		return pos
	}
	return out
}
