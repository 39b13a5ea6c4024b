package datadir

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

// Compact is 'graphtide compact': it opens the data directory dir (with
// automatic compaction off, so that the layout printed first is the one
// it starts from), compacts the store fully into its deepest level
// (Store.CompactAll) and writes the levels before and after to out.
func Compact(dir string, out io.Writer) (err error) {
	d, err := Open(dir, Options{Store: engine.Options{DisableAutoCompaction: true}})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	store := d.Store
	before, err := store.Metrics()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "store %s before:\n", StorePath(dir))
	if err := WriteLevels(out, before); err != nil {
		return err
	}
	start := time.Now()
	if err := store.CompactAll(); err != nil {
		return err
	}
	took := time.Since(start)
	after, err := store.Metrics()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after (compacted in %.3f s, %d bytes read, %d written):\n", took.Seconds(), after.CompactionBytesRead, after.CompactionBytesWritten)
	return WriteLevels(out, after)
}

// WriteLevels prints one row per level in use (files, bytes, edge versions,
// tombstones included) and a total row.
func WriteLevels(w io.Writer, m engine.Metrics) error {
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
