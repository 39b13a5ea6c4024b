package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/views/paths"
)

// OpenAPI is the OpenAPI 3 document of the API (served at
// /v1/openapi.yaml).
//
//go:embed openapi.yaml
var OpenAPI []byte

// queryParams are the query parameters each route takes, by its pattern
// (none when absent); checkBounds bounds each value (ParamLimit).
var queryParams = map[string][]string{
	"GET /v1/vertices/{v}":             {"view", "as_of_seq", "as_of_time"},
	"GET /v1/vertices/{v}/degree":      {"dir", "view", "types", "as_of_seq", "as_of_time"},
	"GET /v1/vertices/{v}/neighbors":   {"dir", "view", "limit", "cursor", "after", "after_type", "types", "window", "as_of_seq", "as_of_time"},
	"GET /v1/edges/{src}/{dst}":        {"view", "types", "window", "limit", "as_of_seq", "as_of_time"},
	"GET /v1/edges/{src}/{dst}/events": {"type", "window", "limit", "view", "as_of_seq", "as_of_time"},
	"GET /v1/changes":                  {"from", "to", "from_time", "to_time", "types", "limit", "cursor", "after", "after_dst", "after_type", "follow", "wait"},
	"GET /v1/paths":                    {"from", "to", "weighted", "max_depth", "types", "as_of_seq", "as_of_time"},
	"GET /v1/analytics/{name}/top":     {"k"},
	"GET /v1/alerts":                   {"analytic", "limit"},
}

// params checks r's query against the parameters its route takes
// (queryParams): an unknown one (a typo would otherwise be ignored) or
// one given twice is an error.
func params(r *http.Request) (url.Values, error) {
	allowed := queryParams[r.Pattern]
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "malformed query: %v", err)
	}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, errorf(http.StatusBadRequest, "unknown query parameter %q: this endpoint takes none", k)
			}
			return nil, errorf(http.StatusBadRequest, "unknown query parameter %q; allowed: %s", k, strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, errorf(http.StatusBadRequest, "query parameter %q is given %d times", k, len(vs))
		}
	}
	return q, nil
}

// intParam reads an integer parameter in [lo, hi], def when absent.
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, errorf(http.StatusBadRequest, "%s must be an integer between %d and %d, got %q", name, lo, hi, s)
	}
	return n, nil
}

func boolParam(q url.Values, name string) (bool, error) {
	s := q.Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, errorf(http.StatusBadRequest, "%s must be true or false, got %q", name, s)
	}
	return b, nil
}

