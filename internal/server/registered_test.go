package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestAnalyticsRegisteredOverTheAPIPersist: an analytic POSTed to
// /v1/analytics is registered again after a restart, a DELETE removes it
// for good; the configuration's analytics come back at every start and
// win a name clash with a stored one (which stays stored, with a WARN,
// until a DELETE of the name); a stored spec that no longer validates is
// kept but not started; a registration that cannot be stored fails and
// is not registered; a file that cannot be read stops serve with its
// path and offset.
func TestAnalyticsRegisteredOverTheAPIPersist(t *testing.T) {
	dir := t.TempDir()
	plan, err := budget.Divide(budget.MinBudget, budget.Explicit{})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	open := func() *Server {
		t.Helper()
		logs.Reset()
		srv, err := Open(context.Background(), Config{Dir: dir, Plan: plan, Topics: []string{"edges"}, Group: "g",
			Format: decode.FormatBinary, DeadLetterTopic: "dlq", FlushInterval: time.Second, Reset: "earliest",
			Analytics: []analytics.Spec{{Name: "wcc", Type: "wcc"}},
			Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
			HTTP:      HTTPConfig{Addr: "127.0.0.1:0", RequestTimeout: 5 * time.Second, PathBudget: 1000}})
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
	names := func(srv *Server) string {
		var out []string
		for _, r := range srv.Analytics().Results() {
			out = append(out, r.Spec.Name)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	path := datadir.RegisteredAnalyticsPath(dir)

	srv := open()
	if code, body := call(srv, "POST", "/v1/analytics", `{"name":"reach","type":"bfs","root":"7"}`); code != 201 {
		t.Fatalf("POST: %d %s", code, body)
	}
	if code, body := call(srv, "POST", "/v1/analytics", `{"name":"hubs","type":"degree","threshold":100}`); code != 201 {
		t.Fatalf("POST: %d %s", code, body)
	}
	if code, _ := call(srv, "POST", "/v1/analytics", `{"name":"wcc","type":"wcc"}`); code != 409 {
		t.Fatalf("POST of the configuration's name: %d, want 409", code)
	}
	if code, body := call(srv, "DELETE", "/v1/analytics/hubs", ""); code != 200 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	srv.Close()
	raw, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(raw), `"reach"`) || strings.Contains(string(raw), `"hubs"`) || strings.Contains(string(raw), `"wcc"`) {
		t.Fatalf("%s holds %s (%v): want reach only", path, raw, err)
	}

	// The restart: reach is back. Then a stored wcc (the configuration's
	// name) and a spec that no longer validates are added by hand.
	srv = open()
	if got := names(srv); got != "reach,wcc" {
		t.Fatalf("after a restart: %s, want reach,wcc", got)
	}
	if res, err := srv.Analytics().Result("reach"); err != nil || res.Spec.Root != "7" || res.Spec.Type != "bfs" {
		t.Fatalf("reach after a restart: %+v, %v", res.Spec, err)
	}
	srv.Close()
	// By hand, in the file's format 1 (unchecksummed, read as generation
	// 0, which the store's claims allow: no batch recorded one here).
	raw = []byte(`{"version": 1, "analytics": [{"name":"wcc","type":"degree","threshold":5},{"name":"old","type":"bfs"},{"name":"reach","type":"bfs","root":"7"}]}`)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	srv = open()
	if got := names(srv); got != "reach,wcc" {
		t.Fatalf("with a clash and a bad spec: %s, want reach,wcc", got)
	}
	if res, _ := srv.Analytics().Result("wcc"); res.Spec.Type != "wcc" {
		t.Fatalf("the clash: wcc is a %s, want the configuration's wcc", res.Spec.Type)
	}
	for _, w := range []string{`not started: the configuration has one of the same name`, `name=old`, `not started: its spec does not validate`} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("the log lacks %q:\n%s", w, logs.String())
		}
	}
	// DELETE of the clashing name removes both; the bad one stays stored.
	if code, body := call(srv, "DELETE", "/v1/analytics/wcc", ""); code != 200 {
		t.Fatalf("DELETE wcc: %d %s", code, body)
	}
	if raw, _ := os.ReadFile(path); strings.Contains(string(raw), `"wcc"`) || !strings.Contains(string(raw), `"old"`) {
		t.Fatalf("after DELETE wcc the file holds %s", raw)
	}
	// A stored analytic that is not running is deleted all the same; a
	// name neither running nor stored is 404.
	if code, body := call(srv, "DELETE", "/v1/analytics/old", ""); code != 200 {
		t.Fatalf("DELETE of a stored analytic not running: %d %s", code, body)
	}
	if raw, _ := os.ReadFile(path); strings.Contains(string(raw), `"old"`) {
		t.Fatalf("after DELETE old the file holds %s", raw)
	}
	if code, _ := call(srv, "DELETE", "/v1/analytics/old", ""); code != 404 {
		t.Fatalf("DELETE of a name neither running nor stored: %d, want 404", code)
	}
	// A registration that cannot be stored is refused and not registered.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, body := call(srv, "POST", "/v1/analytics", `{"name":"lost","type":"wcc"}`); code != 500 || !strings.Contains(body, `storing the registration of \"lost\" (not registered)`) {
		t.Fatalf("POST that cannot be stored: %d %s", code, body)
	}
	if _, err := srv.Analytics().Result("lost"); err == nil {
		t.Fatal("an analytic whose registration could not be stored is registered")
	}
	if code, body := call(srv, "DELETE", "/v1/analytics/reach", ""); code != 500 || !strings.Contains(body, "still registered") {
		t.Fatalf("DELETE that cannot be stored: %d %s", code, body)
	}
	if _, err := srv.Analytics().Result("reach"); err != nil {
		t.Fatal("an analytic whose removal could not be stored is gone")
	}
	srv.Close()

	// A file that cannot be read stops serve.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for content, at := range map[string]string{
		`{"version":1,"analytics":[{"name":"x","type":"bfs"}`:                  "byte offset 51: unexpected EOF",
		`{"version":1,"analytics":[{"name":"x","type":"bfs"},,]}`:              "byte offset 52: invalid character ','",
		`{"version":1,"analytics":[{"name":"x","type":"bfs"}]} {"version":1}`:  "data after the list",
		`{"version":1,"analytics":[{"name":"x","type":"bfs","root":7}]}`:       "byte offset 58: json: cannot unmarshal number",
		`{"version":1,"analytics":[{"name":"x","type":"bfs"},{"type":"wcc"}]}`: "analytic 1 has no name",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Open(context.Background(), Config{Dir: dir, Plan: plan, Topics: []string{"edges"}, Group: "g", Format: decode.FormatBinary,
			Reset: "earliest", HTTP: HTTPConfig{DisableListening: true}})
		if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), at) {
			t.Errorf("%s: %v, want one naming %s and %q", content, err, path, at)
		}
	}
}

