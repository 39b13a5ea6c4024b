package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// assignment is the assignment part of the Ingester: the partitions this
// member holds (the group's assignment, or in partitioned mode its own),
// the store's history of partitions, and the verdict on the assignment
// (source.go's checkAssignment, and partitioned mode's count check). It
// says whether the assignment is ready (Ready's first reason) and reports
// conflicts (log, metrics). What it needs of other parts (the partition
// counts of the binding) the Ingester hands it; what it decides (the
// partitions history took, whether fetching pauses) it returns.
type assignment struct {
	group       string
	topics      []string // the configured topics: only they count
	resetSource bool     // Config.ResetSourcePosition
	grace       time.Duration
	own         []int32 // Config.Own (nil: group mode)
	count       int32   // Config.Partitions (partitioned mode)
	log         *slog.Logger
	metrics     *Metrics
	// now and afterFunc are the clock and the timers of conflict reports
	// (time.Now and time.AfterFunc; fakes in tests).
	now       func() time.Time
	afterFunc func(time.Duration, func())

	// rebalanceWaiting is set when a rebalance waits for the poll loop to
	// allow it (franz-go's OnPartitionsCallbackBlocked); commitAssigned
	// asks the poll loop to commit the durable offsets of an accepted
	// assignment.
	rebalanceWaiting atomic.Bool
	commitAssigned   atomic.Bool

	mu sync.Mutex
	// assigned are the partitions this member holds. Protected by mu.
	assigned map[string][]int32
	// history is every partition the store has data of, or took as its
	// own at an assignment: it never shrinks while Run runs. Protected by
	// mu.
	// INVARIANT: no record of a partition is fetched, hence applied,
	// before the partition is in history.
	history partitionSet
	// starts and committed are about assigned partitions without history:
	// the offset each would start at, and whether that is the group's
	// committed offset (its history is then in another store). Set when
	// the partition is assigned, dropped when it goes. Protected by mu.
	// INVARIANT: every partition of starts and committed is assigned.
	starts    Position
	committed partitionSet
	// conflict is the verdict against the current assignment (nil: none),
	// conflicts the run of conflicts it belongs to (reportConflict);
	// checking is why the assignment could not be checked yet; fatal ends
	// Run (the source changed under it); evaluated: an assignment was
	// judged; grown: partitioned mode, a topic's partition count changed
	// while Run ran (checkCount); accepting: the conflict last ingested
	// anyway (ResetSourcePosition). Protected by mu.
	conflict  *assignmentConflict
	conflicts conflictRun
	checking  error
	fatal     error
	evaluated bool
	grown     *OwnershipError
	accepting string
	// lost are the partitions lost since the last assignment (onLost).
	// INVARIANT: never modified in place (noteLost replaces it), so that
	// lostNow's callers may read the set they got without the lock.
	// Protected by mu.
	lost partitionSet
	// acceptedLost: the log start each partition was started at by
	// AcceptLostRecords when assigned. Protected by mu.
	acceptedLost map[tp]int64
}

func newAssignment(c *Config) *assignment {
	return &assignment{group: c.Group, topics: c.Topics, resetSource: c.ResetSourcePosition, grace: c.ReadyGrace,
		own: c.Own, count: c.Partitions, log: c.Logger, metrics: c.Metrics, now: time.Now,
		afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		assigned:  map[string][]int32{}, history: partitionSet{}, starts: Position{}, committed: partitionSet{}}
}

// takeHistory takes the partitions of p (the store's position) into
// history.
func (a *assignment) takeHistory(p Position) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for t, m := range p {
		for q := range m {
			a.history.add(t, q)
		}
	}
}

// assign adds partitions the group gave this member; what was lost
// before is decided now.
func (a *assignment) assign(added map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for t, ps := range added {
		a.assigned[t] = append(a.assigned[t], ps...)
	}
	a.lost = nil
}

// revoke removes partitions that went to another member (revoked or
// lost), with what was known of their start.
func (a *assignment) revoke(gone map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for t, ps := range gone {
		for _, p := range ps {
			delete(a.starts[t], p)
			delete(a.committed[t], p)
		}
		a.assigned[t] = slices.DeleteFunc(a.assigned[t], func(p int32) bool { return slices.Contains(ps, p) })
	}
}

// noteLost notes partitions lost (the group moved on without this
// member) until the next assignment.
func (a *assignment) noteLost(lost map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := partitionSet{}
	for t, ps := range a.lost {
		for p := range ps {
			next.add(t, p)
		}
	}
	for t, ps := range lost {
		for _, p := range ps {
			next.add(t, p)
		}
	}
	a.lost = next
}

// noteStart records where an assigned partition without history would
// start, and whether that is the group's committed offset.
func (a *assignment) noteStart(t string, p int32, offset int64, committed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starts.Set(t, p, offset)
	if committed {
		a.committed.add(t, p)
	}
}

// start returns where an assigned partition without history would start.
func (a *assignment) start(t string, p int32) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.starts.Get(t, p)
}

