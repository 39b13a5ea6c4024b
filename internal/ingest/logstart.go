package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A store never starts from a log that has lost its beginning without the
// operator saying so (Config.AcceptLostRecords).
//
// Kafka deletes the oldest records of a partition by retention or by
// DeleteRecords; the log then starts at a later offset (its log start
// offset). Before a partition is fetched, the offset the store needs it
// from is compared with where its log starts:
//
//   - a partition the store has history of: its recorded position (or,
//     before anything of it was applied, the offset it was taken at), so
//     that a store down while retention ran past its position is caught;
//   - a partition new to the store that starts from the start of its log
//     (--reset earliest, an adopted partition): offset 0, so that a new
//     store on a topic that lost its beginning is caught, and so is a
//     partition added to the topic, or assigned anew, that did;
//   - a partition new to the store that starts at the group's committed
//     offset (--reset-source-position): that offset.
//
// A partition new to the store that starts by --reset latest needs
// nothing: the operator asked for the records from now on, whatever came
// before. (Left alone, franz-go would start such a partition at the log
// start without a word: an offset below it is out of range, and its reset
// policy moves it to the log start, or with --reset latest to the end.)
//
// The same loss while a partition is consumed (retention outruns a slow
// or paused ingester, or DeleteRecords passes its position): franz-go
// then resumes at the log start without a word. The poll loop notices a
// fetch whose records begin past the position while the log start the
// fetch reports is past it too (heldLost) and treats the partition as at
// an assignment: it applies none of those records.
//
// Where the log starts later than needed the records between are gone:
// ingesting would build a partial graph that looks whole. Partitioned mode
// (assignOwned) refuses to start with a *LostRecordsError: its assignment
// is fixed, and known before anything is fetched. Group mode
// (adjustOffsets) pauses fetching of those partitions only, the others
// going on, as it pauses on a split assignment: the group may move the
// partition elsewhere at any rebalance, and a serve that is assigned a
// new partition mid-life must not exit for it. Ready then names each
// partition, the offsets and the flag, one ERROR line says the same, and
// the partition stays paused while it is assigned here. With
// AcceptLostRecords each such partition starts at its log start instead,
// with a WARN naming the records lost.

// LostRecords is a partition whose log starts after the first offset the
// store needs of it.
type LostRecords struct {
	Topic     string
	Partition int32
	// Need is the first offset the store needs: its recorded position, or
	// 0 for a partition new to it read from the start of its log (New).
	Need int64
	// LogStart is where the partition's log starts now: the records from
	// Need up to it are gone.
	LogStart int64
	New      bool
}

func (l LostRecords) String() string {
	if l.New {
		return fmt.Sprintf("%s/%d is new to this store and would be read from the start of its log, but the log starts at offset %d, not %d: records %d to %d were deleted (retention or DeleteRecords)",
			l.Topic, l.Partition, l.LogStart, l.Need, l.Need, l.LogStart-1)
	}
	return fmt.Sprintf("this store holds %s/%d up to offset %d, but its log now starts at offset %d: records %d to %d were deleted (retention or DeleteRecords) before the store read them",
		l.Topic, l.Partition, l.Need, l.LogStart, l.Need, l.LogStart-1)
}

// acceptLostHint is the remedy a lost start names.
const acceptLostHint = "rebuild the store from a log that still holds every record, or start serve with --accept-lost-records to ingest from the log start without the lost records (a partial graph)"

// LostRecordsError is partitioned mode's refusal to start, and group
// mode's reason to pause partitions (Ready), when logs lost records the
// store needs.
type LostRecordsError struct {
	Lost []LostRecords // sorted by topic, then partition
	// Paused: group mode, the partitions are paused (not refused).
	Paused bool
}

func (e *LostRecordsError) Error() string {
	parts := make([]string, len(e.Lost))
	for i, l := range e.Lost {
		parts[i] = l.String()
	}
	what := "serve does not start"
	if e.Paused {
		what = "fetching of those partitions is paused while they are assigned here"
	}
	return "ingest: records lost: " + strings.Join(parts, "; ") + ": ingesting would build a partial graph, so " + what + ". Remedy: " + acceptLostHint
}

