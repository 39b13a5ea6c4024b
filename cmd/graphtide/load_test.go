package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/keydict"
)

// vtx is a vertex of a test file: a numeric id, or a string key when key is
// set (its id comes from the data directory's key dictionary).
type vtx struct {
	id  uint64
	key string
}

func (v vtx) text() string {
	if v.key != "" {
		return v.key
	}
	return strconv.FormatUint(v.id, 10)
}

func (v vtx) json() string {
	if v.key != "" {
		return strconv.Quote(v.key)
	}
	return strconv.FormatUint(v.id, 10)
}

// testOp is one operation of a test file.
type testOp struct {
	kind      engine.OpKind
	src, dst  vtx
	weight    float64
	hasWeight bool
}

// edgeOracle is the independent model of the store: live out-edges and
// their weights, updated op by op with the documented semantics.
type edgeOracle map[[2]vtx]float64

func (o edgeOracle) apply(ops ...testOp) {
	for _, p := range ops {
		switch p.kind {
		case engine.OpUpsert:
			w := 1.0
			if p.hasWeight {
				w = p.weight
			}
			o[[2]vtx{p.src, p.dst}] = w
		case engine.OpDeleteEdge:
			delete(o, [2]vtx{p.src, p.dst})
		case engine.OpDeleteVertex:
			for k := range o {
				if k[0] == p.src || k[1] == p.src {
					delete(o, k)
				}
			}
		}
	}
}

// ids resolves the oracle's keys through the dictionary of data directory
// dir; every key must be there.
func (o edgeOracle) ids(t *testing.T, dir string) map[[2]uint64]float64 {
	t.Helper()
	var d *keydict.Dict
	id := func(v vtx) uint64 {
		if v.key == "" {
			return v.id
		}
		if d == nil {
			var err error
			if d, err = keydict.Open(datadir.KeysPath(dir)); err != nil {
				t.Fatal(err)
			}
		}
		n, ok := d.Lookup(v.key)
		if !ok {
			t.Fatalf("key %q is not in the dictionary", v.key)
		}
		return n
	}
	m := make(map[[2]uint64]float64, len(o))
	for k, w := range o {
		m[[2]uint64{id(k[0]), id(k[1])}] = w
	}
	if d != nil {
		d.Close()
	}
	return m
}

// randomOps returns n ops over numeric vertices below nv (and, with keys,
// over string keys too): upserts with and without weights, deletes of
// edges that mostly exist, and a few vertex deletes.
func randomOps(seed uint64, n, nv int, keys bool) []testOp {
	r := rand.New(rand.NewPCG(seed, 7))
	vertex := func() vtx {
		if keys && r.IntN(3) == 0 {
			return vtx{key: fmt.Sprintf("acct-%d", r.IntN(nv))}
		}
		return vtx{id: uint64(r.IntN(nv))}
	}
	var ops, ups []testOp
	for len(ops) < n {
		switch x := r.IntN(100); {
		case x < 1:
			ops = append(ops, testOp{kind: engine.OpDeleteVertex, src: vertex()})
		case x < 15 && len(ups) > 0:
			u := ups[r.IntN(len(ups))]
			ops = append(ops, testOp{kind: engine.OpDeleteEdge, src: u.src, dst: u.dst})
		default:
			op := testOp{kind: engine.OpUpsert, src: vertex(), dst: vertex()}
			if r.IntN(2) == 0 {
				op.weight, op.hasWeight = float64(r.IntN(2000)-1000)/8, true
			}
			ops = append(ops, op)
			ups = append(ups, op)
		}
	}
	return ops
}

// writeText writes ops as a text edge list, with comments, blank lines and
// CRLF line ends here and there.
func writeText(t *testing.T, path string, ops []testOp) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# a SNAP-style edge list\n\n")
	for i, p := range ops {
		switch p.kind {
		case engine.OpUpsert:
			fmt.Fprintf(&b, "%s\t%s", p.src.text(), p.dst.text())
			if p.hasWeight {
				fmt.Fprintf(&b, " %v", p.weight)
			}
		case engine.OpDeleteEdge:
			fmt.Fprintf(&b, "d %s %s", p.src.text(), p.dst.text())
		case engine.OpDeleteVertex:
			fmt.Fprintf(&b, "dv %s", p.src.text())
		}
		switch i % 97 {
		case 0:
			b.WriteString("\r\n")
		case 1:
			b.WriteString("\n% comment\n   \n")
		default:
			b.WriteString("\n")
		}
	}
	writeFile(t, path, b.String())
}

