package api

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The tokens of the scope tests: one per scope, and one with all.
const (
	readToken  = "read-token-0123456789abcdef"
	writeToken = "write-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
	allToken   = "all-token-0123456789abcdef01"
)

var scopedTokens = []Token{{readToken, ScopeRead}, {writeToken, ScopeWrite}, {adminToken, ScopeAdmin}, {allToken, AllScopes}}

// wantScope is the scope every route needs, written out here (not read
// from the server's table) as the oracle: "" is open to all.
var wantScope = map[string]string{
	"GET /healthz":                          "",
	"GET /readyz":                           "",
	"GET /metrics":                          "",
	"GET /v1/openapi.yaml":                  "read",
	"GET /v1/stats":                         "read",
	"GET /v1/vertices/{v}":                  "read",
	"GET /v1/vertices/{v}/degree":           "read",
	"GET /v1/vertices/{v}/neighbors":        "read",
	"GET /v1/edges/{src}/{dst}":             "read",
	"GET /v1/edges/{src}/{dst}/events":      "read",
	"GET /v1/changes":                       "read",
	"POST /v1/batches":                      "write",
	"GET /v1/paths":                         "read",
	"GET /v1/analytics":                     "read",
	"POST /v1/analytics":                    "admin",
	"GET /v1/analytics/{name}":              "read",
	"DELETE /v1/analytics/{name}":           "admin",
	"GET /v1/analytics/{name}/vertices/{v}": "read",
	"GET /v1/analytics/{name}/top":          "read",
	"GET /v1/alerts":                        "read",
	"POST /v1/exports":                      "admin",
	"GET /v1/exports":                       "read",
	"GET /v1/exports/{id}":                  "read",
	"DELETE /v1/exports/{id}":               "admin",
	"GET /debug/pprof/":                     "admin",
	"GET /debug/pprof/cmdline":              "admin",
	"GET /debug/pprof/profile":              "admin",
	"GET /debug/pprof/symbol":               "admin",
	"GET /debug/pprof/trace":                "admin",
}

type answer struct {
	status    int
	body      string
	challenge string // WWW-Authenticate
}

func request(t *testing.T, method, url, token, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header.Get("WWW-Authenticate")}
}

// TestRouteScopes: every route the server serves (read from the server,
// so that a route added without a scope here fails) needs its scope: no
// token or an unknown one is 401, a token without the scope 403 naming
// the scope it needs, a token with it is let through; open routes need
// nothing.
func TestRouteScopes(t *testing.T) {
	f := newFixture(t, false, 5, 60, 300, fixtureAnalytics)
	srv, hs := serve(t, f, func(c *Config) { c.Tokens = scopedTokens; c.Writes = &fakeWriter{} })
	patterns := srv.Patterns()
	for _, p := range patterns {
		if _, ok := wantScope[p]; !ok {
			t.Errorf("the server serves %s, which this test gives no scope: add it to wantScope", p)
		}
	}
	for p := range wantScope {
		if !slices.Contains(patterns, p) {
			t.Errorf("wantScope names %s, which the server does not serve", p)
		}
	}
	// Concrete requests that change nothing: an unknown analytic to
	// delete, a malformed body to post; a short profile.
	concrete := strings.NewReplacer("{v}", "1", "{src}", "1", "{dst}", "2", "{name}", "wcc")
	query := map[string]string{"GET /v1/paths": "?from=1&to=2", "GET /v1/changes": "?from=1&to=1",
		"GET /debug/pprof/profile": "?seconds=1", "GET /debug/pprof/trace": "?seconds=0.1"}
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		path = concrete.Replace(path)
		if method == "DELETE" {
			path = strings.Replace(path, "/wcc", "/no-such-analytic", 1)
		}
		url := hs.URL + path + query[p]
		body := ""
		if method == "POST" {
			body = "{" // malformed: 400 once past the scope
		}
		need := wantScope[p]
		if sc, ok := RouteScope(p); !ok || (sc == 0) != (need == "") || (sc != 0 && sc.String() != need) {
			t.Errorf("%s: RouteScope %v, %v; want %q", p, sc, ok, need)
		}
		if need == "" {
			if a := request(t, method, url, "", body); a.status == 401 || a.status == 403 {
				t.Errorf("%s without a token: %d, want it open", p, a.status)
			}
			continue
		}
		for _, token := range []string{"", "unknown-token-0123456789abcdef"} {
			a := request(t, method, url, token, body)
			if a.status != http.StatusUnauthorized || !strings.Contains(a.body, "missing or wrong bearer token: send Authorization: Bearer <token>") ||
				a.challenge != `Bearer realm="graphtide"` {
				t.Errorf("%s with token %q: %d %s (%s), want 401", p, token, a.status, a.body, a.challenge)
			}
		}
		for _, tok := range scopedTokens {
			a := request(t, method, url, tok.Secret, body)
			if strings.Contains(tok.Scopes.String(), need) {
				if a.status == 401 || a.status == 403 {
					t.Errorf("%s with a token of %s: %d %s, want it let through", p, tok.Scopes, a.status, a.body)
				}
				continue
			}
			var e ErrorResponse
			err := json.Unmarshal([]byte(a.body), &e)
			want := "this token may not " + method + " " + path + ": that needs the " + need + " scope, and the token has " + tok.Scopes.String()
			if a.status != http.StatusForbidden || err != nil || !strings.HasPrefix(e.Error, want) ||
				a.challenge != `Bearer realm="graphtide", error="insufficient_scope", scope="`+need+`"` {
				t.Errorf("%s with a token of %s: %d %s (%s); want 403 %q", p, tok.Scopes, a.status, a.body, a.challenge, want)
			}
		}
	}
	// openapi.yaml names each operation's scope.
	for path, item := range loadDoc(t).Paths.Map() {
		for method, op := range item.Operations() {
			doc, _ := op.Extensions["x-graphtide-scope"].(string)
			if want := wantScope[method+" "+path]; doc != want {
				t.Errorf("openapi.yaml gives %s %s the scope %q, want %q", method, path, doc, want)
			}
		}
	}
	// A request that matches no route: 401 without a token, the 404 with
	// any known one.
	if a := request(t, "GET", hs.URL+"/v1/nope", "", ""); a.status != 401 {
		t.Errorf("no route, no token: %d", a.status)
	}
	if a := request(t, "GET", hs.URL+"/v1/nope", writeToken, ""); a.status != 404 {
		t.Errorf("no route, a known token: %d %s", a.status, a.body)
	}
	// The tokens really act: admin registers, read reads, write writes.
	if a := request(t, "POST", hs.URL+"/v1/analytics", adminToken, `{"type":"degree","name":"by-admin","threshold":3}`); a.status != http.StatusCreated {
		t.Errorf("admin registering an analytic: %d %s", a.status, a.body)
	}
	if a := request(t, "GET", hs.URL+"/v1/analytics/by-admin", readToken, ""); a.status != http.StatusOK {
		t.Errorf("read getting it: %d %s", a.status, a.body)
	}
	if a := request(t, "DELETE", hs.URL+"/v1/analytics/by-admin", readToken, ""); a.status != http.StatusForbidden {
		t.Errorf("read deleting it: %d %s", a.status, a.body)
	}
	if a := request(t, "DELETE", hs.URL+"/v1/analytics/by-admin", adminToken, ""); a.status != http.StatusNoContent && a.status != http.StatusOK {
		t.Errorf("admin deleting it: %d %s", a.status, a.body)
	}
}