// lostRecords compares need (the first offset the store needs of each
// partition) with the log starts listed, and returns the partitions whose
// log starts later, sorted; isNew says whether a partition is new to the
// store. A partition without a listed start is left out (the listing
// retries until every partition of its topics is known).
func lostRecords(need, logStarts Position, isNew func(t string, p int32) bool) []LostRecords {
	var lost []LostRecords
	for t, ps := range need {
		for p, n := range ps {
			if s, ok := logStarts.Get(t, p); ok && s > n {
				lost = append(lost, LostRecords{Topic: t, Partition: p, Need: n, LogStart: s, New: isNew(t, p)})
			}
		}
	}
	sortLost(lost)
	return lost
}

// sortLost sorts lost by topic, then partition.
func sortLost(lost []LostRecords) {
	slices.SortFunc(lost, func(a, b LostRecords) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
}

// topicsOf lists the topics of p.
func topicsOf(p Position) []string {
	ts := make([]string, 0, len(p))
	for t, ps := range p {
		if len(ps) > 0 {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

// logStartsFor lists where the logs of need's partitions start (nil when
// need is empty), retried until it succeeds or ctx ends.
func (in *Ingester) logStartsFor(ctx context.Context, need Position) (Position, error) {
	if len(need) == 0 {
		return nil, nil
	}
	return in.listOffsets(ctx, topicsOf(need), true)
}

// acceptLost starts each partition of lost at its log start (offs),
// logging a WARN for each: AcceptLostRecords is set. A partition new to
// the store takes that offset as its start (the assignment's, which evaluate
// takes into history).
func (in *Ingester) acceptLost(lost []LostRecords, offs map[string]map[int32]kgo.Offset) {
	in.asg.acceptLost(lost)
	for _, l := range lost {
		offs[l.Topic][l.Partition] = kgo.NewOffset().At(l.LogStart)
		in.cfg.Logger.Warn("starting a partition at its log start without the records lost before it, as --accept-lost-records asks: the graph lacks them",
			"topic", l.Topic, "partition", l.Partition, "from", l.LogStart, "lost_from", l.Need, "lost", l.LogStart-l.Need)
	}
}

// holdLost is group mode's answer to lost records at an assignment: the
// partitions of lost (being assigned, in offs) are paused and stay so
// while assigned; those of offs not in lost that an earlier assignment
// paused for lost records are resumed (unless something else holds
// fetching). Ready names the paused ones; one ERROR line says it when
// that changes. A partition new to the store is not taken into its
// history (evaluate takes only partitions with a start).
func (in *Ingester) holdLost(lost []LostRecords, offs map[string]map[int32]kgo.Offset) {
	assigning := map[string][]int32{}
	for t, ps := range offs {
		for p := range ps {
			assigning[t] = append(assigning[t], p)
		}
	}
	changed := in.pauses.holdLost(lost, assigning)
	in.asg.holdLost(lost)
	if changed {
		in.cfg.Logger.Error((&LostRecordsError{Lost: lost, Paused: true}).Error())
	}
}

// lostWhileRunning is the poll loop's answer to partitions whose log lost
// records past the position while they were consumed: with
// AcceptLostRecords it logs a WARN for each and holds none; otherwise it
// holds them all as at an assignment (holdLost) and returns them.
func (in *Ingester) lostWhileRunning(lost []LostRecords) []LostRecords {
	if in.cfg.AcceptLostRecords {
		for _, l := range lost {
			if in.asg.acceptedAt(tp{l.Topic, l.Partition}, l.LogStart) {
				continue // accepted when assigned: said then
			}
			in.cfg.Logger.Warn("a partition's log lost records before they were ingested; going on from its log start without them, as --accept-lost-records asks: the graph lacks them",
				"topic", l.Topic, "partition", l.Partition, "from", l.LogStart, "lost_from", l.Need, "lost", l.LogStart-l.Need)
		}
		return nil
	}
	in.holdLost(lost, nil)
	return lost
}

// lostReady is Ready's reason for the partitions paused for lost records
// (nil: none).
func (in *Ingester) lostReady() error {
	if lost := in.pauses.lostRecords(); lost != nil {
		return &LostRecordsError{Lost: lost, Paused: true}
	}
	return nil
}
