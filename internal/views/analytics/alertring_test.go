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
