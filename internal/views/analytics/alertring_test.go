package analytics

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// memHistory is an AlertHistory in memory: what a restart reads back.
type memHistory struct {
	alerts []Alert
	syncs  int
}

func (h *memHistory) Alerts() ([]Alert, uint64, map[string]uint64, error) {
	by := map[string]uint64{}
	for _, a := range h.alerts {
		by[a.Analytic]++
	}
	return append([]Alert(nil), h.alerts...), uint64(len(h.alerts)), by, nil
}

func (h *memHistory) Append(al []Alert) error {
	h.alerts = append(h.alerts, al...)
	return nil
}

func (h *memHistory) Sync() error { h.syncs++; return nil }

// recordingSink keeps what it was published.
type recordingSink struct{ got []string }

func (s *recordingSink) Publish(al []Alert) {
	for _, a := range al {
		s.got = append(s.got, a.ID)
	}
}

// A registry with a history keeps each alert once across a restart: the
// restarted one starts from the history (the newest alerts and every
// count), an alert raised again by the replay (its ID in the ring) is not
// kept again but still reaches the sinks, and new ones are kept and go to
// the history. Against a model: the list of distinct alerts in order.
func TestAlertsKeptOnceAcrossARestart(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, ring := range []int{5, 40} {
		h := &memHistory{}
		var model []string // the distinct alerts, in the order first raised
		seen := map[string]bool{}
		next := 0
		for run := 0; run < 5; run++ {
			sink := &recordingSink{}
			reg := NewRegistry(nil, RegistryConfig{AlertRing: ring, History: h, Sinks: []AlertSink{sink}})
			// The replay: some of the newest alerts of the run before
			// raised again (the same triggers), then new ones.
			back := r.IntN(min(len(model), ring) + 1)
			raised := append([]string(nil), model[len(model)-back:]...)
			for range r.IntN(12) {
				raised = append(raised, fmt.Sprintf("a%d", next))
				next++
			}
			for i := 0; i < len(raised); {
				n := 1 + r.IntN(3)
				var al []Alert
				for _, id := range raised[i:min(i+n, len(raised))] {
					al = append(al, Alert{Analytic: "m", Kind: "fan_in", Seq: uint64(len(id)), Source: &AlertSource{Topic: id}})
				}
				reg.raise("m", al)
				i += n
			}
			for _, id := range raised {
				if !seen[id] {
					seen[id] = true
					model = append(model, id)
				}
			}
			// Every raised alert reached the sink, replays included.
			if len(sink.got) != len(raised) {
				t.Fatalf("ring %d run %d: the sink got %d of %d alerts", ring, run, len(sink.got), len(raised))
			}
			got, total := reg.Alerts("", 1<<20)
			if total != uint64(len(model)) {
				t.Fatalf("ring %d run %d: total %d, want %d distinct", ring, run, total, len(model))
			}
			var gotIDs []string
			for _, a := range got {
				gotIDs = append(gotIDs, a.Source.Topic)
			}
			want := model[max(0, len(model)-ring):]
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(gotIDs, want) {
				t.Fatalf("ring %d run %d: alerts %v, want %v", ring, run, gotIDs, want)
			}
			if _, n := reg.Alerts("m", 1); n != uint64(len(model)) {
				t.Fatalf("ring %d run %d: total of m %d, want %d", ring, run, n, len(model))
			}
			if len(h.alerts) != len(model) {
				t.Fatalf("ring %d run %d: the history holds %d alerts, want %d", ring, run, len(h.alerts), len(model))
			}
			reg.Close()
		}
	}
}

// The alerts kept for reading hold at most their bytes (but the newest):
// against a model, the ring lists the longest run of the newest alerts
// (at most its size) within the bound, oldest first, counts every alert,
// and lets go of the others (their slots hold nothing), across a seed
// from a history too.
func TestAlertRingKeepsItsBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	mk := func(i int) Alert {
		a := Alert{Analytic: "m", ID: fmt.Sprint("a", i), VertexID: fmt.Sprint(i)}
		for range r.IntN(30) {
			a.Evidence = append(a.Evidence, Evidence{SrcKey: fmt.Sprint(r.IntN(1e6)), Props: `{"p":"` + string(make([]byte, r.IntN(64))) + `"}`})
		}
		return a
	}
	for _, size := range []int{1, 7, 50} {
		var all []Alert
		for i := range 40 {
			all = append(all, mk(i))
		}
		bound := int64(0)
		for i := range 4 {
			bound += alertBytes(&all[i])
		}
		g := newAlertRing(size, bound)
		check := func(step int) {
			t.Helper()
			// The model: the newest alerts, as many as fit (one at least).
			var want []string
			var b int64
			for i := len(all) - 1; i >= 0 && len(want) < size; i-- {
				if len(want) > 0 && b+alertBytes(&all[i]) > bound {
					break
				}
				b += alertBytes(&all[i])
				want = append([]string{all[i].ID}, want...)
			}
			got, total := g.newest("", 1000)
			var ids []string
			for _, a := range got {
				ids = append(ids, a.ID)
			}
			if !reflect.DeepEqual(ids, want) || total != uint64(len(all)) || g.bytes != b {
				t.Fatalf("size %d, step %d: the ring lists %v (total %d, %d bytes), want %v (total %d, %d bytes)", size, step, ids, total, g.bytes, want, len(all), b)
			}
			held := 0
			for i := range g.buf {
				if g.buf[i].ID != "" {
					held++
				}
			}
			if held != len(want) {
				t.Fatalf("size %d, step %d: %d slots hold an alert, %d are listed", size, step, held, len(want))
			}
		}
		g.seed(all, uint64(len(all)), map[string]uint64{"m": uint64(len(all))})
		check(0)
		for step := 1; step < 60; step++ {
			a := mk(len(all))
			all = append(all, a)
			g.add(a)
			check(step)
		}
	}
}