// writeJSON writes ops as JSON lines: mostly one object a line, some lines
// an array of up to three objects.
func writeJSON(t *testing.T, path string, ops []testOp) {
	t.Helper()
	var b bytes.Buffer
	obj := func(p testOp) string {
		switch p.kind {
		case engine.OpDeleteEdge:
			return fmt.Sprintf(`{"op":"delete","src":%s,"dst":%s}`, p.src.json(), p.dst.json())
		case engine.OpDeleteVertex:
			return fmt.Sprintf(`{"op":"delete_vertex","src":%s}`, p.src.json())
		}
		if p.hasWeight {
			return fmt.Sprintf(`{"src":%s,"dst":%s,"weight":%v}`, p.src.json(), p.dst.json(), p.weight)
		}
		return fmt.Sprintf(`{"op":"add","src":%s,"dst":%s}`, p.src.json(), p.dst.json())
	}
	for i := 0; i < len(ops); {
		if n := min(1+i%7/5*2, len(ops)-i); n > 1 {
			parts := make([]string, n)
			for j := range parts {
				parts[j] = obj(ops[i+j])
			}
			fmt.Fprintf(&b, "[%s]\n", strings.Join(parts, ", "))
			i += n
			continue
		}
		b.WriteString(obj(ops[i]) + "\n")
		i++
	}
	writeFile(t, path, b.String())
}

