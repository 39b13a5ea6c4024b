package api

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
)

// TestCursorTokens: a cursor comes back as it was made, whatever it
// names (the longest key and type name included, within MaxCursorBytes);
// every flipped bit and every cut of its bytes is refused, and a cursor
// of one kind is refused where the other is expected.
func TestCursorTokens(t *testing.T) {
	o := newOrigin()
	long := strings.Repeat("é", keydict.MaxKeyLen/2)
	cases := []cursor{
		{kind: cursorNeighbor, pos: Position{Num: 7}},
		{kind: cursorNeighbor, pos: Position{Num: 1<<63 - 1, Type: "payment"}, pinned: true, origin: o, seq: 1 << 40},
		{kind: cursorNeighbor, pos: Position{Key: true, Name: "acct-4", Type: "login"}},
		{kind: cursorNeighbor, pos: Position{Key: true, Name: long, Type: strings.Repeat("t", typedict.MaxNameLen)}, pinned: true, origin: o, seq: 1<<64 - 1},
		{kind: cursorChange, origin: o, from: 3, to: 1 << 50, change: ChangeCursor{Src: 1 << 62, Dst: 9, Type: 1023}},
	}
	for _, c := range cases {
		tok := c.encode()
		if len(tok) > MaxCursorBytes {
			t.Errorf("%+v: a token of %d bytes, over MaxCursorBytes %d", c.pos, len(tok), MaxCursorBytes)
		}
		got, err := decodeCursor(tok, c.kind)
		if err != nil || got != c {
			t.Errorf("%+v: decoded %+v, %v", c, got, err)
		}
		other := byte(cursorChange)
		if c.kind == cursorChange {
			other = cursorNeighbor
		}
		if _, err := decodeCursor(tok, other); err == nil || !strings.Contains(err.Error(), "not a page of") {
			t.Errorf("%+v as the other kind: %v", c.pos, err)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		if len(raw) > 300 {
			continue // the long one: its flips are as the others'
		}
		for i := range len(raw) * 8 {
			b := []byte(string(raw))
			b[i/8] ^= 1 << (i % 8)
			if _, err := decodeCursor(base64.RawURLEncoding.EncodeToString(b), c.kind); err == nil {
				t.Errorf("%+v: bit %d flipped is accepted", c.pos, i)
			}
		}
		for n := range len(raw) {
			if _, err := decodeCursor(base64.RawURLEncoding.EncodeToString(raw[:n]), c.kind); err == nil {
				t.Errorf("%+v: cut to %d bytes is accepted", c.pos, n)
			}
		}
	}
	for _, bad := range []string{"", "!!", "AAAA", strings.Repeat("A", 40)} {
		if _, err := decodeCursor(bad, cursorNeighbor); err == nil {
			t.Errorf("%q is accepted as a cursor", bad)
		}
	}
}

// TestPositionOrder: positions order numbers by value before keys by
// bytes, then type names, the default ("") first.
func TestPositionOrder(t *testing.T) {
	in := []Position{
		{Num: 0}, {Num: 0, Type: "a"}, {Num: 9}, {Num: 10}, {Num: 1 << 33}, {Num: 1<<62 + 3},
		{Key: true, Name: "10"}, {Key: true, Name: "9"}, {Key: true, Name: "9", Type: "login"}, {Key: true, Name: "9", Type: "payment"},
		{Key: true, Name: "A"}, {Key: true, Name: "a"}, {Key: true, Name: "é"},
	}
	for i := range in {
		for j := range in {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := comparePositions(in[i], in[j]); got != want {
				t.Errorf("compare %+v, %+v = %d, want %d", in[i], in[j], got, want)
			}
		}
	}
}
