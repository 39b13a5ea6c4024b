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
