package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/settings"
)

// loadOptions are the flags of "graphtide load"; every flag can also be set
// by GRAPHTIDE_<FLAG> or in the --config file.
type loadOptions struct {
	dir         string
	format      string
	batch       int
	inEdges     bool
	memgraphMiB int

	files        []string // the positional arguments
	inEdgesGiven bool     // --in-edges was set (flag, environment or file)
}

func (o *loadOptions) AddFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML file of settings keyed by flag name (flags and GRAPHTIDE_* variables take precedence)")
	fs.StringVar(&o.dir, "dir", "graphtide-data", "data directory (as serve's); the store is <dir>/store, string keys go to <dir>/keys.dict")
	fs.StringVar(&o.format, "format", "auto", "format of the files: auto, text, bin or json (auto: GTEL0001 magic = bin, first character '{' or '[' = json, else text)")
	fs.IntVar(&o.batch, "batch", 10000, "edges per write batch")
	fs.BoolVar(&o.inEdges, "in-edges", false, "also keep in-edges (fixed when the store is created; without the flag an existing store keeps its setting)")
	fs.IntVar(&o.memgraphMiB, "memgraph-mib", 64, "size of one MemGraph in MiB (two alternate)")
}

// loadFormat is the format of one input file.
type loadFormat int

const (
	loadAuto loadFormat = iota
	loadText
	loadBin
	loadJSON
)

var loadFormatNames = []string{"auto", "text", "bin", "json"}

func (f loadFormat) String() string { return loadFormatNames[f] }

func parseLoadFormat(s string) (loadFormat, bool) {
	for i, n := range loadFormatNames {
		if s == n {
			return loadFormat(i), true
		}
	}
	return 0, false
}

func (o *loadOptions) Validate() error {
	if len(o.files) == 0 {
		return errors.New("load needs at least one edge FILE to load")
	}
	if o.dir == "" {
		return errors.New("--dir must not be empty")
	}
	if _, ok := parseLoadFormat(o.format); !ok {
		return fmt.Errorf("--format must be one of: %s; got %q", strings.Join(loadFormatNames, ", "), o.format)
	}
	if o.batch < 1 || o.batch > 10_000_000 {
		return fmt.Errorf("--batch must be between 1 and 10000000, got %d", o.batch)
	}
	if o.memgraphMiB < 1 || o.memgraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536, got %d", o.memgraphMiB)
	}
	for _, f := range o.files {
		info, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("edge file: %w", err)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("edge file %s is not a regular file", f)
		}
	}
	return nil
}

