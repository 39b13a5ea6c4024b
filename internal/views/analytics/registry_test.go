package analytics

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

type sinkRecorder struct {
	mu    sync.Mutex
	al    []Alert
	delay time.Duration // a slow sink: each Publish takes this long
}

func (s *sinkRecorder) Publish(al []Alert) {
	time.Sleep(s.delay)
	s.mu.Lock()
	s.al = append(s.al, al...)
	s.mu.Unlock()
}

// TestRegistryUnderConcurrentIngestion runs every built-in in a registry
// while batches, flushes and compactions go on, then checks that each
// catches up to the last batch with the reference result.
func TestRegistryUnderConcurrentIngestion(t *testing.T) {
	h := newHarness(t, 77, true, spreadIDs)
	sink := &sinkRecorder{}
	var hookMu sync.Mutex
	updates := map[string]int{}
	registered, unregistered := map[string]string{}, map[string]int{} // name -> type; unregistrations
	r := NewRegistry(h.m, RegistryConfig{Sinks: []AlertSink{sink}, AlertRing: 1 << 16, Hooks: Hooks{
		Updated:      func(name string, _ bool, _ time.Duration) { hookMu.Lock(); updates[name]++; hookMu.Unlock() },
		Registered:   func(s Spec) { hookMu.Lock(); registered[s.Name] = s.Type; hookMu.Unlock() },
		Unregistered: func(name string) { hookMu.Lock(); unregistered[name]++; hookMu.Unlock() },
	}})
	defer r.Close()
	specs := []Spec{
		{Type: "bfs", Root: fmt.Sprint(spreadID(2))},
		{Type: "wcc", BatchSize: 10},
		{Type: "pagerank", Tolerance: 1e-11, MaxIterations: 1000, Interval: 5 * time.Millisecond},
		{Type: "sssp", Root: fmt.Sprint(spreadID(3))},
		{Type: "degree", Direction: "both", Threshold: 4},
		{Type: "fanin", Threshold: 3, WindowEdges: 30},
		{Name: "out", Type: "fanout", Threshold: 3, WindowDuration: time.Second},
		{Type: "fraud", Threshold: 5, MaxCycle: 4, RingSearch: "any"}, // its check below: the cycle is in the graph
	}
	for _, s := range specs {
		if _, err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Register(Spec{Type: "wcc"}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate name: %v", err)
	}
	for _, bad := range []Spec{{Type: "nope"}, {Type: "bfs"}, {Type: "pagerank", Damping: 2}, {Type: "fanin"},
		{Type: "fraud", Threshold: 1, MaxCycle: 20}, {Type: "bfs", Root: "x"}, {Name: "a b", Type: "wcc"},
		{Type: "sssp", Root: "1", Stale: true}} {
		if _, err := r.Register(bad); err == nil {
			t.Fatalf("spec %+v accepted", bad)
		}
	}
	for i := 0; i < 300; i++ {
		h.batch(1+h.r.IntN(15), false, true)
		if i%50 == 0 {
			time.Sleep(5 * time.Millisecond) // let slow analytics fall behind and catch up
		}
	}
	// A last batch of 10 operations: wcc pulls only once 10 are new, so
	// whatever it read before, this batch brings it to the end.
	h.batch(10, true, false)
	if err := h.s.Flush(); err != nil { // the stale sssp sees the end only after a flush
		t.Fatal(err)
	}
	last := uint64(0)
	for q := range h.states {
		last = max(last, q)
	}
	final := h.states[last]
	waitAllAt(t, r, []string{"bfs", "wcc", "pagerank", "sssp", "degree"}, last)
	ids := allIDs(final)
	lv := refBFS(final, spreadID(2))
	cc := refWCC(final)
	pr := refPageRank(final, 0.85)
	dist := refSSSP(final, spreadID(3))
	l1 := 0.0
	for _, x := range ids {
		got, _, _ := r.Vertex("bfs", x)
		want, ok := lv[x]
		if !ok {
			want = -1
		}
		if got.(VertexLevel).Level != want {
			t.Fatalf("bfs level of %d = %v, reference %d", x, got, want)
		}
		got, _, _ = r.Vertex("wcc", x)
		wc, ok := cc[x]
		if !ok {
			wc = x
		}
		if got.(VertexComponent).Component != wc {
			t.Fatalf("wcc of %d = %v, reference %d", x, got, wc)
		}
		got, _, _ = r.Vertex("pagerank", x)
		l1 += math.Abs(got.(VertexRank).Rank - pr[x])
		got, _, _ = r.Vertex("sssp", x)
		d, ok := dist[x]
		if g := got.(VertexDistance); g.Reachable != ok || math.Abs(g.Distance-d) > 1e-9 {
			t.Fatalf("sssp of %d = %+v, reference %v %v", x, g, d, ok)
		}
	}
	if l1 > 1e-8 {
		t.Fatalf("pagerank L1 distance %g", l1)
	}
	deg := refDegrees(final, "both")
	above := 0
	for _, d := range deg {
		if d > 4 {
			above++
		}
	}
	if res, _ := r.Result("degree"); res.Summary.(MonitorSummary).Above != above {
		t.Fatalf("degree monitor: %+v, reference %d above", res.Summary, above)
	}
	// Every cycle alert is a real cycle of the graph at its seq.
	al, total := r.Alerts("", 1<<16)
	if uint64(len(al)) != total {
		t.Fatalf("ring holds %d of %d alerts", len(al), total)
	}
	cycles := 0
	kinds := map[string]bool{} // type/kind seen
	for _, a := range al {
		// Every alert's kind is one AlertKinds lists for its type (the
		// series serve's metrics create for an analytic at registration).
		hookMu.Lock()
		typ := registered[a.Analytic]
		hookMu.Unlock()
		if !slices.Contains(AlertKinds(typ), a.Kind) {
			t.Fatalf("alert %+v of a %q analytic: kind not in AlertKinds %v", a, typ, AlertKinds(typ))
		}
		kinds[typ+"/"+a.Kind] = true
		if a.Kind != "cycle" {
			continue
		}
		cycles++
		g := h.states[a.Seq]
		for i, v := range a.Cycle {
			if _, ok := g[ekey{v, a.Cycle[(i+1)%len(a.Cycle)]}]; !ok {
				t.Fatalf("alert %+v: edge %d->%d is not in the graph at seq %d", a, v, a.Cycle[(i+1)%len(a.Cycle)], a.Seq)
			}
		}
	}
	if cycles == 0 {
		t.Fatal("no cycle alert was raised")
	}
	sink.mu.Lock()
	if len(sink.al) != len(al) {
		t.Fatalf("sink got %d alerts, ring %d", len(sink.al), len(al))
	}
	sink.mu.Unlock()
	if fr, _ := r.Alerts("fraud", 3); len(fr) > 3 || (len(fr) > 0 && fr[0].Analytic != "fraud") {
		t.Fatalf("alerts of fraud: %+v", fr)
	}
	top, err := r.TopRanks("pagerank", 3)
	if err != nil || len(top) != 3 || top[0].Rank < top[1].Rank {
		t.Fatalf("top ranks %v %v", top, err)
	}
	if _, err := r.TopRanks("wcc", 3); err == nil {
		t.Fatal("top ranks of wcc")
	}
	if st := r.Freshness(last); st["bfs"].Behind != 0 || !st["bfs"].Ready {
		t.Fatalf("freshness %v", st)
	}
	hookMu.Lock()
	if updates["bfs"] < 2 {
		t.Fatalf("hooks saw %v", updates)
	}
	hookMu.Unlock()
	for _, want := range []string{"degree/degree", "fanin/fan_in", "fanout/fan_out", "fraud/cycle"} {
		if !kinds[want] {
			t.Errorf("no alert of type/kind %s (seen %v)", want, kinds)
		}
	}
	for _, typ := range []string{"bfs", "wcc", "pagerank", "sssp"} {
		if k := AlertKinds(typ); len(k) != 0 {
			t.Errorf("AlertKinds(%s) = %v: a graph analytic raises no alert", typ, k)
		}
	}
	hookMu.Lock()
	if len(registered) != len(specs) || len(unregistered) != 0 {
		t.Errorf("Registered saw %v, Unregistered %v; want the %d analytics and none", registered, unregistered, len(specs))
	}
	hookMu.Unlock()
	if err := r.Unregister("bfs"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Result("bfs"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("result of an unregistered analytic: %v", err)
	}
	hookMu.Lock()
	if len(unregistered) != 1 || unregistered["bfs"] != 1 {
		t.Errorf("Unregistered saw %v, want bfs once", unregistered)
	}
	hookMu.Unlock()
	if len(r.Results()) != len(specs)-1 {
		t.Fatalf("%d results", len(r.Results()))
	}
}

func TestParseSpec(t *testing.T) {
	s, err := ParseSpec("type=pagerank,name=pr,damping=0.9,interval=2s,stale=true,max_iterations=5")
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != "pagerank" || s.Name != "pr" || s.Damping != 0.9 || s.Interval != 2*time.Second || !s.Stale || s.MaxIterations != 5 {
		t.Fatalf("%+v", s)
	}
	for _, bad := range []string{"type", "colour=red", "batch_size=x", "interval=3", "stale=maybe"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	if _, err := ParseSpec("colour=red"); !strings.Contains(err.Error(), "allowed: batch_size") {
		t.Fatalf("unknown key message: %v", err)
	}
}

func TestTopRanksMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	var xs []uint64
	for i := uint64(0); i < 500; i++ {
		xs = append(xs, i, engine.HighIDBase+i/5, spreadID(i))
	}
	ids, err := views.NewIDSpace(xs)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, h := ids.Regions(); h < 200 {
		t.Fatalf("only %d ids hashed: the test wants ranks out of id order", h)
	}
	rank, in := make([]float64, ids.Len()), make([]bool, ids.Len())
	for i := range rank {
		if r.IntN(4) > 0 {
			rank[i] = float64(r.IntN(50)) // many ties
		}
		in[i] = r.IntN(8) > 0 // some with a rank are not present: left out
	}
	var all []VertexRank
	for i, x := range rank {
		if x > 0 && in[i] {
			all = append(all, VertexRank{ids.ID(i), x})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].Rank > all[j].Rank || all[i].Rank == all[j].Rank && all[i].Vertex < all[j].Vertex
	})
	for _, k := range []int{0, 1, 7, 100, len(all), len(all) + 5} {
		want := all[:min(k, len(all))]
		if got := topRanks(ids, rank, in, k); fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("k=%d: %v, want %v", k, got, want)
		}
	}
}

