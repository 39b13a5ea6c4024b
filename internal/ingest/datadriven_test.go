package ingest

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// The parts whose behaviour is a sequence of events (positions and
// commits, pauses and resumes, assignments and revokes, dead letters and
// their blocks) are tested by datadriven scripts in testdata/<part>: each
// block is a command with its arguments and input, and the output it
// must print (cockroachdb's
// datadriven format). `go test -rewrite` (or GT_REWRITE=1, as the C++
// datadriven tests take it) writes the outputs anew; a rewritten output is
// read and checked by hand before it is committed.

func TestMain(m *testing.M) {
	if os.Getenv("GT_REWRITE") == "1" {
		if err := flag.Set("rewrite", "true"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// runScripts runs every script of testdata/dir, each with the command
// runner start returns (the state of one script).
func runScripts(t *testing.T, dir string, start func() func(t *testing.T, d *datadriven.TestData) string) {
	datadriven.Walk(t, "testdata/"+dir, func(t *testing.T, path string) {
		datadriven.RunTest(t, path, start())
	})
}

// parsePosition reads a position as fmtOffsets writes it: "edges[0:10,1:5]
// w[0:3]", or with "+" between topics ("edges[0:10]+w[0:3]": one
// argument of a command); "" and "-" are the empty position.
func parsePosition(t *testing.T, s string) Position {
	t.Helper()
	p := Position{}
	eachPartition(t, s, func(topic, item string) {
		part, off, ok := strings.Cut(item, ":")
		if !ok {
			t.Fatalf("%q: partition %q has no offset", s, item)
		}
		p.Set(topic, int32(atoi(t, part)), int64(atoi(t, off)))
	})
	return p
}

// parseAssignment reads a partition set as a rebalance callback gets it.
func parseAssignment(t *testing.T, s string) map[string][]int32 {
	t.Helper()
	m := map[string][]int32{}
	eachPartition(t, s, func(topic, item string) { m[topic] = append(m[topic], int32(atoi(t, item))) })
	return m
}

// eachPartition calls f with each "topic[item,item]" item of s.
func eachPartition(t *testing.T, s string, f func(topic, item string)) {
	t.Helper()
	for _, field := range strings.Fields(strings.ReplaceAll(s, "+", " ")) {
		if field == "-" {
			continue
		}
		topic, rest, ok := strings.Cut(field, "[")
		if !ok || !strings.HasSuffix(rest, "]") {
			t.Fatalf("%q: want topic[items]", field)
		}
		rest = strings.TrimSuffix(rest, "]")
		if rest == "" {
			continue
		}
		for _, item := range strings.Split(rest, ",") {
			f(topic, item)
		}
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// argPosition is the command argument key as a position (nil when
// absent).
func argPosition(t *testing.T, d *datadriven.TestData, key string) Position {
	t.Helper()
	if !d.HasArg(key) {
		return nil
	}
	return parsePosition(t, argString(t, d, key))
}

// argString is the command argument key ("" when absent).
func argString(t *testing.T, d *datadriven.TestData, key string) string {
	t.Helper()
	var v string
	if d.HasArg(key) {
		d.ScanArgs(t, key, &v)
	}
	return v
}

// argPartition is the command argument key as "topic/partition".
func argPartition(t *testing.T, d *datadriven.TestData, key string) (string, int32) {
	t.Helper()
	v := argString(t, d, key)
	topic, p, ok := strings.Cut(v, "/")
	if !ok {
		t.Fatalf("%s=%q: want topic/partition", key, v)
	}
	return topic, int32(atoi(t, p))
}

// show is a position as the scripts print it ("-" when empty).
func show(p Position) string { return dash(fmtOffsets(p)) }

// dash is s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lines joins the lines of an output.
func lines(ls ...string) string { return strings.Join(ls, "\n") }

// kv is "key: value".
func kv(key string, v any) string { return fmt.Sprintf("%s: %v", key, v) }
