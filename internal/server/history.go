package server

import (
	"context"
	"time"

	"github.com/graphtide/graphtide/internal/history"
)

// historyTick is how often the time index gets a sample and, with a
// retention by time, the history floor moves.
const historyTick = time.Second

// startHistory keeps the time index of the data directory (open for
// writing: datadir.Options.Times) and the history floor (keepHistory)
// until Close.
func (s *Server) startHistory(ctx context.Context, cfg Config) {
	idx := s.dir.Times
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(historyTick)
		defer t.Stop()
		for {
			s.keepHistory(idx, cfg, time.Now)
			select {
			case <-hctx.Done():
				s.keepHistory(idx, cfg, time.Now) // the last state, at the stop
				return
			case <-t.C:
			}
		}
	}()
	s.closers = append(s.closers, func() { // before the data directory closes the index
		cancel()
		<-done
	})
}

// keepHistory samples (the clock, the newest seq) into the time index and, with
// a retention by time, raises the history floor to the seq that was newest
// HistoryRetention ago (or, with HistorySeqs too, to the lower of that and
// the newest less HistorySeqs: a seq stays while either rule keeps it);
// then drops the samples no read can use any more. Errors are logged: a
// missed sample only makes the index coarser, a floor not raised only
// keeps more.
func (s *Server) keepHistory(idx *history.Index, cfg Config, clock func() time.Time) {
	st := s.dir.Store
	m, err := st.Metrics()
	if err != nil {
		return // closed
	}
	// The seq first, then the time: the sample may say less than was
	// newest at now, never more.
	now := clock()
	if err := idx.Record(now, m.LastSeq); err != nil {
		s.log.Warn("the time index missed a sample", "err", err)
	}
	if cfg.HistoryRetention <= 0 {
		_ = idx.Trim(m.OldestReadableSeq)
		return
	}
	floor, ok := idx.SeqAt(now.Add(-cfg.HistoryRetention))
	if !ok {
		return // the index does not reach back that far yet: keep everything
	}
	if cfg.HistorySeqs > 0 && m.LastSeq > cfg.HistorySeqs {
		floor = min(floor, m.LastSeq-cfg.HistorySeqs)
	} else if cfg.HistorySeqs > 0 {
		floor = 0
	}
	if err := st.SetHistoryFloor(floor); err != nil {
		s.log.Warn("the history floor was not raised", "err", err)
		return
	}
	if err := idx.Trim(floor); err != nil {
		s.log.Warn("the time index was not trimmed", "err", err)
	}
}
