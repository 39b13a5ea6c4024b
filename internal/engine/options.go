package engine

import (
	"fmt"

	"github.com/graphtide/graphtide/internal/core"
)

// Options configure a store. The zero value means every default.
type Options struct {
	// MemGraphBytes is the size of one MemGraph (write buffer); two alternate.
	// Default 64 MiB; allowed 64 KiB to 64 GiB. Resident memory of the write
	// path is about twice this.
	MemGraphBytes int64
	// TargetSegmentBytes is the size at which compaction cuts L1+ segments.
	// Default 8 MiB; allowed 16 KiB to 16 GiB.
	TargetSegmentBytes int64
	// SizeRatio is the capacity growth between levels. Default 10; 2 to 1000.
	SizeRatio int
	// L0CompactionTrigger is the number of L0 files that starts an L0->L1
	// compaction. Default 4; 1 to 64. L1's capacity is
	// MemGraphBytes*L0CompactionTrigger.
	L0CompactionTrigger int
	// MaxLevels counts levels including L0. Default 7; 2 to 16.
	MaxLevels int
	// InEdges keeps in-edges in step with out-edges. Fixed at creation:
	// opening an existing store with the other setting fails, unless
	// InEdgesAsStored is set.
	InEdges bool
	// InEdgesAsStored opens an existing store with the InEdges setting it
	// was created with (Store.InEdges tells which); InEdges then applies
	// only when the store is new.
	InEdgesAsStored bool
	// DisableAutoCompaction leaves compaction to CompactAll (flushes still
	// run in the background).
	DisableAutoCompaction bool
	// ReadOnly opens an existing store without writing a byte: no store is
	// created (Open fails with ErrInvalid where there is none), nothing is
	// cut or deleted, no background work runs, and Apply, Flush and
	// CompactAll fail with ErrInvalid. Read-only opens share the store's
	// lock with each other and exclude a writer (ErrLocked either way).
	// InEdges is then as stored.
	ReadOnly bool
	// KeepHistory keeps the store readable as of past sequence numbers
	// (SnapshotAt): flush and compaction keep every version above the
	// history floor, which HistorySeqs and SetHistoryFloor raise. A
	// read-only open keeps, and reads, whatever history the files hold.
	KeepHistory bool
	// HistorySeqs, with KeepHistory, keeps at least the last this many
	// sequence numbers readable (0: only SetHistoryFloor raises the floor).
	HistorySeqs uint64
	// Aggregates gives edge types their aggregates (aggregate.go) as
	// Store.SetAggregate does, each recorded in the store: a type not in
	// it keeps what the store recorded (replace if nothing). An aggregate
	// that would make a recorded accumulate type replace fails the Open
	// (*AggregateConflictError), before any is recorded.
	Aggregates map[uint16]Aggregate

	// testPauseAt makes a flush or compaction stop at a core test point
	// (crash tests only; see gt_test_point).
	testPauseAt uint32
	// testManifestRewriteBytes makes the core rewrite its MANIFEST past
	// this size instead of its default bound (tests only).
	testManifestRewriteBytes uint64
}

// Validate reports the first option out of range, saying what is allowed.
// The limits are the core's (graphtide.h's GT_MIN_* and GT_MAX_*).
func (o *Options) Validate() error {
	check := func(name string, v, lo, hi int64) error {
		if v != 0 && (v < lo || v > hi) {
			return fmt.Errorf("%w: %s must be between %d and %d (or 0 for the default), got %d", ErrInvalid, name, lo, hi, v)
		}
		return nil
	}
	if o.HistorySeqs != 0 && !o.KeepHistory {
		return fmt.Errorf("%w: HistorySeqs needs KeepHistory", ErrInvalid)
	}
	for t, a := range o.Aggregates {
		if err := a.check(t); err != nil {
			return fmt.Errorf("option Aggregates: %w", err)
		}
	}
	for _, c := range []struct {
		name      string
		v, lo, hi int64
	}{
		{"MemGraphBytes", o.MemGraphBytes, core.MinMemGraphBytes, core.MaxMemGraphBytes},
		{"TargetSegmentBytes", o.TargetSegmentBytes, core.MinTargetSegmentBytes, core.MaxTargetSegmentBytes},
		{"SizeRatio", int64(o.SizeRatio), core.MinSizeRatio, core.MaxSizeRatio},
		{"L0CompactionTrigger", int64(o.L0CompactionTrigger), core.MinL0CompactionTrigger, core.MaxL0CompactionTrigger},
		{"MaxLevels", int64(o.MaxLevels), core.MinLevels, core.MaxLevels},
	} {
		if err := check(c.name, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	return nil
}
