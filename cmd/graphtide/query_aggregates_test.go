package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/api"
)

// TestLoadAndQueryPayments: payments loaded through a mapping whose
// payment type accumulates answer "how much and how often did A pay B,
// in all and in the last hour" through query edge, events and neighbors
// (as text and as JSON), with the events' references and properties.
func TestLoadAndQueryPayments(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	mapping, events := filepath.Join(tmp, "payments.yaml"), filepath.Join(tmp, "payments.jsonl")
	if err := os.WriteFile(mapping, []byte(`src: /from_account
dst: /to_account
weight: /amount
time: /ts
type: /type
event_id: /event_id
props: {currency: /currency}
types: {payment: {aggregate: accumulate, retain: 24h}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(events, []byte(`{"event_id":"e-90","from_account":"acct-123","to_account":"acct-9","amount":5,"currency":"EUR","ts":"2026-12-06T03:30:00Z","type":"payment"}
{"event_id":"e-91","from_account":"acct-123","to_account":"acct-9","amount":12.5,"currency":"EUR","ts":"2026-12-06T05:00:00Z","type":"payment"}
{"event_id":"e-92","from_account":"acct-123","to_account":"acct-9","amount":50,"currency":"EUR","ts":"2026-12-06T05:20:00Z","type":"payment"}
{"event_id":"e-93","from_account":"acct-123","to_account":"acct-7","amount":1,"currency":"NZD","ts":"2026-12-06T05:10:00Z","type":"payment"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "load", "--dir", dir, "--mapping", mapping, events); err != nil {
		t.Fatal(err)
	}
	var e api.EdgeResponse
	queryJSON(t, &e, "edge", "acct-123", "acct-9", "--dir", dir, "--window", "1h")
	if len(e.Edges) != 1 {
		t.Fatalf("edges %+v", e.Edges)
	}
	got := e.Edges[0]
	want := api.EdgeAggregate{Count: 3, Sum: 67.5, FirstTime: "2026-12-06T03:30:00Z", LastTime: "2026-12-06T05:20:00Z", Ref: "e-92"}
	if got.Aggregate == nil || *got.Aggregate != want || got.Weight != 67.5 || got.Props != `{"currency":"EUR"}` || got.Type != "payment" {
		t.Fatalf("edge acct-123 -> acct-9: %+v (aggregate %+v)", got, got.Aggregate)
	}
	// The last hour ends at the newest event time (a data directory read
	// here: the newest of the edges read), 05:20.
	if w := got.Window; w == nil || w.Count != 2 || w.Sum != 62.5 || w.Since != "2026-12-06T04:20:00Z" || len(w.Events) != 2 || w.Events[0].Ref != "e-92" || w.Events[1].Ref != "e-91" {
		t.Fatalf("window of acct-123 -> acct-9: %+v", got.Window)
	}
	out, _, err := execute(t, "query", "edge", "acct-123", "acct-9", "--dir", dir)
	wantText := "edges from acct-123 (4611686018427387904) to acct-9 (4611686018427387905): 1 (fresh view at seq 1)\n" +
		"ID                   KEY     WEIGHT  TYPE     TIME                  EVENTS  FIRST                 REF   PROPS\n" +
		"4611686018427387905  acct-9  67.5    payment  2026-12-06T05:20:00Z  3       2026-12-06T03:30:00Z  e-92  {\"currency\":\"EUR\"}\n"
	if err != nil || out != wantText {
		t.Errorf("query edge as text:\n%s\nwant\n%s(%v)", out, wantText, err)
	}
	out, _, err = execute(t, "query", "events", "acct-123", "acct-9", "--type", "payment", "--window", "1h", "--limit", "1", "--dir", dir)
	wantText = "events from acct-123 (4611686018427387904) to acct-9 (4611686018427387905) of type payment since 2026-12-06T04:20:00Z: 2, sum 62.5 (fresh view at seq 1)\n" +
		"TIME                  AMOUNT  REF   PROPS               SEQ\n" +
		"2026-12-06T05:20:00Z  50      e-92  {\"currency\":\"EUR\"}  1\n" +
		"(more events than listed: --limit)\n"
	if err != nil || out != wantText {
		t.Errorf("query events as text:\n%s\nwant\n%s(%v)", out, wantText, err)
	}
	var n api.NeighborsResponse
	queryJSON(t, &n, "neighbors", "acct-123", "--dir", dir, "--window", "30m")
	if len(n.Neighbors) != 2 || n.Neighbors[0].Key != "acct-7" || n.Neighbors[0].Window == nil || n.Neighbors[0].Window.Count != 1 ||
		n.Neighbors[1].Window == nil || n.Neighbors[1].Window.Count != 2 || n.Neighbors[1].Window.Sum != 62.5 {
		t.Errorf("neighbors of acct-123 with a window: %+v", n.Neighbors)
	}
	if _, _, err := execute(t, "query", "edge", "acct-123", "acct-9", "--dir", dir, "--limit", "5"); err == nil || !strings.Contains(err.Error(), "--limit bounds the events a --window lists") {
		t.Errorf("--limit without --window: %v", err)
	}
	if _, _, err := execute(t, "query", "events", "acct-123", "acct-9", "--type", "payment", "--window", "soon", "--dir", dir); err == nil || !strings.Contains(err.Error(), "window must be a positive duration") {
		t.Errorf("a bad window: %v", err)
	}
}
