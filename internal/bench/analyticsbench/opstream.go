package analyticsbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/graphtide/graphtide/internal/engine"
)

// The op-stream file (--stream, --save-stream) is the stream of a run as
// another tool can replay it (the Differential Dataflow harness reads it):
// UTF-8 text, one operation per line, its fields separated by one space,
// a line starting with '#' a comment:
//
//	+ SRC DST [WEIGHT]   insert or replace the edge SRC->DST (weight 1 when left out)
//	- SRC DST            delete the edge SRC->DST (nothing when it is missing)
//	x V                  delete the vertex V and all its edges
//
// Ids are the graph file's ids (non-negative integers below 2^62); a weight
// is a finite decimal number. Batches are consecutive runs of --batch-size
// operations (the last may be shorter). docs/benchmarks.md documents it
// for users.

// StreamError is a malformed line of an op-stream file.
type StreamError struct {
	Path string
	Line int
	Msg  string
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

// readOps reads an op-stream file's operations, in order.
func readOps(path string) ([]engine.Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseOps(path, f)
}

func parseOps(path string, r io.Reader) ([]engine.Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<16)
	sc.Split(scanLines)
	var ops []engine.Op
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") {
			continue
		}
		op, msg := parseOp(text)
		if msg != "" {
			return nil, &StreamError{Path: path, Line: line, Msg: msg}
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = errors.New("a line longer than 64 KiB")
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ops, nil
}

// scanLines is bufio.ScanLines but for the carriage return it drops: a
// line ending in "\r" is malformed (its last field is not a number).
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// parseOp parses one operation line; msg says what is wrong with it.
func parseOp(text string) (op engine.Op, msg string) {
	f := strings.Split(text, " ")
	id := func(s string) (uint64, bool) {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v >= engine.HighIDBase {
			return 0, false
		}
		return v, true
	}
	switch {
	case f[0] == "+" && (len(f) == 3 || len(f) == 4):
		op.Kind, op.Weight = engine.OpUpsert, 1
		if len(f) == 4 {
			w, err := strconv.ParseFloat(f[3], 64)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
				return op, fmt.Sprintf("weight %q is not a finite number", f[3])
			}
			op.Weight = w
		}
	case f[0] == "-" && len(f) == 3:
		op.Kind = engine.OpDeleteEdge
	case f[0] == "x" && len(f) == 2:
		op.Kind = engine.OpDeleteVertex
	default:
		return op, fmt.Sprintf("%q is not an operation (\"+ SRC DST [WEIGHT]\", \"- SRC DST\" or \"x V\", fields separated by one space)", text)
	}
	var ok bool
	if op.Src, ok = id(f[1]); !ok {
		return op, fmt.Sprintf("vertex id %q is not an integer in [0, 2^62)", f[1])
	}
	if op.Kind != engine.OpDeleteVertex {
		if op.Dst, ok = id(f[2]); !ok {
			return op, fmt.Sprintf("vertex id %q is not an integer in [0, 2^62)", f[2])
		}
	}
	return op, ""
}

// writeOps writes ops as an op-stream file, with a comment first saying
// how the run cut them into batches.
func writeOps(path string, ops [][]engine.Op, batchSize int) error {
	return writeLines(path, func(w *bufio.Writer) error {
		n := 0
		for _, b := range ops {
			n += len(b)
		}
		fmt.Fprintf(w, "# graphtide bench analytics stream: %d operations in %d batches of %d\n", n, len(ops), batchSize)
		var buf []byte
		for _, b := range ops {
			for _, o := range b {
				buf = appendOp(buf[:0], o)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// writeLines creates the file at path and has write fill it through a
// buffer, flushed and closed after; the first error wins.
func writeLines(path string, write func(w *bufio.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriter(f)
	if err := write(w); err != nil {
		return err
	}
	return w.Flush()
}

// appendOp appends o's line (newline included).
func appendOp(buf []byte, o engine.Op) []byte {
	switch o.Kind {
	case engine.OpUpsert:
		buf = append(buf, "+ "...)
	case engine.OpDeleteEdge:
		buf = append(buf, "- "...)
	default:
		buf = append(buf, "x "...)
		buf = strconv.AppendUint(buf, o.Src, 10)
		return append(buf, '\n')
	}
	buf = strconv.AppendUint(buf, o.Src, 10)
	buf = append(buf, ' ')
	buf = strconv.AppendUint(buf, o.Dst, 10)
	if o.Kind == engine.OpUpsert && (o.Weight != 1) {
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, o.Weight, 'g', -1, 64)
	}
	return append(buf, '\n')
}

// writeGraph writes edges as an el file ("src dst", with a weight column
// when any weight is not 1), in order: loading it gives the same graph.
func writeGraph(path string, edges []wedge) error {
	weighted := false
	for _, e := range edges {
		weighted = weighted || e.w != 1
	}
	return writeLines(path, func(w *bufio.Writer) error {
		var buf []byte
		for _, e := range edges {
			buf = strconv.AppendUint(buf[:0], e.src, 10)
			buf = append(buf, ' ')
			buf = strconv.AppendUint(buf, e.dst, 10)
			if weighted {
				buf = append(buf, ' ')
				buf = strconv.AppendFloat(buf, e.w, 'g', -1, 64)
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// cutBatches cuts ops into consecutive batches of size operations.
func cutBatches(ops []engine.Op, size int) [][]engine.Op {
	var out [][]engine.Op
	for i := 0; i < len(ops); i += size {
		out = append(out, ops[i:min(i+size, len(ops))])
	}
	return out
}
