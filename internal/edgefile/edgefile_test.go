package edgefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func testEdges() []Edge {
	return []Edge{{0, 1}, {1, 0}, {5, 5}, {^uint64(0), 0}, {42, ^uint64(0)}, {0, 1}}
}

func TestRoundTripFiles(t *testing.T) {
	generated := randomEdges(4096, 1<<10, 3)
	for _, edges := range [][]Edge{{}, testEdges(), generated} {
		for _, f := range Formats {
			path := filepath.Join(t.TempDir(), "edges."+f.String())
			if err := WriteFile(path, f, edges); err != nil {
				t.Fatalf("WriteFile(%v): %v", f, err)
			}
			got, err := ReadFile(path)
			if err != nil {
				t.Fatalf("ReadFile(%v): %v", f, err)
			}
			if !slices.Equal(got, edges) {
				t.Fatalf("%v round trip of %d edges returned %d different edges", f, len(edges), len(got))
			}
		}
	}
}

func TestWriteTextExact(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, []Edge{{1, 2}, {18446744073709551615, 0}}); err != nil {
		t.Fatal(err)
	}
	if want := "1 2\n18446744073709551615 0\n"; buf.String() != want {
		t.Errorf("WriteText wrote %q, want %q", buf.String(), want)
	}
}

func TestWriteBinaryLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteBinary(&buf, []Edge{{0x0102030405060708, 9}}); err != nil {
		t.Fatal(err)
	}
	want := []byte("GTEL0001")
	want = append(want, 1, 0, 0, 0, 0, 0, 0, 0)
	want = append(want, 8, 7, 6, 5, 4, 3, 2, 1)
	want = append(want, 9, 0, 0, 0, 0, 0, 0, 0)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("WriteBinary wrote % x\nwant              % x", buf.Bytes(), want)
	}
}

func TestReadTextSyntax(t *testing.T) {
	in := "# SNAP header\n" +
		"% matrix-market style comment\n" +
		"\n" +
		"   \t\n" +
		"1\t2\n" +
		"  3   4  \r\n" +
		"   # indented comment\n" +
		"5 6 0.25\n" +
		"007 8 -1e3\n" +
		"9 10" // no final newline
	r := NewReader(strings.NewReader(in))
	type row struct {
		e         Edge
		w         float64
		hasWeight bool
	}
	var got []row
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		w, ok := r.Weight()
		got = append(got, row{e, w, ok})
	}
	want := []row{
		{Edge{1, 2}, 0, false},
		{Edge{3, 4}, 0, false},
		{Edge{5, 6}, 0.25, true},
		{Edge{7, 8}, -1000, true},
		{Edge{9, 10}, 0, false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if r.Format() != FormatText {
		t.Errorf("Format() = %v, want el", r.Format())
	}
}

func TestReadTextErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"one field", "1 2\n3\n", 2, "missing dst"},
		{"four fields", "# c\n1 2 3 4\n", 2, "too many fields"},
		{"letters", "1 2\n\n\nx 2\n", 4, `invalid src "x": not an unsigned decimal integer`},
		{"negative dst", "1 -2\n", 1, `invalid dst "-2"`},
		{"overflow", "18446744073709551616 1\n", 1, "value out of range for uint64"},
		{"bad weight", "1 2 heavy\n", 1, `invalid weight "heavy": invalid syntax`},
		{"nan weight", "1 2\n3 4 NaN\n", 2, "must be finite"},
		{"comment after data", "1 2 #note\n", 1, `invalid weight "#note"`},
		{"spaced comment after data", "1 2 # note\n", 1, "too many fields"},
		{"too long", "1 2\n" + strings.Repeat("1", maxLineLength+1) + "\n", 2, "line longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.el")
			if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("ReadFile error %v is not a *FormatError", err)
			}
			if fe.Line != tc.line {
				t.Errorf("line = %d, want %d (error: %v)", fe.Line, tc.line, err)
			}
			wantPrefix := path + ":" + strconv.Itoa(tc.line) + ": "
			if !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q, want prefix %q and substring %q", err, wantPrefix, tc.msg)
			}
		})
	}
}

func binaryFile(count uint64, records int) []byte {
	b := []byte(BinaryMagic)
	b = binary.LittleEndian.AppendUint64(b, count)
	for i := range records {
		b = binary.LittleEndian.AppendUint64(b, uint64(i))
		b = binary.LittleEndian.AppendUint64(b, uint64(i+1))
	}
	return b
}

