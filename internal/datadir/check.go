package datadir

import (
	"errors"
	"fmt"
	"os"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/writes"
)

// Problem is one finding of Check: the file it is about, a byte offset in
// it, and what is wrong.
type Problem struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	What   string `json:"what"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s at byte offset %d: %s", p.File, p.Offset, p.What)
}

// Report is what Check found in a data directory.
type Report struct {
	Dir string
	// Store is the store's own check (nil when it could not be checked at
	// all; the reason is then among Problems).
	Store *engine.CheckReport
	// Keys is the key dictionary's check; nil when there is no keys.dict.
	Keys *keydict.Report
	// Problems: every problem of the store, of the dictionary and between
	// them. Empty when the data directory is sound.
	Problems []Problem
	// Notes: what a read-write open would change that holds no data (a torn
	// tail it drops, leftovers it deletes).
	Notes []Problem
}

// OK reports whether Check found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check checks the data directory at path without writing a byte: the store
// (engine.Check), the key dictionary (keydict.Check), the type dictionary
// (typedict.OpenReadOnly, which only reads), and that the store
// uses no more key ids than the dictionary holds. It fails only when it
// cannot check at all: no data directory, or a writer has it open
// (engine.ErrLocked).
func Check(path string) (*Report, error) {
	if err := requireStore(path); err != nil {
		return nil, err
	}
	r := &Report{Dir: path}
	sr, err := engine.Check(StorePath(path))
	switch {
	case errors.Is(err, engine.ErrLocked):
		return nil, storeOpenError(path, err)
	case err != nil:
		r.Problems = append(r.Problems, Problem{File: StorePath(path), What: err.Error()})
	default:
		r.Store = sr
		for _, p := range sr.Problems {
			r.Problems = append(r.Problems, Problem{File: p.File, Offset: int64(p.Offset), What: p.What})
		}
		for _, p := range sr.Notes {
			r.Notes = append(r.Notes, Problem{File: p.File, Offset: int64(p.Offset), What: p.What})
		}
	}
	kp := KeysPath(path)
	if _, err := os.Stat(kp); err == nil {
		kr, err := keydict.Check(kp)
		if err != nil {
			return nil, err
		}
		r.Keys = kr
		for _, p := range kr.Problems {
			r.Problems = append(r.Problems, Problem{File: kp, Offset: p.Offset, What: p.Reason})
		}
		if t := kr.Torn; t != nil {
			r.Notes = append(r.Notes, Problem{File: kp, Offset: t.Offset,
				What: fmt.Sprintf("torn tail (%s): the last %d bytes were cut short by a crash before their keys were synced; the next read-write open drops them", t.Kind, t.Length)})
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	// The type dictionary: a damaged one stops serve from opening (its
	// names are how records and queries reach typed edges).
	if _, err := typedict.OpenReadOnly(TypesPath(path)); err != nil {
		p := Problem{File: TypesPath(path), What: err.Error()}
		var ce *typedict.CorruptError
		if errors.As(err, &ce) {
			p.Offset, p.What = ce.Offset, ce.What
		}
		r.Problems = append(r.Problems, p)
	}
	// The writes topic's outcome log: a damaged one stops serve from
	// opening (it decides how writes replay).
	if _, err := writes.OpenLog(WritesLogPath(path), true); err != nil {
		p := Problem{File: WritesLogPath(path), What: err.Error()}
		var ce *durable.CorruptError
		if errors.As(err, &ce) {
			p.Offset, p.What = ce.Offset, ce.What
		}
		r.Problems = append(r.Problems, p)
	}
	// The analytics' checkpoint holds no data (everything in it is
	// derived again from the store): damage is a note, since serve then
	// ignores it and recomputes.
	if _, err := checkpoint.Verify(CheckpointPath(path)); err != nil && !errors.Is(err, checkpoint.ErrNotExist) {
		var ce *checkpoint.CorruptError
		if errors.As(err, &ce) {
			r.Notes = append(r.Notes, Problem{File: ce.File, Offset: ce.Offset,
				What: ce.What + "; serve ignores this checkpoint and computes the analytics from the store"})
		} else {
			r.Notes = append(r.Notes, Problem{File: CheckpointPath(path), What: err.Error()})
		}
	}
	if r.Store != nil && r.Store.ManifestOK {
		have := uint64(0)
		if r.Keys != nil {
			have = uint64(r.Keys.IDs)
		}
		if used := keyIDs(r.Store.HighBound); used > have {
			e := &KeyBoundError{Dir: path, StoreKeyIDs: used, DictIDs: have}
			off := int64(0)
			if r.Keys != nil {
				off = r.Keys.Size
			}
			r.Problems = append(r.Problems, Problem{File: kp, Offset: off, What: e.Error()})
		}
		if r.Keys != nil && r.Keys.Numbers > 0 && r.Store.LowBound > keydict.MapFrom {
			e := &MixedIDsError{Dir: path, Low: r.Store.LowBound, Numbers: r.Keys.Numbers}
			r.Problems = append(r.Problems, Problem{File: kp, Offset: 0, What: e.Error()})
		}
	}
	return r, nil
}