// binOps returns n upserts (weight 1) with duplicates, as a GTEL file holds.
func binOps(seed uint64, n, nv int) ([]gen.Edge, []testOp) {
	r := rand.New(rand.NewPCG(seed, 9))
	edges := make([]gen.Edge, n)
	ops := make([]testOp, n)
	for i := range edges {
		edges[i] = gen.Edge{Src: uint64(r.IntN(nv)), Dst: uint64(r.IntN(nv))}
		ops[i] = testOp{kind: engine.OpUpsert, src: vtx{id: edges[i].Src}, dst: vtx{id: edges[i].Dst}}
	}
	return edges, ops
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// storeContents reads every out-edge (and in-edge, if kept) of the store
// in data directory dir, with weights, scanning both id bands.
func storeContents(t *testing.T, dir string) (out, in map[[2]uint64]float64) {
	t.Helper()
	s, err := openStore(dir, engine.Options{DisableAutoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	low, high := sn.VertexBounds()
	scan := func(d engine.Direction) map[[2]uint64]float64 {
		got := map[[2]uint64]float64{}
		buf := engine.NewScanBuffer(64, 256, true)
		for _, band := range [][2]uint64{{0, low}, {engine.HighIDBase, high}} {
			for lo := band[0]; lo < band[1]; {
				if lo, err = sn.Scan(lo, band[1], d, buf); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < buf.Len(); i++ {
					for j, dst := range buf.Neighbors(i) {
						got[[2]uint64{buf.Vertices[i], dst}] = buf.Weights[int(buf.Offsets[i])+j]
					}
				}
			}
		}
		return got
	}
	out = scan(engine.Out)
	if s.InEdges() {
		in = scan(engine.In)
	}
	return out, in
}

func reversed(m map[[2]uint64]float64) map[[2]uint64]float64 {
	r := make(map[[2]uint64]float64, len(m))
	for k, w := range m {
		r[[2]uint64{k[1], k[0]}] = w
	}
	return r
}

func diffEdges(want, got map[[2]uint64]float64) string {
	var d []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("missing %v (weight %v)", k, w))
		} else if g != w {
			d = append(d, fmt.Sprintf("weight of %v: got %v, want %v", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("unexpected %v", k))
		}
	}
	sort.Strings(d)
	if len(d) > 8 {
		d = append(d[:8], fmt.Sprintf("... %d more", len(d)-8))
	}
	return strings.Join(d, "; ")
}

// checkStore compares the store of data directory dir with the oracle, in
// both directions when the store keeps in-edges.
func checkStore(t *testing.T, dir string, want edgeOracle) {
	t.Helper()
	w := want.ids(t, dir)
	out, in := storeContents(t, dir)
	if d := diffEdges(w, out); d != "" {
		t.Fatalf("store out-edges differ from the oracle (%d edges): %s", len(w), d)
	}
	if in != nil {
		if d := diffEdges(reversed(w), in); d != "" {
			t.Fatalf("store in-edges differ from the oracle: %s", d)
		}
	}
}

var loadedLine = regexp.MustCompile(`^loaded (\d+) operations \((\d+) upserts, (\d+) edge deletes, (\d+) vertex deletes, (\d+) vertex records\) from (\d+) files into \S+ in [0-9.]+ s: \d+ ops/s, flushed\n$`)

func countKinds(ops []testOp) (up, del, vdel int) {
	for _, p := range ops {
		switch p.kind {
		case engine.OpUpsert:
			up++
		case engine.OpDeleteEdge:
			del++
		default:
			vdel++
		}
	}
	return
}

func checkLoadedLine(t *testing.T, out string, files int, ops []testOp) {
	t.Helper()
	up, del, vdel := countKinds(ops)
	want := []string{strconv.Itoa(len(ops)), strconv.Itoa(up), strconv.Itoa(del), strconv.Itoa(vdel), "0", strconv.Itoa(files)}
	m := loadedLine.FindStringSubmatch(out)
	if m == nil || strings.Join(m[1:], " ") != strings.Join(want, " ") {
		t.Fatalf("load printed %q, want a line matching %v with %v", out, loadedLine, want)
	}
}

// TestLoadEachFormat loads one file of each format, by detection and by an
// explicit --format, and compares the store with the oracle.
func TestLoadEachFormat(t *testing.T) {
	tmp := t.TempDir()
	textOps := randomOps(1, 20000, 400, false)
	keyOps := randomOps(2, 5000, 300, true)
	edges, bops := binOps(3, 20000, 1000)
	writeText(t, filepath.Join(tmp, "g.el"), textOps)
	writeText(t, filepath.Join(tmp, "keys.txt"), keyOps)
	writeJSON(t, filepath.Join(tmp, "g.jsonl"), keyOps)
	if err := edgefile.WriteFile(filepath.Join(tmp, "g.bin"), edgefile.FormatBinary, edges); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, format string
		ops          []testOp
	}{
		{"g.el", "text", textOps},
		{"keys.txt", "text", keyOps},
		{"g.jsonl", "json", keyOps},
		{"g.bin", "bin", bops},
	} {
		for _, format := range []string{"auto", tc.format} {
			t.Run(tc.file+"/"+format, func(t *testing.T) {
				dir := t.TempDir()
				out, _, err := execute(t, "load", "--dir", dir, "--format", format, "--batch", "999", filepath.Join(tmp, tc.file))
				if err != nil {
					t.Fatal(err)
				}
				checkLoadedLine(t, out, 1, tc.ops)
				want := edgeOracle{}
				want.apply(tc.ops...)
				checkStore(t, dir, want)
			})
		}
	}
}

