package engine

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by calls on a closed store, or on a store whose
	// background flush or compaction failed (the cause is in the message).
	ErrClosed = errors.New("engine: store is closed")
	// ErrReleased is returned by calls on a released snapshot.
	ErrReleased = errors.New("engine: snapshot is released")
	// ErrLocked is returned by Open when the store directory is open in
	// another Store, in this process or another (serve holds its store).
	ErrLocked = errors.New("engine: store is locked by another open")
	// ErrInvalid wraps every rejected argument or option.
	ErrInvalid = errors.New("engine: invalid argument")

	errBuffer = errors.New("engine: buffer too small")
)

// CorruptionError reports a checksum or format failure in a store file.
type CorruptionError struct {
	File   string // path of the corrupt file
	Offset uint64 // byte offset of the corrupt block or record
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("engine: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// SeqError reports a read as of a sequence number the store cannot read:
// above the newest (Seq > Newest), or below the oldest readable one (the
// history retention let it go, or the store keeps no history). It wraps
// ErrInvalid.
type SeqError struct {
	Seq, Oldest, Newest uint64
	Msg                 string // the core's words
}

func (e *SeqError) Error() string { return "engine: " + e.Msg }

func (e *SeqError) Unwrap() error { return ErrInvalid }

// IOError reports an operating-system failure on a store file.
type IOError struct {
	File   string
	Reason string
}

func (e *IOError) Error() string {
	if e.File == "" {
		return "engine: i/o error: " + e.Reason
	}
	return fmt.Sprintf("engine: i/o error on %s: %s", e.File, e.Reason)
}
