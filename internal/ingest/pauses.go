package ingest

import "sync"

// pauses is the fetch pause part of the Ingester: why fetching is paused,
// and the pauses and resumes it asks of the client. Fetching of every
// assigned partition pauses while any reason holds (a store stall, an
// assignment that would split the graph, a source that changed); a
// partition is held on its own while its dead letter cannot be written
// (deadletter.go) or its log lost records the store needs (logstart.go),
// and stays paused whatever else resumes fetching. Who decides a pause
// (the store's Apply, the assignment's verdict, the dead letters, the log
// starts) tells this part; it asks the client (a fetchPauser) and nothing
// else.
type pauses struct {
	cl fetchPauser

	// mu orders the pauses and resumes asked of the client. Lock order:
	// mu, then whatever the targets function given to set locks.
	mu sync.Mutex
	// reasons are the reasons fetching of every assigned partition is
	// paused (pauseStall...). Protected by mu.
	reasons uint8
	// deadLetter are the partitions held because their dead letter cannot
	// be written. Protected by mu.
	deadLetter partitionSet
	// lost are the partitions held because their log lost records the
	// store needs, with what each lost. Protected by mu.
	// INVARIANT: a partition of deadLetter or lost is paused at the client
	// (until released, dropped, or resumed by an assignment that no longer
	// finds its records lost).
	lost map[tp]LostRecords
	// cut are the partitions held at an export's cut (cut.go). Protected
	// by mu.
	// INVARIANT: paused at the client until releaseCut.
	cut partitionSet
}

// fetchPauser is what pauses asks of the Kafka client (*kgo.Client).
type fetchPauser interface {
	// PauseFetchPartitions pauses ps and returns every paused partition
	// (nil ps: only returns them).
	PauseFetchPartitions(ps map[string][]int32) map[string][]int32
	ResumeFetchPartitions(ps map[string][]int32)
}

// Reasons fetching of every assigned partition is paused.
const (
	pauseStall    uint8 = 1 << iota // the store stalls: Apply blocks
	pauseConflict                   // the assignment would split the graph
	pauseFatal                      // the source changed; Run is returning
)

func newPauses(cl fetchPauser) *pauses {
	return &pauses{cl: cl, deadLetter: partitionSet{}, lost: map[tp]LostRecords{}, cut: partitionSet{}}
}

// set adds (on) or removes a reason to pause fetching, then pauses every
// partition targets lists (the assigned ones and those being assigned)
// while any reason holds, or resumes every paused partition when none is
// left, but those held on their own (dead letters, lost records).
func (s *pauses) set(reason uint8, on bool, targets func() map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.reasons
	if on {
		s.reasons |= reason
	} else {
		s.reasons &^= reason
	}
	switch {
	case s.reasons != 0:
		if ps := targets(); len(ps) > 0 {
			s.cl.PauseFetchPartitions(ps)
		}
	case was != 0:
		cur := s.cl.PauseFetchPartitions(nil)
		for t, ps := range cur {
			keep := ps[:0]
			for _, p := range ps {
				if !s.heldLocked(t, p) {
					keep = append(keep, p)
				}
			}
			cur[t] = keep
		}
		if len(cur) > 0 {
			s.cl.ResumeFetchPartitions(cur)
		}
	}
}

// heldLocked reports whether partition p of t is held on its own. s.mu
// held.
func (s *pauses) heldLocked(t string, p int32) bool {
	_, lost := s.lost[tp{t, p}]
	return lost || s.deadLetter.has(t, p) || s.cut.has(t, p)
}

// paused reports whether reason holds.
func (s *pauses) paused(reason uint8) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reasons&reason != 0
}

// holdDeadLetters pauses ps, each at a record whose dead letter cannot be
// written yet.
func (s *pauses) holdDeadLetters(ps []tp) { s.hold(s.deadLetter, ps) }

// holdCut pauses ps, whose records reached an export's cut.
func (s *pauses) holdCut(ps []tp) { s.hold(s.cut, ps) }

// hold adds ps to set, one of the sets of partitions held on their own,
// and pauses them.
func (s *pauses) hold(set partitionSet, ps []tp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pause := map[string][]int32{}
	for _, k := range ps {
		set.add(k.topic, k.partition)
		pause[k.topic] = append(pause[k.topic], k.partition)
	}
	s.cl.PauseFetchPartitions(pause)
}

// releaseCut ends the holds of ps at a cut: they resume unless a reason
// pauses every partition or something else holds them.
func (s *pauses) releaseCut(ps map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resume := map[string][]int32{}
	for t, xs := range ps {
		for _, p := range xs {
			delete(s.cut[t], p)
			if !s.heldLocked(t, p) {
				resume[t] = append(resume[t], p)
			}
		}
	}
	if s.reasons == 0 && len(resume) > 0 {
		s.cl.ResumeFetchPartitions(resume)
	}
}

// releaseDeadLetters ends the holds of ps: their dead letters are
// written, and they resume unless a reason pauses every partition (its
// end resumes them); or (gone) they went to another member, and resume
// at once, so that a later assignment fetches them again.
func (s *pauses) releaseDeadLetters(ps map[string][]int32, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, xs := range ps {
		for _, p := range xs {
			delete(s.deadLetter[t], p)
		}
	}
	if gone || s.reasons == 0 {
		s.cl.ResumeFetchPartitions(ps)
	}
}

// holdLost holds the partitions of lost, whose logs lost records the
// store needs, and resumes those of assigning (the partitions an
// assignment judges; nil: none) that were held for lost records and are
// not in lost any more, unless something else holds them. It reports
// whether what is held for lost records changed.
func (s *pauses) holdLost(lost []LostRecords, assigning map[string][]int32) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pause := map[string][]int32{}
	inLost := map[tp]bool{}
	for _, l := range lost {
		k := tp{l.Topic, l.Partition}
		changed = changed || s.lost[k] != l
		s.lost[k] = l
		inLost[k] = true
		pause[l.Topic] = append(pause[l.Topic], l.Partition)
	}
	resume := map[string][]int32{}
	for t, ps := range assigning {
		for _, p := range ps {
			k := tp{t, p}
			if _, held := s.lost[k]; !held || inLost[k] {
				continue
			}
			delete(s.lost, k)
			if s.reasons == 0 && !s.deadLetter.has(t, p) {
				resume[t] = append(resume[t], p)
			}
		}
	}
	if len(pause) > 0 {
		s.cl.PauseFetchPartitions(pause)
	}
	if len(resume) > 0 {
		s.cl.ResumeFetchPartitions(resume)
	}
	return changed
}

// dropLost forgets the lost records of partitions that went to another
// member and lifts their hold: whoever is assigned them next checks them
// again.
func (s *pauses) dropLost(gone map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if resume := deletePartitions(s.lost, gone); len(resume) > 0 {
		s.cl.ResumeFetchPartitions(resume)
	}
}

// lostRecords returns what the partitions held for lost records lost,
// sorted (nil: none).
func (s *pauses) lostRecords() []LostRecords {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostRecordsLocked()
}

// lostRecordsLocked is lostRecords with s.mu held.
func (s *pauses) lostRecordsLocked() []LostRecords {
	if len(s.lost) == 0 {
		return nil
	}
	out := make([]LostRecords, 0, len(s.lost))
	for _, l := range s.lost {
		out = append(out, l)
	}
	sortLost(out)
	return out
}
