package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	core "github.com/graphtide/graphtide/cgo"
)

// Edge aggregates and payloads (issue 42) against an oracle map of events:
// every (src, dst, type) is either a replace edge (its newest upsert) or
// the list of its events since the last delete, vertex delete or replace
// upsert; the store's reads must return the oracle's count, sum, first and
// last time and newest payload, and list every event within the type's
// retain, through flushes, compactions, reopens, as-of reads, in-edges and
// a SIGKILL.

// evKey is an edge.
type evKey struct {
	src, dst uint64
	typ      uint16
}

// ev is one upsert as the oracle keeps it.
type ev struct {
	seq          uint64
	w            float64
	time         int64
	ref, props   string
	accumulating bool
}

// evOracle maps each live edge to its upserts since it last started, the
// newest last: a replace edge holds one, an accumulate edge its events.
type evOracle map[evKey][]ev

func (o evOracle) clone() evOracle {
	c := make(evOracle, len(o))
	for k, v := range o {
		c[k] = slices.Clone(v)
	}
	return c
}

// apply applies b's ops in order with the documented semantics (acc: the
// accumulate types).
func (o evOracle) apply(b *Batch, seq uint64, acc func(uint16) bool) {
	for i := 0; i < b.Len(); i++ {
		op := b.Op(i)
		k := evKey{op.Src, op.Dst, op.Type}
		switch op.Kind {
		case OpUpsert:
			e := ev{seq: seq, w: op.Weight, time: op.EventTime, ref: op.EventRef, props: op.Props, accumulating: acc(op.Type)}
			if cur := o[k]; e.accumulating && len(cur) > 0 && cur[len(cur)-1].accumulating {
				o[k] = append(cur, e)
			} else {
				o[k] = []ev{e}
			}
		case OpDeleteEdge:
			delete(o, k)
		case OpDeleteVertex:
			for k := range o {
				if k.src == op.Src || k.dst == op.Src {
					delete(o, k)
				}
			}
		}
	}
}

// edgeRead is an edge as the reads return it.
type edgeRead struct {
	count       uint64
	w           float64
	time, first int64
	ref, props  string
}

func (o evOracle) read(k evKey) (edgeRead, bool) {
	es, ok := o[k]
	if !ok {
		return edgeRead{}, false
	}
	last := es[len(es)-1]
	if !last.accumulating {
		return edgeRead{w: last.w, time: last.time, ref: last.ref, props: last.props}, true
	}
	r := edgeRead{count: uint64(len(es)), ref: last.ref, props: last.props}
	for _, e := range es {
		r.w += e.w
		r.time = max(r.time, e.time)
		if e.time != 0 && (r.first == 0 || e.time < r.first) {
			r.first = e.time
		}
	}
	return r, true
}

// eventsModel is one store under test with its oracle.
type eventsModel struct {
	t     testing.TB
	dir   string
	opts  *Options
	s     *Store
	o     evOracle
	r     *rand.Rand
	nv    uint64
	clock int64
	// The newest event time applied since the store's open (the core's
	// watermark), and the greatest ever (what "within retain" is measured
	// from: retention never folds an event within retain of it).
	newest int64
	past   map[uint64]evOracle // as-of states to read, by seq
}

var eventsTypes = []uint16{0, 1, 2}

func eventsOptions(inEdges bool) *Options {
	o := smallOptions(inEdges)
	o.KeepHistory = true
	o.HistorySeqs = 40
	o.Aggregates = map[uint16]Aggregate{
		1: {Accumulate: true, Retain: 300 * time.Microsecond},
		2: {Accumulate: true}, // retain 0: every event older than the newest folds
	}
	return o
}

func (m *eventsModel) accumulates(t uint16) bool { return m.opts.Aggregates[t].Accumulate }

// batch draws a random batch: upserts of every type (integer weights, so
// that sums are exact), most with a payload, deletes and vertex deletes.
func (m *eventsModel) batch() *Batch {
	r := m.r
	var b Batch
	for range 1 + r.IntN(12) {
		src, dst, ty := r.Uint64N(m.nv), r.Uint64N(m.nv), eventsTypes[r.IntN(len(eventsTypes))]
		var tm int64
		if r.IntN(8) != 0 {
			tm = m.clock + r.Int64N(40) - 20
		}
		switch x := r.IntN(100); {
		case x < 85:
			b.InsertWeighted(src, dst, float64(1+r.IntN(50)))
			b.SetType(ty)
			b.SetEventTime(tm)
			if r.IntN(4) != 0 {
				props := ""
				if r.IntN(2) == 0 {
					props = fmt.Sprintf(`{"currency":"EUR","n":%d}`, r.IntN(1000))
				}
				b.SetPayload(fmt.Sprintf("e-%d", r.IntN(1<<30)), []byte(props))
			}
		case x < 97:
			b.DeleteEdge(src, dst)
			b.SetType(ty)
			b.SetEventTime(tm)
		default:
			b.DeleteVertex(src)
		}
		if tm > 0 {
			m.newest = max(m.newest, tm)
		}
	}
	m.clock += r.Int64N(15)
	return &b
}