// TestLoadSeveralFilesInOrder loads a binary, a text and a json file in one
// run, with in-edges and MemGraphs small enough to flush during the load:
// later files update and delete edges of earlier ones.
func TestLoadSeveralFilesInOrder(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	edges, bops := binOps(4, 30000, 300)
	textOps := randomOps(5, 30000, 300, false)
	jsonOps := randomOps(6, 10000, 300, true)
	files := []string{filepath.Join(tmp, "a.bin"), filepath.Join(tmp, "b.el"), filepath.Join(tmp, "c.json")}
	if err := edgefile.WriteFile(files[0], edgefile.FormatBinary, edges); err != nil {
		t.Fatal(err)
	}
	writeText(t, files[1], textOps)
	writeJSON(t, files[2], jsonOps)
	all := append(append(append([]testOp{}, bops...), textOps...), jsonOps...)
	args := append([]string{"load", "--dir", dir, "--in-edges", "--memgraph-mib", "1", "--batch", "4096"}, files...)
	out, _, err := execute(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	checkLoadedLine(t, out, 3, all)
	want := edgeOracle{}
	want.apply(all...)
	checkStore(t, dir, want)

	// Loading the same files again gives the same graph.
	if _, _, err := execute(t, args...); err != nil {
		t.Fatal(err)
	}
	checkStore(t, dir, want)
}

// TestLoadMalformedInput: a bad line (or binary record) stops the load with
// the file and line (or byte offset); the store then holds exactly what
// came before it, durably; loading the fixed file gives the full graph.
func TestLoadMalformedInput(t *testing.T) {
	good := []testOp{
		{kind: engine.OpUpsert, src: vtx{id: 1}, dst: vtx{id: 2}},
		{kind: engine.OpUpsert, src: vtx{id: 2}, dst: vtx{id: 3}, weight: 2.5, hasWeight: true},
		{kind: engine.OpUpsert, src: vtx{id: 3}, dst: vtx{id: 1}},
	}
	goodBin := []testOp{good[0], {kind: engine.OpUpsert, src: vtx{id: 2}, dst: vtx{id: 3}}, good[2]} // weight 1
	var gtel bytes.Buffer
	if err := edgefile.WriteBinary(&gtel, []gen.Edge{{Src: 1, Dst: 2}, {Src: 2, Dst: 3}, {Src: 3, Dst: 1}}); err != nil {
		t.Fatal(err)
	}
	bin := gtel.Bytes()
	highDst := bytes.Clone(bin)
	highDst[16+16+8+7] = 0x40 // dst of the second edge = 3 + 2^62
	truncated := bin[:len(bin)-5]
	for _, tc := range []struct {
		name, file, content, format string
		loaded                      int    // ops of good before the bad line
		want                        string // in the error, after the file name
	}{
		{"missing dst", "a.el", "1 2\n# ok\n2 3 2.5\n7\n3 1\n", "auto", 2, `:4: missing dst: want "src dst [weight]"; load stopped: the 2 edges before it are loaded and flushed, nothing from line 4 on (nor any later file) was loaded`},
		{"bad weight", "a.el", "1 2\n2 3 2.5\n3 1 heavy\n", "text", 2, `:3: invalid weight "heavy": want a decimal number; load stopped: the 2 edges before it are loaded and flushed, nothing from line 3 on`},
		{"bad delete", "a.el", "1 2\nd 1\n", "text", 1, `:2: delete line needs 2 fields after "d", has 1`},
		{"id in key range", "a.el", "1 2\n2 3 2.5\n3 1\n5 4611686018427387904\n", "text", 3, `:4: dst: vertex id 4611686018427387904 out of range (numeric ids must be below 4611686018427387904 when string keys are in use)`},
		{"json missing dst", "a.json", `{"src":1,"dst":2}` + "\n" + `{"src":2,"dst":3,"weight":2.5}` + "\n\n" + `{"src":3}` + "\n", "auto", 2, `:4: missing dst; load stopped: the 2 edges before it`},
		{"json bad weight", "a.json", `{"src":1,"dst":2}` + "\n" + `{"src":2, "dst":3, "weight":"x"}` + "\n", "json", 1, `:2:29: weight must be a number`},
		{"json not json", "a.json", `{"src":1,"dst":2}` + "\n1 2\n", "json", 1, `:2: value must be a json object or an array of objects`},
		{"bin truncated", "a.bin", string(truncated), "auto", 2, `: byte offset 48: truncated file: edge 2 of 3 needs 16 bytes, only 11 present; load stopped: the 2 edges before it are loaded and flushed, nothing from byte offset 48 on`},
		{"bin id in key range", "a.bin", string(highDst), "bin", 1, `: byte offset 40: dst: vertex id 4611686018427387907 out of range (numeric ids must be below 4611686018427387904`},
		{"bin forced on text", "a.el", "1 2\n", "bin", 0, `: byte offset 0: not a GTEL0001 binary edge file (it starts with "1 2\n"): use --format text or json, or auto`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, dir := t.TempDir(), t.TempDir()
			path := filepath.Join(tmp, tc.file)
			writeFile(t, path, tc.content)
			later := filepath.Join(tmp, "later.el")
			writeFile(t, later, "8 9\n")
			out, _, err := execute(t, "load", "--dir", dir, "--format", tc.format, path, later)
			if err == nil || !strings.Contains(err.Error(), path+tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, path+tc.want)
			}
			if out != "" {
				t.Errorf("a failed load printed %q to stdout", out)
			}
			ops := good
			if strings.HasSuffix(tc.file, ".bin") {
				ops = goodBin
			}
			want := edgeOracle{}
			want.apply(ops[:tc.loaded]...)
			checkStore(t, dir, want)
		})
	}

	// After the bad line is fixed, loading the file again gives the graph
	// of one complete load.
	tmp, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(tmp, "a.el")
	writeFile(t, path, "1 2\n2 3 2.5\nd 1 2\n3 1 bad\n4 1\n")
	if _, _, err := execute(t, "load", "--dir", dir, path); err == nil {
		t.Fatal("malformed file loaded")
	}
	writeFile(t, path, "1 2\n2 3 2.5\nd 1 2\n3 1 7\n4 1\n")
	if _, _, err := execute(t, "load", "--dir", dir, path); err != nil {
		t.Fatal(err)
	}
	checkStore(t, dir, edgeOracle{{vtx{id: 2}, vtx{id: 3}}: 2.5, {vtx{id: 3}, vtx{id: 1}}: 7, {vtx{id: 4}, vtx{id: 1}}: 1})
}

