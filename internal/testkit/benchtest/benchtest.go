// Package benchtest holds what the benchmark packages' tests share: that a
// Config refuses each bad setting with the message that names its flag,
// and that a result carries every field the benchmarks page reads
// (report.MissingFields). Only tests import it.
package benchtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/bench/report"
)

// Refusal is a bad setting of a C (Set applied to its defaults) and the
// error Validate must give.
type Refusal[C any] struct {
	Set  func(*C)
	Want string
}

// WantRefusals checks that validate accepts defaults(), then applies each
// case to defaults() and checks that validate refuses it with exactly its
// message.
func WantRefusals[C any](t *testing.T, defaults func() C, validate func(*C) error, cases []Refusal[C]) {
	t.Helper()
	wantRefusals(t, defaults, validate, cases, func(got, want string) bool { return got == want })
}

// WantRefusalPrefixes is WantRefusals for messages that go on past Want
// (a list of what is allowed, a path).
func WantRefusalPrefixes[C any](t *testing.T, defaults func() C, validate func(*C) error, cases []Refusal[C]) {
	t.Helper()
	wantRefusals(t, defaults, validate, cases, strings.HasPrefix)
}

func wantRefusals[C any](t *testing.T, defaults func() C, validate func(*C) error, cases []Refusal[C], match func(got, want string) bool) {
	t.Helper()
	d := defaults()
	if err := validate(&d); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, c := range cases {
		cfg := defaults()
		c.Set(&cfg)
		if err := validate(&cfg); err == nil || !match(err.Error(), c.Want) {
			t.Errorf("got %v, want %q", err, c.Want)
		}
	}
}

// PageFields marshals the result of the benchmark name, fails t when a
// field the page reads is missing from it, and returns the JSON line and
// the object it holds.
func PageFields(t *testing.T, name string, res any) (line []byte, m map[string]any) {
	t.Helper()
	line, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if missing, err := report.MissingFields(name, line); err != nil || len(missing) > 0 {
		t.Errorf("the page's fields missing from the result: %v (%v)\n%s", missing, err, line)
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	return line, m
}
