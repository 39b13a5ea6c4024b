package pebblebase

import (
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/staticcsr"
)

// csrScan computes what Scan should report, from the deduplicated oracle.
func csrScan(c *staticcsr.CSR) ScanResult {
	var want ScanResult
	for v := range c.NumVertices() {
		n := c.Neighbors(v)
		if len(n) == 0 {
			continue
		}
		want.Sources++
		want.Edges += uint64(len(n))
		want.MaxDegree = max(want.MaxDegree, uint64(len(n)))
		for _, d := range n {
			want.DstSum += d
		}
	}
	return want
}

func TestIngestScanMatchesOracle(t *testing.T) {
	r := gen.RMAT{Scale: 10, EdgeFactor: 8, Seed: 6}
	edges := r.Generate()
	want := csrScan(staticcsr.Build(r.NumVertices(), edges))
	if want.Edges >= uint64(len(edges)) {
		t.Fatalf("test graph has no duplicate edges; it would not test deduplication")
	}

	dir := t.TempDir()
	db, err := Open(dir, Options{BatchSize: 1000}) // 8192 edges: 8 full batches and a partial one
	if err != nil {
		t.Fatal(err)
	}
	ing, err := db.Ingest(edges)
	if err != nil {
		t.Fatal(err)
	}
	if ing.Edges != len(edges) || ing.Batches != 9 {
		t.Errorf("Ingest reported %d edges in %d batches, want %d in 9", ing.Edges, ing.Batches, len(edges))
	}
	// 7.6k distinct 16-byte keys compress, but cannot take less than a few KB.
	if ing.DiskBytes < 4096 || ing.Elapsed <= 0 || ing.EdgesPerSecond() <= 0 {
		t.Errorf("implausible ingest result %+v", ing)
	}

	got, err := db.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if got.Elapsed <= 0 {
		t.Errorf("scan elapsed %v", got.Elapsed)
	}
	got.Elapsed = 0
	if got != want {
		t.Errorf("Scan = %+v, want %+v", got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// With the WAL disabled, only the flush makes the data durable: reopen
	// and scan again to check that Ingest flushed everything.
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := db.Scan()
	if err != nil {
		t.Fatal(err)
	}
	again.Elapsed = 0
	if again != want {
		t.Errorf("Scan after reopen = %+v, want %+v", again, want)
	}
}

func TestIngestEmpty(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ing, err := db.Ingest(nil)
	if err != nil || ing.Edges != 0 || ing.Batches != 0 {
		t.Fatalf("Ingest(nil) = %+v, %v", ing, err)
	}
	got, err := db.Scan()
	if err != nil || got.Edges != 0 || got.Sources != 0 {
		t.Fatalf("Scan of empty db = %+v, %v", got, err)
	}
}

func TestKeyOrderGroupsBySrc(t *testing.T) {
	edges := []gen.Edge{{Src: 1, Dst: 1 << 40}, {Src: 2, Dst: 0}, {Src: 1<<32 + 1, Dst: 5}}
	var prev []byte
	for i, e := range edges {
		key := make([]byte, KeySize)
		EncodeKey(key, e)
		back, err := DecodeKey(key)
		if err != nil || back != e {
			t.Fatalf("DecodeKey(EncodeKey(%v)) = %v, %v", e, back, err)
		}
		if i > 0 && string(prev) >= string(key) {
			t.Fatalf("key of %v does not sort after key of %v", e, edges[i-1])
		}
		prev = key
	}
	if _, err := DecodeKey(make([]byte, 15)); err == nil || !strings.Contains(err.Error(), "has 15 bytes, want 16") {
		t.Errorf("DecodeKey(15 bytes) error = %v", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	_, err := Open(t.TempDir(), Options{BatchSize: -1})
	if err == nil || !strings.Contains(err.Error(), "batch size must be positive, got -1") {
		t.Errorf("Open with BatchSize -1: error = %v", err)
	}
}

func BenchmarkIngestScale14(b *testing.B) {
	r := gen.RMAT{Scale: 14, EdgeFactor: 16, Seed: 1}
	edges := r.Generate()
	b.SetBytes(int64(len(edges)) * KeySize)
	for b.Loop() {
		b.StopTimer()
		db, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := db.Ingest(edges); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
