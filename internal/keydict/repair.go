package keydict

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/graphtide/graphtide/internal/durable"
)

// RepairPlan is what a repair of a dictionary file would change. It holds
// the file exclusively locked from PlanRepair until Apply or Close, so the
// file cannot change in between and nothing else has it open.
//
// Lifecycle:
//
//	PlanRepair ──► RepairPlan ──Apply──► backup written, file replaced, lock released
//	                    └──────Close──► nothing written, lock released
type RepairPlan struct {
	Path string
	// Changes lists what Apply would change, one human-readable line each,
	// in file order. Empty: the file needs no repair and Apply does nothing.
	Changes []string
	// The dictionary after the repair: ids taken, keys among them, retired
	// ids among them.
	IDs, Keys, Retired int

	file     *os.File // the original, exclusively locked; nil once spent
	orig     *contents
	rewrite  bool      // rewrite the file header
	retire   []finding // records that become retired-id markers, in file order
	pad      uint64    // retired-id markers appended after the kept records
	keptEnd  int64     // the kept records end here in the original
	origSize int64
}

// PlanRepair scans the dictionary file at path and plans a repair that keeps
// every intact key at its id and never lets an id that was taken go to
// another key:
//
//   - a record whose header checksum holds but whose key is damaged, invalid
//     or a duplicate of an earlier key becomes a retired-id marker (the id
//     stays taken; the ids after it keep their keys);
//   - at a record header that cannot be trusted, the file is cut: everything
//     from there to the end is dropped, as the scan cannot frame it;
//   - a torn tail is cut;
//   - a file header damaged in one field is rewritten;
//   - finally, if fewer than minIDs ids are then taken, retired-id markers
//     are appended up to minIDs. minIDs is the number of key ids the graph
//     store is known to use (its key-id bound minus KeyBase; 0: none), so no
//     id the store uses is ever given to a new key.
//
// A file that is missing, of another format, or whose header is not
// recognisable is not repaired (the error says why). PlanRepair takes the
// exclusive lock (failing with an error wrapping ErrInUse if anything else
// has the file open) and keeps it until Apply or Close.
func PlanRepair(path string, minIDs uint64) (*RepairPlan, error) {
	if minIDs > maxIDs {
		return nil, fmt.Errorf("keydict: repair %s: %d key ids asked for, more than the %d in [KeyBase, MaxVertex]", path, minIDs, maxIDs)
	}
	f, err := openLocked(path, true)
	if err != nil {
		return nil, err
	}
	p, err := plan(f, path, minIDs)
	if err != nil {
		f.Close()
		return nil, err
	}
	return p, nil
}

func plan(f *os.File, path string, minIDs uint64) (*RepairPlan, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keydict: repair: %w", err)
	}
	c, err := scan(f, fi.Size(), false)
	if err != nil {
		return nil, fmt.Errorf("keydict: repair %s: %w", path, err)
	}
	p := &RepairPlan{Path: path, file: f, orig: c, keptEnd: c.end, origSize: c.size, Keys: len(c.ids), Retired: c.retired}
	line := func(format string, args ...any) { p.Changes = append(p.Changes, fmt.Sprintf(format, args...)) }
	for _, fd := range c.findings {
		switch fd.kind {
		case findHeaderFatal:
			return nil, fmt.Errorf("keydict: cannot repair: %w", findingError(path, fd))
		case findHeaderBad:
			p.rewrite = true
			line("byte offset 0: %s: rewrite the file header", fd.reason)
		case findRetire:
			p.retire = append(p.retire, fd)
			p.Retired++
			what := "its key is lost"
			if fd.dupOf != 0 {
				what = fmt.Sprintf("the key keeps id %d (KeyBase+%d)", fd.dupOf, fd.dupOf-KeyBase)
			}
			line("byte offset %d, id %d (KeyBase+%d): %s: make it a retired id (the id stays taken; %s)",
				fd.off, KeyBase+fd.index, fd.index, fd.reason, what)
		case findFramingLost:
			line("byte offset %d: %s: the record framing is lost here: cut the file at byte offset %d, dropping the %d bytes from there to the end of the file",
				fd.off, fd.reason, fd.off, fd.span)
		}
	}
	if t := c.torn; t != nil {
		line("byte offset %d: torn tail (%s), %d bytes: cut the file at byte offset %d (a read-write open would drop it too)",
			t.Offset, t.Kind, t.Length, t.Offset)
	}
	ids := uint64(len(c.keys))
	if minIDs > ids {
		p.pad = minIDs - ids
		p.Retired += int(p.pad)
		line("append %d retired ids, %d (KeyBase+%d) to %d (KeyBase+%d): the store uses %d key ids, the dictionary holds %d",
			p.pad, KeyBase+ids, ids, KeyBase+minIDs-1, minIDs-1, minIDs, ids)
		ids = minIDs
	}
	p.IDs = int(ids)
	return p, nil
}