// acceptLost notes the partitions AcceptLostRecords starts at their log
// start: a partition new to the store starts there.
func (a *assignment) acceptLost(lost []LostRecords) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.acceptedLost == nil {
		a.acceptedLost = map[tp]int64{}
	}
	for _, l := range lost {
		if _, ok := a.starts.Get(l.Topic, l.Partition); ok {
			a.starts.Set(l.Topic, l.Partition, l.LogStart)
		}
		a.acceptedLost[tp{l.Topic, l.Partition}] = l.LogStart
	}
}

// acceptedAt reports whether the partition was started at logStart by
// AcceptLostRecords when assigned.
func (a *assignment) acceptedAt(k tp, logStart int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.acceptedLost[k]
	return ok && s == logStart
}

// holdLost forgets the starts of partitions held for lost records: they
// are not taken into history (evaluate takes only partitions with one).
func (a *assignment) holdLost(lost []LostRecords) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range lost {
		delete(a.starts[l.Topic], l.Partition)
	}
}

// assignedNow returns a copy of the assigned partitions.
func (a *assignment) assignedNow() map[string][]int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := make(map[string][]int32, len(a.assigned))
	for t, ps := range a.assigned {
		c[t] = slices.Clone(ps)
	}
	return c
}

// isAssigned reports whether partition p of t is assigned.
func (a *assignment) isAssigned(t string, p int32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.assigned[t], p)
}

// lostNow returns the partitions lost since the last assignment.
func (a *assignment) lostNow() partitionSet {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lost
}

// setChecking sets why the assignment cannot be checked yet (nil: it
// can).
func (a *assignment) setChecking(err error) {
	a.mu.Lock()
	a.checking = err
	a.mu.Unlock()
}

// setFatal notes that the source changed under the ingester (Run returns
// err), unless it was noted before and not replace; it reports whether
// it noted err.
func (a *assignment) setFatal(err error, replace bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fatal != nil && !replace {
		return false
	}
	a.fatal = err
	return true
}

// fatalErr is the error that ends Run, if the source changed.
func (a *assignment) fatalErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fatal
}

// verdict is what evaluate decided.
type verdict struct {
	// accept: the assignment is ingested (no conflict, or
	// ResetSourcePosition); else fetching pauses.
	accept bool
	// taken are the partitions history took, at their start offsets.
	taken Position
}

// evaluate judges the current assignment (checkAssignment) against the
// partition counts the brokers reported. On a conflict it makes Ready say
// why and reports it (reportConflict: one ERROR, counted, at once or once
// it lasts); otherwise it takes every assigned partition without history
// into history at its start offset. With ResetSourcePosition a conflict is
// logged as a WARN and ingested as if there were none.
func (a *assignment) evaluate(counts map[string]int32) verdict {
	a.mu.Lock()
	assigned := partitionSet{}
	for t, ps := range a.assigned {
		for _, p := range ps {
			assigned.add(t, p)
		}
	}
	c := checkAssignment(assignmentFacts{group: a.group, topics: a.topics, history: a.history,
		assigned: assigned, committed: a.committed, partitions: counts})
	prev := a.conflict
	v := verdict{accept: c == nil || a.resetSource, taken: Position{}}
	warn := v.accept && c != nil && a.accepting != c.Error()
	if warn {
		a.accepting = c.Error()
	}
	if v.accept {
		a.takeStartsLocked(v.taken)
		a.conflict, a.conflicts = nil, conflictRun{}
	} else {
		a.conflicts.begin(a.conflict == nil, a.now())
		a.conflict = c
	}
	a.evaluated, a.checking = true, nil
	a.mu.Unlock()
	if v.accept {
		// The group's offsets follow the store's position from the start,
		// even if nothing new arrives (lag tools read them).
		a.commitAssigned.Store(true)
	}
	switch {
	case !v.accept:
		a.reportConflict(c)
	case c != nil:
		if warn {
			a.log.Warn("ingesting an assignment that splits the graph, as --reset-source-position asks: " + c.Error())
		}
		a.metrics.SourceConflict.Set(0)
	default:
		if prev != nil {
			a.log.Info("the assignment no longer conflicts; fetching resumed")
		}
		a.metrics.SourceConflict.Set(0)
	}
	return v
}

// takeStartsLocked takes every assigned partition without history that
// has a start into history, adding it to taken. a.mu held.
func (a *assignment) takeStartsLocked(taken Position) {
	for t, ps := range a.assigned {
		for _, p := range ps {
			s, ok := a.starts.Get(t, p)
			if a.history.has(t, p) || !ok {
				continue // history, or not through adjustOffsets yet
			}
			a.history.add(t, p)
			taken.Set(t, p, s)
		}
	}
}

// ownPartitions makes the owned partitions of every topic the assignment
// (partitioned mode, judged by assignOwned), taking starts' partitions
// into history.
func (a *assignment) ownPartitions(starts Position) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.topics {
		a.assigned[t] = slices.Clone(a.own)
	}
	for t, ps := range starts {
		for p, s := range ps {
			a.starts.Set(t, p, s)
			a.history.add(t, p)
		}
	}
	a.evaluated, a.checking = true, nil
}

