package analytics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/views"
)

// waitAllAt waits until every named analytic of r reports seq.
func waitAllAt(t *testing.T, r *Registry, names []string, seq uint64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, name := range names {
		for {
			res, err := r.Result(name)
			if err != nil {
				t.Fatal(err)
			}
			if res.Error != "" {
				t.Fatalf("%s: %s", name, res.Error)
			}
			if res.Ready && res.Seq == seq {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s stuck at seq %d, want %d", name, res.Seq, seq)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

func lastSeq(t *testing.T, s *engine.Store) uint64 {
	t.Helper()
	sm, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	return sm.LastSeq
}

// bfs, wcc, sssp and pagerank checkpointed, then the store going on past
// the checkpoint (a crash after it), restored on a new manager over the
// same store: with the operations after the checkpoint applied again (the
// replay) and new ones after them, every result matches the reference
// algorithms, and none of them recomputed. A damaged checkpoint restores
// nothing; a spec with other settings is not restored.
func TestCheckpointRestoreResumesExactly(t *testing.T) {
	g := newBigGraph(t, 11, 8, 5, false)
	root := g.keys[0][0]
	specs := []Spec{{Type: "bfs", Root: fmt.Sprint(root)}, {Type: "wcc"}, {Type: "sssp", Root: fmt.Sprint(root)},
		{Type: "pagerank", Tolerance: 1e-11, MaxIterations: 1000, BatchSize: 50}}
	names := []string{"bfs", "wcc", "sssp", "pagerank"}
	r1 := NewRegistry(g.m, RegistryConfig{})
	for _, s := range specs {
		if _, err := r1.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		g.batch(300, 0.05, 0.002)
	}
	// pagerank pulls only once 50 operations are new: the checkpoint's
	// catch-up request brings it to the head all the same.
	g.batch(10, 0, 0)
	path := filepath.Join(t.TempDir(), "analytics.ckpt")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta, err := r1.Checkpoint(ctx, path, []byte("position-X"))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Analytics) != 4 || meta.Seq != lastSeq(t, g.s) {
		t.Fatalf("checkpoint meta %+v, store at %d", meta, lastSeq(t, g.s))
	}
	var after []*engine.Batch
	for range 3 {
		after = append(after, g.batch(300, 0.05, 0.002))
	}
	r1.Close()
	g.m.Close()

	// A damaged checkpoint restores nothing.
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.ckpt")
	dmg := append([]byte(nil), orig...)
	dmg[len(dmg)/2] ^= 0x10
	if err := os.WriteFile(bad, dmg, 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := g.restart()
	var ce *checkpoint.CorruptError
	if got, err := r2.Restore(context.Background(), bad, specs, func(CheckpointMeta) error { return nil }); !errors.As(err, &ce) || len(got) != 0 || len(r2.Results()) != 0 {
		t.Fatalf("a damaged checkpoint: restored %v, %v", got, err)
	}
	if got, err := r2.Restore(context.Background(), filepath.Join(t.TempDir(), "none"), specs, nil); !errors.Is(err, ErrNoCheckpoint) || got != nil {
		t.Fatalf("no checkpoint: %v %v", got, err)
	}
	refused := errors.New("refused")
	if _, err := r2.Restore(context.Background(), path, specs, func(CheckpointMeta) error { return refused }); !errors.Is(err, refused) || len(r2.Results()) != 0 {
		t.Fatalf("a refused checkpoint: %v", err)
	}
	r2.Close()
	g.m.Close()

	r3 := g.restart()
	defer r3.Close()
	changed := append([]Spec(nil), specs...)
	changed[3].Damping = 0.8 // another pagerank: not restored
	got, err := r3.Restore(context.Background(), path, changed, func(m CheckpointMeta) error {
		if string(m.Position) != "position-X" || m.Seq != meta.Seq {
			return fmt.Errorf("meta %+v", m)
		}
		return nil
	})
	if err != nil || fmt.Sprint(got) != "[bfs sssp wcc]" { // in name order
		t.Fatalf("restored %v, %v", got, err)
	}
	if _, err := r3.Register(specs[3]); err != nil {
		t.Fatal(err)
	}
	for _, b := range after { // the replay
		if _, err := g.s.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		g.batch(300, 0.05, 0.002)
	}
	waitAllAt(t, r3, names, lastSeq(t, g.s))
	checkGraphResults(t, "after the restore", g.cur, root, true, func(typ string, x uint64) any {
		v, _, err := r3.Vertex(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		return v
	})
	for _, name := range names[:3] {
		if res, _ := r3.Result(name); res.Recomputes != 0 || !res.Restored {
			t.Fatalf("%s after the restore: %+v", name, res)
		}
	}
}

// blockingSink holds every Publish until release is closed.
type blockingSink struct {
	entered chan struct{} // closed by the first Publish
	release chan struct{}
	once    bool
}

func (s *blockingSink) Publish([]Alert) {
	if !s.once {
		s.once = true
		close(s.entered)
	}
	<-s.release
}

// TestCheckpointLeavesOutWhatDoesNotCatchUp: a fraud monitor stuck
// handing an alert to a sink cannot reach the checkpoint's seq (its seq
// moves only once its alerts are handed over). The checkpoint waits two
// thirds of its time for the catch-up, then saves the analytics that are
// at the seq (bfs) and leaves the monitor out, without failing; once the
// sink lets go, the monitor goes on.
func TestCheckpointLeavesOutWhatDoesNotCatchUp(t *testing.T) {
	h := newHarness(t, 12, false, denseIDs)
	h.batch(30, true, false)
	sink := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	r := NewRegistry(h.m, RegistryConfig{Sinks: []AlertSink{sink}})
	defer r.Close()
	released := false
	defer func() {
		if !released {
			close(sink.release)
		}
	}()
	for _, s := range []Spec{{Type: "bfs", Root: "1"}, {Type: "fraud", Threshold: 1e9, MaxCycle: 3}} {
		if _, err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := uint64(1<<20), uint64(1<<20+1), uint64(1<<20+2)
	var bt engine.Batch
	bt.Insert(a, b)
	bt.Insert(b, c)
	bt.Insert(c, a) // a cycle: the monitor's alert blocks in the sink
	if _, err := h.s.Apply(&bt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the monitor never published its alert")
	}
	seq := lastSeq(t, h.s)
	waitAllAt(t, r, []string{"bfs"}, seq)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	t0 := time.Now()
	meta, err := r.Checkpoint(ctx, filepath.Join(t.TempDir(), "analytics.ckpt"), []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Analytics) != 1 || meta.Analytics[0].Name != "bfs" || meta.Seq != seq {
		t.Fatalf("checkpoint of %+v at seq %d, want bfs alone at %d", meta.Analytics, meta.Seq, seq)
	}
	if took := time.Since(t0); took < 1500*time.Millisecond {
		t.Fatalf("the checkpoint took %v: it did not wait for the monitor's catch-up", took)
	}
	if res, _ := r.Result("fraud"); res.Seq == seq {
		t.Fatalf("the monitor is at seq %d with its alert not handed over", res.Seq)
	}
	close(sink.release)
	released = true
	waitAllAt(t, r, []string{"fraud"}, seq)
}

// roundTripFraud saves a's state to a checkpoint file and loads it into a
// new fraud monitor of the same spec.
func roundTripFraud(t *testing.T, a *fraud) *fraud {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.ckpt")
	w, err := checkpoint.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	if err := w.Section("fraud", func(e *checkpoint.Encoder) {
		var serr error
		seq, serr = a.saveState(e, views.IDSpace{})
		e.Fail(serr)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	rd, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	b := newFraud(a.spec, nil)
	if err := rd.Section("fraud", func(d *checkpoint.Decoder) error { return b.loadState(d, views.IDSpace{}, seq) }); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFraudWindowCheckpoint: saving a fraud monitor's fan-in window
// changes nothing in the running one (a window of operations, out of time
// order), and the restored window goes on exactly as the running one:
// the same operations leave in the same order (equal event times
// included) and the late count is kept.
func TestFraudWindowCheckpoint(t *testing.T) {
	op := func(dst uint64, us int64) views.Edge {
		return views.Edge{Op: engine.Op{Src: 1, Dst: dst, Weight: 1, Kind: engine.OpUpsert, EventTime: us}}
	}
	for _, spec := range []Spec{
		{Type: "fraud", Threshold: 1e9, WindowEdges: 3},
		{Type: "fraud", Threshold: 1e9, WindowEdges: 4, WindowDuration: time.Second},
	} {
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		a := newFraud(spec, nil)
		for _, e := range []views.Edge{op(1, 3_000_000), op(2, 2_000_000), op(3, 1_000_000), op(4, 5_000_000), op(5, 9_000_000), op(6, 9_000_000),
			op(7, 100)} { // the last is late for a duration window
			a.win.add(e, nil)
		}
		before := dumpWindow(a.win)
		b := roundTripFraud(t, a)
		if after := dumpWindow(a.win); after != before {
			t.Fatalf("%+v: saving changed the running window: %s, was %s", spec, after, before)
		}
		if got := dumpWindow(b.win); got != before {
			t.Fatalf("%+v: restored %s, the running one holds %s", spec, got, before)
		}
		for i := uint64(0); i < 3; i++ {
			a.win.add(op(10+i, 9_500_000), nil)
			b.win.add(op(10+i, 9_500_000), nil)
			if x, y := dumpWindow(a.win), dumpWindow(b.win); x != y {
				t.Fatalf("%+v: after %d more, the restored window holds %s, the running one %s", spec, i+1, y, x)
			}
		}
	}
}

// collectSink keeps every alert published but cycles (a fraud monitor's
// rings across restarts have tests of their own), as (analytic, kind,
// vertex, ref, value, the references and payloads of its evidence and its
// totals).
type collectSink struct {
	mu  sync.Mutex
	got []string
}

func (s *collectSink) Publish(al []Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range al {
		var ev []string
		for _, e := range a.Evidence {
			ev = append(ev, fmt.Sprintf("%d:%s:%s", e.OpRef, e.EventRef, e.Props))
		}
		var tot AlertTotals
		if a.Totals != nil {
			tot = *a.Totals
		}
		s.got = append(s.got, fmt.Sprintf("%s/%s/%d/%d%v/%v/%v+%d/%+v", a.Analytic, a.Kind, a.Vertex, a.Ref, a.Cycle, a.Value, ev, a.EvidenceDropped, tot))
	}
}

func (s *collectSink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// monitorRig validates specs in place (Validate names a spec given none)
// and returns their names, sorted; open, which opens a store of small
// MemGraphs in a fresh directory with its view manager; and start, which
// registers every spec on a manager with the alert sink.
func monitorRig(t *testing.T, specs []Spec) (names []string, open func() (*engine.Store, *views.Manager), start func(*views.Manager, AlertSink) *Registry) {
	t.Helper()
	for i := range specs {
		if err := specs[i].Validate(); err != nil {
			t.Fatal(err)
		}
		names = append(names, specs[i].Name)
	}
	slices.Sort(names)
	open = func() (*engine.Store, *views.Manager) {
		s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		m, err := views.NewManager(s, views.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return s, m
	}
	start = func(m *views.Manager, sink AlertSink) *Registry {
		reg := NewRegistry(m, RegistryConfig{Sinks: []AlertSink{sink}})
		for _, s := range specs {
			if _, err := reg.Register(s); err != nil {
				t.Fatal(err)
			}
		}
		return reg
	}
	return names, open, start
}

// TestMonitorCheckpointsReplayExactly: the degree, fanin and fanout
// monitors (one of them with types: not checkpointed), checkpointed, the
// store going on past the checkpoint, restored over the same store and
// brought forward by the replay of what followed it: the alerts raised
// up to the checkpoint plus those after the restore are exactly those of
// a run without the restart (each by the same operation), and the
// restored monitors did not start over. With only fanin and fanout, the
// checkpoint holds no topology.
func TestMonitorCheckpointsReplayExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	// Batches of tagged operations with event times: upserts into a few
	// hot vertices, deletes and vertex deletes.
	var batches [][]engine.Op
	var refs [][]uint64
	ref := uint64(0)
	clock := int64(1_700_000_000_000_000)
	for range 60 {
		var ops []engine.Op
		var rs []uint64
		for range 1 + r.IntN(40) {
			ref++
			clock += int64(r.IntN(300_000))
			src, dst := r.Uint64N(60), r.Uint64N(60)
			if r.IntN(3) == 0 {
				dst = r.Uint64N(3)
			}
			op := engine.Op{Src: src, Dst: dst, Weight: float64(r.IntN(300)) / 100, Kind: engine.OpUpsert, EventTime: clock - int64(r.IntN(1_000_000))}
			switch x := r.IntN(100); {
			case x < 15:
				op.Kind = engine.OpDeleteEdge
			case x < 17:
				op.Kind = engine.OpDeleteVertex
			}
			ops, rs = append(ops, op), append(rs, ref)
		}
		batches, refs = append(batches, ops), append(refs, rs)
	}
	batchOf := func(k int) *engine.Batch {
		var b engine.Batch
		for i, op := range batches[k] {
			b.Tag(refs[k][i])
			testref.AddOp(&b, op)
			if op.Kind == engine.OpUpsert {
				b.SetPayload(fmt.Sprintf("e-%d", refs[k][i]), fmt.Appendf(nil, `{"k":%d}`, k))
			}
			b.SetEventTime(op.EventTime)
		}
		return &b
	}
	for _, withTopology := range []bool{true, false} {
		t.Run(fmt.Sprintf("topology=%v", withTopology), func(t *testing.T) {
			specs := []Spec{
				{Type: "fanin", Threshold: 6, WindowEdges: 50},
				{Type: "fanout", Threshold: 2, WindowDuration: 2 * time.Second, Lateness: 500 * time.Millisecond},
				{Name: "in-senders", Type: "fanin", Measure: "senders", Threshold: 4, WindowDuration: 3 * time.Second, Lateness: 500 * time.Millisecond, Evidence: 3},
				{Name: "out-amount", Type: "fanout", Measure: "amount", Threshold: 6.5, WindowEdges: 40},
			}
			if withTopology {
				specs = append(specs, Spec{Type: "degree", Direction: "both", Threshold: 9},
					Spec{Name: "deg-in", Type: "degree", Direction: "in", Threshold: 5},
					Spec{Name: "rings", Type: "fraud", Threshold: 1e9, MaxSpan: 20 * time.Second},
					Spec{Name: "mules", Type: "fraud", Measure: "amount", Threshold: 7.5, WindowDuration: 3 * time.Second, Lateness: 500 * time.Millisecond,
						MuleSenders: 3, MuleReceivers: 2, MaxCycle: 2, Evidence: 4})
			}
			names, open, start := monitorRig(t, specs)
			apply := func(s *engine.Store, from, to int) {
				for k := from; k < to; k++ {
					if _, err := s.Apply(batchOf(k)); err != nil {
						t.Fatal(err)
					}
				}
			}
			const cut, crash = 25, 40 // the checkpoint after batch cut, the crash after crash

			// The run without a restart.
			sa, ma := open()
			want := &collectSink{}
			ra := start(ma, want)
			apply(sa, 0, len(batches))
			waitAllAt(t, ra, names, lastSeq(t, sa))
			ra.Close()
			ma.Close()
			sa.Close()

			// The run with one.
			sb, mb := open()
			defer sb.Close()
			before := &collectSink{}
			rb := start(mb, before)
			apply(sb, 0, cut)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			path := filepath.Join(t.TempDir(), "analytics.ckpt")
			meta, err := rb.Checkpoint(ctx, path, []byte("pos"))
			if err != nil {
				t.Fatal(err)
			}
			if len(meta.Analytics) != len(specs) || meta.Topology != withTopology {
				t.Fatalf("checkpoint meta %+v", meta)
			}
			upTo := len(before.all()) // delivered by the checkpoint
			apply(sb, cut, crash)     // applied, then lost with the process
			rb.Close()
			mb.Close()
			mb, err = views.NewManager(sb, views.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer mb.Close()
			after := &collectSink{}
			rc := NewRegistry(mb, RegistryConfig{Sinks: []AlertSink{after}})
			defer rc.Close()
			typed := Spec{Name: "typed", Type: "fanin", Threshold: 6, WindowEdges: 50, Types: "0"}
			if err := typed.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := rc.Restore(ctx, path, append(slices.Clone(specs), typed), func(CheckpointMeta) error { return nil })
			if err != nil || fmt.Sprint(got) != fmt.Sprint(names) {
				t.Fatalf("restored %v (want %v): %v", got, names, err)
			}
			apply(sb, cut, len(batches)) // the replay, then what follows
			waitAllAt(t, rc, names, lastSeq(t, sb))
			// Each analytic's alerts of each kind in order (analytics raise
			// on goroutines of their own: the interleaving is not theirs).
			byAnalytic := func(al []string) []string {
				kindOf := func(a string) string {
					i := strings.IndexByte(a, '/')
					return a[:i+1+strings.IndexByte(a[i+1:], '/')]
				}
				slices.SortStableFunc(al, func(a, b string) int { return strings.Compare(kindOf(a), kindOf(b)) })
				return al
			}
			all := byAnalytic(append(before.all()[:upTo], after.all()...))
			if fmt.Sprint(all) != fmt.Sprint(byAnalytic(want.all())) {
				t.Fatalf("alerts across the restart:\n%v\nwithout one:\n%v", all, want.all())
			}
			for _, name := range names {
				res, _ := rc.Result(name)
				if !res.Restored || res.Recomputes != 0 {
					t.Fatalf("%s after the restore: %+v", name, res)
				}
			}
			rings := 0
			for _, a := range want.all() {
				if strings.HasPrefix(a, "rings/cycle/") {
					rings++
				}
			}
			if len(want.all()) < 10 || withTopology && rings < 5 {
				t.Fatalf("only %d alerts, %d of rings: the test checks too little", len(want.all()), rings)
			}
			kinds := map[string]int{}
			for _, a := range want.all() {
				kinds[a[:strings.IndexByte(a, '/')]]++
				if strings.HasPrefix(a, "mules/mule/") {
					kinds["mule"]++
				}
			}
			for _, name := range names {
				if kinds[name] == 0 || withTopology && kinds["mule"] == 0 {
					t.Fatalf("alerts by analytic %v: %s (or a mule) raised none, the test checks too little", kinds, name)
				}
			}
			t.Logf("%d alerts, %d before the checkpoint", len(want.all()), upTo)
		})
	}
}

// TestRestoreRefusesAnotherContentVersion: a checkpoint of another
// content version (an older graphtide's, whose sections this one would
// misread) restores nothing and says which versions.
func TestRestoreRefusesAnotherContentVersion(t *testing.T) {
	h := newHarness(t, 9, false, denseIDs)
	path := filepath.Join(t.TempDir(), "analytics.ckpt")
	w, err := checkpoint.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf(`{"version":%d,"seq":0,"analytics":[{"name":"fanin","type":"fanin","threshold":3}]}`, CheckpointVersion-1)
	if err := w.Section("meta", func(en *checkpoint.Encoder) { en.Bytes([]byte(meta)) }); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(h.m, RegistryConfig{})
	defer r.Close()
	spec := Spec{Type: "fanin", Threshold: 3}
	got, err := r.Restore(context.Background(), path, []Spec{spec}, func(CheckpointMeta) error { return nil })
	want := fmt.Sprintf("content version %d, this graphtide reads %d", CheckpointVersion-1, CheckpointVersion)
	if err == nil || !strings.Contains(err.Error(), want) || len(got) != 0 || len(r.Results()) != 0 {
		t.Fatalf("restored %v, %v; want an error saying %q", got, err, want)
	}
}

// TestRestoreHoldsTheTopologyOnlyForItsReaders: a checkpoint with the
// topology (a degree monitor's) restored for a fanin monitor alone brings
// fanin back without holding the topology, which nothing would read.
func TestRestoreHoldsTheTopologyOnlyForItsReaders(t *testing.T) {
	h := newHarness(t, 13, false, denseIDs)
	specs := []Spec{{Type: "degree", Threshold: 2}, {Type: "fanin", Threshold: 2, WindowEdges: 20}}
	r1 := NewRegistry(h.m, RegistryConfig{})
	for _, s := range specs {
		if _, err := r1.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		h.batch(20, false, true)
	}
	path := filepath.Join(t.TempDir(), "analytics.ckpt")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta, err := r1.Checkpoint(ctx, path, []byte("p"))
	if err != nil || !meta.Topology || len(meta.Analytics) != 2 {
		t.Fatalf("checkpoint %+v: %v", meta, err)
	}
	r1.Close()
	h.m.Close()
	m, err := views.NewManager(h.s, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r2 := NewRegistry(m, RegistryConfig{})
	defer r2.Close()
	got, err := r2.Restore(ctx, path, specs[1:], func(CheckpointMeta) error { return nil })
	if err != nil || fmt.Sprint(got) != "[fanin]" {
		t.Fatalf("restored %v: %v", got, err)
	}
	if b := m.Topology().Stats().Bytes; b != 0 {
		t.Fatalf("the topology is held (%d bytes) with no analytic to read it", b)
	}
}

// gatedSink is a collectSink whose Publish of one analytic's alerts waits
// while the gate is shut: that analytic's goroutine, which raises them,
// waits with it (and does not catch up for a checkpoint).
type gatedSink struct {
	collectSink
	analytic string
	gmu      sync.Mutex
	gate     chan struct{} // closed: open; Protected by gmu.
}

func (s *gatedSink) Publish(al []Alert) {
	if len(al) > 0 && al[0].Analytic == s.analytic {
		s.gmu.Lock()
		g := s.gate
		s.gmu.Unlock()
		<-g
	}
	s.collectSink.Publish(al)
}

// shut shuts the gate (open: opens it).
func (s *gatedSink) shut(open bool) {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if open {
		close(s.gate)
	} else {
		s.gate = make(chan struct{})
	}
}

// TestCheckpointKeepsTheStateOfOneThatDidNotCatchUp: a checkpoint that an
// analytic does not catch up for, while the file on disk holds its
// state, keeps that file (a *DeferredError) instead of writing one
// without it; a crash after it, then a restart, restores every analytic
// from that file (none computes from scratch) and, with the replay from
// its position, the alerts delivered by that checkpoint and those raised
// after the restart are the alerts of a run without a restart, none lost
// or repeated.
func TestCheckpointKeepsTheStateOfOneThatDidNotCatchUp(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	var batches [][]engine.Op
	clock := int64(1_700_000_000_000_000)
	for range 60 {
		var ops []engine.Op
		for range 1 + r.IntN(40) {
			clock += int64(r.IntN(300_000))
			src, dst := r.Uint64N(40), r.Uint64N(40)
			if r.IntN(3) == 0 {
				dst = r.Uint64N(3)
			}
			op := engine.Op{Src: src, Dst: dst, Weight: float64(r.IntN(300)) / 100, Kind: engine.OpUpsert, EventTime: clock}
			if r.IntN(10) == 0 {
				op.Kind = engine.OpDeleteEdge
			}
			ops = append(ops, op)
		}
		batches = append(batches, ops)
	}
	specs := []Spec{
		{Type: "fanin", Threshold: 6, WindowEdges: 50},
		{Name: "in-senders", Type: "fanin", Measure: "senders", Threshold: 4, WindowDuration: 3 * time.Second, Evidence: 3},
		{Name: "out-amount", Type: "fanout", Measure: "amount", Threshold: 6.5, WindowEdges: 40},
		{Type: "degree", Direction: "both", Threshold: 9},
	}
	names, open, start := monitorRig(t, specs)
	apply := func(s *engine.Store, from, to int) {
		for k := from; k < to; k++ {
			var b engine.Batch
			for i, op := range batches[k] {
				b.Tag(uint64(1000*k + i + 1))
				testref.AddOp(&b, op)
				b.SetEventTime(op.EventTime)
			}
			if _, err := s.Apply(&b); err != nil {
				t.Fatal(err)
			}
		}
	}
	const cut1, cut2, crash = 20, 35, 45

	// The run without a restart.
	sa, ma := open()
	want := &collectSink{}
	ra := start(ma, want)
	apply(sa, 0, len(batches))
	waitAllAt(t, ra, names, lastSeq(t, sa))
	ra.Close()
	ma.Close()
	sa.Close()

	// The run with one: a checkpoint after cut1 that every analytic makes;
	// one after cut2 that out-amount does not (its alerts wait in the
	// sink), then a crash.
	sb, mb := open()
	defer sb.Close()
	before := &gatedSink{analytic: "out-amount", gate: make(chan struct{})}
	before.shut(true)
	rb := start(mb, before)
	apply(sb, 0, cut1)
	path := filepath.Join(t.TempDir(), "analytics.ckpt")
	meta, err := rb.Checkpoint(context.Background(), path, []byte("pos-1"))
	if err != nil || len(meta.Analytics) != len(specs) {
		t.Fatalf("the first checkpoint: %+v, %v", meta, err)
	}
	upTo := len(before.all()) // delivered by the checkpoint
	before.shut(false)
	apply(sb, cut1, cut2)
	// out-amount waits on its alerts: the others catch up.
	waitAllAt(t, rb, slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "out-amount" }), lastSeq(t, sb))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err = rb.Checkpoint(ctx, path, []byte("pos-2"))
	cancel()
	var de *DeferredError
	if !errors.As(err, &de) || fmt.Sprint(de.Analytics) != "[out-amount]" || de.Deferrals != 1 {
		t.Fatalf("the checkpoint out-amount did not catch up for: %v (a %T), want a DeferredError naming it", err, err)
	}
	before.shut(true)
	apply(sb, cut2, crash) // applied, then lost with the process
	rb.Close()
	mb.Close()

	mb, err = views.NewManager(sb, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	after := &collectSink{}
	rc := NewRegistry(mb, RegistryConfig{Sinks: []AlertSink{after}})
	defer rc.Close()
	var pos string
	got, err := rc.Restore(context.Background(), path, specs, func(m CheckpointMeta) error { pos = string(m.Position); return nil })
	if err != nil || fmt.Sprint(got) != fmt.Sprint(names) || pos != "pos-1" {
		t.Fatalf("restored %v (want %v) from the checkpoint at %q (want the first's): %v", got, names, pos, err)
	}
	apply(sb, cut1, len(batches)) // the replay from the first checkpoint, then what follows
	waitAllAt(t, rc, names, lastSeq(t, sb))
	byAnalytic := func(al []string) []string {
		slices.SortStableFunc(al, func(a, b string) int {
			return strings.Compare(a[:strings.IndexByte(a, '/')], b[:strings.IndexByte(b, '/')])
		})
		return al
	}
	all := byAnalytic(append(before.all()[:upTo], after.all()...))
	if fmt.Sprint(all) != fmt.Sprint(byAnalytic(want.all())) {
		t.Fatalf("alerts across the restart:\n%v\nwithout one:\n%v", all, want.all())
	}
	for _, name := range names {
		if res, _ := rc.Result(name); !res.Restored || res.Recomputes != 0 {
			t.Fatalf("%s after the restore: %+v", name, res)
		}
	}
	n := 0
	for _, a := range want.all() {
		if strings.HasPrefix(a, "out-amount/") {
			n++
		}
	}
	if n < 5 || len(want.all()) < 20 {
		t.Fatalf("%d alerts, %d of out-amount: the test checks too little", len(want.all()), n)
	}
	t.Logf("%d alerts, %d delivered by the first checkpoint", len(want.all()), upTo)
}

// TestCheckpointDefersAtMostThreeInARow: while an analytic cannot catch
// up, MaxCheckpointDeferrals checkpoints in a row keep the file on disk;
// the next is written without it (the replay a restart needs stays
// bounded), and once it catches up again checkpoints hold it again.
func TestCheckpointDefersAtMostThreeInARow(t *testing.T) {
	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := views.NewManager(s, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sink := &gatedSink{analytic: "in", gate: make(chan struct{})}
	sink.shut(true)
	reg := NewRegistry(m, RegistryConfig{Sinks: []AlertSink{sink}})
	defer reg.Close()
	for _, sp := range []Spec{{Name: "in", Type: "fanin", Threshold: 0.5, WindowEdges: 10}, {Name: "out", Type: "fanout", Threshold: 100, WindowEdges: 10}} {
		if _, err := reg.Register(sp); err != nil {
			t.Fatal(err)
		}
	}
	n := uint64(0)
	step := func() { // one upsert into a new vertex: "in" raises an alert
		n++
		var b engine.Batch
		b.Insert(n, 1_000_000+n)
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "analytics.ckpt")
	checkpoint := func(within time.Duration) ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		meta, err := reg.Checkpoint(ctx, path, []byte("pos"))
		var names []string
		for _, a := range meta.Analytics {
			names = append(names, a.Name)
		}
		return names, err
	}
	step()
	waitAllAt(t, reg, []string{"in", "out"}, lastSeq(t, s))
	if names, err := checkpoint(30 * time.Second); err != nil || fmt.Sprint(names) != "[in out]" {
		t.Fatalf("the first checkpoint holds %v: %v", names, err)
	}
	sink.shut(false)
	step()
	waitAllAt(t, reg, []string{"out"}, lastSeq(t, s))
	for k := 1; k <= MaxCheckpointDeferrals; k++ {
		var de *DeferredError
		if _, err := checkpoint(600 * time.Millisecond); !errors.As(err, &de) || de.Deferrals != k || fmt.Sprint(de.Analytics) != "[in]" {
			t.Fatalf("checkpoint %d while in waits: %v, want deferral %d of [in]", k, err, k)
		}
	}
	if names, err := checkpoint(600 * time.Millisecond); err != nil || fmt.Sprint(names) != "[out]" {
		t.Fatalf("the checkpoint after %d deferrals holds %v (%v), want [out]", MaxCheckpointDeferrals, names, err)
	}
	// The file on disk holds no state of in now: nothing to keep.
	if names, err := checkpoint(600 * time.Millisecond); err != nil || fmt.Sprint(names) != "[out]" {
		t.Fatalf("the next checkpoint holds %v (%v), want [out]", names, err)
	}
	sink.shut(true)
	waitAllAt(t, reg, []string{"in", "out"}, lastSeq(t, s))
	if names, err := checkpoint(30 * time.Second); err != nil || fmt.Sprint(names) != "[in out]" {
		t.Fatalf("the checkpoint once in caught up holds %v: %v", names, err)
	}
}

// TestCheckpointAtTheOldDefaultTolerance: a pagerank whose spec states no
// tolerance, checkpointed when the default was 1e-6 (its saved spec says
// 1e-6), restores from that checkpoint under today's default (1e-4):
// its state is not dropped for a compute from the store (it answers at
// the checkpoint's seq before any pull), its spec is today's, and
// through the replay and new batches its ranks stay within the bound
// its residual states of the exact ones. A checkpoint at a looser
// tolerance does not serve a tighter spec: that one computes afresh.
func TestCheckpointAtTheOldDefaultTolerance(t *testing.T) {
	g := newBigGraph(t, 11, 8, 13, false)
	old := Spec{Type: "pagerank", Tolerance: 1e-6} // what "no tolerance" was
	r1 := NewRegistry(g.m, RegistryConfig{})
	if _, err := r1.Register(old); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		g.batch(200, 0.05, 0.002)
	}
	path := filepath.Join(t.TempDir(), "analytics.ckpt")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta, err := r1.Checkpoint(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Analytics) != 1 || meta.Analytics[0].Tolerance != 1e-6 {
		t.Fatalf("checkpoint meta %+v", meta)
	}
	after := g.batch(200, 0.05, 0.002)
	r1.Close()
	g.m.Close()

	// A tighter spec than the checkpoint's is not served by it.
	r2 := g.restart()
	if got, err := r2.Restore(context.Background(), path, []Spec{{Type: "pagerank", Tolerance: 1e-8}}, func(CheckpointMeta) error { return nil }); err != nil || len(got) != 0 {
		t.Fatalf("a pagerank at 1e-8 from a checkpoint at 1e-6: restored %v, %v", got, err)
	}
	r2.Close()
	g.m.Close()

	r3 := g.restart()
	defer r3.Close()
	got, err := r3.Restore(context.Background(), path, []Spec{{Type: "pagerank"}}, func(CheckpointMeta) error { return nil })
	if err != nil || fmt.Sprint(got) != "[pagerank]" {
		t.Fatalf("a pagerank of the default tolerance from a checkpoint at 1e-6: restored %v, %v", got, err)
	}
	// Before any pull: the checkpoint's ranks, at its seq.
	if res, err := r3.Result("pagerank"); err != nil || !res.Restored || res.Seq != meta.Seq || res.Summary.(PageRankSummary).Seq != meta.Seq {
		t.Fatalf("just restored: %+v, %v (checkpoint at %d)", res, err, meta.Seq)
	}
	if _, err := g.s.Apply(after); err != nil { // the replay
		t.Fatal(err)
	}
	for range 2 {
		g.batch(3, 0.05, 0)
	}
	waitAllAt(t, r3, []string{"pagerank"}, lastSeq(t, g.s))
	res, err := r3.Result("pagerank")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Restored || res.Spec.Tolerance != DefaultTolerance || DefaultTolerance != 1e-4 {
		t.Fatalf("after the restore: restored %v, tolerance %g (default %g)", res.Restored, res.Spec.Tolerance, DefaultTolerance)
	}
	d := res.Spec.Damping
	rs := res.Summary.(PageRankSummary).Residual
	bound := 2 * rs / ((1 - d) * (1 - rs/(1-d)))
	if rs > d*res.Spec.Tolerance/2*(1+1e-9) || bound > d*res.Spec.Tolerance/(1-d)*1.01 {
		t.Fatalf("residual %g above the target of tolerance %g", rs, res.Spec.Tolerance)
	}
	want := refPageRank(g.cur, d)
	l1 := 0.0
	for _, x := range allIDs(g.cur) {
		v, _, err := r3.Vertex("pagerank", x)
		if err != nil {
			t.Fatal(err)
		}
		l1 += math.Abs(v.(VertexRank).Rank - want[x])
	}
	if l1 > bound {
		t.Fatalf("L1 distance %g to the exact ranks, above the bound %g its residual %g states", l1, bound, rs)
	}
}
