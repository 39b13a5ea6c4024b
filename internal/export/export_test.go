package export

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/engine"
)

// model is the test's own account of the graph: what every edge and
// vertex record must be, kept from the operations as the concepts page
// defines them (replace and accumulate edges, vertex deletes, records).
type model struct {
	edges map[edgeKey]*edgeVal
	recs  map[string]VertexRow
}

type edgeKey struct {
	src, dst string
	typ      string
}

type edgeVal struct {
	weight      float64
	count       int64
	time, first int64
	ref, props  string
	accumulate  bool
}

func (m *model) upsert(k edgeKey, acc bool, w float64, t int64, ref, props string) {
	e := m.edges[k]
	if e == nil || !acc {
		e = &edgeVal{accumulate: acc}
		m.edges[k] = e
	}
	if acc {
		e.weight += w
		e.count++
		if t != 0 && (e.first == 0 || t < e.first) {
			e.first = t
		}
		if t > e.time {
			e.time = t
		}
	} else {
		e.weight, e.time = w, t
	}
	e.ref, e.props = ref, props
}

func (m *model) deleteVertex(v string) {
	for k := range m.edges {
		if k.src == v || k.dst == v {
			delete(m.edges, k)
		}
	}
	delete(m.recs, v)
}

// rows is the model as the edges file must hold it, sorted.
func (m *model) rows() []string {
	var out []string
	for k, e := range m.edges {
		r := EdgeRow{Src: k.src, Dst: k.dst, Type: k.typ, Weight: e.weight}
		if e.time != 0 {
			r.Time = &e.time
		}
		if e.accumulate {
			r.Count = &e.count
			if e.first != 0 {
				r.FirstTime = &e.first
			}
		}
		if e.ref != "" {
			r.Ref = &e.ref
		}
		if e.props != "" {
			r.Props = &e.props
		}
		out = append(out, edgeText(r))
	}
	sort.Strings(out)
	return out
}

