package keydict

// File handling shared by Open, OpenReadOnly, Check and repair: locking and
// the atomic creation of a whole file.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphtide/graphtide/internal/durable"
)

// errWouldBlock is returned by lockFile when another open holds a
// conflicting lock.
var errWouldBlock = errors.New("lock held by another open")

// lock takes the lock of f, which was opened from path, and closes f if it
// cannot. A conflicting lock gives an error wrapping ErrInUse.
func lock(f *os.File, path string, exclusive bool) error {
	err := lockFile(f, exclusive)
	if err == nil {
		return nil
	}
	f.Close()
	if errors.Is(err, errWouldBlock) {
		return fmt.Errorf("%w: %s is held open by another reader or writer, in this process or another", ErrInUse, path)
	}
	return fmt.Errorf("keydict: lock %s: %w", path, err)
}

// openLocked opens the existing file at path, read-write with an exclusive
// lock or read-only with a shared one.
func openLocked(path string, exclusive bool) (*os.File, error) {
	flag := os.O_RDONLY
	if exclusive {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("keydict: open: %w", err)
	}
	if err := lock(f, path, exclusive); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (mode %s)", path, fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("keydict: open: %w", err)
	}
	return f, nil
}

// errRaced is returned by writeNew when, asked not to replace path, it
// finds that path exists.
var errRaced = errors.New("keydict: file created concurrently")

// writeNew writes a complete file to path atomically: it writes path+".tmp"
// with fill, fsyncs it, renames it to path and fsyncs the directory. It
// returns the new file, open read-write and exclusively locked, its offset
// at the end of what fill wrote. Unless replace is set, it returns errRaced
// and leaves path alone if path exists.
//
// Whoever writes path+".tmp" holds its exclusive lock from before it
// truncates it until it is renamed or removed, so two writers never write or
// rename the same temporary file.
func writeNew(path string, fill func(f *os.File) error, replace bool) (_ *os.File, err error) {
	tmp := path + ".tmp"
	// No O_TRUNC: the file may be another writer's, locked; truncate only
	// once the lock is ours.
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("keydict: create %s: %w", tmp, err)
	}
	if err := lock(f, tmp, true); err != nil {
		return nil, err
	}
	renamed := false
	defer func() {
		if err != nil {
			if !renamed {
				os.Remove(tmp) // ours: we hold its lock
			}
			f.Close()
		}
	}()
	if err := f.Truncate(0); err != nil {
		return nil, fmt.Errorf("keydict: truncate %s: %w", tmp, err)
	}
	if err := fill(f); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("keydict: fsync %s: %w", tmp, err)
	}
	if !replace {
		// Another writer can only have created path through its own
		// temporary file, which it renamed before we could lock ours.
		if _, err := os.Lstat(path); err == nil {
			return nil, errRaced
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("keydict: rename %s to %s: %w", tmp, path, err)
	}
	renamed = true
	// INVARIANT: path names either its old state (nothing, or the file a
	// repair replaces) or the complete, fsynced new file, never a partial
	// one; after durable.SyncDir, the new file, durably. Only then is it returned.
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("keydict: %s: %w", path, err)
	}
	return f, nil
}