// A fan monitor registered over a store at seq N reports seq N (and is
// not behind) once ready, with no operation after it: before, it said seq
// 0 and N behind until the next operation came, so that a client waiting
// for it at the store's seq, or reading its freshness, was told it had not
// taken in what there was (with the store at 0 it said 0: the summary of
// an empty window, whatever came next).
func TestStreamMonitorStartsAtTheStoresSeq(t *testing.T) {
	h := newHarness(t, 8, false, denseIDs)
	var b engine.Batch
	for i := range 5 {
		b.Insert(uint64(i), 42)
	}
	var head uint64
	for range 3 {
		var err error
		if head, err = h.s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	if head == 0 {
		t.Fatal("the store is at seq 0")
	}
	r := NewRegistry(h.m, RegistryConfig{})
	defer r.Close()
	if _, err := r.Register(Spec{Name: "in", Type: "fanin", Threshold: 1e9, WindowEdges: 1000}); err != nil {
		t.Fatal(err)
	}
	var res Result
	ok := waitUntil(10*time.Second, func() bool {
		res, _ = r.Result("in")
		return res.Ready
	})
	if f := r.Freshness(head)["in"]; !ok || res.Seq != head || res.Summary.(MonitorSummary).Seq != head || f.Behind != 0 {
		t.Fatalf("the monitor is ready %v at seq %d (summary %+v), %d behind; want seq %d, 0 behind", res.Ready, res.Seq, res.Summary, f.Behind, head)
	}
}

// TestRegisterSeesEveryLaterOp: the stream view opens in Register, so ops
// applied right after it returns are counted.
func TestRegisterSeesEveryLaterOp(t *testing.T) {
	h := newHarness(t, 8, false, denseIDs)
	r := NewRegistry(h.m, RegistryConfig{})
	defer r.Close()
	if _, err := r.Register(Spec{Type: "fanin", Threshold: 1e9, WindowEdges: 1000}); err != nil {
		t.Fatal(err)
	}
	var b engine.Batch
	for i := 0; i < 5; i++ {
		b.Insert(uint64(i), 42)
	}
	if _, err := h.s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	ok := waitUntil(10*time.Second, func() bool {
		v, found, _ := r.Vertex("fanin", 42)
		return found && v.(VertexValue).Value == 5
	})
	if !ok {
		v, _, _ := r.Vertex("fanin", 42)
		t.Fatalf("fan-in of 42 = %v, want 5", v)
	}
}

func waitUntil(d time.Duration, f func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if f() {
			return true
		}
	}
	return false
}

