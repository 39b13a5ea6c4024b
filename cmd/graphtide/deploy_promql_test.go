package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// promqlRef is one metric selector of a PromQL expression: the metric name
// and the label names its matchers use.
type promqlRef struct {
	metric string
	labels []string
}

// promqlQuery is what deploy_test checks in one PromQL expression.
type promqlQuery struct {
	refs     []promqlRef
	grouping []string // label names in by/without/on/ignoring/group_left/group_right lists
}

var (
	promqlAggregations = set("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
		"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio")
	promqlGroupings = set("by", "without", "on", "ignoring", "group_left", "group_right")
	promqlKeywords  = set("and", "or", "unless", "bool", "offset", "atan2", "inf", "nan")
)

func set(xs ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || ('0' <= c && c <= '9') }

// parsePromQL finds the metric selectors and grouping labels of a PromQL
// expression, as written in Prometheus rules and Grafana panels (Grafana
// variables such as $__rate_interval and $instance are skipped). It is a
// lexer, not a parser: it knows the aggregation operators, the keywords,
// that a name followed by '(' is a function, and skips strings, ranges,
// numbers and durations. It rejects unbalanced brackets and quotes.
func parsePromQL(expr string) (promqlQuery, error) {
	var q promqlQuery
	i, n := 0, len(expr)
	skipSpace := func() {
		for i < n && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
	}
	ident := func() string {
		j := i
		for i < n && isIdent(expr[i]) {
			i++
		}
		return expr[j:i]
	}
	skipString := func() error {
		quote := expr[i]
		for i++; i < n; i++ {
			if expr[i] == '\\' && quote != '`' {
				i++
				continue
			}
			if expr[i] == quote {
				i++
				return nil
			}
		}
		return fmt.Errorf("unterminated string in %q", expr)
	}
	// labelList reads "(a, b)" after a grouping keyword.
	labelList := func() ([]string, error) {
		skipSpace()
		if i >= n || expr[i] != '(' {
			return nil, nil // group_left without labels
		}
		i++
		var ls []string
		for {
			skipSpace()
			if i >= n {
				return nil, fmt.Errorf("unterminated label list in %q", expr)
			}
			switch c := expr[i]; {
			case c == ')':
				i++
				return ls, nil
			case c == ',':
				i++
			case isIdentStart(c):
				ls = append(ls, ident())
			default:
				return nil, fmt.Errorf("unexpected %q in a label list of %q", c, expr)
			}
		}
	}
	// matchers reads "{a="x", b=~"y"}" and returns the label names.
	matchers := func() ([]string, error) {
		i++ // '{'
		var ls []string
		for {
			skipSpace()
			if i >= n {
				return nil, fmt.Errorf("unterminated selector in %q", expr)
			}
			switch c := expr[i]; {
			case c == '}':
				i++
				return ls, nil
			case c == ',' || c == '=' || c == '!' || c == '~':
				i++
			case c == '"' || c == '\'' || c == '`':
				if err := skipString(); err != nil {
					return nil, err
				}
			case isIdentStart(c):
				ls = append(ls, ident())
			default:
				return nil, fmt.Errorf("unexpected %q in a selector of %q", c, expr)
			}
		}
	}
	depth := 0
	for {
		skipSpace()
		if i >= n {
			break
		}
		switch c := expr[i]; {
		case c == '#': // comment
			for i < n && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			if err := skipString(); err != nil {
				return q, err
			}
		case c == '[': // range or subquery
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return q, fmt.Errorf("unterminated range in %q", expr)
			}
			i += j + 1
		case c == '$': // Grafana variable: $name, ${name}, $__name
			i++
			if i < n && expr[i] == '{' {
				j := strings.IndexByte(expr[i:], '}')
				if j < 0 {
					return q, fmt.Errorf("unterminated variable in %q", expr)
				}
				i += j + 1
			} else {
				ident()
			}
		case '0' <= c && c <= '9' || c == '.':
			for i < n && (isIdent(expr[i]) || expr[i] == '.') {
				i++ // number or duration: 0.99, 1e3, 5m, 1h30m
			}
		case c == '{': // selector without a name: {__name__="x"}
			if _, err := matchers(); err != nil {
				return q, err
			}
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth--; depth < 0 {
				return q, fmt.Errorf("unbalanced ')' in %q", expr)
			}
			i++
		case isIdentStart(c):
			name := ident()
			lower := strings.ToLower(name)
			switch {
			case promqlGroupings[lower]:
				ls, err := labelList()
				if err != nil {
					return q, err
				}
				q.grouping = append(q.grouping, ls...)
				continue
			case promqlKeywords[lower] || promqlAggregations[lower]:
				continue
			}
			skipSpace()
			if i < n && expr[i] == '(' {
				continue // a function call
			}
			ref := promqlRef{metric: name}
			if i < n && expr[i] == '{' {
				ls, err := matchers()
				if err != nil {
					return q, err
				}
				ref.labels = ls
			}
			q.refs = append(q.refs, ref)
		default: // operators and commas
			i++
		}
	}
	if depth != 0 {
		return q, fmt.Errorf("unbalanced '(' in %q", expr)
	}
	return q, nil
}

func TestParsePromQL(t *testing.T) {
	for expr, want := range map[string]promqlQuery{
		`histogram_quantile(0.99, sum by (le, analytic) (rate(graphtide_analytics_update_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`: {
			refs:     []promqlRef{{"graphtide_analytics_update_duration_seconds_bucket", []string{"instance"}}},
			grouping: []string{"le", "analytic"},
		},
		"sum(rate(a_total[5m])) by (topic) / ignoring(x) group_left sum(b{c=\"}\", d!~'e'}) # comment: not_a_metric\n> bool 1e3": {
			refs:     []promqlRef{{"a_total", nil}, {"b", []string{"c", "d"}}},
			grouping: []string{"topic", "x"},
		},
		`up{job="graphtide"} == 0 and on (instance) max_over_time(x[1h:5m] offset 1d) unless count(y)`: {
			refs:     []promqlRef{{"up", []string{"job"}}, {"x", nil}, {"y", nil}},
			grouping: []string{"instance"},
		},
		`go_gc_duration_seconds{instance=~"$instance", quantile="1"}`: {
			refs: []promqlRef{{"go_gc_duration_seconds", []string{"instance", "quantile"}}},
		},
	} {
		got, err := parsePromQL(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", expr, got, want)
		}
	}
	for _, bad := range []string{`sum(rate(x[5m])`, `x{a="b"`, `x{a="b}`, `rate(x[5m)`, `sum by (a, "b") (x)`} {
		if _, err := parsePromQL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
