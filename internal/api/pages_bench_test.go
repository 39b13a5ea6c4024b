package api

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
)

// BenchmarkNeighborPage: a page of 1000 of a hub's 200,000 neighbors, all
// numbers (a page's cost) or all keys (every page reads the hub's keyed
// edges: the price of an order every replica shares).
func BenchmarkNeighborPage(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		b.Run(fmt.Sprintf("keys=%v", keyed), func(b *testing.B) {
			dir := b.TempDir()
			s, err := engine.Open(filepath.Join(dir, "store"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			dict, err := keydict.Open(filepath.Join(dir, "keys.dict"))
			if err != nil {
				b.Fatal(err)
			}
			defer dict.Close()
			const n = 200_000
			var batch engine.Batch
			for i := range n {
				dst := uint64(i + 1)
				if keyed {
					if dst, err = dict.ID(fmt.Sprintf("k%07d", (i*7919)%n)); err != nil {
						b.Fatal(err)
					}
				}
				batch.Insert(0, dst)
				if batch.Len() == 10_000 {
					if _, err := s.Apply(&batch); err != nil {
						b.Fatal(err)
					}
					batch.Reset()
				}
			}
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
			vm, err := views.NewManager(s, views.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer vm.Close()
			q := Reader{Views: vm, Dict: dict}
			after := &Position{Key: keyed, Num: n / 2, Name: fmt.Sprintf("k%07d", n/2)}
			b.ResetTimer()
			for range b.N {
				r, err := q.Neighbors(context.Background(), 0, engine.Out, Point{Kind: views.Fresh}, "", after, 1000, EventWindow{})
				if err != nil || len(r.Neighbors) != 1000 {
					b.Fatal(len(r.Neighbors), err)
				}
			}
		})
	}
}
