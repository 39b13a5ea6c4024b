package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/graphtide/graphtide/internal/engine"
)

// A data directory, as serve lays it out and load, inspect and compact use
// it:
//
//	<dir>/store      the engine's store (segments, MANIFEST, LOCK)
//	<dir>/keys.dict  the string key dictionary (internal/keydict)

func storePath(dir string) string { return filepath.Join(dir, "store") }
func keysPath(dir string) string  { return filepath.Join(dir, "keys.dict") }

// requireStore returns an error saying what to do when dir holds no store:
// inspect and compact must not create an empty one by opening it.
func requireStore(dir string) error {
	if _, err := os.Stat(filepath.Join(storePath(dir), "MANIFEST")); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no store in --dir %s (%s has no MANIFEST): create one with 'graphtide load --dir %s FILE...' or 'graphtide serve --dir %s'",
				dir, storePath(dir), dir, dir)
		}
		return err
	}
	return nil
}

// openStore opens the store of the data directory dir with opts. inEdges nil
// means "as the store was created" (and no in-edges for a new store);
// otherwise it must match an existing store. The store directory is locked
// by flock, so a second open (serve running on dir) fails: the error says
// what to do.
func openStore(dir string, opts engine.Options, inEdges *bool) (*engine.Store, error) {
	path := storePath(dir)
	opts.InEdges = inEdges != nil && *inEdges
	opts.InEdgesAsStored = inEdges == nil
	s, err := engine.Open(path, &opts)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, engine.ErrLocked):
		return nil, fmt.Errorf("store %s is in use by another process (is graphtide serve running on --dir %s?): stop serve first, or use its HTTP API while it runs", path, dir)
	case inEdges != nil && errors.Is(err, engine.ErrInvalid) && strings.Contains(err.Error(), "in_edges"):
		have := "without"
		if !*inEdges {
			have = "with"
		}
		return nil, fmt.Errorf("--in-edges=%v does not match the store %s, which was created %s in-edges (fixed at creation): leave out --in-edges", *inEdges, path, have)
	}
	return nil, err
}

// writeLevels prints one row per level in use (files, bytes, edge versions,
// tombstones included) and a total row.
func writeLevels(w io.Writer, m engine.Metrics) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\tfiles\tbytes\tedge versions\t")
	var files, bytes, entries int64
	for i, l := range m.Levels {
		files, bytes, entries = files+l.Files, bytes+l.Bytes, entries+l.Entries
		if l.Files == 0 && i > 0 {
			continue
		}
		fmt.Fprintf(tw, "L%d\t%d\t%d\t%d\t\n", i, l.Files, l.Bytes, l.Entries)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t\n", files, bytes, entries)
	return tw.Flush()
}
