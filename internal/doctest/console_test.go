package doctest

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConsole(t *testing.T) {
	lines := []string{
		"$ bin/graphtide serve --brokers 127.0.0.1:19092 \\",
		"    --topics edges &",
		"$ curl -s 127.0.0.1:9464/readyz",
		`{"status":"ready"}`,
		"",
		"$ echo a \\",
		"  b",
		"a b",
		"...",
		"",
		"",
	}
	cmds, err := ParseConsole(lines, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Line: 10, Text: "bin/graphtide serve --brokers 127.0.0.1:19092 \\\n    --topics edges &", Background: true},
		{Line: 12, Text: "curl -s 127.0.0.1:9464/readyz", Expected: []string{`{"status":"ready"}`}},
		{Line: 15, Text: "echo a \\\n  b", Expected: []string{"a b", "..."}},
	}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("got\n%#v\nwant\n%#v", cmds, want)
	}
	if _, err := ParseConsole([]string{"output", "$ cmd"}, 1); err == nil {
		t.Error("output before the first command was accepted")
	}
	if _, err := ParseConsole([]string{"$ serve &", "listening"}, 1); err == nil || !strings.Contains(err.Error(), "background") {
		t.Errorf("output under a background command: %v", err)
	}
	if c, _ := ParseConsole([]string{"$ a && b"}, 1); c[0].Background {
		t.Error("a command ending in && is not a background command")
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		expected []string
		got      string
		ok       bool
	}{
		{nil, "", true},
		{nil, "x\n", false},
		{[]string{"a"}, "a\n", true},
		{[]string{"a"}, "a", true},
		{[]string{"a"}, "a   \n", true}, // trailing spaces
		{[]string{"a  "}, "a\n", true},
		{[]string{"a"}, "a\n\n", false}, // an empty line is a line
		{[]string{"a"}, "b\n", false},
		{[]string{"a", "b"}, "a\n", false},
		{[]string{"..."}, "", true},
		{[]string{"..."}, "x\ny\n", true},
		{[]string{"a", "...", "d"}, "a\nd\n", true},
		{[]string{"a", "...", "d"}, "a\nb\nc\nd\n", true},
		{[]string{"a", "...", "d"}, "a\nb\nc\n", false},
		{[]string{"...", "x", "...", "x"}, "x\nx\nx\n", true},
		{[]string{"...", "x", "...", "y"}, "y\nx\n", false},
		{[]string{"seq …, took …s"}, "seq 1842, took 0.31s\n", true},
		{[]string{"seq …, took …s"}, "seq 1842 took 0.31s\n", false},
		{[]string{"…"}, "anything at all\n", true},
		{[]string{"…"}, "two\nlines\n", false}, // … stays within a line
		{[]string{"a…"}, "a\n", true},
		{[]string{"…a…b…"}, "xxbxxaxx\n", false},
		{[]string{"…a…b…"}, "xaxbx\n", true},
		{[]string{"ab…ba"}, "aba\n", false}, // prefix and suffix may not overlap
		{[]string{"{\"status\":\"ready\"}"}, "{\"status\":\"ready\"}\n", true},
		{[]string{"...", "…ready…"}, "starting\n{\"status\":\"ready\",\"behind\":0}\n", true},
	} {
		if ok := Match(tc.expected, tc.got); ok != tc.ok {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.expected, tc.got, ok, tc.ok)
		}
	}
}
