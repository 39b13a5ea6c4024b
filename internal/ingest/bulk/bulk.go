// Package bulk loads edge files into a store: the path of 'graphtide load'.
//
// It shares its meaning with serve's Kafka ingest: a line of a text or
// JSON file goes through the same record decoders as a Kafka record
// (package decode), and a decoded operation becomes a store operation
// through Add, which the ingest pipeline uses too. A binary GTEL file is
// read with package edgefile. New key-dictionary ids are synced before
// the batch that uses them is applied, as ingest does, because the store
// may make a batch durable in the background at once.
//
// Promises: memory is bounded whatever the file size (one batch, one
// line of at most MaxLine bytes); the outcome of a load that stops, at a
// malformed line or an interrupt, is a known prefix of its input, applied
// and flushed (see Load).
package bulk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
)

// Add appends one decoded edge operation to b: the one mapping from a
// decoded record to a store operation (an upsert without a weight has
// weight 1), with its type, its event time and (an upsert) its event
// reference and properties when it has them.
func Add(b *engine.Batch, e decode.Edge) {
	switch e.Op {
	case decode.OpUpsert:
		w := 1.0
		if e.HasWeight {
			w = e.Weight
		}
		b.InsertWeighted(e.Src, e.Dst, w)
		if len(e.EventRef) > 0 || len(e.Props) > 0 {
			b.SetPayload(string(e.EventRef), e.Props) // copies both
		}
	case decode.OpDeleteEdge:
		b.DeleteEdge(e.Src, e.Dst)
	case decode.OpDeleteVertex:
		b.DeleteVertex(e.Src)
	case decode.OpPutVertex:
		// PutVertex copies the label and props (views of the record).
		b.PutVertex(e.Src, string(e.Label), e.Props)
		return // a record has no type or event time
	}
	if e.Type != 0 {
		b.SetType(e.Type)
	}
	if !e.EventTime.IsZero() {
		b.SetEventTime(e.EventTime.UnixMicro())
	}
}

// Format is the format of one input file.
type Format int

// The formats; Auto picks one per file from its first bytes.
const (
	Auto Format = iota
	Text
	Bin
	JSON
)

var formatNames = []string{"auto", "text", "bin", "json"}

func (f Format) String() string { return formatNames[f] }

// FormatNames lists the names ParseFormat accepts, for messages.
func FormatNames() string { return strings.Join(formatNames, ", ") }

// ParseFormat parses a format name (see FormatNames).
func ParseFormat(s string) (Format, bool) {
	for i, n := range formatNames {
		if s == n {
			return Format(i), true
		}
	}
	return 0, false
}

// MaxLine bounds one line of a text or json file, so that a file without
// newlines cannot exhaust memory.
const MaxLine = 16 << 20

// ErrInterrupted stops a load whose context ended.
var ErrInterrupted = errors.New("interrupted")

// InputError is malformed content in an input file.
type InputError struct {
	File   string
	Line   int   // 1-based; 0 for bin
	Col    int   // 1-based byte column in the line; 0 if unknown
	Offset int64 // byte offset, for bin
	Reason string
}

func (e *InputError) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: byte offset %d: %s", e.File, e.Offset, e.Reason)
	case e.Col > 1:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Reason)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
}

// Where names the first place that was not loaded.
func (e *InputError) Where() string {
	if e.Line == 0 {
		return fmt.Sprintf("byte offset %d", e.Offset)
	}
	return fmt.Sprintf("line %d", e.Line)
}

// Config says what Load loads into and how.
type Config struct {
	Store *engine.Store
	Keys  *keydict.Dict // the data directory's key dictionary
	// Types is the data directory's type dictionary, for records that name
	// edge types; nil: type numbers only.
	Types *typedict.Dict
	Batch int // operations per store batch; at least 1
	// Progress, if set, is called after every batch with the bytes read
	// of the input files and the operations applied so far.
	Progress func(bytesRead, applied int64)
	// Mapping, if set, reads JSON lines through a field mapping (format
	// JSON) instead of the native JSON fields.
	Mapping *decode.Mapping
}

// Counts are the operations a load applied to the store, and the bytes of
// input it read.
type Counts struct {
	Upserts, Deletes, VertexDeletes int64
	Vertices                        int64 // vertex records set
	BytesRead                       int64
}

