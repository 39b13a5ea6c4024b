package graphtide

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// rootPkg is the import path of this package: every result a user reads
// is of a type defined here.
var rootPkg = reflect.TypeFor[Result]().PkgPath()

// internalPrefix is what an internal package's error starts with.
var internalWord = regexp.MustCompile(`\b(engine|datadir|analytics|keydict|typedict|views): `)

// TestBuiltInResultsAreRootTypes registers every built-in analytic by its
// typed options over a graph of string keys, and reads their summaries,
// per-vertex results and alerts: each is a type of this package (another
// module can name it), vertices carry their keys, and the values agree
// with a BFS, a Dijkstra and counts computed here from the edges.
func TestBuiltInResultsAreRootTypes(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys := []string{"a", "b", "c", "d", "e"} // e has no edge
	id := map[string]uint64{}
	for _, k := range keys {
		if id[k], err = db.VertexID(k); err != nil {
			t.Fatal(err)
		}
	}
	type edge struct {
		src, dst string
		w        float64
	}
	edges := []edge{{"a", "b", 1}, {"b", "c", 2}, {"a", "c", 5}, {"c", "d", 1}, {"c", "a", 1}}
	typed := map[string]BuiltIn{
		"bfs":      BFS{RootKey: "a"},
		"wcc":      WCC{},
		"pagerank": PageRank{},
		"sssp":     SSSP{RootKey: "a"},
		"degree":   Degree{Threshold: 1},
		"fanin":    FanIn{Threshold: 1},
		"fanout":   FanOut{Threshold: 1, Window: time.Hour},
		"fraud":    Fraud{Threshold: 100, MaxCycle: 4},
	}
	for _, typ := range analytics.Types {
		o, ok := typed[typ]
		if !ok {
			t.Fatalf("built-in %s has no typed options in this test (nor, maybe, in the package)", typ)
		}
		name, err := db.Register(o)
		if err != nil || name != typ {
			t.Fatalf("register %s: %q, %v", typ, name, err)
		}
	}
	var b Batch
	for _, e := range edges {
		b.Insert(id[e.src], id[e.dst], e.w)
	}
	seq, err := db.Apply(&b)
	if err != nil {
		t.Fatal(err)
	}

	// The oracle: levels and distances from a, in-counts and out-counts.
	level := map[string]int{"a": 0}
	for q := []string{"a"}; len(q) > 0; q = q[1:] {
		for _, e := range edges {
			if _, seen := level[e.dst]; e.src == q[0] && !seen {
				level[e.dst] = level[q[0]] + 1
				q = append(q, e.dst)
			}
		}
	}
	dist := map[string]float64{"a": 0}
	for range keys { // Bellman-Ford: the weights are positive
		for _, e := range edges {
			if d, ok := dist[e.src]; ok {
				if old, ok := dist[e.dst]; !ok || d+e.w < old {
					dist[e.dst] = d + e.w
				}
			}
		}
	}
	in, out := map[string]int{}, map[string]int{}
	for _, e := range edges {
		in[e.dst]++
		out[e.src]++
	}
	// The cycles of at most 4 edges the last edge, c -> a, closes: the
	// paths from a to c of at most 3 edges.
	var cycles func(from string, n int) int
	cycles = func(from string, n int) int {
		if from == "c" {
			return 1
		}
		found := 0
		for _, e := range edges[:len(edges)-1] {
			if e.src == from && n > 0 {
				found += cycles(e.dst, n-1)
			}
		}
		return found
	}
	wantCycles := cycles("a", 3)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, typ := range analytics.Types {
		r, err := db.Wait(ctx, typ, seq)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if st := reflect.TypeOf(r.Summary); st == nil || st.PkgPath() != rootPkg {
			t.Errorf("%s: Summary is a %v, not a type of %s", typ, st, rootPkg)
		}
		for _, k := range keys {
			x, ok, err := db.VertexResult(typ, id[k])
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				continue
			}
			if vt := reflect.TypeOf(x); vt.PkgPath() != rootPkg {
				t.Errorf("%s: VertexResult of %s is a %v, not a type of %s", typ, k, vt, rootPkg)
			}
			switch x := x.(type) {
			case VertexLevel:
				want, reached := level[k]
				if !reached {
					want = -1
				}
				if x.Level != want {
					t.Errorf("bfs level of %s: %d, want %d", k, x.Level, want)
				}
			case VertexDistance:
				want, reached := dist[k]
				if x.Reachable != reached || x.Distance != want {
					t.Errorf("sssp distance of %s: %+v, want %v (reachable %v)", k, x, want, reached)
				}
			case VertexComponent:
				if k != "e" && (x.Component != id["a"] || x.Size != 4) {
					t.Errorf("wcc component of %s: %+v, want a's (%d) of 4", k, x, id["a"])
				}
			case VertexRank:
				if x.Vertex != id[k] || x.Key != k || !(x.Rank > 0 && x.Rank < 1) && !(k == "e" && x.Rank == 0) {
					t.Errorf("pagerank of %s: %+v", k, x)
				}
			case VertexValue:
				want := map[string]map[string]int{"degree": out, "fanout": out, "fanin": in, "fraud": in}[typ][k]
				if x.Vertex != id[k] || x.Key != k || x.Value != float64(want) {
					t.Errorf("%s value of %s: %+v, want %d", typ, k, x, want)
				}
			default:
				t.Errorf("%s: VertexResult of %s is a %T", typ, k, x)
			}
		}
		switch s := r.Summary.(type) {
		case BFSSummary:
			if s.Root != id["a"] || s.RootKey != "a" || s.Reached != len(level) || s.MaxLevel != 2 || s.Seq != seq {
				t.Errorf("bfs summary %+v; levels %v", s, level)
			}
		case SSSPSummary:
			if s.RootKey != "a" || s.Reached != len(dist) || s.MaxDistance != 4 {
				t.Errorf("sssp summary %+v; distances %v", s, dist)
			}
		case WCCSummary:
			if s.Components != 1 || s.Largest != 4 {
				t.Errorf("wcc summary %+v", s)
			}
		case PageRankSummary:
			sum := 0.0
			for _, v := range s.Top {
				sum += v.Rank
				if v.Key == "" || id[v.Key] != v.Vertex {
					t.Errorf("pagerank top %+v: no key", v)
				}
			}
			if s.Vertices != 4 || len(s.Top) != 4 || math.Abs(sum-1) > 1e-3 {
				t.Errorf("pagerank summary %+v: ranks sum to %v", s, sum)
			}
		case MonitorSummary:
			counts := map[string]map[string]int{"degree": out, "fanout": out, "fanin": in}[typ]
			above := 0
			for _, n := range counts {
				if n > 1 {
					above++
				}
			}
			if s.Above != above || s.Threshold != 1 || len(s.Top) != above || s.Top[0].Key == "" {
				t.Errorf("%s summary %+v, want %d above 1 of %v", typ, s, above, counts)
			}
		case FraudSummary:
			if s.Cycles != uint64(wantCycles) || s.MaxCycle != 4 || s.FanIn.Threshold != 100 {
				t.Errorf("fraud summary %+v", s)
			}
		default:
			t.Errorf("%s: Summary is a %T", typ, s)
		}
	}

	// Alerts: degree and fan-out for each vertex of 2 out-edges, fan-in
	// for each of 2 in-edges, and the cycles.
	want := map[AlertKind][]string{AlertCycle: nil}
	for _, k := range keys {
		if out[k] > 1 {
			want[AlertDegree] = append(want[AlertDegree], k)
			want[AlertFanOut] = append(want[AlertFanOut], k)
		}
		if in[k] > 1 {
			want[AlertFanIn] = append(want[AlertFanIn], k)
		}
	}
	// Each a timed ring (the default search): one batch, so one apply
	// time for all; of a ring's rotations, all in time order, the alert
	// takes the one whose first payment arrived first, a's.
	for range wantCycles {
		want[AlertCycle] = append(want[AlertCycle], "a")
	}
	got := map[AlertKind][]string{AlertCycle: nil}
	for _, al := range db.Alerts("", 100) {
		if reflect.TypeOf(al).PkgPath() != rootPkg {
			t.Fatalf("an alert is a %T", al)
		}
		if k, _ := db.Key(al.Vertex); al.Key != k || k == "" {
			t.Errorf("alert %+v: key %q, want %q", al, al.Key, k)
		}
		if al.Kind == AlertCycle {
			if len(al.Cycle) != len(al.CycleKeys) || len(al.Cycle) < 2 || al.Cycle[0] != al.Vertex || al.Value != float64(len(al.Cycle)) {
				t.Errorf("a cycle alert: %+v", al)
			}
			for i, v := range al.Cycle {
				if k, _ := db.Key(v); al.CycleKeys[i] != k {
					t.Errorf("cycle alert %+v: key %d is %q, want %q", al, i, al.CycleKeys[i], k)
				}
			}
		} else if al.Value <= al.Threshold {
			t.Errorf("alert %+v: its value is not above its threshold", al)
		}
		if al.ID == "" || al.Seq != seq || al.Time.IsZero() {
			t.Errorf("alert %+v", al)
		}
		got[al.Kind] = append(got[al.Kind], al.Key)
	}
	for _, ks := range got {
		slices.Sort(ks)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("alerts by kind: %v, want %v", got, want)
	}
}

