package paths

import (
	"context"
	"errors"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// TestPathBudgetBoundsTheEdgesRead: a search never reads an edge past its
// budget, even when one vertex holds far more (a hub), in every search
// mode; and a search within budget still finds its path.
func TestPathBudgetBoundsTheEdgesRead(t *testing.T) {
	for _, inEdges := range []bool{false, true} {
		s, err := engine.Open(t.TempDir(), &engine.Options{InEdges: inEdges})
		if err != nil {
			t.Fatal(err)
		}
		var b engine.Batch
		for d := uint64(1); d <= 30000; d++ {
			b.InsertWeighted(0, d, 1) // the hub 0
		}
		b.Insert(30000, 99999)
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		m, _ := views.NewManager(s, views.Config{})
		v, err := m.Static(views.StaticOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []Options{{Budget: 100}, {Budget: 100, Weighted: true}, {Budget: 100, Weighted: true, MaxDepth: 3},
			{Budget: 100, MaxDepth: 5}} {
			res, err := Find(context.Background(), v, 0, 123456, o)
			var be *BudgetError
			if !errors.As(err, &be) {
				t.Fatalf("in=%v %+v: %v, want a budget error", inEdges, o, err)
			}
			if res.EdgesRead > o.Budget || be.EdgesRead > o.Budget {
				t.Fatalf("in=%v %+v: read %d edges, over the budget of %d", inEdges, o, res.EdgesRead, o.Budget)
			}
		}
		res, err := Find(context.Background(), v, 0, 99999, Options{Budget: 40000})
		if err != nil || !res.Found || res.Length != 2 || res.EdgesRead > 40000 {
			t.Fatalf("in=%v: within budget: %+v %v", inEdges, res, err)
		}
		v.Release()
		m.Close()
		s.Close()
	}
}
