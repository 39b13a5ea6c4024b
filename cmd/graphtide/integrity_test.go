package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/memdir"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/typedict"
)

// The integrity tests damage a data directory one bit at a time and check
// that nothing is ever lost or silently changed: inspect --verify, the
// read-only open (inspect, query) and the read-write open serve and load
// use each either refuse with a typed error naming the damaged file, or
// give exactly the original contents; verify changes no byte.

// contents is everything a data directory holds: edges (src, dst, type)
// both ways with weights and event times, every key by id, the names of
// the edge types, and the recorded source position.
type contents struct {
	out, in map[[3]uint64]edgeVal
	keys    map[uint64]string
	types   []string
	pos     string
	// vertex records: label and props, as one string each
	records map[uint64][2]string
}

// edgeVal is what an edge carries besides its identity.
type edgeVal struct {
	w    float64
	time int64
}

func (c contents) equal(o contents) bool {
	return maps.Equal(c.out, o.out) && maps.Equal(c.in, o.in) && maps.Equal(c.keys, o.keys) &&
		slices.Equal(c.types, o.types) && c.pos == o.pos && maps.Equal(c.records, o.records)
}

// readContents reads all of d; a damaged data block read on the way is an
// error (a *engine.CorruptionError).
func readContents(d *datadir.Dir) (contents, error) {
	c := contents{keys: map[uint64]string{}, records: map[uint64][2]string{}}
	sn, err := d.Store.Snapshot()
	if err != nil {
		return c, err
	}
	defer sn.Release()
	low, high := sn.VertexBounds()
	scan := func(dir engine.Direction) (map[[3]uint64]edgeVal, error) {
		got := map[[3]uint64]edgeVal{}
		buf := engine.NewScanBuffer(64, 256, true)
		buf.Types, buf.Times = []uint16{}, []int64{}
		for _, band := range [][2]uint64{{0, low}, {engine.HighIDBase, high}} {
			for lo := band[0]; lo < band[1]; {
				if lo, err = sn.Scan(lo, band[1], dir, buf); err != nil {
					return nil, err
				}
				for i := 0; i < buf.Len(); i++ {
					for j, dst := range buf.Neighbors(i) {
						k := int(buf.Offsets[i]) + j
						got[[3]uint64{buf.Vertices[i], dst, uint64(buf.Types[k])}] = edgeVal{buf.Weights[k], buf.Times[k]}
					}
				}
			}
		}
		return got, nil
	}
	if c.out, err = scan(engine.Out); err != nil {
		return c, err
	}
	if d.Store.InEdges() {
		if c.in, err = scan(engine.In); err != nil {
			return c, err
		}
	}
	if err := sn.ScanVertices(0, engine.MaxVertex+1, func(v uint64, rec engine.Vertex) error {
		c.records[v] = [2]string{rec.Label, string(rec.Props)}
		return nil
	}); err != nil {
		return c, err
	}
	if d.Keys != nil {
		for i := 0; i < d.Keys.Len(); i++ {
			if k, ok := d.Keys.Key(keydict.KeyBase + uint64(i)); ok {
				c.keys[keydict.KeyBase+uint64(i)] = k
			}
		}
	}
	c.types = d.Types.Names()
	pos, err := d.Store.SourcePosition()
	c.pos = string(pos)
	return c, err
}

