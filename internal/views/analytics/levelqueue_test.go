package analytics

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLevelQueueOrdersLikeASort drives a levelQueue as the unit searches
// do (seeds at any level, then pushes at the popped level or the next,
// and now and then one further ahead) and checks every pop against a
// plain sorted multiset of what is queued: the lowest level comes out
// first and nothing is lost or made up. Seed levels spanning little and
// much take the counting and the comparison sort.
func TestLevelQueueOrdersLikeASort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var q levelQueue
	for round := range 200 {
		q.reset()
		var want []uint64 // level<<32 | vertex, as queued
		span := []int32{1, 5, 40, 1 << 20}[round%4]
		for range r.IntN(300) {
			l, v := r.Int32N(span), r.Int32N(1<<30)
			q.push(l, v)
			want = append(want, uint64(l)<<32|uint64(v))
		}
		for pops := 0; ; pops++ {
			l, v, ok := q.pop()
			if !ok {
				if len(want) != 0 {
					t.Fatalf("round %d: empty with %d pairs queued", round, len(want))
				}
				break
			}
			slices.Sort(want)
			if len(want) == 0 || int32(want[0]>>32) != l {
				t.Fatalf("round %d, pop %d: got level %d, want the lowest of %d queued", round, pops, l, len(want))
			}
			k := slices.Index(want, uint64(l)<<32|uint64(v))
			if k < 0 {
				t.Fatalf("round %d: popped (%d, %d), which was not queued", round, l, v)
			}
			want = slices.Delete(want, k, k+1)
			if pops < 2000 {
				for range r.IntN(3) {
					nl := l + r.Int32N(2)
					if r.IntN(20) == 0 {
						nl = l + 2 + r.Int32N(5) // further ahead: the heap's case
					}
					x := r.Int32N(1 << 30)
					q.push(nl, x)
					want = append(want, uint64(nl)<<32|uint64(x))
				}
			}
		}
	}
}
