package genkafka

import "testing"

func TestSourceKey(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"1 2", "1"},
		{"alice bob 2.5", "alice"},
		{"d 7 8", "7"},
		{"dv 9", "9"},
		{"d", "d"},
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
