package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/core"

	"github.com/graphtide/graphtide/internal/testref/volume"
)

// recOracle is the vertex records a store should hold.
type recOracle map[uint64]Vertex

// apply applies b's records and vertex deletes in batch order to o, and
// b's edge ops to e (walking the batch itself, not with InOrder, which the
// store's apply uses).
func (o recOracle) apply(b *Batch, e oracle) {
	k := 0
	for i := 0; i <= b.Len(); i++ {
		for ; k < b.Vertices() && b.vrecs[k].at == i; k++ {
			v, rec := b.VertexAt(k)
			o[v] = rec
		}
		if i < b.Len() {
			op := b.ops[i]
			if op.Kind == core.OpDeleteVertex {
				delete(o, op.Src)
			}
			e.applyOps([]core.Op{op})
		}
	}
}

// randomProps is a JSON object of about n bytes.
func randomProps(r *rand.Rand, n int) []byte {
	m := map[string]any{}
	for i := 0; len(mustJSON(m)) < n; i++ {
		switch r.IntN(3) {
		case 0:
			m[fmt.Sprintf("k%d", i)] = strings.Repeat("é", r.IntN(40))
		case 1:
			m[fmt.Sprintf("n%d", i)] = r.Float64() * 1e6
		default:
			m[fmt.Sprintf("l%d", i)] = []any{true, nil, "x\u0000y"}
		}
	}
	p := mustJSON(m)
	for len(p) > MaxVertexProps {
		for k := range m {
			delete(m, k)
			break
		}
		p = mustJSON(m)
	}
	return p
}

func mustJSON(v any) []byte {
	p, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return p
}

func sameVertex(a, b Vertex) bool { return a.Label == b.Label && bytes.Equal(a.Props, b.Props) }

// checkRecords compares every vertex's record and existence in sn with
// the oracles.
func checkRecords(t testing.TB, sn *Snapshot, want recOracle, edges oracle, vs []uint64, what string) {
	t.Helper()
	has := map[uint64]bool{}
	for k := range edges {
		has[k[0]], has[k[1]] = true, true
	}
	for _, v := range vs {
		got, ok, err := sn.Vertex(v)
		if err != nil {
			t.Fatalf("%s: vertex %d: %v", what, v, err)
		}
		w, wok := want[v]
		if ok != wok || (ok && !sameVertex(got, w)) {
			t.Fatalf("%s: vertex %d: got (%q, %.60s, %v), want (%q, %.60s, %v)", what, v, got.Label, got.Props, ok, w.Label, w.Props, wok)
		}
		ex, err := sn.VertexExists(v)
		if err != nil {
			t.Fatal(err)
		}
		if ex != (wok || has[v]) {
			t.Fatalf("%s: vertex %d exists: %v, want %v (record %v, edges %v)", what, v, ex, !ex, wok, has[v])
		}
	}
	// SCANVTX: every record, in id order, whole and from a midpoint.
	for _, lo := range []uint64{0, HighIDBase + 7} {
		var prev uint64
		n := 0
		err := sn.ScanVertices(lo, MaxVertex+1, func(v uint64, rec Vertex) error {
			w, ok := want[v]
			switch {
			case n > 0 && v <= prev:
				return fmt.Errorf("vertex %d after %d", v, prev)
			case !ok || !sameVertex(rec, w):
				return fmt.Errorf("vertex %d: (%q, %.40s), want (%q, %.40s, %v)", v, rec.Label, rec.Props, w.Label, w.Props, ok)
			}
			prev = v
			n++
			return nil
		})
		count := 0
		for v := range want {
			if v >= lo {
				count++
			}
		}
		if err != nil || n != count {
			t.Fatalf("%s: ScanVertices from %d: %d records, %v; want %d", what, lo, n, err, count)
		}
	}
}

