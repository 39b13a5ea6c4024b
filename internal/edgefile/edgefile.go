package edgefile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Edge is a directed edge from Src to Dst. It is 16 bytes, so a slice of n
// edges occupies 16n bytes.
type Edge struct {
	Src, Dst uint64
}

// Format identifies an edge file format.
type Format int

const (
	// FormatText is the SNAP-style ".el" format: "src dst [weight]" lines.
	FormatText Format = iota + 1
	// FormatBinary is the "GTEL0001" fixed-record format.
	FormatBinary
)

// Formats lists the supported formats in the order they are documented.
var Formats = []Format{FormatText, FormatBinary}

// String returns the format's short name, as accepted by ParseFormat.
func (f Format) String() string {
	switch f {
	case FormatText:
		return "el"
	case FormatBinary:
		return "bin"
	default:
		return fmt.Sprintf("Format(%d)", int(f))
	}
}

// ParseFormat parses a short format name: "el" or "bin".
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown edge file format %q: must be one of: %s", s, formatNames())
}

func formatNames() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = f.String()
	}
	return strings.Join(names, ", ")
}

const (
	// BinaryMagic starts every binary edge file.
	BinaryMagic = "GTEL0001"
	// BinaryHeaderSize is the size of the magic plus the edge count.
	BinaryHeaderSize = 16
	// BinaryEdgeSize is the size of one binary edge record.
	BinaryEdgeSize = 16

	binaryMagicFamily = "GTEL"
	writeBufferSize   = 1 << 20
	readBufferSize    = 1 << 20
	// maxLineLength bounds a text line so a file without newlines cannot
	// exhaust memory.
	maxLineLength = 1 << 20
)

// WriteText writes edges as "src dst\n" lines through an internal buffer.
func WriteText(w io.Writer, edges []Edge) error {
	bw := bufio.NewWriterSize(w, writeBufferSize)
	line := make([]byte, 0, 2*20+2)
	for _, e := range edges {
		line = strconv.AppendUint(line[:0], e.Src, 10)
		line = append(line, ' ')
		line = strconv.AppendUint(line, e.Dst, 10)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("write text edges: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write text edges: %w", err)
	}
	return nil
}

