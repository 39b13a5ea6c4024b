package analytics

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSettingsBounds: every bounded setting is accepted at each end of its
// documented range and refused just beyond it, with a message naming the
// setting and the range.
func TestSettingsBounds(t *testing.T) {
	base := map[string]Spec{
		"pagerank": {Type: "pagerank"},
		"fanin":    {Type: "fanin", Threshold: 1},
		"fraud":    {Type: "fraud", Threshold: 1},
		"timed":    {Type: "fanout", Threshold: 1, WindowDuration: time.Minute},
		"bfs":      {Type: "bfs", Root: "1"},
	}
	type bound struct {
		typ, key string
		set      func(*Spec, float64)
		ok, bad  []float64
		want     string // in the refusal
	}
	i := func(f func(*Spec) *int) func(*Spec, float64) { return func(s *Spec, v float64) { *f(s) = int(v) } }
	d := func(f func(*Spec) *time.Duration) func(*Spec, float64) {
		return func(s *Spec, v float64) { *f(s) = time.Duration(v) }
	}
	for _, b := range []bound{
		{"bfs", "batch_size", i(func(s *Spec) *int { return &s.BatchSize }), []float64{1, MaxBatchSize}, []float64{-1, MaxBatchSize + 1}, "allowed 1..1000000"},
		{"bfs", "interval", d(func(s *Spec) *time.Duration { return &s.Interval }), []float64{0, float64(MaxInterval)}, []float64{-1, float64(MaxInterval + 1)}, "allowed 0s..1h0m0s"},
		{"bfs", "max_behind", i(func(s *Spec) *int { return &s.MaxBehind }), []float64{1, MaxMaxBehind}, []float64{-1, MaxMaxBehind + 1}, "allowed 1..4194304"},
		{"pagerank", "tolerance", func(s *Spec, v float64) { s.Tolerance = v }, []float64{MinTolerance, MaxTolerance}, []float64{1e-300, 1.5, -1}, "allowed 1e-15..1"},
		{"pagerank", "damping", func(s *Spec, v float64) { s.Damping = v }, []float64{0.01, 0.99}, []float64{1, -0.5}, "allowed (0, 1)"},
		{"pagerank", "max_iterations", i(func(s *Spec) *int { return &s.MaxIterations }), []float64{1, MaxMaxIterations}, []float64{-1, 1e9}, "allowed 1..10000"},
		{"fanin", "threshold", func(s *Spec, v float64) { s.Threshold = v }, []float64{1e-9, MaxThreshold}, []float64{-1, MaxThreshold * 10}, "needs one in (0, 1e+15]"},
		{"fanin", "window_edges", i(func(s *Spec) *int { return &s.WindowEdges }), []float64{1, MaxWindowEdges}, []float64{-1, MaxWindowEdges + 1}, "allowed 0..16777216"},
		{"fanin", "window", d(func(s *Spec) *time.Duration { return &s.WindowDuration }), []float64{1, float64(MaxWindow)}, []float64{float64(1_000_000 * time.Hour)}, "allowed 0s..168h0m0s"},
		{"timed", "lateness", d(func(s *Spec) *time.Duration { return &s.Lateness }), []float64{0, float64(MaxWindow)}, []float64{-1, float64(MaxWindow + 1)}, "allowed 0s..168h0m0s"},
		{"fraud", "max_cycle", i(func(s *Spec) *int { return &s.MaxCycle }), []float64{1, MaxMaxCycle}, []float64{-1, 9}, "allowed 1..8"},
		{"fraud", "search_budget", i(func(s *Spec) *int { return &s.SearchBudget }), []float64{1, MaxSearchBudget}, []float64{-1, MaxSearchBudget + 1}, "allowed 1..10000000"},
		{"fraud", "pull_timeout", d(func(s *Spec) *time.Duration { return &s.PullTimeout }), []float64{float64(MinPullTimeout), float64(MaxPullTimeout)}, []float64{float64(time.Millisecond), float64(time.Hour)}, "allowed 10ms..1m0s"},
		{"fraud", "pull_memory_mib", i(func(s *Spec) *int { return &s.PullMemoryMiB }), []float64{1, MaxPullMemoryMiB}, []float64{-1, MaxPullMemoryMiB + 1}, "allowed 1..4096"},
	} {
		for _, v := range b.ok {
			s := base[b.typ]
			b.set(&s, v)
			if err := s.Validate(); err != nil {
				t.Errorf("%s %s=%v: refused: %v", b.typ, b.key, v, err)
			}
		}
		for _, v := range b.bad {
			s := base[b.typ]
			b.set(&s, v)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), b.key) || !strings.Contains(err.Error(), b.want) {
				t.Errorf("%s %s=%v: %v, want a refusal naming %s and %q", b.typ, b.key, v, err, b.key, b.want)
			}
		}
	}
	// A lateness needs a window of a duration, of a windowed type.
	for _, sp := range []Spec{{Type: "fanin", Threshold: 1, WindowEdges: 10, Lateness: time.Second}, {Type: "bfs", Root: "1", Lateness: time.Second}} {
		if err := sp.Validate(); err == nil || !strings.Contains(err.Error(), "lateness applies to") {
			t.Errorf("%+v: %v, want a refusal of its lateness", sp, err)
		}
	}
	// The compact form reaches the same checks.
	for in, want := range map[string]string{
		"type=pagerank,max_iterations=1000000000,tolerance=1e-3": "max_iterations 1000000000 is out of range: allowed 1..10000",
		"type=pagerank,tolerance=1e-300":                         "tolerance 1e-300 is out of range",
		"type=fanin,threshold=2,window=1000000h":                 "window 1000000h0m0s is out of range",
		"type=fraud,threshold=2,pull_timeout=2h":                 "pull_timeout 2h0m0s is out of range: allowed 10ms..1m0s",
	} {
		sp, err := ParseSpec(in)
		if err == nil {
			err = sp.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if sp, err := ParseSpec("type=fraud,threshold=2,pull_timeout=250ms,pull_memory_mib=8"); err != nil || sp.Validate() != nil ||
		sp.PullTimeout != 250*time.Millisecond || sp.PullMemoryMiB != 8 {
		t.Errorf("pull settings: %+v, %v", sp, err)
	}
}

// TestFanSettings: fanin, fanout and fraud fill measure (events) and
// evidence (32); the mule is fraud's, needs both of its settings and a
// window of time; the other types refuse the fan settings.
func TestFanSettings(t *testing.T) {
	for _, typ := range []string{"fanin", "fanout", "fraud"} {
		s := Spec{Type: typ, Threshold: 3}
		if err := s.Validate(); err != nil || s.Measure != "events" || s.Evidence != 32 {
			t.Errorf("%s: %+v, %v; want measure events, evidence 32", typ, s, err)
		}
		s = Spec{Type: typ, Threshold: 3, Measure: "amount", Evidence: 5}
		if err := s.Validate(); err != nil || s.Measure != "amount" || s.Evidence != 5 {
			t.Errorf("%s: %+v, %v; want measure amount, evidence 5 kept", typ, s, err)
		}
	}
	ok := Spec{Type: "fraud", Threshold: 3, WindowDuration: time.Hour, MuleSenders: 3, MuleReceivers: 2}
	if err := ok.Validate(); err != nil {
		t.Errorf("a mule: %v", err)
	}
	// The metrics' series of a fraud monitor: mule only with the pattern.
	if ks := ok.AlertKinds(); !slices.Contains(ks, "mule") {
		t.Errorf("a fraud monitor with the mule pattern raises %v", ks)
	}
	if ks := (Spec{Type: "fraud"}).AlertKinds(); slices.Contains(ks, "mule") || !slices.Contains(ks, "fan_in") {
		t.Errorf("a fraud monitor without the mule pattern raises %v", ks)
	}
	for _, c := range []struct {
		s         Spec
		key, want string
	}{
		{Spec{Type: "fanin", Threshold: 3, WindowDuration: time.Hour, MuleSenders: 3, MuleReceivers: 2}, "mule_senders", "a setting of the fraud monitor"},
		{Spec{Type: "fanout", Threshold: 3, WindowDuration: time.Hour, MuleReceivers: 2}, "mule_receivers", "a setting of the fraud monitor"},
		{Spec{Type: "fraud", Threshold: 3, WindowDuration: time.Hour, MuleSenders: 3}, "mule_receivers", "needs mule_receivers too"},
		{Spec{Type: "fraud", Threshold: 3, WindowDuration: time.Hour, MuleReceivers: 3}, "mule_senders", "needs mule_senders too"},
		{Spec{Type: "fraud", Threshold: 3, WindowEdges: 100, MuleSenders: 3, MuleReceivers: 2}, "window", "within a window of time"},
		{Spec{Type: "fanin", Threshold: 3, Measure: "euros"}, "measure", "measure must be events, senders or amount"},
		{Spec{Type: "fanin", Threshold: 3, Evidence: MaxEvidence + 1}, "evidence", "allowed 1..1024"},
		{Spec{Type: "degree", Threshold: 3, Measure: "amount"}, "measure", "applies to the monitors fanin, fanout and fraud"},
		{Spec{Type: "pagerank", Evidence: 4}, "evidence", "applies to the monitors fanin, fanout and fraud"},
		{Spec{Type: "wcc", MuleSenders: 1, MuleReceivers: 1}, "mule_senders", "applies to the monitors fanin, fanout and fraud"},
	} {
		err := c.s.Validate()
		var se *SettingError
		if !errors.As(err, &se) || se.Key != c.key || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a refusal of %s saying %q", c.s, err, c.key, c.want)
		}
	}
	if sp, err := ParseSpec("type=fraud,threshold=2,window=24h,measure=senders,evidence=8,mule_senders=3,mule_receivers=2"); err != nil || sp.Validate() != nil ||
		sp.Measure != "senders" || sp.Evidence != 8 || sp.MuleSenders != 3 || sp.MuleReceivers != 2 {
		t.Errorf("the compact form: %+v, %v", sp, err)
	}
}