// TestAlertRingWraps: the ring keeps the newest alerts, oldest first, per
// analytic and overall, and counts every one raised.
func TestAlertRingWraps(t *testing.T) {
	h := newHarness(t, 3, false, denseIDs)
	r := NewRegistry(h.m, RegistryConfig{AlertRing: 3})
	defer r.Close()
	for i := 0; i < 7; i++ {
		name := "a"
		if i%2 == 1 {
			name = "b"
		}
		r.raise(name, []Alert{{Analytic: name, Kind: "degree", Vertex: uint64(i)}})
	}
	vertices := func(al []Alert) []uint64 {
		var out []uint64
		for _, a := range al {
			out = append(out, a.Vertex)
		}
		return out
	}
	if al, total := r.Alerts("", 10); fmt.Sprint(vertices(al)) != "[4 5 6]" || total != 7 {
		t.Fatalf("all: %v total %d", vertices(al), total)
	}
	if al, _ := r.Alerts("", 2); fmt.Sprint(vertices(al)) != "[5 6]" {
		t.Fatalf("newest two: %v", vertices(al))
	}
	if al, total := r.Alerts("a", 10); fmt.Sprint(vertices(al)) != "[4 6]" || total != 4 {
		t.Fatalf("a: %v total %d", vertices(al), total)
	}
	if al, total := r.Alerts("b", 10); fmt.Sprint(vertices(al)) != "[5]" || total != 3 {
		t.Fatalf("b: %v total %d", vertices(al), total)
	}
}

