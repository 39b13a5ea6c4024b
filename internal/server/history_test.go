package server

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
)

// TestHistoryFloorFollowsTheRetention ticks keepHistory once a second of
// a clock it drives, a batch applied before each tick: the oldest readable
// seq is the one that was newest HistoryRetention ago, or with
// HistorySeqs the lower of that and the newest less HistorySeqs; and the
// time index maps each retained time to its seq.
func TestHistoryFloorFollowsTheRetention(t *testing.T) {
	for _, c := range []struct {
		name string
		seqs uint64
	}{{"by time", 0}, {"by time or seqs", 25}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d, err := datadir.Open(dir, datadir.Options{Store: engine.Options{KeepHistory: true}, Create: true})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			idx, err := history.Open(filepath.Join(dir, history.FileName), 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			s := &Server{dir: d, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			cfg := Config{HistoryRetention: 10 * time.Second, HistorySeqs: c.seqs}
			t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
			newest := map[int]uint64{} // tick -> the seq newest at it
			for tick := 0; tick < 60; tick++ {
				var b engine.Batch
				for range 1 + tick%3 { // several seqs a tick
					b.Reset()
					b.Insert(uint64(tick), uint64(tick+1))
					if _, err := d.Store.Apply(&b); err != nil {
						t.Fatal(err)
					}
				}
				if tick%7 == 0 {
					if err := d.Store.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				now := t0.Add(time.Duration(tick) * time.Second)
				s.keepHistory(idx, cfg, func() time.Time { return now })
				m, _ := d.Store.Metrics()
				newest[tick] = m.LastSeq
				want := uint64(0)
				if tick >= 10 {
					want = newest[tick-10]
				}
				if c.seqs > 0 {
					bySeqs := uint64(0)
					if m.LastSeq > c.seqs {
						bySeqs = m.LastSeq - c.seqs
					}
					want = min(want, bySeqs)
				}
				if m.OldestReadableSeq != want {
					t.Fatalf("tick %d: oldest readable seq %d, want %d (newest %d)", tick, m.OldestReadableSeq, want, m.LastSeq)
				}
				for back := 0; back <= min(tick, 10); back++ {
					if seq, ok := idx.SeqAt(now.Add(-time.Duration(back) * time.Second)); !ok || seq != newest[tick-back] {
						t.Fatalf("tick %d: seq at %d s ago is %d (%v), want %d", tick, back, seq, ok, newest[tick-back])
					}
				}
				if sn, err := d.Store.SnapshotAt(m.OldestReadableSeq); err != nil {
					t.Fatalf("tick %d: a snapshot at the oldest readable seq: %v", tick, err)
				} else {
					sn.Release()
				}
			}
			if idx.Len() > 30 {
				t.Errorf("the time index holds %d samples for a retention of 10 one a second: it is not trimmed", idx.Len())
			}
		})
	}
}