// WriteBinary writes edges in the binary format (see the package
// documentation) through an internal buffer.
func WriteBinary(w io.Writer, edges []Edge) error {
	bw := bufio.NewWriterSize(w, writeBufferSize)
	var rec [BinaryEdgeSize]byte
	copy(rec[:8], BinaryMagic)
	binary.LittleEndian.PutUint64(rec[8:], uint64(len(edges)))
	if _, err := bw.Write(rec[:]); err != nil {
		return fmt.Errorf("write binary edges: header: %w", err)
	}
	for _, e := range edges {
		binary.LittleEndian.PutUint64(rec[:8], e.Src)
		binary.LittleEndian.PutUint64(rec[8:], e.Dst)
		if _, err := bw.Write(rec[:]); err != nil {
			return fmt.Errorf("write binary edges: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write binary edges: %w", err)
	}
	return nil
}

// Write writes edges to w in format f.
func Write(w io.Writer, f Format, edges []Edge) error {
	switch f {
	case FormatText:
		return WriteText(w, edges)
	case FormatBinary:
		return WriteBinary(w, edges)
	default:
		return fmt.Errorf("write edges: unsupported format %v", f)
	}
}

// WriteFile creates (or truncates) the file at path and writes edges to it
// in format f. On failure the partially written file is removed.
func WriteFile(path string, f Format, edges []Edge) (err error) {
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write edge file: %w", err)
	}
	defer func() {
		if cerr := file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write edge file %s: %w", path, cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if err := Write(file, f, edges); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// FormatError describes malformed edge file content.
type FormatError struct {
	Name   string // input name: the file path, or "<stream>"
	Format Format // format being parsed
	Line   int    // 1-based line number, for FormatText
	Offset int64  // byte offset of the bad header or record, for FormatBinary
	Msg    string // what is wrong
	Err    error  // underlying cause, if any
}

func (e *FormatError) Error() string {
	var msg string
	if e.Format == FormatBinary {
		msg = fmt.Sprintf("%s: byte offset %d: %s", e.Name, e.Offset, e.Msg)
	} else {
		msg = fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *FormatError) Unwrap() error { return e.Err }

// Reader streams edges from a text or binary edge file. It detects the
// format from the first bytes of the input on the first call to Next.
type Reader struct {
	br     *bufio.Reader
	name   string
	format Format
	err    error // sticky: returned by every Next after the first failure

	// text state
	sc        *bufio.Scanner
	line      int
	weight    float64
	hasWeight bool

	// binary state
	count  uint64 // edges announced by the header
	read   uint64 // edges returned so far
	offset int64  // byte offset of the next record
}

// NewReader returns a Reader for r. If r has a Name() string method (as
// *os.File does), that name is used in error messages; otherwise the input
// is called "<stream>".
func NewReader(r io.Reader) *Reader {
	name := "<stream>"
	if n, ok := r.(interface{ Name() string }); ok {
		name = n.Name()
	}
	return &Reader{br: bufio.NewReaderSize(r, readBufferSize), name: name}
}

// Format returns the detected format, or 0 before the first call to Next.
func (r *Reader) Format() Format { return r.format }

// Weight returns the weight column of the edge most recently returned by
// Next and whether that line had one. Binary files carry no weights.
func (r *Reader) Weight() (w float64, ok bool) { return r.weight, r.hasWeight }

// Next returns the next edge. At the end of a well-formed input it returns
// io.EOF; malformed content yields a *FormatError. After any error, Next
// keeps returning that error.
func (r *Reader) Next() (Edge, error) {
	if r.err != nil {
		return Edge{}, r.err
	}
	if r.format == 0 {
		if err := r.detect(); err != nil {
			r.err = err
			return Edge{}, err
		}
	}
	var e Edge
	var err error
	if r.format == FormatBinary {
		e, err = r.nextBinary()
	} else {
		e, err = r.nextText()
	}
	if err != nil {
		r.err = err
	}
	return e, err
}

func (r *Reader) detect() error {
	magic, err := r.br.Peek(len(BinaryMagic))
	if err != nil && err != io.EOF {
		return fmt.Errorf("read %s: %w", r.name, err)
	}
	switch {
	case string(magic) == BinaryMagic:
		r.format = FormatBinary
		return r.readHeader()
	case len(magic) == len(BinaryMagic) && strings.HasPrefix(string(magic), binaryMagicFamily):
		r.format = FormatBinary
		return r.formatErr(0, fmt.Sprintf("unsupported binary edge file version %q (this reader supports %q)", magic, BinaryMagic), nil)
	default:
		r.format = FormatText
		r.sc = bufio.NewScanner(r.br)
		r.sc.Buffer(make([]byte, 0, 64<<10), maxLineLength)
		return nil
	}
}

func (r *Reader) formatErr(offset int64, msg string, cause error) *FormatError {
	return &FormatError{Name: r.name, Format: r.format, Line: r.line, Offset: offset, Msg: msg, Err: cause}
}

func (r *Reader) readHeader() error {
	var hdr [BinaryHeaderSize]byte
	n, err := io.ReadFull(r.br, hdr[:])
	if err == io.ErrUnexpectedEOF {
		return r.formatErr(int64(len(BinaryMagic)), fmt.Sprintf(
			"truncated header: want an 8-byte edge count, got %d bytes", n-len(BinaryMagic)), nil)
	}
	if err != nil {
		return fmt.Errorf("read %s: header: %w", r.name, err)
	}
	r.count = binary.LittleEndian.Uint64(hdr[8:])
	r.offset = BinaryHeaderSize
	return nil
}

func (r *Reader) nextBinary() (Edge, error) {
	if r.read == r.count {
		// The header's count must describe the whole file.
		if _, err := r.br.ReadByte(); err == nil {
			return Edge{}, r.formatErr(r.offset, fmt.Sprintf(
				"trailing data after the %d edges announced by the header", r.count), nil)
		} else if err != io.EOF {
			return Edge{}, fmt.Errorf("read %s: %w", r.name, err)
		}
		return Edge{}, io.EOF
	}
	var rec [BinaryEdgeSize]byte
	n, err := io.ReadFull(r.br, rec[:])
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return Edge{}, r.formatErr(r.offset, fmt.Sprintf(
			"truncated file: edge %d of %d needs %d bytes, only %d present",
			r.read, r.count, BinaryEdgeSize, n), io.ErrUnexpectedEOF)
	}
	if err != nil {
		return Edge{}, fmt.Errorf("read %s: byte offset %d: %w", r.name, r.offset, err)
	}
	r.read++
	r.offset += BinaryEdgeSize
	return Edge{
		Src: binary.LittleEndian.Uint64(rec[:8]),
		Dst: binary.LittleEndian.Uint64(rec[8:]),
	}, nil
}

func (r *Reader) nextText() (Edge, error) {
	for r.sc.Scan() {
		r.line++
		line := r.sc.Bytes()
		var fields [3][]byte
		nf := 0
		for i := 0; i < len(line); {
			for i < len(line) && isSpace(line[i]) {
				i++
			}
			if i == len(line) {
				break
			}
			if nf == 0 && (line[i] == '#' || line[i] == '%') {
				break // comment line
			}
			start := i
			for i < len(line) && !isSpace(line[i]) {
				i++
			}
			if nf == len(fields) {
				return Edge{}, r.formatErr(0, "too many fields: want \"src dst\" or \"src dst weight\"", nil)
			}
			fields[nf] = line[start:i]
			nf++
		}
		switch nf {
		case 0:
			continue // blank or comment line
		case 1:
			return Edge{}, r.formatErr(0, "missing dst: want \"src dst\" or \"src dst weight\"", nil)
		}
		src, err := parseID(fields[0])
		if err != nil {
			return Edge{}, r.formatErr(0, fmt.Sprintf("invalid src %q", fields[0]), err)
		}
		dst, err := parseID(fields[1])
		if err != nil {
			return Edge{}, r.formatErr(0, fmt.Sprintf("invalid dst %q", fields[1]), err)
		}
		r.weight, r.hasWeight = 0, false
		if nf == 3 {
			w, err := strconv.ParseFloat(string(fields[2]), 64)
			if err != nil {
				return Edge{}, r.formatErr(0, fmt.Sprintf("invalid weight %q", fields[2]), errors.Unwrap(err))
			}
			if math.IsNaN(w) || math.IsInf(w, 0) {
				return Edge{}, r.formatErr(0, fmt.Sprintf("invalid weight %q: must be finite", fields[2]), nil)
			}
			r.weight, r.hasWeight = w, true
		}
		return Edge{Src: src, Dst: dst}, nil
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			r.line++
			return Edge{}, r.formatErr(0, fmt.Sprintf("line longer than %d bytes", maxLineLength), nil)
		}
		return Edge{}, fmt.Errorf("read %s: after line %d: %w", r.name, r.line, err)
	}
	return Edge{}, io.EOF
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

var (
	errNotDecimal = errors.New("not an unsigned decimal integer")
	errOverflow   = errors.New("value out of range for uint64")
)

// parseID parses an unsigned decimal vertex id without allocating.
func parseID(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errNotDecimal
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errNotDecimal
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, errOverflow
		}
		v = v*10 + d
	}
	return v, nil
}

// ReadFile reads every edge of the text or binary edge file at path,
// detecting the format from its first bytes. Weights in text files are
// validated and discarded; use NewReader to see them.
func ReadFile(path string) ([]Edge, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read edge file: %w", err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}

	r := NewReader(f)
	first, err := r.Next()
	if errors.Is(err, io.EOF) {
		return []Edge{}, nil
	}
	if err != nil {
		return nil, err
	}
	var edges []Edge
	if r.Format() == FormatBinary {
		// Trust the header only as far as the file size allows; a larger
		// count is reported as truncation once the data runs out.
		capacity := r.count
		if maxFit := uint64(max(size-BinaryHeaderSize, 0)) / BinaryEdgeSize; capacity > maxFit {
			capacity = maxFit
		}
		edges = make([]Edge, 0, max(capacity, 1))
	} else {
		// Lines of a typical edge list are about 10-20 bytes.
		edges = make([]Edge, 0, max(size/16, 1))
	}
	edges = append(edges, first)
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return edges, nil
		}
		if err != nil {
			return nil, err
		}
		edges = append(edges, e)
	}
}