func opt[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func edgeText(r EdgeRow) string {
	return fmt.Sprintf("%s>%s:%s w=%g t=%s n=%s f=%s ref=%s props=%s", r.Src, r.Dst, r.Type, r.Weight,
		opt(r.Time), opt(r.Count), opt(r.FirstTime), opt(r.Ref), opt(r.Props))
}

func vertexText(r VertexRow) string { return fmt.Sprintf("%s %q %s", r.ID, r.Label, opt(r.Props)) }

// store is a data directory and the names its vertices have.
type store struct {
	d      *datadir.Dir
	accTyp uint16
}

func openStore(t *testing.T) *store {
	t.Helper()
	d, err := datadir.Open(filepath.Join(t.TempDir(), "data"), datadir.Options{Create: true,
		Store: engine.Options{InEdges: true, MemGraphBytes: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s := &store{d: d}
	for _, n := range []string{"payment", "login"} {
		if _, err := d.Types.ID(n); err != nil {
			t.Fatal(err)
		}
	}
	s.accTyp, _ = d.Types.Lookup("payment")
	if err := d.Store.SetAggregate(s.accTyp, engine.Aggregate{Accumulate: true}); err != nil {
		t.Fatal(err)
	}
	return s
}

// vertex returns the id of the test's vertex named name: a key, a small
// number, or a number from 2^32 up (mapped).
func (s *store) vertex(t *testing.T, name string) uint64 {
	if n, err := strconv.ParseUint(name, 10, 64); err == nil {
		if n < 1<<32 {
			return n
		}
		id, err := s.d.Keys.NumID(n)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	key := strings.TrimPrefix(name, "key:")
	id, err := s.d.Keys.ID(key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (s *store) source(sn *engine.Snapshot) Source {
	return Source{Snap: sn, Keys: s.d.Keys, Types: s.d.Types, Accumulate: func(t uint16) bool { return t == s.accTyp }}
}

// randomBatches applies n batches of random operations to s and m, with
// flushes and a compaction between some.
func randomBatches(t *testing.T, r *rand.Rand, s *store, m *model, n int) {
	names := []string{"0", "1", "7", "42", "4294967296", "99999999999", "acct-a", "acct-b", "acct-c", "key:17", "hub"}
	types := []string{"default", "payment", "login"}
	for b := 0; b < n; b++ {
		var batch engine.Batch
		for i := 0; i < 1+r.IntN(40); i++ {
			src, dst := names[r.IntN(len(names))], names[r.IntN(len(names))]
			if r.IntN(3) == 0 {
				src = "hub"
			}
			typ := types[r.IntN(len(types))]
			tid, _ := s.d.Types.Lookup(typ)
			switch x := r.IntN(20); {
			case x < 14:
				w := float64(r.IntN(1000)) / 4
				var at int64
				if typ == "payment" || r.IntN(2) == 0 {
					at = 1_700_000_000_000_000 + r.Int64N(1_000_000_000)
				}
				var ref, props string
				if r.IntN(2) == 0 {
					ref = fmt.Sprintf("e-%d-%d", b, i)
				}
				if r.IntN(3) == 0 {
					props = fmt.Sprintf(`{"n":%d}`, r.IntN(100))
				}
				batch.InsertWeighted(s.vertex(t, src), s.vertex(t, dst), w)
				batch.SetType(tid)
				batch.SetEventTime(at)
				batch.SetPayload(ref, []byte(props))
				m.upsert(edgeKey{src, dst, typ}, typ == "payment", w, at, ref, props)
			case x < 17:
				batch.DeleteEdge(s.vertex(t, src), s.vertex(t, dst))
				batch.SetType(tid)
				delete(m.edges, edgeKey{src, dst, typ})
			case x < 18:
				batch.DeleteVertex(s.vertex(t, src))
				m.deleteVertex(src)
			default:
				label := fmt.Sprintf("l%d", r.IntN(3))
				var props string
				if r.IntN(2) == 0 {
					props = fmt.Sprintf(`{"k":%d}`, r.IntN(9))
				}
				batch.PutVertex(s.vertex(t, src), label, []byte(props))
				row := VertexRow{ID: src, Label: label}
				if props != "" {
					row.Props = &props
				}
				m.recs[src] = row
			}
		}
		if _, err := s.d.Store.Apply(&batch); err != nil {
			t.Fatal(err)
		}
		switch r.IntN(8) {
		case 0:
			if err := s.d.Store.Flush(); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := s.d.Store.CompactAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func readRows[T any](t *testing.T, path string) []T {
	t.Helper()
	rows, err := parquet.ReadFile[T](path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func diffLists(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	g, w := map[string]bool{}, map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	for _, s := range want {
		w[s] = true
	}
	n := 0
	for _, s := range want {
		if !g[s] && n < 10 {
			t.Errorf("%s: missing %s", what, s)
			n++
		}
	}
	for _, s := range got {
		if !w[s] && n < 20 {
			t.Errorf("%s: unexpected %s", what, s)
			n++
		}
	}
	t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
}

// TestExportMatchesTheModel: random batches of upserts (replace and
// accumulate types, event times, references and props), deletes, vertex
// deletes and vertex records over numbers, mapped numbers and keys, with
// flushes and compactions between; a snapshot taken, then more batches
// applied; the export of the snapshot, in row groups of 7 rows, holds
// exactly the model as of the snapshot, and its manifest the rows, sizes
// and checksums of its files.
func TestExportMatchesTheModel(t *testing.T) {
	for round := uint64(0); round < 4; round++ {
		r := rand.New(rand.NewPCG(round, 45))
		s := openStore(t)
		m := &model{edges: map[edgeKey]*edgeVal{}, recs: map[string]VertexRow{}}
		randomBatches(t, r, s, m, 30)
		sn, err := s.d.Store.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		wantEdges := m.rows()
		var wantRecs []string
		for _, v := range m.recs {
			wantRecs = append(wantRecs, vertexText(v))
		}
		sort.Strings(wantRecs)
		randomBatches(t, r, s, &model{edges: map[edgeKey]*edgeVal{}, recs: map[string]VertexRow{}}, 20)

		dir := t.TempDir()
		pos := []Offset{{Topic: "edges", Partition: 0, Offset: 31}}
		var progress []Progress
		man, err := Write(context.Background(), s.source(sn), dir, Options{Part: "p0", Position: pos, RowGroupRows: 7,
			Progress: func(p Progress) { progress = append(progress, p) }})
		sn.Release()
		if err != nil {
			t.Fatal(err)
		}
		var gotEdges, gotRecs []string
		for _, e := range readRows[EdgeRow](t, filepath.Join(dir, "p0.edges.parquet")) {
			gotEdges = append(gotEdges, edgeText(e))
		}
		for _, v := range readRows[VertexRow](t, filepath.Join(dir, "p0.vertices.parquet")) {
			gotRecs = append(gotRecs, vertexText(v))
		}
		sort.Strings(gotEdges)
		sort.Strings(gotRecs)
		diffLists(t, "edges", gotEdges, wantEdges)
		diffLists(t, "vertex records", gotRecs, wantRecs)

		ms, err := ReadManifests(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := ms[0]
		if got.Edges != int64(len(wantEdges)) || got.Vertices != int64(len(wantRecs)) || got.Seq != man.Seq || got.Part != "p0" {
			t.Fatalf("manifest %+v, want %d edges, %d vertices, seq %d", got, len(wantEdges), len(wantRecs), man.Seq)
		}
		if fmt.Sprint(got.Position) != fmt.Sprint(pos) || fmt.Sprint(got.Cut) != fmt.Sprint(pos) {
			t.Fatalf("manifest position %v cut %v, want %v for both", got.Position, got.Cut, pos)
		}
		if err := CheckSet(ms); err != nil {
			t.Fatal(err)
		}
		last := progress[len(progress)-1]
		if !last.Done || last.Edges != got.Edges || last.Vertices != got.Vertices || last.Bytes != got.Files[0].Bytes+got.Files[1].Bytes {
			t.Fatalf("last progress %+v, manifest %+v", last, got)
		}
		// Row groups of at most 7 rows.
		f, err := os.Open(filepath.Join(dir, "p0.edges.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		for _, rg := range pf.RowGroups() {
			if rg.NumRows() > 7 {
				t.Fatalf("a row group of %d rows, want at most 7", rg.NumRows())
			}
		}
		if want := (len(wantEdges) + 6) / 7; len(pf.RowGroups()) != want {
			t.Fatalf("%d row groups, want %d", len(pf.RowGroups()), want)
		}
		f.Close()
	}
}

// writePart exports s's newest snapshot as part into dir at pos of cut.
func writePart(t *testing.T, s *store, dir, part string, pos, cut []Offset) {
	t.Helper()
	sn, err := s.d.Store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	if _, err := Write(context.Background(), s.source(sn), dir, Options{Part: part, Position: pos, Cut: cut}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckSetRefuses: a set whose parts are not one cut, or whose files
// are damaged, is refused naming what is wrong.
func TestCheckSetRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 45))
	s := openStore(t)
	randomBatches(t, r, s, &model{edges: map[edgeKey]*edgeVal{}, recs: map[string]VertexRow{}}, 5)
	cut := []Offset{{"e", 0, 10}, {"e", 1, 20}}
	a, b := t.TempDir(), t.TempDir()
	writePart(t, s, a, "a", cut[:1], cut)
	writePart(t, s, b, "b", cut[1:], cut)
	good, err := ReadManifests(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSet(good); err != nil {
		t.Fatalf("a good set: %v", err)
	}
	other := t.TempDir()
	writePart(t, s, other, "b", []Offset{{"e", 1, 21}}, []Offset{{"e", 0, 10}, {"e", 1, 21}})
	dup := t.TempDir()
	writePart(t, s, dup, "c", cut[:1], cut)
	sameName := t.TempDir()
	writePart(t, s, sameName, "a", cut[1:], cut)
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{a}, "no part holds e/1 of the cut"},
		{[]string{a, other}, `parts of different cuts: "b" is as of [e/0@10 e/1@21], "a" as of [e/0@10 e/1@20]`},
		{[]string{a, dup, b}, `e/0 is in parts "a" and "c"`},
		{[]string{a, sameName}, `part "a" is in`},
	} {
		ms, err := ReadManifests(c.dirs...)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckSet(ms); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.dirs, err, c.want)
		}
	}
	// Damage: a flipped byte, a cut file, a missing file.
	path := filepath.Join(b, "b.edges.parquet")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		what   string
		data   []byte
		offset int64
	}{
		{"a flipped byte", flip(orig, len(orig)/2), 0},
		{"a cut file", orig[:len(orig)-3], int64(len(orig) - 3)},
	} {
		if err := os.WriteFile(path, d.data, 0o644); err != nil {
			t.Fatal(err)
		}
		var ce *durable.CorruptError
		if err := CheckSet(good); !errors.As(err, &ce) || ce.File != path || ce.Offset != d.offset {
			t.Errorf("%s: %v, want a refusal naming %s at offset %d", d.what, err, path, d.offset)
		}
	}
	os.Remove(path)
	if err := CheckSet(good); err == nil || !strings.Contains(err.Error(), "b.edges.parquet") {
		t.Errorf("a missing file: %v", err)
	}
	// A manifest of another format, of unknown fields, or renamed.
	mpath := filepath.Join(a, "a.manifest.json")
	mb, _ := os.ReadFile(mpath)
	for _, c := range []struct{ data, want string }{
		{strings.Replace(string(mb), Format, "graphtide-export-9", 1), `format "graphtide-export-9"`},
		{strings.Replace(string(mb), `"part"`, `"parts"`, 1), "unknown field"},
		{strings.Replace(string(mb), `"edges": `, `"edges": 1`, 1), "edges 1"},
	} {
		if err := os.WriteFile(mpath, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadManifests(a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("manifest %q...: %v, want %q", c.want, err, c.want)
		}
	}
}

func flip(b []byte, at int) []byte {
	c := append([]byte(nil), b...)
	c[at] ^= 0x10
	return c
}

// TestWriteRefuses: a bad part name, a part already there, a position
// outside its cut.
func TestWriteRefuses(t *testing.T) {
	s := openStore(t)
	sn, err := s.d.Store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	dir := t.TempDir()
	src := s.source(sn)
	if _, err := Write(context.Background(), src, dir, Options{Part: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Part: "x"}, `part "x" is already in`},
		{Options{Part: "a/b"}, "only letters, digits"},
		{Options{Part: ""}, "1 to 64 bytes"},
		{Options{Part: "y", Position: []Offset{{"e", 0, 5}}, Cut: []Offset{{"e", 0, 6}}}, "this part is at e/0@5, the cut at e/0@6"},
		{Options{Part: "y", Position: []Offset{{"e", 1, 5}}, Cut: []Offset{{"e", 0, 6}}}, "the cut names no offset for e/1"},
	} {
		if _, err := Write(context.Background(), src, dir, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, src, dir, Options{Part: "z"}); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled export: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*z*")); len(left) > 0 {
		t.Errorf("a canceled export left %v", left)
	}
}

// TestReadCut: the shapes a cut file may have, and what is refused.
func TestReadCut(t *testing.T) {
	got, err := ReadCut([]byte(`[{"topic":"b","partition":1,"offset":3},{"topic":"a","partition":0,"offset":0}]`))
	if err != nil || fmt.Sprint(got) != "[a/0@0 b/1@3]" {
		t.Fatalf("%v %v", got, err)
	}
	got, err = ReadCut([]byte(`{"format":"x","cut":[{"topic":"a","partition":2,"offset":9}]}`))
	if err != nil || fmt.Sprint(got) != "[a/2@9]" {
		t.Fatalf("a manifest's cut: %v %v", got, err)
	}
	for in, want := range map[string]string{
		`[]`: "no offsets",
		`[{"topic":"a","partition":0,"offset":1},{"topic":"a","partition":0,"offset":2}]`: "a/0 named twice",
		`[{"topic":"a","partition":0,"offset":-1}]`:                                       "negative",
		`[{"partition":0,"offset":1}]`:                                                    "without a topic",
		`[{"topic":"a","partition":0,"offs":1}]`:                                          "unknown field",
		`nonsense`:                                                                        "want a JSON array",
	} {
		if _, err := ReadCut([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
