package analytics

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/views"
)

// dumpWindow describes a fan window's whole state (its operations in the
// order they leave, each vertex's lists, measures and flags, its late
// count), but not the arrival numbers, which a restored window gives
// again.
func dumpWindow(w *fanWindow) string {
	var b strings.Builder
	item := func(it *fanItem) string {
		return fmt.Sprintf("(%d %d>%d %v #%d r%d t%d f%d %q %q)", it.t, it.src, it.dst, it.amount, it.seq, it.ref, it.typ, it.flags, it.eventRef, it.props)
	}
	for _, i := range w.win.Items() {
		b.WriteString(item(&w.its[i]))
	}
	vs := make([]uint64, 0, len(w.vs))
	for v, x := range w.vs {
		if w.vflag[x]&vIdle == 0 { // an idle vertex is as good as none
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	for _, v := range vs {
		x := w.vs[v]
		loops := int32(0)
		if w.vloops != nil {
			loops = w.vloops[x]
		}
		fmt.Fprintf(&b, "\n%d above=%v mule=%v loops=%d", v, w.vflag[x]&vAbove != 0, w.vflag[x]&vMule != 0, loops)
		for _, in := range []bool{true, false} {
			if in && !w.cfg.in || !in && !w.cfg.out {
				b.WriteString(" [sum 0 peers 0 map[]:]")
				continue
			}
			s := w.side(x, in)
			var peers map[uint64]int32
			if s.ext != nil {
				peers = s.ext.peers
			}
			fmt.Fprintf(&b, " [sum %v peers %d %v:", s.sumOf().value(), s.npeers, peers)
			for j := s.first; j != 0; j = w.link(j, in).next {
				b.WriteString(item(&w.its[j]))
			}
			b.WriteString("]")
		}
	}
	fmt.Fprintf(&b, "\nlate %d items %d peers %d pay %d", w.win.Late(), w.items, w.peers, w.payBytes)
	return b.String()
}

// fanOracle is the definition of the fan monitors and the mule, counted
// again from scratch after every operation: the window's operations by
// the rules of views.Window, each vertex's events in and out from them,
// amounts summed exactly (big.Rat), the alerts by the crossing rule.
type fanOracle struct {
	cfg   fanConfig
	held  []oracleOp // the window, in arrival order
	maxT  int64
	late  int
	n     int
	above map[uint64]bool
	mule  map[uint64]bool
}

type oracleOp struct {
	e views.Edge
	t int64
	n int
}

func newFanOracle(c fanConfig) *fanOracle {
	return &fanOracle{cfg: c, above: map[uint64]bool{}, mule: map[uint64]bool{}}
}

func (o *fanOracle) before(a, b oracleOp) bool {
	if o.cfg.win.Duration > 0 && a.t != b.t {
		return a.t < b.t
	}
	return a.n < b.n
}

// list is v's held upserts in (in: by destination) or out, in the
// window's order.
func (o *fanOracle) list(v uint64, in bool) []oracleOp {
	var l []oracleOp
	for _, x := range o.held {
		if x.e.Op.Kind == engine.OpUpsert && (in && x.e.Op.Dst == v || !in && x.e.Op.Src == v) {
			l = append(l, x)
		}
	}
	slices.SortFunc(l, func(a, b oracleOp) int {
		if o.before(a, b) {
			return -1
		}
		return 1
	})
	return l
}

func peersOf(l []oracleOp, in bool) int {
	m := map[uint64]bool{}
	for _, x := range l {
		if in {
			m[x.e.Op.Src] = true
		} else {
			m[x.e.Op.Dst] = true
		}
	}
	return len(m)
}

func sumOf(l []oracleOp) *big.Rat {
	s := new(big.Rat)
	for _, x := range l {
		s.Add(s, new(big.Rat).SetFloat64(x.e.Op.Weight))
	}
	return s
}

// measure is v's measure and whether it exceeds the threshold.
func (o *fanOracle) measure(v uint64) (float64, bool) {
	l := o.list(v, o.cfg.byDst)
	var m *big.Rat
	switch o.cfg.measure {
	case "senders":
		m = new(big.Rat).SetInt64(int64(peersOf(l, o.cfg.byDst)))
	case "amount":
		m = sumOf(l)
	default:
		m = new(big.Rat).SetInt64(int64(len(l)))
	}
	f, _ := m.Float64()
	return f, m.Cmp(new(big.Rat).SetFloat64(o.cfg.threshold)) > 0
}

func (o *fanOracle) muleHolds(v uint64) bool {
	return o.cfg.mule() && peersOf(o.list(v, true), true) >= o.cfg.muleSenders && peersOf(o.list(v, false), false) >= o.cfg.muleReceivers
}

// add takes one operation and returns the alerts it raises, as alertKey
// gives them.
func (o *fanOracle) add(e views.Edge) []string {
	x := oracleOp{e, views.EventMicros(e), o.n}
	o.n++
	w := o.cfg.win
	if w.Duration > 0 {
		cut := func() int64 { return o.maxT - w.Lateness.Microseconds() - w.Duration.Microseconds() }
		if o.maxT != 0 && x.t <= cut() {
			o.late++
			return nil
		}
		o.maxT = max(o.maxT, x.t)
		o.held = append(o.held, x)
		o.held = slices.DeleteFunc(o.held, func(y oracleOp) bool { return y.t <= cut() })
	} else {
		o.held = append(o.held, x)
	}
	if w.Edges > 0 && len(o.held) > w.Edges {
		// The oldest in the window's order leave.
		slices.SortStableFunc(o.held, func(a, b oracleOp) int {
			if o.before(a, b) {
				return -1
			} else if o.before(b, a) {
				return 1
			}
			return 0
		})
		o.held = o.held[len(o.held)-w.Edges:]
		slices.SortFunc(o.held, func(a, b oracleOp) int { return cmp.Compare(a.n, b.n) })
	}
	// Re-arm, every vertex.
	for v := range o.above {
		if _, now := o.measure(v); !now {
			delete(o.above, v)
		}
	}
	for v := range o.mule {
		if !o.muleHolds(v) {
			delete(o.mule, v)
		}
	}
	if e.Op.Kind != engine.OpUpsert || !slices.ContainsFunc(o.held, func(y oracleOp) bool { return y.n == x.n }) {
		return nil
	}
	var al []string
	k := e.Op.Src
	if o.cfg.byDst {
		k = e.Op.Dst
	}
	if val, now := o.measure(k); now && !o.above[k] {
		o.above[k] = true
		l := o.list(k, o.cfg.byDst)
		tot := AlertTotals{Events: len(l), Counterparties: peersOf(l, o.cfg.byDst), First: microTime(l[0].t), Last: microTime(l[len(l)-1].t)}
		tot.Amount, _ = sumOf(l).Float64()
		al = append(al, o.alertKey(o.cfg.kind, k, val, l, tot))
	}
	if o.cfg.mule() {
		for i, v := range []uint64{e.Op.Src, e.Op.Dst} {
			if i == 1 && v == e.Op.Src {
				break
			}
			if o.muleHolds(v) && !o.mule[v] {
				o.mule[v] = true
				in, out := o.list(v, true), o.list(v, false)
				all := append(slices.Clone(in), out...)
				slices.SortFunc(all, func(a, b oracleOp) int {
					if o.before(a, b) {
						return -1
					} else if o.before(b, a) {
						return 1
					}
					return 0
				})
				all = slices.CompactFunc(all, func(a, b oracleOp) bool { return a.n == b.n })
				tot := AlertTotals{Events: len(all), Counterparties: peersOf(in, true), Receivers: peersOf(out, false),
					First: microTime(all[0].t), Last: microTime(all[len(all)-1].t)}
				tot.Amount, _ = sumOf(in).Float64()
				tot.AmountOut, _ = sumOf(out).Float64()
				al = append(al, o.alertKey("mule", v, float64(peersOf(in, true)), all, tot))
			}
		}
	}
	return al
}

// alertKey is an alert as a string: its kind, vertex, value, evidence
// (the newest of evs) and totals.
func (o *fanOracle) alertKey(kind string, v uint64, val float64, evs []oracleOp, tot AlertTotals) string {
	k := min(len(evs), o.cfg.evidence)
	var ev []Evidence
	for _, x := range evs[len(evs)-k:] {
		e := Evidence{Seq: x.e.Seq, Src: x.e.Op.Src, Dst: x.e.Op.Dst, Type: x.e.Op.Type, Amount: x.e.Op.Weight, EventRef: x.e.Op.EventRef,
			Props: x.e.Op.Props, OpRef: x.e.Ref}
		if x.e.Op.EventTime > 0 {
			e.EventTime = microTime(x.e.Op.EventTime)
		}
		ev = append(ev, e)
	}
	return fmt.Sprintf("%s v%d value %v threshold-part %v\n  evidence %+v dropped %d\n  totals %+v", kind, v, val, kind != "mule", ev, len(evs)-k, tot)
}

// gotKey is a monitor's alert as alertKey gives it.
func gotKey(a Alert) string {
	return fmt.Sprintf("%s v%d value %v threshold-part %v\n  evidence %+v dropped %d\n  totals %+v", a.Kind, a.Vertex, a.Value, a.Threshold != 0, a.Evidence,
		a.EvidenceDropped, *a.Totals)
}

// fanStream is a random stream of operations for the fan monitors: a
// few hot vertices, repeated counterparties, amounts in cents (negative
// ones too: refunds), event times out of order within lateness, some
// late, some without an event time, deletes; every one with its
// reference and payload.
func fanStream(r *rand.Rand, n int, lateness time.Duration) []views.Edge {
	clock := int64(1_700_000_000_000_000)
	var es []views.Edge
	for i := range n {
		clock += r.Int64N(400_000)
		t := clock - r.Int64N(lateness.Microseconds()+1)
		if r.IntN(12) == 0 {
			t = clock - 8_000_000 - r.Int64N(4_000_000) // likely late
		}
		src, dst := r.Uint64N(12), r.Uint64N(12)
		if r.IntN(3) == 0 {
			dst = r.Uint64N(2) // hot receivers
		}
		if r.IntN(4) == 0 {
			src = 5 + r.Uint64N(2) // hot senders
		}
		amount := float64(r.IntN(100_000)) / 100
		if r.IntN(10) == 0 {
			amount = -amount
		}
		op := engine.Op{Src: src, Dst: dst, Weight: amount, Kind: engine.OpUpsert, Type: uint16(r.IntN(3)), EventTime: t,
			EventRef: fmt.Sprintf("e-%d", i), Props: fmt.Sprintf(`{"n":%d}`, i)}
		switch x := r.IntN(100); {
		case x < 8:
			op = engine.Op{Src: src, Dst: dst, Kind: engine.OpDeleteEdge, EventTime: t}
		case x < 10:
			op.EventTime, op.EventRef = 0, "" // applied at clock
		}
		es = append(es, views.Edge{Seq: uint64(i/3 + 1), Op: op, Time: clock * 1000, Ref: uint64(i + 1)})
	}
	return es
}

// roundTripFan saves a fan window in a checkpoint section and loads it
// into a new one of the same configuration.
func roundTripFan(t *testing.T, w *fanWindow) *fanWindow {
	t.Helper()
	got, err := loadFanSection(t, w, w.save)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// loadFanSection writes a checkpoint whose "fan" section is what encode
// writes and loads it into a new window of w's configuration, returning
// the load's error.
func loadFanSection(t *testing.T, w *fanWindow, encode func(*checkpoint.Encoder)) (*fanWindow, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fan.ckpt")
	cw, err := checkpoint.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := cw.Section("fan", encode); err != nil {
		t.Fatal(err)
	}
	if err := cw.Commit(); err != nil {
		t.Fatal(err)
	}
	rd, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got *fanWindow
	err = rd.Section("fan", func(d *checkpoint.Decoder) error {
		got = loadFanWindow(d, w)
		return d.Err()
	})
	return got, err
}

// TestFanWindowMatchesOracle: fanin, fanout and fraud's fan-in with the
// mule, by each measure, over windows of time (out of order within
// lateness, late events), of operations, and of both: fed the same
// operations cut into pulls at random, and saved and restored from a
// checkpoint at random points, the monitors raise exactly the alerts of
// the oracle (a recount from scratch after every operation), each by the
// same operation, with the same value, evidence and totals, and their
// summaries agree with it.
func TestFanWindowMatchesOracle(t *testing.T) {
	volume.Mark(t)
	type variant struct {
		typ, measure string
		thr          float64
		win          views.Window
		mule         [2]int
		evidence     int
	}
	var vs []variant
	for _, win := range []views.Window{{Duration: 5 * time.Second, Lateness: 2 * time.Second}, {Edges: 25}, {Edges: 12, Duration: 4 * time.Second, Lateness: time.Second}} {
		small := 0.0 // a smaller window: lower thresholds
		if win.Edges == 12 {
			small = 1
		}
		vs = append(vs,
			variant{"fanin", "events", 6 - 2*small, win, [2]int{}, 4},
			variant{"fanin", "senders", 3 - small, win, [2]int{}, 0},
			variant{"fanin", "amount", 1500.5 - 500*small, win, [2]int{}, 3},
			variant{"fanout", "events", 4 - 2*small, win, [2]int{}, 5},
			variant{"fanout", "senders", 3 - small, win, [2]int{}, 2},
			variant{"fanout", "amount", 900 - 300*small, win, [2]int{}, 0},
		)
		if win.Duration > 0 {
			vs = append(vs, variant{"fraud", "senders", 4, win, [2]int{3, 2}, 3}, variant{"fraud", "amount", 2000, win, [2]int{2, 3}, 0})
		}
	}
	for i, v := range vs {
		t.Run(fmt.Sprintf("%s/%s/%+v/mule%v", v.typ, v.measure, v.win, v.mule), func(t *testing.T) {
			spec := Spec{Name: "m", Type: v.typ, Measure: v.measure, Threshold: v.thr, WindowEdges: v.win.Edges, WindowDuration: v.win.Duration,
				Lateness: v.win.Lateness, MuleSenders: v.mule[0], MuleReceivers: v.mule[1], Evidence: v.evidence}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(i), 42))
			es := fanStream(r, 700, v.win.Lateness)
			cfg := fanConfigOf(spec)
			or := newFanOracle(cfg)
			var want []string
			for _, e := range es {
				for _, a := range or.add(e) {
					want = append(want, fmt.Sprintf("r%d %s", e.Ref, a))
				}
			}
			kinds := map[string]int{}
			for _, w := range want {
				kinds[strings.Fields(w)[1]]++
			}
			t.Logf("%d alerts %v, %d late", len(want), kinds, or.late)
			if len(want) < 5 || v.win.Duration > 0 && or.late == 0 || cfg.mule() && kinds["mule"] == 0 {
				t.Fatalf("the stream raises %v alerts and %d late: it checks too little", kinds, or.late)
			}
			for run := range 4 {
				var got []string
				collect := func(al []Alert) {
					for _, a := range al {
						if a.Kind == "cycle" {
							continue
						}
						if a.Analytic != "m" {
							t.Fatalf("alert %+v: analytic", a)
						}
						got = append(got, fmt.Sprintf("r%d %s", a.Ref, gotKey(a)))
					}
				}
				var f *fan
				var w *fanWindow
				var consume func(b *views.StreamBatch)
				if v.typ == "fraud" {
					// The fraud monitor's window, driven as UpdatePrior drives it.
					w = newFanWindow(cfg)
					consume = func(b *views.StreamBatch) {
						var al []Alert
						for _, e := range b.Edges {
							n := len(al)
							al = w.add(e, al)
							for i := n; i < len(al); i++ {
								al[i].Analytic, al[i].Ref, al[i].EventTime = "m", e.Ref, e.Op.Time()
							}
						}
						collect(al)
					}
				} else {
					f = newFan(spec, collect)
					w = f.win
					consume = f.Consume
				}
				if run%2 == 0 { // sweeps often, and slabs made again at each free place (run 0) or often
					w.minCompact, w.compactRatio, w.idleMax = 0, run/2, 6
				}
				for k := 0; k < len(es); {
					n := 1 + r.IntN(1+run*30) // run 0: one at a time
					b := &views.StreamBatch{Edges: es[k:min(k+n, len(es))]}
					b.Seq = b.Edges[len(b.Edges)-1].Seq
					k += len(b.Edges)
					consume(b)
					if run%2 == 0 {
						checkWindowInvariants(t, w)
					}
					if run > 0 && r.IntN(8) == 0 { // a restart from a checkpoint here
						before := dumpWindow(w)
						nw := roundTripFan(t, w)
						if after := dumpWindow(nw); after != before {
							t.Fatalf("after %d operations, restored:\n%s\nthe running one:\n%s", k, after, before)
						}
						if f != nil {
							f.win = nw
						}
						w = nw
					}
				}
				if len(got) != len(want) {
					t.Fatalf("run %d: %d alerts, the oracle %d", run, len(got), len(want))
				}
				for j := range want {
					if got[j] != want[j] {
						t.Fatalf("run %d: alert %d:\n%s\nthe oracle's:\n%s", run, j, got[j], want[j])
					}
				}
				// The window agrees with the oracle's at the end.
				above, mules := 0, 0
				for v, x := range w.vs {
					if w.vflag[x]&vAbove != 0 {
						above++
						if w.above[v] != x || !or.above[v] {
							t.Fatalf("run %d: vertex %d above, not in the set of those above or not the oracle's", run, v)
						}
					}
					if w.vflag[x]&vMule != 0 {
						mules++
					}
				}
				if above != len(or.above) || len(w.above) != above || mules != len(or.mule) || w.mules != mules || w.win.Late() != uint64(or.late) {
					t.Fatalf("run %d: %d above (set %d), %d mules (counted %d), %d late; the oracle %d, %d, %d", run, above, len(w.above), mules, w.mules,
						w.win.Late(), len(or.above), len(or.mule), or.late)
				}
				if f != nil {
					s := f.Summary().(MonitorSummary)
					if s.Above != len(or.above) || s.Late != uint64(or.late) {
						t.Fatalf("run %d: summary %+v; the oracle %d above, %d late", run, s, len(or.above), or.late)
					}
					for _, tv := range s.Top {
						if val, _ := or.measure(tv.Vertex); val != tv.Value || !or.above[tv.Vertex] {
							t.Fatalf("run %d: top %+v; the oracle's measure %v", run, tv, val)
						}
					}
				}
				checkWindowInvariants(t, w)
			}
		})
	}
}

// checkWindowInvariants checks what fanWindow's INVARIANT says that can
// be counted.
func checkWindowInvariants(t *testing.T, w *fanWindow) {
	t.Helper()
	items, peers, comps, pay, idle, exts := 0, 0, 0, int64(0), 0, 0
	held := make([]bool, len(w.its))
	for _, i := range w.win.Items() {
		if i <= 0 || int(i) >= len(w.its) || held[i] {
			t.Fatalf("the window holds item place %d (of %d) or twice", i, len(w.its))
		}
		held[i] = true
		it := &w.its[i]
		if it.has(itemGone) {
			t.Fatalf("item %+v held, marked gone", *it)
		}
		if !it.has(itemUpsert) {
			if it.vin != 0 || it.vout != 0 || it.eventRef != "" || it.props != "" {
				t.Fatalf("item %+v, not an upsert, in lists or with a payload", *it)
			}
			continue
		}
		items++
		if it.has(itemNewIn | itemNewOut) {
			pay += int64(len(it.eventRef) + len(it.props))
		} else if it.eventRef != "" || it.props != "" {
			t.Fatalf("item %+v keeps a payload, newest nowhere", *it)
		}
		if (it.vin != 0) != w.cfg.in || (it.vout != 0) != w.cfg.out {
			t.Fatalf("item %+v: vertices %d, %d for sides in %v, out %v", *it, it.vin, it.vout, w.cfg.in, w.cfg.out)
		}
		if it.vin != 0 && w.vid[it.vin] != it.dst || it.vout != 0 && w.vid[it.vout] != it.src {
			t.Fatalf("item %+v: its vertices %d, %d are not its endpoints", *it, it.vin, it.vout)
		}
	}
	// Every place of the item slab is held or free, not both, and a free
	// one is empty.
	free := make([]bool, len(w.its))
	for _, i := range w.ifree {
		if i <= 0 || int(i) >= len(w.its) || held[i] || free[i] || w.its[i] != (fanItem{}) {
			t.Fatalf("free item place %d (of %d): held, twice, or not empty", i, len(w.its))
		}
		free[i] = true
	}
	if len(w.ifree)+w.win.Len()+1 != len(w.its) || w.its[0] != (fanItem{}) {
		t.Fatalf("item slab of %d: %d free, %d held, place 0 %+v", len(w.its), len(w.ifree), w.win.Len(), w.its[0])
	}
	// Likewise the vertex slab: each place in vs or free.
	nv := len(w.vid)
	if len(w.vflag) != nv || w.cfg.in != (len(w.vin) == nv) || w.cfg.out != (len(w.vout) == nv) || (w.cfg.in && w.cfg.out) != (len(w.vloops) == nv) {
		t.Fatalf("vertex slabs of %d, %d, %d, %d, %d", nv, len(w.vflag), len(w.vin), len(w.vout), len(w.vloops))
	}
	inVs := make([]bool, nv)
	for v, x := range w.vs {
		if x <= 0 || int(x) >= nv || inVs[x] || w.vid[x] != v {
			t.Fatalf("vertex %d at place %d (of %d): twice or its id %d", v, x, nv, w.vid[x])
		}
		inVs[x] = true
	}
	for _, x := range w.vfree {
		if x <= 0 || int(x) >= nv || inVs[x] || w.vid[x] != 0 || w.vflag[x] != 0 {
			t.Fatalf("free vertex place %d: in vs, or not empty", x)
		}
		inVs[x] = true
	}
	if len(w.vs)+len(w.vfree)+1 != nv {
		t.Fatalf("vertex slab of %d: %d vertices, %d free", nv, len(w.vs), len(w.vfree))
	}
	for v, x := range w.vs {
		f := w.vflag[x]
		if f&vTouched != 0 {
			t.Fatalf("vertex %d: touched between adds", v)
		}
		if empty := w.empty(x) && f&(vAbove|vMule) == 0; (f&vIdle != 0) != empty {
			t.Fatalf("vertex %d: idle %v, lists empty and no flag %v", v, f&vIdle != 0, empty)
		}
		if f&vIdle != 0 {
			idle++
		}
		if (f&vAbove != 0) != (w.above[v] == x && w.above[v] != 0) {
			t.Fatalf("vertex %d: above flag %v, in the set of those above at %d", v, f&vAbove != 0, w.above[v])
		}
		loops := 0
		for j, in := range []bool{true, false} {
			if in && !w.cfg.in || !in && !w.cfg.out {
				continue
			}
			s := w.side(x, in)
			flag := uint8(itemNewIn)
			if j == 1 {
				flag = itemNewOut
			}
			distinct := map[uint64]int32{}
			var list []int32
			prev := int32(0)
			for i := s.first; i != 0; i = w.link(i, in).next {
				if !held[i] || i != s.first && w.link(i, in).prev != prev || len(list) > w.win.Len() {
					t.Fatalf("vertex %d: item %d in its list, held %v, linked from %d not %d", v, i, held[i], w.link(i, in).prev, prev)
				}
				list = append(list, i)
				prev = i
			}
			if s.last != prev || int(s.n) != len(list) {
				t.Fatalf("vertex %d: a list of %d ending at %d; the side says %d ending at %d", v, len(list), prev, s.n, s.last)
			}
			wantMark := int32(0)
			if n := len(list); n > 0 {
				wantMark = list[max(0, n-w.cfg.evidence)]
			}
			if s.mark != wantMark {
				t.Fatalf("vertex %d: mark %d, the oldest of the newest is %d", v, s.mark, wantMark)
			}
			for k, i := range list {
				it := &w.its[i]
				if newest := k >= len(list)-w.cfg.evidence; it.has(flag) != newest {
					t.Fatalf("vertex %d: item %d of %d marked newest %v", v, k, len(list), it.has(flag))
				}
				peer, home := it.src, it.vin
				if j == 1 {
					peer, home = it.dst, it.vout
				}
				if home != x {
					t.Fatalf("vertex %d: item %+v held, its vertex %d", v, *it, home)
				}
				if j == 1 && it.src == it.dst && w.cfg.in {
					loops++
				}
				distinct[peer]++
				if k > 0 && !w.before(&w.its[list[k-1]], it) {
					t.Fatalf("vertex %d: its list out of order", v)
				}
			}
			var pm map[uint64]int32
			if s.ext != nil {
				exts++
				pm = s.ext.peers
				if pm == nil && s.nsum >= 0 {
					t.Fatalf("vertex %d: an empty ext", v)
				}
			}
			if int(s.npeers) != len(distinct) || (pm != nil) != (len(list) > smallSide) || pm != nil && !maps.Equal(pm, distinct) {
				t.Fatalf("vertex %d: %d peers counted (map %v), held %v", v, s.npeers, pm, distinct)
			}
			peers += len(pm)
			var seen uint64
			for _, i := range list {
				if pm == nil {
					seen += 1 << (4 * peerBucket(w.sidePeer(i, in)))
				}
			}
			if s.seen != seen {
				t.Fatalf("vertex %d: seen %#x, its items' buckets %#x", v, s.seen, seen)
			}
			if s.nsum < 0 {
				if len(s.ext.sum) <= sumInline {
					t.Fatalf("vertex %d: a sum of %d components in its ext", v, len(s.ext.sum))
				}
				comps += len(s.ext.sum)
			} else if s.nsum > sumInline {
				t.Fatalf("vertex %d: %d components in place", v, s.nsum)
			}
			var exact xsum
			for _, i := range list {
				exact = exact.add(clampAmount(w.its[i].amount))
			}
			diff := slices.Clone(s.sumOf())
			for _, c := range exact {
				diff = diff.add(-c)
			}
			if diff.sign() != 0 {
				t.Fatalf("vertex %d: sum %v, its items sum to %v", v, s.sumOf(), exact)
			}
			if len(list) == 0 && (len(s.sumOf()) != 0 || s.ext != nil || s.npeers != 0) {
				t.Fatalf("vertex %d: an empty list with sum %v, ext %v and %d peers", v, s.sumOf(), s.ext, s.npeers)
			}
		}
		if w.vloops != nil && int(w.vloops[x]) != loops {
			t.Fatalf("vertex %d: %d self-loops counted, %d held", v, w.vloops[x], loops)
		}
	}
	if idle != w.idle || w.idle > w.idleMax && w.idle > 2*(len(w.vs)-w.idle) {
		t.Fatalf("%d idle vertices of %d, the window counts %d", idle, len(w.vs), w.idle)
	}
	if items != w.items || peers != w.peers || comps != w.comps || pay != w.payBytes || exts != w.exts {
		t.Fatalf("counted %d items, %d peers, %d components, %d payload bytes, %d exts; the window says %d, %d, %d, %d, %d", items, peers, comps, pay,
			exts, w.items, w.peers, w.comps, w.payBytes, w.exts)
	}
}

// TestXsumIsExact: sums of amounts added and taken away in random orders
// compare with thresholds and round exactly as the exact rational sum
// does, and come back to exactly zero once all are taken away.
func TestXsumIsExact(t *testing.T) {
	volume.Mark(t)
	r := rand.New(rand.NewPCG(3, 3))
	for round := range 300 {
		var vals []float64
		for range 1 + r.IntN(60) {
			var v float64
			switch r.IntN(4) {
			case 0:
				v = float64(r.IntN(1_000_000)) / 100
			case 1:
				v = r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
			case 2:
				v = math.Ldexp(1, r.IntN(300)-150)
			default:
				v = maxAmount * (r.Float64() - 0.5)
			}
			vals = append(vals, v)
		}
		var x xsum
		want := new(big.Rat)
		held := map[int]bool{}
		for range 4 * len(vals) {
			i := r.IntN(len(vals))
			if held[i] {
				x = x.add(-vals[i])
				want.Sub(want, new(big.Rat).SetFloat64(vals[i]))
			} else {
				x = x.add(vals[i])
				want.Add(want, new(big.Rat).SetFloat64(vals[i]))
			}
			held[i] = !held[i]
			f, _ := want.Float64()
			if got := x.value(); got != f {
				t.Fatalf("round %d: sum %v, exactly %v (%s)", round, got, f, want.FloatString(30))
			}
			for _, thr := range []float64{f, math.Nextafter(f, math.Inf(1)), math.Nextafter(f, math.Inf(-1)), 0, 1500.5} {
				if got, w := x.above(thr), want.Cmp(new(big.Rat).SetFloat64(thr)) > 0; got != w {
					t.Fatalf("round %d: above(%v) = %v, exactly %v", round, thr, got, w)
				}
			}
			if len(x) > 64 {
				t.Fatalf("round %d: %d components", round, len(x))
			}
		}
		for i := range vals {
			if held[i] {
				x = x.add(-vals[i])
			}
		}
		if len(x) != 0 {
			t.Fatalf("round %d: everything taken away leaves %v", round, x)
		}
	}
}

// alertSink keeps every alert published.
type alertSink struct {
	mu  sync.Mutex
	got []Alert
}

func (s *alertSink) Publish(al []Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, al...)
}