// TestRegisterCountsTheTopology: before any graph analytic has built the
// topology, registering one counts its estimated memory (about 10 bytes
// per edge) against the analytics' share; a monitor that reads no
// topology does not.
func TestRegisterCountsTheTopology(t *testing.T) {
	h := newHarness(t, 5, false, denseIDs)
	var b engine.Batch
	for i := range uint64(20000) {
		b.Insert(i%5000, (i*7919)%5000)
	}
	if _, err := h.s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	// The index and the per-vertex state fit in 1 MiB; 20,000 edges'
	// topology (about 200 KB) with them does not fit in 100 KB more.
	idx := h.m.IndexStats().Bytes
	small := NewRegistry(h.m, RegistryConfig{MemoryLimit: idx + Need(Spec{Type: "bfs"}, 5000, 0) + 100<<10})
	defer small.Close()
	if _, err := small.Register(Spec{Type: "bfs", Root: "1"}); !errors.Is(err, ErrMemory) {
		t.Fatalf("the topology's memory was not counted: %v", err)
	}
	if _, err := small.Register(Spec{Type: "degree", Threshold: 10}); !errors.Is(err, ErrMemory) {
		t.Fatalf("the degree monitor reads the topology too: %v", err)
	}
	if _, err := small.Register(Spec{Type: "fanout", Threshold: 10}); err != nil {
		t.Fatalf("a monitor without a topology: %v", err)
	}
	if _, err := small.Register(Spec{Type: "degree", Stale: true, Threshold: 10}); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("stale is refused with a reason: %v", err)
	}
	big := NewRegistry(h.m, RegistryConfig{MemoryLimit: 64 << 20})
	defer big.Close()
	if _, err := big.Register(Spec{Type: "bfs", Root: "1"}); err != nil {
		t.Fatal(err)
	}
}

