package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
)

// TestWrite sends batches through write to a serve with its embedded
// broker: applied, refused (exit status 3), retried under a key, and
// refused before sending; and reads the result back with query.
func TestWrite(t *testing.T) {
	srv, _ := writestest.Serve(t, server.Config{Format: decode.FormatJSON})
	url := "http://" + srv.HTTPAddr()

	out, _, err := executeIn(t, strings.NewReader(`[{"src":"alice","dst":"bob","weight":5},{"src":"bob","dst":"carol"}]`), "write", "--server", url)
	if err != nil || !strings.HasPrefix(out, "applied at seq ") {
		t.Fatalf("write from stdin: %q, %v", out, err)
	}
	file := filepath.Join(t.TempDir(), "batch.json")
	cond := `{"ops":[{"src":"alice","dst":"bob","weight":9}],"conditions":[{"kind":"weight_below","src":"alice","dst":"bob","value":6}]}`
	if err := os.WriteFile(file, []byte(cond), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = execute(t, "write", file, "--server", url, "--idempotency-key", "raise-1")
	if err != nil || !strings.HasPrefix(out, "applied at seq ") {
		t.Fatalf("a conditional write that holds: %q, %v", out, err)
	}
	// The same key again: the first outcome, nothing applied.
	out2, _, err := execute(t, "write", file, "--server", url, "--idempotency-key", "raise-1")
	if err != nil || !strings.Contains(out2, "(a retry: the first batch with this key)") {
		t.Fatalf("a retry: %q, %v", out2, err)
	}
	// Without the key it is evaluated again: the weight is 9 now.
	out, _, err = execute(t, "write", file, "--server", url)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitRefused || !strings.Contains(out, "refused: precondition 0 (weight_below") || !strings.Contains(out, "its weight is 9") {
		t.Fatalf("a write refused: %q, %v", out, err)
	}
	out, _, err = execute(t, "query", "edge", "alice", "bob", "--server", url, "--json")
	if err != nil || !strings.Contains(out, `"weight":9`) {
		t.Fatalf("query after the writes: %q, %v", out, err)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{`[]`, nil, `"ops" must be a non-empty array`},
		{`{"ops":[{"src":1,"dst":2}],"if":[]}`, nil, `unknown field "if"`},
		{`{"conditions":[]}`, nil, `the batch has no "ops"`},
		{`[{"src":1,"dst":2}]`, []string{"--server", "ftp://x"}, "--server must be an http:// or https:// URL"},
		{`[{"src":1.5,"dst":2}]`, nil, "400 Bad Request: ops: decode json"},
		{`{"ops":[{"src":1,"dst":2}],"idempotency_key":"a"}`, []string{"--idempotency-key", "b"}, "differ"},
	} {
		args := append([]string{"write", "--server", url}, c.args...)
		if _, _, err := executeIn(t, strings.NewReader(c.stdin), args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("write %v <<< %s: %v, want an error with %q", c.args, c.stdin, err, c.want)
		}
	}
}