func (m *eventsModel) step() {
	b := m.batch()
	seq, err := m.s.Apply(b)
	if err != nil {
		m.t.Fatal(err)
	}
	m.o.apply(b, seq, m.accumulates)
	if m.r.IntN(6) == 0 {
		m.past[seq] = m.o.clone()
	}
	switch m.r.IntN(30) {
	case 0:
		if err := m.s.Flush(); err != nil {
			m.t.Fatal(err)
		}
	case 1:
		if err := m.s.CompactAll(); err != nil {
			m.t.Fatal(err)
		}
	}
}

// check reads sn against want: every lookup, every page of out- and
// in-edges, every scan weight, and the events within retain.
func (m *eventsModel) check(sn *Snapshot, want evOracle, what string) {
	t := m.t
	t.Helper()
	for src := uint64(0); src < m.nv; src++ {
		for dst := uint64(0); dst < m.nv; dst++ {
			c, err := sn.Edge(src, dst)
			if err != nil {
				t.Fatal(err)
			}
			got := map[uint16]edgeRead{}
			for i, ty := range c.Types {
				got[ty] = edgeRead{c.Counts[i], c.Weights[i], c.Times[i], c.FirstTimes[i], c.Refs[i], c.Props[i]}
			}
			for _, ty := range eventsTypes {
				k := evKey{src, dst, ty}
				w, ok := want.read(k)
				g, gok := got[ty]
				if ok != gok || w != g {
					t.Fatalf("%s: edge %v: got %+v (%v), want %+v (%v)", what, k, g, gok, w, ok)
				}
				if !ok || !m.accumulates(ty) {
					continue
				}
				// Every event within retain of the newest event time.
				since := m.newest - m.opts.Aggregates[ty].Retain.Microseconds()
				evs, _, err := sn.Events(src, dst, ty, since, 1000)
				if err != nil {
					t.Fatal(err)
				}
				var wantEvs []Event
				es := want[k]
				for i := len(es) - 1; i >= 0; i-- {
					if es[i].time >= since {
						wantEvs = append(wantEvs, Event{Seq: es[i].seq, Weight: es[i].w, Time: es[i].time, EventRef: es[i].ref, Props: es[i].props})
					}
				}
				if !slices.Equal(evs, wantEvs) {
					t.Fatalf("%s: events of %v since %d:\n got %+v\nwant %+v", what, k, since, evs, wantEvs)
				}
			}
		}
		for _, dir := range []Direction{Out, In} {
			if dir == In && !m.opts.InEdges {
				continue
			}
			m.checkPages(sn, want, src, dir, what)
		}
	}
	// Scans return the folded weights.
	buf := NewScanBuffer(3, 5, true)
	buf.Types = []uint16{}
	sums := map[evKey]float64{}
	for lo := uint64(0); lo < m.nv; {
		next, err := sn.Scan(lo, m.nv, Out, buf)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range buf.Vertices {
			for j := buf.Offsets[i]; j < buf.Offsets[i+1]; j++ {
				sums[evKey{v, buf.Dsts[j], buf.Types[j]}] = buf.Weights[j]
			}
		}
		lo = next
	}
	if len(sums) != len(want) {
		t.Fatalf("%s: scan found %d edges, want %d", what, len(sums), len(want))
	}
	for k := range want {
		w, _ := want.read(k)
		if sums[k] != w.w {
			t.Fatalf("%s: scan weight of %v: got %v, want %v", what, k, sums[k], w.w)
		}
	}
}

