package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/graphtide/graphtide/internal/alerts/alertschema"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/views/paths"
)

const testToken = "test-token-0123456789abcdef"

// serve starts a test server over f; mod adjusts the configuration.
func serve(t *testing.T, f *fixture, mod func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "graphtide_test_total", Help: "a test counter"}))
	cfg := Config{Store: f.store, Views: f.vm, Analytics: f.reg, Dict: f.dict,
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs
}

// vertexParam is how a test names vertex v in a request: its key when it
// has one (with "key:" when the key looks like a number), else its id.
func (f *fixture) vertexParam(v uint64) string {
	if k := keyOf(f.dict, v); k != "" {
		if _, err := strconv.ParseUint(k, 10, 64); err == nil {
			return "key:" + k
		}
		return k
	}
	return strconv.FormatUint(v, 10)
}

// sample returns some numeric vertices, every key vertex, and a vertex no
// edge touches.
func (f *fixture) sample(nv int) []uint64 {
	var vs []uint64
	for v := 0; v < nv; v += 7 {
		vs = append(vs, uint64(v))
	}
	for _, k := range fixtureKeys {
		vs = append(vs, f.keys[k])
	}
	return append(vs, 5_000_000, 900, 901, 902)
}

func TestRoutesAreDocumented(t *testing.T) {
	doc := loadDoc(t)
	f := &fixture{}
	var err error
	if f.store, err = engine.Open(t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	defer f.store.Close()
	if f.vm, err = views.NewManager(f.store, views.Config{}); err != nil {
		t.Fatal(err)
	}
	defer f.vm.Close()
	f.reg = analytics.NewRegistry(f.vm, analytics.RegistryConfig{})
	defer f.reg.Close()
	s, _ := serve(t, f, nil)
	registered := map[string]bool{}
	for _, r := range s.Routes() {
		registered[r] = true
	}
	docOps := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			docOps[method+" "+path] = true
		}
	}
	for _, r := range sortedKeys(registered) {
		if !docOps[r] {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	for _, op := range sortedKeys(docOps) {
		if !registered[op] {
			t.Errorf("openapi.yaml documents %s, which the server does not serve", op)
		}
	}
	if len(registered) == 0 {
		t.Fatal("the server registers no routes")
	}
}

// TestServerAgainstOpenAPI exercises every documented response of every
// operation against stores with data, checks the answers against oracles
// (plain maps of the edges written and single-threaded references), and
// validates every response against openapi.yaml.
func TestServerAgainstOpenAPI(t *testing.T) {
	const nv = 200
	cov := &coverage{}
	f := newFixture(t, true, 1, nv, 6000, fixtureAnalytics)
	f.waitAnalytics(t)

	var notReady atomic.Bool
	var behind atomic.Int64 // -1: not measured
	behind.Store(-1)
	fw := &fakeWriter{}
	var logs syncLog
	_, hs := serve(t, f, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Writes = fw
		c.Token = testToken
		c.Tokens = []Token{{readToken, ScopeRead}, {writeToken, ScopeWrite}}
		c.Ready = func() error {
			if notReady.Load() {
				return errors.New("no partitions assigned yet")
			}
			return nil
		}
		c.Behind = func() (int64, bool) { n := behind.Load(); return n, n >= 0 }
	})
	c := newClient(t, hs, testToken, cov)

	t.Run("health", func(t *testing.T) {
		c.t = t
		var st StatusResponse
		if c.get("/healthz", &st); st.Status != "ok" {
			t.Errorf("/healthz status %q", st.Status)
		}
		if c.get("/readyz", &st); st.Status != "ready" || st.Behind != nil {
			t.Errorf("/readyz, no lag measured: status %q, behind %v", st.Status, st.Behind)
		}
		behind.Store(12)
		if c.get("/readyz", &st); st.Status != "ready" || st.Behind == nil || *st.Behind != 12 {
			t.Errorf("/readyz, 12 records behind: status %q, behind %v", st.Status, st.Behind)
		}
		notReady.Store(true)
		for range 3 {
			c.expect("GET", "/readyz", nil, 503, "not ready: no partitions assigned yet")
		}
		if strings.Contains(logs.String(), "/readyz") {
			t.Errorf("a probe's 503 was logged (once per probe, a line every few seconds while not ready):\n%s", logs.String())
		}
		notReady.Store(false)
		if r := c.get("/metrics", nil); !strings.Contains(string(r.body), "graphtide_test_total 0") {
			t.Errorf("/metrics does not serve the Prometheus handler:\n%s", r.body)
		}
		if r := c.get("/v1/openapi.yaml", nil); string(r.body) != string(OpenAPI) {
			t.Error("/v1/openapi.yaml does not serve the embedded document")
		}
	})
	t.Run("stats", func(t *testing.T) {
		c.t = t
		var st StatsResponse
		c.get("/v1/stats", &st)
		m, err := f.store.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if st.Store.LastSeq != f.lastSeq || st.Store.DurableSeq < f.durableSeq || !st.Store.InEdges {
			t.Errorf("store stats %+v; want last seq %d, durable seq >= %d, in-edges", st.Store, f.lastSeq, f.durableSeq)
		}
		if st.Store.Files != m.Files() || st.Store.DiskBytes != m.DiskBytes() || len(st.Store.Levels) != len(m.Levels) || st.Store.Flushes < 1 {
			t.Errorf("store stats %+v do not match the engine's metrics %+v", st.Store, m)
		}
		files := st.Store.VertexRecords.Files // the fixture's records are in a file of their own
		for i, l := range st.Store.Levels {
			if l.Level != i {
				t.Errorf("level %d reported as %d", i, l.Level)
			}
			files += l.Files
		}
		if files != st.Store.Files || st.Store.VertexRecords.Files == 0 || st.Store.VertexRecords.Cells == 0 {
			t.Errorf("levels hold %d files and vertex records %+v, total says %d", files, st.Store.VertexRecords, st.Store.Files)
		}
		if st.Analytics.Count != len(fixtureAnalytics) || st.Keys != len(fixtureKeys) || st.Views.Streams != len(fixtureAnalytics) {
			t.Errorf("stats: %d analytics, %d keys, %d streams; want %d, %d, %d", st.Analytics.Count, st.Keys, st.Views.Streams,
				len(fixtureAnalytics), len(fixtureKeys), len(fixtureAnalytics))
		}
		if _, total := f.reg.Alerts("", 0); st.Analytics.Alerts != total || total == 0 {
			t.Errorf("stats report %d alerts, the registry %d (want some)", st.Analytics.Alerts, total)
		}
	})
	t.Run("degree and neighbors", func(t *testing.T) {
		c.t = t
		checkReads(t, c, f, nv, true)
		c.expect("GET", "/v1/vertices/nobody/degree", nil, 404, `vertex "nobody" is neither an id nor a known key`)
		c.expect("GET", "/v1/vertices/key:7/neighbors", nil, 404, `vertex "7" is neither an id nor a known key`)
		c.expect("GET", "/v1/vertices/9223372036854775808/degree", nil, 400, "above the largest allowed")
		c.expect("GET", "/v1/vertices/1/degree?dir=up", nil, 400, `dir must be out or in, got "up"`)
		// view=private is refused with the reason and what to use instead,
		// on every read that takes a view.
		for _, path := range []string{"/v1/vertices/1/neighbors", "/v1/vertices/1/degree", "/v1/vertices/1", "/v1/edges/1/2", "/v1/edges/1/2/events"} {
			r := c.expect("GET", path+"?view=private", nil, 400, "view=private is not offered over HTTP: a private view is a copy of the graph that one program owns")
			for _, want := range []string{"use view=fresh", "view=stale", "DB.OpenView (docs/embedding.md)"} {
				if !strings.Contains(r.errorMsg(), want) {
					t.Errorf("%s?view=private: %q does not say %q", path, r.errorMsg(), want)
				}
			}
		}
		c.expect("GET", "/v1/vertices/1/neighbors?view=copy", nil, 400, `view must be fresh or stale, got "copy"`)
		c.expect("GET", "/v1/vertices/1/neighbors?limit=10001", nil, 400, `limit must be an integer between 1 and 10000, got "10001"`)
		c.expect("GET", "/v1/vertices/1/neighbors?limit=0", nil, 400, "limit must be an integer between 1 and 10000")
		// A key or number after names a position, known here or not; the
		// id of a key must be this store's.
		c.get("/v1/vertices/1/neighbors?after=nobody", nil)
		c.get("/v1/vertices/1/neighbors?after=8589934592", nil)
		c.expect("GET", fmt.Sprintf("/v1/vertices/1/neighbors?after=%d", f.keys[fixtureKeys[0]]+1000), nil, 404, "names no key here")
		c.expect("GET", "/v1/vertices/1/neighbors?cursor=AAAA", nil, 400, "not a cursor this API gave")
		c.expect("GET", "/v1/vertices/1/neighbors?cursor=x&after=1", nil, 400, "not both")
		c.expect("GET", "/v1/vertices/1/neighbors?limit=1&limit=2", nil, 400, `query parameter "limit" is given 2 times`)
		c.expect("GET", "/v1/vertices/1/degree?direction=in", nil, 400, `unknown query parameter "direction"; allowed: dir, view`)
		c.expect("GET", "/v1/edges/1/nobody", nil, 404, `vertex "nobody" is neither an id nor a known key`)
		c.expect("GET", "/v1/edges/1/2?dir=in", nil, 400, `unknown query parameter "dir"; allowed: view, types, window, limit`)
		c.expect("GET", "/v1/edges/9223372036854775808/2", nil, 400, "src: vertex id 9223372036854775808 is above the largest allowed")
	})
	t.Run("paths", func(t *testing.T) {
		c.t = t
		checkPaths(t, c, f, nv)
		var p PathResponse
		c.get("/v1/paths?from=900&to=902", &p)
		if !p.Found || *p.Length != 2 {
			t.Errorf("900 -> 902 unweighted: %+v", p)
		}
		c.expect("GET", "/v1/paths?from=900&to=902&weighted=true", nil, 422, "weighted paths need non-negative weights, but edge 900->901 has weight -1")
		c.expect("GET", "/v1/paths?from=900&to=902&weighted=true&max_depth=3", nil, 422, "non-negative weights")
		c.expect("GET", "/v1/paths?to=1", nil, 400, "from is required")
		c.expect("GET", "/v1/paths?from=1&to=nobody", nil, 404, `vertex "nobody"`)
		c.expect("GET", "/v1/paths?from=1&to=2&weighted=maybe", nil, 400, `weighted must be true or false, got "maybe"`)
		c.expect("GET", "/v1/paths?from=1&to=2&max_depth=-1", nil, 400, "max_depth must be an integer between 0 and 1048576")
	})
	t.Run("analytics", func(t *testing.T) {
		c.t = t
		checkAnalytics(t, c, f, nv)
	})
	t.Run("alerts", func(t *testing.T) {
		c.t = t
		checkAlerts(t, c, f)
	})
	t.Run("batches", func(t *testing.T) {
		c.t = t
		checkBatches(t, c, fw)
		_, off := serve(t, f, nil) // no writes topic
		newClient(t, off, "", cov).expect("POST", "/v1/batches", []byte(`{"ops":[{"src":1,"dst":2}]}`), 404, "writes are off")
	})
	t.Run("auth and unknown parameters on every operation", func(t *testing.T) {
		c.t = t
		anon := newClient(t, hs, "", cov)
		wrong := newClient(t, hs, "not-the-token-0123456789", cov)
		readOnly, writeOnly := newClient(t, hs, readToken, cov), newClient(t, hs, writeToken, cov)
		doc := loadDoc(t)
		for path, item := range doc.Paths.Map() {
			concrete := strings.NewReplacer("{v}", "1", "{name}", "wcc").Replace(path)
			for method := range item.Operations() {
				if !strings.HasPrefix(path, "/v1/") {
					// Open to all: probes and scrapers need no token.
					if r := anon.do(method, concrete, nil, false); r.status == 401 {
						t.Errorf("%s %s asks for a token", method, path)
					}
					continue
				}
				anon.expect(method, concrete, nil, 401, "missing or wrong bearer token")
				r := wrong.expect(method, concrete, nil, 401, "missing or wrong bearer token")
				if !strings.Contains(string(r.body), "Authorization: Bearer <token>") {
					t.Errorf("%s %s: the 401 body escapes or lacks the header it asks for: %s", method, path, r.body)
				}
				if r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: 401 without WWW-Authenticate", method, path)
				}
				// A token without the operation's scope: 403 naming it.
				need, _ := item.GetOperation(method).Extensions["x-graphtide-scope"].(string)
				lacking := readOnly
				if need == "read" {
					lacking = writeOnly
				}
				lacking.expect(method, concrete, nil, 403, "that needs the "+need+" scope")
				c.expect(method, concrete+"?bogus=1", nil, 400, `unknown query parameter "bogus"`)
			}
		}
		// Requests that match no route get JSON errors too.
		for _, tc := range []struct {
			method, path string
			status       int
			want         string
		}{
			{"GET", "/v1/nope", 404, "no endpoint /v1/nope"},
			{"PUT", "/v1/stats", 405, "method PUT is not allowed on /v1/stats; allowed: GET, HEAD"},
			{"GET", "/nope", 404, "no endpoint /nope"},
		} {
			req, _ := http.NewRequest(tc.method, hs.URL+tc.path, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e ErrorResponse
			err = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != tc.status || err != nil || !strings.Contains(e.Error, tc.want) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s = %d %q (%v); want %d JSON containing %q", tc.method, tc.path, resp.StatusCode, e.Error, err, tc.status, tc.want)
			}
		}
	})
	t.Run("limits", func(t *testing.T) {
		// A server whose deadline has passed before any work starts.
		_, slow := serve(t, f, func(c *Config) { c.Limits.RequestTimeout = time.Nanosecond })
		sc := newClient(t, slow, "", cov)
		for _, p := range []string{"/v1/vertices/1", "/v1/vertices/1/degree", "/v1/vertices/1/neighbors", "/v1/edges/1/2", "/v1/edges/1/2/events", "/v1/paths?from=1&to=2", "/v1/changes?from=1&to=1"} {
			sc.expect("GET", p, nil, 503, "request took longer than its timeout of 1ns (serve --http-request-timeout)")
		}
		// A path search with a budget of one edge.
		_, tight := serve(t, f, func(c *Config) { c.Limits.PathBudget = 1 })
		tc := newClient(t, tight, "", cov)
		from, to := farPair(t, f)
		for _, q := range []string{"", "&weighted=true", "&weighted=true&max_depth=5"} {
			tc.expect("GET", fmt.Sprintf("/v1/paths?from=%d&to=%d%s", from, to, q), nil, 422, "over its budget of 1")
		}
		// The most analytics.
		_, full := serve(t, f, func(c *Config) { c.Limits.MaxAnalytics = len(fixtureAnalytics) })
		newClient(t, full, "", cov).expect("POST", "/v1/analytics", []byte(`{"type":"wcc","name":"more"}`), 409,
			fmt.Sprintf("%d analytics are registered, the most allowed", len(fixtureAnalytics)))
	})
	t.Run("registrations that cannot be stored", func(t *testing.T) {
		_, broken := serve(t, f, func(c *Config) { c.Persist = failingPersist{} })
		bc := newClient(t, broken, "", cov)
		bc.expect("POST", "/v1/analytics", []byte(`{"type":"wcc","name":"unstored"}`), 500, `storing the registration of "unstored" (not registered): disk full`)
		bc.expect("GET", "/v1/analytics/unstored", nil, 404, "unstored")
		bc.expect("DELETE", "/v1/analytics/wcc", nil, 500, `storing the removal of "wcc" (still registered): disk full`)
		if _, err := f.reg.Result("wcc"); err != nil {
			t.Fatalf("wcc is gone after a removal that could not be stored: %v", err)
		}
	})
	t.Run("changes", func(t *testing.T) {
		c.t = t
		checkChanges(t, c, f)
		c.expect("GET", "/v1/changes?from=5", nil, 400, "to (a sequence number) or to_time (an RFC 3339 time) is required")
		c.expect("GET", "/v1/changes?from=5&to_time=noon", nil, 400, `to_time must be an RFC 3339 time such as 2026-11-26T10:15:00Z, got "noon"`)
		c.expect("GET", "/v1/changes?from=9&to=3", nil, 400, "from (9) must not be above to (3)")
		c.expect("GET", "/v1/changes?from=1&to=2&after=1", nil, 400, "after and after_dst go together")
		c.expect("GET", fmt.Sprintf("/v1/changes?from=1&to=%d", f.lastSeq+5), nil, 400, "is not applied yet")
		c.expect("GET", "/v1/changes?from=1&to=2&after=nobody&after_dst=1", nil, 404, `vertex "nobody"`)
		// A cursor: continued without from and to, or with the same ones;
		// refused with others, with after, and by another server (its
		// seqs and ids would be another replica's).
		var first ChangesResponse
		c.get(fmt.Sprintf("/v1/changes?from=%d&to=%d&limit=1", f.durableSeq, f.lastSeq), &first)
		var next, again ChangesResponse
		c.get("/v1/changes?limit=1&cursor="+first.NextCursor, &next)
		c.get(fmt.Sprintf("/v1/changes?from=%d&to=%d&limit=1&cursor=%s", f.durableSeq, f.lastSeq, first.NextCursor), &again)
		if next.From != f.durableSeq || next.To != f.lastSeq || len(next.Changes) != 1 || fmt.Sprint(next.Changes, next.NextCursor) != fmt.Sprint(again.Changes, again.NextCursor) || fmt.Sprint(next.Changes) == fmt.Sprint(first.Changes) {
			t.Errorf("the page after the first change: %+v and %+v (the first %+v)", next, again, first)
		}
		c.expect("GET", fmt.Sprintf("/v1/changes?from=%d&limit=1&cursor=%s", f.durableSeq+1, first.NextCursor), nil, 400,
			fmt.Sprintf("the cursor continues the listing from seq %d to seq %d, and from names seq %d", f.durableSeq, f.lastSeq, f.durableSeq+1))
		c.expect("GET", "/v1/changes?cursor="+first.NextCursor+"&after=1&after_dst=2", nil, 400, "not both")
		_, other := serve(t, f, nil)
		newClient(t, other, "", cov).expect("GET", "/v1/changes?cursor="+first.NextCursor, nil, 409, "made by another server")
	})
	t.Run("reads as of a time", func(t *testing.T) {
		c.t = t
		c.expect("GET", "/v1/vertices/1/degree?as_of_time=2026-11-26T10:15:00Z", nil, 400, "as_of_time needs the store's time index")
		// A server with a time index: the durable seq was newest from t1,
		// the newest from t2.
		idx, err := history.Open(filepath.Join(t.TempDir(), history.FileName), f.lastSeq, false)
		if err != nil {
			t.Fatal(err)
		}
		defer idx.Close()
		t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
		t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
		for _, s := range []history.Sample{{Time: t0, Seq: 1}, {Time: t1, Seq: f.durableSeq}, {Time: t2, Seq: f.lastSeq}} {
			if err := idx.Record(s.Time, s.Seq); err != nil {
				t.Fatal(err)
			}
		}
		_, hs := serve(t, f, func(c *Config) { c.Times = idx })
		tc := newClient(t, hs, "", cov)
		at := url.QueryEscape(t1.Add(30 * time.Second).Format(time.RFC3339Nano))
		adj := f.durable.Adj(engine.Out)
		for _, v := range f.sample(nv)[:20] {
			var d DegreeResponse
			tc.get(fmt.Sprintf("/v1/vertices/%s/degree?as_of_time=%s", url.PathEscape(f.vertexParam(v)), at), &d)
			if d.Seq != f.durableSeq || d.Degree != uint64(len(adj[v])) {
				t.Errorf("degree of %d as of %s: %+v, want %d at seq %d", v, at, d, len(adj[v]), f.durableSeq)
			}
		}
		var ch ChangesResponse
		tc.get(fmt.Sprintf("/v1/changes?from_time=%s&to_time=%s&limit=1", url.QueryEscape(t1.Format(time.RFC3339)), url.QueryEscape(t2.Format(time.RFC3339))), &ch)
		if ch.From != f.durableSeq || ch.To != f.lastSeq || len(ch.Changes) != 1 {
			t.Errorf("changes from %v to %v: %+v", t1, t2, ch)
		}
		tc.expect("GET", "/v1/edges/1/2?as_of_time=2026-11-26T09:00:00Z", nil, 410,
			"as_of_time 2026-11-26T09:00:00Z is before the oldest time the index knows, 2026-11-26T10:00:00Z")
	})
	t.Run("vertex records", func(t *testing.T) {
		c.t = t
		if len(f.records) == 0 || len(f.durableRecords) == 0 {
			t.Fatal("the fixture wrote no vertex records")
		}
		ids := f.sample(nv)
		for v := range f.records {
			ids = append(ids, v)
		}
		for _, k := range fixtureKeys {
			ids = append(ids, f.keys[k])
		}
		for _, at := range []struct {
			q    string
			seq  uint64
			g    graph
			recs map[uint64]engine.Vertex
		}{{"", f.lastSeq, f.live, f.records}, {fmt.Sprintf("?as_of_seq=%d", f.durableSeq), f.durableSeq, f.durable, f.durableRecords}} {
			has := map[uint64]bool{}
			for e := range at.g {
				has[e[0]], has[e[1]] = true, true // the fixture keeps in-edges
			}
			for _, v := range ids {
				var got VertexResponse
				c.get("/v1/vertices/"+url.PathEscape(f.vertexParam(v))+at.q, &got)
				rec, ok := at.recs[v]
				want := VertexResponse{Vertex: vertexOf(f.dict, v), View: "fresh", Seq: at.seq, Exists: ok || has[v], Record: ok, Label: rec.Label, Props: rec.Props}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("GET /v1/vertices/%d%s: %+v (props %s), want %+v (props %s)", v, at.q, got, got.Props, want, want.Props)
				}
			}
		}
		c.expect("GET", "/v1/vertices/nobody", nil, 404, `vertex "nobody" is neither an id nor a known key`)
		c.expect("GET", "/v1/vertices/1?types=a", nil, 400, `unknown query parameter "types"; allowed: view, as_of_seq, as_of_time`)
	})
	t.Run("reads as of a seq outside the history", func(t *testing.T) {
		c.t = t
		c.expect("GET", fmt.Sprintf("/v1/vertices/1/degree?as_of_seq=%d", f.lastSeq+1), nil, 400,
			fmt.Sprintf("as_of_seq %d: seq %d is not applied yet: the newest is %d (readable now: 0 to %d)", f.lastSeq+1, f.lastSeq+1, f.lastSeq, f.lastSeq))
		c.expect("GET", "/v1/vertices/1/neighbors?as_of_seq=yesterday", nil, 400, `as_of_seq must be a sequence number (an unsigned integer), got "yesterday"`)
		c.expect("GET", "/v1/edges/1/2?as_of_seq=1&view=stale", nil, 400, "as_of_seq and as_of_time read the store as it was then: they go with view=fresh, not view=stale")
		c.expect("GET", "/v1/edges/1/2?as_of_seq=1&as_of_time=2026-11-26T10:15:00Z", nil, 400, "give as_of_seq or as_of_time, not both")
		// The history floor raised past the durable seq: reads as of it are
		// gone (410), and name what is readable.
		if err := f.store.SetHistoryFloor(f.lastSeq); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("as_of_seq %d: seq %d is older than the oldest readable one, %d (history retention) (readable now: %d to %d)",
			f.durableSeq, f.durableSeq, f.lastSeq, f.lastSeq, f.lastSeq)
		for _, p := range []string{"/v1/vertices/1", "/v1/vertices/1/degree", "/v1/vertices/1/neighbors", "/v1/edges/1/2", "/v1/edges/1/2/events"} {
			c.expect("GET", fmt.Sprintf("%s?as_of_seq=%d", p, f.durableSeq), nil, 410, want)
		}
		c.expect("GET", fmt.Sprintf("/v1/paths?from=1&to=2&as_of_seq=%d", f.durableSeq), nil, 410, want)
		c.expect("GET", fmt.Sprintf("/v1/changes?from=%d&to=%d", f.durableSeq, f.lastSeq), nil, 410, "older than the oldest readable one")
	})
	t.Run("closed store", func(t *testing.T) {
		checkClosed(t, cov)
	})
	t.Run("partitioned mode", func(t *testing.T) {
		checkPartitioned(t, cov)
	})
	t.Run("exports", func(t *testing.T) {
		checkExports(t, cov)
	})
	t.Run("bounds of every request string", func(t *testing.T) {
		checkBounded(t, cov)
	})

	// Every documented response was produced.
	for _, k := range sortedKeys(documented(loadDoc(t))) {
		if !cov.seen[k] {
			t.Errorf("no test produced the documented response %s", k)
		}
	}
}