// A fraud monitor reports a cycle closed right after Register returns,
// before its goroutine ever pulled: its first compute is Register's. Its
// seq reaches the cycle's only once the alert is handed over, however
// slow the sink (a reader, or a checkpoint, that sees the seq sees it).
func TestFraudSeesWhatFollowsRegister(t *testing.T) {
	for i := range 5 {
		h := newHarness(t, 5, false, denseIDs)
		h.batch(30, true, false) // some graph before
		sink := &sinkRecorder{delay: time.Duration(i%2) * 20 * time.Millisecond}
		r := NewRegistry(h.m, RegistryConfig{Sinks: []AlertSink{sink}})
		if _, err := r.Register(Spec{Type: "fraud", Threshold: 1e9, MaxCycle: 3}); err != nil {
			t.Fatal(err)
		}
		closeTriangle(t, h, r)
		sink.mu.Lock()
		n := len(sink.al)
		sink.mu.Unlock()
		r.Close()
		if n != 1 {
			t.Fatalf("%d alerts for the one cycle closed after Register", n)
		}
	}
}

// closeTriangle applies the three edges of a new triangle among three
// vertices no edge names yet, and waits until r's fraud monitor is there.
func closeTriangle(t *testing.T, h *harness, r *Registry) {
	t.Helper()
	a, b, c := uint64(1<<20), uint64(1<<20+1), uint64(1<<20+2)
	var bt engine.Batch
	bt.Insert(a, b)
	bt.Insert(b, c)
	bt.Insert(c, a)
	seq, err := h.s.Apply(&bt)
	if err != nil {
		t.Fatal(err)
	}
	waitAllAt(t, r, []string{"fraud"}, seq)
}

// TestAlertsNameTheirVertices: an alert carries its vertices' ids as
// decimal strings and, through RegistryConfig.Names, their keys; without
// Names, the store ids and no keys.
func TestAlertsNameTheirVertices(t *testing.T) {
	for _, named := range []bool{false, true} {
		h := newHarness(t, 6, false, denseIDs)
		sink := &sinkRecorder{}
		cfg := RegistryConfig{Sinks: []AlertSink{sink}}
		if named {
			cfg.Names = func(id uint64) (uint64, string) {
				if id%2 == 0 {
					return id + 7, fmt.Sprintf("k%d", id)
				}
				return id + 7, ""
			}
		}
		r := NewRegistry(h.m, cfg)
		if _, err := r.Register(Spec{Type: "fraud", Threshold: 1e9, MaxCycle: 3}); err != nil {
			t.Fatal(err)
		}
		closeTriangle(t, h, r)
		r.Close()
		sink.mu.Lock()
		al := sink.al
		sink.mu.Unlock()
		if len(al) != 1 {
			t.Fatalf("%d alerts", len(al))
		}
		x := al[0]
		var wantIDs, wantKeys []string
		for _, v := range x.Cycle {
			ext, key := v, ""
			if named {
				ext = v + 7
				if v%2 == 0 {
					key = fmt.Sprintf("k%d", v)
				}
			}
			wantIDs, wantKeys = append(wantIDs, strconv.FormatUint(ext, 10)), append(wantKeys, key)
		}
		if !named {
			wantKeys = nil
		}
		if fmt.Sprint(x.CycleIDs) != fmt.Sprint(wantIDs) || fmt.Sprint(x.CycleKeys) != fmt.Sprint(wantKeys) {
			t.Errorf("named %v: cycle %v named %q / %q, want %q / %q", named, x.Cycle, x.CycleIDs, x.CycleKeys, wantIDs, wantKeys)
		}
		wantID := x.Vertex
		if named {
			wantID += 7
		}
		if x.VertexID != strconv.FormatUint(wantID, 10) || named && x.Vertex%2 == 0 && x.VertexKey != fmt.Sprintf("k%d", x.Vertex) {
			t.Errorf("named %v: vertex %d named %q / %q", named, x.Vertex, x.VertexID, x.VertexKey)
		}
	}
}