// buildIntegrityDir makes a small data directory with in-edges, several
// flushes, a full compaction, edge and vertex deletes, string keys, edges
// of named types with event times (a type and a time column, types.json)
// and a source position, checks the untyped part against the oracle, and
// returns it with its contents.
func buildIntegrityDir(t *testing.T) (string, contents) {
	t.Helper()
	tmp, dir := t.TempDir(), t.TempDir()
	oracle := edgeOracle{}
	load := func(name string, ops []testOp, extra ...string) {
		t.Helper()
		file := filepath.Join(tmp, name)
		if strings.HasSuffix(name, ".json") {
			writeJSON(t, file, ops)
		} else {
			writeText(t, file, ops)
		}
		args := append([]string{"load", "--dir", dir, "--batch", "100"}, extra...)
		if _, _, err := execute(t, append(args, file)...); err != nil {
			t.Fatal(err)
		}
		oracle.apply(ops...)
	}
	load("a.el", randomOps(21, 400, 60, false), "--in-edges")
	// Vertex records (files of direction vertex), compacted with the
	// rest, and then some in an L0 file: a long one (many cells), a
	// replaced one, a deleted one.
	records := func(name, body string) {
		t.Helper()
		file := filepath.Join(tmp, name)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := execute(t, "load", "--dir", dir, file); err != nil {
			t.Fatal(err)
		}
	}
	records("v1.json", `{"op":"add_vertex","src":5000,"label":"account","props":{"owner":"ann","notes":"`+strings.Repeat("n", 900)+`"}}
{"op":"add_vertex","src":5001,"label":"merchant"}
{"op":"add_vertex","src":"carol","props":{"k":1}}
`)
	load("b.json", randomOps(22, 300, 40, true))
	if _, _, err := execute(t, "compact", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	load("c.json", randomOps(23, 200, 40, true))
	records("v2.json", `{"op":"add_vertex","src":5001,"label":"merchant","props":{"mcc":5411}}
{"op":"add_vertex","src":5002,"label":"device"}
{"op":"delete_vertex","src":5002}
{"op":"add_vertex","src":5003,"label":"person"}
`)
	setSourcePosition(t, dir, ingest.Position{"edges": {0: 9, 1: 4}}.Encode())
	oracle.apply(testOp{kind: engine.OpUpsert, src: vtx{id: 1}, dst: vtx{id: 299}})
	checkStore(t, dir, oracle)
	// Typed, timed edges beside the untyped ones: 1 -> 299, which an
	// untyped edge joins too, gets two more, of two types.
	typed := filepath.Join(tmp, "typed.json")
	if err := os.WriteFile(typed, []byte(`{"src":1,"dst":299,"type":"payment","weight":2.5,"ts":"2026-11-23T10:15:00Z"}
{"src":1,"dst":299,"type":"login","ts":1763892900000}
{"src":"alice","dst":"bob","type":"shares-device"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "load", "--dir", dir, typed); err != nil {
		t.Fatal(err)
	}
	c := readDir(t, dir)
	if len(c.keys) == 0 || len(c.out) == 0 || len(c.types) != 4 || len(c.records) < 3 {
		t.Fatalf("the test directory should hold keys, edges, types and vertex records: %d keys, %d edges, types %v, %d records",
			len(c.keys), len(c.out), c.types, len(c.records))
	}
	var timed int
	for _, v := range c.out {
		if v.time != 0 {
			timed++
		}
	}
	if timed != 2 {
		t.Fatalf("%d edges with an event time, want 2", timed)
	}
	return dir, c
}

// hashDir hashes every file under dir (relative path -> sha256).
func hashDir(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	h := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(from, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// namesFile reports whether err is a typed integrity error about file.
func namesFile(err error, file string) bool {
	var ce *engine.CorruptionError
	var ke *keydict.CorruptError
	var be *datadir.KeyBoundError
	var te *typedict.CorruptError
	switch {
	case errors.As(err, &te):
		return te.File == file
	case errors.As(err, &ce):
		return ce.File == file
	case errors.As(err, &ke):
		return ke.Path == file
	case errors.As(err, &be):
		return file == datadir.KeysPath(be.Dir)
	}
	return false
}

// damage is one damaged copy to judge.
type damage struct {
	name string
	file string // relative to the data directory
	off  int64
}

// judge checks one damaged data directory: inspect --verify changes no
// byte and reports a problem exactly when the data is not intact; the
// read-only and the read-write open each refuse with a typed error naming
// the file, or give exactly want. It reports whether the damage was
// refused.
func judge(t *testing.T, dir, file string, want contents) bool {
	t.Helper()
	before := hashDir(t, dir)
	_, _, verr := execute(t, "inspect", "--dir", dir, "--verify")
	if after := hashDir(t, dir); !maps.Equal(before, after) {
		t.Fatalf("inspect --verify changed the data directory")
	}
	open := func(ro bool) (refused bool) {
		t.Helper()
		var d *datadir.Dir
		var err error
		if ro {
			d, err = datadir.OpenReadOnly(dir)
		} else {
			d, err = datadir.Open(dir, datadir.Options{Create: true})
		}
		if err == nil {
			var got contents
			got, err = readContents(d)
			d.Close()
			if err == nil {
				if !got.equal(want) {
					t.Fatalf("read-only=%v: opened to other contents (%d/%d edges, %d/%d keys)", ro, len(got.out), len(want.out), len(got.keys), len(want.keys))
				}
				return false
			}
		}
		if !namesFile(err, file) {
			t.Fatalf("read-only=%v: error %v is not a typed integrity error naming %s", ro, err, file)
		}
		return true
	}
	refusedRO := open(true)
	if after := hashDir(t, dir); !maps.Equal(before, after) {
		t.Fatalf("a read-only open changed the data directory")
	}
	refusedRW := open(false)
	if refusedRO != refusedRW {
		t.Fatalf("the read-only open refused: %v, the read-write one: %v", refusedRO, refusedRW)
	}
	if refusedRO != (verr != nil) {
		t.Fatalf("inspect --verify says %v, yet the opens refused: %v", verr, refusedRO)
	}
	if verr != nil && !strings.Contains(verr.Error(), file) && !strings.Contains(verr.Error(), filepath.Base(file)) {
		// verify's error names the first problem; the damaged file must
		// be among those it printed.
		out, _, _ := execute(t, "inspect", "--dir", dir, "--verify")
		if !strings.Contains(out, file) {
			t.Fatalf("inspect --verify does not name %s:\n%s", file, out)
		}
	}
	return refusedRO
}

// segmentSample returns offsets in every region of a segment file: its
// header, vertex table, data chunks, chunk checksum table and footer.
func segmentSample(size int64) []int64 {
	var offs []int64
	for o := int64(0); o < 128 && o < size; o += 7 {
		offs = append(offs, o)
	}
	for o := size - 32; o < size; o += 3 {
		offs = append(offs, o)
	}
	for i := int64(1); i <= 40; i++ {
		offs = append(offs, 128+(size-160)*i/41)
	}
	return offs
}

func TestEveryBitFlipIsRefusedOrHarmless(t *testing.T) {
	volume.Mark(t)
	src, want := buildIntegrityDir(t)
	var cases []damage
	for _, f := range []string{filepath.Join(datadir.StoreName, "MANIFEST"), datadir.KeysName, datadir.TypesName} {
		info, err := os.Stat(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < info.Size(); off++ {
			cases = append(cases, damage{f, f, off})
		}
	}
	segs, _ := filepath.Glob(filepath.Join(datadir.StorePath(src), "*.seg"))
	if len(segs) < 3 {
		t.Fatalf("want several segment files, have %v", segs)
	}
	for _, s := range segs {
		info, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(src, s)
		for _, off := range segmentSample(info.Size()) {
			cases = append(cases, damage{rel, rel, off})
		}
	}
	// The directory copied and opened per case: on tmpfs (memdir), not
	// the disk.
	work := filepath.Join(memdir.TempDir(t), "d")
	refused, tried := map[string]int{}, map[string]int{}
	for _, c := range cases {
		copyTree(t, src, work)
		path := filepath.Join(work, c.file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[c.off] ^= 1 << (c.off % 8)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tried[c.name]++
		t.Run(fmt.Sprintf("%s@%d", filepath.Base(c.file), c.off), func(t *testing.T) {
			if judge(t, work, path, want) {
				refused[c.name]++
			}
		})
		if t.Failed() {
			break
		}
	}
	// Stronger than "refused or harmless": every byte of these files is
	// covered by a checksum or checked to be zero, so every flip is caught.
	for _, n := range slices.Sorted(maps.Keys(tried)) {
		t.Logf("%s: %d of %d flips refused", n, refused[n], tried[n])
		if refused[n] != tried[n] {
			t.Errorf("%s: %d flips went unnoticed (harmless, but no checksum covers those bytes)", n, tried[n]-refused[n])
		}
	}
}

// TestServeRefusesDamage runs serve itself on damaged data directories: it
// exits with an error naming the damaged file before it starts anything,
// and leaves every file as it was.
func TestServeRefusesDamage(t *testing.T) {
	src, _ := buildIntegrityDir(t)
	manifest := filepath.Join(datadir.StoreName, "MANIFEST")
	segs, _ := filepath.Glob(filepath.Join(datadir.StorePath(src), "*.seg"))
	sort.Strings(segs)
	seg, _ := filepath.Rel(src, segs[0])
	for _, c := range []struct {
		name, file string
		damage     func(path string) error
	}{
		{"a flipped MANIFEST length", manifest, func(p string) error { return flipAt(p, 16+2) }},
		{"a flipped keys.dict key", datadir.KeysName, func(p string) error { return flipAt(p, 16+12) }},
		{"a flipped segment header", seg, func(p string) error { return flipAt(p, 40) }},
		{"an empty MANIFEST", manifest, func(p string) error { return os.Truncate(p, 0) }},
		{"a missing MANIFEST", manifest, os.Remove},
		{"a missing keys.dict", datadir.KeysName, os.Remove},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "d")
			copyTree(t, src, work)
			path := filepath.Join(work, c.file)
			if err := c.damage(path); err != nil {
				t.Fatal(err)
			}
			before := hashDir(t, work)
			_, _, err := execute(t, "serve", "--dir", work, "--brokers", "127.0.0.1:1", "--http-addr", "127.0.0.1:0")
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("serve: error %v, want one naming %s", err, path)
			}
			after := hashDir(t, work)
			delete(after, filepath.Join(datadir.StoreName, "LOCK"))
			delete(before, filepath.Join(datadir.StoreName, "LOCK"))
			if !maps.Equal(before, after) {
				t.Fatalf("serve changed the data directory it refused")
			}
		})
	}
}

func flipAt(path string, off int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[off] ^= 0x10
	return os.WriteFile(path, b, 0o644)
}
