package keydict

import (
	"fmt"
)

// Problem is one problem Check found in a dictionary file.
type Problem struct {
	Offset int64  // byte offset of the damaged record, or 0 for the file header
	Reason string // what was expected and what was found
}

// Report is what Check found in a dictionary file.
type Report struct {
	Path string
	Size int64 // bytes in the file
	// IDs is the number of records whose framing is intact (before a torn
	// tail or a framing loss): ids [KeyBase, KeyBase+IDs) are taken by a
	// key, a retired-id marker or a damaged record.
	IDs     int
	Keys    int // records holding a valid key (a duplicate's later record is not counted)
	Retired int // well-formed retired-id markers
	Numbers int // mapped numbers among Keys (see NumID)
	// Torn is the torn tail, or nil. It is not a problem: no Sync returned
	// for it, and a read-write Open drops it.
	Torn *Tail
	// Unchecked is the number of bytes from a record header that could not
	// be trusted (see Problems) to the end of the file: where records start
	// in them is unknown, so they were not checked. 0: none.
	Unchecked int64
	// Problems lists every problem found, in file order. Open and
	// OpenReadOnly refuse the file exactly when there is one.
	Problems []Problem
}

// OK reports whether Check found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check reads the dictionary file at path and reports every problem it can
// find, with its byte offset, changing nothing: it opens the file read-only
// and takes the shared lock (so it fails, with an error wrapping ErrInUse,
// while a read-write Open holds the file). Past a record whose header
// checksum holds, the scan goes on at the next record whatever is wrong with
// the key; at a record header that cannot be trusted it stops and reports how
// many bytes it could not check. The error is only for a missing file, a
// lock held elsewhere or a failed read.
func Check(path string) (*Report, error) {
	f, err := openLocked(path, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keydict: check: %w", err)
	}
	c, err := scan(f, fi.Size(), false)
	if err != nil {
		return nil, fmt.Errorf("keydict: check %s: %w", path, err)
	}
	r := &Report{Path: path, Size: c.size, IDs: len(c.keys), Keys: len(c.ids), Retired: c.retired, Numbers: c.numbers, Torn: c.torn}
	for _, fd := range c.findings {
		reason := fd.reason
		if fd.kind == findFramingLost {
			r.Unchecked = fd.span
			reason += fmt.Sprintf("; the record framing is lost here: the %d bytes from here to the end of the file were not checked", fd.span)
		}
		r.Problems = append(r.Problems, Problem{Offset: fd.off, Reason: reason})
	}
	return r, nil
}