// historyNotOwned returns the partitions of the configured topics the
// store has history of that are not owned (partitioned mode).
func (a *assignment) historyNotOwned() partitionSet {
	a.mu.Lock()
	defer a.mu.Unlock()
	gone := partitionSet{}
	for _, t := range a.topics {
		for p := range a.history[t] {
			if !slices.Contains(a.own, p) {
				gone.add(t, p)
			}
		}
	}
	return gone
}

// checkCount is the lag loop's watch on partitioned mode: when a topic's
// partition count (listed, from the brokers' end offsets) is no longer
// Config.Partitions, Ready says so from then on, one ERROR line tells, and
// the source-conflict metric is set; ingestion of the owned partitions
// goes on.
func (a *assignment) checkCount(listed kadm.ListedOffsets) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.own == nil || a.grown != nil {
		return
	}
	for t, ps := range listed {
		// A listing with an error (kadm lists a topic's error as partition
		// -1) says nothing about the count.
		whole := true
		for p, o := range ps {
			whole = whole && p >= 0 && o.Err == nil
		}
		if n := int32(len(ps)); whole && n != a.count {
			a.grown = &OwnershipError{Count: t, Has: n, Want: a.count, Grown: true}
			a.log.Error(a.grown.Error())
			a.metrics.SourceConflicts.Inc()
			a.metrics.SourceConflict.Set(1)
			return
		}
	}
}

// ready is Ready's reason about the assignment (nil: none): the source
// changed; the assignment conflicts (or waits for the group, see
// reportConflict); partitioned, a count changed; the assignment could not
// be checked yet; none was judged yet; or no partitions are assigned (but
// lost ones: Ready names those among health's reasons).
func (a *assignment) ready() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.fatal != nil:
		return a.fatal
	case a.conflict != nil:
		if a.conflicts.reported == "" {
			return a.conflicts.waiting(a.conflict, a.grace)
		}
		return a.conflict
	case a.grown != nil:
		return a.grown
	case a.checking != nil:
		return a.checking
	case !a.evaluated:
		return errors.New("no partitions assigned yet")
	}
	for _, ps := range a.assigned {
		if len(ps) > 0 {
			return nil
		}
	}
	if len(a.lost) > 0 {
		return nil // Ready's health reasons say they were lost
	}
	return fmt.Errorf("no partitions assigned: the other members of consumer group %q hold them all", a.group)
}

// conflictRun is what reportConflict knows of the run of conflicting
// assignments the current conflict belongs to (a run ends when an
// assignment no longer conflicts). Protected by assignment.mu.
type conflictRun struct {
	since time.Time // when the run began
	// reported is the conflict last logged as an ERROR in this run ("":
	// none yet: the run is not reported, Ready says it waits); noted, the
	// one last logged as waiting.
	reported, noted string
}

// begin notes a conflict found by evaluate at now; fresh: the assignment
// did not conflict before (a new run).
func (r *conflictRun) begin(fresh bool, now time.Time) {
	if fresh {
		*r = conflictRun{since: now}
	}
}

// waiting is Ready's reason for conflict c while its run is not reported.
func (r *conflictRun) waiting(c *assignmentConflict, grace time.Duration) error {
	return fmt.Errorf("waiting for consumer group %q to assign partitions %s: they are not assigned to this member, and this store has no history of them (partitions new to the group are assigned at its next rebalance, once its leader's metadata lists them); fetching is paused meanwhile, and if they are still assigned elsewhere after %v (--ready-grace) it is reported as a source conflict",
		c.group, c.elsewhere, grace)
}

// reportConflict reports c, the conflict evaluate just found: an ERROR
// line (again when what conflicts changes), the source-conflict gauge, and
// one count per run. A certain conflict (assignmentConflict.certain) is
// reported at once; any other only once its run has lasted the grace (a
// timer checks again), so that a topic that appears while the group
// forms, which the group assigns a moment later, is an INFO line and not
// an ERROR. Fetching is paused all along (evaluate's verdict).
func (a *assignment) reportConflict(c *assignmentConflict) {
	a.mu.Lock()
	if a.conflict != c {
		a.mu.Unlock()
		return // judged again since
	}
	run := &a.conflicts
	if wait := a.grace - a.now().Sub(run.since); !c.certain() && run.reported == "" && wait > 0 {
		note := run.noted != c.Error()
		run.noted = c.Error()
		a.mu.Unlock()
		if note {
			a.log.Info("waiting for the consumer group to assign the partitions of this store's topics that it has not assigned here; fetching is paused meanwhile",
				"group", c.group, "partitions", c.elsewhere.String(), "reported_as_a_conflict_after", a.grace)
		}
		a.afterFunc(wait, func() { a.reportConflict(c) })
		return
	}
	// The metrics under mu: an evaluate that ends the run (and zeroes the
	// gauge after it unlocks) cannot come in between.
	if run.reported == "" {
		a.metrics.SourceConflicts.Inc()
	}
	a.metrics.SourceConflict.Set(1)
	say := run.reported != c.Error()
	run.reported = c.Error()
	a.mu.Unlock()
	if say {
		a.log.Error("ingestion paused: " + c.Error())
	}
}
