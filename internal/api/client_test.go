package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// loadDoc parses and validates the embedded OpenAPI document. Both take
// a tenth of this package's tests' CPU under the race detector when done
// for every client: the document is parsed once, and shared. Callers
// read it and never change it (newClient changes a copy).
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := parsedDoc()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

var parsedDoc = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI 3 document: %w", err)
	}
	return doc, nil
})

// documented lists every "METHOD /path status" of the document.
func documented(doc *openapi3.T) map[string]bool {
	out := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				out[method+" "+path+" "+status] = true
			}
		}
	}
	return out
}

// coverage records which documented responses the tests produced.
type coverage struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (c *coverage) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[k] = true
}

// client talks to one test server and checks every exchange against the
// OpenAPI document: the request must match a documented operation (and,
// when it is meant to succeed, validate against it), and the response
// must be one the operation documents, with a body that validates against
// its schema.
type client struct {
	t      *testing.T
	base   string
	token  string
	router routers.Router
	cov    *coverage
	header http.Header // sent with every request, beside the token
}

func newClient(t *testing.T, srv *httptest.Server, token string, cov *coverage) *client {
	t.Helper()
	doc := *loadDoc(t) // a copy: the document itself is shared
	doc.Servers = openapi3.Servers{{URL: srv.URL}}
	router, err := gorillamux.NewRouter(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, base: srv.URL, token: token, router: router, cov: cov}
}

// reply is one response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// errorMsg returns the error message of an error body ("" otherwise).
func (r reply) errorMsg() string {
	var e ErrorResponse
	json.Unmarshal(r.body, &e)
	return e.Error
}

// do sends a request; body may be nil. A request meant to succeed (valid
// true) is validated against the document before it is sent.
func (c *client) do(method, path string, body []byte, valid bool) reply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("%s %s matches no documented operation: %v", method, path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: func(_ context.Context, ai *openapi3filter.AuthenticationInput) error {
			// The scheme applies when the server has a token.
			if c.token != "" && !strings.HasPrefix(ai.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
				return fmt.Errorf("no bearer token")
			}
			return nil
		}}}
	if valid {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Fatalf("%s %s does not validate against the document: %v", method, path, err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(rb)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.t.Errorf("%s %s: response %d does not validate against the document: %v\nbody: %s", method, path, resp.StatusCode, err, rb)
	}
	// Every body is JSON but the metrics' and this document's.
	notJSON := resp.StatusCode == http.StatusOK && (route.Path == "/metrics" || route.Path == "/v1/openapi.yaml")
	if ct := resp.Header.Get("Content-Type"); !notJSON && ct != "application/json" {
		c.t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	c.cov.add(fmt.Sprintf("%s %s %d", route.Method, route.Path, resp.StatusCode))
	return reply{resp.StatusCode, resp.Header, rb}
}

// get sends a GET meant to succeed and decodes its 200 body into v.
func (c *client) get(path string, v any) reply {
	c.t.Helper()
	r := c.do("GET", path, nil, true)
	if r.status != http.StatusOK {
		c.t.Fatalf("GET %s: %v", path, r)
	}
	if v != nil {
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			c.t.Fatalf("GET %s: decoding %s: %v", path, r.body, err)
		}
	}
	return r
}

// expect sends a request not meant to succeed and checks its status and
// that the error message contains want.
func (c *client) expect(method, path string, body []byte, status int, want string) reply {
	c.t.Helper()
	r := c.do(method, path, body, false)
	if r.status != status || !strings.Contains(r.errorMsg(), want) {
		c.t.Errorf("%s %s = %v; want %d with an error containing %q", method, path, r, status, want)
	}
	return r
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
