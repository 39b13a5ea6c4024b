package datadir

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/memdir"
)

var testSpecs = []json.RawMessage{
	json.RawMessage(`{"name":"pr","type":"pagerank","damping":0.85}`),
	json.RawMessage(` { "name": "reach", "type": "bfs", "root": "acct-<7>" } `),
}

// TestRegisteredRoundTrip: Save writes every spec (compacted) at the next
// generation; OpenRegistered reads them back with their byte offsets.
func TestRegisteredRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), RegisteredName)
	r, err := OpenRegistered(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := r.Claim(); ok || g != 0 {
		t.Fatalf("a missing file claims %d %v", g, ok)
	}
	for gen := uint64(1); gen <= 3; gen++ {
		if err := r.Save(testSpecs[:gen%3]); err != nil {
			t.Fatal(err)
		}
		if g, ok := r.Claim(); !ok || g != gen {
			t.Fatalf("after save %d: claim %d %v", gen, g, ok)
		}
	}
	r, err = OpenRegistered(path, ptr(3))
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := r.Claim(); g != 3 || len(r.Specs()) != 0 {
		t.Fatalf("generation %d, %d specs", g, len(r.Specs()))
	}
	if err := r.Save(testSpecs); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	r, err = OpenRegistered(path, ptr(4))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range r.Specs() {
		var want bytes.Buffer
		json.Compact(&want, testSpecs[i])
		if !bytes.Equal(s.JSON, want.Bytes()) || !bytes.Equal(raw[s.Offset:s.Offset+int64(len(s.JSON))], s.JSON) {
			t.Fatalf("spec %d: %s at %d", i, s.JSON, s.Offset)
		}
	}
}

func ptr(v uint64) *uint64 { return &v }

// TestRegisteredEveryByte: every flipped bit and every cut of the file is
// refused with the file and a byte offset inside the damaged line (a
// flipped digit of pagerank's damping 0.85 among them), and never read
// as other analytics.
func TestRegisteredEveryByte(t *testing.T) {
	path := filepath.Join(memdir.TempDir(t), RegisteredName) // a file rewritten per byte: on tmpfs, not the disk
	r, _ := OpenRegistered(path, nil)
	if err := r.Save(testSpecs); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	lineOf := func(off int64) (int64, int64) { // the line holding off
		start := int64(bytes.LastIndexByte(good[:off], '\n') + 1)
		end := int64(bytes.IndexByte(good[off:], '\n'))
		return start, off + end
	}
	refused := func(what string, data []byte, lo, hi int64) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenRegistered(path, ptr(1))
		var ce *durable.CorruptError
		if !errors.As(err, &ce) || ce.File != path || ce.Offset < lo || ce.Offset > hi {
			t.Fatalf("%s: %v, want a refusal at a byte offset in [%d, %d]", what, err, lo, hi)
		}
	}
	damping := int64(bytes.Index(good, []byte("0.85")) + 3)
	for off := int64(0); off < int64(len(good)); off++ {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[off] ^= 1 << bit
			lo, hi := lineOf(off)
			if off == damping && bit == 0 {
				if !bytes.Contains(b, []byte("0.84")) {
					t.Fatal("the flip is not 0.85 -> 0.84")
				}
			}
			refused("a flipped bit", b, lo, hi)
		}
	}
	for cut := int64(0); cut < int64(len(good)); cut++ {
		refused("a cut", good[:cut], 0, int64(len(good)))
	}
	// Bytes added at the end, and a line of a removed analytic.
	refused("a line added", append(append([]byte(nil), good...), "{}\n"...), int64(len(good)), int64(len(good)))
	nl := bytes.IndexByte(good, '\n')
	second := nl + 1 + bytes.IndexByte(good[nl+1:], '\n') + 1
	refused("a line removed", append(append([]byte(nil), good[:nl+1]...), good[second:]...), int64(nl+1), int64(len(good)))
}

// TestRegisteredClaims: a missing file, or an older generation, is
// refused when the store's durable state claims the file.
func TestRegisteredClaims(t *testing.T) {
	path := filepath.Join(t.TempDir(), RegisteredName)
	r, _ := OpenRegistered(path, nil)
	r.Save(testSpecs)
	old, _ := os.ReadFile(path)
	r.Save(testSpecs[:1])
	if _, err := OpenRegistered(path, ptr(2)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, old, 0o644)
	if _, err := OpenRegistered(path, ptr(2)); err == nil || !strings.Contains(err.Error(), "older copy") {
		t.Fatalf("an older generation: %v", err)
	}
	os.Remove(path)
	if _, err := OpenRegistered(path, ptr(2)); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing: %v", err)
	}
	if r, err := OpenRegistered(path, nil); err != nil || len(r.Specs()) != 0 {
		t.Fatalf("missing without a claim: %v", err)
	}
}

// TestRegisteredFormat1: the unchecksummed format of older graphtides
// still opens, as generation 0, with each spec's offset; the next save
// writes format 2.
func TestRegisteredFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), RegisteredName)
	v1 := "{\n  \"version\": 1,\n  \"analytics\": [\n    {\n      \"name\": \"pr\",\n      \"type\": \"pagerank\"\n    },\n    {\"name\":\"x\",\"type\":\"wcc\"}\n  ]\n}\n"
	os.WriteFile(path, []byte(v1), 0o644)
	r, err := OpenRegistered(path, ptr(0))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := r.Claim(); g != 0 || !ok || len(r.Specs()) != 2 {
		t.Fatalf("format 1: generation %d %v, %d specs", g, ok, len(r.Specs()))
	}
	for _, s := range r.Specs() {
		if !strings.HasPrefix(v1[s.Offset:], string(s.JSON)) {
			t.Fatalf("spec %s at offset %d: the file holds %q there", s.JSON, s.Offset, v1[s.Offset:])
		}
	}
	if _, err := OpenRegistered(path, ptr(1)); err == nil {
		t.Fatal("format 1 (generation 0) taken for a claimed generation 1")
	}
	if err := r.Save([]json.RawMessage{r.Specs()[1].JSON}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, []byte(`{"version":2,"generation":1,`)) {
		t.Fatalf("saved as %s", after)
	}
	for _, bad := range []string{`{"version":1,"analytics":[{"name":"x"}`, `{"version":3,"analytics":[]}`, `{"version":1,"analytics":[]} x`, ``} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := OpenRegistered(path, nil); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}