func (s *alertSink) of(analytic string) []Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Alert
	for _, a := range s.got {
		if a.Analytic == analytic {
			out = append(out, a)
		}
	}
	return out
}

// TestFanMeasuresMoneyAndSenders is the finding, through the
// registry over a store: one sender paying a vertex 200 times and 200
// senders paying another once each raise the same fan-in by events, but
// only the second by senders; 5 senders moving 90,000 raise a fan-in by
// amount at 50,000, where 200 payments of 1 do not; and the fraud
// monitor's mule (money in from 3 senders, out to 2 receivers within the
// window) is raised by the payment that completes it. Each alert carries
// the window's events of its vertex (their references and properties)
// and their totals.
func TestFanMeasuresMoneyAndSenders(t *testing.T) {
	h := newHarness(t, 1, false, denseIDs)
	sink := &alertSink{}
	r := NewRegistry(h.m, RegistryConfig{Sinks: []AlertSink{sink}})
	defer r.Close()
	specs := []Spec{
		{Name: "events", Type: "fanin", Threshold: 199, WindowDuration: time.Hour},
		{Name: "senders", Type: "fanin", Measure: "senders", Threshold: 199, WindowDuration: time.Hour},
		{Name: "amount", Type: "fanin", Measure: "amount", Threshold: 50000, WindowDuration: time.Hour},
		{Name: "out", Type: "fanout", Measure: "senders", Threshold: 1, WindowDuration: time.Hour, Evidence: 1},
		{Name: "fraud", Type: "fraud", Threshold: 1e6, WindowDuration: time.Hour, MuleSenders: 3, MuleReceivers: 2},
	}
	var names []string
	for _, s := range specs {
		got, err := r.Register(s)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, got.Name)
		if got.Measure == "" || got.Evidence == 0 {
			t.Errorf("registered %+v: the defaults of measure and evidence are not filled", got)
		}
	}
	at := int64(1_800_000_000_000_000)
	n := 0
	pay := func(b *engine.Batch, src, dst uint64, amount float64) {
		n++
		b.Tag(uint64(n))
		b.InsertWeighted(src, dst, amount)
		b.SetEventTime(at + int64(n)*1000)
		b.SetPayload(fmt.Sprintf("e-%d", n), fmt.Appendf(nil, `{"currency":"EUR","n":%d}`, n))
	}
	const one, many, big5, mule = 1, 2, 3, 4
	var b engine.Batch
	for range 200 {
		pay(&b, 10, one, 1) // one sender, 200 times
	}
	for i := range 200 {
		pay(&b, uint64(1000+i), many, 1) // 200 senders, once each
	}
	for i := range 5 {
		pay(&b, uint64(20+i), big5, 18000) // 5 senders, 90,000
	}
	if _, err := h.s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	b = engine.Batch{}
	pay(&b, 30, mule, 900)
	pay(&b, 31, mule, 900)
	pay(&b, mule, 40, 850) // out to one
	pay(&b, 32, mule, 900) // in from three: not yet a mule
	pay(&b, mule, 41, 850) // out to two: a mule
	pay(&b, mule, 41, 10)  // still one
	if _, err := h.s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	waitAllAt(t, r, names, lastSeq(t, h.s))

	summary := func(a Alert) string {
		var ev []string
		for _, e := range a.Evidence {
			ev = append(ev, fmt.Sprintf("%s:%d>%d:%v:%s", e.EventRef, e.Src, e.Dst, e.Amount, e.Props))
			if e.OpRef == 0 || e.EventTime.IsZero() {
				t.Errorf("evidence %+v: no reference or event time", e)
			}
		}
		tot := a.Totals
		if tot == nil {
			tot = &AlertTotals{}
		}
		return fmt.Sprintf("%s %d %v by %d: %d events (+%d) %v from %d %v to %d; evidence %v", a.Kind, a.Vertex, a.Value, a.Ref, tot.Events,
			a.EvidenceDropped, tot.Amount, tot.Counterparties, tot.AmountOut, tot.Receivers, ev)
	}
	check := func(name string, want ...string) {
		t.Helper()
		got := sink.of(name)
		var gs []string
		for _, a := range got {
			gs = append(gs, summary(a))
		}
		if fmt.Sprint(gs) != fmt.Sprint(want) {
			t.Errorf("%s raised:\n%s\nwant:\n%s", name, strings.Join(gs, "\n"), strings.Join(want, "\n"))
		}
	}
	evs := func(from, to int, src func(int) uint64, dst uint64, amount float64) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("e-%d:%d>%d:%v:{\"currency\":\"EUR\",\"n\":%d}", i, src(i), dst, amount, i))
		}
		return out
	}
	// The events measure cannot tell them apart; its evidence is the
	// newest 32 of the 200.
	check("events",
		fmt.Sprintf("fan_in 1 200 by 200: 200 events (+168) 200 from 1 0 to 0; evidence %v", evs(169, 200, func(int) uint64 { return 10 }, one, 1)),
		fmt.Sprintf("fan_in 2 200 by 400: 200 events (+168) 200 from 200 0 to 0; evidence %v", evs(369, 400, func(i int) uint64 { return uint64(1000 + i - 201) }, many, 1)))
	check("senders",
		fmt.Sprintf("fan_in 2 200 by 400: 200 events (+168) 200 from 200 0 to 0; evidence %v", evs(369, 400, func(i int) uint64 { return uint64(1000 + i - 201) }, many, 1)))
	check("amount",
		fmt.Sprintf("fan_in 3 54000 by 403: 3 events (+0) 54000 from 3 0 to 0; evidence %v", evs(401, 403, func(i int) uint64 { return uint64(20 + i - 401) }, big5, 18000)))
	check("out",
		`fan_out 4 2 by 410: 2 events (+1) 1700 from 2 0 to 0; evidence [e-410:4>41:850:{"currency":"EUR","n":410}]`)
	var fraudMules []Alert
	for _, a := range sink.of("fraud") {
		if a.Kind == "mule" {
			fraudMules = append(fraudMules, a)
		}
	}
	var fs []string
	for _, a := range fraudMules {
		fs = append(fs, summary(a))
	}
	want := `[mule 4 3 by 410: 5 events (+0) 2700 from 3 1700 to 2; evidence [e-406:30>4:900:{"currency":"EUR","n":406} e-407:31>4:900:{"currency":"EUR","n":407} e-408:4>40:850:{"currency":"EUR","n":408} e-409:32>4:900:{"currency":"EUR","n":409} e-410:4>41:850:{"currency":"EUR","n":410}]]`
	if fmt.Sprint(fs) != want {
		t.Errorf("fraud raised mules:\n%v\nwant:\n%s", fs, want)
	}
	if s := mustSummary(t, r, "fraud").(FraudSummary); s.Mules != 1 {
		t.Errorf("fraud summary: %+v, want 1 mule", s)
	}
}

