package graphid

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestDeriveIsTheSetsName(t *testing.T) {
	for _, c := range []struct {
		topics []string
		want   string
	}{
		{[]string{"edges"}, "edges"},
		{[]string{"edges", "edges"}, "edges"},
		{[]string{"payments.v2"}, "payments.v2"},
	} {
		if got := Derive(c.topics); got != c.want {
			t.Errorf("Derive(%q) = %q, want %q", c.topics, got, c.want)
		}
	}
	ab, ba := Derive([]string{"a", "b"}), Derive([]string{"b", "a", "b"})
	if ab != ba {
		t.Errorf("the order or repeats of the topics changed the name: %q and %q", ab, ba)
	}
	if !strings.HasPrefix(ab, "a-") || len(ab) != len("a-")+hashLen {
		t.Errorf("Derive(a, b) = %q, want a- and %d hex digits", ab, hashLen)
	}
	// No single topic takes the name of a set, nor the name of another
	// topic: a topic that looks like a set's name is hashed too.
	if one := Derive([]string{ab}); one == ab {
		t.Errorf("the single topic %q is named like the set {a, b}", ab)
	}
	if Derive([]string{"a-b"}) == Derive([]string{"a", "b"}) {
		t.Error("{a-b} and {a, b} have one name")
	}
}

func TestDerivedNamesAreValidAndDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "ab.-_xé /"
	seen := map[string]string{}
	for i := 0; i < 20000; i++ {
		n := 1 + rng.IntN(3)
		ts := make([]string, n)
		for j := range ts {
			l := 1 + rng.IntN(5)
			if rng.IntN(50) == 0 {
				l = 300 + rng.IntN(300) // longer than a name may be
			}
			var b strings.Builder
			for k := 0; k < l; k++ {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
			ts[j] = b.String()
		}
		g := Derive(ts)
		if err := Validate(g); err != nil {
			t.Fatalf("Derive(%q) = %q: %v", ts, g, err)
		}
		key := setKey(ts)
		if prev, ok := seen[g]; ok && prev != key {
			t.Fatalf("two sets of topics are both named %q: %s and %s", g, prev, key)
		}
		seen[g] = key
		for _, name := range []string{Defaults(g).Group, Defaults(g).Writes, Defaults(g).Alerts, Defaults(g).DeadLetters} {
			if len(name) > 249 {
				t.Fatalf("%q is longer than Kafka's 249", name)
			}
		}
	}
}

// setKey names a set of topics for the test's own bookkeeping.
func setKey(ts []string) string {
	m := map[string]bool{}
	for _, t := range ts {
		m[t] = true
	}
	keys := make([]string, 0, len(m))
	for t := range m {
		keys = append(keys, t)
	}
	for i := range keys { // insertion sort: tiny sets
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return fmt.Sprintf("%q", keys)
}

func TestDefaultsShareNothingBetweenGraphs(t *testing.T) {
	// Groups and topics are separate namespaces in Kafka: a group may have
	// a topic's name, two topics (or two groups) of two graphs may not.
	groups, topics := map[string]string{}, map[string]string{}
	for _, g := range []string{"", "edges", "payments", "edges.writes", "edges.alerts", "edges.dead-letters", "graphtide", "writes", "-writes"} {
		d := Defaults(g)
		if prev, ok := groups[d.Group]; ok {
			t.Errorf("group %q is a default of graph %q and of graph %q", d.Group, prev, g)
		}
		groups[d.Group] = g
		for _, name := range []string{d.Writes, d.Alerts, d.DeadLetters} {
			if prev, ok := topics[name]; ok {
				t.Errorf("topic %q is a default of graph %q and of graph %q", name, prev, g)
			}
			topics[name] = g
		}
	}
	if d := Defaults(""); d.Writes != "graphtide-writes" || d.Alerts != "graphtide-alerts" || d.Group != "graphtide" || d.DeadLetters != "graphtide-dead-letters" {
		t.Errorf("the names of a store without a graph moved: %+v", d)
	}
}

func TestValidate(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a b", "a/b", "é", strings.Repeat("a", MaxLen+1)} {
		if Validate(bad) == nil {
			t.Errorf("Validate(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"a", "payments.v2", "A-b_c", strings.Repeat("a", MaxLen)} {
		if err := Validate(good); err != nil {
			t.Errorf("Validate(%q): %v", good, err)
		}
	}
}
