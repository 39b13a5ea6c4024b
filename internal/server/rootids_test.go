package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
)

// TestTheAPINeverAssignsIDs: an analytic registered over the API whose
// root no edge has named is refused with 404 naming the root, and the
// key dictionary stays byte for byte as it was, over 300 registrations
// and DELETEs of 4000-byte roots (each once grew keys.dict by its root,
// for ever). A root the dictionary knows registers. An analytic the API
// stored is registered again at the next start without assigning either:
// the stored list of a directory whose dictionary knows its root, copied
// into one whose dictionary does not, leaves that dictionary as it was
// and the analytic unregistered, with a WARN naming it.
func TestTheAPINeverAssignsIDs(t *testing.T) {
	var logs bytes.Buffer
	open := func(dir string) *Server {
		t.Helper()
		logs.Reset()
		cfg := testConfig(t, dir)
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.HTTP = HTTPConfig{Addr: "127.0.0.1:0", RequestTimeout: 5 * time.Second, PathBudget: 1000}
		srv, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	call := func(srv *Server, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+srv.HTTPAddr()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	keysOf := func(dir string) []byte {
		t.Helper()
		b, err := os.ReadFile(datadir.KeysPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// A directory whose dictionary knows acct-x (as if an edge had named it).
	known := t.TempDir()
	d, err := datadir.Open(known, datadir.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Keys.ID("acct-x"); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	srv := open(known)
	before := keysOf(known)
	if code, body := call(srv, "POST", "/v1/analytics", `{"type":"sssp","name":"s1","root":"nokey"}`); code != 404 || !strings.Contains(body, `vertex \"nokey\" is neither an id nor a known key`) {
		t.Errorf("POST sssp rooted at an unknown key: %d %s; want 404 naming it", code, body)
	}
	// A number from 2^32 up that no edge has named: the store would map it
	// to an id of its own, which the API does not give either.
	if code, body := call(srv, "POST", "/v1/analytics", `{"type":"bfs","name":"b1","root":"8589934592"}`); code != 404 || !strings.Contains(body, "vertex 8589934592 has never been in the graph") {
		t.Errorf("POST bfs rooted at an unmapped number: %d %s; want 404 naming it", code, body)
	}
	registered := 0
	for i := range 300 {
		root := fmt.Sprintf("%04d%s", i, strings.Repeat("k", 3996))
		if code, _ := call(srv, "POST", "/v1/analytics", fmt.Sprintf(`{"type":"bfs","name":"b%d","root":%q}`, i, root)); code != 404 {
			registered++
		}
		call(srv, "DELETE", fmt.Sprintf("/v1/analytics/b%d", i), "")
	}
	if registered > 0 {
		t.Errorf("%d of 300 analytics rooted at unknown 4000-byte keys were registered; want none (404)", registered)
	}
	if code, body := call(srv, "POST", "/v1/analytics", `{"type":"bfs","name":"reach","root":"acct-x"}`); code != 201 {
		t.Fatalf("POST bfs rooted at a known key: %d %s", code, body)
	}
	if after := keysOf(known); !bytes.Equal(after, before) {
		t.Errorf("keys.dict changed over the API's registrations: %d bytes, was %d", len(after), len(before))
	}
	srv.Close()
	if after := keysOf(known); !bytes.Equal(after, before) {
		t.Errorf("keys.dict changed by the stop: %d bytes, was %d", len(after), len(before))
	}

	// The stored list, in a directory whose dictionary lacks acct-x.
	other := t.TempDir()
	open(other).Close()
	stored, err := os.ReadFile(datadir.RegisteredAnalyticsPath(known))
	if err != nil || !strings.Contains(string(stored), "acct-x") {
		t.Fatalf("the stored list: %s, %v; want reach rooted at acct-x", stored, err)
	}
	if err := os.WriteFile(datadir.RegisteredAnalyticsPath(other), stored, 0o644); err != nil {
		t.Fatal(err)
	}
	before = keysOf(other)
	srv = open(other)
	if _, err := srv.Analytics().Result("reach"); err == nil {
		t.Error("the stored analytic rooted at a key this dictionary lacks is registered")
	}
	if !strings.Contains(logs.String(), "could not be registered again") || !strings.Contains(logs.String(), "name=reach") || !strings.Contains(logs.String(), "acct-x") {
		t.Errorf("no WARN names the stored analytic and its unknown root:\n%s", logs.String())
	}
	srv.Close()
	if after := keysOf(other); !bytes.Equal(after, before) {
		t.Errorf("keys.dict changed by registering the stored analytics again: %d bytes, was %d", len(after), len(before))
	}
}
