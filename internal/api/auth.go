package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Scope is a set of the things a bearer token may do.
type Scope uint8

// The scopes. Each is its own: a token may do what its scopes name and
// nothing else (admin does not imply read).
const (
	// ScopeRead: every GET of /v1 (reads, paths, analytics' results,
	// alerts, the OpenAPI document).
	ScopeRead Scope = 1 << iota
	// ScopeWrite: POST /v1/batches.
	ScopeWrite
	// ScopeAdmin: registering and deleting analytics (POST and DELETE
	// /v1/analytics), and the profiles of /debug/pprof/.
	ScopeAdmin

	// AllScopes is what a token given alone (a file of one bare token,
	// or Config.Token) may do.
	AllScopes = ScopeRead | ScopeWrite | ScopeAdmin
)

var scopeNames = []struct {
	s    Scope
	name string
}{{ScopeRead, "read"}, {ScopeWrite, "write"}, {ScopeAdmin, "admin"}}

// String lists the scopes of s, comma separated ("none" when empty).
func (s Scope) String() string {
	var names []string
	for _, n := range scopeNames {
		if s&n.s != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// ParseScopes reads a comma-separated list of scope names.
func ParseScopes(list string) (Scope, error) {
	var s Scope
	for name := range strings.SplitSeq(list, ",") {
		i := slices.IndexFunc(scopeNames, func(n struct {
			s    Scope
			name string
		}) bool {
			return n.name == name
		})
		if i < 0 {
			return 0, fmt.Errorf("unknown scope %q; the scopes are read, write and admin", name)
		}
		s |= scopeNames[i].s
	}
	return s, nil
}

// routeScopes is the scope each route needs, by its pattern as
// registered. INVARIANT: every route of the server is here (New refuses
// to build a server with one that is not), so that no route is served
// without its scope being decided.
var routeScopes = map[string]Scope{
	"GET /healthz":                          0,
	"GET /readyz":                           0,
	"GET /metrics":                          0,
	"GET /v1/openapi.yaml":                  ScopeRead,
	"GET /v1/stats":                         ScopeRead,
	"GET /v1/vertices/{v}":                  ScopeRead,
	"GET /v1/vertices/{v}/degree":           ScopeRead,
	"GET /v1/vertices/{v}/neighbors":        ScopeRead,
	"GET /v1/edges/{src}/{dst}":             ScopeRead,
	"GET /v1/edges/{src}/{dst}/events":      ScopeRead,
	"GET /v1/changes":                       ScopeRead,
	"POST /v1/batches":                      ScopeWrite,
	"GET /v1/paths":                         ScopeRead,
	"GET /v1/analytics":                     ScopeRead,
	"POST /v1/analytics":                    ScopeAdmin,
	"GET /v1/analytics/{name}":              ScopeRead,
	"DELETE /v1/analytics/{name}":           ScopeAdmin,
	"GET /v1/analytics/{name}/vertices/{v}": ScopeRead,
	"GET /v1/analytics/{name}/top":          ScopeRead,
	"GET /v1/alerts":                        ScopeRead,
	"POST /v1/exports":                      ScopeAdmin,
	"GET /v1/exports":                       ScopeRead,
	"GET /v1/exports/{id}":                  ScopeRead,
	"DELETE /v1/exports/{id}":               ScopeAdmin,
	"GET /debug/pprof/":                     ScopeAdmin,
	"GET /debug/pprof/cmdline":              ScopeAdmin,
	"GET /debug/pprof/profile":              ScopeAdmin,
	"GET /debug/pprof/symbol":               ScopeAdmin,
	"GET /debug/pprof/trace":                ScopeAdmin,
}

// Token is a bearer token and what it may do.
type Token struct {
	Secret string
	Scopes Scope
}

// MinTokenLen is the shortest bearer token accepted.
const MinTokenLen = 16

// ParseTokens reads bearer tokens in the format of serve's
// --http-token-file (source names the file in errors). Either the file
// holds one bare token, which may do everything (the format of a file of
// one token, as before scopes); or each line is a token and its scopes:
//
//	# comment
//	TOKEN read
//	TOKEN read,write,admin
//
// Blank lines and lines starting with # are skipped; surrounding white
// space is ignored. A malformed line is refused naming its number, never
// its token.
func ParseTokens(source string, data []byte) ([]Token, error) {
	type line struct {
		n      int
		fields []string
	}
	var lines []line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		lines = append(lines, line{n, strings.Fields(text)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s holds no token", source)
	}
	if len(lines) == 1 && len(lines[0].fields) == 1 {
		// One bare token: every scope.
		return checkTokens(source, []Token{{Secret: lines[0].fields[0], Scopes: AllScopes}}, []int{lines[0].n})
	}
	tokens := make([]Token, 0, len(lines))
	lineNos := make([]int, 0, len(lines))
	for _, l := range lines {
		switch len(l.fields) {
		case 1:
			return nil, fmt.Errorf("%s: line %d: a token without scopes; in a file of several tokens, each line is TOKEN SCOPES (e.g. TOKEN read,write)", source, l.n)
		case 2:
		default:
			return nil, fmt.Errorf("%s: line %d: %d fields; want TOKEN SCOPES (scopes comma separated, no spaces: e.g. read,write)", source, l.n, len(l.fields))
		}
		s, err := ParseScopes(l.fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", source, l.n, err)
		}
		tokens = append(tokens, Token{Secret: l.fields[0], Scopes: s})
		lineNos = append(lineNos, l.n)
	}
	return checkTokens(source, tokens, lineNos)
}

// checkTokens refuses tokens too short, and one given twice.
func checkTokens(source string, tokens []Token, lineNos []int) ([]Token, error) {
	seen := map[string]int{}
	for i, t := range tokens {
		if len(t.Secret) < MinTokenLen {
			return nil, fmt.Errorf("%s: line %d: a token must be at least %d characters (e.g. openssl rand -hex 32), got %d", source, lineNos[i], MinTokenLen, len(t.Secret))
		}
		if first, ok := seen[t.Secret]; ok {
			return nil, fmt.Errorf("%s: line %d: the token of line %d again: give each token one line", source, lineNos[i], first)
		}
		seen[t.Secret] = lineNos[i]
	}
	return tokens, nil
}

// tokenTable holds the digests of the tokens.
type tokenTable struct {
	digests [][sha256.Size]byte
	scopes  []Scope
}

func newTokenTable(cfg Config) tokenTable {
	var tt tokenTable
	add := func(secret string, s Scope) {
		tt.digests = append(tt.digests, sha256.Sum256([]byte(secret)))
		tt.scopes = append(tt.scopes, s)
	}
	if cfg.Token != "" {
		add(cfg.Token, AllScopes)
	}
	for _, t := range cfg.Tokens {
		add(t.Secret, t.Scopes)
	}
	return tt
}

// open reports whether no token is configured (every request allowed).
func (tt tokenTable) open() bool { return len(tt.digests) == 0 }

// lookup returns the scopes of the bearer token r carries, and whether
// it carries a known one. It compares the token's digest with every
// configured token's in constant time, whichever matches.
func (tt tokenTable) lookup(r *http.Request) (Scope, bool) {
	// The scheme name is case-insensitive (RFC 9110, 11.1).
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return 0, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	var scopes Scope
	found := 0
	for i := range tt.digests {
		eq := subtle.ConstantTimeCompare(sum[:], tt.digests[i][:])
		scopes |= Scope(subtle.ConstantTimeSelect(eq, int(tt.scopes[i]), 0))
		found |= eq
	}
	return scopes, found == 1
}

// authorize checks r against the tokens: nil when it may go on, else
// the status (401: no or an unknown token; 403: a token without the
// scope need) and the answer's message. need is the matched route's
// scope (0 for a request that matches no route: any known token).
func (tt tokenTable) authorize(r *http.Request, need Scope) (int, string) {
	have, ok := tt.lookup(r)
	switch {
	case !ok:
		return http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token> (a token serve was given by --http-token-file or GRAPHTIDE_HTTP_TOKEN)"
	case have&need != need:
		return http.StatusForbidden, fmt.Sprintf("this token may not %s %s: that needs the %s scope, and the token has %s (its line in serve's --http-token-file lists them)", r.Method, r.URL.Path, need, have)
	}
	return 0, ""
}
