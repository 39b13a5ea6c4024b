package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/writes"
)

// Client asks a running graphtide serve through its HTTP API and decodes
// the answers into the API's types. It is safe for concurrent use.
//
// An answer other than 2xx is a *StatusError carrying the server's
// message. Bodies are read up to maxClientBody bytes.
type Client struct {
	base  string // scheme://host[:port][/prefix], no trailing slash
	token string
	hc    *http.Client
}

// ClientOptions configure a Client. Zero values take the defaults.
type ClientOptions struct {
	// Token is the server's bearer token, if it has one.
	Token string
	// RootCAs verify an https server's certificate (default: the system
	// roots).
	RootCAs *x509.CertPool
	// Timeout bounds each request (default 30 s).
	Timeout time.Duration
	// Transport replaces the HTTP transport (tests wrap it to check every
	// exchange); RootCAs is then ignored.
	Transport http.RoundTripper
}

// maxClientBody bounds what the client reads of one answer.
const maxClientBody = 64 << 20

// NewClient returns a client of the server at base, an http:// or
// https:// URL such as http://127.0.0.1:9464.
func NewClient(base string, o ClientOptions) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the server must be an http:// or https:// URL such as http://127.0.0.1:9464, got %q", base)
	}
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if o.RootCAs != nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs}
		}
		tr = t
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return &Client{base: strings.TrimRight(base, "/"), token: o.Token, hc: &http.Client{Transport: tr, Timeout: o.Timeout}}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// StatusError is an answer of the server other than 2xx.
type StatusError struct {
	Status  int
	Message string // the server's error message
	body    []byte // the whole answer
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("server: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// UnreachableError is a request that reached no server: nothing listens
// at the address (or its name does not resolve), or it did not answer in
// time (Timeout).
type UnreachableError struct {
	URL     string        // the server's base URL
	Timeout time.Duration // non-zero: it did not answer within this long
	// Sent: the request may have reached the server (a timeout of a
	// POST): its effect is unknown.
	Sent bool
	Err  error
}

func (e *UnreachableError) Error() string {
	if e.Timeout > 0 {
		unknown := ""
		if e.Sent {
			unknown = "; the batch may or may not have been applied: send it again with the same --idempotency-key to apply it once"
		}
		return fmt.Sprintf("the server at %s did not answer within %s (--timeout): is --server graphtide serve's --http-addr, and is serve overloaded or stalled (its /readyz says)?%s", e.URL, e.Timeout, unknown)
	}
	return fmt.Sprintf("the server at %s is not reachable (%v): is graphtide serve running, and is --server its --http-addr (serve prints it: \"http listening on ...\"; default http://127.0.0.1:9464)?", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// transportError turns an error of the HTTP client's Do of a method
// request into one that says what to check when no server answered.
func (c *Client) transportError(method string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		return &UnreachableError{URL: c.base, Timeout: c.hc.Timeout, Sent: method == http.MethodPost, Err: err}
	}
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) && oe.Op == "dial" || errors.As(err, &de) {
		inner := err
		if ue != nil {
			inner = ue.Err // without the method and the whole URL
		}
		return &UnreachableError{URL: c.base, Err: inner}
	}
	return err
}

// do sends method path?q with body (JSON, or none) and decodes a 2xx
// answer into out (unless out is nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		// Without HTML escaping: a batch's JSON (a vertex's props) reaches
		// the server as the caller wrote it, '<' as '<' and not \u003c.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return err
		}
		rd = &b
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxClientBody))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e ErrorResponse
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return &StatusError{resp.StatusCode, e.Error, b}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("server: reading the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// PostBatch sends a batch (POST /v1/batches) and returns its outcome:
// applied, or refused by a precondition (the server's 409: Applied is
// false and Precondition names it; the error is nil). Any other answer is
// a *StatusError (a 503 leaves the outcome unknown: retry with the same
// idempotency key).
func (c *Client) PostBatch(ctx context.Context, r *writes.Request) (BatchResponse, error) {
	var out BatchResponse
	err := c.do(ctx, http.MethodPost, "/v1/batches", nil, r, &out)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusConflict && se.body != nil {
		if jerr := json.Unmarshal(se.body, &out); jerr == nil && out.Precondition != nil {
			return out, nil
		}
	}
	return out, err
}

func vertexPath(v string) string { return "/v1/vertices/" + url.PathEscape(v) }

func analyticPath(name string) string { return "/v1/analytics/" + url.PathEscape(name) }

// ReadOptions choose the edges and the view of a vertex read; zero values
// are the server's defaults (out-edges, fresh view).
type ReadOptions struct {
	Dir  string // "out" or "in"
	View string // "fresh" or "stale"
	// Types lists the edge types to read, comma-separated names or
	// numbers; "": every type.
	Types string
	// AsOfSeq reads the store as it was at that sequence number (a fresh
	// view; the store must keep it: history retention); "": the newest.
	AsOfSeq string
	// AsOfTime reads it as it was at that RFC 3339 time (the seq that was
	// newest then); at most one of the two.
	AsOfTime string
	// Window (edge and neighbors reads) adds each accumulate edge's
	// events within that duration of event time ("1h"; "": none), at
	// most EventLimit of them listed in all (0: the server's default).
	Window     string
	EventLimit int
}

func (o ReadOptions) values() url.Values {
	q := url.Values{}
	if o.Dir != "" {
		q.Set("dir", o.Dir)
	}
	if o.View != "" {
		q.Set("view", o.View)
	}
	if o.Types != "" {
		q.Set("types", o.Types)
	}
	if o.AsOfSeq != "" {
		q.Set("as_of_seq", o.AsOfSeq)
	}
	if o.AsOfTime != "" {
		q.Set("as_of_time", o.AsOfTime)
	}
	if o.Window != "" {
		q.Set("window", o.Window)
	}
	return q
}

// Degree asks for v's degree; v is an id or a string key.
func (c *Client) Degree(ctx context.Context, v string, o ReadOptions) (DegreeResponse, error) {
	q := o.values()
	q.Del("window")
	var r DegreeResponse
	return r, c.do(ctx, http.MethodGet, vertexPath(v)+"/degree", q, nil, &r)
}

// Neighbors asks for one page of v's edges, past the edge pg names (at
// most pg.Limit; 0: the server's default).
func (c *Client) Neighbors(ctx context.Context, v string, o ReadOptions, pg PageOptions) (NeighborsResponse, error) {
	q := o.values()
	pg.set(q)
	var r NeighborsResponse
	return r, c.do(ctx, http.MethodGet, vertexPath(v)+"/neighbors", q, nil, &r)
}

// set adds the page's parameters to q.
func (pg PageOptions) set(q url.Values) {
	for k, v := range map[string]string{"cursor": pg.Cursor, "after": pg.After, "after_type": pg.AfterType, "after_dst": pg.AfterDst} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if pg.Limit > 0 {
		q.Set("limit", strconv.Itoa(pg.Limit))
	}
}

// Vertex asks for v's record and whether it exists (o.Dir and o.Types
// are not sent).
func (c *Client) Vertex(ctx context.Context, v string, o ReadOptions) (VertexResponse, error) {
	q := o.values()
	q.Del("dir")
	q.Del("types")
	q.Del("window")
	var r VertexResponse
	return r, c.do(ctx, http.MethodGet, vertexPath(v), q, nil, &r)
}

// Edge asks for the edges from src to dst (o.Dir is not sent: a lookup
// reads out-edges).
func (c *Client) Edge(ctx context.Context, src, dst string, o ReadOptions) (EdgeResponse, error) {
	q := o.values()
	q.Del("dir")
	if o.Window != "" && o.EventLimit > 0 {
		q.Set("limit", strconv.Itoa(o.EventLimit))
	}
	var r EdgeResponse
	return r, c.do(ctx, http.MethodGet, "/v1/edges/"+url.PathEscape(src)+"/"+url.PathEscape(dst), q, nil, &r)
}

// Events asks for the events of the accumulate edge (src, dst, typ)
// held one by one (within o.Window when given), at most o.EventLimit (0:
// the server's default); o.Dir and o.Types are not sent.
func (c *Client) Events(ctx context.Context, src, dst, typ string, o ReadOptions) (EventsResponse, error) {
	q := o.values()
	q.Del("dir")
	q.Del("types")
	if typ != "" {
		q.Set("type", typ)
	}
	if o.EventLimit > 0 {
		q.Set("limit", strconv.Itoa(o.EventLimit))
	}
	var r EventsResponse
	return r, c.do(ctx, http.MethodGet, "/v1/edges/"+url.PathEscape(src)+"/"+url.PathEscape(dst)+"/events", q, nil, &r)
}

// Changes asks for a page of the out-edges (of types) that differ between
// seq from and seq to, past the change pg names (at most pg.Limit; 0: the
// server's default). With a cursor, from and to may be left out.
func (c *Client) Changes(ctx context.Context, from, to AsOf, types string, pg PageOptions) (ChangesResponse, error) {
	q := url.Values{}
	for k, v := range map[string]string{"from": from.Seq, "from_time": from.Time, "to": to.Seq, "to_time": to.Time, "types": types} {
		if v != "" {
			q.Set(k, v)
		}
	}
	pg.set(q)
	var r ChangesResponse
	return r, c.do(ctx, http.MethodGet, "/v1/changes", q, nil, &r)
}

// Path asks for a shortest path from one vertex to another (by hops, or
// by weight; maxDepth 0: no bound), as of the seq asOf ("": the newest).
func (c *Client) Path(ctx context.Context, from, to, types string, weighted bool, maxDepth int, asOf AsOf) (PathResponse, error) {
	q := url.Values{"from": {from}, "to": {to}, "weighted": {strconv.FormatBool(weighted)}, "max_depth": {strconv.Itoa(maxDepth)}}
	if types != "" {
		q.Set("types", types)
	}
	if asOf.Seq != "" {
		q.Set("as_of_seq", asOf.Seq)
	}
	if asOf.Time != "" {
		q.Set("as_of_time", asOf.Time)
	}
	var r PathResponse
	return r, c.do(ctx, http.MethodGet, "/v1/paths", q, nil, &r)
}

// Stats asks for the store's, the views' and the analytics' figures.
func (c *Client) Stats(ctx context.Context) (StatsResponse, error) {
	var r StatsResponse
	return r, c.do(ctx, http.MethodGet, "/v1/stats", nil, nil, &r)
}

// Analytics lists the registered analytics.
func (c *Client) Analytics(ctx context.Context) (AnalyticsResponse, error) {
	var r AnalyticsResponse
	return r, c.do(ctx, http.MethodGet, "/v1/analytics", nil, nil, &r)
}

// Analytic asks for one registered analytic's state.
func (c *Client) Analytic(ctx context.Context, name string) (AnalyticResult, error) {
	var r AnalyticResult
	return r, c.do(ctx, http.MethodGet, analyticPath(name), nil, nil, &r)
}

// Register registers an analytic and returns its spec with the defaults
// filled in.
func (c *Client) Register(ctx context.Context, s Spec) (Spec, error) {
	var r Spec
	return r, c.do(ctx, http.MethodPost, "/v1/analytics", nil, s, &r)
}

// Unregister removes a registered analytic.
func (c *Client) Unregister(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, analyticPath(name), nil, nil, nil)
}

