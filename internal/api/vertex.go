package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// UnknownVertexError is ResolveVertex's error for a string that is neither
// a vertex id nor a key the dictionary knows (HTTP 404).
type UnknownVertexError struct {
	Vertex string // as given, without a "key:" prefix
	// Number: Vertex is a number from keydict.MapFrom up that the
	// dictionary has not mapped: no edge has ever named it.
	Number bool
}

func (e *UnknownVertexError) Error() string {
	if e.Number {
		return fmt.Sprintf("vertex %s has never been in the graph", e.Vertex)
	}
	return fmt.Sprintf("vertex %q is neither an id nor a known key", e.Vertex)
}

// ResolveVertex returns the reader of a vertex given on the command line or
// in a request: a decimal id (at most engine.MaxVertex), or a string key
// already known to dict (prefix "key:" forces a key that looks like a
// number). It never assigns an id. dict may be nil: then only ids resolve.
func ResolveVertex(dict *keydict.Dict) func(string) (uint64, error) {
	return func(s string) (uint64, error) {
		if k, ok := strings.CutPrefix(s, "key:"); ok {
			s = k
		} else if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			if v > engine.MaxVertex {
				return 0, fmt.Errorf("vertex id %d is above the largest allowed, %d", v, engine.MaxVertex)
			}
			if dict == nil {
				return v, nil
			}
			id, ok := dict.LookupNum(v)
			if !ok {
				return 0, &UnknownVertexError{Vertex: s, Number: true}
			}
			return id, nil
		}
		if dict != nil {
			if id, ok := dict.Lookup(s); ok {
				return id, nil
			}
		}
		return 0, &UnknownVertexError{Vertex: s}
	}
}

// extID returns the vertex id as the sources gave it: the number of a
// mapped number's id (see keydict.NumID), else id itself.
func extID(dict *keydict.Dict, id uint64) uint64 {
	if dict != nil {
		return dict.SourceID(id)
	}
	return id
}

// vertexOf is id as the sources gave it, with its key (keydict.Dict.Name).
func vertexOf(dict *keydict.Dict, id uint64) Vertex {
	if dict == nil {
		return Vertex{ID: id}
	}
	ext, key := dict.Name(id)
	return Vertex{ext, key}
}

// keyOf returns the string key of id, or "" when id is a number or dict is
// nil.
func keyOf(dict *keydict.Dict, id uint64) string {
	if dict == nil || !keydict.IsKeyID(id) {
		return ""
	}
	k, _ := dict.Key(id)
	return k
}

// IsLoopbackAddr reports whether a listen address host:port names only the
// loopback interface: a loopback IP literal or "localhost". An empty host,
// 0.0.0.0, [::] and every other name bind (or may resolve) elsewhere.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ResolveRoot returns the reader of an analytic's root vertex for the
// operator's analytics (serve's configuration, AssignRoots; the Go
// library): as ResolveVertex, but a key or a mapped number the dictionary
// does not know yet gets its id now (synced before it returns, as
// ingestion syncs a new key before the edges that use it), the id the
// first edge naming it will have; so an analytic can be registered before
// its root has an edge (it is then unreached, alone). The API never uses
// it: a root it is sent resolves with ResolveVertex (unknown: 404), so no
// request writes to the dictionary.
func ResolveRoot(dict *keydict.Dict) func(string) (uint64, error) {
	lookup := ResolveVertex(dict)
	return func(s string) (uint64, error) {
		id, err := lookup(s)
		var unknown *UnknownVertexError
		if !errors.As(err, &unknown) || dict == nil {
			return id, err
		}
		if unknown.Number {
			v, _ := strconv.ParseUint(s, 10, 64) // it parsed in lookup
			id, err = dict.NumID(v)
		} else {
			id, err = dict.ID(strings.TrimPrefix(s, "key:"))
		}
		if err == nil {
			err = dict.Sync()
		}
		if err != nil {
			return 0, fmt.Errorf("giving root %q an id: %w", s, err)
		}
		return id, nil
	}
}

// AssignRoots gives the root of each of specs (serve's configuration: the
// operator's analytics) that the dictionary does not know yet its id
// (ResolveRoot), so that they resolve afterwards without assigning. A
// spec that does not validate is left for its registration to refuse.
// The analytics of the API, and those it stored, never come here.
func AssignRoots(dict *keydict.Dict, specs []analytics.Spec) error {
	if dict == nil {
		return nil
	}
	for _, s := range specs {
		if c := s; c.Validate() != nil || !analytics.NeedsRoot(s.Type) {
			continue
		}
		if _, err := ResolveRoot(dict)(s.Root); err != nil {
			return fmt.Errorf("analytic %q: %w", s.Name, err)
		}
	}
	return nil
}

// resolveVertex resolves a vertex given as an id or a key (ResolveVertex):
// an unknown one is an *UnknownVertexError (404), any other problem a 400
// naming the parameter.
func (q Reader) resolveVertex(name, v string) (uint64, error) {
	id, err := ResolveVertex(q.Dict)(v)
	var unknown *UnknownVertexError
	if err != nil && !errors.As(err, &unknown) {
		return 0, errorf(http.StatusBadRequest, "%s: %v", name, err)
	}
	return id, err
}