// Total is the number of operations applied.
func (c Counts) Total() int64 { return c.Upserts + c.Deletes + c.VertexDeletes + c.Vertices }

// Load applies the files, in order, to cfg.Store in batches and flushes
// at the end: when it returns nil every operation is durable. A
// malformed line (an *InputError) or the end of ctx stops it: what came
// before is applied and flushed, nothing from there on (nor any later
// file) is, and the error says so. Any other error (the store or the key
// dictionary failed) may leave applied operations not yet durable.
func Load(ctx context.Context, cfg Config, files []string, format Format) (Counts, error) {
	l := &loader{ctx: ctx, cfg: cfg, keysSeen: cfg.Keys.Len(), cur: &countingReader{}}
	var loadErr error
	for _, f := range files {
		if loadErr = l.loadFile(f, format); loadErr != nil {
			break
		}
	}
	l.counts.BytesRead = l.bytesBefore
	var ie *InputError
	if loadErr == nil || errors.As(loadErr, &ie) || errors.Is(loadErr, ErrInterrupted) {
		// Apply what came before the bad line (or everything), then make
		// it durable, so that the outcome is a known prefix of the input.
		if !errors.Is(loadErr, ErrInterrupted) {
			if err := l.apply(); errors.Is(err, ErrInterrupted) {
				loadErr = err
			} else if err != nil {
				return l.counts, fmt.Errorf("load failed after %d edges, not all of them durable: %w", l.counts.Total(), err)
			}
		}
		if err := cfg.Store.Flush(); err != nil {
			return l.counts, fmt.Errorf("load failed: flush: %w", err)
		}
	}
	switch {
	case ie != nil:
		return l.counts, fmt.Errorf("%w; load stopped: the %d edges before it are loaded and flushed, nothing from %s on (nor any later file) was loaded", ie, l.counts.Total(), ie.Where())
	case errors.Is(loadErr, ErrInterrupted):
		return l.counts, fmt.Errorf("load %w: %d edges are loaded and flushed, the rest was not loaded", loadErr, l.counts.Total())
	case loadErr != nil:
		return l.counts, fmt.Errorf("load failed after %d edges, not all of them durable: %w", l.counts.Total(), loadErr)
	}
	return l.counts, nil
}

// loader applies decoded edges to the store in batches.
type loader struct {
	ctx      context.Context
	cfg      Config
	keysSeen int // dictionary size when it was last synced
	batch    engine.Batch
	counts   Counts // ops applied to the store

	bytesBefore int64 // bytes of the files finished
	cur         *countingReader
}

func (l *loader) add(e decode.Edge) { Add(&l.batch, e) }

// maybeApply applies the batch once it holds cfg.Batch operations.
func (l *loader) maybeApply() error {
	if l.batch.Len()+l.batch.Vertices() < l.cfg.Batch {
		return nil
	}
	return l.apply()
}

// apply hands the batch to the store. New dictionary keys are synced first:
// the store may make the batch durable (a background flush) at once.
func (l *loader) apply() error {
	if l.batch.Empty() {
		return nil
	}
	if l.ctx.Err() != nil {
		return ErrInterrupted
	}
	if n := l.cfg.Keys.Len(); n != l.keysSeen {
		if err := l.cfg.Keys.Sync(); err != nil {
			return fmt.Errorf("key dictionary: %w", err)
		}
		l.keysSeen = n
	}
	if _, err := l.cfg.Store.Apply(&l.batch); err != nil {
		return err
	}
	for i := 0; i < l.batch.Len(); i++ {
		switch l.batch.Op(i).Kind {
		case engine.OpUpsert:
			l.counts.Upserts++
		case engine.OpDeleteEdge:
			l.counts.Deletes++
		default:
			l.counts.VertexDeletes++
		}
	}
	l.counts.Vertices += int64(l.batch.Vertices())
	l.batch.Reset()
	if l.cfg.Progress != nil {
		l.cfg.Progress(l.bytesBefore+l.cur.n, l.counts.Total())
	}
	return nil
}

// countingReader counts the bytes read from a file, for progress; Name
// keeps the file name in edgefile's error messages.
type countingReader struct {
	f *os.File
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Name() string { return c.f.Name() }

// sniff picks the format of f from its first bytes: the GTEL magic is
// bin, a first non-blank character '{' or '[' is json, anything else text.
func sniff(f *os.File) (Format, error) {
	buf := make([]byte, 64<<10)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return 0, err
	}
	buf = buf[:n]
	if bytes.HasPrefix(buf, []byte("GTEL")) {
		return Bin, nil // another version is rejected by the reader
	}
	if t := bytes.TrimLeft(buf, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return JSON, nil
	}
	return Text, nil
}

