package engine

import (
	"fmt"
	"math"

	"github.com/graphtide/graphtide/internal/core"
)

// Problem is one finding of Check: the file it is about, a byte offset in
// it, what is wrong (what was expected and what was found), and its kind.
type Problem struct {
	File   string
	Offset uint64
	What   string
	Kind   FindingKind
}

// FindingKind says what a Problem is about.
type FindingKind uint32

// Kinds of findings.
const (
	// Damage: a checksum, format or consistency failure.
	Damage FindingKind = FindingKind(core.FindingDamage)
	// MissingFile: a live segment file is missing.
	MissingFile FindingKind = FindingKind(core.FindingMissing)
	// UnexplainedFile: a segment file that is neither live nor provably
	// garbage (it may be data the manifest lost).
	UnexplainedFile FindingKind = FindingKind(core.FindingUnexplained)
	// TornTail (a note): the MANIFEST's last record was cut short by a crash.
	TornTail FindingKind = FindingKind(core.FindingTornTail)
	// Leftover (a note): a segment file the manifest proves garbage, or a
	// MANIFEST.tmp an interrupted rewrite left.
	Leftover FindingKind = FindingKind(core.FindingLeftover)
)

func (p Problem) String() string {
	return fmt.Sprintf("%s at byte offset %d: %s", p.File, p.Offset, p.What)
}

// CheckReport is what Check found in a store directory.
type CheckReport struct {
	// Problems stop the store from opening, or are data a read would
	// refuse. Empty when the store is sound.
	Problems []Problem
	// Notes say what a read-write Open would change that holds no data: a
	// torn manifest tail it drops, leftovers of unfinished flushes and
	// compactions it deletes.
	Notes []Problem
	// ManifestOK: the manifest read and replayed cleanly; the fields below
	// it describe the store as the manifest does.
	ManifestOK      bool
	ManifestBytes   int64
	ManifestRecords int64
	FilesChecked    int64 // segment files read whole
	BytesChecked    int64

	InEdges    bool
	LiveFiles  int64
	DurableSeq uint64
	// Vertex bounds of the durable data, per band (see Snapshot.VertexBounds).
	LowBound, HighBound uint64
	NextFile            uint64 // the manifest's next file number
}

// Check checks the store in dir without writing a byte: every manifest
// record, every segment file present (header, footer, index and every data
// chunk), each against the manifest, and the directory for files that are
// neither live nor provably garbage. It reports every problem it finds, not
// only the first. It shares the store's lock, so it fails with ErrLocked
// while the store is open for writing; it fails otherwise only when it
// cannot check at all (no store in dir).
func Check(dir string) (*CheckReport, error) { return check(dir, math.MaxUint64) }

// CheckCut is Check as if the MANIFEST held only its first manifestBytes
// bytes: what a repair that cuts it there would leave (which files would
// be live, which leftovers, what the store would hold). Nothing is cut.
func CheckCut(dir string, manifestBytes int64) (*CheckReport, error) {
	if manifestBytes < 0 {
		return nil, fmt.Errorf("%w: manifest cut must not be negative, got %d", ErrInvalid, manifestBytes)
	}
	return check(dir, uint64(manifestBytes))
}

func check(dir string, cut uint64) (*CheckReport, error) {
	r, e := core.Check(dir, cut)
	if e != nil {
		return nil, fmt.Errorf("check %s: %w", dir, fromCore(e))
	}
	conv := func(ps []core.Problem) []Problem {
		out := make([]Problem, len(ps))
		for i, p := range ps {
			out[i] = Problem{File: p.File, Offset: p.Offset, What: p.What, Kind: FindingKind(p.Kind)}
		}
		return out
	}
	return &CheckReport{
		Problems: conv(r.Problems), Notes: conv(r.Notes),
		ManifestOK: r.ManifestOK, ManifestBytes: int64(r.ManifestBytes), ManifestRecords: int64(r.ManifestRecords),
		FilesChecked: int64(r.FilesChecked), BytesChecked: int64(r.BytesChecked),
		InEdges: r.InEdges, LiveFiles: int64(r.LiveFiles), DurableSeq: r.DurableSeq,
		LowBound: r.LowBound, HighBound: r.HighBound, NextFile: r.NextFile,
	}, nil
}