func TestReadBinaryErrors(t *testing.T) {
	full := binaryFile(3, 3)
	for _, tc := range []struct {
		name   string
		data   []byte
		offset int64
		msg    string
	}{
		{"short header", full[:12], 8, "truncated header: want an 8-byte edge count, got 4 bytes"},
		{"no records", full[:16], 16, "truncated file: edge 0 of 3 needs 16 bytes, only 0 present"},
		{"partial record", full[:16+16+5], 32, "truncated file: edge 1 of 3 needs 16 bytes, only 5 present"},
		{"count too large", binaryFile(1<<40, 2), 48, "truncated file: edge 2 of 1099511627776"},
		{"trailing data", append(binaryFile(2, 2), 0xff), 48, "trailing data after the 2 edges"},
		{"other version", append([]byte("GTEL0002"), full[8:]...), 0, `unsupported binary edge file version "GTEL0002"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.bin")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("ReadFile error %v is not a *FormatError", err)
			}
			if fe.Offset != tc.offset || fe.Format != FormatBinary {
				t.Errorf("offset = %d format = %v, want %d bin (error: %v)", fe.Offset, fe.Format, tc.offset, err)
			}
			wantPrefix := path + ": byte offset " + strconv.FormatInt(tc.offset, 10) + ": "
			if !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q, want prefix %q and substring %q", err, wantPrefix, tc.msg)
			}
		})
	}
	// The valid file reads back.
	got, err := readAll(bytes.NewReader(full))
	if err != nil || len(got) != 3 || got[2] != (Edge{2, 3}) {
		t.Errorf("valid binary file: got %v, %v", got, err)
	}
}

func TestReaderStickyErrorAndStreamName(t *testing.T) {
	r := NewReader(strings.NewReader("1 2\nbad\n3 4\n"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err1 := r.Next()
	_, err2 := r.Next()
	if err1 == nil || !errors.Is(err1, err2) {
		t.Fatalf("errors %v then %v, want the same error twice", err1, err2)
	}
	if !strings.HasPrefix(err1.Error(), "<stream>:2: ") {
		t.Errorf("error %q does not name <stream> line 2", err1)
	}
}

func TestReadFileMissing(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "nope.el"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.el") {
		t.Errorf("error %v, want a not-exist error naming the file", err)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		got, err := ParseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f.String(), got, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil || !strings.Contains(err.Error(), "must be one of: el, bin") {
		t.Errorf("ParseFormat(csv) error = %v", err)
	}
}

// readAll drains a Reader.
func readAll(r io.Reader) ([]Edge, error) {
	rd := NewReader(r)
	var edges []Edge
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return edges, nil
		}
		if err != nil {
			return edges, err
		}
		edges = append(edges, e)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("1 2\n3 4\n"))
	f.Add([]byte("# c\n% c\n\n1\t2\t0.5\r\n"))
	f.Add([]byte("1 2 3 4\n"))
	f.Add([]byte("18446744073709551615 0\n"))
	f.Add(binaryFile(2, 2))
	f.Add(binaryFile(3, 1))
	f.Add([]byte("GTEL0002"))
	f.Fuzz(func(t *testing.T, data []byte) {
		edges, err := readAll(bytes.NewReader(data))
		if err != nil {
			// bytes.Reader never fails, so every error is about content.
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			if fe.Format == FormatText {
				if lines := bytes.Count(data, []byte("\n")) + 1; fe.Line < 1 || fe.Line > lines {
					t.Fatalf("error line %d outside 1..%d: %v", fe.Line, lines, err)
				}
			} else if fe.Offset < 0 || fe.Offset > int64(len(data)) {
				t.Fatalf("error offset %d outside the %d-byte input: %v", fe.Offset, len(data), err)
			}
			return
		}
		// Whatever parsed must survive both writers unchanged.
		for _, f := range Formats {
			var buf bytes.Buffer
			if err := Write(&buf, f, edges); err != nil {
				t.Fatal(err)
			}
			again, err := readAll(&buf)
			if err != nil {
				t.Fatalf("re-reading %v output: %v", f, err)
			}
			if !slices.Equal(edges, again) && !(len(edges) == 0 && len(again) == 0) {
				t.Fatalf("%v round trip changed %v into %v", f, edges, again)
			}
		}
	})
}

// randomEdges draws n edges over ids below vertices, seeded.
func randomEdges(n int, vertices uint64, seed uint64) []Edge {
	rng := rand.New(rand.NewPCG(seed, 0))
	edges := make([]Edge, n)
	for i := range edges {
		edges[i] = Edge{Src: rng.Uint64N(vertices), Dst: rng.Uint64N(vertices)}
	}
	return edges
}
