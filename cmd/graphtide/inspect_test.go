package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/inspect"
	"github.com/graphtide/graphtide/internal/keydict"
)

// loadTestStore makes a data directory with in-edges and files on L0 and
// L1: text edges loaded with 1 MiB MemGraphs and compacted, then JSON edges
// with string keys, which fit in one MemGraph, loaded on top.
func loadTestStore(t *testing.T) string {
	t.Helper()
	tmp, dir := t.TempDir(), t.TempDir()
	text, js := filepath.Join(tmp, "g.el"), filepath.Join(tmp, "k.json")
	writeText(t, text, randomOps(11, 30000, 300, false))
	writeJSON(t, js, randomOps(12, 3000, 200, true))
	if _, _, err := execute(t, "load", "--dir", dir, "--in-edges", "--memgraph-mib", "1", text); err != nil {
		t.Fatal(err)
	}
	s, err := openStore(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "load", "--dir", dir, "--memgraph-mib", "1", js); err != nil {
		t.Fatal(err)
	}
	return dir
}

// setSourcePosition applies one more edge with source position pos and
// flushes, as serve's ingest does.
func setSourcePosition(t *testing.T, dir string, pos []byte) {
	t.Helper()
	s, err := openStore(dir, engine.Options{DisableAutoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b engine.Batch
	b.Insert(1, 299)
	b.SetSourcePosition(pos)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}

// engineView is what the engine itself says about the store in dir.
type engineView struct {
	m         engine.Metrics
	files     []engine.FileInfo
	low, high uint64
	inEdges   bool
	keys      int
}

func viewStore(t *testing.T, dir string) engineView {
	t.Helper()
	s, err := openStore(dir, engine.Options{DisableAutoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v engineView
	if v.m, err = s.Metrics(); err != nil {
		t.Fatal(err)
	}
	if v.files, err = s.Files(); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	v.low, v.high = sn.VertexBounds()
	sn.Release()
	v.inEdges = s.InEdges()
	d, err := keydict.Open(datadir.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	v.keys = d.Len()
	d.Close()
	return v
}

func TestInspectMatchesEngine(t *testing.T) {
	dir := loadTestStore(t)
	edgesID, auditID := ingest.TopicID{1, 2, 3}, ingest.TopicID{0xff, 9}
	setSourcePosition(t, dir, ingest.Recorded{ClusterID: "cluster-A", TopicIDs: map[string]ingest.TopicID{"edges": edgesID, "audit": auditID},
		Position: ingest.Position{"edges": {3: 7, 0: 42}, "audit": {1: 5}}}.Encode())
	v := viewStore(t, dir)
	if len(v.files) < 3 || v.m.Levels[0].Files == 0 || v.m.Levels[1].Files == 0 {
		t.Fatalf("the test store should have files on L0 and L1, has %+v", v.m.Levels)
	}

	out, _, err := execute(t, "inspect", "--dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep inspect.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if rep.Dir != dir || rep.Store != datadir.StorePath(dir) || !rep.InEdges || rep.DurableSeq != v.m.DurableSeq || rep.DurableSeq == 0 {
		t.Errorf("report header %+v, want dir %s, in-edges, durable seq %d", rep, dir, v.m.DurableSeq)
	}
	if man, err := os.Stat(filepath.Join(datadir.StorePath(dir), "MANIFEST")); err != nil || rep.ManifestBytes != man.Size() {
		t.Errorf("manifest_bytes = %d, want the MANIFEST's size (%v)", rep.ManifestBytes, err)
	}
	if rep.VertexBounds != (inspect.VertexBounds{Numeric: v.low, Keys: v.high}) || v.low != 300 || v.high <= keydict.KeyBase {
		t.Errorf("vertex bounds %+v, engine says %d, %d", rep.VertexBounds, v.low, v.high)
	}
	wantPos := []inspect.KafkaOffset{{Topic: "audit", TopicID: auditID.String(), Partition: 1, NextOffset: 5}, {Topic: "edges", TopicID: edgesID.String(), Partition: 0, NextOffset: 42}, {Topic: "edges", TopicID: edgesID.String(), Partition: 3, NextOffset: 7}}
	if rep.SourcePosition == nil || !slices.Equal(rep.SourcePosition.Kafka, wantPos) || rep.SourcePosition.Hex != "" || rep.SourcePosition.ClusterID != "cluster-A" {
		t.Errorf("source position %+v, want cluster-A and %v", rep.SourcePosition, wantPos)
	}
	if rep.KeyDictionary == nil || rep.KeyDictionary.Keys != v.keys || v.keys == 0 {
		t.Errorf("key dictionary %+v, want %d keys", rep.KeyDictionary, v.keys)
	}
	if len(rep.Levels) != len(v.m.Levels) {
		t.Fatalf("%d levels, engine has %d", len(rep.Levels), len(v.m.Levels))
	}
	var total inspect.Size
	for i, l := range v.m.Levels {
		want := inspect.Level{Level: i, Size: inspect.Size{Files: l.Files, Bytes: l.Bytes, EdgeVersions: l.Entries}}
		if rep.Levels[i] != want {
			t.Errorf("level %d: %+v, engine says %+v", i, rep.Levels[i], want)
		}
		total.Files, total.Bytes, total.EdgeVersions = total.Files+l.Files, total.Bytes+l.Bytes, total.EdgeVersions+l.Entries
	}
	if rep.Total != total || total.Bytes != v.m.DiskBytes() {
		t.Errorf("total %+v, want %+v", rep.Total, total)
	}
	if len(rep.Files) != len(v.files) {
		t.Fatalf("%d files, engine has %d", len(rep.Files), len(v.files))
	}
	for i, f := range v.files {
		got := rep.Files[i]
		want := inspect.File{Name: f.Name, Level: f.Level, Direction: map[engine.Direction]string{engine.Out: "out", engine.In: "in"}[f.Dir],
			MinSrc: f.MinSrc, MaxSrc: f.MaxSrc, Vertices: f.Vertices, MaxDst: f.MaxDst, Entries: f.Entries, Bytes: f.Bytes,
			MinSeq: f.MinSeq, MaxSeq: f.MaxSeq}
		flags := got.Flags
		got.Flags = nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("file %d: %+v, engine says %+v", i, got, want)
		}
		info, err := os.Stat(filepath.Join(datadir.StorePath(dir), f.Name))
		if err != nil || uint64(info.Size()) != f.Bytes {
			t.Errorf("file %s: %v, size on disk differs from %d bytes", f.Name, err, f.Bytes)
		}
		wantFlags := map[string]bool{"dense": f.Dense, "sparse": !f.Dense, "dst32": f.Dst32, "versions": f.Versions,
			"weights": f.Weights, "multiversion": f.MultiVersion, "tombstones": f.Tombstones}
		for name, on := range wantFlags {
			if slices.Contains(flags, name) != on {
				t.Errorf("file %s: flags %v, engine says %s=%v", f.Name, flags, name, on)
			}
		}
	}
	if rep.Verify != nil {
		t.Errorf("verify reported without --verify: %+v", rep.Verify)
	}

	// The text form says the same.
	out, _, err = execute(t, "inspect", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("store %s (out-edges and in-edges)\n", datadir.StorePath(dir)),
		fmt.Sprintf("manifest: durable sequence number %d, %d bytes\n", rep.DurableSeq, rep.ManifestBytes),
		fmt.Sprintf("vertex bounds: numeric ids below 300, key ids in [%d, %d)\n", keydict.KeyBase, v.high),
		"source position: Kafka audit/1 next offset 5, edges/0 next offset 42, edges/3 next offset 7\n",
		"source: Kafka cluster cluster-A; topic ids: audit " + auditID.String() + ", edges " + edgesID.String() + "\n",
		fmt.Sprintf("key dictionary: %d keys, 0 numbers from 2^32 up mapped to dense ids, %d bytes\n", v.keys, rep.KeyDictionary.Bytes),
		fmt.Sprintf("size: %d bytes in %d files\n", total.Bytes, total.Files),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	for i, l := range v.m.Levels {
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^\s+L%d\s+%d\s+%d\s+%d$`, i, l.Files, l.Bytes, l.Entries))
		if (l.Files > 0 || i == 0) && !row.MatchString(out) {
			t.Errorf("text output lacks the row of L%d (%+v):\n%s", i, l, out)
		}
	}
	for _, f := range rep.Files {
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+L%d\s+%s\s+%d\.\.%d\s+%d\s+%d\s+%d\s+%d\s+%d\.\.%d\s+%s$`, regexp.QuoteMeta(f.Name),
			f.Level, f.Direction, f.MinSrc, f.MaxSrc, f.Vertices, f.MaxDst, f.Entries, f.Bytes, f.MinSeq, f.MaxSeq, strings.Join(f.Flags, ",")))
		if !row.MatchString(out) {
			t.Errorf("text output lacks the row of %s (%+v):\n%s", f.Name, f, out)
		}
	}
}

func TestInspectOtherSourcePositionAndNoKeys(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	file := filepath.Join(tmp, "g.el")
	writeFile(t, file, "1 2\n")
	if _, _, err := execute(t, "load", "--dir", dir, file); err != nil {
		t.Fatal(err)
	}
	out, _, err := execute(t, "inspect", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"source position: none recorded\n", "key dictionary: 0 keys, 0 numbers from 2^32 up mapped to dense ids, 16 bytes\n", "store " + datadir.StorePath(dir) + " (out-edges and in-edges)\n",
		"files recorded with the store: no file beside the store that it depends on\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// Typed edges: the store records the type dictionary with them.
	writeFile(t, file, `{"src":1,"dst":2,"type":"pay"}`+"\n")
	if _, _, err := execute(t, "load", "--dir", dir, file); err != nil {
		t.Fatal(err)
	}
	if out, _, err = execute(t, "inspect", "--dir", dir); err != nil || !strings.Contains(out, "files recorded with the store: types.json 2 (type names, type 0 included)\n") {
		t.Fatalf("after a typed load: %v\n%s", err, out)
	}
	setSourcePosition(t, dir, []byte("file:offset=17"))
	if err := os.Remove(datadir.KeysPath(dir)); err != nil {
		t.Fatal(err)
	}
	out, _, err = execute(t, "inspect", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"source position: 14 bytes, not a Kafka position: " + hex.EncodeToString([]byte("file:offset=17")) + "\n", "key dictionary: none\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(datadir.KeysPath(dir)); err == nil {
		t.Error("inspect created a key dictionary")
	}
}

// TestInspectVerifyReportsCorruption flips a byte in the middle of a
// segment's data: opening still works (it checks headers, footers and
// indexes), inspect --verify names the file and the offset of the chunk
// and fails.
func TestInspectVerifyReportsCorruption(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "%d %d %d\n", i%500, (i*7919)%100000, i%3)
	}
	file := filepath.Join(tmp, "g.el")
	writeFile(t, file, b.String())
	if _, _, err := execute(t, "load", "--dir", dir, file); err != nil {
		t.Fatal(err)
	}
	out, _, err := execute(t, "inspect", "--dir", dir, "--verify")
	if err != nil {
		t.Fatalf("verify of a sound store: %v", err)
	}
	// One flush of a new store (which keeps in-edges): the out-edge
	// segment and its in-edge twin, in that order.
	segs, _ := filepath.Glob(filepath.Join(datadir.StorePath(dir), "*.seg"))
	if len(segs) != 2 {
		t.Fatalf("want two segments (out- and in-edges) after one flush, have %v", segs)
	}
	var size int64
	for _, f := range segs {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		size += info.Size()
	}
	if want := fmt.Sprintf("\nverify: ok, no problem found (2 segment files, %d bytes read; the manifest, the key dictionary and every file beside the store checked)\n", size); !strings.Contains(out, want) {
		t.Fatalf("verify of a sound store printed:\n%s\nwant %q", out, want)
	}
	bad := segs[1] // the in-edge file: damage there is refused as in any file
	data, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	off := len(data) / 2
	data[off] ^= 0x5a
	writeFile(t, bad, string(data))

	if _, _, err := execute(t, "inspect", "--dir", dir); err != nil {
		t.Fatalf("inspect without --verify reads no data chunk, yet: %v", err)
	}
	out, _, err = execute(t, "inspect", "--dir", dir, "--verify")
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("inspect --verify of a corrupt store: error %v, want one naming %s", err, bad)
	}
	m := regexp.MustCompile(`(?m)^PROBLEM: (\S+) at byte offset (\d+): .+\nverify: 1 problem\(s\) in `).FindStringSubmatch(out)
	if m == nil || m[1] != bad {
		t.Fatalf("inspect --verify printed:\n%s\nwant the corrupt file %s", out, bad)
	}
	var at int
	fmt.Sscan(m[2], &at)
	if at > off || off-at >= 64<<10 {
		t.Errorf("reported offset %d is not that of the chunk holding byte %d", at, off)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("offset %d", at)) {
		t.Errorf("error %q does not give the offset %d", err, at)
	}

	out, _, err = execute(t, "inspect", "--dir", dir, "--verify", "--json")
	if err == nil {
		t.Fatal("inspect --verify --json of a corrupt store succeeded")
	}
	var rep inspect.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if v := rep.Verify; v == nil || v.OK || len(v.Problems) != 1 || v.Problems[0].File != bad || v.Problems[0].Offset != int64(at) || v.Problems[0].What == "" {
		t.Errorf("verify = %+v, want one problem: file %s offset %d", rep.Verify, bad, at)
	}
}

// checkNeedsStore runs cmd (inspect or compact) on directories without a
// store: the errors say what to do, and nothing is created.
func checkNeedsStore(t *testing.T, cmd string) {
	dir := filepath.Join(t.TempDir(), "nothing-here")
	_, _, err := execute(t, cmd, "--dir", dir)
	want := "no store in --dir " + dir + " (" + datadir.StorePath(dir) + " has no MANIFEST): create one with 'graphtide load --dir " + dir + " FILE...' or 'graphtide serve --dir " + dir + "'"
	if err == nil || err.Error() != want {
		t.Errorf("%s: error = %v, want %q", cmd, err, want)
	}
	t.Setenv("GRAPHTIDE_DIR", dir+"-env")
	if _, _, err := execute(t, cmd); err == nil || !strings.Contains(err.Error(), "no store in --dir "+dir+"-env ") {
		t.Errorf("%s: GRAPHTIDE_DIR not applied: %v", cmd, err)
	}
	if _, _, err := execute(t, cmd, "--dir", ""); err == nil || err.Error() != "--dir must not be empty" {
		t.Errorf("%s --dir '': %v", cmd, err)
	}
	if _, _, err := execute(t, cmd, "extra"); err == nil || !strings.Contains(err.Error(), `unknown command "extra"`) {
		t.Errorf("%s extra: %v", cmd, err)
	}
	empty := t.TempDir() // a directory, but no store in it
	if _, _, err := execute(t, cmd, "--dir", empty); err == nil || !strings.HasPrefix(err.Error(), "no store in --dir") {
		t.Errorf("%s on an empty directory: %v", cmd, err)
	}
	for _, d := range []string{dir, dir + "-env", datadir.StorePath(empty)} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s created %s", cmd, d)
		}
	}
}

func TestInspectNeedsAStore(t *testing.T) { checkNeedsStore(t, "inspect") }
