package api

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiDoc is the user's overview of the HTTP API; openapi.yaml is the
// reference it summarizes.
var apiDoc = filepath.Join("..", "..", "docs", "http-api.md")

// apiDocRow is a row of the page's routes table: | `METHOD /path?query` | scope | what |.
var apiDocRow = regexp.MustCompile("^\\| `(GET|POST|PUT|PATCH|DELETE) (/[^` ?]*)[^`]*` \\| ([a-z]+) \\|")

// notInOpenAPI are routes the page lists that the OpenAPI document does
// not describe (the Go runtime's profiles).
var notInOpenAPI = map[string]bool{"GET /debug/pprof/": true}

// apiDocProblems compares the routes table of the page with the
// operations of the OpenAPI document and their x-graphtide-scope
// ("open" where an operation has none): every operation is a row with its
// scope, and every row is an operation.
func apiDocProblems(page string, scopes map[string]string) ([]string, error) {
	raw, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	rows := map[string]string{}
	var problems []string
	for i, line := range strings.Split(string(raw), "\n") {
		m := apiDocRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		op := m[1] + " " + m[2]
		if _, dup := rows[op]; dup {
			problems = append(problems, fmt.Sprintf("line %d: %s is listed twice", i+1, op))
		}
		rows[op] = m[3]
	}
	for _, op := range slices.Sorted(maps.Keys(scopes)) {
		scope, ok := rows[op]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is in openapi.yaml but not in the routes table", op))
		case scope != scopes[op]:
			problems = append(problems, fmt.Sprintf("%s: the table says scope %q, openapi.yaml %q", op, scope, scopes[op]))
		}
	}
	for _, op := range slices.Sorted(maps.Keys(rows)) {
		if _, ok := scopes[op]; !ok && !notInOpenAPI[op] {
			problems = append(problems, fmt.Sprintf("%s is in the routes table but not in openapi.yaml", op))
		}
	}
	return problems, nil
}

// documentedScopes is every "METHOD /path" of openapi.yaml with its scope.
func documentedScopes(t *testing.T) map[string]string {
	doc := loadDoc(t)
	scopes := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			scope, _ := op.Extensions["x-graphtide-scope"].(string)
			if scope == "" {
				scope = "open"
			}
			scopes[method+" "+path] = scope
		}
	}
	if len(scopes) == 0 {
		t.Fatal("openapi.yaml has no operation")
	}
	return scopes
}

// TestHTTPAPIPageListsEveryRoute holds docs/http-api.md's routes table
// to openapi.yaml (see apiDocProblems).
func TestHTTPAPIPageListsEveryRoute(t *testing.T) {
	problems, err := apiDocProblems(apiDoc, documentedScopes(t))
	if err != nil {
		t.Fatalf("the HTTP API page: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", apiDoc, p)
	}
}

// TestHTTPAPIPageProblemsAreFound runs the same check on copies of the
// page with a row removed, a scope changed and a route the document lacks.
func TestHTTPAPIPageProblemsAreFound(t *testing.T) {
	raw, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	row := regexp.MustCompile("(?m)^\\| `GET /v1/stats` \\| read \\|.*\n").FindString(page)
	if row == "" {
		t.Fatal("the page has no GET /v1/stats row of scope read")
	}
	for _, c := range []struct{ name, page, want string }{
		{"row removed", strings.Replace(page, row, "", 1), "GET /v1/stats is in openapi.yaml but not in the routes table"},
		{"scope changed", strings.Replace(page, "| `GET /v1/stats` | read |", "| `GET /v1/stats` | admin |", 1), `GET /v1/stats: the table says scope "admin"`},
		{"unknown route", page + "\n| `GET /v1/nothing?x=1` | read | x |\n", "GET /v1/nothing is in the routes table but not in openapi.yaml"},
		{"listed twice", page + "\n" + row, "GET /v1/stats is listed twice"},
	} {
		p := filepath.Join(t.TempDir(), "http-api.md")
		if err := os.WriteFile(p, []byte(c.page), 0o600); err != nil {
			t.Fatal(err)
		}
		problems, err := apiDocProblems(p, documentedScopes(t))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: want a problem containing %q, got %q", c.name, c.want, problems)
		}
	}
}