// AnalyticVertex asks for an analytic's result at vertex v. The result,
// whose type depends on the analytic's (BFSResult, ComponentResult, ...),
// is left as the server's JSON: read it with ResultAs.
func (c *Client) AnalyticVertex(ctx context.Context, name, v string) (VertexResultResponse, error) {
	var raw struct {
		VertexResultResponse
		Result json.RawMessage `json:"result"`
	}
	err := c.do(ctx, http.MethodGet, analyticPath(name)+"/vertices/"+url.PathEscape(v), nil, nil, &raw)
	r := raw.VertexResultResponse
	r.Result = raw.Result
	return r, err
}

// ResultAs returns r's result as a T: the value itself when r was built
// here (a Reader), or decoded from the server's JSON (a Client).
func ResultAs[T any](r VertexResultResponse) (T, error) {
	var t T
	switch x := r.Result.(type) {
	case json.RawMessage:
		err := json.Unmarshal(x, &t)
		return t, err
	case T:
		return x, nil
	}
	return t, fmt.Errorf("analytic %s: the result is a %T, not a %T", r.Analytic, r.Result, t)
}

// Top asks for a PageRank analytic's k highest ranked vertices.
func (c *Client) Top(ctx context.Context, name string, k int) (TopResponse, error) {
	var r TopResponse
	return r, c.do(ctx, http.MethodGet, analyticPath(name)+"/top", url.Values{"k": {strconv.Itoa(k)}}, nil, &r)
}

