package ingest

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// adjustOffsets is called once the offsets of newly assigned partitions
// are fetched, before they are fetched from. It reads the brokers' source
// (a topic re-created or a cluster replaced under a running ingester ends
// Run), starts each partition the store has history for at its recorded
// position, and otherwise leaves franz-go's choice (the committed offset,
// else the reset policy, resolved to a concrete offset so that the start
// of the partition's history is known). Then it judges the assignment
// (evaluate), which pauses fetching if it conflicts.
//
// An error (ctx's, when the group session ends meanwhile; or a start
// offset the brokers did not list) makes franz-go assign none of offs and
// start a new session.
func (in *Ingester) adjustOffsets(ctx context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	need := make([]string, 0, len(offs))
	for t := range offs {
		need = append(need, t)
	}
	src, err := in.fetchSource(ctx, need)
	if err != nil {
		return nil, err
	}
	if mm := in.src.learn(src, need); mm != nil {
		in.asg.setFatal(mm, true)
		in.setPaused(pauseFatal, true, offs)
		in.cfg.Logger.Error(mm.Error())
		return offs, nil
	}
	pl := in.planStarts(offs)
	logStarts, err := in.logStartsFor(ctx, pl.needs)
	if err != nil {
		return nil, err
	}
	if err := in.resolveStarts(ctx, offs, pl.resolve, logStarts); err != nil {
		return nil, err
	}
	lost := lostRecords(pl.needs, logStarts, pl.isNew.has)
	if in.cfg.AcceptLostRecords {
		in.acceptLost(lost, offs)
		lost = nil
	}
	in.holdLost(lost, offs)
	in.evaluate(offs)
	return offs, nil
}

// startPlan is where the partitions being assigned start, before the
// brokers are asked where their logs start.
type startPlan struct {
	// needs is the first offset the store needs of each partition that
	// will be ingested, against where its log starts (logstart.go); isNew
	// the partitions new to the store.
	needs Position
	isNew partitionSet
	// resolve are the partitions without history or committed offset:
	// they start by the reset policy, resolved so that their start is
	// known.
	resolve map[string][]int32
}

// planStarts starts each partition of offs the store has history for at
// its recorded position, and notes the committed offset of each other
// (its start, the group's: its history is in another store, unless
// ResetSourcePosition takes the group's word for it).
func (in *Ingester) planStarts(offs map[string]map[int32]kgo.Offset) startPlan {
	pl := startPlan{needs: Position{}, isNew: partitionSet{}, resolve: map[string][]int32{}}
	for t, ps := range offs {
		for p, o := range ps {
			if next, ok := in.resumeOffset(t, p); ok {
				ps[p] = kgo.NewOffset().At(next)
				pl.needs.Set(t, p, next)
				in.cfg.Logger.Info("resuming partition from the store's recorded position", "topic", t, "partition", p, "offset", next)
				continue
			}
			pl.isNew.add(t, p)
			if c := o.EpochOffset().Offset; c >= 0 {
				in.asg.noteStart(t, p, c, true)
				if in.cfg.ResetSourcePosition {
					pl.needs.Set(t, p, c)
				}
				continue
			}
			pl.resolve[t] = append(pl.resolve[t], p)
			if in.cfg.ResetPolicy != "latest" {
				pl.needs.Set(t, p, 0) // the whole log
			}
		}
	}
	return pl
}

// resolveStarts starts the partitions of resolve by the reset policy: at
// their log start (logStarts), or at their end.
func (in *Ingester) resolveStarts(ctx context.Context, offs map[string]map[int32]kgo.Offset, resolve map[string][]int32, logStarts Position) error {
	if len(resolve) == 0 {
		return nil
	}
	starts := logStarts
	if in.cfg.ResetPolicy == "latest" {
		topics := make([]string, 0, len(resolve))
		for t := range resolve {
			topics = append(topics, t)
		}
		var err error
		if starts, err = in.listOffsets(ctx, topics, false); err != nil {
			return err
		}
	}
	for t, ps := range resolve {
		for _, p := range ps {
			s, ok := starts.Get(t, p)
			if !ok {
				return fmt.Errorf("ingest: the brokers listed no start offset for %s/%d", t, p)
			}
			offs[t][p] = kgo.NewOffset().At(s)
			in.asg.noteStart(t, p, s, false)
		}
	}
	return nil
}