func newLoadCmd() *cobra.Command {
	var o loadOptions
	cmd := &cobra.Command{
		Use:   "load [flags] FILE...",
		Short: "Bulk-load edge files into the store of a data directory",
		Long: `load streams edge files into the store in --dir/store, in batches, in the
order given, and flushes at the end: when it exits 0 every edge is durable.
Memory stays bounded whatever the file size. serve must not be running on
the same --dir (the store is locked while it is open).

Formats (--format auto picks one per file from its first bytes):
  text  SNAP edge-list lines: "src dst [weight]" (insert or update),
        "d src dst" (delete the edge), "dv src" (delete the vertex and its
        edges); blank lines and lines starting with # or % are skipped;
        a field that is not all digits is a string key (see json)
  bin   the GTEL0001 binary edge file that 'graphtide gen --format bin' writes
  json  one JSON value per line: {"op":"add"|"delete"|"delete_vertex",
        "src":..,"dst":..,"weight":..} or an array of them; src and dst may
        be strings, mapped to ids from 2^62 up by --dir/keys.dict
Numeric ids must be below 2^62 (the ids from there up belong to string keys).

Progress goes to stderr (a bar on a terminal, a line every 5 s otherwise);
the last line of stdout gives the edges, the seconds and the edges/s.

A malformed line stops the load with the file and line number (the byte
offset for bin): the edges before it are loaded and flushed, nothing from
that line on is loaded. So is an interrupt (SIGINT, SIGTERM): what was
applied is flushed, the rest is not loaded. Loading the same files again
from the start, after fixing the bad line, gives the same graph as one
complete load.

Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_DIR, or in the
YAML file given by --config, keyed by flag name.`,
		Example: `  graphtide load --dir ./graphtide-data g16.bin       # from 'graphtide gen --scale 16 --out g16.bin'
  graphtide load --dir /var/lib/graphtide --in-edges part-*.el
  graphtide load --format json --batch 50000 transfers.jsonl`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := settings.Apply(cmd.Flags()); err != nil {
				return err
			}
			o.files = args
			o.inEdgesGiven = cmd.Flags().Changed("in-edges")
			if err := o.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runLoad(ctx, &o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// maxLoadLine bounds one line of a text or json file, so that a file
// without newlines cannot exhaust memory.
const maxLoadLine = 16 << 20

// errInterrupted stops a load on SIGINT or SIGTERM.
var errInterrupted = errors.New("interrupted")

// inputError is malformed content in an input file.
type inputError struct {
	file   string
	line   int   // 1-based; 0 for bin
	col    int   // 1-based byte column in the line; 0 if unknown
	offset int64 // byte offset, for bin
	reason string
}

func (e *inputError) Error() string {
	switch {
	case e.line == 0:
		return fmt.Sprintf("%s: byte offset %d: %s", e.file, e.offset, e.reason)
	case e.col > 1:
		return fmt.Sprintf("%s:%d:%d: %s", e.file, e.line, e.col, e.reason)
	}
	return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.reason)
}

// where names the first place that was not loaded.
func (e *inputError) where() string {
	if e.line == 0 {
		return fmt.Sprintf("byte offset %d", e.offset)
	}
	return fmt.Sprintf("line %d", e.line)
}

// loader applies decoded edges to the store in batches.
type loader struct {
	ctx       context.Context
	store     *engine.Store
	dict      *keydict.Dict
	keysSeen  int // dictionary size when it was last synced
	batch     engine.Batch
	batchSize int
	prog      *progress

	upserts, deletes, vdeletes int64 // ops applied to the store
	bytesBefore                int64 // bytes of the files finished
	cur                        *countingReader
}

func (l *loader) emit(e decode.Edge) {
	switch e.Op {
	case decode.OpUpsert:
		if e.HasWeight {
			l.batch.InsertWeighted(e.Src, e.Dst, e.Weight)
		} else {
			l.batch.Insert(e.Src, e.Dst)
		}
	case decode.OpDeleteEdge:
		l.batch.DeleteEdge(e.Src, e.Dst)
	case decode.OpDeleteVertex:
		l.batch.DeleteVertex(e.Src)
	}
}

func (l *loader) applied() int64 { return l.upserts + l.deletes + l.vdeletes }

// maybeApply applies the batch once it holds batchSize edges.
func (l *loader) maybeApply() error {
	if l.batch.Len() < l.batchSize {
		return nil
	}
	return l.apply()
}

// apply hands the batch to the store. New dictionary keys are synced first:
// the store may make the batch durable (a background flush) at once.
func (l *loader) apply() error {
	if l.batch.Len() == 0 {
		return nil
	}
	if l.ctx.Err() != nil {
		return errInterrupted
	}
	if n := l.dict.Len(); n != l.keysSeen {
		if err := l.dict.Sync(); err != nil {
			return fmt.Errorf("key dictionary: %w", err)
		}
		l.keysSeen = n
	}
	if _, err := l.store.Apply(&l.batch); err != nil {
		return err
	}
	for i := 0; i < l.batch.Len(); i++ {
		switch l.batch.Op(i).Kind {
		case engine.OpUpsert:
			l.upserts++
		case engine.OpDeleteEdge:
			l.deletes++
		default:
			l.vdeletes++
		}
	}
	l.batch.Reset()
	l.prog.update(l.bytesBefore+l.cur.n, l.applied())
	return nil
}

// countingReader counts the bytes read from a file, for progress; Name
// keeps the file name in gen's error messages.
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

// sniffFormat picks the format of f from its first bytes: the GTEL magic is
// bin, a first non-blank character '{' or '[' is json, anything else text.
func sniffFormat(f *os.File) (loadFormat, error) {
	buf := make([]byte, 64<<10)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return 0, err
	}
	buf = buf[:n]
	if bytes.HasPrefix(buf, []byte("GTEL")) {
		return loadBin, nil // another version is rejected by the reader
	}
	if t := bytes.TrimLeft(buf, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return loadJSON, nil
	}
	return loadText, nil
}

func (l *loader) loadFile(path string, format loadFormat) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if format == loadAuto {
		if format, err = sniffFormat(f); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	l.cur = &countingReader{f: f}
	defer func() {
		l.bytesBefore += l.cur.n
		l.cur = &countingReader{}
	}()
	switch format {
	case loadBin:
		return l.loadBin(path)
	case loadJSON:
		return l.loadLines(path, decode.New(decode.FormatJSON, l.dict))
	default:
		return l.loadLines(path, decode.New(decode.FormatText, l.dict))
	}
}

// loadLines loads a text or json file line by line through the record
// decoders that serve uses, so a line means the same as a Kafka record.
func (l *loader) loadLines(path string, dec decode.Decoder) error {
	sc := bufio.NewScanner(l.cur)
	sc.Buffer(make([]byte, 0, 1<<20), maxLoadLine)
	emit := l.emit
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
				return &inputError{file: path, line: line, col: de.Offset + 1, reason: de.Reason}
			}
			return fmt.Errorf("%s:%d: %w", path, line, err) // the key dictionary failed
		}
		if err := l.maybeApply(); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &inputError{file: path, line: line + 1, reason: fmt.Sprintf("line longer than %d bytes", maxLoadLine)}
		}
		return fmt.Errorf("read %s after line %d: %w", path, line, err)
	}
	return nil
}

