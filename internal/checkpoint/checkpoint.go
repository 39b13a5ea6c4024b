// Package checkpoint writes and reads checkpoint files: derived state (the
// analytics' topology and results) saved so that a restart can resume from
// it instead of recomputing.
//
// A file is a magic number and a sequence of named sections, each framed
// by its length and checked by a CRC-32C (Castagnoli) of its name, payload
// and length, ended by an end section that counts them. What it promises:
//
//   - A writer writes to a temporary file beside the target, syncs it,
//     renames it into place and syncs the directory: a reader finds the old
//     file or the new one, whole, never a mix (Commit).
//   - A reader never hands out bytes of a section whose length runs past
//     the file, never allocates more than the section holds (lengths inside
//     a section are checked against what is left of it), and reports every
//     problem as a *CorruptError naming the file, the byte offset and what
//     is wrong. A section's CRC is checked when its reader is done with it:
//     a caller builds its state from a section and uses it only once
//     Section returned nil and Close found the end section.
//   - Nothing here deletes or repairs a file: a damaged checkpoint is
//     reported, and the caller recomputes (a checkpoint holds nothing that
//     cannot be derived again).
package checkpoint

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/graphtide/graphtide/internal/durable"
)

// magic opens every checkpoint file (format version 1).
var magic = [8]byte{'G', 'T', 'C', 'K', 'P', 'T', 0, 1}

// endSection is the name of the last section; its payload is the number
// of sections before it.
const endSection = "end"

// maxName bounds a section's name.
const maxName = 255

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptError is a checkpoint file that cannot be read: what is wrong and
// where; its Kind is "checkpoint".
type CorruptError = durable.CorruptError

// Writer writes one checkpoint file. Not safe for concurrent use.
type Writer struct {
	path, tmp string
	f         *os.File
	bw        *bufio.Writer
	sections  uint64
	err       error
}

// Create starts a checkpoint that Commit will put at path.
func Create(path string) (*Writer, error) {
	if !littleEndian {
		return nil, errors.New("checkpoint: big-endian machines are not supported")
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	w := &Writer{path: path, tmp: tmp, f: f, bw: bufio.NewWriterSize(f, 1<<20)}
	_, w.err = w.bw.Write(magic[:])
	return w, nil
}

// Section writes one section: fill writes its payload to e. The payload
// streams to the file (its length is patched into the header once known).
func (w *Writer) Section(name string, fill func(e *Encoder)) error {
	if w.err != nil {
		return w.err
	}
	if len(name) == 0 || len(name) > maxName {
		return fmt.Errorf("checkpoint: section name %q must be 1 to %d bytes", name, maxName)
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("checkpoint: %w", err)
		return w.err
	}
	at, err := w.f.Seek(0, io.SeekCurrent)
	if err != nil {
		w.err = fmt.Errorf("checkpoint: %w", err)
		return w.err
	}
	crc := crc32.New(castagnoli)
	head := binary.LittleEndian.AppendUint16(nil, uint16(len(name)))
	head = append(head, name...)
	crc.Write(head)
	head = binary.LittleEndian.AppendUint64(head, 0) // the length, patched below
	if _, err := w.bw.Write(head); err != nil {
		w.err = fmt.Errorf("checkpoint: %w", err)
		return w.err
	}
	var c counter
	e := &Encoder{w: io.MultiWriter(w.bw, crc, &c)}
	fill(e)
	if e.err != nil {
		w.err = fmt.Errorf("checkpoint: section %s: %w", name, e.err)
		return w.err
	}
	n := binary.LittleEndian.AppendUint64(nil, c.n)
	crc.Write(n) // the CRC covers the name, the payload, then the length
	if _, err := w.bw.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		w.err = fmt.Errorf("checkpoint: %w", err)
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("checkpoint: %w", err)
		return w.err
	}
	if _, err := w.f.WriteAt(n, at+int64(len(head))-8); err != nil {
		w.err = fmt.Errorf("checkpoint: %w", err)
		return w.err
	}
	w.sections++
	return nil
}

