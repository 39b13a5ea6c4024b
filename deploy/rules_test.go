package deploy_test

import (
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/graphtide/graphtide/internal/testkit/metricstest"
)

// rulesTests is what TestAlertRules reads of the rules' unit tests
// (promtool's test file format).
type rulesTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			AlertName string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestAlertRules runs the unit tests of the alerting rules,
// prometheus/graphtide-rules.test.yml, with promtool (`promtool check
// rules` on the rules, then `promtool test rules`), and checks that they
// cover every alert of prometheus/graphtide-rules.yml with a case where it
// fires and one where it does not, and test no alert the rules lack.
func TestAlertRules(t *testing.T) {
	promtool := metricstest.Promtool(t)
	dir := filepath.Join(deployDir, "prometheus")
	for _, args := range [][]string{{"check", "rules", "graphtide-rules.yml"}, {"test", "rules", "graphtide-rules.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		} else {
			t.Logf("promtool %v:\n%s", args, out)
		}
	}

	var rules promRules
	decodeYAML(t, "prometheus/graphtide-rules.yml", &rules)
	var tests rulesTests
	decodeYAML(t, "prometheus/graphtide-rules.test.yml", &tests)
	if len(tests.RuleFiles) != 1 || tests.RuleFiles[0] != "graphtide-rules.yml" {
		t.Errorf("the rules' tests load %q, want the rules beside them", tests.RuleFiles)
	}
	fires, quiet := map[string]int{}, map[string]int{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName]++
			} else {
				quiet[a.AlertName]++
			}
		}
	}
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			if fires[r.Alert] == 0 || quiet[r.Alert] == 0 {
				t.Errorf("alert %s: %d test cases where it fires, %d where it does not; want at least one of each", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
	var unknown []string
	for a := range fires {
		if !alerts[a] {
			unknown = append(unknown, a)
		}
	}
	for a := range quiet {
		if !alerts[a] {
			unknown = append(unknown, a)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		t.Errorf("the rules' tests name alerts the rules do not have: %v", unknown)
	}
}
