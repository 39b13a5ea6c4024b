package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

// restoreTimeout bounds one attempt of a restore (what it asks the
// brokers).
const restoreTimeout = time.Minute

// DefaultCheckpointRestoreWait is Config.CheckpointRestoreWait when zero.
const DefaultCheckpointRestoreWait = 5 * time.Minute

// restoreBackoffMax bounds the wait between two tries of the brokers while
// a restore waits for them.
const restoreBackoffMax = 2 * time.Second

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
// damaged, belongs to another source, is ahead of the store or needs
// records the brokers no longer have is reported and left alone: every
// analytic then computes from the store.
//
// Checking the checkpoint may need the brokers (where the topics start,
// when it is behind the store; the alert sink's state is in the
// checkpoint, and it reads the alert topic once started). While they do
// not answer, it waits for them (brokerWait):
// a rolling restart of Kafka must not drop the monitors' windows. It
// returns an error (Open fails) only when they have not answered within
// Config.CheckpointRestoreWait, or ctx ended meanwhile.
func (s *Server) restoreAnalytics(ctx context.Context, opts []kgo.Opt, specs []analytics.Spec) (map[string]bool, []byte, error) {
	path := datadir.CheckpointPath(s.cfg.Dir)
	var replay []byte
	var w *brokerWait // nil until the brokers fail to answer
	for {
		actx, cancel := context.WithTimeout(ctx, restoreTimeout)
		names, err := s.areg.Restore(actx, path, specs, func(meta analytics.CheckpointMeta) error {
			// Used or not, a later start may replay from it.
			s.checkpointFloor = meta.Position
			var err error
			replay, err = s.replayFor(actx, meta, opts)
			return err
		})
		cancel()
		if len(names) == 0 && brokersDidNotAnswer(err) && ctx.Err() == nil {
			if w == nil {
				w = s.startBrokerWait(path, opts)
				defer w.close()
			}
			if werr := w.wait(ctx, err); werr != nil {
				return nil, nil, werr
			}
			continue // the brokers answer: check the checkpoint again
		}
		if w != nil {
			w.done()
		}
		switch {
		case errors.Is(err, analytics.ErrNoCheckpoint):
			s.log.Info("no analytics checkpoint yet: they compute from the store", "file", path)
			return nil, nil, nil
		case err != nil && len(names) == 0:
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("stopped while restoring the analytics' checkpoint: %w", ctx.Err())
			}
			s.log.Warn("the analytics' checkpoint is not used: they compute from the store", "file", path, "err", err)
			return nil, nil, nil
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
		return restored, replay, nil
	}
}

// brokersError is a check of the checkpoint that the brokers did not
// answer (no connection, a timeout, a partition without a leader): unlike
// a checkpoint found unusable, it is worth trying again.
type brokersError struct{ err error }

func (e *brokersError) Error() string { return e.err.Error() }
func (e *brokersError) Unwrap() error { return e.err }

// brokersDidNotAnswer reports whether err, a Restore's, is one the
// brokers may answer differently later: a *brokersError of replayFor, or
// a restore attempt that timed out. An alert sink that cannot resume (an
// *analytics.ResumeError) is not: the Kafka sink's Resume reads its state
// from the checkpoint and asks the brokers nothing.
func brokersDidNotAnswer(err error) bool {
	var be *brokersError
	if errors.As(err, &be) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// brokerWait is a restore waiting for the brokers: it says so once in
// the log and, until it ends, /readyz says why (Server.ready) and the API
// answers 503 (startGate).
type brokerWait struct {
	s        *Server
	path     string
	since    time.Time
	deadline time.Time
	cl       *kgo.Client // for Ping; nil if it could not be made
	backoff  time.Duration
}

// startBrokerWait starts a wait: one WARN line, and /readyz's reason.
func (s *Server) startBrokerWait(path string, opts []kgo.Opt) *brokerWait {
	limit := s.cfg.CheckpointRestoreWait
	if limit == 0 {
		limit = DefaultCheckpointRestoreWait
	}
	now := time.Now()
	w := &brokerWait{s: s, path: path, since: now, deadline: now.Add(limit), backoff: 100 * time.Millisecond}
	w.cl, _ = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.brokers...)}, opts...)...)
	s.log.Warn("waiting for the Kafka brokers to check the analytics' checkpoint (not ready meanwhile; at most --checkpoint-restore-wait, then serve exits rather than drop the analytics' state)",
		"file", path, "brokers", strings.Join(s.brokers, ","), "checkpoint_restore_wait", limit)
	return w
}