// TestVertexRecordsFollowTheOracle applies random batches of records
// (labels, documents from empty to the limit, growing and shrinking),
// edges, edge deletes and vertex deletes, with flushes, compactions and a
// reopen, and checks every vertex's record and existence against the
// oracle, now and as of past seqs within the history retention; the edges
// stay exactly the edge oracle's (no record shows among them).
func TestVertexRecordsFollowTheOracle(t *testing.T) {
	volume.Mark(t)
	o := smallOptions(true)
	o.KeepHistory, o.HistorySeqs = true, 60
	dir := t.TempDir()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	r := rand.New(rand.NewPCG(41, 42))
	recs, edges := recOracle{}, oracle{}
	type state struct {
		recs  recOracle
		edges oracle
	}
	at := map[uint64]state{}
	const nv = 30
	var vs []uint64
	for v := range uint64(nv) {
		vs = append(vs, v, HighIDBase+v)
	}
	vertex := func() uint64 { return vs[r.IntN(len(vs))] }
	labels := []string{"", "account", "merchant", "ünïcödé", strings.Repeat("L", MaxVertexLabel)}
	for step := range 300 {
		var b Batch
		for range 1 + r.IntN(12) {
			switch v := vertex(); r.IntN(10) {
			case 0:
				b.DeleteVertex(v)
			case 1, 2:
				b.Insert(v, vertex())
			case 3:
				b.DeleteEdge(v, vertex())
			default:
				var props []byte
				switch r.IntN(4) {
				case 0:
				case 1:
					props = randomProps(r, MaxVertexProps-r.IntN(100))
				default:
					props = randomProps(r, r.IntN(300))
				}
				b.PutVertex(v, labels[r.IntN(len(labels))], props)
			}
		}
		seq, err := s.Apply(&b)
		if err != nil {
			t.Fatal(err)
		}
		recs.apply(&b, edges)
		at[seq] = state{maps.Clone(recs), edges.clone()}
		switch r.IntN(30) {
		case 0:
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := s.CompactAll(); err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, o); err != nil {
				t.Fatal(err)
			}
			if m, _ := s.Metrics(); m.LastSeq != seq {
				t.Fatalf("reopened at seq %d after a flush at %d", m.LastSeq, seq)
			}
		}
		if step%20 != 19 {
			continue
		}
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, sn, recs, edges, vs, fmt.Sprintf("step %d", step))
		// (checkSnapshot's gathers walk every id below the bound, which
		// the high band puts at 2^62: the scans compare every edge.)
		if d := diffOracle(edges, scanAll(t, sn, Out)); d != "" {
			t.Fatalf("step %d: out-edges differ from the oracle: %s", step, d)
		}
		if d := diffOracle(edges.reversed(), scanAll(t, sn, In)); d != "" {
			t.Fatalf("step %d: in-edges differ from the oracle: %s", step, d)
		}
		sn.Release()
		m, err := s.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			q := m.OldestReadableSeq + r.Uint64N(m.LastSeq-m.OldestReadableSeq+1)
			if _, ok := at[q]; !ok {
				continue
			}
			sn, err := s.SnapshotAt(q)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, sn, at[q].recs, at[q].edges, vs, fmt.Sprintf("as of seq %d", q))
			sn.Release()
		}
	}
	files, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if f.Dir == VertexRecords {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no file holds vertex records")
	}
}