// vertex resolves a vertex given as an id or a key.
func (s *Server) vertex(name, v string) (uint64, error) { return s.reader.resolveVertex(name, v) }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	m, err := s.cfg.Store.Metrics()
	if err != nil {
		return errorf(http.StatusServiceUnavailable, "store failed: %v", err)
	}
	if m.BackgroundErrors > 0 {
		return errorf(http.StatusServiceUnavailable, "store failed: %d background flushes or compactions failed (see the log)", m.BackgroundErrors)
	}
	writeJSON(w, http.StatusOK, StatusResponse{Status: "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) error {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			// A probe's answer, not a failure of the request: not logged
			// per probe (what makes serve not ready logs itself).
			writeJSON(w, http.StatusServiceUnavailable, ErrorResponse{"not ready: " + err.Error()})
			return nil
		}
	}
	resp := StatusResponse{Status: "ready"}
	if s.cfg.Behind != nil {
		if n, ok := s.cfg.Behind(); ok {
			resp.Behind = &n
		}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Metrics == nil {
		return errorf(http.StatusNotFound, "metrics are not served here")
	}
	s.cfg.Metrics.ServeHTTP(w, r)
	return nil
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, err := w.Write(OpenAPI)
	return err
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	m, err := s.cfg.Store.Metrics()
	if err != nil {
		return err
	}
	_, alerts := s.cfg.Analytics.Alerts("", 0)
	out := StatsResponse{
		Store:     storeStats(m, s.cfg.Store.InEdges()),
		Views:     viewStats(s.cfg.Views.Stats()),
		Analytics: AnalyticsStats{Count: len(s.cfg.Analytics.Results()), Alerts: alerts},
	}
	if s.cfg.Dict != nil {
		out.Keys = s.cfg.Dict.Len()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) degree(w http.ResponseWriter, r *http.Request) error {
	q, err := params(r)
	if err != nil {
		return err
	}
	dir, err := ParseDir(q.Get("dir"))
	if err != nil {
		return err
	}
	at, err := ParsePoint(q.Get("view"), AsOf{q.Get("as_of_seq"), q.Get("as_of_time")})
	if err != nil {
		return err
	}
	v, err := s.vertex("vertex", r.PathValue("v"))
	if err != nil {
		return err
	}
	out, err := s.reader.Degree(r.Context(), v, dir, at, q.Get("types"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) edge(w http.ResponseWriter, r *http.Request) error {
	e, err := s.edgeRequest(r)
	if err != nil {
		return err
	}
	out, err := s.reader.Edge(r.Context(), e.src, e.dst, e.at, e.q.Get("types"), e.win)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) edgeEvents(w http.ResponseWriter, r *http.Request) error {
	e, err := s.edgeRequest(r)
	if err != nil {
		return err
	}
	out, err := s.reader.Events(r.Context(), e.src, e.dst, e.q.Get("type"), e.at, e.win)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// edgeReq is what a read of one edge (its aggregate or its events) asks:
// the edge's ends, the view and the window.
type edgeReq struct {
	q        url.Values
	at       Point
	src, dst uint64
	win      EventWindow
}

// edgeRequest reads an edge read's path and query.
func (s *Server) edgeRequest(r *http.Request) (edgeReq, error) {
	var e edgeReq
	var err error
	if e.q, err = params(r); err != nil {
		return e, err
	}
	if e.at, err = ParsePoint(e.q.Get("view"), AsOf{e.q.Get("as_of_seq"), e.q.Get("as_of_time")}); err != nil {
		return e, err
	}
	if e.src, err = s.vertex("src", r.PathValue("src")); err != nil {
		return e, err
	}
	if e.dst, err = s.vertex("dst", r.PathValue("dst")); err != nil {
		return e, err
	}
	e.win, err = s.window(e.q)
	return e, err
}

// window reads a read's window= and limit= (EventWindow; limit bounds
// the events a window lists, and is ignored without one).
func (s *Server) window(q url.Values) (EventWindow, error) {
	d, err := ParseWindow(q.Get("window"))
	if err != nil {
		return EventWindow{}, err
	}
	limit, err := intParam(q, "limit", s.cfg.Limits.DefaultPage, 1, s.cfg.Limits.MaxPage)
	if err != nil {
		return EventWindow{}, err
	}
	return EventWindow{Window: d, Limit: limit}, nil
}

func (s *Server) getVertex(w http.ResponseWriter, r *http.Request) error {
	q, err := params(r)
	if err != nil {
		return err
	}
	at, err := ParsePoint(q.Get("view"), AsOf{q.Get("as_of_seq"), q.Get("as_of_time")})
	if err != nil {
		return err
	}
	u, err := s.vertex("v", r.PathValue("v"))
	if err != nil {
		return err
	}
	out, err := s.reader.Vertex(r.Context(), u, at)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) changes(w http.ResponseWriter, r *http.Request) error {
	q, err := params(r)
	if err != nil {
		return err
	}
	mode, err := followMode(r)
	if err != nil {
		return err
	}
	if mode != "" {
		return s.follow(w, r, q, mode)
	}
	if q.Get("wait") != "" {
		return errorf(http.StatusBadRequest, "wait is for following the changes (follow=1)")
	}
	limit, err := intParam(q, "limit", s.cfg.Limits.DefaultPage, 1, s.cfg.Limits.MaxPage)
	if err != nil {
		return err
	}
	ends, after, err := s.reader.changesStart(AsOf{q.Get("from"), q.Get("from_time")}, AsOf{q.Get("to"), q.Get("to_time")},
		PageOptions{Cursor: q.Get("cursor"), After: q.Get("after"), AfterDst: q.Get("after_dst"), AfterType: q.Get("after_type")})
	if err != nil {
		return err
	}
	out, err := s.reader.Changes(r.Context(), ends[0], ends[1], q.Get("types"), after, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) neighbors(w http.ResponseWriter, r *http.Request) error {
	q, err := params(r)
	if err != nil {
		return err
	}
	dir, err := ParseDir(q.Get("dir"))
	if err != nil {
		return err
	}
	at, after, err := s.reader.neighborsStart(q.Get("view"), AsOf{q.Get("as_of_seq"), q.Get("as_of_time")},
		PageOptions{Cursor: q.Get("cursor"), After: q.Get("after"), AfterType: q.Get("after_type")})
	if err != nil {
		return err
	}
	limit, err := intParam(q, "limit", s.cfg.Limits.DefaultPage, 1, s.cfg.Limits.MaxPage)
	if err != nil {
		return err
	}
	v, err := s.vertex("vertex", r.PathValue("v"))
	if err != nil {
		return err
	}
	d, err := ParseWindow(q.Get("window"))
	if err != nil {
		return err
	}
	out, err := s.reader.Neighbors(r.Context(), v, dir, at, q.Get("types"), after, limit, EventWindow{Window: d, Limit: limit})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) path(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Route != nil {
		return graphWide("a path crosses the partitions of several owners")
	}
	q, err := params(r)
	if err != nil {
		return err
	}
	var ends [2]uint64
	for i, name := range []string{"from", "to"} {
		if q.Get(name) == "" {
			return errorf(http.StatusBadRequest, "%s is required: a vertex id or key", name)
		}
		if ends[i], err = s.vertex(name, q.Get(name)); err != nil {
			return err
		}
	}
	weighted, err := boolParam(q, "weighted")
	if err != nil {
		return err
	}
	depth, err := intParam(q, "max_depth", 0, 0, 1<<20)
	if err != nil {
		return err
	}
	at, err := ParsePoint("", AsOf{q.Get("as_of_seq"), q.Get("as_of_time")})
	if err != nil {
		return err
	}
	select {
	case s.paths <- struct{}{}:
		defer func() { <-s.paths }()
	case <-r.Context().Done():
		return r.Context().Err()
	}
	out, err := s.reader.Path(r.Context(), ends[0], ends[1], at, q.Get("types"), paths.Options{Weighted: weighted, MaxDepth: depth, Budget: s.cfg.Limits.PathBudget})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listAnalytics(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	out := AnalyticsResponse{Analytics: []AnalyticResult{}}
	for _, res := range s.cfg.Analytics.Results() {
		out.Analytics = append(out.Analytics, s.keys.result(res))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) registerAnalytic(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBodyBytes))
	if err != nil {
		return err
	}
	var in Spec
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return errorf(http.StatusBadRequest, "body must be one analytic spec as a JSON object: %v", err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "body must hold one JSON object, and nothing after it")
	}
	spec, err := in.Analytics()
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if n := len(s.cfg.Analytics.Results()); n >= s.cfg.Limits.MaxAnalytics {
		return errorf(http.StatusConflict, "%d analytics are registered, the most allowed: delete one first", n)
	}
	spec, err = s.cfg.Analytics.Register(spec)
	switch {
	case err == nil:
	case errors.Is(err, analytics.ErrExists):
		return errorf(http.StatusConflict, "an analytic named %q is registered: delete it first, or choose another name", spec.Name)
	case errors.Is(err, analytics.ErrMemory), errors.Is(err, analytics.ErrGraphWide):
		return errorf(http.StatusConflict, "%v", err)
	case errors.Is(err, views.ErrClosed):
		return err
	case errors.As(err, new(*UnknownVertexError)):
		// The API never assigns an id: a root no edge has named is
		// unknown, and nothing is written to the key dictionary.
		return errorf(http.StatusNotFound, "%v (the API never assigns ids: register it once an edge names it)", err)
	default: // the spec is invalid
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if p := s.cfg.Persist; p != nil {
		if err := p.Registered(spec); err != nil {
			if uerr := s.cfg.Analytics.Unregister(spec.Name); uerr != nil {
				s.cfg.Logger.Error("unregistering an analytic whose registration could not be stored", "name", spec.Name, "err", uerr)
			}
			return fmt.Errorf("storing the registration of %q (not registered): %w", spec.Name, err)
		}
	}
	w.Header().Set("Location", "/v1/analytics/"+url.PathEscape(spec.Name))
	writeJSON(w, http.StatusCreated, SpecOf(spec))
	return nil
}

func (s *Server) getAnalytic(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	res, err := s.cfg.Analytics.Result(r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.keys.result(res))
	return nil
}

func (s *Server) deleteAnalytic(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	name := r.PathValue("name")
	s.regMu.Lock()
	defer s.regMu.Unlock()
	_, running := s.cfg.Analytics.Result(name)
	stored := false
	if p := s.cfg.Persist; p != nil {
		var err error
		if stored, err = p.Unregistered(name); err != nil {
			return fmt.Errorf("storing the removal of %q (still registered): %w", name, err)
		}
	}
	if running == nil {
		if err := s.cfg.Analytics.Unregister(name); err != nil {
			return err
		}
	} else if !stored {
		return running // not found
	}
	writeJSON(w, http.StatusOK, DeletedResponse{name})
	return nil
}

func (s *Server) analyticVertex(w http.ResponseWriter, r *http.Request) error {
	if _, err := params(r); err != nil {
		return err
	}
	name := r.PathValue("name")
	res, err := s.cfg.Analytics.Result(name)
	if err != nil {
		return err
	}
	v, err := s.vertex("vertex", r.PathValue("v"))
	if err != nil {
		return err
	}
	x, ok, err := s.cfg.Analytics.Vertex(name, v)
	if err != nil {
		return err
	}
	if !ok {
		why := "(monitors hold only the vertices they count)"
		if !res.Ready {
			why = "yet: its first compute has not finished"
		}
		return errorf(http.StatusNotFound, "analytic %q has no result for vertex %s %s", name, r.PathValue("v"), why)
	}
	writeJSON(w, http.StatusOK, VertexResultResponse{Analytic: name, Type: res.Spec.Type, Vertex: extID(s.cfg.Dict, v), Key: keyOf(s.cfg.Dict, v),
		Seq: res.Seq, Result: s.keys.vertexResult(x)})
	return nil
}

func (s *Server) top(w http.ResponseWriter, r *http.Request) error {
	q, err := params(r)
	if err != nil {
		return err
	}
	k, err := intParam(q, "k", 10, 1, s.cfg.Limits.MaxTopK)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	res, err := s.cfg.Analytics.Result(name)
	if err != nil {
		return err
	}
	if res.Spec.Type != "pagerank" {
		return errorf(http.StatusBadRequest, "analytic %q is a %s analytic: top needs a pagerank analytic", name, res.Spec.Type)
	}
	ranks, err := s.cfg.Analytics.TopRanks(name, k)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, TopResponse{Analytic: name, Ready: res.Ready, K: k, Top: s.keys.ranks(ranks)})
	return nil
}

func (s *Server) alerts(w http.ResponseWriter, r *http.Request) error {
	q, err := params(r)
	if err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 100, 1, s.cfg.Limits.MaxAlerts)
	if err != nil {
		return err
	}
	al, total := s.cfg.Analytics.Alerts(q.Get("analytic"), limit)
	out := AlertsResponse{Alerts: make([]Alert, 0, len(al)), Total: total}
	for _, a := range al {
		out.Alerts = append(out.Alerts, a.Record(s.cfg.Graph))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
