package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// How the ingester applies the rules of source.go (what the run is bound
// to is the binding part's, binding.go):
//
//	Run:          bindSource: metadata (cluster ID, topic IDs) -> checkSource
//	              against the store's recorded position -> refuse, or drop
//	              the mismatched offsets (ResetSourcePosition) -> join the
//	              group (AddConsumeTopics)
//	assignment:   adjustOffsets: metadata again (a change ends Run; IDs of
//	              new topics are learnt) -> start offsets -> evaluate
//	UNKNOWN_TOPIC_ID fetch errors: metadata again (checkRecreated): a
//	              topic re-created under the running ingester ends Run
//	              onAssigned with nothing added: evaluate
//	evaluate:     checkAssignment -> conflict: pause fetching of every
//	              assigned partition, not ready, ERROR, metric
//	              -> no conflict: take the new partitions into history
//	              (pending -> the poll loop's position -> recorded with
//	              the next flush) and resume fetching
//
// The recorded position is re-bound with every batch: Recorded{clusterID,
// topicIDs, position}.Encode().

// setPaused adds (on) or removes a reason to pause fetching (pauses.set):
// while any holds, every assigned partition (and those of extra, being
// assigned) is paused. Called without mu held.
func (in *Ingester) setPaused(reason uint8, on bool, extra map[string]map[int32]kgo.Offset) {
	in.pauses.set(reason, on, func() map[string][]int32 {
		ps := map[string][]int32{}
		for t, p := range in.asg.assignedNow() {
			ps[t] = append(ps[t], p...)
		}
		for t, m := range extra {
			for p := range m {
				ps[t] = append(ps[t], p)
			}
		}
		return ps
	})
}

// fetchSource asks the brokers for their cluster ID and the ID and
// partition count of every configured topic, with a metadata request of
// its own (kadm's Metadata may answer from the client's cache, which can
// be seconds old: a topic re-created meanwhile would pass) that creates no
// topic. It retries until the answer includes every topic of need or ctx
// ends; while it cannot, Ready says why.
func (in *Ingester) fetchSource(ctx context.Context, need []string) (sourceInfo, error) {
	var src sourceInfo
	err := in.retry(ctx, "reading the Kafka cluster ID and topic IDs", func() error {
		var err error
		if src, err = in.requestSource(ctx); err != nil {
			return err
		}
		for _, t := range need {
			if _, ok := src.ids[t]; !ok {
				return fmt.Errorf("topic %q is assigned but its metadata says it does not exist", t)
			}
		}
		return nil
	})
	if err != nil {
		return sourceInfo{}, err
	}
	in.asg.setChecking(nil)
	return src, nil
}

// retry calls f until it returns nil, or ctx ends (then it returns ctx's
// error), waiting 100ms after the first failure and twice as long after
// each next, at most 5s. While f fails, Ready says why (what: what f
// does), and each failure is a WARN. The caller clears Ready's reason
// (assignment.setChecking) when its work is done.
func (in *Ingester) retry(ctx context.Context, what string, f func() error) error {
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		in.asg.setChecking(fmt.Errorf("%s: %w", what, err))
		in.cfg.Logger.Warn(what+" failed; retrying", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}

func (in *Ingester) requestSource(ctx context.Context) (sourceInfo, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, t := range in.cfg.Topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, in.cl)
	if err != nil {
		return sourceInfo{}, err
	}
	src := sourceInfo{ids: map[string]TopicID{}, partitions: map[string]int32{}}
	if resp.ClusterID != nil {
		src.cluster = *resp.ClusterID
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case err == nil:
			src.ids[*t.Topic] = TopicID(t.TopicID)
			src.partitions[*t.Topic] = int32(len(t.Partitions))
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			// The topic does not exist (yet).
		default:
			return sourceInfo{}, fmt.Errorf("metadata of topic %q: %w", *t.Topic, err)
		}
	}
	return src, nil
}