// TestPutVertexRefusesWhatItCannotKeep: a label or document over its
// limit, a label that is not UTF-8, a document that is not a JSON object,
// an id out of range; nothing of such a batch applies.
func TestPutVertexRefusesWhatItCannotKeep(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		v     uint64
		label string
		props string
		want  string
	}{
		{1, strings.Repeat("x", MaxVertexLabel+1), "", "at most 255 bytes"},
		{1, "\xff", "", "UTF-8"},
		{1, "a", `[1,2]`, "JSON object"},
		{1, "a", `{"a":`, "JSON object"},
		{1, "a", `{"a":"` + strings.Repeat("x", MaxVertexProps) + `"}`, "at most 4096 bytes"},
		{1, "a", "{\"a\":\"\xff\"}", "invalid UTF-8 (byte 0xff) at byte 6"},
		{1, "a", `{"a":"\ud800"}`, "escaped lone surrogate \\ud800"},
		{1, "a", `{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, "JSON nested deeper than 64 at byte 68"},
		{MaxVertex + 1, "a", "", "out of range"},
	} {
		var b Batch
		b.Insert(7, 8)
		b.PutVertex(c.v, c.label, []byte(c.props))
		_, err := s.Apply(&b)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PutVertex(%d, %.20q, %.20q): %v, want ErrInvalid saying %q", c.v, c.label, c.props, err, c.want)
		}
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	if sn.Seq() != 0 {
		t.Fatalf("refused batches applied: seq %d", sn.Seq())
	}
}

// TestVertexExistsCondition: a vertex with a record and no edge exists
// for ApplyIf, and stops existing once deleted.
func TestVertexExistsCondition(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var put Batch
	put.PutVertex(5, "account", []byte(`{"owner":"ann"}`))
	if _, err := s.Apply(&put); err != nil {
		t.Fatal(err)
	}
	cond := []Condition{{Kind: CondVertexExists, Src: 5}}
	var b Batch
	b.Insert(5, 6)
	if _, err := s.ApplyIf(&b, cond); err != nil {
		t.Fatalf("an isolated vertex with a record does not exist: %v", err)
	}
	var del Batch
	del.DeleteVertex(5)
	if _, err := s.Apply(&del); err != nil {
		t.Fatal(err)
	}
	var perr *PreconditionError
	if _, err := s.ApplyIf(&b, cond); !errors.As(err, &perr) {
		t.Fatalf("a deleted vertex exists: %v", err)
	}
	// Edge reads refuse the records' direction: Vertex reads records.
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	if _, err := sn.Degree(5, VertexRecords); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a degree in the records' direction: %v", err)
	}
	if _, _, err := sn.Neighbors(5, VertexRecords, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("neighbors in the records' direction: %v", err)
	}
}

// BenchmarkPutVertexOneHub puts 4 KiB records on one vertex over and over,
// reading it back every 16 puts, and reports each apart: put-ns/op (a put
// writes its cells and reads nothing, so it must not grow with the
// versions the MemGraph holds of the vertex) and read-ns/op (which does,
// until a flush).
func BenchmarkPutVertexOneHub(b *testing.B) {
	s, err := Open(b.TempDir(), &Options{MemGraphBytes: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	props := []byte(`{"blob":"` + strings.Repeat("x", MaxVertexProps-20) + `"}`)
	var bt Batch
	var puts, reads time.Duration
	nreads := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bt.Reset()
		bt.PutVertex(7, "hub", props)
		t0 := time.Now()
		if _, err := s.Apply(&bt); err != nil {
			b.Fatal(err)
		}
		puts += time.Since(t0)
		if i%16 == 0 {
			t0 = time.Now()
			sn, err := s.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			if _, ok, err := sn.Vertex(7); err != nil || !ok {
				b.Fatal(ok, err)
			}
			sn.Release()
			reads += time.Since(t0)
			nreads++
		}
	}
	b.ReportMetric(float64(puts.Nanoseconds())/float64(b.N), "put-ns/op")
	b.ReportMetric(float64(reads.Nanoseconds())/float64(nreads), "read-ns/op")
}

// TestMetricsKeepRecordsApart: the levels' figures (edge counts, read
// amplification) are the edges'; the records' files are counted apart,
// and in the totals.
func TestMetricsKeepRecordsApart(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{MemGraphBytes: 1 << 20, DisableAutoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := range 2 {
		var b Batch
		for i := range uint64(5) {
			b.Insert(i, i+1)
		}
		for v := range uint64(3) {
			b.PutVertex(v, "account", []byte(`{"n":1}`)) // 15 bytes of payload: a header and 2 cells
		}
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		m, err := s.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		var files, entries int64
		for _, l := range m.Levels {
			files += l.Files
			entries += l.Entries
		}
		n := int64(round + 1)
		if files != n || entries != 5*n || m.VertexRecords.Files != n || m.VertexRecords.Entries != 9*n ||
			m.Files() != 2*n || m.DiskBytes() <= m.VertexRecords.Bytes || m.ReadAmplification(false) != float64(n) {
			t.Fatalf("after %d flushes: levels %+v, records %+v, files %d, read amplification %v", n, m.Levels, m.VertexRecords, m.Files(), m.ReadAmplification(false))
		}
	}
}