// String is the plan as text for an operator: what Apply would change, or
// that nothing needs repair.
func (p *RepairPlan) String() string {
	var b strings.Builder
	if len(p.Changes) == 0 {
		fmt.Fprintf(&b, "%s: nothing to repair (%d ids: %d keys, %d retired)\n", p.Path, p.IDs, p.Keys, p.Retired)
		return b.String()
	}
	plural := "s"
	if len(p.Changes) == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "%s: %d change%s:\n", p.Path, len(p.Changes), plural)
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	fmt.Fprintf(&b, "after the repair: %d ids: %d keys, %d retired\n", p.IDs, p.Keys, p.Retired)
	return b.String()
}

// Close releases the file without repairing it. Closing a plan that was
// applied or closed does nothing.
func (p *RepairPlan) Close() error {
	if p.file == nil {
		return nil
	}
	err := p.file.Close()
	p.file, p.orig = nil, nil
	if err != nil {
		return fmt.Errorf("keydict: repair %s: %w", p.Path, err)
	}
	return nil
}

// Apply carries out the plan: it copies the original file into backupDir
// (creating the directory; the copy has the file's base name, is fsynced,
// and is never written over an earlier one), then writes the repaired file
// beside the original and renames it into place (fsyncing the file and the
// directory), after checking that it reads back as planned. A crash leaves
// either the original or the repaired file. If the plan has no changes,
// Apply writes nothing. Either way it releases the lock; a plan is applied
// at most once. If Apply fails after the backup, the backup stays: plan
// again and give another backupDir.
func (p *RepairPlan) Apply(backupDir string) (err error) {
	if p.file == nil {
		return fmt.Errorf("keydict: repair %s: the plan was already applied or closed", p.Path)
	}
	defer func() {
		if cerr := p.Close(); err == nil {
			err = cerr
		}
	}()
	if len(p.Changes) == 0 {
		return nil
	}
	if backupDir == "" {
		return fmt.Errorf("keydict: repair %s: no backup directory", p.Path)
	}
	if err := backup(p.file, p.origSize, backupDir, filepath.Base(p.Path)); err != nil {
		return fmt.Errorf("keydict: repair %s: %w", p.Path, err)
	}
	f, err := writeNew(p.Path, p.write, true)
	if err != nil {
		return fmt.Errorf("keydict: repair %s: %w", p.Path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("keydict: repair %s: %w", p.Path, err)
	}
	return nil
}

// write writes the repaired file to f, which is empty, and checks it.
func (p *RepairPlan) write(f *os.File) error {
	w := bufio.NewWriterSize(f, 1<<20)
	src := io.NewSectionReader(p.file, 0, p.origSize)
	copyTo := func(from, to int64) error {
		if _, err := io.Copy(w, io.NewSectionReader(src, from, to-from)); err != nil {
			return fmt.Errorf("copy bytes %d to %d: %w", from, to, err)
		}
		return nil
	}
	// The header is the only valid one; when it was intact it is what the
	// file holds.
	if _, err := w.Write(fileHeader()); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	pos := int64(fileHeaderSize)
	marker := appendRecord(nil, "")
	for _, fd := range p.retire {
		// INVARIANT: a retired record is replaced by exactly one marker,
		// so every later record keeps its index, that is its id.
		if err := copyTo(pos, fd.off); err != nil {
			return err
		}
		if _, err := w.Write(marker); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		pos = fd.off + fd.span
	}
	if err := copyTo(pos, p.keptEnd); err != nil {
		return err
	}
	for range p.pad {
		if _, err := w.Write(marker); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return p.verify(f)
}

// verify checks that the repaired file in f reads back without problems, as
// the plan says, with every key of the original at its original id.
func (p *RepairPlan) verify(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("check the repaired file: %w", err)
	}
	c, err := scan(f, fi.Size(), false)
	if err != nil {
		return fmt.Errorf("check the repaired file: %w", err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("the repaired file does not read back as planned (nothing was replaced): "+format, args...)
	}
	switch {
	case len(c.findings) > 0:
		return bad("byte offset %d: %s", c.findings[0].off, c.findings[0].reason)
	case c.torn != nil:
		return bad("torn tail at byte offset %d", c.torn.Offset)
	case len(c.keys) != p.IDs || len(c.ids) != p.Keys || c.retired != p.Retired:
		return bad("%d ids, %d keys, %d retired; planned %d, %d, %d", len(c.keys), len(c.ids), c.retired, p.IDs, p.Keys, p.Retired)
	}
	for k, id := range c.ids {
		if p.orig.ids[k] != id {
			return bad("id %d (KeyBase+%d) holds a key that had id %d", id, id-KeyBase, p.orig.ids[k])
		}
	}
	return nil
}

// backup copies the first size bytes of src to dir/name, creating dir, and
// makes the copy durable. It never overwrites a file.
func backup(src io.ReaderAt, size int64, dir, name string) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	dst := filepath.Join(dir, name)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("backup: %s exists already; not writing over an earlier backup", dst)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("backup: %w", cerr)
		}
	}()
	n, err := io.Copy(out, io.NewSectionReader(src, 0, size))
	if err != nil {
		return fmt.Errorf("backup to %s: %w", dst, err)
	}
	if n != size {
		return fmt.Errorf("backup to %s: copied %d of %d bytes", dst, n, size)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("backup: fsync %s: %w", dst, err)
	}
	// INVARIANT: the backup is durable, name and all, before the original
	// is replaced.
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
