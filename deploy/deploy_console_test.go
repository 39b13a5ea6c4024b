package deploy_test

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template/parse"
)

// prometheusTemplateFuncs are the functions Prometheus 2.42 gives console
// templates (its template package) that a console may use; parsing a
// console with them finds syntax errors and unknown functions without a
// Prometheus. Go's own template functions are added, as text/template
// does. (The parser only asks whether a name has a non-nil value.)
var prometheusTemplateFuncs = func() map[string]any {
	m := map[string]any{}
	for _, f := range []string{"query", "first", "label", "value", "strvalue", "args",
		"reReplaceAll", "safeHtml", "match", "title", "toUpper", "toLower", "graphLink", "tableLink",
		"sortByLabel", "humanize", "humanize1024", "humanizeDuration", "humanizePercentage",
		"humanizeTimestamp", "toTime", "pathPrefix", "externalURL", "parseDuration", "tmpl",
		// text/template's own
		"and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf",
		"println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne"} {
		m[f] = f
	}
	return m
}()

// promLibTemplates are the templates Prometheus's console libraries define
// (prom.lib and menu.lib, as Debian's package ships them).
var promLibTemplates = set("prom_console_head", "head", "tail", "navbar", "menu", "_menuItem",
	"__prom_query_drilldown_noop", "humanize", "humanizeNoSmallPrefix", "humanize1024",
	"humanizeDuration", "humanizePercentage", "humanizeTimestamp", "printf.1f", "printf.3g",
	"prom_query_drilldown", "prom_path", "prom_right_table_head", "prom_right_table_tail",
	"prom_right_table_job_head", "prom_content_head", "prom_content_tail", "prom_graph_timecontrol")

// consoleQuery is one PromQL expression of a console template and where it
// is.
type consoleQuery struct {
	where string
	expr  string
	pos   int // byte offset in the console
}

// consoleQueries finds the PromQL expressions of a Prometheus console
// template: the string literal (or list of them) of every graph's `expr:`
// (PromConsole.Graph), the first argument of `args` passed to the
// prom_query_drilldown template, and the string argument of every `query`
// and `printf` (a printf format is a query whose %s verbs are label values;
// they are checked as "x"). An expression built any other way cannot be
// checked and is an error, and so is a template that is neither defined in
// the console nor one of the console libraries'.
func consoleQueries(name, src string) ([]consoleQuery, error) {
	trees, err := parse.Parse(name, src, "{{", "}}", prometheusTemplateFuncs)
	if err != nil {
		return nil, err
	}
	var qs []consoleQuery
	var errs []error
	line := func(n parse.Node) int { return strings.Count(src[:n.Position()], "\n") + 1 }
	add := func(n parse.Node, what, expr string) {
		qs = append(qs, consoleQuery{fmt.Sprintf("%s:%d %s", name, line(n), what), expr, int(n.Position())})
	}
	// format: the expression of a printf format.
	format := func(n *parse.StringNode) (string, error) {
		expr := strings.ReplaceAll(n.Text, "%s", "x")
		if strings.Contains(expr, "%") {
			return "", fmt.Errorf("%s:%d: printf %q: only %%s verbs (label values) can be checked", name, line(n), n.Text)
		}
		return expr, nil
	}
	var pipe func(p *parse.PipeNode)
	pipe = func(p *parse.PipeNode) {
		if p == nil {
			return
		}
		for i, c := range p.Cmds {
			if id, ok := c.Args[0].(*parse.IdentifierNode); ok && (id.Ident == "query" || id.Ident == "printf") {
				var s *parse.StringNode
				switch {
				case len(c.Args) >= 2:
					s, _ = c.Args[1].(*parse.StringNode)
				case i > 0 && len(p.Cmds[i-1].Args) == 1:
					s, _ = p.Cmds[i-1].Args[0].(*parse.StringNode) // "expr" | query
				case i > 0:
					if prev, ok := p.Cmds[i-1].Args[0].(*parse.IdentifierNode); ok && prev.Ident == "printf" {
						continue // printf "..." x | query: the printf is the query
					}
				}
				if s == nil {
					errs = append(errs, fmt.Errorf("%s:%d: %s: the expression must be a string literal", name, line(c), c))
					continue
				}
				expr := s.Text
				if id.Ident == "printf" {
					var err error
					if expr, err = format(s); err != nil {
						errs = append(errs, err)
						continue
					}
				}
				add(c, id.Ident, expr)
			}
			for _, a := range c.Args {
				if sub, ok := a.(*parse.PipeNode); ok {
					pipe(sub)
				}
			}
		}
	}
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.ActionNode:
			pipe(n.Pipe)
		case *parse.IfNode:
			pipe(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			pipe(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			pipe(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			if trees[n.Name] == nil && !promLibTemplates[n.Name] {
				errs = append(errs, fmt.Errorf("%s:%d: template %q is neither in the console nor in prom.lib or menu.lib", name, line(n), n.Name))
			}
			if n.Name == "prom_query_drilldown" {
				var first parse.Node
				if n.Pipe != nil && len(n.Pipe.Cmds) == 1 {
					c := n.Pipe.Cmds[0]
					if id, ok := c.Args[0].(*parse.IdentifierNode); ok && id.Ident == "args" && len(c.Args) >= 2 {
						first = c.Args[1]
					} else if p, ok := c.Args[0].(*parse.PipeNode); ok && len(p.Cmds) == 1 {
						if id, ok := p.Cmds[0].Args[0].(*parse.IdentifierNode); ok && id.Ident == "args" && len(p.Cmds[0].Args) >= 2 {
							first = p.Cmds[0].Args[1]
						}
					}
				}
				switch f := first.(type) {
				case *parse.StringNode:
					add(n, "prom_query_drilldown", f.Text)
				case *parse.PipeNode: // (printf "..." ...), found by pipe
				default:
					errs = append(errs, fmt.Errorf("%s:%d: prom_query_drilldown needs (args \"expr\" ...) or (args (printf \"expr\" ...) ...), not %s", name, line(n), n.Pipe))
				}
			}
			pipe(n.Pipe)
		}
	}
	for _, tr := range trees {
		walk(tr.Root)
	}

	// The graphs: expr: "..." or expr: ["...", "..."], in the text.
	for _, m := range regexp.MustCompile(`\bexpr:\s*`).FindAllStringIndex(src, -1) {
		where := fmt.Sprintf("%s:%d expr", name, strings.Count(src[:m[0]], "\n")+1)
		exprs, err := jsStrings(src[m[1]:])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		for _, e := range exprs {
			if strings.Contains(e, "{{") {
				errs = append(errs, fmt.Errorf("%s: %q: a templated expression cannot be checked", where, e))
				continue
			}
			qs = append(qs, consoleQuery{where, e, m[0]})
		}
	}
	slices.SortStableFunc(qs, func(a, b consoleQuery) int { return a.pos - b.pos })
	return qs, errors.Join(errs...)
}

// jsStrings reads a JavaScript double-quoted string literal, or an array
// of them, at the start of s.
func jsStrings(s string) ([]string, error) {
	str := func(s string) (string, int, error) {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\n':
				return "", 0, errors.New("newline in a string literal")
			case '"':
				v, err := strconv.Unquote(s[:i+1])
				return v, i + 1, err
			}
		}
		return "", 0, errors.New("unterminated string literal")
	}
	if strings.HasPrefix(s, `"`) {
		v, _, err := str(s)
		return []string{v}, err
	}
	if !strings.HasPrefix(s, "[") {
		return nil, fmt.Errorf("want a string literal or an array of them, got %.20q", s)
	}
	var out []string
	for i := 1; i < len(s); {
		switch c := s[i]; {
		case c == ']':
			if len(out) == 0 {
				return nil, errors.New("empty expression list")
			}
			return out, nil
		case c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '"':
			v, n, err := str(s[i:])
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			i += n
		default:
			return nil, fmt.Errorf("want string literals in the expression list, got %.20q", s[i:])
		}
	}
	return nil, errors.New("unterminated expression list")
}