func mustSummary(t *testing.T, r *Registry, name string) any {
	t.Helper()
	res, err := r.Result(name)
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary
}

// TestFanWindowLoadRefusesBadState: a fan window's checkpoint state whose
// checksums hold but whose content does not make a window (values that
// do not line up, payload offsets out of their bytes, an amount that is
// not a number, a type out of range, a duration window out of time order,
// operations that do not fit one window, vertices listed above the
// threshold or as mules that are not, or not listed when they are) is
// refused naming the problem and the file's offset, and nothing is built.
func TestFanWindowLoadRefusesBadState(t *testing.T) {
	spec := Spec{Type: "fraud", Measure: "senders", Threshold: 2, WindowDuration: 10 * time.Second, WindowEdges: 30, MuleSenders: 2, MuleReceivers: 1, Evidence: 2}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	w := newFanWindow(fanConfigOf(spec))
	up := func(src, dst uint64, us int64) views.Edge {
		return views.Edge{Seq: 1, Ref: uint64(us), Op: engine.Op{Src: src, Dst: dst, Weight: 2.5, Kind: engine.OpUpsert, EventTime: us, EventRef: fmt.Sprint("e", us), Props: `{"a":1}`}}
	}
	var al []Alert
	for i, e := range []views.Edge{up(1, 9, 1_000_000), up(2, 9, 2_000_000), up(3, 9, 3_000_000), up(9, 4, 3_500_000), up(5, 6, 4_000_000)} {
		al = w.add(e, al)
		if i == 3 && len(al) != 2 {
			t.Fatalf("alerts %+v: want a fan-in and a mule of 9", al)
		}
	}
	good := w.state()
	if len(good.above) != 1 || len(good.mules) != 1 {
		t.Fatalf("state %+v: want 9 above and a mule", good)
	}
	clone := func() fanState {
		st := good
		st.times, st.srcs, st.dsts, st.amounts = slices.Clone(st.times), slices.Clone(st.srcs), slices.Clone(st.dsts), slices.Clone(st.amounts)
		st.seqs, st.refs, st.tf, st.offs, st.pay = slices.Clone(st.seqs), slices.Clone(st.refs), slices.Clone(st.tf), slices.Clone(st.offs), slices.Clone(st.pay)
		st.above, st.mules = slices.Clone(st.above), slices.Clone(st.mules)
		return st
	}
	load := func(st fanState) (*fanWindow, error) {
		return loadFanSection(t, w, st.encode)
	}
	if got, err := load(clone()); err != nil || dumpWindow(got) != dumpWindow(w) {
		t.Fatalf("the good state: %v", err)
	}
	for _, c := range []struct {
		name, want string
		bad        func(st *fanState)
	}{
		{"a value short", "operations with", func(st *fanState) { st.srcs = st.srcs[1:] }},
		{"too many", "at most 30", func(st *fanState) {
			for range 30 {
				st.times, st.srcs, st.dsts, st.amounts = append(st.times, st.times[4]), append(st.srcs, 5), append(st.dsts, 6), append(st.amounts, 1)
				st.seqs, st.refs, st.tf = append(st.seqs, 1), append(st.refs, 1), append(st.tf, 1<<16)
				st.offs = append(st.offs, st.offs[len(st.offs)-1], st.offs[len(st.offs)-1])
			}
		}},
		{"offsets past the bytes", "payload offsets", func(st *fanState) { st.offs[len(st.offs)-1]++ }},
		{"offsets backwards", "payload at", func(st *fanState) { st.offs[1], st.offs[2] = st.offs[2], st.offs[1] }},
		{"NaN", "amount NaN", func(st *fanState) { st.amounts[2] = math.NaN() }},
		{"a type", "type 5000", func(st *fanState) { st.tf[0] = 5000 | 1<<16 }},
		{"a flag", "flags", func(st *fanState) { st.tf[0] |= 1 << 30 }},
		{"out of time order", "out of time order", func(st *fanState) { st.times[1], st.times[2] = st.times[2], st.times[1] }},
		{"not one window", "do not fit one window", func(st *fanState) { st.times[0] -= 20_000_000 }},
		{"above, not", "not above it", func(st *fanState) { st.above = []uint64{4} }},
		{"above, unlisted", "not listed so", func(st *fanState) { st.above = nil }},
		{"a mule, not", "not one", func(st *fanState) { st.mules = []uint64{6} }},
		{"a mule, unlisted", "not listed so", func(st *fanState) { st.mules = nil }},
		{"a payload without an upsert", "without an upsert", func(st *fanState) { st.tf[0] &^= itemUpsert << 16 }},
	} {
		st := clone()
		c.bad(&st)
		got, err := load(st)
		var ce *checkpoint.CorruptError
		if got != nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: loaded %v, %v; want a corrupt checkpoint saying %q", c.name, got != nil, err, c.want)
		}
	}
}

