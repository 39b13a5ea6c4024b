package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/api"
)

// Starting: the HTTP API listens from early in Open (a restore may wait
// minutes for the brokers, and probes must hear meanwhile that serve is
// alive but not ready), but until Open has registered the analytics and
// built the ingester only /healthz, /readyz and /metrics answer: /readyz
// with 503 and what serve is waiting for, every other path with 503 and
// the same reason (a request must not see, or register, analytics while
// the checkpoint is being restored).

// startState is why serve is not yet open (nil: it is).
type startState struct {
	reason atomic.Pointer[func() error]
}

// set makes err the reason serve is starting; nil: it has started.
func (st *startState) set(err error) {
	if err == nil {
		st.reason.Store(nil)
		return
	}
	st.setFunc(func() error { return err })
}

// setFunc makes f, asked at each request, the reason serve is starting.
func (st *startState) setFunc(f func() error) { st.reason.Store(&f) }

// err is why serve is starting, or nil once it has started.
func (st *startState) err() error {
	if p := st.reason.Load(); p != nil {
		return (*p)()
	}
	return nil
}

// errOpening is the reason while Open builds the server.
var errOpening = errors.New("starting: opening the data directory, the analytics and ingestion")

// ready is /readyz's readiness: the start's reason while Open runs, then
// the ingester's.
func (s *Server) ready() error {
	// INVARIANT: s.in is set before the start's reason is cleared (the
	// atomic store orders them for readers).
	if err := s.start.err(); err != nil {
		return err
	}
	return s.in.Ready()
}

// behind is /readyz's lag, known once ingestion runs.
func (s *Server) behind() (int64, bool) {
	if s.start.err() != nil {
		return 0, false
	}
	return s.in.Behind()
}

// startGate answers every request but the probes and /metrics with 503
// and the start's reason until serve has started.
func (s *Server) startGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.start.err()
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			err = nil
		}
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(api.ErrorResponse{Error: "not ready: " + err.Error()})
	})
}
