package engine

import (
	"time"

	"github.com/graphtide/graphtide/internal/core"
)

// LevelMetrics describes one level (L0 first), out- and in-edge trees
// summed, or (Metrics.VertexRecords) the vertex records' files.
type LevelMetrics struct {
	Files   int64
	Bytes   int64 // bytes on disk
	Entries int64 // stored edge versions, tombstones included (records: cells)
}

// Metrics is a point-in-time copy of the store's counters and gauges.
// Counters are cumulative since Open.
type Metrics struct {
	LastSeq                uint64        // newest committed sequence number
	DurableSeq             uint64        // newest sequence number covered by a flush
	MemGraphBytes          int64         // both MemGraphs
	MemGraphEntries        int64         // edge versions in both MemGraphs, one per edge op (in-edges are derived)
	Flushes                int64         // completed flushes
	FlushDuration          time.Duration // total time spent flushing
	FlushBytes             int64         // bytes written by flushes
	Compactions            int64         // completed compactions
	CompactionDuration     time.Duration // total time spent compacting
	CompactionBytesRead    int64
	CompactionBytesWritten int64
	WriteStalls            int64         // Apply calls that waited for a flush
	WriteStallDuration     time.Duration // total time Apply waited
	SnapshotsOpen          int64
	VertexDeletes          int64 // vertex-delete records held
	BackgroundErrors       int64
	DeferredFlushes        int64         // FlushAsync calls made while a flush ran (served after it)
	ManifestBytes          int64         // size of the MANIFEST in bytes (0 when read-only)
	ManifestRewrites       int64         // MANIFEST rewrites as a snapshot since Open
	MemGraphPoolBytes      int64         // memory of flushed MemGraphs kept for the next ones (at most one MemGraph's size)
	ApplyCPU               time.Duration // CPU time spent in Apply, the MemGraph's helper thread's share included
	// OldestReadableSeq is the oldest sequence number SnapshotAt takes:
	// the history floor with KeepHistory, else LastSeq.
	OldestReadableSeq uint64
	Levels            []LevelMetrics // index = level; the edge trees' files
	// VertexRecords is the vertex records' files (every level): not in
	// Levels, so that edge counts and read amplification are the edges'.
	VertexRecords LevelMetrics
}

// WriteAmplification is bytes written by flushes and compactions divided by
// bytes written by flushes (0 before the first flush).
func (m *Metrics) WriteAmplification() float64 {
	if m.FlushBytes == 0 {
		return 0
	}
	return float64(m.FlushBytes+m.CompactionBytesWritten) / float64(m.FlushBytes)
}

// ReadAmplification is the number of sorted runs one neighbor read may
// have to merge in one direction: MemGraphs holding data (counted as one
// when any does), L0 files and non-empty levels L1+. Levels count both
// directions' files, so with in-edges the L0 count is halved.
func (m *Metrics) ReadAmplification(inEdges bool) float64 {
	n := 0.0
	if m.MemGraphEntries > 0 {
		n++
	}
	for i, l := range m.Levels {
		switch {
		case i == 0 && inEdges:
			n += float64(l.Files) / 2
		case i == 0:
			n += float64(l.Files)
		case l.Files > 0:
			n++
		}
	}
	return n
}

// DiskBytes is the total size of live files, vertex records' included.
func (m *Metrics) DiskBytes() int64 {
	b := m.VertexRecords.Bytes
	for _, l := range m.Levels {
		b += l.Bytes
	}
	return b
}

// Files is the number of live files, vertex records' included.
func (m *Metrics) Files() int64 {
	n := m.VertexRecords.Files
	for _, l := range m.Levels {
		n += l.Files
	}
	return n
}

// Metrics returns the store's metrics. It never blocks on background work.
func (s *Store) Metrics() (Metrics, error) {
	var c core.Metrics
	var files []core.FileInfo
	err := s.with("metrics", func(cs *core.Store) *core.Error {
		c = cs.Metrics()
		files = cs.Files()
		return nil
	})
	if err != nil {
		return Metrics{}, err
	}
	m := Metrics{
		LastSeq:                c.LastSeq,
		DurableSeq:             c.DurableSeq,
		MemGraphBytes:          int64(c.MemGraphBytes),
		MemGraphEntries:        int64(c.MemGraphEntries),
		Flushes:                int64(c.Flushes),
		FlushDuration:          time.Duration(c.FlushNanos),
		FlushBytes:             int64(c.FlushBytes),
		Compactions:            int64(c.Compactions),
		CompactionDuration:     time.Duration(c.CompactionNanos),
		CompactionBytesRead:    int64(c.CompactionRead),
		CompactionBytesWritten: int64(c.CompactionWritten),
		WriteStalls:            int64(c.Stalls),
		WriteStallDuration:     time.Duration(c.StallNanos),
		SnapshotsOpen:          int64(c.SnapshotsOpen),
		VertexDeletes:          int64(c.VertexDeletes),
		BackgroundErrors:       int64(c.BackgroundErrors),
		DeferredFlushes:        int64(c.DeferredFlushes),
		ManifestBytes:          int64(c.ManifestBytes),
		ManifestRewrites:       int64(c.ManifestRewrites),
		MemGraphPoolBytes:      int64(c.MemGraphPoolBytes),
		ApplyCPU:               time.Duration(c.ApplyCPUNanos),
		OldestReadableSeq:      c.OldestReadableSeq,
	}
	// The levels from the files (one Version's), apart by tree: the core
	// sums every tree in its level figures.
	m.Levels = make([]LevelMetrics, len(c.Levels))
	for _, f := range files {
		l := &m.VertexRecords
		if Direction(f.Dir) != VertexRecords {
			if int(f.Level) >= len(m.Levels) {
				m.Levels = append(m.Levels, make([]LevelMetrics, int(f.Level)+1-len(m.Levels))...)
			}
			l = &m.Levels[f.Level]
		}
		l.Files++
		l.Bytes += int64(f.Bytes)
		l.Entries += int64(f.Entries)
	}
	return m, nil
}
