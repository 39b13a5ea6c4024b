package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Checkpoints of the graph analytics, and the restart that resumes them.
//
// Every CheckpointInterval the ingester stops between two batches, makes
// everything applied durable and calls checkpoint with the source position
// after them: the registry brings every graph analytic to that point and
// writes them, with the topology they read, to <dir>/analytics.ckpt (at
// shutdown too). At the next start, restoreAnalytics reads it back; the
// ingester then resumes every partition from the checkpoint's position
// rather than from the store's, so that the records after the checkpoint
// (the store holds some already: applying them again changes nothing in
// it) bring the restored analytics forward exactly as they went before
// the restart. Kafka is the log that makes both the store and the
// analytics whole again.

// checkpointTimeout bounds how long the analytics may take to catch up
// for a checkpoint (ingestion waits meanwhile); one that does not is left
// out of it.
const checkpointTimeout = 30 * time.Second

// restoreTimeout bounds what a restore asks the brokers.
const restoreTimeout = time.Minute

// checkpoint writes the analytics' checkpoint at the source position pos.
func (s *Server) checkpoint(ctx context.Context, pos []byte) error {
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	t0 := time.Now()
	meta, err := s.areg.Checkpoint(ctx, datadir.CheckpointPath(s.cfg.Dir), pos)
	s.metrics.Analytics.Checkpointed(err, time.Since(t0))
	if err == nil && len(meta.Analytics) > 0 {
		s.log.Info("analytics checkpointed", "seq", meta.Seq, "analytics", len(meta.Analytics), "seconds", time.Since(t0).Seconds(),
			"catch_up_seconds", meta.CatchUp.Seconds(), "bytes", meta.Bytes)
	}
	return err
}

// replayUnfinished reports whether the ingester has applied less than the
// store's recorded position raw holds (a replay for a restored checkpoint
// that has not caught up with what the store held at the start), naming
// a partition behind.
func (s *Server) replayUnfinished(raw []byte) (string, int32, bool) {
	stored, err := ingest.DecodePosition(raw)
	if err != nil {
		return "", 0, false // the checkpoint reports it
	}
	return s.in.Applied().Behind(stored)
}

// restoreAnalytics registers the analytics the checkpoint holds a state
// for and returns their names and the source position the ingester must
// replay from (nil: none). A missing checkpoint is normal; one that is
// damaged, belongs to another source or needs records the brokers no
// longer have is reported and left alone: every analytic then computes
// from the store.
func (s *Server) restoreAnalytics(ctx context.Context, opts []kgo.Opt, specs []analytics.Spec) (map[string]bool, []byte) {
	path := datadir.CheckpointPath(s.cfg.Dir)
	var replay []byte
	// The brokers are asked where the topics start and which alerts were
	// delivered: bounded, so that serve starts (computing the analytics)
	// when they do not answer.
	ctx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	names, err := s.areg.Restore(ctx, path, specs, func(meta analytics.CheckpointMeta) error {
		// Used or not, a later start may replay from it.
		s.checkpointFloor = meta.Position
		var err error
		replay, err = s.replayFor(ctx, meta, opts)
		return err
	})
	switch {
	case errors.Is(err, analytics.ErrNoCheckpoint):
		s.log.Info("no analytics checkpoint yet: they compute from the store", "file", path)
		return nil, nil
	case err != nil && len(names) == 0:
		s.log.Warn("the analytics' checkpoint is not used: they compute from the store", "file", path, "err", err)
		return nil, nil
	case err != nil:
		s.log.Warn("some analytics of the checkpoint could not be restored: they compute from the store", "file", path, "err", err)
	}
	restored := map[string]bool{}
	for _, n := range names {
		restored[n] = true
	}
	if len(names) > 0 {
		s.log.Info("analytics restored from their checkpoint", "names", names, "replay", replay != nil)
	}
	return restored, replay
}

// replayFor checks a checkpoint's meta against the store and the brokers
// and returns the position to replay from (nil when the checkpoint is at
// the store's position). It refuses a checkpoint ahead of the store, of
// another source, after which the store applied operations of no Kafka
// record, or whose records the brokers have dropped since.
func (s *Server) replayFor(ctx context.Context, meta analytics.CheckpointMeta, opts []kgo.Opt) ([]byte, error) {
	st := s.dir.Store
	sm, err := st.Metrics()
	if err != nil {
		return nil, err
	}
	if meta.Seq > sm.LastSeq {
		return nil, fmt.Errorf("the checkpoint is at seq %d, ahead of the store (seq %d)", meta.Seq, sm.LastSeq)
	}
	raw, err := st.SourcePosition()
	if err != nil {
		return nil, err
	}
	store, err := ingest.DecodeRecorded(raw)
	if err != nil {
		return nil, fmt.Errorf("the store's source position: %w", err)
	}
	behind, err := ingest.PlanReplay(store, meta.Position)
	if err != nil {
		return nil, err
	}
	if len(behind) == 0 {
		if meta.Seq != sm.LastSeq {
			return nil, fmt.Errorf("the store applied operations of no Kafka record after the checkpoint (seq %d to %d)", meta.Seq, sm.LastSeq)
		}
		return nil, nil
	}
	// The brokers must still hold every record after the checkpoint.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.brokers...)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	topics := make([]string, 0, len(behind))
	for t := range behind {
		topics = append(topics, t)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing where the topics start, to replay from the checkpoint: %w", err)
	}
	for t, ps := range behind {
		for p, o := range ps {
			so, ok := starts.Lookup(t, p)
			if !ok || so.Offset > o {
				return nil, fmt.Errorf("the records of %s/%d after the checkpoint (from offset %d) are gone from the brokers (retention): the log starts at %d", t, p, o, so.Offset)
			}
		}
	}
	return meta.Position, nil
}