// TestTypedOptionsAgreeWithSpec: each built-in registered by its typed
// options and by the Spec of the same values gets the same settings
// (defaults filled alike), and an invalid value is refused with the same
// message either way, as an *OptionError naming the option, the typed
// field and the allowed range, matching ErrInvalid.
func TestTypedOptionsAgreeWithSpec(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	spec := func(name string) analytics.Spec {
		t.Helper()
		r, err := db.reg.Result(name)
		if err != nil {
			t.Fatal(err)
		}
		return r.Spec
	}
	same := []struct {
		typed BuiltIn
		spec  Spec
	}{
		{BFS{Name: "r", Root: 7, BatchSize: 10, MaxBehind: 1 << 19}, "type=bfs,name=r,root=7,batch_size=10,max_behind=524288"},
		{WCC{Types: []string{"payment", "refund"}}, "type=wcc,types=payment|refund"},
		{PageRank{Damping: 0.9, MaxIterations: 50, Tolerance: 1e-8}, "type=pagerank,damping=0.9,max_iterations=50,tolerance=1e-8"},
		{SSSP{RootKey: "acct-1", Interval: time.Second}, "type=sssp,root=key:acct-1,interval=1s"},
		{Degree{Threshold: 5, Direction: "in"}, "type=degree,threshold=5,direction=in"},
		{FanIn{Threshold: 200, Window: time.Minute, Lateness: 5 * time.Second}, "type=fanin,threshold=200,window=1m,lateness=5s"},
		{FanOut{Threshold: 3, WindowEdges: 50}, "type=fanout,threshold=3,window_edges=50"},
		{FanIn{Threshold: 2, Window: time.Hour, Measure: "senders", Evidence: 8}, "type=fanin,threshold=2,window=1h,measure=senders,evidence=8"},
		{Fraud{Threshold: 9000, Window: 24 * time.Hour, Measure: "amount", MuleSenders: 3, MuleReceivers: 2},
			"type=fraud,threshold=9000,window=24h,measure=amount,mule_senders=3,mule_receivers=2"},
		{Fraud{Threshold: 10, MaxCycle: 6, SearchBudget: 1000, PullTimeout: time.Second, PullMemoryMiB: 32, Window: time.Hour},
			"type=fraud,threshold=10,max_cycle=6,search_budget=1000,pull_timeout=1s,pull_memory_mib=32,window=1h"},
		{Fraud{Threshold: 10, MaxSpan: 10 * time.Minute, MinRatio: 0.9}, "type=fraud,threshold=10,max_span=10m,min_ratio=0.9"},
		{Fraud{Threshold: 10, RingSearch: "any"}, "type=fraud,threshold=10,ring_search=any"},
	}
	for _, c := range same {
		name, err := db.Register(c.typed)
		if err != nil {
			t.Fatalf("%#v: %v", c.typed, err)
		}
		fromTyped := spec(name)
		if err := db.Unregister(name); err != nil {
			t.Fatal(err)
		}
		if name, err = db.Register(c.spec); err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if fromSpec := spec(name); !reflect.DeepEqual(fromTyped, fromSpec) {
			t.Errorf("%#v gives %+v\n%s gives %+v", c.typed, fromTyped, c.spec, fromSpec)
		}
		if err := db.Unregister(name); err != nil {
			t.Fatal(err)
		}
	}

	refused := []struct {
		typed         BuiltIn
		spec          Spec
		option, field string
		allowed       string // in the message
	}{
		{BFS{BatchSize: -1}, "type=bfs,root=0,batch_size=-1", "batch_size", "BatchSize", "allowed 1..1000000"},
		{PageRank{Damping: 1.5}, "type=pagerank,damping=1.5", "damping", "Damping", "allowed (0, 1)"},
		{FanIn{}, "type=fanin", "threshold", "Threshold", "(0, 1e+15]"},
		{FanIn{Threshold: 1, Window: 8 * 24 * time.Hour}, "type=fanin,threshold=1,window=192h", "window", "Window", "allowed 0s..168h0m0s"},
		{Fraud{Threshold: 1, MaxCycle: 9}, "type=fraud,threshold=1,max_cycle=9", "max_cycle", "MaxCycle", "allowed 1..8"},
		{Degree{Threshold: 1, Direction: "up"}, "type=degree,threshold=1,direction=up", "direction", "Direction", "out, in or both"},
		{WCC{Name: "my wcc"}, "type=wcc,name=my wcc", "name", "Name", "letters, digits"},
		{FanOut{Threshold: 1, Lateness: time.Second}, "type=fanout,threshold=1,lateness=1s", "lateness", "Lateness", "window of a duration"},
		{SSSP{Interval: 2 * time.Hour}, "type=sssp,root=0,interval=2h", "interval", "Interval", "allowed 0s..1h0m0s"},
		{Fraud{Threshold: 1, PullTimeout: time.Millisecond}, "type=fraud,threshold=1,pull_timeout=1ms", "pull_timeout", "PullTimeout", "allowed 10ms..1m0s"},
		{Fraud{Threshold: 1, MaxSpan: 8 * 24 * time.Hour}, "type=fraud,threshold=1,max_span=192h", "max_span", "MaxSpan", "168h"},
		{Fraud{Threshold: 1, RingSearch: "some"}, "type=fraud,threshold=1,ring_search=some", "ring_search", "RingSearch", "timed or any"},
		{Fraud{Threshold: 1, RingSearch: "any", MinRatio: 0.5}, "type=fraud,threshold=1,ring_search=any,min_ratio=0.5", "min_ratio", "MinRatio", "ring_search=timed"},
		{FanIn{Threshold: 1, Measure: "euros"}, "type=fanin,threshold=1,measure=euros", "measure", "Measure", "events, senders or amount"},
		{Fraud{Threshold: 1, Window: time.Hour, MuleSenders: 3}, "type=fraud,threshold=1,window=1h,mule_senders=3", "mule_receivers", "MuleReceivers", "needs mule_receivers too"},
		{Fraud{Threshold: 1, WindowEdges: 9, MuleSenders: 3, MuleReceivers: 1}, "type=fraud,threshold=1,window_edges=9,mule_senders=3,mule_receivers=1", "window", "Window", "window of time"},
	}
	for _, c := range refused {
		_, terr := db.Register(c.typed)
		_, serr := db.Register(c.spec)
		if terr == nil || serr == nil || terr.Error() != serr.Error() {
			t.Errorf("%#v: %v\n%s: %v\nwant the same refusal", c.typed, terr, c.spec, serr)
			continue
		}
		var oe *OptionError
		if !errors.As(terr, &oe) || oe.Option != c.option || oe.Field != c.field || !errors.Is(terr, ErrInvalid) ||
			!strings.Contains(terr.Error(), c.allowed) {
			t.Errorf("%#v: %v (%+v), want option %s, field %s, %q in the message", c.typed, terr, oe, c.option, c.field, c.allowed)
		}
		if internalWord.MatchString(terr.Error()) {
			t.Errorf("%v: an internal package's prefix", terr)
		}
	}
	if _, err := db.Register(BFS{Root: 3, RootKey: "x"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Root or RootKey, not both") {
		t.Errorf("both roots: %v", err)
	}
	var oe *OptionError
	if _, err := db.Register(Spec("type=bfs,rot=1")); !errors.As(err, &oe) || oe.Option != "rot" || !strings.Contains(err.Error(), "allowed: ") {
		t.Errorf("a misspelt key: %v", err)
	}
}

// TestEveryOptionFieldIsChecked sets each field of each typed option, in
// turn, to a value out of its range: Register refuses it, and the
// *OptionError names that very field (so every field reaches the
// validation, and under its own name).
func TestEveryOptionFieldIsChecked(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bad := map[string]any{
		"Name": "no spaces", "Root": uint64(1) << 63, "RootKey": strings.Repeat("k", 5000), "Types": []string{strings.Repeat("t", 5000)},
		"BatchSize": -1, "Interval": -time.Second, "MaxBehind": -1, "Damping": 1.0, "Tolerance": 2.0, "MaxIterations": -1,
		"Threshold": -1.0, "Direction": "up", "Window": -time.Second, "WindowEdges": -1, "Lateness": -time.Second,
		"MaxCycle": 9, "SearchBudget": -1, "PullTimeout": time.Hour, "PullMemoryMiB": -1,
		"MaxSpan": -time.Second, "RingSearch": "sometimes", "MinRatio": 2.0,
		"Measure": "euros", "Evidence": -1, "MuleSenders": -1, "MuleReceivers": -1,
	}
	// valid is each type's options with the required ones set.
	valid := []BuiltIn{BFS{}, WCC{}, PageRank{}, SSSP{}, Degree{Threshold: 1}, FanIn{Threshold: 1}, FanOut{Threshold: 1}, Fraud{Threshold: 1}}
	for _, o := range valid {
		typ := reflect.TypeOf(o)
		for i := range typ.NumField() {
			f := typ.Field(i)
			v, ok := bad[f.Name]
			if !ok {
				t.Errorf("%s.%s: no out-of-range value in this test", typ.Name(), f.Name)
				continue
			}
			x := reflect.New(typ).Elem()
			x.Set(reflect.ValueOf(o))
			x.Field(i).Set(reflect.ValueOf(v).Convert(f.Type))
			_, err := db.Register(x.Interface().(BuiltIn))
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != f.Name || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s.%s = %v: %v (%+v), want an *OptionError of %s", typ.Name(), f.Name, v, err, oe, f.Name)
			}
		}
	}
}