// BenchmarkFanWindow is the cost of one operation taken into a fan window
// of an hour of event time holding about 100,000 payments among 20,000
// accounts, by measure, and with the mule pattern.
func BenchmarkFanWindow(b *testing.B) {
	for _, c := range []struct {
		name string
		spec Spec
	}{
		{"events", Spec{Type: "fanin", Threshold: 50}},
		{"senders", Spec{Type: "fanin", Measure: "senders", Threshold: 50}},
		{"amount", Spec{Type: "fanin", Measure: "amount", Threshold: 1e6}},
		{"mule", Spec{Type: "fraud", Measure: "amount", Threshold: 1e6, MuleSenders: 5, MuleReceivers: 5}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.spec.WindowDuration, c.spec.Lateness = time.Hour, time.Minute
			if err := c.spec.Validate(); err != nil {
				b.Fatal(err)
			}
			w := newFanWindow(fanConfigOf(c.spec))
			r := rand.New(rand.NewPCG(1, 2))
			// 100,000 an hour: one every 36 ms, up to a minute late.
			next := func(i int) views.Edge {
				t := int64(1_800_000_000_000_000) + int64(i)*36_000 - r.Int64N(60_000_000)
				return views.Edge{Seq: uint64(i), Ref: uint64(i), Op: engine.Op{Src: r.Uint64N(20000), Dst: r.Uint64N(20000),
					Weight: float64(r.IntN(1_000_000)) / 100, Kind: engine.OpUpsert, EventTime: t, EventRef: "p-1", Props: `{"currency":"EUR"}`}}
			}
			i := 0
			for ; i < 200_000; i++ {
				w.add(next(i), nil)
			}
			b.ResetTimer()
			for range b.N {
				w.add(next(i), nil)
				i++
			}
			b.StopTimer()
			b.ReportMetric(float64(w.bytes())/float64(w.win.Len()), "bytes/event-held")
		})
	}
}

