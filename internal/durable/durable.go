// Package durable makes files and directory entries survive a crash: the
// one place graphtide fsyncs a directory, and an atomic file replace.
//
// What it promises: after SyncDir returns nil, the entries created,
// renamed or removed in the directory before the call are on disk. After
// WriteFile returns nil, path holds data, durably; at every moment before,
// path holds either its old content (or nothing) or data, never a part.
package durable

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// SyncDir fsyncs the directory dir.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// WriteFile replaces path with data atomically: it writes a temporary file
// beside path, fsyncs it, renames it over path and fsyncs the directory.
// On an error the temporary file is removed and path is as it was (unless
// the error is the directory's fsync: path may then be either).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFileFrom(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileFrom is WriteFile with the content written by write (which
// may stream it: a copy of another file, say).
func WriteFileFrom(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// CorruptError is a file graphtide wrote that does not read back as
// written, or that is missing while the store's records prove it existed:
// which kind of file, which file, the byte offset of the damage (0: the
// file as a whole) and what is wrong. Every file beside the store reports
// damage with it (the type dictionary, the time index, the writes outcome
// log, the registered analytics, the analytics' checkpoint, and the data
// directory for a missing file), so that one check (errors.As) reads any.
type CorruptError struct {
	Kind   string // "typedict", "history", "writes", "registered analytics", "checkpoint", "datadir"
	File   string
	Offset int64
	What   string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: %s: byte offset %d: %s", e.Kind, e.File, e.Offset, e.What)
}
