package genkafka

import "testing"

func TestSourceKey(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"1 2", "1"},
		{"alice bob 2.5", "alice"},
		{"d 7 8", "7"},
		{"dv 9", "9"},
		{"d", "d"},
		{"v alice Person", "alice"},
		{"v 0042", "42"},
		{"007 8", "7"},
		{`{"op":"add_vertex","label":"src","src":"carol"}`, "carol"},
		{`{"op":"add","src":"a,b","dst":"c"}`, "a,b"},
		{`{"op":"add","src":"007","dst":1}`, "007"},
		{`{"op":"add","src":7.0,"dst":1}`, "7.0"},
		{`[{"op":"add","src":3,"dst":1},{"op":"add","src":3,"dst":2}]`, "3"},
		{`[]`, ""},
		{`{"op":"add","src":"acct 1","dst":2}`, "acct 1"},
		{`{"src": 42 , "dst":3}`, "42"},
		{`{"dst":3,"src":5}`, "5"},
		{`{"dst":3}`, ""},
		{`{"src":`, ""},
		{"", ""},
	} {
		if got := SourceKey(c.line); got != c.want {
			t.Errorf("SourceKey(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

// TestKeyAt: --key /pointer keys a JSON line by the value there, a number
// as SourceKey writes one, and nothing when the line has none.
func TestKeyAt(t *testing.T) {
	for _, c := range []struct{ line, ptr, want string }{
		{`{"event_id":"e-91","from_account":"acct-123","amount":12.5}`, "/from_account", "acct-123"},
		{`[{"from_account":"acct-7"},{"from_account":"acct-8"}]`, "/from_account", "acct-7"},
		{`{"from":{"id":12}}`, "/from/id", SourceKey(`{"src":12}`)},
		{`{"a/b":{"m~n":"x"}}`, "/a~1b/m~0n", "x"},
		{`{"from_account":null}`, "/from_account", ""},
		{`{"to_account":"acct-9"}`, "/from_account", ""},
		{`acct-1 acct-2 3`, "/from_account", ""},
	} {
		if got := KeyAt(c.line, c.ptr); got != c.want {
			t.Errorf("KeyAt(%s, %s) = %q, want %q", c.line, c.ptr, got, c.want)
		}
	}
}
