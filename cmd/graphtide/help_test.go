package main

import (
	"strings"
	"testing"
)

// TestRootHelpSaysWhatGraphtideIs: the root help names what the store
// holds and does today (keys, edge types, vertex records, mappings,
// views, analytics and monitors, alerts to Kafka) and where the manual
// is, not only numeric ids and weights.
func TestRootHelpSaysWhatGraphtideIs(t *testing.T) {
	out, _, err := execute(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"string keys", "edge type", "record", "field mappings", "views", "analytics", "monitors",
		"alerts to a Kafka topic", "docs/getting-started.md", "docs/"} {
		if !strings.Contains(out, want) {
			t.Errorf("graphtide --help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "uint64") {
		t.Errorf("graphtide --help still describes the store as uint64 ids:\n%s", out)
	}
}

// TestGenHelpDoesNotRequireOut: --out is one of two sinks: the help does
// not mark it required, and --brokers alone passes validation.
func TestGenHelpDoesNotRequireOut(t *testing.T) {
	out, _, err := execute(t, "gen", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "(required)") || strings.Contains(out, "gen --out FILE [flags]") {
		t.Errorf("gen --help marks --out required:\n%s", out)
	}
	if !strings.Contains(out, "--out") || !strings.Contains(out, "--brokers") || !strings.Contains(out, "or both") {
		t.Errorf("gen --help does not say that --out, --brokers or both are given:\n%s", out)
	}
	o := genOptions{scale: 4, edgeFactor: 16, topic: "edges", recordFormat: "binary", timeout: 30e9}
	o.kafka.Brokers = []string{"127.0.0.1:9092"}
	if err := o.Validate(); err != nil {
		t.Errorf("gen with --brokers and no --out: %v", err)
	}
}

// check, not the HTTP client's raw error.
func TestDeadServerSaysWhatToCheck(t *testing.T) {
	url := "http://" + deadAddr(t)
	for _, args := range [][]string{
		{"query", "neighbors", "1", "--server", url},
		{"query", "top-pagerank", "--server", url},
		{"write", "--server", url, "-"},
	} {
		_, _, err := executeIn(t, strings.NewReader(`[{"src":1,"dst":2}]`), args...)
		if err == nil {
			t.Fatalf("%v succeeded", args)
		}
		for _, want := range []string{"the server at " + url + " is not reachable", "is graphtide serve running", "--http-addr"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: the error lacks %q: %v", args, want, err)
			}
		}
		if strings.Contains(err.Error(), `Get "`) || strings.Contains(err.Error(), `Post "`) {
			t.Errorf("%v: the raw HTTP client error: %v", args, err)
		}
	}
}
