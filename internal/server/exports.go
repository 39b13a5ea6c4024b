package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/export"
	"github.com/graphtide/graphtide/internal/export/exportcli"
	"github.com/graphtide/graphtide/internal/ingest"
)

// exportSnapshot is the snapshot an export of this instance writes
// (export.Snapshotter), with the Kafka position it is as of.
//
// Without a cut: the newest batch applied, paired with the position after
// it. At a cut: in partitioned mode ingestion is held at the cut (records
// from its offsets on wait), so that a batch ends exactly there; the
// export waits for the instance to reach it, takes the snapshot of that
// batch and releases the hold. An instance past the cut (it passed it
// before the export asked, or it is not partitioned and batches went on)
// reads the batch that ended at the cut as of its seq, which needs
// history (--history-seqs) to keep it; else the export is refused,
// saying what to do.
func (s *Server) exportSnapshot(ctx context.Context, cutOffs []export.Offset) (export.Source, []export.Offset, func(), error) {
	in := s.in
	if in == nil {
		return export.Source{}, nil, nil, errors.New("serve is starting: no ingestion to export yet")
	}
	if cutOffs == nil {
		sn, pos, err := s.pairedSnapshot(ctx)
		return exportSource(s, sn, pos, err)
	}
	cut := ingest.Position{}
	for _, o := range cutOffs {
		cut.Set(o.Topic, o.Partition, o.Offset)
	}
	// The last export's hold ends at the poll loop's next poll (within
	// 200 ms of its release): until then this one waits.
	err := in.HoldAt(cut)
	for errors.Is(err, ingest.ErrHeld) {
		select {
		case <-ctx.Done():
			return export.Source{}, nil, nil, fmt.Errorf("export: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
		err = in.HoldAt(cut)
	}
	if err == nil {
		defer in.Release() // once the snapshot is taken: it keeps what it saw
	}
	for {
		seq, pos, st, err := in.StandAt(cut)
		if err != nil {
			return export.Source{}, nil, nil, fmt.Errorf("export: %w", err)
		}
		switch st {
		case ingest.AtCut:
			sn, err := s.dir.Store.Snapshot()
			if err != nil || sn.Seq() == seq {
				return exportSource(s, sn, pos, err)
			}
			sn.Release() // a batch came since: look again
			continue
		case ingest.PastCut:
			seq, at, ok := in.BatchEndingAt(cut)
			if !ok {
				return export.Source{}, nil, nil, fmt.Errorf("export: this instance is past the cut (at %s) and no batch it kept ended there: ask for a cut it has not reached yet (graphtide export cut), which it waits for", fmtOffsets(pos))
			}
			sn, err := s.dir.Store.SnapshotAt(seq)
			if err != nil {
				err = fmt.Errorf("export: the batch that ended at the cut (seq %d) is no longer readable (%w): keep history (--history-seqs) to export a cut this instance passed", seq, err)
			}
			return exportSource(s, sn, at, err)
		}
		select {
		case <-ctx.Done():
			return export.Source{}, nil, nil, fmt.Errorf("export: the instance did not reach the cut in time (it is at %s): %w", fmtOffsets(pos), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pairedSnapshot takes the newest snapshot and pairs it with the position
// after the batch of its seq: a batch the store applied but whose position
// the ingester has not published yet makes it try again.
func (s *Server) pairedSnapshot(ctx context.Context) (*engine.Snapshot, ingest.Position, error) {
	for {
		sn, err := s.dir.Store.Snapshot()
		if err != nil {
			return nil, nil, err
		}
		seq, pos := s.in.AppliedAt()
		if sn.Seq() == seq {
			return sn, pos, nil
		}
		sn.Release()
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// exportSource is sn, at pos, as an export's source (err: none).
func exportSource(s *Server, sn *engine.Snapshot, pos ingest.Position, err error) (export.Source, []export.Offset, func(), error) {
	if err != nil {
		return export.Source{}, nil, nil, err
	}
	return export.SourceOf(s.dir, sn), exportcli.Offsets(pos), sn.Release, nil
}

func fmtOffsets(p ingest.Position) string { return export.FormatOffsets(exportcli.Offsets(p)) }
