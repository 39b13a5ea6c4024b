package deploy_test

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
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
	grouping []string // label names in by/without/on/ignoring/group_left/group_right lists, sorted
}

// grafanaVar is a Grafana template variable: $name, ${name} or $__name.
var grafanaVar = regexp.MustCompile(`\$\{?\w+\}?`)

// parsePromQL parses a PromQL expression, as written in Prometheus rules
// and Grafana panels, with Prometheus's own parser, and returns its metric
// selectors and grouping labels. Grafana variables stand for a duration
// inside a range or subquery ([$__rate_interval]) and for a value inside a
// string (instance=~"$instance"): they are replaced by a duration first.
func parsePromQL(expr string) (promqlQuery, error) {
	var q promqlQuery
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVar.ReplaceAllString(expr, "5m"))
	if err != nil {
		return q, fmt.Errorf("%q: %w", expr, err)
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			ref := promqlRef{metric: n.Name}
			for _, m := range n.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					if ref.metric == "" {
						ref.metric = m.Value
					}
					continue
				}
				ref.labels = append(ref.labels, m.Name)
			}
			q.refs = append(q.refs, ref)
		case *parser.AggregateExpr:
			q.grouping = append(q.grouping, n.Grouping...)
		case *parser.BinaryExpr:
			if vm := n.VectorMatching; vm != nil {
				q.grouping = append(q.grouping, vm.MatchingLabels...)
				q.grouping = append(q.grouping, vm.Include...)
			}
		}
		return nil
	})
	slices.Sort(q.grouping)
	q.grouping = slices.Compact(q.grouping)
	return q, nil
}

func TestParsePromQL(t *testing.T) {
	for expr, want := range map[string]promqlQuery{
		`histogram_quantile(0.99, sum by (le, analytic) (rate(graphtide_analytics_update_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`: {
			refs:     []promqlRef{{"graphtide_analytics_update_duration_seconds_bucket", []string{"instance"}}},
			grouping: []string{"analytic", "le"},
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
	for _, bad := range []string{`sum(rate(x[5m])`, `x{a="b"`, `x{a="b}`, `rate(x[5m)`, `rate(x)`, `x +`} {
		if _, err := parsePromQL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func set(xs ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}
