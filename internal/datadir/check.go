package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
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
// (engine.Check), the key dictionary (keydict.Check), that the store
// uses no more key ids than the dictionary holds, and every other file
// (Entries: the type dictionary, the time index, the writes outcome log,
// the registered analytics, the analytics' checkpoint) against what the
// store's durable state claims of it (Claims), a missing claimed file
// included. It fails only when it
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
	// The files beside the store, each against what the store's durable
	// state claims of it.
	claims, err := checkClaims(path, r)
	if err != nil {
		r.Problems = append(r.Problems, Problem{File: filepath.Join(StorePath(path), "MANIFEST"), What: err.Error()})
	}
	r.Problems = append(r.Problems, missingClaimed(path, claims)...)
	for i := range Entries {
		if e := &Entries[i]; e.verify != nil {
			e.verify(path, claims.ptr(e.Name), r)
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

// checkClaims reads what the store in path recorded of the files (nil
// when the store could not be checked: its problems are reported).
func checkClaims(path string, r *Report) (Claims, error) {
	if r.Store == nil || !r.Store.ManifestOK {
		return nil, nil
	}
	s, err := engine.Open(StorePath(path), &engine.Options{ReadOnly: true})
	if err != nil {
		return nil, nil // the store's check reports why
	}
	defer s.Close()
	raw, err := s.Annex()
	if err != nil {
		return nil, err
	}
	return decodeClaims(raw)
}
