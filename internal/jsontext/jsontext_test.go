package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		v    string
		off  int
		want string // "" when it passes
	}{
		{`{"a":"é😀","b":"\ud83d\ude00","c":"\"\\u12"}`, 0, ""},
		{`{"a":"x` + "\xff" + `"}`, 7, "invalid UTF-8 (byte 0xff)"},
		{`{"a":"\ud800"}`, 6, `escaped lone surrogate \ud800 in a string (not followed`},
		{`{"a":"\udc00"}`, 6, `escaped lone surrogate \udc00 in a string (no high`},
		{`{"a":"\\ud800"}`, 0, ""}, // an escaped backslash, then text
		{strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), 0, ""},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), MaxDepth, "JSON nested deeper than 64"},
		{`{"a":"[[[[` + strings.Repeat("[", 100) + `"}`, 0, ""}, // brackets in a string
	} {
		off, why := Check([]byte(c.v))
		if (why == "") != (c.want == "") || !strings.HasPrefix(why, c.want) || off != c.off {
			t.Errorf("Check(%.40q) = (%d, %q), want (%d, %q)", c.v, off, why, c.off, c.want)
		}
		if c.want == "" && !json.Valid([]byte(c.v)) {
			t.Errorf("%.40q: a passing case is not valid JSON", c.v)
		}
	}
}
