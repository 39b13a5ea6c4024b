package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
)

// TestCompactEmptiesL0 loads three files with separate loads and 1 MiB
// MemGraphs (each file fits in one, so each load adds one L0 file per
// direction, below the auto-compaction trigger), the later ones updating
// and deleting edges and vertices of the earlier; compact must leave L0
// empty, keep exactly the live edges, and not change the contents.
func TestCompactEmptiesL0(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	first := randomOps(21, 3000, 200, false)
	second := randomOps(22, 3000, 200, true)
	var third []testOp
	for i, p := range first {
		switch {
		case p.kind == engine.OpUpsert && i%3 == 0:
			third = append(third, testOp{kind: engine.OpDeleteEdge, src: p.src, dst: p.dst})
		case p.kind == engine.OpUpsert && i%3 == 1:
			third = append(third, testOp{kind: engine.OpUpsert, src: p.src, dst: p.dst, weight: float64(i), hasWeight: true})
		}
	}
	third = append(third, testOp{kind: engine.OpDeleteVertex, src: vtx{id: 7}}, testOp{kind: engine.OpDeleteVertex, src: vtx{key: "acct-5"}})
	files := []string{filepath.Join(tmp, "1.el"), filepath.Join(tmp, "2.json"), filepath.Join(tmp, "3.el")}
	writeText(t, files[0], first)
	writeJSON(t, files[1], second)
	writeText(t, files[2], third)
	want := edgeOracle{}
	for i, f := range files {
		args := []string{"load", "--dir", dir, "--memgraph-mib", "1", f}
		if i == 0 {
			args = append(args, "--in-edges")
		}
		if _, _, err := execute(t, args...); err != nil {
			t.Fatal(err)
		}
	}
	want.apply(first...)
	want.apply(second...)
	want.apply(third...)
	before := viewStore(t, dir)
	if before.m.Levels[0].Files != 6 || before.m.Files() != 6 {
		t.Fatalf("before compact: levels %+v, want 6 L0 files and nothing else", before.m.Levels)
	}

	out, _, err := execute(t, "compact", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	after := viewStore(t, dir)
	if after.m.Levels[0].Files != 0 || after.m.Files() == 0 {
		t.Fatalf("after compact: levels %+v, want L0 empty", after.m.Levels)
	}
	var deep int64
	for _, l := range after.m.Levels[1:] {
		deep += l.Entries
	}
	if live := int64(2 * len(want)); deep != live {
		t.Errorf("after compact %d edge versions, want exactly the %d live edges (out and in)", deep, live)
	}
	checkStore(t, dir, want)

	// The output: the layout before, the time, the layout after.
	parts := regexp.MustCompile(`(?s)^store (\S+) before:\n(.*)after \(compacted in [0-9.]+ s, (\d+) bytes read, (\d+) written\):\n(.*)$`).FindStringSubmatch(out)
	if parts == nil || parts[1] != datadir.StorePath(dir) {
		t.Fatalf("compact printed:\n%s", out)
	}
	for _, c := range []struct {
		table string
		m     engine.Metrics
	}{{parts[2], before.m}, {parts[5], after.m}} {
		for i, l := range c.m.Levels {
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^\s+L%d\s+%d\s+%d\s+%d$`, i, l.Files, l.Bytes, l.Entries))
			if (l.Files > 0 || i == 0) != row.MatchString(c.table) {
				t.Errorf("level table lacks the row of L%d (%+v) or shows an empty level:\n%s", i, l, c.table)
			}
		}
		total := fmt.Sprintf("total  %d  %d  %d", c.m.Files(), c.m.DiskBytes(), c.m.Levels[0].Entries+entries(c.m.Levels[1:]))
		if !strings.Contains(strings.Join(strings.Fields(c.table), "  "), total) {
			t.Errorf("level table lacks %q:\n%s", total, c.table)
		}
	}
	if parts[3] != fmt.Sprint(before.m.DiskBytes()) || parts[4] != fmt.Sprint(after.m.DiskBytes()) {
		t.Errorf("compaction read %s and wrote %s bytes, want %d and %d", parts[3], parts[4], before.m.DiskBytes(), after.m.DiskBytes())
	}

	// Compacting a compacted store changes nothing.
	if _, _, err := execute(t, "compact", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	checkStore(t, dir, want)
}

func entries(ls []engine.LevelMetrics) (n int64) {
	for _, l := range ls {
		n += l.Entries
	}
	return n
}

func TestCompactNeedsAStore(t *testing.T) { checkNeedsStore(t, "compact") }

// TestCompactFoldsTheRecordedEvents: graphtide compact, run without any
// configuration on a store whose type accumulates, folds the events
// older than the type's retain of the store's newest event time, as the
// store recorded both (before they were recorded, an offline compaction
// folded nothing: the watermark was unknown after the reopen).
func TestCompactFoldsTheRecordedEvents(t *testing.T) {
	dir := t.TempDir()
	d, err := datadir.Open(dir, datadir.Options{Create: true, Store: engine.Options{DisableAutoCompaction: true,
		Aggregates: map[uint16]engine.Aggregate{0: {Accumulate: true, Retain: time.Second}}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	for i := 1; i <= n; i++ { // events at 1s, 2s, ..., 6s, each in its own file
		var b engine.Batch
		b.InsertWeighted(1, 2, float64(i))
		b.SetEventTime(int64(i) * 1_000_000)
		if _, err := d.Store.Apply(&b); err != nil {
			t.Fatal(err)
		}
		if err := d.Store.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "compact", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(datadir.StorePath(dir), &engine.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	evs, folded, err := sn.Events(1, 2, 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var times []int64
	for _, e := range evs {
		times = append(times, e.Time/1_000_000)
	}
	// Within a second of the newest (6s): 6s and 5s; 1s..4s folded.
	if !folded || fmt.Sprint(times) != "[6 5]" {
		t.Fatalf("after compact: events at %v s (folded %v), want [6 5] and the older ones folded", times, folded)
	}
	c, err := sn.Edge(1, 2)
	if err != nil || len(c.Counts) != 1 || c.Counts[0] != n || c.Weights[0] != n*(n+1)/2 {
		t.Fatalf("the edge after compact: %+v, %v", c, err)
	}
}
