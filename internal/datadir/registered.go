package datadir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/jsontext"
)

// registered-analytics.json holds the analytics registered over the HTTP
// API (package server says what they mean and how they combine with the
// configuration's); this file is its format.
//
// Format 2, one JSON object a line, each line ending in '\n':
//
//	{"version":2,"generation":G,"analytics":N,"crc32c":C}
//	{"crc32c":C1,"spec":{...}}
//	... N lines, one per analytic
//
// G counts the saves of the file since it was created (the data directory
// records it with every flush: a missing file, or an older one, is
// refused); N is the number of analytic lines; C is the CRC-32C
// (Castagnoli) of the header line's bytes before `,"crc32c":`; each spec
// is the analytic's spec as compact JSON and Ci its CRC-32C. Every number
// is written in its shortest decimal form, and a file must be byte for
// byte what this package writes for its content, so every damaged byte is
// refused with the file and its offset (a spec's checksum mismatch at the
// spec's first byte). The file is replaced atomically (package durable):
// no crash leaves part of one.
//
// Format 1, written by older graphtides: one JSON object
// {"version":1,"analytics":[spec, ...]} (indented), without checksums.
// It still opens (as generation 0; only its JSON syntax can be checked),
// and the next save writes format 2.
const (
	registeredFormat   = 2
	registeredFormatV1 = 1
)

// RegisteredSpec is one analytic of the file: its spec as JSON (the API's
// form: package server decodes it) and the byte offset of that JSON in
// the file, for errors.
type RegisteredSpec struct {
	JSON   json.RawMessage
	Offset int64
}

// Registered is the open registered-analytics.json of a data directory.
// Safe for concurrent use.
type Registered struct {
	path string
	mu   sync.Mutex // held by Save
	// gen is the generation of the file on disk; exists whether there is
	// one (for the claim without mu, which Save holds while it syncs).
	gen    atomic.Uint64
	exists atomic.Bool
	specs  []RegisteredSpec // as opened
}

// OpenRegistered reads the file at path, of which the store's durable
// state recorded the generation claim (nil: nothing recorded). A missing
// file without a claim is an empty list (the first Save creates it).
// Damage, a missing file the claim proves existed, and a file older than
// the claim (an earlier generation) are refused with a
// *durable.CorruptError naming the file and byte offset.
func OpenRegistered(path string, claim *uint64) (*Registered, error) {
	r := &Registered{path: path}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && claim != nil:
		return nil, r.corrupt(0, fmt.Sprintf("missing: the store's durable state records this file at generation %d (every analytic registered over the API would be dropped without a word); restore it from a backup, or run 'graphtide repair' to start without them (register them again)", *claim))
	case errors.Is(err, os.ErrNotExist):
		return r, nil
	case err != nil:
		return nil, fmt.Errorf("datadir: %w", err)
	}
	gen, specs, cerr := parseRegistered(path, raw)
	if cerr != nil {
		return nil, cerr
	}
	if claim != nil && gen < *claim {
		return nil, r.corrupt(0, fmt.Sprintf("generation %d, but the store's durable state records generation %d: an older copy of the file (registrations or removals since are lost); restore the newest copy", gen, *claim))
	}
	r.gen.Store(gen)
	r.exists.Store(true)
	r.specs = specs
	return r, nil
}

// Specs are the analytics as opened, in file order.
func (r *Registered) Specs() []RegisteredSpec { return r.specs }

// Path is the file's path.
func (r *Registered) Path() string { return r.path }

// Claim is what the data directory records of the file now: its
// generation, and whether it exists.
func (r *Registered) Claim() (uint64, bool) { return r.gen.Load(), r.exists.Load() }

// Save replaces the file with specs (each a JSON object; compacted here)
// in format 2, at the next generation, atomically and durably.
func (r *Registered) Save(specs []json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	gen := r.gen.Load() + 1
	b, err := encodeRegistered(gen, specs)
	if err != nil {
		return err
	}
	if err := durable.WriteFile(r.path, b, 0o644); err != nil {
		return err
	}
	r.gen.Store(gen)
	r.exists.Store(true)
	return nil
}