// checkPages reads v's dir-edges with their aggregates in pages of 2.
func (m *eventsModel) checkPages(sn *Snapshot, want evOracle, v uint64, dir Direction, what string) {
	t := m.t
	t.Helper()
	type pe struct {
		o  uint64
		ty uint16
		r  edgeRead
	}
	var got, exp []pe
	var after *EdgeCursor
	for {
		p, err := sn.NeighborsPageExt(v, dir, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range p.Dsts {
			got = append(got, pe{d, p.Types[i], edgeRead{p.Counts[i], p.Weights[i], p.Times[i], p.FirstTimes[i], p.Refs[i], p.Props[i]}})
		}
		if !p.More {
			break
		}
		c, _ := p.Last()
		after = &c
	}
	for o := uint64(0); o < m.nv; o++ {
		for i := len(eventsTypes) - 1; i >= 0; i-- {
			k := evKey{v, o, eventsTypes[i]}
			if dir == In {
				k = evKey{o, v, eventsTypes[i]}
			}
			if r, ok := want.read(k); ok {
				exp = append(exp, pe{o, eventsTypes[i], r})
			}
		}
	}
	if !slices.Equal(got, exp) {
		t.Fatalf("%s: %v-edges of %d:\n got %+v\nwant %+v", what, dir, v, got, exp)
	}
}

func (m *eventsModel) checkNow(what string) {
	m.t.Helper()
	sn, err := m.s.Snapshot()
	if err != nil {
		m.t.Fatal(err)
	}
	defer sn.Release()
	m.check(sn, m.o, what)
	// As of past seqs the history still holds.
	met, err := m.s.Metrics()
	if err != nil {
		m.t.Fatal(err)
	}
	for seq, o := range m.past {
		if seq < met.OldestReadableSeq {
			delete(m.past, seq)
			continue
		}
		old, err := m.s.SnapshotAt(seq)
		if err != nil {
			m.t.Fatal(err)
		}
		m.check(old, o, fmt.Sprintf("%s as of %d", what, seq))
		old.Release()
	}
}

func (m *eventsModel) reopen() {
	if err := m.s.Flush(); err != nil { // Close discards what is not durable
		m.t.Fatal(err)
	}
	if err := m.s.Close(); err != nil {
		m.t.Fatal(err)
	}
	s, err := Open(m.dir, m.opts)
	if err != nil {
		m.t.Fatal(err)
	}
	m.s = s
}

func TestEventsFollowTheOracle(t *testing.T) {
	for _, inEdges := range []bool{true, false} {
		t.Run(fmt.Sprintf("in-edges %v", inEdges), func(t *testing.T) {
			m := &eventsModel{t: t, dir: t.TempDir(), opts: eventsOptions(inEdges), o: evOracle{},
				r: rand.New(rand.NewPCG(42, 0)), nv: 9, clock: 1_000_000, past: map[uint64]evOracle{}}
			s, err := Open(m.dir, m.opts)
			if err != nil {
				t.Fatal(err)
			}
			m.s = s
			defer func() { m.s.Close() }()
			for round := range 200 {
				m.step()
				if round%25 == 24 {
					m.checkNow(fmt.Sprintf("round %d", round))
				}
				if round%70 == 69 {
					m.reopen()
					m.checkNow(fmt.Sprintf("round %d reopened", round))
				}
			}
			if err := m.s.CompactAll(); err != nil {
				t.Fatal(err)
			}
			m.checkNow("compacted")
			// Retention folded events (type 2 keeps none): some edge says so.
			sn, err := m.s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer sn.Release()
			folded := false
			for k := range m.o {
				if k.typ == 2 {
					_, f, err := sn.Events(k.src, k.dst, k.typ, 0, 1)
					if err != nil {
						t.Fatal(err)
					}
					folded = folded || f
				}
			}
			if !folded {
				t.Fatal("retention folded no event of the type with retain 0")
			}
		})
	}
}

// A type switched from replace to accumulate starts a new sum over the
// replace version; switching it back is refused.
func TestSetAggregateSwitchesAType(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	up := func(w float64, tm int64, ref string) {
		var b Batch
		b.InsertWeighted(1, 2, w)
		b.SetType(5)
		b.SetEventTime(tm)
		b.SetPayload(ref, []byte(`{"k":"`+ref+`"}`))
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	edge := func() edgeRead {
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		c, err := sn.Edge(1, 2)
		if err != nil || len(c.Types) != 1 {
			t.Fatalf("edge: %v %+v", err, c)
		}
		return edgeRead{c.Counts[0], c.Weights[0], c.Times[0], c.FirstTimes[0], c.Refs[0], c.Props[0]}
	}
	up(100, 10, "r1")
	if got := edge(); got != (edgeRead{0, 100, 10, 0, "r1", `{"k":"r1"}`}) {
		t.Fatalf("replace: %+v", got)
	}
	if err := s.SetAggregate(5, Aggregate{Accumulate: true, Retain: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if a := s.AggregateOf(5); !a.Accumulate || a.Retain != time.Hour {
		t.Fatalf("AggregateOf: %+v", a)
	}
	up(3, 30, "e1")
	up(4, 20, "e2")
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := edge(); got != (edgeRead{2, 7, 30, 20, "e2", `{"k":"e2"}`}) {
		t.Fatalf("accumulate over replace: %+v", got)
	}
	// Back to replace: refused (the next upsert would replace the events),
	// the type unchanged.
	var conflict *AggregateConflictError
	if err := s.SetAggregate(5, Aggregate{}); !errors.As(err, &conflict) || conflict.Type != 5 {
		t.Fatalf("SetAggregate(5, replace) = %v, want an AggregateConflictError", err)
	}
	up(9, 40, "e3")
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	if got := edge(); got != (edgeRead{3, 16, 40, 20, "e3", `{"k":"e3"}`}) {
		t.Fatalf("after the refused switch: %+v", got)
	}
	for _, bad := range []Aggregate{{Retain: time.Second}, {Accumulate: true, Retain: -time.Second}} {
		if err := s.SetAggregate(5, bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("SetAggregate(%+v): %v", bad, err)
		}
	}
	if _, err := Open(t.TempDir(), &Options{Aggregates: map[uint16]Aggregate{uint16(MaxEdgeTypes): {Accumulate: true}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open with a type out of range: %v", err)
	}
}

// The crash child of events (crashEventsEnv): accumulate upserts with
// payloads of type 0, its batches reproducible from their index.
const crashEventsEnv = "GRAPHTIDE_ENGINE_CRASH_EVENTS"

func eventsCrashOptions() *Options {
	o := crashOptions()
	o.Aggregates = map[uint16]Aggregate{0: {Accumulate: true, Retain: 50 * time.Microsecond}}
	return o
}

func eventsCrashBatch(i uint64) *Batch {
	r := rand.New(rand.NewPCG(i, 99))
	var b Batch
	for k := range 1 + r.IntN(200) {
		b.InsertWeighted(r.Uint64N(60), r.Uint64N(60), float64(1+r.IntN(9)))
		b.SetEventTime(int64(1_000_000 + i*10 + uint64(r.IntN(30))))
		b.SetPayload(fmt.Sprintf("b%d-%d", i, k), nil)
		if r.IntN(60) == 0 {
			b.DeleteEdge(r.Uint64N(60), r.Uint64N(60))
		}
	}
	if r.IntN(20) == 0 {
		b.DeleteVertex(r.Uint64N(60))
	}
	var pos [8]byte
	binary.LittleEndian.PutUint64(pos[:], i+1)
	b.SetSourcePosition(pos[:])
	return &b
}

// TestEventsSurviveSIGKILL kills a writer of events at random moments: the
// reopened store holds exactly the folds of the batches its recorded
// position covers (each edge's count, sum, times and newest reference).
func TestEventsSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	var last uint64
	for round := range 3 {
		cmd := startCrashChild(t, dir, crashEventsEnv+"=1")
		time.Sleep(time.Duration(400+r.IntN(900)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("child exited on its own (%v) instead of being killed", err)
		}
		last = checkEventsRecovered(t, dir, last, round)
	}
	if last == 0 {
		t.Fatal("no batch was ever made durable")
	}
}

// A flipped byte in the payload column (format 4) is refused with the file
// and offset by Check (what inspect --verify runs), by VerifyAll, and by
// the read that meets it; never returned as a payload.
func TestCorruptEventColumnIsRefused(t *testing.T) {
	dir := t.TempDir()
	o := &Options{DisableAutoCompaction: true, Aggregates: map[uint16]Aggregate{0: {Accumulate: true, Retain: time.Hour}}}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	for i := range uint64(3000) {
		b.InsertWeighted(i%40, i%97, 2)
		b.SetEventTime(int64(1_000_000 + i))
		b.SetPayload(fmt.Sprintf("event-%06d", i), []byte(`{"currency":"EUR"}`))
	}
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.CompactAll(); err != nil { // one bottommost file: the payload bytes end its body
		t.Fatal(err)
	}
	files, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var seg string
	for _, f := range files {
		if f.Dir == Out {
			seg = filepath.Join(dir, fmt.Sprintf("%08d.seg", f.ID))
		}
	}
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != 4 {
		t.Fatalf("segment format %d, want 4", v)
	}
	bodyEnd := int64(binary.LittleEndian.Uint64(data[len(data)-32:]))
	off := bodyEnd - 40 // within the last payloads
	flipByte(t, seg, off)
	rep, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) == 0 || rep.Problems[0].File != seg || rep.Problems[0].Offset > uint64(off) {
		t.Fatalf("check: %+v, want a problem in %s at or before %d", rep.Problems, seg, off)
	}
	s, err = Open(dir, o)
	if err != nil {
		t.Fatalf("open verifies headers and indexes only: %v", err)
	}
	defer s.Close()
	wantCorruption(t, s.VerifyAll(), seg)
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	refused := 0
	for src := range uint64(40) {
		for dst := range uint64(97) {
			c, err := sn.Edge(src, dst)
			if err != nil {
				wantCorruption(t, err, seg)
				refused++
				continue
			}
			for _, ref := range c.Refs {
				if !strings.HasPrefix(ref, "event-") {
					t.Fatalf("edge %d->%d: damaged reference %q returned", src, dst, ref)
				}
			}
		}
	}
	if refused == 0 {
		t.Fatal("no read met the damaged chunk")
	}
}

// checkEventsRecovered reopens dir after a kill of the events crash child
// and checks that it holds exactly the folds of the batches its recorded
// position covers (never behind last), and that every file verifies; it
// returns the position.
func checkEventsRecovered(t *testing.T, dir string, last uint64, round int) uint64 {
	t.Helper()
	s, err := Open(dir, eventsCrashOptions())
	if err != nil {
		t.Fatalf("round %d: reopen after kill: %v", round, err)
	}
	defer s.Close()
	pos := positionOf(t, s)
	if pos < last {
		t.Fatalf("round %d: position went back from %d to %d", round, last, pos)
	}
	o := evOracle{}
	for i := range pos {
		// The seqs are the store's; the oracle's are not compared here.
		o.apply(eventsCrashBatch(i), 0, func(uint16) bool { return true })
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	for k := range o {
		want, _ := o.read(k)
		c, err := sn.Edge(k.src, k.dst)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Types) != 1 {
			t.Fatalf("round %d: edge %v: %d types", round, k, len(c.Types))
		}
		got := edgeRead{c.Counts[0], c.Weights[0], c.Times[0], c.FirstTimes[0], c.Refs[0], c.Props[0]}
		if got != want {
			t.Fatalf("round %d: edge %v: got %+v, want %+v", round, k, got, want)
		}
	}
	deg := uint64(0)
	for v := range uint64(60) {
		d, err := sn.Degree(v, Out)
		if err != nil {
			t.Fatal(err)
		}
		deg += d
	}
	if int(deg) != len(o) {
		t.Fatalf("round %d: %d edges, want %d", round, deg, len(o))
	}
	if err := s.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	t.Logf("round %d: recovered %d batches, %d edges", round, pos, len(o))
	return pos
}

// TestEventsCrashAtEveryEditPoint kills the writer of events exactly where
// a flush or a compaction stops (its files durable and its edit not yet
// written, or its edit durable and its file set not installed): the store
// then holds exactly the folds of what its recorded position covers.
func TestEventsCrashAtEveryEditPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	for _, point := range []uint32{core.TestFlushBeforeEdit, core.TestFlushAfterEdit, core.TestCompactBeforeEdit,
		core.TestCompactAfterEdit} {
		t.Run(fmt.Sprint(point), func(t *testing.T) {
			dir := t.TempDir()
			// Durable events first (the child stops at its first flush or
			// compaction after a reopen).
			cmd := startCrashChild(t, dir, crashEventsEnv+"=1")
			time.Sleep(700 * time.Millisecond)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			last := checkEventsRecovered(t, dir, 0, -1)
			if last == 0 {
				t.Fatal("no batch was made durable before the test points")
			}
			for round := range 2 {
				killAtTestPoint(t, dir, point, round, crashEventsEnv+"=1")
				last = checkEventsRecovered(t, dir, last, round)
			}
		})
	}
}

// Events of an edge whose vertex was deleted before them fold like any
// others once every reader sees the delete: retention does not keep them
// one by one for good.
func TestEventsAfterAVertexDeleteFold(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{DisableAutoCompaction: true,
		Aggregates: map[uint16]Aggregate{0: {Accumulate: true, Retain: 10 * time.Microsecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	b.InsertWeighted(1, 2, 5)
	b.SetEventTime(1)
	b.DeleteVertex(1)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	for i := range int64(100) {
		b.Reset()
		b.InsertWeighted(1, 2, 1)
		b.SetEventTime(1000 + i)
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	c, err := sn.Edge(1, 2)
	if err != nil || len(c.Counts) != 1 || c.Counts[0] != 100 || c.Weights[0] != 100 || c.FirstTimes[0] != 1000 {
		t.Fatalf("edge: %+v, %v; want 100 events of weight 1 from time 1000", c, err)
	}
	evs, folded, err := sn.Events(1, 2, 0, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !folded || len(evs) > 11 {
		t.Fatalf("%d events listed, folded %v: want those within retain (time >= 1089) and the rest folded", len(evs), folded)
	}
}