// Size is the bytes written so far (the file's size before Commit adds its
// end section, 23 bytes more).
func (w *Writer) Size() int64 {
	n, _ := w.f.Seek(0, io.SeekCurrent)
	return n + int64(w.bw.Buffered())
}

// Commit writes the end section, syncs the file, renames it into place and
// syncs the directory. The Writer is done either way.
func (w *Writer) Commit() error {
	n := w.sections
	err := w.Section(endSection, func(e *Encoder) { e.U64(n) })
	if err == nil {
		err = w.bw.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp, w.path)
	}
	if err == nil {
		err = durable.SyncDir(filepath.Dir(w.path))
	}
	if err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("checkpoint: writing %s: %w", w.path, err)
	}
	return nil
}

// Abort drops the checkpoint being written.
func (w *Writer) Abort() {
	w.f.Close()
	os.Remove(w.tmp)
}

type counter struct{ n uint64 }

func (c *counter) Write(p []byte) (int, error) { c.n += uint64(len(p)); return len(p), nil }

// Encoder writes little-endian values into a section. The first error
// sticks (Err); later writes do nothing.
type Encoder struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *Encoder) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

// Err is the first error a write met.
func (e *Encoder) Err() error { return e.err }

// Fail stops the section with err (the writer then fails): for a fill
// that finds it cannot write what it should.
func (e *Encoder) Fail(err error) {
	if e.err == nil && err != nil {
		e.err = err
	}
}

// U8 writes one byte.
func (e *Encoder) U8(v uint8) { e.buf[0] = v; e.write(e.buf[:1]) }

// U64 writes a uint64.
func (e *Encoder) U64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.write(e.buf[:8]) }

// F64 writes a float64.
func (e *Encoder) F64(v float64) { e.U64(math.Float64bits(v)) }

// Bytes writes a length and the bytes.
func (e *Encoder) Bytes(b []byte) { e.U64(uint64(len(b))); e.write(b) }

// Int32s writes a length and the values.
func (e *Encoder) Int32s(v []int32) { e.U64(uint64(len(v))); e.write(asBytes(v)) }

// Uint64s writes a length and the values.
func (e *Encoder) Uint64s(v []uint64) { e.U64(uint64(len(v))); e.write(asBytes(v)) }

// Float64s writes a length and the values.
func (e *Encoder) Float64s(v []float64) { e.U64(uint64(len(v))); e.write(asBytes(v)) }

// RawInt32s writes the values without a length (the reader knows it).
func (e *Encoder) RawInt32s(v []int32) { e.write(asBytes(v)) }

// RawFloat64s writes the values without a length (the reader knows it).
func (e *Encoder) RawFloat64s(v []float64) { e.write(asBytes(v)) }