// Registered returns the name of the registered analytic of type typ
// named name (default: typ). When there is none it returns a
// *NotRegisteredError.
func (c *Client) Registered(ctx context.Context, typ, name string) (string, error) {
	if name == "" {
		name = typ
	}
	res, err := c.Analytic(ctx, name)
	var se *StatusError
	switch {
	case err == nil && res.Spec.Type == typ:
		return name, nil
	case err != nil && !(errors.As(err, &se) && se.Status == http.StatusNotFound):
		return "", err
	}
	all, lerr := c.Analytics(ctx)
	if lerr != nil {
		return "", lerr
	}
	e := &NotRegisteredError{Type: typ, Name: name}
	if err == nil {
		e.NameType = res.Spec.Type
	}
	for _, a := range all.Analytics {
		if a.Spec.Type == typ {
			e.OfType = append(e.OfType, a.Spec.Name)
		}
	}
	return "", e
}

// NotRegisteredError says that a server has no analytic of a type under a
// name, and which analytics of that type it has.
type NotRegisteredError struct {
	Type, Name string
	NameType   string   // the type of the analytic named Name, if there is one
	OfType     []string // the names of the analytics of type Type
}

func (e *NotRegisteredError) Error() string {
	what := fmt.Sprintf("the server has no %s analytic named %q", e.Type, e.Name)
	if e.NameType != "" {
		what = fmt.Sprintf("analytic %q of the server is a %s analytic, not %s", e.Name, e.NameType, e.Type)
	}
	if len(e.OfType) == 0 {
		return fmt.Sprintf("%s, and none of that type is registered: register one (serve --analytic type=%s, or POST /v1/analytics)", what, e.Type)
	}
	return fmt.Sprintf("%s; its %s analytics: %s", what, e.Type, strings.Join(e.OfType, ", "))
}
