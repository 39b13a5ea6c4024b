package alertschema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/alerts/alertschema"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The alerts the docs show as JSON (the json blocks of docs/analytics.md
// and docs/http-api.md with an "analytic"), which the doc test does not
// run, are alerts: the schema accepts each, and written again from the
// alert it reads as (analytics.AlertRecord.Alert) each is the same JSON,
// field for field and in order.
func TestDocsShowAlertsAsTheyAre(t *testing.T) {
	sch, err := alertschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := alertschema.File()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(filepath.Dir(p), "..", "..")
	block := regexp.MustCompile("(?s)```json\n(.*?)```")
	n := 0
	for _, page := range []string{"docs/analytics.md", "docs/http-api.md"} {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(b, -1) {
			if !bytes.Contains(m[1], []byte(`"analytic"`)) {
				continue
			}
			n++
			var c bytes.Buffer
			if err := json.Compact(&c, m[1]); err != nil {
				t.Fatalf("%s: an alert that is not JSON: %v\n%s", page, err, m[1])
			}
			if err := sch.Validate(c.Bytes()); err != nil {
				t.Errorf("%s: %v", page, err)
			}
			var r analytics.AlertRecord
			dec := json.NewDecoder(bytes.NewReader(c.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("%s: %v", page, err)
			}
			// Through the alert it holds: the numbers are those of the
			// ids, the span that of the times.
			a := r.Alert()
			r = a.Record(r.Graph)
			var again bytes.Buffer
			enc := json.NewEncoder(&again)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&r); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(again.String()); got != c.String() {
				t.Errorf("%s: the alert shown\n%s\nis written\n%s", page, c.String(), got)
			}
		}
	}
	if n < 2 {
		t.Fatalf("%d alerts shown as JSON in the docs, want the ring and the one with evidence", n)
	}
}