// TestConfigurationWinsTheMemory: when the analytics of the API restored
// from the checkpoint hold the memory a configured analytic needs, they
// stop (and stay stored) so that it registers, rather than serve failing
// to start.
func TestConfigurationWinsTheMemory(t *testing.T) {
	st, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var b engine.Batch
	for v := uint64(0); v < 40000; v++ {
		b.Insert(v, v+1)
	}
	if _, err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	vm, err := views.NewManager(st, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{MemoryLimit: 6 << 20})
	defer reg.Close()
	var logs bytes.Buffer
	s := &Server{areg: reg, log: slog.New(slog.NewTextHandler(&logs, nil))}
	api := analytics.Spec{Name: "ranks", Type: "pagerank"} // about 110 bytes a vertex and 4 an edge, as if restored
	if _, err := reg.Register(api); err != nil {
		t.Fatal(err)
	}
	if !waitFor(t, func() bool { r, _ := reg.Result("ranks"); return r.Ready }) {
		t.Fatal("pagerank did not compute")
	}
	cfg := analytics.Spec{Name: "rings", Type: "fraud", Threshold: 5, PullMemoryMiB: 3}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Register(cfg)
	if !errors.Is(err, analytics.ErrMemory) {
		t.Fatalf("the configured analytic registered beside the API's (%v): the test needs less memory", err)
	}
	restored := map[string]bool{"ranks": true}
	if err := s.makeRoomFor(cfg, []analytics.Spec{api}, restored, err); err != nil {
		t.Fatalf("makeRoomFor: %v", err)
	}
	if _, err := reg.Result("rings"); err != nil {
		t.Fatal("the configured analytic is not registered")
	}
	if _, err := reg.Result("ranks"); err == nil {
		t.Fatal("the API's analytic still runs")
	}
	if !strings.Contains(logs.String(), "the configuration's analytic needs its memory") {
		t.Fatalf("no WARN: %s", logs.String())
	}
	// Not for want of memory: the error as it was, nothing stopped.
	bad := errors.New("something else")
	if err := s.makeRoomFor(cfg, []analytics.Spec{api}, map[string]bool{"rings": true}, bad); !errors.Is(err, bad) {
		t.Fatalf("got %v", err)
	}
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, cond func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// TestRegisteredFileDamageIsRefused: once the store's durable state
// follows an analytic registered over the API, a flipped digit of its
// spec (pagerank's damping 0.85 read as 0.84) or a deleted file stops
// serve with the file and offset, and inspect --verify's check reports it,
// instead of running another analytic or none.
func TestRegisteredFileDamageIsRefused(t *testing.T) {
	dir := t.TempDir()
	plan, err := budget.Divide(budget.MinBudget, budget.Explicit{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: dir, Plan: plan, Topics: []string{"edges"}, Group: "g",
		Format: decode.FormatBinary, DeadLetterTopic: "dlq", FlushInterval: time.Second, Reset: "earliest",
		HTTP: HTTPConfig{Addr: "127.0.0.1:0", RequestTimeout: 5 * time.Second, PathBudget: 1000}}
	srv, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+srv.HTTPAddr()+"/v1/analytics", "application/json", strings.NewReader(`{"name":"pr","type":"pagerank","damping":0.85}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	// A batch of the stream, flushed: the store's durable state now
	// depends on the registration.
	var b engine.Batch
	b.Insert(1, 2)
	if _, err := srv.dir.Store.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := srv.dir.Store.Flush(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	path := datadir.RegisteredAnalyticsPath(dir)
	good, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(good, []byte("0.85")) {
		t.Fatalf("%s: %s, %v", path, good, err)
	}
	cfg.HTTP = HTTPConfig{DisableListening: true}
	for _, c := range []struct {
		name   string
		damage func() error
	}{
		{"damping 0.85 flipped to 0.84", func() error {
			return os.WriteFile(path, bytes.Replace(good, []byte("0.85"), []byte("0.84"), 1), 0o644)
		}},
		{"deleted", func() error { return os.Remove(path) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.damage(); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, good, 0o644)
			srv, err := Open(context.Background(), cfg)
			if err == nil {
				res, rerr := srv.Analytics().Result("pr")
				srv.Close()
				t.Fatalf("serve started (analytic pr: %+v, %v)", res.Spec, rerr)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("serve: %v, want an error naming %s", err, path)
			}
			r, err := datadir.Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range r.Problems {
				found = found || p.File == path
			}
			if !found {
				t.Fatalf("check: %+v, want a problem naming %s", r.Problems, path)
			}
		})
	}
	srv, err = Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("the file restored: %v", err)
	}
	defer srv.Close()
	if res, err := srv.Analytics().Result("pr"); err != nil || res.Spec.Damping != 0.85 {
		t.Fatalf("restored: %+v, %v", res.Spec, err)
	}
}