func TestConsoleQueries(t *testing.T) {
	src := `{{ template "head" . }}
{{ define "row" }}<td>{{ . }}</td>{{ end }}
<td>{{ template "prom_query_drilldown" (args "sum(a_total)" "/s" "humanize") }}</td>
{{ range query "sum by (level) (b)" | sortByLabel "level" }}
  {{ template "prom_query_drilldown" (args (printf "c{level='%s'}" .Labels.level)) }}
  {{ template "row" .Value }}
{{ else }}none{{ end }}
{{ with "d" | query }}{{ . | first | value | humanize }}{{ end }}
{{ with printf "e{x='%s'}" .Params.x | query }}{{ . | first | value }}{{ end }}
<script>
new PromConsole.Graph({
  node: document.querySelector("#g"),
  expr: "rate(f_total{job=\"j\"}[1m])",
})
new PromConsole.Graph({
  expr: [
    "g",
    "h / i",
  ],
})
</script>
{{ template "tail" }}`
	qs, err := consoleQueries("t.html", src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range qs {
		got = append(got, q.expr)
	}
	want := []string{"sum(a_total)", "sum by (level) (b)", "c{level='x'}", "d", "e{x='x'}",
		`rate(f_total{job="j"}[1m])`, "g", "h / i"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if !strings.HasPrefix(qs[2].where, "t.html:5 ") {
		t.Errorf("where %q, want line 5", qs[2].where)
	}

	for _, bad := range []string{
		`{{ template "prom_query_drilldown" (args .x) }}`,
		`{{ template "prom_query_drilldown" . }}`,
		`{{ query .x }}`,
		`{{ printf "a[%d]" 1 | query }}`,
		`{{ template "nosuch" . }}`,
		`{{ nosuchfunc "x" }}`,
		`{{ if }}`,
		`expr: someVariable,`,
		`expr: ["a", b],`,
		`expr: "a{x='{{ .Params.x }}'}",`,
		`expr: "unterminated`,
	} {
		if _, err := consoleQueries("bad.html", bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