// TestFreshnessRunsFromApplyToReadable: the Fresh hook reports, per
// update, the time from its oldest operation's apply to the result being
// readable, for a graph analytic and a stream monitor. Bounds: at most the
// time the test saw from before its Apply to after the hook; and for bfs,
// paced at 300 ms, at least the pacing wait that followed the apply (a
// figure taken from the pull instead of the apply would be milliseconds).
func TestFreshnessRunsFromApplyToReadable(t *testing.T) {
	h := newHarness(t, 31, false, denseIDs)
	type fresh struct {
		name string
		seq  uint64
		d    time.Duration
	}
	calls := make(chan fresh, 64)
	r := NewRegistry(h.m, RegistryConfig{Hooks: Hooks{Fresh: func(name string, seq uint64, d time.Duration) { calls <- fresh{name, seq, d} }}})
	defer r.Close()
	const pacing = 300 * time.Millisecond
	head := func() uint64 { // the newest batch's seq
		var m uint64
		for seq := range h.states {
			m = max(m, seq)
		}
		return m
	}
	h.batch(30, true, false)
	prevStart := time.Now() // bfs's first compute begins after this
	for _, s := range []Spec{{Type: "bfs", Root: "0", Interval: pacing}, {Name: "in", Type: "fanin", Threshold: 1e9, WindowEdges: 1000}} {
		if _, err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp := func(head uint64) bool {
		return waitUntil(20*time.Second, func() bool {
			f := r.Freshness(head)
			return f["bfs"].Ready && f["bfs"].Behind == 0 && f["in"].Ready && f["in"].Behind == 0
		})
	}
	if !caughtUp(head()) {
		t.Fatal("the analytics did not catch up with the first batch")
	}
	select {
	case c := <-calls:
		t.Fatalf("a first compute reported freshness %+v", c)
	default:
	}
	for round := 0; round < 3; round++ {
		before := time.Now()
		h.batch(20, true, false)
		applied := time.Now()
		if !caughtUp(head()) {
			t.Fatalf("round %d: the analytics did not catch up", round)
		}
		got := map[string]time.Duration{}
		for len(got) < 2 {
			select {
			case c := <-calls:
				if _, dup := got[c.name]; dup {
					t.Fatalf("round %d: two updates of %s for one batch", round, c.name)
				}
				if c.seq != head() {
					t.Errorf("round %d: %s's freshness is reported at seq %d, its result is at %d", round, c.name, c.seq, head())
				}
				got[c.name] = c.d
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: freshness reported for %v only", round, got)
			}
		}
		upper := time.Since(before)
		for name, d := range got {
			if d < 0 || d > upper {
				t.Errorf("round %d: %s's freshness %v, outside [0, %v]", round, name, d, upper)
			}
		}
		// bfs pulls no sooner than pacing after its last update began
		// (after prevStart: it pulled what was applied after it), so its
		// result came at least that long after the apply (before applied).
		if low := prevStart.Add(pacing).Sub(applied); got["bfs"] < low {
			t.Errorf("round %d: bfs's freshness %v, less than the %v its pacing made it wait after the apply", round, got["bfs"], low)
		}
		prevStart = before
	}
}