// wait notes err (why the last check failed), then waits until a broker
// answers, trying with backoff; it returns an error when the limit passes
// first, or ctx ends.
func (w *brokerWait) wait(ctx context.Context, err error) error {
	s := w.s
	for {
		last := err
		s.start.setFunc(func() error {
			return fmt.Errorf("starting: waiting since %s (%v) for the Kafka brokers (%s) to check the analytics' checkpoint %s against them; at most --checkpoint-restore-wait %v, then serve exits: last error: %w",
				w.since.UTC().Format(time.RFC3339), time.Since(w.since).Truncate(time.Second), strings.Join(s.brokers, ","), w.path, w.deadline.Sub(w.since), last)
		})
		if time.Now().After(w.deadline) {
			return fmt.Errorf("the analytics' checkpoint %s could not be checked: the Kafka brokers (%s) did not answer within --checkpoint-restore-wait %v (last error: %w); serve does not start rather than drop the analytics' state (the monitors' windows): start it again once the brokers answer, or give a longer --checkpoint-restore-wait; deleting the file makes the analytics compute from the store instead",
				w.path, strings.Join(s.brokers, ","), w.deadline.Sub(w.since), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while waiting for the Kafka brokers to check the analytics' checkpoint: %w", ctx.Err())
		case <-time.After(min(w.backoff, time.Until(w.deadline)+time.Millisecond)):
		}
		w.backoff = min(2*w.backoff, restoreBackoffMax)
		if w.cl == nil {
			return nil // nothing to ping with: try the restore itself
		}
		pctx, cancel := context.WithTimeout(ctx, restoreBackoffMax)
		err = w.cl.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
	}
}

// done ends the wait: the brokers answered the check.
func (w *brokerWait) done() {
	w.s.start.set(errOpening)
	w.s.log.Info("the Kafka brokers answered: the analytics' checkpoint is checked", "file", w.path, "waited_seconds", time.Since(w.since).Seconds())
}

func (w *brokerWait) close() {
	if w.cl != nil {
		w.cl.Close()
	}
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
	if err != nil {
		return nil, &brokersError{fmt.Errorf("listing where the topics start, to replay from the checkpoint: %w", err)}
	}
	for t, ps := range behind {
		for p, o := range ps {
			so, ok := starts.Lookup(t, p)
			if !ok { // kadm lists an error of the whole topic as partition -1
				so, ok = starts.Lookup(t, -1)
			}
			switch {
			case ok && errors.Is(so.Err, kerr.UnknownTopicOrPartition):
				return nil, fmt.Errorf("the brokers have no partition %s/%d, which the checkpoint needs: %w", t, p, so.Err)
			case ok && so.Err != nil:
				return nil, &brokersError{fmt.Errorf("listing where %s/%d starts, to replay from the checkpoint: %w", t, p, so.Err)}
			case !ok:
				return nil, &brokersError{fmt.Errorf("the brokers listed no start offset for %s/%d, to replay from the checkpoint", t, p)}
			case so.Offset > o:
				return nil, fmt.Errorf("the records of %s/%d after the checkpoint (from offset %d) are gone from the brokers (retention): the log starts at %d", t, p, o, so.Offset)
			}
		}
	}
	return meta.Position, nil
}
