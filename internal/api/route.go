package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
)

// Router is partitioned mode's map (serve --owners; package ownership):
// which instance owns a vertex.
type Router interface {
	// Owner returns the partition of vertex v, as a request names it, and
	// the base URL of the instance that owns it; nil when this one does.
	Owner(v string) (owner *url.URL, partition int32)
}

// Headers of partitioned mode. A routed request carries RoutedHeader (the
// partition it was routed for), so that an instance whose map disagrees
// refuses it rather than routing it on; every answer about a vertex
// carries PartitionHeader.
const (
	RoutedHeader    = "Graphtide-Routed-Partition"
	PartitionHeader = "Graphtide-Partition"
)

// graphWide is the refusal of what partitioned mode cannot answer.
func graphWide(what string) error {
	return errorf(http.StatusConflict, "%s: this instance serves partitioned mode (serve --owners), where each instance holds the out-edges of its own partitions' vertices only (records are keyed by their source vertex); run replica mode, where every instance holds the whole graph, for that", what)
}

type ownerKey struct{}

// newProxy is the reverse proxy to a vertex's owner: the request as it
// came (path, query, the bearer token), to the owner's base URL in its
// context; an owner that does not answer is a 502 naming it.
//
// Its transport is its own: no HTTP proxy from the environment (owners are
// the instances' own addresses), and idle connections kept for as many
// requests as run at once to one owner.
func (s *Server) newProxy() *httputil.ReverseProxy {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConnsPerHost = 64
	return &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(pr.In.Context().Value(ownerKey{}).(*url.URL))
			pr.Out.Host = pr.Out.URL.Host
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			owner := r.Context().Value(ownerKey{}).(*url.URL)
			status := http.StatusBadGateway
			switch {
			case errors.Is(r.Context().Err(), context.Canceled):
				return // the client went away: nobody to answer
			case r.Context().Err() != nil:
				status = http.StatusGatewayTimeout
			}
			w.Header().Set("Cache-Control", "no-store") // handleVertex took wrap's off
			w.Header().Set("X-Content-Type-Options", "nosniff")
			s.cfg.Logger.Warn("routing a request to the vertex's owner failed", "path", r.URL.Path, "owner", owner.String(), "err", err)
			writeJSON(w, status, ErrorResponse{fmt.Sprintf("the owner of this vertex's partition, %s, did not answer: %v", owner, err)})
		},
	}
}

// handleVertex registers a route about the vertex named by the path
// parameter param: in partitioned mode it is answered here when this
// instance owns the vertex, else proxied to its owner. outOnly: the
// route reads a direction (dir), and in partitioned mode only out-edges
// are held by one owner.
func (s *Server) handleVertex(pattern, param string, outOnly bool, h func(w http.ResponseWriter, r *http.Request) error) {
	s.handle(pattern, func(w http.ResponseWriter, r *http.Request) error {
		if s.cfg.Route == nil {
			return h(w, r)
		}
		if outOnly && r.URL.Query().Get("dir") == "in" {
			return graphWide("dir=in (a vertex's in-edges)")
		}
		v := r.PathValue(param)
		owner, p := s.cfg.Route.Owner(v)
		if owner == nil {
			w.Header().Set(PartitionHeader, strconv.Itoa(int(p)))
			return h(w, r)
		}
		if from := r.Header.Get(RoutedHeader); from != "" {
			return errorf(http.StatusMisdirectedRequest, "vertex %s (partition %d) was routed here as partition %s, but this instance's --owners gives partition %d to %s: the instances' --owners differ; give every instance the same", v, p, from, p, owner)
		}
		// The owner's answer carries PartitionHeader, and the headers wrap
		// sets on every answer.
		w.Header().Del("Cache-Control")
		w.Header().Del("X-Content-Type-Options")
		r.Header.Set(RoutedHeader, strconv.Itoa(int(p)))
		s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ownerKey{}, owner)))
		return nil
	})
}
