package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/views/paths"
)

// DefaultPathBudget is how many edges one path query may read unless
// Limits.PathBudget says otherwise (serve --http-path-budget).
const DefaultPathBudget = paths.DefaultBudget

// Limits bound what one request may cost. Zero fields take the defaults
// named on each.
type Limits struct {
	// RequestTimeout is the deadline of every request (default 10s); work
	// in progress stops at the next check and the request gets 503.
	RequestTimeout time.Duration
	// MaxBodyBytes caps a request body (default 1 MiB; 413 beyond).
	MaxBodyBytes int64
	// DefaultPage and MaxPage: neighbors per page (default 1000, at most
	// 10000).
	DefaultPage, MaxPage int
	// MaxTopK caps k of /v1/analytics/{name}/top (default 1000).
	MaxTopK int
	// MaxAlerts caps limit of /v1/alerts (default 10000).
	MaxAlerts int
	// PathBudget is how many edges one path search may read (default
	// DefaultPathBudget; 422 beyond).
	PathBudget int64
	// MaxPathSearches run at once (default 4); more wait for a slot until
	// their deadline.
	MaxPathSearches int
	// MaxAnalytics is how many analytics may be registered (by any means)
	// for POST /v1/analytics to add one more (default 64; 409 beyond).
	MaxAnalytics int
	// MaxFollowers is how many requests may follow GET /v1/changes at once
	// (default 64; 503 beyond). See follow.go for what one may cost.
	MaxFollowers int
	// MaxFollowWait caps a long poll's wait (default 60s).
	MaxFollowWait time.Duration
	// FollowMaxDuration is how long one event stream lasts before the
	// server ends it and the client reconnects (default 10m).
	FollowMaxDuration time.Duration
	// FollowHeartbeat is how often an idle event stream sends a comment
	// (default 15s): proxies keep it open, and a client gone is noticed.
	FollowHeartbeat time.Duration
	// FollowWriteTimeout is how long one write of an event stream may take
	// before a client that does not read is cut off (default 10s).
	FollowWriteTimeout time.Duration
}

func (l *Limits) defaults() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = 10 * time.Second
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 1 << 20
	}
	def(&l.DefaultPage, 1000)
	def(&l.MaxPage, 10000)
	l.DefaultPage = min(l.DefaultPage, l.MaxPage)
	def(&l.MaxTopK, 1000)
	def(&l.MaxAlerts, 10000)
	if l.PathBudget <= 0 {
		l.PathBudget = DefaultPathBudget
	}
	def(&l.MaxPathSearches, 4)
	def(&l.MaxAnalytics, 64)
	def(&l.MaxFollowers, 64)
	dur := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	dur(&l.MaxFollowWait, time.Minute)
	dur(&l.FollowMaxDuration, 10*time.Minute)
	dur(&l.FollowHeartbeat, 15*time.Second)
	dur(&l.FollowWriteTimeout, 10*time.Second)
}

// Config is what a Server is built from.
type Config struct {
	Store     *engine.Store       // required
	Views     *views.Manager      // required, over Store
	Analytics *analytics.Registry // required, over Views
	Dict      *keydict.Dict       // the key dictionary; nil: ids only
	Types     *typedict.Dict      // the type dictionary; nil: type numbers only
	Times     *history.Index      // the store's time index; nil: as_of_time is refused
	// Graph is the graph the store holds (package graphid; "": none
	// recorded): alerts name it, as on the alert topic.
	Graph string
	// Aggregates refuses a window longer than a type's retain (the
	// store's aggregates, as it records them; Reader.Aggregates).
	Aggregates bool
	// Ready reports readiness for /readyz: nil when ready, else why not
	// (nil func: always ready).
	Ready func() error
	// Behind, when not nil, tells /readyz how many records ingestion is
	// behind the brokers' end offsets, when known (see StatusResponse).
	Behind func() (int64, bool)
	// Metrics serves /metrics (the Prometheus handler); nil: 404.
	Metrics http.Handler
	// Token and Tokens are the bearer tokens: with any, every /v1 and
	// /debug/pprof/ request needs "Authorization: Bearer <token>" of one
	// of them (401 otherwise), whose scopes hold the scope of the route
	// (403 otherwise; see routeScopes). Token may do everything.
	Token  string
	Tokens []Token
	Limits Limits
	Logger *slog.Logger // nil: discard
	// Persist, when set, keeps the analytics registered over the API
	// across restarts (serve: in the data directory). Registered is called
	// once an analytic is registered: an error unregisters it and the
	// request fails. Unregistered is called before an analytic is
	// unregistered (or, stored and not running, instead): an error leaves
	// it registered and fails the request.
	Persist Persist
	// Writes, when set, takes POST /v1/batches (serve: the writes topic);
	// nil: that endpoint answers 404.
	Writes Writer
	// Exports, when set, takes POST /v1/exports (serve --export-dir);
	// nil: the exports' endpoints answer 404.
	Exports Exporter
	// Route, when set, is partitioned mode (serve --owners): a request
	// about one vertex is answered by the vertex's owner (proxied there,
	// with its bearer token, when that is another instance); a request
	// that needs every owner's edges (dir=in, paths) is refused with 409.
	Route Router
}