// TestErrorsNameKeysAndMatch: the errors a caller of the package meets
// say what to do, name vertices by their keys, carry no internal
// package's prefix, and match this package's sentinels and types.
func TestErrorsNameKeysAndMatch(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{HistorySeqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := db.VertexID("alice")
	bob, _ := db.VertexID("bob")
	pay, _ := db.TypeID("payment")
	var b Batch
	b.Insert(alice, bob, 10)
	b.SetType(pay)
	if _, err := db.Apply(&b); err != nil {
		t.Fatal(err)
	}
	clean := func(what string, err error, says ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if internalWord.MatchString(err.Error()) {
			t.Errorf("%s: %q names an internal package", what, err)
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
	}

	_, err = Open(dir, nil)
	clean("a second Open", err, "in use")
	if !errors.Is(err, ErrLocked) {
		t.Errorf("a second Open: %v does not match ErrLocked", err)
	}

	_, err = db.ApplyIf(&b, EdgeAbsent(alice, bob).OfType(pay))
	clean("a refused ApplyIf", err, `edge ("alice", "bob", type payment) is absent`, "it exists", "retry")
	var pe *PreconditionError
	if !errors.As(err, &pe) || pe.Index != 0 || pe.Actual != "it exists" || pe.Seq != 1 || !errors.Is(err, ErrInvalid) {
		t.Errorf("a refused ApplyIf: %v (%+v)", err, pe)
	}
	_, err = db.ApplyIf(&b, DegreeAtMost(alice, 0))
	clean("a refused degree", err, `vertex "alice" has at most 0 out-edges`, "its out-degree is 1")

	b.Reset()
	b.PutVertex(alice, strings.Repeat("x", MaxVertexLabel+1), nil)
	_, err = db.Apply(&b)
	clean("a label too long", err, `vertex "alice"`, "at most 255 bytes")
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "4611686018427387904") {
		t.Errorf("a label too long: %v", err)
	}

	_, err = db.SnapshotAt(9)
	clean("a seq not applied", err, "seq 9 is not applied yet", "newest is 1")
	var se *SeqError
	if !errors.As(err, &se) || se.Seq != 9 || se.Newest != 1 || !errors.Is(err, ErrInvalid) {
		t.Errorf("a seq not applied: %v (%+v)", err, se)
	}

	for what, err := range map[string]error{
		"Result":       func() error { _, err := db.Result("nope"); return err }(),
		"Unregister":   db.Unregister("nope"),
		"VertexResult": func() error { _, _, err := db.VertexResult("nope", 1); return err }(),
		"Wait":         func() error { _, err := db.Wait(context.Background(), "nope", 1); return err }(),
	} {
		clean(what, err, `"nope"`, "register it first")
		if !errors.Is(err, ErrUnknownAnalytic) {
			t.Errorf("%s of an unknown analytic: %v", what, err)
		}
	}
	if _, err := db.Register(WCC{}); err != nil {
		t.Fatal(err)
	}
	_, err = db.Register(WCC{})
	clean("a second wcc", err, `"wcc"`, "another Name")
	if !errors.Is(err, ErrAnalyticExists) {
		t.Errorf("a second wcc: %v", err)
	}
	_, err = db.VertexID(strings.Repeat("k", 5000))
	clean("a key too long", err)
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("a key too long: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Apply(&b); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Close: %v", err)
	}
	if _, err := db.Register(WCC{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Register after Close: %v", err)
	}
}

// TestCorruptionErrorIsTyped: a store file whose bytes were flipped is
// refused with a *CorruptionError naming the file, and the message says
// how to find and repair the damage.
func TestCorruptionErrorIsTyped(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	for v := uint64(1); v <= 200; v++ {
		b.Insert(v, v+1, float64(v))
	}
	if _, err := db.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The largest file of the store holds the edges.
	var largest string
	var size int64
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > size && !strings.Contains(p, "keys") {
			largest, size = p, fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(largest)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(largest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		db, err := Open(dir, nil)
		if err != nil {
			return err
		}
		defer db.Close()
		sn, err := db.Snapshot()
		if err != nil {
			return err
		}
		defer sn.Release()
		for v := uint64(1); v <= 200; v++ {
			if _, err := sn.Neighbors(v, Out); err != nil {
				return err
			}
		}
		return nil
	}
	err = read()
	var ce *CorruptionError
	if !errors.As(err, &ce) || !strings.Contains(largest, filepath.Base(ce.File)) || ce.Reason == "" || internalWord.MatchString(err.Error()) {
		t.Fatalf("reading %s with a flipped byte: %v (%+v)", largest, err, ce)
	}
	t.Logf("%v", err)
}

// TestPublicErrKeepsOwnErrors: an error already of this package passes
// the conversion as it is, and an engine error keeps its cause.
func TestPublicErrKeepsOwnErrors(t *testing.T) {
	pe := &PreconditionError{Index: 1}
	var got *PreconditionError
	if err := publicErr(pe, namer{}); !errors.As(err, &got) || got != pe {
		t.Errorf("own error converted: %v", got)
	}
	err := publicErr(engine.ErrClosed, namer{})
	if !errors.Is(err, ErrClosed) || !errors.Is(err, engine.ErrClosed) || internalWord.MatchString(err.Error()) {
		t.Errorf("engine.ErrClosed: %v", err)
	}
	if !slices.Equal([]string{clean("vertex 4611686018427387904: engine: invalid argument: x", func(uint64) (string, bool) { return "k", true })},
		[]string{`vertex "k": x`}) {
		t.Error("clean")
	}
}
