package api

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"

	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Bounds of what one request may carry. Every string a request holds has
// a most bytes, checked before anything reads, resolves, stores or echoes
// it, and refused naming the field and its bound: the request target with
// 414, a path or query parameter and each string of a body with 400 (a
// body as a whole is capped by Limits.MaxBodyBytes: 413). So no request
// can make the server hold, parse, store or log more than these.
const (
	// MaxTargetBytes bounds the request target, path and query as sent
	// (percent-encoded).
	MaxTargetBytes = 48 << 10
	// MaxVertexBytes bounds a vertex as a request names it: a key of at
	// most keydict.MaxKeyLen bytes with its "key:" prefix (an id is
	// shorter).
	MaxVertexBytes = keydict.MaxKeyLen + len("key:")
	// MaxParamBytes bounds every other query or path parameter (a
	// number, a time, a word such as out or fresh) and a parameter's name.
	MaxParamBytes = 64
	// MaxDurationBytes bounds a duration of a spec ("250ms", "10m").
	MaxDurationBytes = 64
)

// paramLimits are the query parameters with a bound of their own; every
// other takes MaxParamBytes.
var paramLimits = map[string]int{
	"after": MaxVertexBytes, "after_dst": MaxVertexBytes, "from": MaxVertexBytes, "to": MaxVertexBytes,
	"after_type": typedict.MaxNameLen, "types": analytics.MaxTypesLen, "analytic": analytics.MaxNameLen,
	"cursor": MaxCursorBytes,
}

// pathLimits are the path parameters with a bound of their own.
var pathLimits = map[string]int{"v": MaxVertexBytes, "src": MaxVertexBytes, "dst": MaxVertexBytes, "name": analytics.MaxNameLen}

// ParamLimit is the most bytes of query parameter name's value.
func ParamLimit(name string) int {
	if n, ok := paramLimits[name]; ok {
		return n
	}
	return MaxParamBytes
}

// PathLimit is the most bytes of path parameter name's value (decoded).
func PathLimit(name string) int {
	if n, ok := pathLimits[name]; ok {
		return n
	}
	return MaxParamBytes
}

// SpecLimits is the most bytes of each string of an analytic spec as the
// API reads it (Spec), by its JSON name: analytics.StringLimits and the
// durations.
var SpecLimits = func() map[string]int {
	m := map[string]int{"interval": MaxDurationBytes, "window": MaxDurationBytes, "lateness": MaxDurationBytes, "pull_timeout": MaxDurationBytes, "max_span": MaxDurationBytes}
	for k, v := range analytics.StringLimits {
		m[k] = v
	}
	return m
}()

// wildcardRE matches the wildcards of a route pattern ("{v}").
var wildcardRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?\}`)

// wildcards lists the path parameters of a route pattern.
func wildcards(pattern string) []string {
	var out []string
	for _, m := range wildcardRE.FindAllStringSubmatch(pattern, -1) {
		out = append(out, m[1])
	}
	return out
}

// tooLong is the refusal of a field over its bound.
func tooLong(status int, field string, n, most int) *Error {
	return errorf(status, "%s is %d bytes; at most %d", field, n, most)
}

// checkBounds refuses a request whose target, or one of whose path
// parameters (wild) or query parameters, is longer than its bound. A
// query that does not parse is left to params, which says so.
func checkBounds(r *http.Request, wild []string) error {
	if n := len(r.RequestURI); n > MaxTargetBytes {
		return tooLong(http.StatusRequestURITooLong, "the request target (path and query)", n, MaxTargetBytes)
	}
	for _, w := range wild {
		if v := r.PathValue(w); len(v) > PathLimit(w) {
			return tooLong(http.StatusBadRequest, fmt.Sprintf("path parameter %s", w), len(v), PathLimit(w))
		}
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if len(k) > MaxParamBytes {
			return tooLong(http.StatusBadRequest, fmt.Sprintf("the name of query parameter %.16q...", k), len(k), MaxParamBytes)
		}
		for _, v := range q[k] {
			if len(v) > ParamLimit(k) {
				return tooLong(http.StatusBadRequest, fmt.Sprintf("query parameter %s", k), len(v), ParamLimit(k))
			}
		}
	}
	return nil
}

// checkLengths refuses a string of the spec longer than its bound
// (SpecLimits); analytics.Spec.Validate checks those of analytics.Spec
// again, for specs from elsewhere.
func (s Spec) checkLengths() error {
	for _, f := range []struct{ name, v string }{{"name", s.Name}, {"type", s.Type}, {"root", s.Root}, {"types", s.Types},
		{"interval", s.Interval}, {"direction", s.Direction}, {"window", s.Window}, {"lateness", s.Lateness}, {"pull_timeout", s.PullTimeout},
		{"measure", s.Measure}, {"max_span", s.MaxSpan}, {"ring_search", s.RingSearch}} {
		if most := SpecLimits[f.name]; len(f.v) > most {
			return tooLong(http.StatusBadRequest, "spec field "+f.name, len(f.v), most)
		}
	}
	return nil
}
