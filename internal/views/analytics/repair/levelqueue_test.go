package repair

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLevelQueueOrdersLikeASort drives a levelQueue as the unit searches
// do (seeds at any level, then pushes at the popped level or the next, a
// whole level at a time now and then) and, rarely, as they do not (a push
// further ahead, or below the level popped, or after the queue ran
// empty), and checks every pop against a plain multiset of what is
// queued: the lowest level comes out first, and nothing is lost or made
// up. Seed levels spanning little and much take the counting and the
// comparison sort.
func TestLevelQueueOrdersLikeASort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var q levelQueue
	for round := range 300 {
		q.reset()
		var want []uint64 // level<<32 | vertex, as queued
		add := func(l, v int32) {
			q.push(l, v)
			want = append(want, uint64(l)<<32|uint64(v))
		}
		span := []int32{1, 5, 40, 1 << 20}[round%4]
		for range r.IntN(300) {
			add(r.Int32N(span), r.Int32N(1<<30))
		}
		take := func(l, v int32) {
			t.Helper()
			slices.Sort(want)
			if len(want) == 0 || int32(want[0]>>32) != l {
				t.Fatalf("round %d: got level %d, want the lowest of %d queued (%d)", round, l, len(want), int32(want[0]>>32))
			}
			k := slices.Index(want, uint64(l)<<32|uint64(v))
			if k < 0 {
				t.Fatalf("round %d: popped (%d, %d), which was not queued", round, l, v)
			}
			want = slices.Delete(want, k, k+1)
		}
		refilled := false
		for pops := 0; ; pops++ {
			var l int32
			if r.IntN(5) == 0 {
				var vs []int32
				var ok bool
				if l, vs, ok = q.popLevel(); !ok {
					if len(want) != 0 {
						t.Fatalf("round %d: empty with %d pairs queued", round, len(want))
					}
				}
				for _, v := range vs {
					take(l, v)
				}
				if !ok {
					if refilled {
						break
					}
					refilled = true // pushes after the end are seeds again
					for range r.IntN(20) {
						add(r.Int32N(span), r.Int32N(1<<30))
					}
					continue
				}
			} else {
				var v int32
				var ok bool
				if l, v, ok = q.pop(); !ok {
					if len(want) != 0 {
						t.Fatalf("round %d: empty with %d pairs queued", round, len(want))
					}
					if refilled {
						break
					}
					refilled = true
					for range r.IntN(20) {
						add(r.Int32N(span), r.Int32N(1<<30))
					}
					continue
				}
				take(l, v)
			}
			if pops < 2000 {
				for range r.IntN(3) {
					nl := l + r.Int32N(2)
					switch r.IntN(40) {
					case 0:
						nl = l + 2 + r.Int32N(5) // further ahead
					case 1:
						nl = max(0, l-1-r.Int32N(3)) // below the level popped
					}
					add(nl, r.Int32N(1<<30))
				}
			}
		}
	}
}
