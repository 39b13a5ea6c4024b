package analytics

import (
	"math"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
)

// Graph analytics of some edge types, over random typed upserts, deletes
// and vertex deletes (parallel edges of several types between the same
// vertices), agree at the end with the reference algorithms run on the
// simple graph of their types (an edge where some edge of those types
// joins two vertices, weighing the least); and a fan-in monitor of one
// type counts only that type's edges.
func TestTypedAnalyticsMatchTheReference(t *testing.T) {
	h := newHarness(t, 91, true, denseIDs)
	sink := &sinkRecorder{}
	r := NewRegistry(h.m, RegistryConfig{Sinks: []AlertSink{sink}, AlertRing: 1 << 16})
	defer r.Close()
	sets := map[string]*engine.TypeSet{"": nil, "1": ptr(engine.TypesOf(1)), "0,2": ptr(engine.TypesOf(0, 2))}
	var names []string
	for list := range sets {
		suffix := map[string]string{"": "all", "1": "one", "0,2": "two"}[list]
		for _, s := range []Spec{
			{Name: "bfs-" + suffix, Type: "bfs", Root: "2", Types: list},
			{Name: "wcc-" + suffix, Type: "wcc", Types: list},
			{Name: "sssp-" + suffix, Type: "sssp", Root: "3", Types: list},
			{Name: "pagerank-" + suffix, Type: "pagerank", Tolerance: 1e-11, MaxIterations: 1000, Types: list},
		} {
			if _, err := r.Register(s); err != nil {
				t.Fatal(err)
			}
			names = append(names, s.Name)
		}
	}
	if _, err := r.Register(Spec{Name: "payments-in", Type: "fanin", Threshold: 2, WindowEdges: 1 << 20, Types: "5"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(Spec{Name: "bad", Type: "wcc", Types: "payment"}); err == nil {
		t.Fatal("a type name without a type dictionary was accepted")
	}
	typed := testref.TypedEdges{}
	for round := range 120 {
		var b engine.Batch
		for range 1 + h.r.IntN(12) {
			a, d := uint64(h.r.IntN(14)), uint64(h.r.IntN(14))
			ty := uint16(h.r.IntN(3))
			var op engine.Op
			switch x := h.r.IntN(100); {
			case x < 65:
				op = engine.Op{Src: a, Dst: d, Type: ty, Weight: float64(h.r.IntN(20))/4 + 0.25, Kind: engine.OpUpsert}
			case x < 96:
				op = engine.Op{Src: a, Dst: d, Type: ty, Kind: engine.OpDeleteEdge}
			default:
				op = engine.Op{Src: a, Kind: engine.OpDeleteVertex}
			}
			testref.AddOp(&b, op)
			typed.Apply(op)
		}
		if _, err := h.s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		if round%7 == 0 {
			time.Sleep(2 * time.Millisecond) // let some analytics fall behind
		}
		if round%40 == 39 {
			if err := h.s.CompactAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Three edges of type 5 into vertex 100: the monitor of type 5 fires
	// (threshold 2), and none of the other types' edges counted.
	var b engine.Batch
	for _, src := range []uint64{101, 102, 103} {
		b.Insert(src, 100)
		b.SetType(5)
	}
	last, err := h.s.Apply(&b)
	if err != nil {
		t.Fatal(err)
	}
	waitAllAt(t, r, names, last)
	for list, ts := range sets {
		g := typed.Simple(ts)
		if ts == nil { // every type: the fan-in edges too
			for _, src := range []uint64{101, 102, 103} {
				g[[2]uint64{src, 100}] = 1
			}
		}
		suffix := map[string]string{"": "all", "1": "one", "0,2": "two"}[list]
		lv, cc, dist, pr := refBFS(g, 2), refWCC(g), refSSSP(g, 3), refPageRank(g, 0.85)
		l1 := 0.0
		for x := uint64(0); x < 14; x++ {
			got, _, _ := r.Vertex("bfs-"+suffix, x)
			want, ok := lv[x]
			if !ok {
				want = -1
			}
			if got.(VertexLevel).Level != want {
				t.Errorf("types %q: bfs level of %d = %v, reference %d", list, x, got, want)
			}
			got, _, _ = r.Vertex("wcc-"+suffix, x)
			wc, ok := cc[x]
			if !ok {
				wc = x
			}
			if got.(VertexComponent).Component != wc {
				t.Errorf("types %q: wcc of %d = %v, reference %d", list, x, got, wc)
			}
			got, _, _ = r.Vertex("sssp-"+suffix, x)
			d, ok := dist[x]
			if gd := got.(VertexDistance); gd.Reachable != ok || math.Abs(gd.Distance-d) > 1e-9 {
				t.Errorf("types %q: sssp of %d = %+v, reference %v %v", list, x, gd, d, ok)
			}
			got, _, _ = r.Vertex("pagerank-"+suffix, x)
			l1 += math.Abs(got.(VertexRank).Rank - pr[x])
		}
		if l1 > 1e-8 {
			t.Errorf("types %q: pagerank L1 distance %g", list, l1)
		}
	}
	if !waitUntil(10*time.Second, func() bool {
		for _, a := range sink.alerts() {
			if a.Analytic == "payments-in" && a.Vertex == 100 {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the fan-in monitor of type 5 did not fire")
	}
	for _, a := range sink.alerts() {
		if a.Analytic == "payments-in" && a.Vertex != 100 {
			t.Errorf("the fan-in monitor of type 5 fired on %d: %+v", a.Vertex, a)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// alerts is a copy of what the sink got.
func (s *sinkRecorder) alerts() []Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Alert(nil), s.al...)
}