// Persist is how the API's registrations outlive the process (Config).
// Unregistered reports whether name was stored (a stored analytic may not
// be running: its spec no longer validates, say; DELETE removes it all
// the same).
type Persist interface {
	Registered(analytics.Spec) error
	Unregistered(name string) (stored bool, err error)
}

// Server is the HTTP API. See the package documentation for its promises
// and openapi.yaml for its endpoints.
type Server struct {
	cfg      Config
	reader   Reader
	keys     keyer
	mux      *http.ServeMux
	routes   []string // the API's routes
	patterns []string // every pattern of mux: the routes and the profiles
	handler  http.Handler
	tokens   tokenTable
	paths    chan struct{} // one slot per running path search
	regMu    sync.Mutex    // serializes registrations (the MaxAnalytics check)
	proxy    http.Handler  // to a vertex's owner (partitioned mode)
	// followers holds a slot per request following changes (follow.go);
	// stopping ends when the server shuts down (StopFollowers), and every
	// follower with it.
	followers chan struct{}
	stopping  context.Context
	stop      context.CancelFunc
}

// StopFollowers ends every request that follows changes (GET /v1/changes
// in follow mode) and refuses new ones; the server's http.Server
// (HTTPServer) calls it when it shuts down.
func (s *Server) StopFollowers() { s.stop() }

// New builds a server. It does not listen: serve Handler() yourself, or
// use HTTPServer.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Views == nil || cfg.Analytics == nil {
		return nil, errors.New("api: Store, Views and Analytics are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Limits.defaults()
	s := &Server{cfg: cfg, reader: Reader{Views: cfg.Views, Dict: cfg.Dict, Types: cfg.Types, Times: cfg.Times, Origin: newOrigin(), Aggregates: cfg.Aggregates}, keys: keyer{cfg.Dict},
		mux: http.NewServeMux(), tokens: newTokenTable(cfg), paths: make(chan struct{}, cfg.Limits.MaxPathSearches),
		followers: make(chan struct{}, cfg.Limits.MaxFollowers)}
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	s.handle("GET /metrics", s.metrics)
	s.handle("GET /v1/openapi.yaml", s.openapi)
	s.handle("GET /v1/stats", s.stats)
	s.handleVertex("GET /v1/vertices/{v}", "v", false, s.getVertex)
	s.handleVertex("GET /v1/vertices/{v}/degree", "v", true, s.degree)
	s.handleVertex("GET /v1/vertices/{v}/neighbors", "v", true, s.neighbors)
	s.handleVertex("GET /v1/edges/{src}/{dst}", "src", false, s.edge)
	s.handleVertex("GET /v1/edges/{src}/{dst}/events", "src", false, s.edgeEvents)
	s.handle("GET /v1/changes", s.changes)
	s.handle("POST /v1/batches", s.batches)
	s.handle("GET /v1/paths", s.path)
	s.handle("GET /v1/analytics", s.listAnalytics)
	s.handle("POST /v1/analytics", s.registerAnalytic)
	s.handle("GET /v1/analytics/{name}", s.getAnalytic)
	s.handle("DELETE /v1/analytics/{name}", s.deleteAnalytic)
	s.handleVertex("GET /v1/analytics/{name}/vertices/{v}", "v", false, s.analyticVertex)
	s.handle("GET /v1/analytics/{name}/top", s.top)
	s.handle("GET /v1/alerts", s.alerts)
	s.handle("POST /v1/exports", s.startExport)
	s.handle("GET /v1/exports", s.listExports)
	s.handle("GET /v1/exports/{id}", s.getExport)
	s.handle("DELETE /v1/exports/{id}", s.cancelExport)
	// The Go runtime's profiles, to find where memory and time go. Not API
	// routes: no deadline (a CPU profile takes ?seconds=N, at most the
	// server's write timeout), a bearer token with the admin scope.
	s.handleRaw("GET /debug/pprof/", pprof.Index)
	s.handleRaw("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.handleRaw("GET /debug/pprof/profile", pprof.Profile)
	s.handleRaw("GET /debug/pprof/symbol", pprof.Symbol)
	s.handleRaw("GET /debug/pprof/trace", pprof.Trace)
	for _, p := range s.patterns {
		if _, ok := routeScopes[p]; !ok {
			return nil, fmt.Errorf("api: route %q has no scope: add it to routeScopes", p)
		}
	}
	s.proxy = s.newProxy()
	s.handler = s.wrap(s.mux)
	return s, nil
}

// guarded reports whether path needs the bearer token: the API and the
// profiles. /healthz, /readyz and /metrics stay open for probes and
// Prometheus; they show no graph data.
func guarded(path string) bool {
	return path == "/v1" || strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/debug/")
}

// Handler is the server's root handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes lists the registered routes as "METHOD /path/{param}".
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

// Patterns lists every pattern the server serves: the routes, and the
// profiles of /debug/pprof/.
func (s *Server) Patterns() []string { return append([]string(nil), s.patterns...) }

// RouteScope is the scope a bearer token needs for the route of pattern
// (a pattern of Patterns; 0: open to all), and whether pattern is one.
func RouteScope(pattern string) (Scope, bool) {
	sc, ok := routeScopes[pattern]
	return sc, ok
}

// handleRaw registers h for pattern as it is: no deadline, no error
// response (the profiles).
func (s *Server) handleRaw(pattern string, h http.HandlerFunc) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, h)
}