func (l *loader) loadFile(path string, format Format) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if format == Auto {
		if format, err = sniff(f); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	l.cur = &countingReader{f: f}
	defer func() {
		l.bytesBefore += l.cur.n
		l.cur = &countingReader{}
	}()
	switch format {
	case Bin:
		return l.loadBin(path)
	case JSON:
		if l.cfg.Mapping != nil {
			d, err := decode.NewMapped(*l.cfg.Mapping, l.resolver())
			if err != nil {
				return err
			}
			return l.loadLines(path, d)
		}
		return l.loadLines(path, decode.New(decode.FormatJSON, l.resolver()))
	default:
		return l.loadLines(path, decode.New(decode.FormatText, l.cfg.Keys))
	}
}

// loadLines loads a text or json file line by line through the record
// decoders that serve uses, so a line means the same as a Kafka record.
func (l *loader) loadLines(path string, dec decode.Decoder) error {
	sc := bufio.NewScanner(l.cur)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLine)
	emit := l.add
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		t := bytes.TrimLeft(b, " \t\r")
		if len(t) == 0 || (dec.Format() == decode.FormatText && (t[0] == '#' || t[0] == '%')) {
			continue // the decoders reject a value without edges
		}
		if err := dec.Decode(b, emit); err != nil {
			var de *decode.Error
			if errors.As(err, &de) {
				return &InputError{File: path, Line: line, Col: de.Offset + 1, Reason: de.Reason}
			}
			return fmt.Errorf("%s:%d: %w", path, line, err) // the key dictionary failed
		}
		if err := l.maybeApply(); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &InputError{File: path, Line: line + 1, Reason: fmt.Sprintf("line longer than %d bytes", MaxLine)}
		}
		return fmt.Errorf("read %s after line %d: %w", path, line, err)
	}
	return nil
}

// loadBin loads a GTEL0001 file through edgefile's streaming reader.
func (l *loader) loadBin(path string) error {
	var magic [4]byte
	if n, _ := l.cur.f.ReadAt(magic[:], 0); string(magic[:n]) != edgefile.BinaryMagic[:4] {
		return &InputError{File: path, Reason: fmt.Sprintf("not a %s binary edge file (it starts with %q): use --format text or json, or auto", edgefile.BinaryMagic, magic[:n])}
	}
	r := edgefile.NewReader(l.cur)
	for i := int64(0); ; i++ {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var fe *edgefile.FormatError
		if errors.As(err, &fe) {
			return &InputError{File: path, Offset: fe.Offset, Reason: fe.Msg}
		}
		if err != nil {
			return err
		}
		for _, v := range [2]struct {
			name string
			id   uint64
		}{{"src", e.Src}, {"dst", e.Dst}} {
			if v.id >= keydict.KeyBase {
				off := edgefile.BinaryHeaderSize + edgefile.BinaryEdgeSize*i
				if v.name == "dst" {
					off += 8
				}
				return &InputError{File: path, Offset: off, Reason: fmt.Sprintf(
					"%s: vertex id %d out of range (numeric ids must be below %d; the ids from there up belong to string keys)", v.name, v.id, keydict.KeyBase)}
			}
		}
		src, err := l.cfg.Keys.NumID(e.Src)
		if err != nil {
			return fmt.Errorf("%s: edge %d: %w", path, i, err) // the key dictionary failed
		}
		dst, err := l.cfg.Keys.NumID(e.Dst)
		if err != nil {
			return fmt.Errorf("%s: edge %d: %w", path, i, err)
		}
		l.batch.Insert(src, dst)
		if err := l.maybeApply(); err != nil {
			return err
		}
	}
}

// resolver is what the JSON decoders resolve names through: the key
// dictionary, with the type dictionary when there is one.
func (l *loader) resolver() decode.KeyResolver {
	var keys decode.KeyResolver
	if l.cfg.Keys != nil {
		keys = l.cfg.Keys
	}
	if l.cfg.Types != nil {
		return decode.WithTypes(keys, l.cfg.Types)
	}
	return keys
}