// resumeOffset returns where a partition the store has history for
// resumes: the position after everything applied, or the start offset it
// was taken at (with ResetSourcePosition, a partition with nothing applied
// follows the group's offsets instead).
func (in *Ingester) resumeOffset(t string, p int32) (int64, bool) {
	return in.pos.resumeAt(t, p, in.cfg.ResetSourcePosition)
}

// listOffsets lists where the partitions of topics start: the log start
// offset (start), else the last stable offset (the end, for a
// read-committed consumer). It says where partitions without a recorded
// or committed offset start by the reset policy (start: earliest).
// Retried until it succeeds or ctx ends.
func (in *Ingester) listOffsets(ctx context.Context, topics []string, start bool) (Position, error) {
	adm := kadm.NewClient(in.cl)
	var p Position
	err := in.retry(ctx, fmt.Sprintf("listing the start offsets of %v", topics), func() error {
		var l kadm.ListedOffsets
		var err error
		if start {
			l, err = adm.ListStartOffsets(ctx, topics...)
		} else {
			l, err = adm.ListCommittedOffsets(ctx, topics...)
		}
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return err
		}
		p = Position{}
		l.Each(func(o kadm.ListedOffset) {
			if o.Offset >= 0 { // -1: not found (adjustOffsets then retries the session)
				p.Set(o.Topic, o.Partition, o.Offset)
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// onAssigned adds the partitions the group gave this member. With none
// added the session's assignment is complete (partitions may have gone)
// and is judged now; with partitions added, adjustOffsets judges it once
// their committed offsets are known.
func (in *Ingester) onAssigned(_ context.Context, _ *kgo.Client, added map[string][]int32) {
	in.asg.assign(added)
	for t, ps := range added {
		for _, p := range ps {
			in.cfg.Metrics.DeadLetterBlocked.WithLabelValues(t, strconv.Itoa(int(p))).Set(0)
		}
	}
	in.cfg.Logger.Info("partitions assigned", "partitions", added)
	if len(added) == 0 {
		in.evaluate(nil)
	}
}

// removeAssigned forgets partitions that went to another member (revoked
// or lost): another member reports their lag now.
func (in *Ingester) removeAssigned(gone map[string][]int32) {
	in.asg.revoke(gone)
	in.health.forget(gone)
	for t, ps := range gone {
		for _, p := range ps {
			in.cfg.Metrics.DeadLetterBlocked.DeleteLabelValues(t, strconv.Itoa(int(p)))
		}
	}
}

// onRevoked makes everything applied durable and commits before the
// partitions go to another member. The assignment is judged when the
// session's assignment is complete (onAssigned, adjustOffsets).
func (in *Ingester) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	in.cfg.Logger.Info("partitions revoked; flushing", "partitions", revoked)
	if err := in.flushAndCommit(ctx); err != nil {
		in.cfg.Logger.Error("flush on revoke failed", "err", err)
	}
	in.dropBlocks(revoked)
	in.pauses.dropLost(revoked)
	in.removeAssigned(revoked)
}

// onLost flushes (the group already moved on, so there is nothing to
// commit); Ready says so until the next assignment.
func (in *Ingester) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	in.cfg.Logger.Warn("partitions lost; flushing", "partitions", lost)
	in.asg.noteLost(lost)
	in.dropBlocks(lost)
	in.pauses.dropLost(lost)
	in.removeAssigned(lost)
	if err := in.flush(); err != nil {
		in.cfg.Logger.Error("flush on lost partitions failed", "err", err)
	}
}
