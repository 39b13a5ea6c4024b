package views

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkIDSpaceIndex: the cost of one lookup of a sparse id (hashed)
// against a dense one (identity region), over spaces of n ids, looking up
// ids in random order.
func BenchmarkIDSpaceIndex(b *testing.B) {
	for _, n := range []int{1 << 16, 1 << 20} {
		r := rand.New(rand.NewPCG(1, 1))
		sparse := make([]uint64, n)
		for i := range sparse {
			sparse[i] = r.Uint64N(highBase)
		}
		dense := make([]uint64, n)
		for i := range dense {
			dense[i] = uint64(i)
		}
		for _, c := range []struct {
			name string
			ids  []uint64
		}{{"dense", dense}, {"sparse", sparse}} {
			s, err := NewIDSpace(c.ids)
			if err != nil {
				b.Fatal(err)
			}
			q := make([]uint64, 1<<16)
			for i := range q {
				q[i] = c.ids[r.IntN(n)]
			}
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				sum := 0
				for i := 0; i < b.N; i++ {
					j, _ := s.Index(q[i&(len(q)-1)])
					sum += j
				}
				sink = sum
			})
		}
	}
}

var sink int

// BenchmarkIDSpaceIndexes: the cost per id of translating lists of 16
// sparse ids at once (a neighbor list), against BenchmarkIDSpaceIndex.
func BenchmarkIDSpaceIndexes(b *testing.B) {
	for _, n := range []int{1 << 16, 1 << 20} {
		r := rand.New(rand.NewPCG(1, 1))
		sparse := make([]uint64, n)
		for i := range sparse {
			sparse[i] = r.Uint64N(highBase)
		}
		s, _ := NewIDSpace(sparse)
		q := make([]uint64, 1<<16)
		for i := range q {
			q[i] = sparse[r.IntN(n)]
		}
		out := make([]int32, 16)
		b.Run(fmt.Sprintf("sparse/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i += 16 {
				o := i & (len(q) - 1)
				if s.Indexes(q[o:o+16], out) != 16 {
					b.Fatal("missing")
				}
			}
		})
	}
}
