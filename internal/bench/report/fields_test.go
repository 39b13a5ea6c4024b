package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fixtureResult is the result of testdata/<name>.json, decoded.
func fixtureResult(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r.Result
}

func missingIn(t *testing.T, name string, result map[string]any) []string {
	t.Helper()
	line, err := json.Marshal(result)
	if err != nil {
		t.Fatal(err)
	}
	m, err := MissingFields(name, line)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMissingFields: the fields a table reads that a result lacks are
// named by their paths, in a list's elements and a map's entries; an
// object read through a pointer may be absent whole, but not its fields.
func TestMissingFields(t *testing.T) {
	mixed := fixtureResult(t, "mixed")
	if m := missingIn(t, "mixed", mixed); len(m) != 0 {
		t.Fatalf("the mixed fixture lacks %v", m)
	}
	delete(mixed, "batch_size")
	phases := mixed["phases"].([]any)
	delete(phases[1].(map[string]any), "apply_p999_ms")
	phases[2].(map[string]any)["apply_p99_millis"] = phases[2].(map[string]any)["apply_p99_ms"] // a rename
	delete(phases[2].(map[string]any), "apply_p99_ms")
	if m, want := missingIn(t, "mixed", mixed), []string{"batch_size", "phases[1].apply_p999_ms", "phases[2].apply_p99_ms"}; !slices.Equal(m, want) {
		t.Errorf("mixed: missing %v, want %v", m, want)
	}

	serve := fixtureResult(t, "serve")
	ev := serve["edge_events"].(map[string]any)
	delete(ev["accumulate"].(map[string]any), "compacted_bytes_per_edge")
	if m, want := missingIn(t, "serve", serve), []string{"edge_events.accumulate.compacted_bytes_per_edge"}; !slices.Equal(m, want) {
		t.Errorf("serve: missing %v, want %v", m, want)
	}
	delete(serve, "edge_events") // read through a pointer: optional
	if m := missingIn(t, "serve", serve); len(m) != 0 {
		t.Errorf("serve without edge_events: missing %v, want none", m)
	}

	monitors := fixtureResult(t, "monitors")
	delete(monitors["monitors"].(map[string]any)["mule"].(map[string]any), "alerts")
	if m, want := missingIn(t, "monitors", monitors), []string{"monitors.mule.alerts"}; !slices.Equal(m, want) {
		t.Errorf("monitors: missing %v, want %v", m, want)
	}
	if _, err := MissingFields("nosuch", []byte("{}")); err == nil {
		t.Error("MissingFields of no benchmark: no error")
	}
}