// HTTPServer returns an http.Server for the API with read, write and idle
// timeouts derived from the limits (the write timeout leaves room for a
// request that runs to its deadline to say so).
func (s *Server) HTTPServer() *http.Server {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.cfg.Limits.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(s.StopFollowers) // Shutdown does not wait out the followers
	return srv
}

// handle registers one route; h writes its own success response and
// returns any error, which handle turns into the error response.
func (s *Server) handle(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
	s.routes = append(s.routes, pattern)
	s.patterns = append(s.patterns, pattern)
	wild := wildcards(pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		err := checkBounds(r, wild) // before anything reads the request
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			s.fail(w, r, err)
		}
	})
}

// wrap adds what every request gets: the deadline, the bearer token and
// scope check on /v1 and /debug/, and JSON bodies for requests that match
// no route.
func (s *Server) wrap(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		if guarded(r.URL.Path) && !s.tokens.open() {
			// A request that matches no route needs a known token, and
			// no scope, to be told so.
			_, pattern := mux.Handler(r)
			need := routeScopes[pattern]
			if status, msg := s.tokens.authorize(r, need); status != 0 {
				challenge := `Bearer realm="graphtide"`
				if status == http.StatusForbidden {
					challenge += fmt.Sprintf(`, error="insufficient_scope", scope="%s"`, need) // RFC 6750, 3.1
				}
				w.Header().Set("WWW-Authenticate", challenge)
				writeJSON(w, status, ErrorResponse{msg})
				return
			}
		}
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			mux.ServeHTTP(w, r)
			return
		}
		timeout := s.cfg.Limits.RequestTimeout
		if r.URL.Path == "/v1/changes" && followsChanges(r) {
			// A follow lasts longer than a request: it bounds itself
			// (follow.go).
			timeout += max(s.cfg.Limits.MaxFollowWait, s.cfg.Limits.FollowMaxDuration)
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		if _, pattern := mux.Handler(r); pattern == "" {
			// No route: the mux answers 404, 405 (with Allow) or a
			// redirect to the clean path; give 404 and 405 JSON bodies.
			mux.ServeHTTP(&noRouteWriter{ResponseWriter: w, r: r}, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// noRouteWriter replaces the mux's plain-text 404 and 405 bodies by JSON.
type noRouteWriter struct {
	http.ResponseWriter
	r       *http.Request
	replace bool
}

func (w *noRouteWriter) WriteHeader(status int) {
	if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.replace = true
	msg := fmt.Sprintf("no endpoint %s (see /v1/openapi.yaml)", w.r.URL.Path)
	if status == http.StatusMethodNotAllowed {
		msg = fmt.Sprintf("method %s is not allowed on %s; allowed: %s", w.r.Method, w.r.URL.Path, w.Header().Get("Allow"))
	}
	w.Header().Del("Content-Length")
	writeJSON(w.ResponseWriter, status, ErrorResponse{msg})
}

func (w *noRouteWriter) Write(b []byte) (int, error) {
	if w.replace {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// writeJSON writes v as the response with status (one line; "<", ">" and
// "&" as they are: the body is JSON, not HTML).
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		_ = enc.Encode(ErrorResponse{"encoding the response: " + err.Error()}) // a string always encodes
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes()) // the client went away: nothing left to tell it
}

// fail answers with the error's status and message.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	var (
		apiErr  *Error
		unknown *UnknownVertexError
		budget  *paths.BudgetError
		neg     *paths.NegativeWeightError
		tooBig  *http.MaxBytesError
	)
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.Status
	case errors.As(err, &unknown), errors.Is(err, analytics.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, analytics.ErrExists):
		status = http.StatusConflict
	case errors.As(err, &budget), errors.As(err, &neg):
		status = http.StatusUnprocessableEntity
	case errors.As(err, &tooBig):
		status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit)
	case errors.Is(err, context.DeadlineExceeded):
		status, msg = http.StatusServiceUnavailable, fmt.Sprintf("request took longer than its timeout of %v (serve --http-request-timeout)", s.cfg.Limits.RequestTimeout)
	case errors.Is(err, context.Canceled):
		status, msg = http.StatusServiceUnavailable, "request canceled"
	case errors.Is(err, views.ErrClosed), errors.Is(err, engine.ErrClosed):
		status, msg = http.StatusServiceUnavailable, "shutting down: "+msg
	}
	if status >= 500 {
		s.cfg.Logger.Warn("http request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	writeJSON(w, status, ErrorResponse{msg})
}