// TestFanWindowPayloadBound: with a bound of the payloads kept far below
// what the newest events of every vertex hold, the window never keeps
// more, an alert's evidence has each event's own payload or none, and a
// window restored from a checkpoint goes on raising exactly what the
// running one raises.
func TestFanWindowPayloadBound(t *testing.T) {
	spec := Spec{Type: "fraud", Measure: "amount", Threshold: 1500, WindowDuration: 5 * time.Second, Lateness: 2 * time.Second, MuleSenders: 2, MuleReceivers: 2, Evidence: 6}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	es := fanStream(r, 1500, spec.Lateness)
	payloads := map[uint64][2]string{}
	for _, e := range es {
		payloads[e.Ref] = [2]string{e.Op.EventRef, e.Op.Props}
	}
	const bound = 300
	w := newFanWindow(fanConfigOf(spec))
	w.maxPay = bound
	var restored *fanWindow
	kept, without := 0, 0
	for k, e := range es {
		al := w.add(e, nil)
		if w.payBytes > bound {
			t.Fatalf("after %d operations, %d payload bytes kept", k+1, w.payBytes)
		}
		for _, a := range al {
			for _, ev := range a.Evidence {
				switch p := payloads[ev.OpRef]; {
				case ev.EventRef == "" && ev.Props == "":
					without++
				case ev.EventRef == p[0] && ev.Props == p[1]:
					kept++
				default:
					t.Fatalf("evidence %+v: not its event's payload %q", ev, p)
				}
			}
		}
		if restored != nil {
			keys := func(al []Alert) (out []string) {
				for _, a := range al {
					out = append(out, gotKey(a))
				}
				return out
			}
			if got := restored.add(e, nil); fmt.Sprint(keys(got)) != fmt.Sprint(keys(al)) {
				t.Fatalf("after %d operations, the restored window raised %v, the running one %v", k+1, keys(got), keys(al))
			}
		}
		if k == len(es)/2 {
			checkWindowInvariants(t, w)
			restored = roundTripFan(t, w)
			if restored.maxPay != bound || dumpWindow(restored) != dumpWindow(w) {
				t.Fatal("the restored window differs")
			}
		}
	}
	checkWindowInvariants(t, w)
	t.Logf("evidence: %d events with their payload, %d without", kept, without)
	if kept == 0 || without == 0 {
		t.Fatal("the bound was never reached, or nothing was kept: the test checks too little")
	}
}

