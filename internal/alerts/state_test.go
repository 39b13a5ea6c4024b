package alerts

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

func it(id string) *item { return &item{id: id, rec: &kgo.Record{}} }

func pendingIDs(l *ledger) []string {
	var out []string
	for _, x := range l.pending() {
		out = append(out, x.id)
	}
	return out
}

// The ledger against a plain model: a multiset of raised-not-seen (in
// order) and of seen-not-raised, under random interleavings of the two
// streams.
func TestLedgerMatchesAModel(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		l := newLedger(1 << 20)
		var pend []string         // model: raised, not seen, in order
		ahead := map[string]int{} // model: seen, not raised
		for step := 0; step < 300; step++ {
			id := fmt.Sprintf("x%d", r.IntN(12))
			if r.IntN(2) == 0 {
				queued := l.raise(it(id))
				if ahead[id] > 0 {
					ahead[id]--
					if queued {
						t.Fatalf("seed %d: %s queued although seen", seed, id)
					}
				} else {
					pend = append(pend, id)
					if !queued {
						t.Fatalf("seed %d: %s not queued", seed, id)
					}
				}
			} else {
				l.see(id, nil)
				found := false
				for i, p := range pend {
					if p == id {
						pend = append(pend[:i:i], pend[i+1:]...)
						found = true
						break
					}
				}
				if !found {
					ahead[id]++
				}
			}
			if got := pendingIDs(l); fmt.Sprint(got) != fmt.Sprint(pend) && !(len(got) == 0 && len(pend) == 0) {
				t.Fatalf("seed %d step %d: pending %v, model %v", seed, step, got, pend)
			}
			n := 0
			for _, c := range ahead {
				n += c
			}
			if l.n != len(pend) || l.aheadN != n || len(l.aheadList()) != n {
				t.Fatalf("seed %d step %d: counts %d/%d (list %d), model %d/%d", seed, step, l.n, l.aheadN, len(l.aheadList()), len(pend), n)
			}
		}
	}
}

func TestLedgerCapsAndForgets(t *testing.T) {
	l := newLedger(3)
	for _, id := range []string{"a", "b", "c", "d"} {
		l.raise(it(id))
	}
	if got := fmt.Sprint(pendingIDs(l)); got != "[b c d]" || l.droppedPending != 1 {
		t.Fatalf("pending %s, dropped %d", got, l.droppedPending)
	}
	src := func(off int64) *analytics.AlertSource { return &analytics.AlertSource{Topic: "t", Offset: off} }
	for i, id := range []string{"p", "q", "r", "s"} {
		l.see(id, src(int64(i)))
	}
	if l.aheadN != 3 || l.droppedAhead != 1 || fmt.Sprint(l.aheadList()) == "" {
		t.Fatalf("ahead %d dropped %d", l.aheadN, l.droppedAhead)
	}
	l.forget(func(s *analytics.AlertSource) bool { return s.Offset < 3 })
	if got := l.aheadList(); len(got) != 1 || got[0].ID != "s" {
		t.Fatalf("after forget: %+v", got)
	}
	// Sent marks survive until resend; unsent skips them.
	for _, x := range l.unsent(2) {
		x.sent = true
	}
	if u := l.unsent(10); len(u) != 1 || u[0].id != "d" {
		t.Fatalf("unsent %v", u)
	}
	l.resend()
	if u := l.unsent(10); len(u) != 3 {
		t.Fatalf("unsent after resend: %d", len(u))
	}
}