func TestLoadFlagErrors(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "g.el")
	writeFile(t, file, "1 2\n")
	dir := filepath.Join(tmp, "data")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "csv", file}, `--format must be one of: auto, text, bin, json; got "csv"`},
		{[]string{"--batch", "0", file}, "--batch must be between 1 and 10000000, got 0"},
		{[]string{"--memgraph-mib", "0", file}, "--memgraph-mib must be between 1 and 65536, got 0"},
		{[]string{}, "load needs at least one edge FILE to load"},
		{[]string{filepath.Join(tmp, "missing.el")}, "missing.el: no such file or directory"},
		{[]string{tmp}, "is not a regular file"},
		{[]string{"--batch", "ten", file}, `invalid argument "ten" for "--batch"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, _, err := execute(t, append([]string{"load", "--dir", dir}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if out != "" {
				t.Errorf("a failed load printed %q", out)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("a load with bad flags created %s", dir)
			}
		})
	}
	// The environment and the config file are read like serve's.
	t.Setenv("GRAPHTIDE_BATCH", "0")
	if _, _, err := execute(t, "load", "--dir", dir, file); err == nil || !strings.Contains(err.Error(), "--batch must be between 1 and 10000000, got 0") {
		t.Errorf("GRAPHTIDE_BATCH not applied: %v", err)
	}
	cfg := filepath.Join(tmp, "graphtide.yaml")
	writeFile(t, cfg, "format: xml\n")
	if _, _, err := execute(t, "load", "--config", cfg, "--batch", "5", "--dir", dir, file); err == nil || !strings.Contains(err.Error(), `got "xml"`) {
		t.Errorf("config file not applied: %v", err)
	}
}

// TestLoadInEdgesFixedAtCreation: a store keeps the in-edge setting it was
// created with; load adopts it unless --in-edges says otherwise.
func TestLoadInEdgesFixedAtCreation(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	file := filepath.Join(tmp, "g.el")
	writeFile(t, file, "1 2\n2 3 4.5\n")
	if _, _, err := execute(t, "load", "--dir", dir, "--in-edges", file); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, "3 1\n")
	if _, _, err := execute(t, "load", "--dir", dir, file); err != nil {
		t.Fatalf("load without --in-edges into an in-edge store: %v", err)
	}
	checkStore(t, dir, edgeOracle{{vtx{id: 1}, vtx{id: 2}}: 1, {vtx{id: 2}, vtx{id: 3}}: 4.5, {vtx{id: 3}, vtx{id: 1}}: 1})
	_, in := storeContents(t, dir)
	if len(in) != 3 {
		t.Fatalf("in-edges = %v, want 3", in)
	}
	_, _, err := execute(t, "load", "--dir", dir, "--in-edges=false", file)
	var me *datadir.InEdgesMismatchError
	if !errors.As(err, &me) || me.Dir != dir || me.Given {
		t.Fatalf("error = %v, want an *InEdgesMismatchError for --in-edges=false on %s", err, dir)
	}
	for _, w := range []string{"--in-edges=false", dir, "created with in-edges", "leave out --in-edges", "another --dir"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q: %v", w, err)
		}
	}
}

// TestLoadNewStoreKeepsInEdgesByDefault: a store load creates keeps
// in-edges (the edges loaded, transposed) unless --in-edges=false; a store
// created without them keeps none when loaded into again without the
// flag, and --in-edges against it is refused saying why and what to do.
func TestLoadNewStoreKeepsInEdgesByDefault(t *testing.T) {
	tmp, def, out := t.TempDir(), t.TempDir(), t.TempDir()
	file := filepath.Join(tmp, "g.el")
	writeFile(t, file, "1 2\n2 3 4.5\n3 1 2\n")
	want := map[[2]uint64]float64{{1, 2}: 1, {2, 3}: 4.5, {3, 1}: 2}
	if _, _, err := execute(t, "load", "--dir", def, file); err != nil {
		t.Fatal(err)
	}
	o, in := storeContents(t, def)
	if d := diffEdges(want, o); d != "" {
		t.Fatalf("out-edges differ: %s", d)
	}
	if in == nil {
		t.Fatal("a store load created without --in-edges keeps no in-edges")
	}
	if d := diffEdges(reversed(want), in); d != "" {
		t.Fatalf("in-edges differ from the edges loaded, transposed: %s", d)
	}

	if _, _, err := execute(t, "load", "--dir", out, "--in-edges=false", file); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, "4 1\n")
	if _, _, err := execute(t, "load", "--dir", out, file); err != nil {
		t.Fatalf("load without --in-edges into a store without them: %v", err)
	}
	if _, in := storeContents(t, out); in != nil {
		t.Fatalf("a store created with --in-edges=false has in-edges after a load without the flag: %v", in)
	}
	_, _, err := execute(t, "load", "--dir", out, "--in-edges", file)
	var me *datadir.InEdgesMismatchError
	if !errors.As(err, &me) || me.Dir != out || !me.Given {
		t.Fatalf("error = %v, want an *InEdgesMismatchError for --in-edges on %s", err, out)
	}
	for _, w := range []string{"--in-edges=true", out, "created without in-edges", "leave out --in-edges", "another --dir"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q: %v", w, err)
		}
	}
}

// TestStoreInUse: load, inspect and compact refuse a store that another
// process (serve) has open, and say what to do.
func TestStoreInUse(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	file := filepath.Join(tmp, "g.el")
	writeFile(t, file, "1 2\n")
	if _, _, err := execute(t, "load", "--dir", dir, file); err != nil {
		t.Fatal(err)
	}
	s, err := openStore(dir, engine.Options{}) // as serve holds it
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := "store " + datadir.StorePath(dir) + " is in use by another process (is graphtide serve running on --dir " + dir + "?): stop serve first, or use its HTTP API while it runs"
	for _, args := range [][]string{{"load", file}, {"inspect"}, {"compact"}} {
		_, _, err := execute(t, append(args, "--dir", dir)...)
		if err == nil || err.Error() != want {
			t.Errorf("%s: error = %v, want %q", args[0], err, want)
		}
	}
}

func TestLoadInterrupted(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	file := filepath.Join(tmp, "g.el")
	ops := randomOps(7, 5000, 100, false)
	writeText(t, file, ops)
	o := &loadOptions{dir: dir, format: "auto", batch: 1000, memgraphMiB: 1, files: []string{file}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// The signal arrives after three batches.
	ctx := &countdownCtx{Context: context.Background(), left: 3}
	var out, errOut bytes.Buffer
	err := runLoad(ctx, o, &out, &errOut)
	if want := "load interrupted: 3000 edges are loaded and flushed, the rest was not loaded"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	want := edgeOracle{}
	want.apply(ops[:3000]...)
	checkStore(t, dir, want)
}

// countdownCtx is a context whose Err reports cancellation from the
// (left+1)-th call on, as if a signal arrived then.
type countdownCtx struct {
	context.Context
	left int
}

func (c *countdownCtx) Err() error {
	if c.left == 0 {
		return context.Canceled
	}
	c.left--
	return nil
}

// load into a data directory drops the analytics' checkpoint there: serve
// could not replay what load applied into the checkpoint's analytics.
func TestLoadDropsTheAnalyticsCheckpoint(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	ops := randomOps(4, 100, 50, false)
	writeText(t, filepath.Join(tmp, "g.el"), ops)
	if _, _, err := execute(t, "load", "--dir", dir, filepath.Join(tmp, "g.el")); err != nil {
		t.Fatal(err)
	}
	ck := datadir.CheckpointPath(dir)
	if err := os.WriteFile(ck, []byte("a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "load", "--dir", dir, filepath.Join(tmp, "g.el")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ck); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the checkpoint is still there after load: %v", err)
	}
}

// TestLoadWithAMapping loads JSON events of another shape (other field
// names, amounts as strings, an action field, extra fields) through a
// mapping file, and compares the store with the oracle; a line that does
// not fit stops the load with the field named.
func TestLoadWithAMapping(t *testing.T) {
	tmp := t.TempDir()
	ops := randomOps(4, 3000, 200, true)
	var b bytes.Buffer
	for i, p := range ops {
		ev := fmt.Sprintf(`{"id":%d,"meta":{"ip":"10.0.0.%d","tags":["a",{"b":null}]},"from":%s`, i, i%256, p.src.json())
		switch p.kind {
		case engine.OpDeleteEdge:
			ev += fmt.Sprintf(`,"to":%s,"action":"refund"}`, p.dst.json())
		case engine.OpDeleteVertex:
			ev += `,"action":"close"}`
		default:
			ev += fmt.Sprintf(`,"to":%s,"action":"pay"`, p.dst.json())
			if p.hasWeight {
				ev += fmt.Sprintf(`,"amt":"%s"`, strconv.FormatFloat(p.weight, 'f', -1, 64))
			}
			ev += "}"
		}
		b.WriteString(ev + "\n")
	}
	events := filepath.Join(tmp, "events.jsonl")
	if err := os.WriteFile(events, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	mapping := filepath.Join(tmp, "mapping.yaml")
	if err := os.WriteFile(mapping, []byte("src: /from\ndst: /to\nweight: /amt\nop: /action\nop_values: {pay: upsert, refund: delete, close: delete_vertex}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, _, err := execute(t, "load", "--dir", dir, "--mapping", mapping, events)
	if err != nil {
		t.Fatal(err)
	}
	checkLoadedLine(t, out, 1, ops)
	want := edgeOracle{}
	want.apply(ops...)
	checkStore(t, dir, want)

	bad := filepath.Join(tmp, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"from":"a","to":"b","action":"pay"}`+"\n"+`{"from":"a","to":"b","action":"pay","amt":"1,5"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "load", "--dir", t.TempDir(), "--mapping", mapping, bad); err == nil || !strings.Contains(err.Error(), `bad.jsonl:2:43: weight (/amt) invalid weight "1,5"`) {
		t.Errorf("a line that does not fit: %v", err)
	}
	if _, _, err := execute(t, "load", "--dir", t.TempDir(), "--mapping", mapping, "--format", "text", bad); err == nil || !strings.Contains(err.Error(), "--mapping reads JSON lines: --format must be json") {
		t.Errorf("--mapping with --format text: %v", err)
	}
	if err := os.WriteFile(mapping, []byte("src: /from\ndest: /to\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "load", "--dir", t.TempDir(), "--mapping", mapping, events); err == nil || !strings.Contains(err.Error(), `unknown key "dest"; allowed: dst,`) {
		t.Errorf("an unknown mapping field: %v", err)
	}
}