// TestFanWindowGivesBackABurst: a window that held a burst of operations
// on many vertices, and then holds a few, keeps slabs (items and
// vertices) of about the few, not of the burst: its memory follows what
// it holds.
func TestFanWindowGivesBackABurst(t *testing.T) {
	spec := Spec{Type: "fraud", Measure: "senders", Threshold: 50, WindowDuration: time.Second, MuleSenders: 3, MuleReceivers: 3}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	w := newFanWindow(fanConfigOf(spec))
	up := func(src, dst uint64, us int64) views.Edge {
		return views.Edge{Seq: 1, Op: engine.Op{Src: src, Dst: dst, Weight: 1, Kind: engine.OpUpsert, EventTime: us}}
	}
	const burst = 40_000
	for i := range burst {
		w.add(up(uint64(2*i), uint64(2*i+1), 1_000_000), nil)
	}
	if len(w.its) < burst || len(w.vid) < 2*burst {
		t.Fatalf("the burst is held in %d items and %d vertices", len(w.its), len(w.vid))
	}
	peak := w.bytes()
	// Then 10 operations a second, among 20 vertices, for a minute.
	for i := range 600 {
		w.add(up(uint64(i%20), uint64((i+7)%20), 3_000_000+int64(i)*100_000), nil)
	}
	checkWindowInvariants(t, w)
	if w.win.Len() > 20 || len(w.its) > 100 || len(w.vid) > 100 || w.bytes() > peak/10 {
		t.Fatalf("holding %d operations of %d vertices: slabs of %d items and %d vertices, %d bytes (%d at the burst)",
			w.win.Len(), len(w.vs), len(w.its), len(w.vid), w.bytes(), peak)
	}
}