// writeEmptyRegistered writes an empty list at generation gen to path,
// atomically: what a repair puts in place of a lost or damaged file.
func writeEmptyRegistered(path string, gen uint64) error {
	b, err := encodeRegistered(gen, nil)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, b, 0o644)
}

func (r *Registered) corrupt(off int64, what string) error {
	return &durable.CorruptError{Kind: "registered analytics", File: r.path, Offset: off, What: what}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// registeredHeader is the header line's bytes before `,"crc32c":`.
func registeredHeader(gen uint64, n int) []byte {
	return fmt.Appendf(nil, `{"version":%d,"generation":%d,"analytics":%d`, registeredFormat, gen, n)
}

func encodeRegistered(gen uint64, specs []json.RawMessage) ([]byte, error) {
	h := registeredHeader(gen, len(specs))
	b := fmt.Appendf(h, `,"crc32c":%d}`+"\n", crc32.Checksum(h, castagnoli))
	for i, s := range specs {
		var c bytes.Buffer
		if err := json.Compact(&c, s); err != nil {
			return nil, fmt.Errorf("datadir: analytic %d is not JSON: %w", i, err)
		}
		b = fmt.Appendf(b, `{"crc32c":%d,"spec":%s}`+"\n", crc32.Checksum(c.Bytes(), castagnoli), c.Bytes())
	}
	return b, nil
}

// parseRegistered reads raw, the file at path: its generation and specs.
func parseRegistered(path string, raw []byte) (uint64, []RegisteredSpec, *durable.CorruptError) {
	bad := func(off int64, what string) *durable.CorruptError {
		return &durable.CorruptError{Kind: "registered analytics", File: path, Offset: off, What: what}
	}
	if !bytes.HasPrefix(raw, []byte(`{"version":2,`)) {
		return parseRegisteredV1(raw, bad)
	}
	// differs is the offset of the first byte where line (at off) and
	// want differ.
	differs := func(off int64, line, want []byte) *durable.CorruptError {
		i := 0
		for i < len(line) && i < len(want) && line[i] == want[i] {
			i++
		}
		return bad(off+int64(i), "not in the form graphtide writes (a damaged byte)")
	}
	nextLine := func(off int) ([]byte, bool) {
		end := bytes.IndexByte(raw[off:], '\n')
		if end < 0 {
			return raw[off:], false
		}
		return raw[off : off+end], true
	}
	line, ok := nextLine(0)
	var h struct {
		Version    int    `json:"version"`
		Generation uint64 `json:"generation"`
		Analytics  int    `json:"analytics"`
		CRC32C     uint32 `json:"crc32c"`
	}
	if err := strictJSON(line, &h); err != nil {
		return 0, nil, bad(jsonErrorOffset(err, line), "header line: "+err.Error())
	}
	want := registeredHeader(h.Generation, h.Analytics)
	crc := crc32.Checksum(want, castagnoli)
	if want = fmt.Appendf(want, `,"crc32c":%d}`, h.CRC32C); !bytes.Equal(line, want) || h.Version != registeredFormat || h.Analytics < 0 {
		return 0, nil, differs(0, line, want)
	}
	if !ok {
		return 0, nil, bad(int64(len(line)), "the header line is cut short (no end of line)")
	}
	if h.CRC32C != crc {
		return 0, nil, bad(0, fmt.Sprintf("header checksum mismatch: stored %d, computed %d", h.CRC32C, crc))
	}
	off := len(line) + 1
	var specs []RegisteredSpec
	for i := 0; i < h.Analytics; i++ {
		if off == len(raw) {
			return 0, nil, bad(int64(off), fmt.Sprintf("the file ends after %d of its %d analytics (cut short)", i, h.Analytics))
		}
		line, ok := nextLine(off)
		var e struct {
			CRC32C uint32          `json:"crc32c"`
			Spec   json.RawMessage `json:"spec"`
		}
		if err := strictJSON(line, &e); err != nil {
			return 0, nil, bad(int64(off)+jsonErrorOffset(err, line), fmt.Sprintf("analytic %d: %v", i, err))
		}
		prefix := fmt.Appendf(nil, `{"crc32c":%d,"spec":`, e.CRC32C)
		if want := fmt.Appendf(bytes.Clone(prefix), "%s}", e.Spec); !bytes.Equal(line, want) || !bytes.HasPrefix(e.Spec, []byte("{")) {
			return 0, nil, differs(int64(off), line, want)
		}
		var c bytes.Buffer
		_ = json.Compact(&c, e.Spec) // strictJSON checked it
		at := int64(off + len(prefix))
		if !bytes.Equal(c.Bytes(), e.Spec) {
			return 0, nil, differs(at, e.Spec, c.Bytes())
		}
		if !ok {
			return 0, nil, bad(int64(off+len(line)), fmt.Sprintf("analytic %d: its line is cut short (no end of line)", i))
		}
		if sum := crc32.Checksum(e.Spec, castagnoli); sum != e.CRC32C {
			return 0, nil, bad(at, fmt.Sprintf("analytic %d: checksum mismatch (stored %d, computed %d): its spec was changed", i, e.CRC32C, sum))
		}
		specs = append(specs, RegisteredSpec{JSON: e.Spec, Offset: at})
		off += len(line) + 1
	}
	if off != len(raw) {
		return 0, nil, bad(int64(off), fmt.Sprintf("%d bytes after the %d analytics the header counts", len(raw)-off, h.Analytics))
	}
	return h.Generation, specs, nil
}

// parseRegisteredV1 reads format 1: generation 0.
func parseRegisteredV1(raw []byte, bad func(int64, string) *durable.CorruptError) (uint64, []RegisteredSpec, *durable.CorruptError) {
	var f struct {
		Version   int               `json:"version"`
		Analytics []json.RawMessage `json:"analytics"`
	}
	dec, off, err := jsontext.DecodeStrict(raw, &f)
	if err != nil {
		return 0, nil, bad(off, err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return 0, nil, bad(dec.InputOffset(), "data after the list")
	}
	if f.Version != registeredFormatV1 {
		return 0, nil, bad(0, fmt.Sprintf("content version %d, this graphtide reads %d and %d", f.Version, registeredFormatV1, registeredFormat))
	}
	// Each spec's offset: the file is valid JSON now, so walking its
	// tokens finds each element where the decoder left off.
	specs := make([]RegisteredSpec, 0, len(f.Analytics))
	w := json.NewDecoder(bytes.NewReader(raw))
	depth, inList := 0, false
	for {
		if inList && depth == 2 && w.More() {
			off := w.InputOffset()
			for off < int64(len(raw)) && bytes.IndexByte([]byte(" \t\r\n,"), raw[off]) >= 0 {
				off++
			}
			var spec json.RawMessage
			if err := w.Decode(&spec); err != nil {
				return 0, nil, bad(off, err.Error())
			}
			specs = append(specs, RegisteredSpec{JSON: spec, Offset: off})
			continue
		}
		tok, err := w.Token()
		if err != nil {
			break // io.EOF: the object is done
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
			inList = false
		case "analytics":
			inList = depth == 1
		}
	}
	if len(specs) != len(f.Analytics) {
		return 0, nil, bad(0, "the analytics list could not be walked")
	}
	return 0, specs, nil
}

// trailingError is data after a line's object, at Offset in the line.
type trailingError struct{ Offset int64 }

func (e *trailingError) Error() string { return "data after the object" }

// strictJSON decodes line, one JSON object with only v's fields, into v.
func strictJSON(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if off := dec.InputOffset(); off != int64(len(line)) {
		return &trailingError{Offset: off}
	}
	return nil
}

// jsonErrorOffset is where in line the error err of decoding it was
// found.
func jsonErrorOffset(err error, line []byte) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var tr *trailingError
	switch {
	case errors.As(err, &se):
		return max(se.Offset-1, 0)
	case errors.As(err, &te):
		return max(te.Offset-1, 0)
	case errors.As(err, &tr):
		return tr.Offset
	}
	return int64(len(line))
}