// loadBin loads a GTEL0001 file through gen's streaming reader.
func (l *loader) loadBin(path string) error {
	var magic [4]byte
	if n, _ := l.cur.f.ReadAt(magic[:], 0); string(magic[:n]) != gen.BinaryMagic[:4] {
		return &inputError{file: path, reason: fmt.Sprintf("not a %s binary edge file (it starts with %q): use --format text or json, or auto", gen.BinaryMagic, magic[:n])}
	}
	r := gen.NewReader(l.cur)
	for i := int64(0); ; i++ {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var fe *gen.FormatError
		if errors.As(err, &fe) {
			return &inputError{file: path, offset: fe.Offset, reason: fe.Msg}
		}
		if err != nil {
			return err
		}
		for _, v := range [2]struct {
			name string
			id   uint64
		}{{"src", e.Src}, {"dst", e.Dst}} {
			if v.id >= keydict.KeyBase {
				off := gen.BinaryHeaderSize + gen.BinaryEdgeSize*i
				if v.name == "dst" {
					off += 8
				}
				return &inputError{file: path, offset: off, reason: fmt.Sprintf(
					"%s: vertex id %d out of range (numeric ids must be below %d; the ids from there up belong to string keys)", v.name, v.id, keydict.KeyBase)}
			}
		}
		src, err := l.dict.NumID(e.Src)
		if err != nil {
			return fmt.Errorf("%s: edge %d: %w", path, i, err) // the key dictionary failed
		}
		dst, err := l.dict.NumID(e.Dst)
		if err != nil {
			return fmt.Errorf("%s: edge %d: %w", path, i, err)
		}
		l.batch.Insert(src, dst)
		if err := l.maybeApply(); err != nil {
			return err
		}
	}
}

func runLoad(ctx context.Context, o *loadOptions, out, errOut io.Writer) (err error) {
	format, _ := parseLoadFormat(o.format)
	var total int64
	for _, f := range o.files {
		if info, err := os.Stat(f); err == nil {
			total += info.Size()
		}
	}
	var inEdges *bool
	if o.inEdgesGiven {
		inEdges = &o.inEdges
	}
	d, err := datadir.Open(o.dir, datadir.Options{Store: engine.Options{MemGraphBytes: int64(o.memgraphMiB) << 20}, InEdges: inEdges, Create: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	store, dict := d.Store, d.Keys

	start := time.Now()
	l := &loader{ctx: ctx, store: store, dict: dict, keysSeen: dict.Len(), batchSize: o.batch,
		prog: newProgress(errOut, isTerminal(errOut), total, 5*time.Second, start), cur: &countingReader{}}
	// A bar's line must end before an error is printed.
	defer func() { l.prog.finish(l.bytesBefore, l.applied()) }()

	var loadErr error
	for _, f := range o.files {
		if loadErr = l.loadFile(f, format); loadErr != nil {
			break
		}
	}
	var ie *inputError
	if loadErr == nil || errors.As(loadErr, &ie) || errors.Is(loadErr, errInterrupted) {
		// Apply what came before the bad line (or everything), then make
		// it durable, so that the outcome is a known prefix of the input.
		if !errors.Is(loadErr, errInterrupted) {
			if err := l.apply(); errors.Is(err, errInterrupted) {
				loadErr = err
			} else if err != nil {
				return fmt.Errorf("load failed after %d edges, not all of them durable: %w", l.applied(), err)
			}
		}
		if err := store.Flush(); err != nil {
			return fmt.Errorf("load failed: flush: %w", err)
		}
	}
	l.prog.finish(l.bytesBefore, l.applied())
	switch {
	case ie != nil:
		return fmt.Errorf("%w; load stopped: the %d edges before it are loaded and flushed, nothing from %s on (nor any later file) was loaded", ie, l.applied(), ie.where())
	case errors.Is(loadErr, errInterrupted):
		return fmt.Errorf("load interrupted: %d edges are loaded and flushed, the rest was not loaded", l.applied())
	case loadErr != nil:
		return fmt.Errorf("load failed after %d edges, not all of them durable: %w", l.applied(), loadErr)
	}
	secs := time.Since(start).Seconds()
	_, err = fmt.Fprintf(out, "loaded %d edges (%d upserts, %d edge deletes, %d vertex deletes) from %d files into %s in %.3f s: %.0f edges/s, flushed\n",
		l.applied(), l.upserts, l.deletes, l.vdeletes, len(o.files), datadir.StorePath(o.dir), secs, float64(l.applied())/secs)
	return err
}
