package ingest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordPool(t *testing.T) {
	p := NewRecordPool()
	r := p.GetRecords(100)
	if len(r) != 0 || cap(r) < 100 {
		t.Fatalf("GetRecords(100): len %d cap %d", len(r), cap(r))
	}
	p.PutRecords(r[:100])
	// sync.Pool may drop what it holds; whatever comes back must fit.
	for _, n := range []int{50, 100, 1000} {
		if r := p.GetRecords(n); len(r) != 0 || cap(r) < n {
			t.Fatalf("GetRecords(%d): len %d cap %d", n, len(r), cap(r))
		}
	}
	b := p.GetDecompressBytes(make([]byte, 10), kgo.CodecSnappy)
	if len(b) != 0 || cap(b) < 40 {
		t.Fatalf("GetDecompressBytes: len %d cap %d", len(b), cap(b))
	}
	p.PutDecompressBytes(append(b, 1, 2, 3))
	if b := p.GetDecompressBytes(nil, kgo.CodecSnappy); len(b) != 0 {
		t.Fatalf("GetDecompressBytes after Put: len %d", len(b))
	}
}
