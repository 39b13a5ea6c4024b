package decode

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/graphtide/graphtide/internal/keydict"
)

// benchEdges returns n edges, a quarter of them weighted, some deletes.
func benchEdges(n int) []Edge {
	edges := make([]Edge, n)
	for i := range edges {
		e := Edge{Src: uint64(i) * 2654435761 % (1 << 40), Dst: uint64(i) * 40503 % (1 << 40)}
		switch {
		case i%16 == 0:
			e.Op = OpDeleteEdge
		case i%4 == 0:
			e.Weight, e.HasWeight = float64(i)/3, true
		}
		edges[i] = e
	}
	return edges
}

// benchDecode decodes value b.N times and reports edges per second.
func benchDecode(b *testing.B, d Decoder, value []byte, perValue int) {
	b.Helper()
	var sink uint64
	emit := func(e Edge) { sink += e.Src }
	if err := d.Decode(value, emit); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Decode(value, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(perValue)/b.Elapsed().Seconds(), "edges/s")
	_ = sink
}

// BenchmarkDecodeBinary decodes record values of 1 and of 1000 edges.
func BenchmarkDecodeBinary(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("edges=%d", n), func(b *testing.B) {
			var v []byte
			for _, e := range benchEdges(n) {
				v = AppendBinary(v, e)
			}
			benchDecode(b, New(FormatBinary, nil), v, n)
		})
	}
}

func BenchmarkDecodeText(b *testing.B) {
	var v []byte
	for _, e := range benchEdges(1000) {
		v = AppendText(v, e)
	}
	benchDecode(b, New(FormatText, nil), v, 1000)
}

func BenchmarkDecodeTextKeys(b *testing.B) {
	dict, err := keydict.Open(filepath.Join(b.TempDir(), "keys.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer dict.Close()
	var v []byte
	for i := 0; i < 1000; i++ {
		v = fmt.Appendf(v, "acct-%06d acct-%06d\n", i*7%5000, i*13%5000)
	}
	benchDecode(b, New(FormatText, dict), v, 1000)
}

func BenchmarkDecodeJSON(b *testing.B) {
	v := []byte{'['}
	for i, e := range benchEdges(1000) {
		if i > 0 {
			v = append(v, ',')
		}
		v = AppendJSON(v, e, "", "")
	}
	v = append(v, ']')
	benchDecode(b, New(FormatJSON, nil), v, 1000)
}

// BenchmarkMappedPayment decodes the payment event through its
// mapping, keys known to a key dictionary.
func BenchmarkMappedPayment(b *testing.B) {
	dict, err := keydict.Open(filepath.Join(b.TempDir(), "keys.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer dict.Close()
	d, err := NewMapped(paymentMapping, dict)
	if err != nil {
		b.Fatal(err)
	}
	benchDecode(b, d, []byte(payment), 1)
}
