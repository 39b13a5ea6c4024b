package engine

import (
	"bytes"
	"fmt"
	"testing"
)

// TestAnnex: an annex is recorded with the flush that makes its batch
// durable, at the point of that batch, beside the source position, which
// SourcePosition returns unchanged; batches without a source position
// carry the newest, and a store opened without an annex function keeps
// the recorded annex.
func TestAnnex(t *testing.T) {
	dir := t.TempDir()
	reopen := func(s *Store) *Store {
		t.Helper()
		if s != nil {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	durable := func(s *Store, wantPos, wantAnnex string) {
		t.Helper()
		p, err := s.SourcePosition()
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Annex()
		if err != nil {
			t.Fatal(err)
		}
		if string(p) != wantPos || (wantAnnex == "<nil>") != (a == nil) || a != nil && string(a) != wantAnnex {
			t.Fatalf("durable position %q annex %q (nil %v); want %q and %q", p, a, a == nil, wantPos, wantAnnex)
		}
	}
	apply := func(s *Store, pos string, v uint64) {
		t.Helper()
		var b Batch
		b.Insert(v, v+1)
		if pos != "" {
			b.SetSourcePosition([]byte(pos))
		}
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	flush := func(s *Store) {
		t.Helper()
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	// A store written before annexes: a source position alone.
	s := reopen(nil)
	apply(s, "p1", 1)
	flush(s)
	s = reopen(s)
	durable(s, "p1", "<nil>")

	// The annex is read once per batch, when the batch applies.
	n := 0
	s.SetAnnex(func() []byte { n++; return []byte(fmt.Sprintf("a%d", n)) })
	apply(s, "", 2) // no source position: p1 goes on
	durable(s, "p1", "<nil>")
	flush(s)
	durable(s, "p1", "a1")
	apply(s, "p2", 3)
	apply(s, "", 4)
	flush(s)
	durable(s, "p2", "a3")
	if n != 3 {
		t.Fatalf("the annex was read %d times for 3 batches", n)
	}

	// Opened without an annex function: the recorded one goes on with
	// each new source position.
	s = reopen(s)
	durable(s, "p2", "a3")
	apply(s, "p3", 5)
	apply(s, "", 6)
	flush(s)
	s = reopen(s)
	durable(s, "p3", "a3")

	// An empty annex is an annex; an empty source position is none.
	s.SetAnnex(func() []byte { return []byte{} })
	apply(s, "", 7)
	flush(s)
	s = reopen(s)
	durable(s, "p3", "")
	s.Close()

	dir2 := t.TempDir()
	s2, err := Open(dir2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s2.SetAnnex(func() []byte { return []byte("x") })
	apply(s2, "", 1)
	flush(s2)
	if p, _ := s2.SourcePosition(); p != nil {
		t.Fatalf("a store that never got a source position returns %q", p)
	}
}

func TestSplitAnnex(t *testing.T) {
	for _, c := range []struct{ annex, pos string }{{"", ""}, {"a", ""}, {"", "p"}, {"annex", "\x02pos"}} {
		a, p := splitAnnex(envelope([]byte(c.annex), []byte(c.pos)))
		if a == nil || string(a) != c.annex || string(p) != c.pos {
			t.Errorf("split(envelope(%q, %q)) = %q, %q", c.annex, c.pos, a, p)
		}
	}
	// Not envelopes: a position alone.
	for _, raw := range []string{"", "\x02abc", annexMagic, annexMagic + "\x05\x00\x00\x00abcd"} {
		a, p := splitAnnex([]byte(raw))
		if a != nil || !bytes.Equal(p, []byte(raw)) {
			t.Errorf("split(%q) = %q, %q; want no annex", raw, a, p)
		}
	}
}