// TestNewRefusesARouteWithoutScope: a route whose scope is not decided
// is never served.
func TestNewRefusesARouteWithoutScope(t *testing.T) {
	f := newFixture(t, false, 6, 20, 50, nil)
	const p = "POST /v1/batches"
	saved := routeScopes[p]
	delete(routeScopes, p)
	defer func() { routeScopes[p] = saved }()
	_, err := New(Config{Store: f.store, Views: f.vm, Analytics: f.reg})
	if err == nil || err.Error() != `api: route "POST /v1/batches" has no scope: add it to routeScopes` {
		t.Errorf("New with a route without scope: %v", err)
	}
}

func TestParseTokens(t *testing.T) {
	const a, b = "aaaaaaaaaaaaaaaa-token-one", "bbbbbbbbbbbbbbbb-token-two"
	for _, tc := range []struct {
		file string
		want []Token
		err  string
	}{
		// One bare token (the format before scopes): everything.
		{file: a + "\n", want: []Token{{a, AllScopes}}},
		{file: "  " + a + "  ", want: []Token{{a, AllScopes}}},
		{file: "# the API's token\n\n" + a + "\n", want: []Token{{a, AllScopes}}},
		// Tokens with scopes.
		{file: a + " read\n", want: []Token{{a, ScopeRead}}},
		{file: "# reader\n" + a + " read\n\n# service\n" + b + "\tread,write,admin\n", want: []Token{{a, ScopeRead}, {b, AllScopes}}},
		{file: a + " admin,read\n" + b + " write\n", want: []Token{{a, ScopeAdmin | ScopeRead}, {b, ScopeWrite}}},
		// Refused, naming the line.
		{file: "", err: "tokens holds no token"},
		{file: "# only a comment\n", err: "tokens holds no token"},
		{file: a + " read\n" + b + "\n", err: "tokens: line 2: a token without scopes; in a file of several tokens, each line is TOKEN SCOPES (e.g. TOKEN read,write)"},
		{file: a + "\n" + b + "\n", err: "tokens: line 1: a token without scopes"},
		{file: a + " read\n\n" + b + " read write\n", err: "tokens: line 3: 3 fields; want TOKEN SCOPES (scopes comma separated, no spaces: e.g. read,write)"},
		{file: a + " reed\n", err: `tokens: line 1: unknown scope "reed"; the scopes are read, write and admin`},
		{file: a + " read,\n", err: `tokens: line 1: unknown scope ""`},
		{file: "short\n", err: "tokens: line 1: a token must be at least 16 characters (e.g. openssl rand -hex 32), got 5"},
		{file: a + " read\n" + b + " write\n" + a + " admin\n", err: "tokens: line 3: the token of line 1 again: give each token one line"},
	} {
		got, err := ParseTokens("tokens", []byte(tc.file))
		switch {
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: %v, want %q", tc.file, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%q: %+v, %v; want %+v", tc.file, got, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), a) || strings.Contains(err.Error(), b)) {
			t.Errorf("the error shows a token: %v", err)
		}
	}
}