// asBytes is v's memory as bytes: the values in the machine's order, which
// the build requires to be little-endian (littleEndian below).
func asBytes[T int32 | uint64 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// littleEndian holds on every platform graphtide builds for (amd64,
// arm64); the values are copied as memory, so a big-endian machine would
// write another format. It is checked once, at Create and Open.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// Reader reads one checkpoint file. Not safe for concurrent use.
type Reader struct {
	path string
	f    *os.File
	br   *bufio.Reader
	off  int64 // offset of the next unread byte
	size int64
	n    uint64 // sections read
	done bool   // the end section was read
}

// ErrNotExist is returned by Open when there is no checkpoint.
var ErrNotExist = errors.New("checkpoint: none")

// Open opens the checkpoint at path and checks its magic number.
func Open(path string) (*Reader, error) {
	if !littleEndian {
		return nil, errors.New("checkpoint: big-endian machines are not supported")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	r := &Reader{path: path, f: f, br: bufio.NewReaderSize(f, 1<<20), size: st.Size()}
	var m [8]byte
	if _, err := io.ReadFull(r.br, m[:]); err != nil || m != magic {
		f.Close()
		return nil, r.corrupt(0, "not a graphtide checkpoint (bad magic number)")
	}
	r.off = 8
	return r, nil
}

// Close closes the file. It reports a file whose end section was not read
// (truncated, or sections left unread).
func (r *Reader) Close() error {
	r.f.Close()
	if !r.done {
		return r.corrupt(r.off, "the end section was not reached: the file is truncated or has sections no reader took")
	}
	return nil
}

func (r *Reader) corrupt(off int64, what string, args ...any) error {
	return &CorruptError{Kind: "checkpoint", File: r.path, Offset: off, What: fmt.Sprintf(what, args...)}
}

// Section reads the next section, which must be called name (any name
// when name is empty): read decodes its payload from d. The section's CRC is checked after read returns; the
// error of read, or a *CorruptError, is returned.
func (r *Reader) Section(name string, read func(d *Decoder) error) error {
	start := r.off
	var hb [2]byte
	if _, err := io.ReadFull(r.br, hb[:]); err != nil {
		return r.corrupt(start, "section %s: the file ends before it", name)
	}
	nl := int(binary.LittleEndian.Uint16(hb[:]))
	if nl == 0 || nl > maxName || int64(nl)+10 > r.size-r.off {
		return r.corrupt(start, "section %s: a name length of %d", name, nl)
	}
	nb := make([]byte, nl+8)
	if _, err := io.ReadFull(r.br, nb); err != nil {
		return r.corrupt(start, "section %s: the file ends in its header", name)
	}
	if got := string(nb[:nl]); name == "" {
		name = got
	} else if got != name {
		return r.corrupt(start, "expected section %s, found %q", name, got)
	}
	plen := binary.LittleEndian.Uint64(nb[nl:])
	r.off += int64(2 + nl + 8)
	if plen > uint64(r.size-r.off-4) || r.size-r.off < 4 {
		return r.corrupt(start, "section %s: a payload of %d bytes runs past the end of the file (%d bytes)", name, plen, r.size)
	}
	crc := crc32.New(castagnoli)
	crc.Write(hb[:])
	crc.Write(nb[:nl])
	d := &Decoder{r: r, crc: crc, left: plen, name: name}
	rerr := read(d)
	if d.err != nil {
		return d.err
	}
	if rerr != nil {
		return rerr
	}
	if d.left > 0 {
		return r.corrupt(r.off, "section %s: %d bytes of its payload were not understood", name, d.left)
	}
	crc.Write(nb[nl:]) // the length, last
	var cb [4]byte
	if _, err := io.ReadFull(r.br, cb[:]); err != nil {
		return r.corrupt(r.off, "section %s: the file ends before its checksum", name)
	}
	if got, want := binary.LittleEndian.Uint32(cb[:]), crc.Sum32(); got != want {
		return r.corrupt(start, "section %s: checksum mismatch (stored %08x, computed %08x)", name, got, want)
	}
	r.off += 4
	r.n++
	return nil
}

// Verify reads the whole checkpoint at path, checking every section's
// checksum and the end, without understanding the payloads and without
// writing: what a checking tool reports. It returns the sections' names.
func Verify(path string) ([]string, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.f.Close()
	var names []string
	for {
		at := r.off
		var name string
		err := r.Section("", func(d *Decoder) error {
			name = d.name
			if name == endSection {
				if n := d.U64(); d.Err() == nil && n != r.n {
					d.Fail("the end section counts %d sections, %d were read", n, r.n)
				}
				return nil
			}
			d.Skip()
			return nil
		})
		if err != nil {
			return names, err
		}
		if name == endSection {
			if r.off != r.size {
				return names, r.corrupt(r.off, "%d bytes follow the end section", r.size-r.off)
			}
			return names, nil
		}
		names = append(names, name)
		if r.off == at {
			return names, r.corrupt(at, "an empty section")
		}
	}
}

// End reads the end section.
func (r *Reader) End() error {
	want := r.n
	var got uint64
	at := r.off
	if err := r.Section(endSection, func(d *Decoder) error { got = d.U64(); return nil }); err != nil {
		return err
	}
	if got != want {
		return r.corrupt(at, "the end section counts %d sections, %d were read", got, want)
	}
	if r.off != r.size {
		return r.corrupt(r.off, "%d bytes follow the end section", r.size-r.off)
	}
	r.done = true
	return nil
}

// Decoder reads the values of one section. The first error sticks (later
// reads return zero values): a *CorruptError.
type Decoder struct {
	r    *Reader
	crc  hash.Hash32
	left uint64
	name string
	err  error
	buf  [8]byte
}

func (d *Decoder) read(b []byte) bool {
	if d.err != nil {
		return false
	}
	if uint64(len(b)) > d.left {
		d.err = d.r.corrupt(d.r.off, "section %s: a value of %d bytes runs past its end (%d bytes left)", d.name, len(b), d.left)
		return false
	}
	if _, err := io.ReadFull(d.r.br, b); err != nil {
		d.err = d.r.corrupt(d.r.off, "section %s: %v", d.name, err)
		return false
	}
	d.crc.Write(b)
	d.left -= uint64(len(b))
	d.r.off += int64(len(b))
	return true
}

// Err is the first error a read met.
func (d *Decoder) Err() error { return d.err }

// Fail records that the payload read does not make sense (a value out of
// its range), at the current offset.
func (d *Decoder) Fail(what string, args ...any) {
	if d.err == nil {
		d.err = d.r.corrupt(d.r.off, "section %s: %s", d.name, fmt.Sprintf(what, args...))
	}
}

// U8 reads one byte.
func (d *Decoder) U8() uint8 {
	if !d.read(d.buf[:1]) {
		return 0
	}
	return d.buf[0]
}

// U64 reads a uint64.
func (d *Decoder) U64() uint64 {
	if !d.read(d.buf[:8]) {
		return 0
	}
	return binary.LittleEndian.Uint64(d.buf[:])
}

// F64 reads a float64.
func (d *Decoder) F64() float64 { return math.Float64frombits(d.U64()) }

// length reads a count of elements of size bytes each, refusing one that
// the section cannot hold.
func (d *Decoder) length(size uint64) int {
	n := d.U64()
	if d.err == nil && n > d.left/size {
		d.Fail("a count of %d values of %d bytes, with %d bytes left", n, size, d.left)
		return 0
	}
	return int(n)
}

// Bytes reads what Encoder.Bytes wrote.
func (d *Decoder) Bytes() []byte {
	b := make([]byte, d.length(1))
	d.read(b)
	return b
}

// Int32s reads what Encoder.Int32s wrote.
func (d *Decoder) Int32s() []int32 {
	v := make([]int32, d.length(4))
	d.read(asBytes(v))
	return v
}

// Uint64s reads what Encoder.Uint64s wrote.
func (d *Decoder) Uint64s() []uint64 {
	v := make([]uint64, d.length(8))
	d.read(asBytes(v))
	return v
}

// RawInt32s reads n values written by Encoder.RawInt32s into a slice of
// length n and capacity at least c.
func (d *Decoder) RawInt32s(n, c int) []int32 { return readRaw[int32](d, n, c) }

// RawFloat64s reads n values written by Encoder.RawFloat64s into a slice
// of length n and capacity at least c.
func (d *Decoder) RawFloat64s(n, c int) []float64 { return readRaw[float64](d, n, c) }

// readRaw reads n values of T into a slice of capacity at least c,
// refusing more than the section holds.
func readRaw[T int32 | uint64 | float64](d *Decoder, n, c int) []T {
	size := uint64(unsafe.Sizeof(T(0)))
	if n < 0 || uint64(n) > d.left/size {
		d.Fail("%d values of %d bytes, with %d bytes left", n, size, d.left)
		return nil
	}
	v := make([]T, n, max(n, c))
	d.read(asBytes(v))
	return v
}

// Skip reads the rest of the section without decoding it.
func (d *Decoder) Skip() {
	var buf [64 << 10]byte
	for d.left > 0 && d.err == nil {
		d.read(buf[:min(uint64(len(buf)), d.left)])
	}
}

// Float64s reads what Encoder.Float64s wrote.
func (d *Decoder) Float64s() []float64 {
	v := make([]float64, d.length(8))
	d.read(asBytes(v))
	return v
}