// bindSource runs before the client joins the group: it checks the
// store's recorded offsets against the brokers (checkSource) and returns a
// *SourceMismatchError if they belong elsewhere, unless ResetSourcePosition
// is set: then it drops them (all of them for another cluster, a topic's
// for a re-created or deleted topic) and logs a WARN naming what it
// discarded. Then the brokers' cluster ID and topic IDs are what this run
// records. It returns ctx's error if ctx ends first.
func (in *Ingester) bindSource(ctx context.Context) error {
	var src sourceInfo
	var mm *SourceMismatchError
	for attempt := 1; ; attempt++ {
		var err error
		if src, err = in.fetchSource(ctx, nil); err != nil {
			return err
		}
		mm = in.src.check(src, in.cfg.Topics)
		// A topic the brokers do not know was deleted: unless the answer
		// came from a broker that has not caught up, ask a few times.
		if mm == nil || !mm.onlyMissing() || attempt == 3 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if mm != nil && !in.cfg.ResetSourcePosition {
		return mm
	}
	in.discardMismatched(mm)
	in.src.bind(src, mm)
	if src.cluster == "" {
		in.cfg.Logger.Warn("the brokers report no cluster ID: recorded offsets cannot be bound to their cluster")
	}
	in.asg.takeHistory(in.pos.appliedNow())
	return nil
}

// discardMismatched drops the offsets of mm (nil: none) that
// ResetSourcePosition discards, all of them for another cluster, a
// topic's for a re-created or deleted topic, with a WARN naming them.
func (in *Ingester) discardMismatched(mm *SourceMismatchError) {
	applied := in.pos.appliedNow()
	switch {
	case mm == nil:
	case mm.OtherCluster():
		in.cfg.Logger.Warn("discarding the store's recorded offsets: they belong to another Kafka cluster (--reset-source-position); their partitions start at the group's committed offsets, then by --reset",
			"recorded_cluster_id", mm.RecordedCluster, "cluster_id", mm.Cluster, "discarded", fmtOffsets(applied))
		in.pos.discard(true)
	default:
		for _, tm := range mm.Topics {
			what := "deleted and re-created"
			if tm.Missing {
				what = "deleted"
			}
			in.cfg.Logger.Warn("discarding the store's recorded offsets of topic "+tm.Topic+": it was "+what+" (--reset-source-position); its partitions start at the group's committed offsets, then by --reset",
				"topic", tm.Topic, "recorded_topic_id", tm.Recorded.String(), "topic_id", foundID(tm), "discarded", fmtOffsets(Position{tm.Topic: applied[tm.Topic]}))
			in.pos.discard(false, tm.Topic)
		}
	}
}

// onlyMissing reports whether every mismatch is a topic the brokers do
// not know.
func (e *SourceMismatchError) onlyMissing() bool {
	for _, t := range e.Topics {
		if !t.Missing {
			return false
		}
	}
	return !e.OtherCluster()
}

func foundID(tm TopicMismatch) string {
	if tm.Missing {
		return "(none: no such topic)"
	}
	return tm.Found.String()
}

// checkRecreated is called when fetches of topics fail with
// UNKNOWN_TOPIC_ID. franz-go never adopts the new ID of a topic deleted
// and re-created under a running consumer (it would fetch another log at
// the old offsets): it fails that topic's fetches until the client forgets
// the topic. If the brokers now report another ID for one of topics (or
// another cluster ID), the source changed under the ingester, and Run
// returns a *SourceMismatchError saying so instead of retrying forever. A
// topic that is gone (deleted, not re-created yet) is waited for.
func (in *Ingester) checkRecreated(ctx context.Context, topics []string) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	src, err := in.requestSource(cctx)
	if err != nil {
		return // checked again with the next errors
	}
	mm := in.src.recreated(src, topics)
	if mm == nil {
		return
	}
	if in.asg.setFatal(mm, false) {
		in.cfg.Logger.Error(mm.Error())
	}
}

// evaluate judges the current assignment (assignment.evaluate): on a
// conflict fetching of every assigned partition and of extra (being
// assigned) pauses; otherwise the partitions history took join the
// positions, their lag is known at once, and fetching resumes.
func (in *Ingester) evaluate(extra map[string]map[int32]kgo.Offset) {
	v := in.asg.evaluate(in.src.partitionCounts())
	in.pos.accept(v.taken)
	if v.accept {
		in.wakeLag()
	}
	in.setPaused(pauseConflict, !v.accept, extra)
}

// takePending returns polled with the partitions history took since the
// last call added at their start offsets, and whether the source changed
// under the ingester (Run must return that error). Called by the poll loop.
func (in *Ingester) takePending(polled Position) (Position, error) {
	if err := in.asg.fatalErr(); err != nil {
		return polled, err
	}
	return in.pos.takePending(polled), nil
}

// encodePosition binds p to the source for the store to record.
func (in *Ingester) encodePosition(p Position) []byte {
	return in.src.encode(p)
}

// fmtOffsets lists a position as "topic[partition:offset,...] ...".
func fmtOffsets(p Position) string {
	return fmtPartitions(p, func(q int32, o int64) string { return fmt.Sprintf("%d:%d", q, o) })
}