// checkChanges pages through the changes between the durable seq and the
// newest with a small limit, and compares them with the difference of the
// fixture's two graphs; and from a seq to itself, none.
func checkChanges(t *testing.T, c *client, f *fixture) {
	want := map[[2]uint64]string{}
	for e, w := range f.durable {
		switch nw, ok := f.live[e]; {
		case !ok:
			want[e] = fmt.Sprintf("removed %v", w)
		case nw != w:
			want[e] = fmt.Sprintf("changed %v from %v", nw, w)
		}
	}
	for e, w := range f.live {
		if _, ok := f.durable[e]; !ok {
			want[e] = fmt.Sprintf("added %v", w)
		}
	}
	if len(want) < 20 {
		t.Fatalf("the fixture's last fifth changed only %d edges", len(want))
	}
	got := map[[2]uint64]string{}
	var order [][2]uint64
	after := ""
	for pages := 0; ; pages++ {
		var r ChangesResponse
		c.get(fmt.Sprintf("/v1/changes?from=%d&to=%d&limit=7%s", f.durableSeq, f.lastSeq, after), &r)
		if r.From != f.durableSeq || r.To != f.lastSeq || len(r.Changes) > 7 || pages > 10000 {
			t.Fatalf("changes page %d: %+v", pages, r)
		}
		for _, x := range r.Changes {
			e := [2]uint64{x.Src, x.Dst}
			if x.SrcKey != keyOf(f.dict, x.Src) || x.DstKey != keyOf(f.dict, x.Dst) {
				t.Errorf("change %+v: keys, want %q and %q", x, keyOf(f.dict, x.Src), keyOf(f.dict, x.Dst))
			}
			d := fmt.Sprintf("%s %v", x.Change, x.Weight)
			if (x.OldWeight != nil) != (x.Change == "changed") {
				t.Errorf("change %+v: old_weight goes with changed and only with it", x)
			}
			if x.OldWeight != nil {
				d += fmt.Sprintf(" from %v", *x.OldWeight)
			}
			if _, dup := got[e]; dup {
				t.Fatalf("change of %v listed twice", e)
			}
			got[e] = d
			order = append(order, e)
		}
		if r.NextAfter == nil {
			break
		}
		if len(r.Changes) != 7 || r.NextCursor == "" {
			t.Fatalf("a page of %d changes has a cursor (next_cursor %q)", len(r.Changes), r.NextCursor)
		}
		// Alternate the cursor and the legacy after and after_dst.
		after = fmt.Sprintf("&after=%d&after_dst=%d", *r.NextAfter, *r.NextAfterDst)
		if pages%2 == 0 {
			after = "&cursor=" + r.NextCursor
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("changes from %d to %d: %d, want %d:\n got  %v\n want %v", f.durableSeq, f.lastSeq, len(got), len(want), got, want)
	}
	if !slices.IsSortedFunc(order, func(a, b [2]uint64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		t.Errorf("changes are not in (src, dst) order: %v", order)
	}
	var none ChangesResponse
	c.get(fmt.Sprintf("/v1/changes?from=%d&to=%d", f.lastSeq, f.lastSeq), &none)
	if len(none.Changes) != 0 || none.NextAfter != nil {
		t.Errorf("changes from the newest seq to itself: %+v", none)
	}
}

// farPair returns two vertices with a path of at least three hops.
func farPair(t *testing.T, f *fixture) (uint64, uint64) {
	t.Helper()
	for v := range f.live.Adj(engine.Out) {
		for w, l := range refDists(f.live, v, false, 0) {
			if l >= 3 {
				return v, w
			}
		}
	}
	t.Fatal("the fixture has no path of three hops")
	return 0, 0
}

// checkReads compares degrees and every page of neighbors with the oracle,
// in both views and (with in-edges) both directions.
func checkReads(t *testing.T, c *client, f *fixture, nv int, inEdges bool) {
	dirs := []engine.Direction{engine.Out}
	if inEdges {
		dirs = append(dirs, engine.In)
	}
	// "as of" reads the fresh view as of the durable seq (the fixture keeps
	// history), which must be what a stale view reads now.
	for _, view := range []string{"fresh", "stale", "as of"} {
		g, seq := f.live, f.lastSeq
		if view != "fresh" {
			g, seq = f.durable, f.durableSeq
		}
		viewName := view
		if view == "as of" {
			viewName = "fresh"
		}
		for _, dir := range dirs {
			adj := g.Adj(dir)
			for _, v := range f.sample(nv) {
				vp := url.PathEscape(f.vertexParam(v))
				q := fmt.Sprintf("dir=%s&view=%s", dirName(dir), view)
				switch {
				case view == "as of":
					q = fmt.Sprintf("dir=%s&as_of_seq=%d", dirName(dir), seq)
				case view == "fresh" && dir == engine.Out:
					q = "" // the defaults
				}
				var d DegreeResponse
				c.get(fmt.Sprintf("/v1/vertices/%s/degree?%s", vp, q), &d)
				want := DegreeResponse{Vertex: v, Key: keyOf(f.dict, v), Dir: dirName(dir), View: viewName, Seq: seq, Degree: uint64(len(adj[v]))}
				if d != want {
					t.Errorf("degree of %d: %+v, want %+v", v, d, want)
				}
				// Page through with a small limit.
				var got []Neighbor
				after := ""
				for pages := 0; ; pages++ {
					var n NeighborsResponse
					pq := q
					if strings.HasSuffix(after, "&as_of_seq=-") {
						pq, after = "dir="+dirName(dir), strings.TrimSuffix(after, "&as_of_seq=-")
					}
					c.get(fmt.Sprintf("/v1/vertices/%s/neighbors?%s&limit=7%s", vp, pq, after), &n)
					if n.Vertex != v || n.Key != keyOf(f.dict, v) || n.Degree != uint64(len(adj[v])) || len(n.Neighbors) > 7 {
						t.Fatalf("neighbors of %d: %+v", v, n)
					}
					got = append(got, n.Neighbors...)
					if n.NextAfter == nil {
						break
					}
					if len(n.Neighbors) != 7 || *n.NextAfter != n.Neighbors[6].ID {
						t.Fatalf("neighbors of %d: a page of %d ends with next_after %d", v, len(n.Neighbors), *n.NextAfter)
					}
					// The fixture keeps history: a fresh page names its seq for
					// the next pages to pin (a stale one does not).
					if pin := view != "stale"; (n.NextAsOfSeq != nil) != pin || pin && *n.NextAsOfSeq != seq {
						t.Fatalf("%s neighbors of %d: next_as_of_seq %v, want the page's seq %d: %v", view, v, n.NextAsOfSeq, seq, pin)
					}
					// Alternate the cursor and the legacy after, as an id
					// and as the key (with as_of_seq, when pinned).
					switch pages % 3 {
					case 0:
						// The cursor pins the view as of seq itself.
						after = "&cursor=" + n.NextCursor
						if view == "as of" {
							after += "&as_of_seq=-" // dropped below
						}
					case 1:
						after = "&after=" + strconv.FormatUint(*n.NextAfter, 10)
					default:
						after = "&after=" + url.QueryEscape(f.vertexParam(*n.NextAfter))
					}
				}
				if len(got) != len(adj[v]) {
					t.Fatalf("%s %s neighbors of %d: %d, want %d", view, dirName(dir), v, len(got), len(adj[v]))
				}
				for i, w := range inPositionOrder(f.dict, slices.Clone(adj[v])) {
					want := Neighbor{ID: w, Key: keyOf(f.dict, w), Weight: g.Weight(v, w, dir)}
					if got[i] != want {
						t.Errorf("%s %s neighbor %d of %d: %+v, want %+v", view, dirName(dir), i, v, got[i], want)
					}
				}
				if dir != engine.Out {
					continue
				}
				// Edge lookups: to each out-neighbor, and to the sampled
				// vertices (mostly none).
				for _, w := range append(slices.Clone(adj[v]), f.sample(nv)...) {
					var e EdgeResponse
					vq := "?view=" + view
					switch view {
					case "fresh":
						vq = ""
					case "as of":
						vq = fmt.Sprintf("?as_of_seq=%d", seq)
					}
					c.get(fmt.Sprintf("/v1/edges/%s/%s%s", vp, url.PathEscape(f.vertexParam(w)), vq), &e)
					_, ok := g[[2]uint64{v, w}]
					want := EdgeResponse{Src: vertexOf(f.dict, v), Dst: vertexOf(f.dict, w), View: viewName, Seq: seq, Found: ok, Edges: []Neighbor{}}
					if ok {
						want.Edges = []Neighbor{{ID: w, Key: keyOf(f.dict, w), Weight: g.Weight(v, w, dir)}}
					}
					if fmt.Sprint(e) != fmt.Sprint(want) {
						t.Errorf("%s edge %d -> %d: %+v, want %+v", view, v, w, e, want)
					}
					// A replace edge (the fixture's are) has no events.
					var ev EventsResponse
					c.get(fmt.Sprintf("/v1/edges/%s/%s/events%s", vp, url.PathEscape(f.vertexParam(w)), vq), &ev)
					if ev.Count != 0 || len(ev.Events) != 0 || ev.Folded || ev.Seq != seq {
						t.Errorf("%s events of the replace edge %d -> %d: %+v", view, v, w, ev)
					}
				}
			}
		}
	}
}

// checkPaths compares path queries between many pairs with the oracle's
// shortest lengths, and checks that each path returned is one.
func checkPaths(t *testing.T, c *client, f *fixture, nv int) {
	vs := f.sample(nv)
	n, found := 0, 0
	type query struct {
		from uint64
		o    paths.Options
	}
	memo := map[query]map[uint64]float64{}
	for i, a := range vs {
		for j := i % 5; j < len(vs); j += 5 {
			b := vs[j]
			for _, o := range []paths.Options{{}, {MaxDepth: 2}, {Weighted: true}, {Weighted: true, MaxDepth: 3}} {
				if a == 900 && o.Weighted {
					continue // the negative weight
				}
				q := fmt.Sprintf("/v1/paths?from=%s&to=%s", url.QueryEscape(f.vertexParam(a)), url.QueryEscape(f.vertexParam(b)))
				if o.Weighted {
					q += "&weighted=true"
				}
				if o.MaxDepth > 0 {
					q += fmt.Sprintf("&max_depth=%d", o.MaxDepth)
				}
				var p PathResponse
				c.get(q, &p)
				n++
				if p.Found {
					found++
				}
				ref, ok := memo[query{a, o}]
				if !ok {
					ref = refDists(f.live, a, o.Weighted, o.MaxDepth)
					memo[query{a, o}] = ref
				}
				checkPath(t, f.live, ref, a, b, o, p.Found, p.Length, p.Path)
				if p.From != (Vertex{a, keyOf(f.dict, a)}) || p.To != (Vertex{b, keyOf(f.dict, b)}) || p.Seq != f.lastSeq || p.Weighted != o.Weighted || p.MaxDepth != o.MaxDepth {
					t.Errorf("path %s: %+v", q, p)
				}
				for _, x := range p.Path {
					if x.Key != keyOf(f.dict, x.ID) {
						t.Errorf("path %s: vertex %d has key %q", q, x.ID, x.Key)
					}
				}
			}
		}
	}
	if n < 100 || found < n/4 || found > n*3/4 {
		t.Fatalf("%d path queries, %d found: want at least 100, about half found", n, found)
	}
}

// checkPath checks one answer against the oracle: found and length as the
// reference search from a says (ref), and the path a real one of that length within the
// depth bound.
func checkPath(t *testing.T, g graph, ref map[uint64]float64, a, b uint64, o paths.Options, found bool, length *float64, path []Vertex) {
	t.Helper()
	wantLen, wantFound := ref[b]
	if found != wantFound {
		t.Errorf("path %d -> %d %+v: found %v, want %v", a, b, o, found, wantFound)
		return
	}
	if !found {
		if length != nil || len(path) != 0 {
			t.Errorf("path %d -> %d %+v: not found, yet length %v and path %v", a, b, o, length, path)
		}
		return
	}
	if length == nil {
		t.Errorf("path %d -> %d %+v: found without a length", a, b, o)
		return
	}
	if math.Abs(*length-wantLen) > 1e-9 {
		t.Errorf("path %d -> %d %+v: length %v, want %v", a, b, o, *length, wantLen)
		return
	}
	if len(path) == 0 || path[0].ID != a || path[len(path)-1].ID != b {
		t.Errorf("path %d -> %d %+v: %v does not join them", a, b, o, path)
		return
	}
	sum := 0.0
	for i := 1; i < len(path); i++ {
		w, ok := g[[2]uint64{path[i-1].ID, path[i].ID}]
		if !ok {
			t.Errorf("path %d -> %d %+v: %v uses a missing edge %d -> %d", a, b, o, path, path[i-1].ID, path[i].ID)
			return
		}
		sum += w
	}
	hops := float64(len(path) - 1)
	if !o.Weighted {
		sum = hops
	}
	if math.Abs(sum-*length) > 1e-9 || (o.MaxDepth > 0 && hops > float64(o.MaxDepth)) {
		t.Errorf("path %d -> %d %+v: %v has length %v and %v hops, reported %v", a, b, o, path, sum, hops, *length)
	}
}

// refLevels: BFS levels over the oracle from root.
func refLevels(g graph, root uint64) map[uint64]int {
	out := g.Adj(engine.Out)
	lv := map[uint64]int{root: 0}
	for q := []uint64{root}; len(q) > 0; q = q[1:] {
		for _, w := range out[q[0]] {
			if _, ok := lv[w]; !ok {
				lv[w] = lv[q[0]] + 1
				q = append(q, w)
			}
		}
	}
	return lv
}

func checkAnalytics(t *testing.T, c *client, f *fixture, nv int) {
	var list struct {
		Analytics []struct {
			AnalyticResult
			Summary json.RawMessage `json:"summary"`
		} `json:"analytics"`
	}
	c.get("/v1/analytics", &list)
	var names []string
	for _, a := range list.Analytics {
		names = append(names, a.Spec.Name)
		if !a.Ready || a.Seq != f.lastSeq || a.UpdatedAt == nil || a.Error != "" {
			t.Errorf("analytic %s: %+v, want ready at seq %d", a.Spec.Name, a.AnalyticResult, f.lastSeq)
		}
		var one AnalyticResult
		c.get("/v1/analytics/"+a.Spec.Name, &one)
		if one.Spec != a.Spec {
			t.Errorf("GET /v1/analytics/%s: spec %+v, the list says %+v", a.Spec.Name, one.Spec, a.Spec)
		}
	}
	want := []string{"cost", "fanin", "fanout", "fraud", "hubs", "pagerank", "reach", "wcc"}
	if !slices.Equal(names, want) {
		t.Errorf("analytics %v, want %v", names, want)
	}
	summary := func(name string, v any) {
		for _, a := range list.Analytics {
			if a.Spec.Name == name {
				if err := json.Unmarshal(a.Summary, v); err != nil {
					t.Fatalf("summary of %s: %v", name, err)
				}
				return
			}
		}
		t.Fatalf("no analytic %s", name)
	}

	// bfs from a key: the summary and every sampled vertex's level.
	alice := f.keys["alice"]
	levels := refLevels(f.live, alice)
	var bfs BFSSummary
	summary("reach", &bfs)
	maxLevel := 0
	for _, l := range levels {
		maxLevel = max(maxLevel, l)
	}
	if bfs.Root != alice || bfs.RootKey != "alice" || bfs.Reached != len(levels) || bfs.MaxLevel != maxLevel {
		t.Errorf("reach summary %+v; want root %d (alice), %d reached, max level %d", bfs, alice, len(levels), maxLevel)
	}
	comp, size := refComponents(f.live)
	dist := refDistances(f.live, 3)
	pr := refPageRank(f.live, 0.85)
	outdeg := map[uint64]int{}
	for k := range f.live {
		outdeg[k[0]]++
	}
	for _, v := range f.sample(nv) {
		vp := url.PathEscape(f.vertexParam(v))
		var r struct {
			VertexResultResponse
			Result json.RawMessage `json:"result"`
		}
		result := func(name string, x any) {
			c.get(fmt.Sprintf("/v1/analytics/%s/vertices/%s", name, vp), &r)
			if r.Analytic != name || r.Vertex != v || r.Key != keyOf(f.dict, v) || r.Seq != f.lastSeq {
				t.Errorf("%s result of %d: %+v", name, v, r.VertexResultResponse)
			}
			if err := json.Unmarshal(r.Result, x); err != nil {
				t.Fatal(err)
			}
		}
		var lv LevelResult
		result("reach", &lv)
		if l, ok := levels[v]; (ok && lv.Level != l) || (!ok && lv.Level != -1) {
			t.Errorf("level of %d: %d, want %d (reached %v)", v, lv.Level, l, ok)
		}
		var cr ComponentResult
		result("wcc", &cr)
		wantComp, wantSize := v, 1
		if m, ok := comp[v]; ok {
			wantComp, wantSize = m, size[m]
		}
		if cr != (ComponentResult{wantComp, keyOf(f.dict, wantComp), wantSize}) {
			t.Errorf("component of %d: %+v, want %d (size %d)", v, cr, wantComp, wantSize)
		}
		var dr DistanceResult
		result("cost", &dr)
		if d, ok := dist[v]; dr.Reachable != ok || (ok && math.Abs(dr.Distance-d) > 1e-9) {
			t.Errorf("distance of %d: %+v, want %v (reachable %v)", v, dr, d, ok)
		}
		var rr RankResult
		result("pagerank", &rr)
		if math.Abs(rr.Rank-pr[v]) > 1e-9 {
			t.Errorf("rank of %d: %v, want %v", v, rr.Rank, pr[v])
		}
		if outdeg[v] > 6 {
			var vr ValueResult
			result("hubs", &vr)
			if vr.Value != float64(outdeg[v]) {
				t.Errorf("hubs value of %d: %v, want %d", v, vr.Value, outdeg[v])
			}
		} else {
			c.expect("GET", fmt.Sprintf("/v1/analytics/hubs/vertices/%s", vp), nil, 404, "has no result for vertex")
		}
	}

	// The monitors' summaries and PageRank's top list.
	var hubs MonitorSummary
	summary("hubs", &hubs)
	above := 0
	for _, d := range outdeg {
		if d > 6 {
			above++
		}
	}
	if hubs.Above != above || hubs.Threshold != 6 || len(hubs.Top) != min(10, above) {
		t.Errorf("hubs summary %+v, want %d above 6", hubs, above)
	}
	for _, x := range hubs.Top {
		if x.Value != float64(outdeg[x.Vertex]) || x.Key != keyOf(f.dict, x.Vertex) {
			t.Errorf("hubs top %+v, out-degree %d", x, outdeg[x.Vertex])
		}
	}
	var prs PageRankSummary
	summary("pagerank", &prs)
	if prs.Vertices != len(pr) || len(prs.Top) != 10 {
		t.Errorf("pagerank summary %+v, want %d vertices and 10 top", prs, len(pr))
	}
	// The residual the summary carries is the run's: positive (rounding
	// leaves some) and at most damping * tolerance (1e-12, the fixture's).
	if !(prs.Residual > 0 && prs.Residual <= 0.85e-12) {
		t.Errorf("pagerank summary's residual %v, want in (0, 0.85e-12]", prs.Residual)
	}
	ranked := make([]uint64, 0, len(pr))
	for v := range pr {
		ranked = append(ranked, v)
	}
	sort.Slice(ranked, func(i, j int) bool { return pr[ranked[i]] > pr[ranked[j]] })
	var top TopResponse
	c.get("/v1/analytics/pagerank/top?k=5", &top)
	if top.Analytic != "pagerank" || !top.Ready || top.K != 5 || len(top.Top) != 5 {
		t.Fatalf("top: %+v", top)
	}
	for i, x := range top.Top {
		if math.Abs(x.Rank-pr[x.Vertex]) > 1e-9 || math.Abs(x.Rank-pr[ranked[i]]) > 1e-9 || x.Key != keyOf(f.dict, x.Vertex) {
			t.Errorf("top %d: %+v; want the rank %v of %d", i, x, pr[ranked[i]], ranked[i])
		}
	}
	c.get("/v1/analytics/pagerank/top", &top)
	if top.K != 10 || len(top.Top) != 10 {
		t.Errorf("top without k: %+v, want 10", top)
	}
	var wcc analytics.WCCSummary
	summary("wcc", &wcc)
	largest, comps := 0, 0
	for _, s := range size {
		if s > 1 {
			comps++
			largest = max(largest, s)
		}
	}
	if wcc.Components != comps || wcc.Largest != largest {
		t.Errorf("wcc summary %+v; want %d components, the largest of %d", wcc, comps, largest)
	}
	var sssp SSSPSummary
	summary("cost", &sssp)
	maxDist := 0.0
	for _, d := range dist {
		maxDist = max(maxDist, d)
	}
	if sssp.Root != 3 || sssp.RootKey != "" || sssp.Reached != len(dist) || sssp.MaxDist != maxDist {
		t.Errorf("sssp summary %+v; want %d reached, max distance %v", sssp, len(dist), maxDist)
	}
	var fraud FraudSummary
	summary("fraud", &fraud)
	if fraud.MaxCycle != 3 || fraud.Cycles == 0 || fraud.FanIn.Threshold != 4 {
		t.Errorf("fraud summary %+v", fraud)
	}
	c.expect("GET", "/v1/analytics/wcc/top", nil, 400, `analytic "wcc" is a wcc analytic: top needs a pagerank analytic`)
	c.expect("GET", "/v1/analytics/pagerank/top?k=1001", nil, 400, "k must be an integer between 1 and 1000")
	c.expect("GET", "/v1/analytics/nope/top", nil, 404, `no analytic of that name: "nope"`)
	c.expect("GET", "/v1/analytics/nope", nil, 404, `no analytic of that name: "nope"`)
	c.expect("GET", "/v1/analytics/nope/vertices/1", nil, 404, `no analytic of that name: "nope"`)
	c.expect("GET", "/v1/analytics/wcc/vertices/nobody", nil, 404, `vertex "nobody"`)
	c.expect("GET", "/v1/analytics/wcc/vertices/1?k=1", nil, 400, `unknown query parameter "k": this endpoint takes none`)

	// Register, read, refuse a duplicate, delete.
	r := c.do("POST", "/v1/analytics", []byte(`{"type":"bfs","name":"from42","root":"key:42","interval":"250ms"}`), true)
	var spec Spec
	if err := json.Unmarshal(r.body, &spec); r.status != 201 || err != nil {
		t.Fatalf("POST /v1/analytics: %v", r)
	}
	if want := (Spec{Name: "from42", Type: "bfs", Root: "key:42", BatchSize: 1, Interval: "250ms", MaxBehind: 1 << 18}); spec != want || r.header.Get("Location") != "/v1/analytics/from42" {
		t.Errorf("registered %+v at %q, want %+v at /v1/analytics/from42", spec, r.header.Get("Location"), want)
	}
	c.expect("POST", "/v1/analytics", []byte(`{"type":"wcc","name":"from42"}`), 409, `an analytic named "from42" is registered`)
	var lv LevelResult
	waitUntil(t, "the new analytic's first result", func() bool {
		var res AnalyticResult
		c.get("/v1/analytics/from42", &res)
		return res.Ready
	})
	var vr struct {
		VertexResultResponse
		Result LevelResult `json:"result"`
	}
	c.get("/v1/analytics/from42/vertices/key:42", &vr)
	if lv = vr.Result; lv.Level != 0 || vr.Key != "42" || vr.Type != "bfs" {
		t.Errorf("root of from42: %+v", vr)
	}
	var del DeletedResponse
	if r := c.do("DELETE", "/v1/analytics/from42", nil, true); r.status != 200 || json.Unmarshal(r.body, &del) != nil || del.Deleted != "from42" {
		t.Errorf("DELETE: %v", r)
	}
	c.expect("DELETE", "/v1/analytics/from42", nil, 404, `no analytic of that name: "from42"`)
	if res, err := f.reg.Result("from42"); err == nil {
		t.Errorf("from42 is still registered: %+v", res)
	}

	// Bad specs.
	for body, want := range map[string]string{
		`{"type":"colour"}`:                                      `type must be one of: bfs, wcc, pagerank, sssp, degree, fanin, fanout, fraud; got "colour"`,
		`{"type":"wcc","colour":"red"}`:                          `unknown field "colour"`,
		`{"type":"wcc"} {"type":"bfs"}`:                          "nothing after it",
		`{"type":"fanin","window":"a while"}`:                    `window: want a duration such as 500ms or 2s, got "a while"`,
		`{"type":"pagerank","damping":3}`:                        "damping 3 is out of range: allowed (0, 1)",
		`[1, 2]`:                                                 "body must be one analytic spec as a JSON object",
		`{"type":"wcc","name":"no spaces"}`:                      "a name may hold only letters, digits",
		`{"type":"degree","threshold":1,"direction":"sideways"}`: `direction must be out, in or both; got "sideways"`,
	} {
		c.expect("POST", "/v1/analytics", []byte(body), 400, want)
	}
	// A root no edge has named: the API never assigns it an id.
	before := f.dict.Len()
	c.expect("POST", "/v1/analytics", []byte(`{"type":"bfs","root":"nobody"}`), 404, `vertex "nobody" is neither an id nor a known key (the API never assigns ids`)
	if f.dict.Len() != before {
		t.Errorf("registering a root no edge has named took an id: %d keys, were %d", f.dict.Len(), before)
	}
	big := []byte(`{"type":"wcc","name":"` + strings.Repeat("x", 2<<20) + `"}`)
	c.expect("POST", "/v1/analytics", big, 413, "request body is larger than 1048576 bytes")
	if n := len(f.reg.Results()); n != len(fixtureAnalytics) {
		t.Errorf("%d analytics registered after the bad requests, want %d", n, len(fixtureAnalytics))
	}
}

func checkAlerts(t *testing.T, c *client, f *fixture) {
	var all AlertsResponse
	rep := c.get("/v1/alerts?limit=10000", &all)
	if all.Total == 0 || uint64(len(all.Alerts)) != min(all.Total, 10000) {
		t.Fatalf("%d alerts of %d raised", len(all.Alerts), all.Total)
	}
	// Each is what the alerts' JSON Schema, which consumers of the topic
	// validate against too, says.
	var raw struct{ Alerts []json.RawMessage }
	if err := json.Unmarshal(rep.body, &raw); err != nil {
		t.Fatal(err)
	}
	sch, err := alertschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range raw.Alerts {
		if err := sch.Validate(a); err != nil {
			t.Error(err)
		}
	}
	kinds := map[string][]string{"fanin": {"fan_in"}, "fanout": {"fan_out"}, "hubs": {"degree"}, "fraud": {"cycle", "fan_in"}}
	thresholds := map[string]float64{"fanin": 3, "fanout": 3, "hubs": 6, "fraud": 4}
	seen := map[string]bool{}
	for i, a := range all.Alerts {
		seen[a.Kind] = true
		if !slices.Contains(kinds[a.Analytic], a.Kind) || a.VertexKey != keyOf(f.dict, a.Vertex) || a.VertexID != strconv.FormatUint(a.Vertex, 10) ||
			a.Seq == 0 || a.Seq > f.lastSeq {
			t.Errorf("alert %+v", a)
		}
		if i > 0 && a.Time.Before(all.Alerts[i-1].Time) {
			t.Errorf("alert %d is older than the one before it: not oldest first", i)
		}
		if a.Kind == "cycle" {
			if len(a.Cycle) != int(a.Value) || len(a.Cycle) > 3 || a.Cycle[0] != a.Vertex || len(a.CycleIDs) != len(a.Cycle) {
				t.Errorf("cycle alert %+v", a)
			}
			for i, x := range a.Cycle {
				key := ""
				if a.CycleKeys != nil {
					key = a.CycleKeys[i]
				}
				if key != keyOf(f.dict, x) || a.CycleIDs[i] != strconv.FormatUint(x, 10) {
					t.Errorf("cycle alert %+v: vertex %d named %q / %q", a, x, a.CycleIDs[i], key)
				}
			}
		} else if a.Value <= thresholds[a.Analytic] || a.Threshold != thresholds[a.Analytic] {
			t.Errorf("alert %+v at or below its threshold %v", a, thresholds[a.Analytic])
		}
	}
	for _, k := range []string{"cycle", "fan_in", "fan_out", "degree"} {
		if !seen[k] {
			t.Errorf("no %s alert among %d", k, len(all.Alerts))
		}
	}
	// limit keeps the newest; analytic filters.
	var last AlertsResponse
	c.get("/v1/alerts?limit=3", &last)
	if last.Total != all.Total || len(last.Alerts) != 3 || !alertsEqual(last.Alerts, all.Alerts[len(all.Alerts)-3:]) {
		t.Errorf("limit=3: %+v, want the last 3 of %d", last.Alerts, len(all.Alerts))
	}
	var fanout []Alert
	for _, a := range all.Alerts {
		if a.Analytic == "fanout" {
			fanout = append(fanout, a)
		}
	}
	var one AlertsResponse
	c.get("/v1/alerts?analytic=fanout&limit=10000", &one)
	if !alertsEqual(one.Alerts, fanout) || len(fanout) == 0 {
		t.Errorf("analytic=fanout: %d alerts, want %d", len(one.Alerts), len(fanout))
	}
	c.get("/v1/alerts", &one)
	if len(one.Alerts) != min(100, len(all.Alerts)) {
		t.Errorf("default limit: %d alerts", len(one.Alerts))
	}
	c.expect("GET", "/v1/alerts?limit=0", nil, 400, "limit must be an integer between 1 and 10000")
}

func alertsEqual(a, b []Alert) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// checkClosed runs a server over a store that has been closed.
func checkClosed(t *testing.T, cov *coverage) {
	f := &fixture{}
	var err error
	if f.store, err = engine.Open(t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	if f.vm, err = views.NewManager(f.store, views.Config{}); err != nil {
		t.Fatal(err)
	}
	f.reg = analytics.NewRegistry(f.vm, analytics.RegistryConfig{})
	_, hs := serve(t, f, nil)
	c := newClient(t, hs, "", cov)
	var st StatusResponse
	c.get("/healthz", &st)
	f.reg.Close()
	f.vm.Close()
	f.store.Close()
	c.expect("GET", "/healthz", nil, 503, "store failed")
	c.expect("GET", "/v1/stats", nil, 503, "shutting down")
	c.expect("POST", "/v1/analytics", []byte(`{"type":"wcc"}`), 503, "shutting down")
	c.expect("GET", "/v1/vertices/1/degree", nil, 503, "shutting down")
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReadsWithoutInEdges: a store without in-edges answers out-edge reads
// and unidirectional BFS paths as the oracle says, refuses dir=in, and
// every view the requests took is released (also after errors, budget
// overruns and timeouts).
func TestReadsWithoutInEdges(t *testing.T) {
	volume.Mark(t)
	const nv = 150
	cov := &coverage{}
	f := newFixture(t, false, 2, nv, 3000, nil)
	_, hs := serve(t, f, nil)
	c := newClient(t, hs, "", cov)
	checkReads(t, c, f, nv, false)
	checkPaths(t, c, f, nv)
	c.expect("GET", "/v1/vertices/1/degree?dir=in", nil, 400, "dir=in needs in-edges, which this store does not keep")
	c.expect("GET", "/v1/vertices/1/neighbors?dir=in", nil, 400, "dir=in needs in-edges")
	_, tight := serve(t, f, func(c *Config) { c.Limits.PathBudget = 1 })
	from, to := farPair(t, f)
	newClient(t, tight, "", cov).expect("GET", fmt.Sprintf("/v1/paths?from=%d&to=%d", from, to), nil, 422, "over its budget")
	_, slow := serve(t, f, func(c *Config) { c.Limits.RequestTimeout = time.Nanosecond })
	newClient(t, slow, "", cov).expect("GET", "/v1/vertices/1/neighbors", nil, 503, "timeout")

	st := f.vm.Stats()
	if st.ViewsOpen[views.Fresh]+st.ViewsOpen[views.Stale]+st.ViewsOpen[views.Private] != 0 || st.ViewsCreated[views.Fresh] == 0 || st.ViewsCreated[views.Stale] == 0 {
		t.Errorf("views open after the requests: %+v (created %+v)", st.ViewsOpen, st.ViewsCreated)
	}
	if m, err := f.store.Metrics(); err != nil || m.SnapshotsOpen != 0 {
		t.Errorf("%d snapshots open after the requests (%v)", m.SnapshotsOpen, err)
	}
}

func TestResolveVertex(t *testing.T) {
	f := newFixture(t, false, 3, 10, 10, nil)
	resolve := ResolveVertex(f.dict)
	for in, want := range map[string]uint64{
		"0": 0, "17": 17, "alice": f.keys["alice"], "key:alice": f.keys["alice"], "key:42": f.keys["42"],
		"acct 7/x": f.keys["acct 7/x"], "9223372036854775807": engine.MaxVertex,
	} {
		if got, err := resolve(in); err != nil || got != want {
			t.Errorf("resolve(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	var unknown *UnknownVertexError
	for _, in := range []string{"zed", "key:17", "", "-1", "key:"} {
		if _, err := resolve(in); !errors.As(err, &unknown) {
			t.Errorf("resolve(%q): %v, want an unknown vertex", in, err)
		}
	}
	if _, err := resolve("9223372036854775808"); err == nil || errors.As(err, &unknown) || !strings.Contains(err.Error(), "above the largest allowed") {
		t.Errorf("resolve(2^63): %v", err)
	}
	if _, err := ResolveVertex(nil)("alice"); !errors.As(err, &unknown) {
		t.Errorf("without a dictionary, a key resolved: %v", err)
	}
	if n := f.dict.Len(); n != len(fixtureKeys) {
		t.Errorf("resolving assigned ids: the dictionary holds %d keys, want %d", n, len(fixtureKeys))
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9464": true, "127.1.2.3:80": true, "[::1]:9464": true, "localhost:9464": true, "LOCALHOST:1": true,
		":9464": false, "0.0.0.0:9464": false, "[::]:9464": false, "10.0.0.1:9464": false, "example.com:80": false,
		"127.0.0.1": false, "": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestReaderComputes: PageRank and the components computed on the fly on a
// fresh view equal the single-threaded references over the oracle.
func TestReaderComputes(t *testing.T) {
	const nv = 120
	f := newFixture(t, false, 4, nv, 2500, nil)
	q := Reader{Views: f.vm, Dict: f.dict}
	pr := refPageRank(f.live, 0.85)
	ranked := make([]uint64, 0, len(pr))
	for v := range pr {
		ranked = append(ranked, v)
	}
	sort.Slice(ranked, func(i, j int) bool { return pr[ranked[i]] > pr[ranked[j]] })
	top, err := q.TopPageRank(t.Context(), 15, 0, 1e-13, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Top) != 15 || top.K != 15 {
		t.Fatalf("top: %+v", top)
	}
	for i, x := range top.Top {
		if math.Abs(x.Rank-pr[x.Vertex]) > 1e-9 || math.Abs(x.Rank-pr[ranked[i]]) > 1e-9 || x.Key != keyOf(f.dict, x.Vertex) {
			t.Errorf("top %d: %+v; want the rank %v of %d", i, x, pr[ranked[i]], ranked[i])
		}
	}
	comp, size := refComponents(f.live)
	for _, v := range f.sample(nv) {
		r, err := q.Component(t.Context(), v, "")
		if err != nil {
			t.Fatal(err)
		}
		want := ComponentResult{v, keyOf(f.dict, v), 1}
		if m, ok := comp[v]; ok {
			want = ComponentResult{m, keyOf(f.dict, m), size[m]}
		}
		if r.Result != want || r.Vertex != v || r.Key != keyOf(f.dict, v) || r.Seq != f.lastSeq {
			t.Errorf("component of %d: %+v, want %+v", v, r, want)
		}
	}
	if st := f.vm.Stats(); st.ViewsOpen[views.Fresh] != 0 {
		t.Errorf("%d fresh views open after the computations", st.ViewsOpen[views.Fresh])
	}
}

// failingPersist stores nothing: every registration and removal fails.
type failingPersist struct{}

func (failingPersist) Registered(analytics.Spec) error   { return errors.New("disk full") }
func (failingPersist) Unregistered(string) (bool, error) { return false, errors.New("disk full") }
