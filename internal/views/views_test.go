package views

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/testref/volume"
)

// ---- oracle: a plain map of edges, updated op by op (internal/testref) ----

type ekey = [2]uint64

type oracle = testref.Edges

// adjOf is the sorted adjacency of dir as "d@w" per vertex.
func adjOf(o oracle, dir engine.Direction) map[uint64][]string {
	m := map[uint64][]string{}
	keys := make([]ekey, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	if dir == engine.In {
		for i, k := range keys {
			keys[i] = ekey{k[1], k[0]}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		w := o[k]
		if dir == engine.In {
			w = o[ekey{k[1], k[0]}]
		}
		m[k[0]] = append(m[k[0]], fmt.Sprintf("%d@%g", k[1], w))
	}
	return m
}

func smallStore(t testing.TB, inEdges bool) *engine.Store {
	t.Helper()
	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10, TargetSegmentBytes: 16 << 10,
		SizeRatio: 3, L0CompactionTrigger: 2, MaxLevels: 4, InEdges: inEdges})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// smallLogManager is a Manager over a smallStore whose edge log holds
// logCap operations (0: the default; closed when the test ends).
func smallLogManager(t testing.TB, inEdges bool, logCap int) (*engine.Store, *Manager) {
	t.Helper()
	s := smallStore(t, inEdges)
	m, err := NewManager(s, Config{LogCapacity: logCap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return s, m
}

// spread maps the vertex numbers [0, nv) of the random tests onto ids
// over the whole range, injectively: a third stay small numbers, a third
// become string-key ids, and a third scatter over [2^61, 2^62), some right
// below 2^62 (HighIDBase). Every view test thereby runs on all three.
func spread(x uint64) uint64 {
	switch x % 3 {
	case 0:
		return x
	case 1:
		return engine.HighIDBase + x
	}
	if x%9 == 2 {
		return engine.HighIDBase - 1 - x
	}
	return 1<<61 | (x*0x9E3779B97F4A7C15)>>3
}

func randomOps(r *rand.Rand, nv uint64, n int, vdel bool) []engine.Op {
	ops := make([]engine.Op, 0, n)
	v := func() uint64 { return spread(r.Uint64N(nv)) }
	for i := 0; i < n; i++ {
		switch x := r.IntN(100); {
		case x < 70:
			ops = append(ops, engine.Op{Src: v(), Dst: v(), Weight: float64(1 + r.IntN(9)), Kind: engine.OpUpsert})
		case x < 97 || !vdel:
			ops = append(ops, engine.Op{Src: v(), Dst: v(), Kind: engine.OpDeleteEdge})
		default:
			ops = append(ops, engine.Op{Src: v(), Kind: engine.OpDeleteVertex})
		}
	}
	return ops
}

// fanIn applies, as one batch, the n edges from base, base+1, ... to
// vertex 1, and returns them.
func fanIn(t testing.TB, s *engine.Store, n int, base uint64) []engine.Op {
	t.Helper()
	ops := make([]engine.Op, n)
	for i := range ops {
		ops[i] = engine.Op{Src: base + uint64(i), Dst: 1, Weight: 1, Kind: engine.OpUpsert}
	}
	if _, err := s.Apply(batchOf(ops)); err != nil {
		t.Fatal(err)
	}
	return ops
}

func batchOf(ops []engine.Op) *engine.Batch {
	var b engine.Batch
	for _, o := range ops {
		testref.AddOp(&b, o)
	}
	return &b
}

// history records the oracle state after every applied batch.
type history struct {
	mu     sync.Mutex
	states map[uint64]oracle
	ops    map[uint64][]engine.Op
}

func newHistory() *history {
	return &history{states: map[uint64]oracle{0: {}}, ops: map[uint64][]engine.Op{}}
}

func (h *history) at(seq uint64) oracle {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.states[seq]
}

// writer applies n random batches, flushing and compacting now and then,
// recording every state.
func writer(t testing.TB, s *engine.Store, h *history, seed uint64, n int, nv uint64, vdel bool) {
	pacedWriter(t, s, h, seed, n, nv, vdel, nil)
}

// pacedWriter is writer that, when tick is not nil, waits after every 10
// batches until the reader takes the tick (and flushes every 40), so that
// the reader sees many distinct sequence numbers however fast it runs.
func pacedWriter(t testing.TB, s *engine.Store, h *history, seed uint64, n int, nv uint64, vdel bool, tick chan<- struct{}) {
	r := rand.New(rand.NewPCG(seed, 1))
	cur := oracle{}
	for i := 0; i < n; i++ {
		ops := randomOps(r, nv, 1+r.IntN(60), vdel)
		h.mu.Lock() // hold across Apply so that states are recorded in seq order
		seq, err := s.Apply(batchOf(ops))
		if err != nil {
			h.mu.Unlock()
			t.Error(err)
			return
		}
		for _, o := range ops {
			cur.Apply(o)
		}
		h.states[seq] = cur.Clone()
		h.ops[seq] = ops
		h.mu.Unlock()
		if tick != nil && i%10 == 9 {
			if i%40 == 39 {
				if err := s.Flush(); err != nil {
					t.Error(err)
				}
			}
			tick <- struct{}{}
		}
		switch r.IntN(20) {
		case 0:
			if err := s.Flush(); err != nil {
				t.Error(err)
			}
		case 1:
			if err := s.CompactAll(); err != nil {
				t.Error(err)
			}
		}
	}
}

// viewAdj reads a view's whole adjacency three ways (Each/Scan, Gather,
// Neighbors+Degree) and fails unless they agree.
func viewAdj(t testing.TB, v *StaticView, dir engine.Direction) map[uint64][]string {
	t.Helper()
	got := map[uint64][]string{}
	err := v.Each(dir, true, func(u uint64, nb []uint64, ws []float64) {
		for i, d := range nb {
			got[u] = append(got[u], fmt.Sprintf("%d@%g", d, ws[i]))
		}
	})
	if err != nil {
		t.Fatalf("each: %v", err)
	}
	// Every vertex with an edge has an index in the view's id space.
	ids, err := v.IDs()
	if err != nil {
		t.Fatalf("ids: %v", err)
	}
	var vids []uint64
	for i := 0; i < ids.Len(); i++ {
		vids = append(vids, ids.ID(i))
	}
	for u, nb := range got {
		if _, ok := ids.Index(u); !ok {
			t.Fatalf("seq %d %v: vertex %d has edges but no index", v.Seq(), v.Kind(), u)
		}
		for _, x := range nb {
			var d uint64
			fmt.Sscanf(x, "%d@", &d)
			if _, ok := ids.Index(d); !ok {
				t.Fatalf("seq %d %v: neighbor %d of %d has no index", v.Seq(), v.Kind(), d, u)
			}
		}
	}
	err = v.GatherEach(vids, dir, true, func(i int, nb []uint64, ws []float64) {
		var l []string
		for j, d := range nb {
			l = append(l, fmt.Sprintf("%d@%g", d, ws[j]))
		}
		if !slices.Equal(l, got[vids[i]]) {
			t.Errorf("seq %d %v gather(%d) = %v, scan says %v", v.Seq(), v.Kind(), vids[i], l, got[vids[i]])
		}
	})
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, u := range vids[:min(len(vids), 8)] {
		nb, ws, err := v.Neighbors(u, dir, nil, []float64{})
		if err != nil {
			t.Fatal(err)
		}
		deg, err := v.Degree(u, dir)
		if err != nil || deg != uint64(len(nb)) || len(nb) != len(got[u]) {
			t.Fatalf("vertex %d: degree %d (%v), neighbors %v %v, scan %v", u, deg, err, nb, ws, got[u])
		}
		if dir != engine.Out {
			continue
		}
		// Edge lookups: each neighbor's, and the next id's when it is none.
		for j, d := range nb {
			c, err := v.Edge(u, d)
			if err != nil || len(c.Weights) != 1 || c.Weights[0] != ws[j] {
				t.Fatalf("seq %d %v edge(%d, %d) = %+v (%v), want weight %v", v.Seq(), v.Kind(), u, d, c, err, ws[j])
			}
			if _, found := slices.BinarySearch(nb, d+1); !found {
				if c, err := v.Edge(u, d+1); err != nil || len(c.Weights) != 0 {
					t.Fatalf("seq %d %v edge(%d, %d) = %+v (%v), want none", v.Seq(), v.Kind(), u, d+1, c, err)
				}
			}
		}
	}
	return got
}

func sameAdj(a, b map[uint64][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func checkView(t testing.TB, v *StaticView, want oracle) {
	t.Helper()
	dirs := []engine.Direction{engine.Out}
	if v.HasIn() {
		dirs = append(dirs, engine.In)
	}
	for _, dir := range dirs {
		if got, exp := viewAdj(t, v, dir), adjOf(want, dir); !sameAdj(got, exp) {
			t.Fatalf("%v view at seq %d, dir %d: got %v want %v", v.Kind(), v.Seq(), dir, got, exp)
		}
	}
}

// TestStaticViewsNeverChange takes fresh, stale and private views while a
// writer, flushes and compactions run, and checks each against the oracle
// state of its sequence number, again and again until the writer is done.
func TestStaticViewsNeverChange(t *testing.T) {
	for _, inEdges := range []bool{false, true} {
		t.Run(fmt.Sprintf("in=%v", inEdges), func(t *testing.T) {
			s, m := smallLogManager(t, inEdges, 0)
			h := newHistory()
			done := make(chan struct{})
			tick := make(chan struct{})
			batches := volume.Size(400, 120) // the race detector watches fewer
			go func() { defer close(done); pacedWriter(t, s, h, 7, batches, 150, true, tick) }()
			type held struct {
				v    *StaticView
				want oracle
			}
			var views []held
			kinds := []StaticOptions{{Kind: Fresh}, {Kind: Stale}, {Kind: Private, PrivateIn: inEdges, PrivateWeights: true},
				{Kind: Private, StaleBase: true, PrivateWeights: true}}
			for i := 0; ; i++ {
				select {
				case <-done:
				case <-tick:
					o := kinds[i%len(kinds)]
					v, err := m.Static(o)
					if err != nil {
						t.Fatal(err)
					}
					want := h.at(v.Seq())
					if want == nil {
						t.Fatalf("no oracle state for seq %d", v.Seq())
					}
					checkView(t, v, want)
					views = append(views, held{v, want})
					for _, hv := range views[max(0, len(views)-3):] {
						checkView(t, hv.v, hv.want)
					}
					continue
				}
				break
			}
			if err := s.CompactAll(); err != nil {
				t.Fatal(err)
			}
			seqs := map[Kind]map[uint64]bool{}
			for _, hv := range views {
				checkView(t, hv.v, hv.want)
				if seqs[hv.v.Kind()] == nil {
					seqs[hv.v.Kind()] = map[uint64]bool{}
				}
				seqs[hv.v.Kind()][hv.v.Seq()] = true
				hv.v.Release()
			}
			for _, k := range []Kind{Fresh, Stale, Private} {
				if len(seqs[k]) < 3 {
					t.Errorf("only %d distinct %v view seqs were checked", len(seqs[k]), k)
				}
			}
			if st := m.Stats(); st.ViewsOpen[Fresh]+st.ViewsOpen[Stale]+st.ViewsOpen[Private] != 0 {
				t.Fatalf("views still open after release: %+v", st.ViewsOpen)
			}
		})
	}
}

func TestReleasedViewErrors(t *testing.T) {
	s := smallStore(t, true)
	m, err := NewManager(s, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var b engine.Batch
	b.Insert(1, 2)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kind{Fresh, Stale, Private} {
		v, err := m.Static(StaticOptions{Kind: k})
		if err != nil {
			t.Fatal(err)
		}
		v.Release()
		v.Release() // harmless
		if _, err := v.Degree(1, engine.Out); !errors.Is(err, ErrReleased) {
			t.Errorf("%v degree after release: %v", k, err)
		}
		if _, _, err := v.Neighbors(1, engine.Out, nil, nil); !errors.Is(err, ErrReleased) {
			t.Errorf("%v neighbors after release: %v", k, err)
		}
		if _, err := v.Scan(0, 10, engine.Out, engine.NewScanBuffer(4, 4, false)); !errors.Is(err, ErrReleased) {
			t.Errorf("%v scan after release: %v", k, err)
		}
		if _, err := v.Gather([]uint64{1}, engine.Out, engine.NewGatherBuffer(4, false)); !errors.Is(err, ErrReleased) {
			t.Errorf("%v gather after release: %v", k, err)
		}
		if err := v.Each(engine.Out, false, func(uint64, []uint64, []float64) {}); !errors.Is(err, ErrReleased) {
			t.Errorf("%v each after release: %v", k, err)
		}
	}
	// A private view without in-edges says so; Close releases what is open.
	pv, _ := m.Static(StaticOptions{Kind: Private})
	if _, err := pv.Degree(1, engine.In); err == nil {
		t.Error("in-edges of a private view without them: no error")
	}
	fv, _ := m.Static(StaticOptions{Kind: Fresh})
	m.Close()
	if _, err := fv.Degree(1, engine.Out); !errors.Is(err, ErrReleased) {
		t.Errorf("view after manager close: %v", err)
	}
	if _, err := m.Static(StaticOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("view of a closed manager: %v", err)
	}
}

// TestStreamDeliversEveryOpOnceInOrder runs four writers ("partitions")
// and a consumer pulling with random batch sizes; every op arrives once,
// in sequence order, so each partition's ops keep their order.
func TestStreamDeliversEveryOpOnceInOrder(t *testing.T) {
	s := smallStore(t, false)
	m, err := NewManager(s, Config{LogCapacity: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st, err := m.Stream(StreamOptions{BatchSize: 37})
	if err != nil {
		t.Fatal(err)
	}
	const parts, per = 4, 300
	var mu sync.Mutex
	sent := map[uint64][]engine.Op{} // seq -> ops
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				// The partition and its running count travel in the op.
				ops := []engine.Op{{Src: uint64(p), Dst: uint64(i), Weight: 1, Kind: engine.OpUpsert}}
				if i%7 == 0 {
					ops = append(ops, engine.Op{Src: uint64(p), Dst: uint64(i), Kind: engine.OpDeleteEdge})
				}
				seq, err := s.Apply(batchOf(ops))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sent[seq] = ops
				mu.Unlock()
			}
		}(p)
	}
	total := 0
	for p := 0; p < parts; p++ {
		total += per + (per+6)/7
	}
	var got []Edge
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(got) < total {
		b, err := st.Pull(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			t.Fatal(err)
		}
		if len(b.Edges) < 37 {
			t.Fatalf("pull returned %d edges, batch size is 37", len(b.Edges))
		}
		if b.Seq != b.Edges[len(b.Edges)-1].Seq {
			t.Fatalf("batch seq %d, last edge seq %d", b.Seq, b.Edges[len(b.Edges)-1].Seq)
		}
		got = append(got, b.Edges...)
		if len(got) > total-37 {
			break // the rest may never fill a batch
		}
	}
	wg.Wait()
	if len(got) < total-37 {
		t.Fatalf("got %d of %d ops", len(got), total)
	}
	// Drain the tail with a batch size of 1 on a fresh pull loop.
	st.opts.BatchSize = 1
	for len(got) < total {
		b, err := st.Pull(ctx)
		if err != nil {
			t.Fatalf("draining: %v (have %d of %d)", err, len(got), total)
		}
		got = append(got, b.Edges...)
	}
	if len(got) != total {
		t.Fatalf("got %d ops, want %d", len(got), total)
	}
	// Compare with what Apply returned, batch by batch.
	var seqs []uint64
	for q := range sent {
		seqs = append(seqs, q)
	}
	slices.Sort(seqs)
	i := 0
	next := make([]uint64, parts)
	for _, q := range seqs {
		for _, op := range sent[q] {
			if got[i].Seq != q || got[i].Op != op {
				t.Fatalf("op %d: got seq %d %+v, want seq %d %+v", i, got[i].Seq, got[i].Op, q, op)
			}
			if op.Kind == engine.OpUpsert {
				if op.Dst != next[op.Src] {
					t.Fatalf("partition %d: op %d arrived when %d was next", op.Src, op.Dst, next[op.Src])
				}
				next[op.Src]++
			}
			i++
		}
	}
	st.Close()
	if _, err := st.Pull(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("pull after close: %v", err)
	}
}

func TestStreamLostWhenFarBehind(t *testing.T) {
	s, m := smallLogManager(t, false, 100)
	st, _ := m.Stream(StreamOptions{})
	bounded, _ := m.Stream(StreamOptions{MaxBehind: 10})
	apply := func(from, n int) {
		ops := make([]engine.Op, n)
		for i := range ops {
			ops[i] = engine.Op{Src: 1, Dst: uint64(from + i), Weight: 1, Kind: engine.OpUpsert}
		}
		if _, err := s.Apply(batchOf(ops)); err != nil {
			t.Fatal(err)
		}
	}
	apply(0, 8)
	ctx := context.Background()
	b, err := bounded.Pull(ctx)
	if err != nil || len(b.Edges) != 8 {
		t.Fatalf("within bounds: %v, %d edges", err, len(b.Edges))
	}
	for i := 0; i < 15; i++ {
		apply(8+10*i, 10)
	}
	var lost *LostError
	if _, err := st.Pull(ctx); !errors.As(err, &lost) || lost.Missed != 158 {
		t.Fatalf("a stream 158 ops behind a log of 100: %v", err)
	}
	if _, err := bounded.Pull(ctx); !errors.As(err, &lost) || lost.Missed != 150 {
		t.Fatalf("a stream 150 ops behind its bound of 10: %v", err)
	}
	apply(1000, 3)
	for _, x := range []*Stream{st, bounded} {
		b, err := x.Pull(ctx)
		if err != nil || len(b.Edges) != 3 || b.Edges[0].Op.Dst != 1000 {
			t.Fatalf("after a loss the stream resumes at the head: %v %+v", err, b)
		}
	}
	if got := m.Stats().LostEvents; got != 2 {
		t.Fatalf("lost events = %d, want 2", got)
	}
}

// TestStreamInChunksCatchesUp: a stream with InChunks further behind than
// its MaxBehind gets every operation, in order, at most MaxBehind a pull;
// its Seq never names a batch it has not handed out whole, and reaches
// the head's; it is Lost only once the log no longer holds what it needs.
func TestStreamInChunksCatchesUp(t *testing.T) {
	s, m := smallLogManager(t, false, 100)
	st, err := m.Stream(StreamOptions{MaxBehind: 7, InChunks: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	var want []uint64
	var seqs []uint64        // the seq of each batch, in order
	ends := map[uint64]int{} // seq -> ops applied up to its end
	next := uint64(0)
	apply := func(n int) {
		ops := make([]engine.Op, n)
		for i := range ops {
			ops[i] = engine.Op{Src: 1, Dst: next, Weight: 1, Kind: engine.OpUpsert}
			want = append(want, next)
			next++
		}
		seq, err := s.Apply(batchOf(ops))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
		ends[seq] = len(want)
	}
	ctx := context.Background()
	var got []uint64
	for round := 0; round < 30; round++ {
		for range 1 + r.IntN(4) {
			apply(1 + r.IntN(12)) // some batches larger than MaxBehind
		}
		for len(got) < len(want) {
			b, err := st.PullNow(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Edges) > 7 {
				t.Fatalf("a pull of %d operations, MaxBehind 7", len(b.Edges))
			}
			for _, e := range b.Edges {
				got = append(got, e.Op.Dst)
			}
			// Seq: every operation of its batch is handed out.
			if b.Seq != 0 && ends[b.Seq] > len(got) {
				t.Fatalf("seq %d (its batch ends at %d) after %d operations", b.Seq, ends[b.Seq], len(got))
			}
			if len(got) == len(want) && b.Seq != seqs[len(seqs)-1] {
				t.Fatalf("caught up at seq %d, the head is %d", b.Seq, seqs[len(seqs)-1])
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("handed out %v, applied %v", got, want)
	}
	// Behind what the log holds: Lost, as any stream.
	for range 12 {
		apply(10)
	}
	var lost *LostError
	if _, err := st.Pull(ctx); !errors.As(err, &lost) {
		t.Fatalf("120 operations behind a log of 100: %v", err)
	}
}

func TestStreamWindows(t *testing.T) {
	s := smallStore(t, false)
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	m, err := NewManager(s, Config{Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	byCount, _ := m.Stream(StreamOptions{Window: Window{Edges: 5}})
	byTime, _ := m.Stream(StreamOptions{Window: Window{Duration: 10 * time.Second}})
	small, _ := m.Stream(StreamOptions{Window: Window{Duration: time.Hour}, MaxWindowEdges: 4})
	var inCount, inTime, inSmall []uint64 // the window contents each consumer rebuilds
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 3))
	dst := uint64(0)
	var all []Edge
	for step := 0; step < 40; step++ {
		n := 1 + r.IntN(4)
		ops := make([]engine.Op, n)
		for i := range ops {
			ops[i] = engine.Op{Src: 9, Dst: dst, Weight: 1, Kind: engine.OpUpsert}
			dst++
		}
		if _, err := s.Apply(batchOf(ops)); err != nil {
			t.Fatal(err)
		}
		for _, x := range []struct {
			st  *Stream
			win *[]uint64
		}{{byCount, &inCount}, {byTime, &inTime}, {small, &inSmall}} {
			b, err := x.st.Pull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if x.st == byCount {
				all = append(all, b.Edges...)
			}
			for _, e := range b.Edges {
				*x.win = append(*x.win, e.Op.Dst)
			}
			for _, e := range b.Expired {
				if len(*x.win) == 0 || (*x.win)[0] != e.Op.Dst {
					t.Fatalf("expired %d, window front is %v", e.Op.Dst, *x.win)
				}
				*x.win = (*x.win)[1:]
			}
		}
		if len(inCount) != min(5, len(all)) || inCount[len(inCount)-1] != dst-1 {
			t.Fatalf("count window holds %v after %d edges", inCount, dst)
		}
		if len(inSmall) > 4 {
			t.Fatalf("bounded window holds %d edges", len(inSmall))
		}
		// Time window: exactly the edges applied in the last 10 s.
		var want []uint64
		for _, e := range all {
			if e.Time > now.UnixNano()-int64(10*time.Second) {
				want = append(want, e.Op.Dst)
			}
		}
		if !slices.Equal(inTime, want) {
			t.Fatalf("time window at %v holds %v, want %v", now, inTime, want)
		}
		clock.Lock()
		now = now.Add(time.Duration(r.IntN(4000)) * time.Millisecond)
		clock.Unlock()
	}
	if small.win.Early() == 0 {
		t.Fatal("the bounded window never dropped edges early")
	}
}

// TestStatefulChangedSets checks every Pull of a stateful stream: its view
// equals the oracle at its seq, its edges are exactly the ops in between,
// and every vertex whose edges differ is in Changed (unless All).
func TestStatefulChangedSets(t *testing.T) {
	for _, inEdges := range []bool{true, false} {
		for _, stale := range []bool{false, true} {
			t.Run(fmt.Sprintf("in=%v,stale=%v", inEdges, stale), func(t *testing.T) {
				s := smallStore(t, inEdges)
				m, _ := NewManager(s, Config{})
				defer m.Close()
				h := newHistory()
				sf, err := m.Stateful(StatefulOptions{StreamOptions: StreamOptions{BatchSize: 20}, Stale: stale, StalePoll: time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer sf.Close()
				done := make(chan struct{})
				go func() {
					defer close(done)
					writer(t, s, h, 11, 250, 60, true)
					s.Flush() // let a stale stream see the end
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				pulls, alls := 0, 0
				for {
					u, err := sf.Pull(ctx)
					if err != nil {
						t.Fatal(err)
					}
					pulls++
					if stale {
						if sm, _ := s.Metrics(); u.View.Seq() > sm.DurableSeq {
							t.Fatalf("stale view at seq %d beyond durable %d", u.View.Seq(), sm.DurableSeq)
						}
					}
					oldS, newS := h.at(u.Old.Seq()), h.at(u.View.Seq())
					checkView(t, u.View, newS)
					// Edges are exactly the ops of the batches in between.
					var want []engine.Op
					h.mu.Lock()
					for q := u.Old.Seq() + 1; q <= u.View.Seq(); q++ {
						want = append(want, h.ops[q]...)
					}
					h.mu.Unlock()
					if len(want) != len(u.Edges) {
						t.Fatalf("pull %d: %d edges, want %d", pulls, len(u.Edges), len(want))
					}
					for i := range want {
						if u.Edges[i].Op != want[i] {
							t.Fatalf("pull %d edge %d: %+v want %+v", pulls, i, u.Edges[i].Op, want[i])
						}
					}
					if u.All {
						alls++
						if inEdges {
							t.Fatal("All set although in-edges are kept and nothing was lost")
						}
					} else {
						for _, dir := range []engine.Direction{engine.Out, engine.In} {
							a, b := adjOf(oldS, dir), adjOf(newS, dir)
							for v := range a {
								if !slices.Equal(a[v], b[v]) && !slices.Contains(u.Changed, v) {
									t.Fatalf("vertex %d changed (%v -> %v) but is not in %v", v, a[v], b[v], u.Changed)
								}
							}
							for v := range b {
								if !slices.Equal(a[v], b[v]) && !slices.Contains(u.Changed, v) {
									t.Fatalf("vertex %d changed (%v -> %v) but is not in %v", v, a[v], b[v], u.Changed)
								}
							}
						}
					}
					if u.View.Seq() == 250 { // the writer's last batch
						break
					}
				}
				<-done
				if pulls < 5 {
					t.Fatalf("only %d pulls", pulls)
				}
				if !inEdges && alls == 0 {
					t.Fatal("vertex deletes without in-edges never reported All")
				}
			})
		}
	}
}

func TestIDSpace(t *testing.T) {
	if keydict.KeyBase != engine.HighIDBase {
		t.Fatal("the key dictionary's ids must start at the store's high band")
	}
	r := rand.New(rand.NewPCG(3, 3))
	var ids []uint64
	for i := uint64(0); i < 100; i++ {
		if i%10 != 7 {
			ids = append(ids, i) // 90 of [0, 100)
		}
	}
	for i := uint64(0); i < 50; i++ {
		ids = append(ids, engine.HighIDBase+i)
	}
	sparse := []uint64{engine.HighIDBase - 1, engine.HighIDBase - 2, 2000000000, 1 << 40, engine.HighIDBase + 1<<40, ^uint64(0)}
	for i := 0; i < 300; i++ {
		sparse = append(sparse, 1000+r.Uint64N(engine.HighIDBase-1000))
	}
	ids = append(ids, sparse...)
	s, err := NewIDSpace(append(ids, ids[:40]...)) // duplicates are one
	if err != nil {
		t.Fatal(err)
	}
	// The regions: the ids at least half present (90 of [0, 100), 50 of
	// the first 50 keys), and half as much again as headroom for the ids
	// that come next.
	if d, k, h := s.Regions(); d != 150 || k != 75 || h != len(sparse) || s.Len() != 150+75+len(sparse) {
		t.Fatalf("regions %d %d %d, len %d; want 150 75 %d", d, k, h, s.Len(), len(sparse))
	}
	for _, v := range ids {
		i, ok := s.Index(v)
		if !ok || s.ID(i) != v {
			t.Fatalf("id %d -> %d %v -> %d", v, i, ok, s.ID(i))
		}
	}
	for i := 0; i < s.Len(); i++ {
		if j, ok := s.Index(s.ID(i)); !ok || j != i {
			t.Fatalf("index %d -> id %d -> %d %v", i, s.ID(i), j, ok)
		}
	}
	for _, v := range []uint64{150, 999, engine.HighIDBase + 75, engine.HighIDBase - 3, 1<<40 + 1} {
		if _, ok := s.Index(v); ok {
			t.Fatalf("%d should be outside the space", v)
		}
	}
	// The identity regions stay within twice the ids present.
	for _, c := range []struct {
		step     uint64
		wantDens uint64
	}{{1, 1500}, {2, 2000}, {3, 4}, {1000, 1}} {
		var xs []uint64
		for i := uint64(0); i < 1000; i++ {
			xs = append(xs, i*c.step)
		}
		s, err := NewIDSpace(xs)
		if err != nil {
			t.Fatal(err)
		}
		if d, _, h := s.Regions(); d != c.wantDens || int(d)+h != s.Len() || s.Len() > 2*len(xs) {
			t.Fatalf("step %d: dense region %d (want %d), %d hashed, len %d", c.step, d, c.wantDens, h, s.Len())
		}
	}
	if d := DenseIDs(10); !d.Extends(DenseIDs(7)) || DenseIDs(7).Extends(d) || !d.Extends(IDSpace{}) || d.Extends(s) {
		t.Fatal("Extends of identity spaces")
	}
}

// TestVertexIndex follows the manager's shared index through views while
// numbers (dense, then sparse), keys and ids near 2^62 arrive: each view's
// space holds every vertex of its graph, spaces of one generation extend
// each other, a generation rebuilt to take in the newly dense ids keeps
// every id, and a log that wrapped makes the index scan again.
func TestVertexIndex(t *testing.T) {
	s := smallStore(t, false)
	m, err := NewManager(s, Config{LogCapacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	all := map[uint64]bool{}
	apply := func(pairs ...uint64) {
		t.Helper()
		var b engine.Batch
		for i := 0; i+1 < len(pairs); i += 2 {
			b.Insert(pairs[i], pairs[i+1])
			all[pairs[i]], all[pairs[i+1]] = true, true
		}
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	space := func() IDSpace {
		t.Helper()
		v, err := m.Static(StaticOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		ids, err := v.IDs()
		if err != nil {
			t.Fatal(err)
		}
		for x := range all {
			if i, ok := ids.Index(x); !ok || ids.ID(i) != x {
				t.Fatalf("seq %d: vertex %d has index %d %v", v.Seq(), x, i, ok)
			}
		}
		return ids
	}
	apply(7, 2000000000, engine.HighIDBase-1, engine.HighIDBase+3)
	s0 := space()
	if m.IndexStats().Scans != 1 {
		t.Fatalf("the first space should come from a scan: %+v", m.IndexStats())
	}
	// Sparse ids: appended through the hash table, same generation.
	prev := s0
	for i := uint64(0); i < 20; i++ {
		var pairs []uint64
		for j := uint64(0); j < 100; j++ {
			pairs = append(pairs, 1<<50+i*1000+j, engine.HighIDBase-100-i*100-j)
		}
		apply(pairs...)
		cur := space()
		if !cur.Extends(prev) {
			t.Fatalf("round %d: a space of the same generation does not extend the one before", i)
		}
		prev = cur
	}
	st := m.IndexStats()
	if st.Scans != 1 || st.Hashed < 4000 {
		t.Fatalf("after sparse ids: %+v", st)
	}
	// Dense numbers and keys: a new generation takes them into the
	// identity regions; the old spaces stay valid.
	for i := uint64(0); i < 6000; i += 3 {
		apply(i, i+1, i+2, engine.HighIDBase+i/3)
	}
	dense := space()
	if d, k, _ := dense.Regions(); d < 5000 || k < 1500 || dense.Extends(prev) {
		t.Fatalf("dense ids: regions %d, %d; stats %+v", d, k, m.IndexStats())
	}
	for _, old := range []IDSpace{s0, prev} {
		for i := 0; i < old.Len(); i++ {
			if j, ok := dense.Index(old.ID(i)); !ok || dense.ID(j) != old.ID(i) {
				t.Fatalf("id %d of an old generation is missing", old.ID(i))
			}
		}
	}
	if st := m.IndexStats(); st.Generations < 2 || st.Scans != 1 {
		t.Fatalf("stats %+v", st)
	}
	// More operations than the log holds: the next space scans.
	var pairs []uint64
	for i := uint64(0); i < 5000; i++ {
		pairs = append(pairs, 1<<55+i, 1<<56+i)
	}
	apply(pairs...)
	space()
	if st := m.IndexStats(); st.Scans != 2 {
		t.Fatalf("after the log wrapped: %+v", st)
	}
}

// TestVertexIndexOlderView: a stale view older than the one the index was
// built from still finds every vertex of its graph (those whose edges were
// deleted since included), and once the log's operations from it on are
// read, older views need no scan of their own.
func TestVertexIndexOlderView(t *testing.T) {
	s, m := smallLogManager(t, false, 0)
	var b engine.Batch
	b.Insert(5, 1<<60)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.DeleteEdge(5, 1<<60)
	b.Insert(6, 7)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	ids := func(k Kind) IDSpace {
		v, err := m.Static(StaticOptions{Kind: k})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		sp, err := v.IDs()
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	if sp := ids(Fresh); sp.Len() != 2 {
		t.Fatalf("fresh view: %d indexes, want 2 (vertices 6 and 7)", sp.Len())
	}
	sp := ids(Stale)
	for _, x := range []uint64{5, 1 << 60} {
		if _, ok := sp.Index(x); !ok {
			t.Fatalf("stale view: vertex %d has no index", x)
		}
	}
	if st := m.IndexStats(); st.Scans != 2 {
		t.Fatalf("stats %+v", st)
	}
	ids(Stale)
	if st := m.IndexStats(); st.Scans != 2 {
		t.Fatalf("a second stale view scanned again: %+v", st)
	}
}

// TestVertexIndexConcurrent: readers look ids up in spaces they hold while
// other goroutines make new views (appending to the index, growing its
// hash table, rebuilding generations) and a writer applies; run under the
// race detector.
func TestVertexIndexConcurrent(t *testing.T) {
	s, m := smallLogManager(t, false, 0)
	var mu sync.Mutex
	applied := []uint64{} // ids applied so far, in order
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(9, 9))
		for i := 0; i < 300; i++ {
			var b engine.Batch
			var ids []uint64
			for j := 0; j < 20; j++ {
				a := spread(uint64(i*20 + j))
				c := r.Uint64N(engine.HighIDBase)
				if j%2 == 0 {
					c = uint64(i*20 + j) // dense numbers too
				}
				b.Insert(a, c)
				ids = append(ids, a, c)
			}
			mu.Lock()
			if _, err := s.Apply(&b); err != nil {
				t.Error(err)
			}
			applied = append(applied, ids...)
			mu.Unlock()
		}
		close(stop)
	}()
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				want := slices.Clone(applied)
				mu.Unlock()
				v, err := m.Static(StaticOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				ids, err := v.IDs()
				v.Release()
				if err != nil {
					t.Error(err)
					return
				}
				for _, x := range want {
					if i, ok := ids.Index(x); !ok || ids.ID(i) != x {
						t.Errorf("vertex %d: index %d %v", x, i, ok)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if st := m.IndexStats(); st.Generations < 2 {
		t.Logf("index: %+v", st)
	}
}

// TestStatefulLostWhenTooFarBehind: more ops than MaxBehind between two
// pulls are not delivered; the update says Lost (and All) and the stream
// goes on from the new view.
func TestStatefulLostWhenTooFarBehind(t *testing.T) {
	s := smallStore(t, true)
	m, _ := NewManager(s, Config{})
	defer m.Close()
	sf, err := m.Stateful(StatefulOptions{StreamOptions: StreamOptions{MaxBehind: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	apply := func(n int) {
		ops := make([]engine.Op, n)
		for i := range ops {
			ops[i] = engine.Op{Src: uint64(i), Dst: uint64(i + 1), Weight: 1, Kind: engine.OpUpsert}
		}
		if _, err := s.Apply(batchOf(ops)); err != nil {
			t.Fatal(err)
		}
	}
	apply(50)
	ctx := context.Background()
	u, err := sf.Pull(ctx)
	if err != nil || !u.Lost || !u.All || len(u.Edges) != 0 {
		t.Fatalf("50 ops behind a bound of 10: %v %+v", err, u)
	}
	if d, _ := u.View.Degree(0, engine.Out); d != 1 {
		t.Fatalf("the view must still advance: degree %d", d)
	}
	apply(5)
	u, err = sf.Pull(ctx)
	if err != nil || u.Lost || len(u.Edges) != 5 {
		t.Fatalf("within the bound again: %v lost=%v edges=%d", err, u.Lost, len(u.Edges))
	}
	if got := m.Stats().LostEvents; got != 1 {
		t.Fatalf("lost events %d", got)
	}
}

// TestStatefulLostWhenTheLogWraps: ops overwritten in the ring before the
// consumer read them are reported as Lost; later pulls are whole again.
func TestStatefulLostWhenTheLogWraps(t *testing.T) {
	s := smallStore(t, true)
	m, _ := NewManager(s, Config{LogCapacity: 20})
	defer m.Close()
	sf, err := m.Stateful(StatefulOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	apply := func(n int, base uint64) { fanIn(t, s, n, base) }
	for i := 0; i < 5; i++ {
		apply(10, uint64(100*i)) // 50 ops through a ring of 20
	}
	ctx := context.Background()
	u, err := sf.Pull(ctx)
	if err != nil || !u.Lost || !u.All {
		t.Fatalf("after the ring wrapped: %v %+v", err, u)
	}
	if d, _ := u.View.Degree(1, engine.In); d != 50 {
		t.Fatalf("the view must hold every edge: in-degree %d", d)
	}
	apply(3, 1000)
	if u, err = sf.Pull(ctx); err != nil || u.Lost || len(u.Edges) != 3 {
		t.Fatalf("after resync: %v lost=%v edges=%d", err, u.Lost, len(u.Edges))
	}
	// A batch larger than the ring, and a stream opened right after it.
	apply(30, 2000)
	late, err := m.Stateful(StatefulOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	apply(2, 3000)
	if u, err = late.Pull(ctx); err != nil || u.Lost || len(u.Edges) != 2 {
		t.Fatalf("a stream opened after the big batch: %v lost=%v edges=%d", err, u.Lost, len(u.Edges))
	}
	if u, err = sf.Pull(ctx); err != nil || !u.Lost {
		t.Fatalf("the first stream missed the big batch's start: %v %+v", err, u)
	}
}

// TestEventTimeWindows: a Duration window runs on the operations' event
// times, out of order within a lateness: what a consumer rebuilds from
// Edges and Expired is, after every pull, exactly the operations an
// oracle of the definition holds (time above the newest time seen less
// lateness less duration), and Late exactly the ones that arrived at or
// below it. Operations without an event time count at their apply time.
func TestEventTimeWindows(t *testing.T) {
	s, m := smallLogManager(t, false, 0)
	const dur, lateness = 10 * time.Second, 3 * time.Second
	const du, lat = int64(dur / time.Microsecond), int64(lateness / time.Microsecond)
	st, err := m.Stream(StreamOptions{Window: Window{Duration: dur, Lateness: lateness}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	held := map[uint64]int64{} // what the consumer rebuilds: dst -> time
	want := map[uint64]int64{} // the oracle's window
	var maxT int64
	base := int64(1_700_000_000_000_000) // µs
	clock := base
	late, dst := 0, uint64(0)
	for step := 0; step < 300; step++ {
		var b engine.Batch
		var times []int64
		for range 1 + r.IntN(5) {
			clock += int64(r.IntN(800_000))       // up to 0.8 s on
			t := clock - int64(r.IntN(6_000_000)) // up to 6 s out of order
			if r.IntN(20) == 0 {
				t = clock - 13_000_000 - int64(r.IntN(5_000_000)) // beyond the lateness and the duration
			}
			b.InsertWeighted(1, dst, 1)
			b.SetEventTime(t)
			times = append(times, t)
			dst++
		}
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		first := dst - uint64(len(times))
		for i, tm := range times {
			if maxT != 0 && tm <= maxT-lat-du {
				late++
				continue
			}
			maxT = max(maxT, tm)
			want[first+uint64(i)] = tm
		}
		for d, tm := range want {
			if tm <= maxT-lat-du {
				delete(want, d)
			}
		}
		pb, err := st.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range pb.Edges {
			held[e.Op.Dst] = EventMicros(e)
		}
		for _, e := range pb.Late {
			if e.Op.EventTime > maxT-lat-du {
				t.Fatalf("step %d: %d at %d handed out late, the watermark less the duration is %d", step, e.Op.Dst, e.Op.EventTime, maxT-lat-du)
			}
		}
		for _, e := range pb.Expired {
			if _, ok := held[e.Op.Dst]; !ok {
				t.Fatalf("step %d: %d expired, not held", step, e.Op.Dst)
			}
			delete(held, e.Op.Dst)
		}
		if len(held) != len(want) {
			t.Fatalf("step %d: the window holds %d, the oracle %d", step, len(held), len(want))
		}
		for d, tm := range want {
			if held[d] != tm {
				t.Fatalf("step %d: %d at %d in the oracle, %d (held %v) in the window", step, d, tm, held[d], held[d] != 0)
			}
		}
	}
	if late == 0 || uint64(late) != st.win.Late() {
		t.Fatalf("%d late in the oracle, %d counted by the window", late, st.win.Late())
	}
	// Without an event time an operation counts at its apply time.
	var b engine.Batch
	b.InsertWeighted(1, dst, 1)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	pb, err := st.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pb.Edges) != 1 || EventMicros(pb.Edges[0]) != pb.Edges[0].Time/1000 || len(pb.Expired) != len(held) {
		t.Fatalf("an operation at its apply time (now, after 2023) expires every earlier one: %d in, %d of %d expired", len(pb.Edges), len(pb.Expired), len(held))
	}
}

// TestItemWindowOldest: Oldest lists the items that leave soonest, oldest
// first, of those that came in order (a window of operations: all of
// them), and what it lists does leave first.
func TestItemWindowOldest(t *testing.T) {
	for _, cfg := range []Window{{Edges: 5}, {Duration: 10 * time.Microsecond}} {
		w := NewItemWindow[int](cfg, 0)
		var left []int
		for i, tm := range []int64{1, 2, 3, 2, 4, 5} { // 2 comes out of order at index 3
			w.Add(tm, i, func(v int) { left = append(left, v) })
		}
		got := slices.Clone(w.Oldest(3))
		want := []int{0, 1, 2} // the out-of-order 3 is not among them
		if cfg.Edges > 0 {
			want = []int{1, 2, 3} // 0 left: 5 are held
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%+v: Oldest(3) = %v, want %v", cfg, got, want)
		}
		if n := len(w.Oldest(100)); n != 5 {
			t.Fatalf("%+v: Oldest(100) lists %d", cfg, n)
		}
		// What leaves next is what Oldest listed first.
		left = nil
		for i := int64(0); len(left) == 0; i++ {
			w.Add(100+i, 100+int(i), func(v int) { left = append(left, v) })
		}
		if left[0] != want[0] {
			t.Fatalf("%+v: %v left first, Oldest listed %v", cfg, left, want)
		}
	}
}
