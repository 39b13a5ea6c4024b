package deploy_test

// Tests of deploy/: every YAML and JSON file parses; every metric the
// Grafana dashboard, the Prometheus rules and the Prometheus console use is
// one `graphtide serve` exports; the configuration prometheus/run.sh
// generates loads the rules and the console; every flag and setting the systemd unit, the Kubernetes
// manifests and the example configurations pass is one serve has, and
// their values pass serve's validation; the manifests agree with each
// other (ports, probes, volumes, the token Secret, selectors); the
// Dockerfile, which cannot be built here, is checked statically.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/metricstest"
)

const deployDir = "."

// pendingFlags are flags the deploy files pass that serve does not have
// yet, with who adds them. Once serve has one it is checked like any
// other flag, and the test logs that its entry can go.
var pendingFlags = map[string]string{}

// deployFiles are the files deploy/ must hold.
var deployFiles = []string{
	"README.md",
	"prometheus/prometheus.yml",
	"prometheus/graphtide-rules.yml",
	"prometheus/graphtide-rules.test.yml",
	"prometheus/run.sh",
	"prometheus/consoles/graphtide.html",
	"grafana/graphtide-dashboard.json",
	"grafana/provisioning/datasources/graphtide.yaml",
	"grafana/provisioning/dashboards/graphtide.yaml",
	"systemd/graphtide.service",
	"systemd/graphtide.yaml",
	"systemd/graphtide.env",
	"kubernetes/kustomization.yaml",
	"kubernetes/configmap.yaml",
	"kubernetes/secret.yaml",
	"kubernetes/service.yaml",
	"kubernetes/statefulset.yaml",
	"kubernetes/servicemonitor.yaml",
	"kubernetes/partitioned/kustomization.yaml",
	"kubernetes/partitioned/configmap.yaml",
	"kubernetes/partitioned/owners.yaml",
	"docker/Dockerfile",
}

func readDeploy(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// yamlDocs decodes every document of a (multi-document) YAML file.
func yamlDocs(raw []byte) ([]yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	var docs []yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, n)
	}
}

// decodeYAML decodes the single document of a deploy/ file into out.
func decodeYAML(t *testing.T, name string, out any) {
	t.Helper()
	docs, err := yamlDocs(readDeploy(t, name))
	if err != nil || len(docs) != 1 {
		t.Fatalf("%s: want one YAML document: %d, %v", name, len(docs), err)
	}
	if err := docs[0].Decode(out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestDeployFilesParse(t *testing.T) {
	for _, f := range deployFiles {
		if _, err := os.Stat(filepath.Join(deployDir, f)); err != nil {
			t.Errorf("deploy/%s is missing: %v", f, err)
		}
	}
	var yamls, jsons int
	err := filepath.WalkDir(deployDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch filepath.Ext(p) {
		case ".yml", ".yaml":
			yamls++
			docs, err := yamlDocs(raw)
			if err != nil {
				t.Errorf("%s: %v", p, err)
			} else if len(docs) == 0 {
				t.Errorf("%s: no YAML document", p)
			}
		case ".json":
			jsons++
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if yamls < 11 || jsons < 1 {
		t.Errorf("found %d YAML and %d JSON files under deploy/, want at least 11 and 1", yamls, jsons)
	}
}

// ---------------------------------------------------------------- metrics

// prometheusSeries are series Prometheus makes itself for every target.
var prometheusSeries = set("up")

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = set("instance", "job")

// serveMetrics lists what a running serve exports: the registered names
// (metrics.Recorder) and, for those with samples, type and label names.
type serveMetrics struct {
	registered map[string]bool
	families   map[string]*dto.MetricFamily
}

func newServeMetrics(t *testing.T) *serveMetrics {
	f := metricstest.NewServe(t)
	mfs, err := f.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sm := &serveMetrics{registered: map[string]bool{}, families: map[string]*dto.MetricFamily{}}
	for _, n := range f.Recorder.Names() {
		sm.registered[n] = true
	}
	for _, mf := range mfs {
		sm.families[mf.GetName()] = mf
	}
	return sm
}

// labels of a series name (a histogram's x_bucket has le), or an error
// when serve does not export it. known is false for names whose labels
// cannot be seen (Prometheus's own up).
func (sm *serveMetrics) labels(name string) (ls map[string]bool, known bool, err error) {
	family, suffix := name, ""
	if sm.families[name] == nil {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, s); ok && sm.families[b] != nil {
				family, suffix = b, s
			}
		}
	}
	mf := sm.families[family]
	switch {
	case prometheusSeries[name]:
		return nil, false, nil
	case mf == nil && sm.registered[name]:
		return nil, false, fmt.Errorf("%s is registered but serve never exports it (no sample in the running fixture)", name)
	case mf == nil:
		return nil, false, fmt.Errorf("%s is not a metric of graphtide serve", name)
	}
	switch typ := mf.GetType(); {
	case suffix == "":
	case typ == dto.MetricType_HISTOGRAM:
	case typ == dto.MetricType_SUMMARY && suffix != "_bucket":
	default:
		return nil, false, fmt.Errorf("%s: %s is a %v, it has no %s series", name, family, typ, suffix)
	}
	ls = map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			ls[l.GetName()] = true
		}
	}
	switch {
	case suffix == "_bucket":
		ls["le"] = true
	case suffix == "" && mf.GetType() == dto.MetricType_SUMMARY:
		ls["quantile"] = true
	}
	return ls, true, nil
}

// checkQuery checks one PromQL expression: every metric exists, every
// label matcher names a label of its metric, every grouping label is a
// label of some metric of the expression. It returns the metric names.
func (sm *serveMetrics) checkQuery(where, expr string) ([]string, error) {
	q, err := parsePromQL(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if len(q.refs) == 0 {
		return nil, fmt.Errorf("%s: no metric in %q", where, expr)
	}
	var errs []error
	var names []string
	all := map[string]bool{}
	for l := range targetLabels {
		all[l] = true
	}
	for _, r := range q.refs {
		names = append(names, r.metric)
		ls, known, err := sm.labels(r.metric)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		for l := range ls {
			all[l] = true
		}
		for _, l := range r.labels {
			if !targetLabels[l] && (!known || !ls[l]) {
				errs = append(errs, fmt.Errorf("%s: %s has no label %q", where, r.metric, l))
			}
		}
	}
	for _, l := range q.grouping {
		if !all[l] {
			errs = append(errs, fmt.Errorf("%s: no metric of %q has the label %q it groups by", where, expr, l))
		}
	}
	return names, errors.Join(errs...)
}

type grafanaDashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Query      any                `json:"query"`
			Datasource *grafanaDatasource `json:"datasource"`
			Definition string             `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *grafanaDatasource       `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Panels     []grafanaPanel           `json:"panels"` // of a collapsed row
	Targets    []struct {
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	var d grafanaDashboard
	if err := json.Unmarshal(readDeploy(t, "grafana/graphtide-dashboard.json"), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

type promRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestDeployMetricsExist checks every PromQL expression of the dashboard,
// the alerting rules and the console against the metrics of a running
// serve (the registry metricstest builds as serve does, with data
// flowing).
func TestDeployMetricsExist(t *testing.T) {
	sm := newServeMetrics(t)

	d := loadDashboard(t)
	used := map[string]bool{}
	var panels []grafanaPanel
	for _, p := range d.Panels {
		panels = append(panels, p)
		panels = append(panels, p.Panels...)
	}
	nexpr := 0
	for _, p := range panels {
		for _, tg := range p.Targets {
			nexpr++
			names, err := sm.checkQuery(fmt.Sprintf("dashboard panel %q %s", p.Title, tg.RefID), tg.Expr)
			if err != nil {
				t.Error(err)
			}
			for _, n := range names {
				used[n] = true
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			expr := strings.TrimSuffix(strings.TrimPrefix(v.Definition, "label_values("), ")")
			metric, label, _ := strings.Cut(expr, ",")
			if ls, known, err := sm.labels(strings.TrimSpace(metric)); err != nil || !known ||
				!(ls[strings.TrimSpace(label)] || targetLabels[strings.TrimSpace(label)]) {
				t.Errorf("dashboard variable %s: %s: %v", v.Name, v.Definition, err)
			}
		}
	}
	if nexpr < 40 {
		t.Errorf("the dashboard has %d queries; want the full set (at least 40)", nexpr)
	}
	// What the dashboard must show (issue 5 and deploy/README.md).
	for _, want := range []string{
		"graphtide_ingest_records_total", "graphtide_ingest_edges_total", "graphtide_ingest_consumer_lag_records",
		"graphtide_ingest_dead_letters_total", "graphtide_ingest_decode_errors_total", "graphtide_ingest_batch_edges_bucket",
		"graphtide_ingest_apply_duration_seconds_bucket", "graphtide_ingest_visibility_seconds_bucket",
		"graphtide_store_level_files", "graphtide_store_level_bytes", "graphtide_store_flushes_total",
		"graphtide_store_compactions_total", "graphtide_store_flush_seconds_total", "graphtide_store_compaction_seconds_total",
		"graphtide_store_write_stalls_total", "graphtide_store_write_amplification_ratio",
		"graphtide_store_read_amplification_runs", "graphtide_store_memgraph_bytes", "graphtide_store_background_errors_total",
		"graphtide_views_open", "graphtide_views_oldest_age_seconds", "graphtide_views_stream_lost_total",
		"graphtide_analytics_update_duration_seconds_bucket", "graphtide_analytics_freshness_seconds_bucket",
		"graphtide_analytics_staleness_sequences", "graphtide_analytics_alerts_total", "graphtide_kafka_read_bytes_total", "graphtide_kafka_fetch_bytes_total",
		"go_goroutines", "go_gc_duration_seconds_sum", "process_resident_memory_bytes",
	} {
		if !used[want] {
			t.Errorf("the dashboard does not use %s", want)
		}
	}

	var rules promRules
	decodeYAML(t, "prometheus/graphtide-rules.yml", &rules)
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || alerts[r.Alert] {
				t.Errorf("rule group %s: alert name %q empty or repeated", g.Name, r.Alert)
			}
			alerts[r.Alert] = true
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s needs labels.severity and annotations summary and description", r.Alert)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("alert %s: for: %v", r.Alert, err)
				}
			}
			if _, err := sm.checkQuery("alert "+r.Alert, r.Expr); err != nil {
				t.Error(err)
			}
		}
	}
	// What the rules must watch (the brief of deploy/).
	for _, a := range []string{"GraphtideWriteStalls", "GraphtideConsumerLagGrowing", "GraphtideBackgroundErrors",
		"GraphtideAnalyticStale", "GraphtideDeadLettersRising"} {
		if !alerts[a] {
			t.Errorf("no alert %s in graphtide-rules.yml", a)
		}
	}

	checkConsole(t, sm)
}

// checkConsole checks every PromQL expression of the console template
// prometheus/consoles/graphtide.html (see consoleQueries), that it shows
// what issue 5 asks for, and that every graph has its own node.
func checkConsole(t *testing.T, sm *serveMetrics) {
	const name = "prometheus/consoles/graphtide.html"
	src := string(readDeploy(t, name))
	qs, err := consoleQueries(name, src)
	if err != nil {
		t.Error(err)
	}
	used := map[string]bool{}
	for _, q := range qs {
		names, err := sm.checkQuery(q.where, q.expr)
		if err != nil {
			t.Error(err)
		}
		for _, n := range names {
			used[n] = true
		}
		// The scrape job is run.sh's and prometheus.yml's.
		for _, m := range regexp.MustCompile(`job=~?['"]([^'"]*)['"]`).FindAllStringSubmatch(q.expr, -1) {
			if m[1] != "graphtide" {
				t.Errorf("%s: %q selects job %q; the scrape job is graphtide", q.where, q.expr, m[1])
			}
		}
	}
	if len(qs) < 40 {
		t.Errorf("the console has %d queries; want the full set (at least 40)", len(qs))
	}
	for _, want := range []string{
		"graphtide_ingest_records_total", "graphtide_ingest_edges_total", "graphtide_ingest_consumer_lag_records",
		"graphtide_ingest_dead_letters_total", "graphtide_ingest_apply_duration_seconds_bucket",
		"graphtide_ingest_visibility_seconds_bucket", "graphtide_store_level_files", "graphtide_store_level_bytes",
		"graphtide_store_flushes_total", "graphtide_store_compactions_total", "graphtide_store_write_stalls_total",
		"graphtide_store_write_amplification_ratio", "graphtide_store_read_amplification_runs",
		"graphtide_store_memgraph_bytes", "graphtide_views_open", "graphtide_views_oldest_age_seconds",
		"graphtide_analytics_update_duration_seconds_bucket", "graphtide_analytics_staleness_sequences",
		"graphtide_analytics_alerts_total", "go_memstats_heap_inuse_bytes", "go_goroutines",
	} {
		if !used[want] {
			t.Errorf("the console does not use %s", want)
		}
	}
	ids := map[string]int{}
	for _, m := range regexp.MustCompile(`<div id="([^"]+)"`).FindAllStringSubmatch(src, -1) {
		ids[m[1]]++
	}
	graphs := regexp.MustCompile(`new PromConsole\.Graph\(\{\s*node: document\.querySelector\("#([^"]+)"\)`).FindAllStringSubmatch(src, -1)
	if n := strings.Count(src, "new PromConsole.Graph("); n != len(graphs) {
		t.Errorf("%s: %d graphs, %d of them open with node: document.querySelector(\"#id\")", name, n, len(graphs))
	}
	nodes := map[string]bool{}
	for _, g := range graphs {
		if ids[g[1]] != 1 || nodes[g[1]] {
			t.Errorf("%s: graph node #%s: want one <div id=%q> for it alone (%d divs)", name, g[1], g[1], ids[g[1]])
		}
		nodes[g[1]] = true
	}
}

// ---------------------------------------------------------------- Grafana and Prometheus

func TestDeployGrafana(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want >= 36", d.SchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard needs a uid and a title")
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs: want one Prometheus datasource input DS_PROMETHEUS, got %+v", d.Inputs)
	}
	// Provisioned dashboards do not substitute __inputs: a datasource
	// variable of the same name makes ${DS_PROMETHEUS} resolve there too.
	hasVar := false
	for _, v := range d.Templating.List {
		if v.Name == "DS_PROMETHEUS" && v.Type == "datasource" && v.Query == "prometheus" {
			hasVar = true
		}
		if v.Datasource != nil && v.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("variable %s: datasource %+v, want uid ${DS_PROMETHEUS}", v.Name, v.Datasource)
		}
	}
	if !hasVar {
		t.Errorf("no datasource variable DS_PROMETHEUS (query prometheus) for provisioning")
	}
	ids := map[int]bool{}
	var rows []string
	cells := map[[2]int]string{} // grid cell -> panel title
	for _, p := range d.Panels {
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at x=%d y=%d", other, p.Title, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d zero or repeated", p.Title, p.ID)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: datasource %+v, want prometheus ${DS_PROMETHEUS}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] || tg.Expr == "" {
				t.Errorf("panel %q: target refId %q empty or repeated, or no expr", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil && tg.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q: target datasource %+v", p.Title, tg.Datasource)
			}
		}
	}
	for _, want := range []string{"Ingest", "Store", "Views and analytics", "Kafka client", "Process and Go runtime"} {
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, want) }) {
			t.Errorf("no dashboard row %q (rows: %q)", want, rows)
		}
	}

	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, UID, URL, Access string
		} `yaml:"datasources"`
	}
	decodeYAML(t, "grafana/provisioning/datasources/graphtide.yaml", &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("datasource provisioning: want apiVersion 1 and one prometheus datasource with a url, got %+v", ds)
	}
	var prov struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type string
			Options    struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	decodeYAML(t, "grafana/provisioning/dashboards/graphtide.yaml", &prov)
	if prov.APIVersion != 1 || len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || !path.IsAbs(prov.Providers[0].Options.Path) {
		t.Errorf("dashboard provisioning: want apiVersion 1 and one file provider with an absolute path, got %+v", prov)
	}
}

func TestDeployPrometheusConfig(t *testing.T) {
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	decodeYAML(t, "prometheus/prometheus.yml", &cfg)
	for _, f := range cfg.RuleFiles {
		if _, err := os.Stat(filepath.Join(deployDir, "prometheus", f)); err != nil {
			t.Errorf("rule_files: %v", err)
		}
	}
	if !slices.Contains(cfg.RuleFiles, "graphtide-rules.yml") {
		t.Errorf("rule_files %q does not load graphtide-rules.yml", cfg.RuleFiles)
	}
	// The systemd example serves on the default --http-addr; Prometheus
	// scrapes that address.
	def := serveFlags().Lookup("http-addr").DefValue
	var sysCfg map[string]any
	decodeYAML(t, "systemd/graphtide.yaml", &sysCfg)
	found := false
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "graphtide" {
			continue
		}
		if sc.MetricsPath != "/metrics" {
			t.Errorf("job graphtide: metrics_path %q", sc.MetricsPath)
		}
		for _, s := range sc.StaticConfigs {
			found = found || slices.Contains(s.Targets, def) && sysCfg["http-addr"] == def
		}
	}
	if !found {
		t.Errorf("no job graphtide scraping %s, the http-addr of deploy/systemd/graphtide.yaml", def)
	}
	// The rules' job matchers name this job.
	var rules promRules
	decodeYAML(t, "prometheus/graphtide-rules.yml", &rules)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range regexp.MustCompile(`job="([^"]*)"`).FindAllStringSubmatch(r.Expr, -1) {
				if m[1] != "graphtide" {
					t.Errorf("alert %s selects job %q; the scrape job is graphtide", r.Alert, m[1])
				}
			}
		}
	}
}

// runScriptConfig runs `prometheus/run.sh config` with args into a new
// dir, decodes the generated prometheus.yml into cfg and returns the
// command line from prometheus.args (flag -> value).
func runScriptConfig(t *testing.T, cfg any, args ...string) (dir string, flags map[string]string) {
	t.Helper()
	dir = t.TempDir()
	cmd := exec.Command("bash", append([]string{filepath.Join(deployDir, "prometheus/run.sh"), "config", "--dir", dir}, args...)...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GRAPHTIDE_PROMETHEUS_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh config %q: %v\n%s", args, err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, cfg); err != nil {
		t.Fatalf("run.sh's prometheus.yml: %v\n%s", err, raw)
	}
	raw, err = os.ReadFile(filepath.Join(dir, "prometheus.args"))
	if err != nil {
		t.Fatal(err)
	}
	flags = map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok || !strings.HasPrefix(k, "--") || flags[k] != "" {
			t.Errorf("prometheus.args: line %q: want one --flag=value per flag", l)
		}
		flags[k] = v
	}
	return dir, flags
}

// sameFile reports whether paths a and b name the same existing file.
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Error(err)
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Error(err)
		return false
	}
	return os.SameFile(fa, fb)
}

// TestDeployPrometheusRunScript checks the configuration and command line
// prometheus/run.sh generates: scrape serve's default address (or
// --target) every 5s as job graphtide, load the rules file, serve the
// consoles folder, listen on loopback only, keep a short retention.
func TestDeployPrometheusRunScript(t *testing.T) {
	def := serveFlags().Lookup("http-addr").DefValue
	for _, tc := range []struct {
		args           []string
		listen, target string
	}{
		{nil, "127.0.0.1:9090", def},
		{[]string{"--port", "19090", "--target", "127.0.0.1:19464"}, "127.0.0.1:19090", "127.0.0.1:19464"},
	} {
		var c struct {
			Global struct {
				ScrapeInterval     string `yaml:"scrape_interval"`
				EvaluationInterval string `yaml:"evaluation_interval"`
			} `yaml:"global"`
			RuleFiles     []string `yaml:"rule_files"`
			ScrapeConfigs []struct {
				JobName        string `yaml:"job_name"`
				MetricsPath    string `yaml:"metrics_path"`
				ScrapeInterval string `yaml:"scrape_interval"`
				StaticConfigs  []struct {
					Targets []string `yaml:"targets"`
				} `yaml:"static_configs"`
			} `yaml:"scrape_configs"`
		}
		dir, flags := runScriptConfig(t, &c, tc.args...)
		where := fmt.Sprintf("run.sh config %q", tc.args)
		if len(c.RuleFiles) != 1 || !sameFile(t, c.RuleFiles[0], filepath.Join(deployDir, "prometheus/graphtide-rules.yml")) {
			t.Errorf("%s: rule_files %q, want the repository's graphtide-rules.yml", where, c.RuleFiles)
		}
		if len(c.ScrapeConfigs) != 1 || c.ScrapeConfigs[0].JobName != "graphtide" || c.ScrapeConfigs[0].MetricsPath != "/metrics" ||
			c.ScrapeConfigs[0].ScrapeInterval != "5s" || len(c.ScrapeConfigs[0].StaticConfigs) != 1 ||
			!slices.Equal(c.ScrapeConfigs[0].StaticConfigs[0].Targets, []string{tc.target}) {
			t.Errorf("%s: scrape_configs %+v, want one job graphtide scraping %s/metrics every 5s", where, c.ScrapeConfigs, tc.target)
		}
		if c.Global.EvaluationInterval != "5s" {
			t.Errorf("%s: evaluation_interval %q, want 5s", where, c.Global.EvaluationInterval)
		}

		if !sameFile(t, flags["--config.file"], filepath.Join(dir, "prometheus.yml")) {
			t.Errorf("%s: --config.file=%s, want the generated %s/prometheus.yml", where, flags["--config.file"], dir)
		}
		if !sameFile(t, flags["--web.console.templates"], filepath.Join(deployDir, "prometheus/consoles")) {
			t.Errorf("%s: --web.console.templates=%s, want the repository's deploy/prometheus/consoles", where, flags["--web.console.templates"])
		}
		if flags["--web.console.libraries"] == "" {
			t.Errorf("%s: no --web.console.libraries", where)
		}
		if flags["--web.listen-address"] != tc.listen {
			t.Errorf("%s: --web.listen-address=%s, want %s (loopback)", where, flags["--web.listen-address"], tc.listen)
		}
		if p := flags["--storage.tsdb.path"]; p != filepath.Join(dir, "data") {
			t.Errorf("%s: --storage.tsdb.path=%s, want %s/data", where, p, dir)
		}
		if r, err := time.ParseDuration(flags["--storage.tsdb.retention.time"]); err != nil || r <= 0 || r > 24*time.Hour {
			t.Errorf("%s: --storage.tsdb.retention.time=%s, want a short retention (at most 24h): %v",
				where, flags["--storage.tsdb.retention.time"], err)
		}
		if len(flags) != 6 {
			t.Errorf("%s: flags %q: want exactly the six this test checks", where, flags)
		}
	}
}

// ---------------------------------------------------------------- flags and settings

// checkServeArgs checks that every flag in args is a flag of serve (or a
// pending one) and returns the flags as name -> value.
func checkServeArgs(t *testing.T, where string, args []string) map[string]string {
	t.Helper()
	fs := serveFlags()
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || name == "" {
			t.Errorf("%s: %q is not a --flag", where, a)
			continue
		}
		f := fs.Lookup(name)
		switch {
		case f != nil && pendingFlags[name] != "":
			t.Logf("serve has --%s now: its pendingFlags entry in deploy_test.go can go", name)
		case f == nil && pendingFlags[name] == "":
			t.Errorf("%s: --%s is not a flag of graphtide serve", where, name)
		}
		if !hasVal && (f == nil || f.Value.Type() != "bool") {
			if i+1 >= len(args) {
				t.Errorf("%s: --%s has no value", where, name)
				continue
			}
			i++
			val = args[i]
		}
		out[name] = val
	}
	return out
}

// secretEnv are the GRAPHTIDE_* variables serve reads that are no flag:
// the secrets that have a file flag instead.
var secretEnv = []string{"GRAPHTIDE_HTTP_TOKEN", kafkaconn.ClientSecretEnv}

// checkEnvName checks that a GRAPHTIDE_* variable sets a flag of serve, or
// is one of secretEnv.
func checkEnvName(t *testing.T, where, name string) {
	t.Helper()
	if slices.Contains(secretEnv, name) {
		return
	}
	flag, ok := strings.CutPrefix(name, "GRAPHTIDE_")
	if !ok {
		return
	}
	flag = strings.ToLower(strings.ReplaceAll(flag, "_", "-"))
	if serveFlags().Lookup(flag) == nil && pendingFlags[flag] == "" {
		t.Errorf("%s: %s sets no flag of graphtide serve (no --%s)", where, name, flag)
	}
}

// loadServeConfig applies the command-line flags (those serve has; not
// --config), the environment and a YAML config file as `graphtide serve
// --config` does, and validates the result.
func loadServeConfig(t *testing.T, where string, yamlText []byte, env, args map[string]string) *server.Options {
	t.Helper()
	p := filepath.Join(t.TempDir(), "graphtide.yaml")
	if err := os.WriteFile(p, yamlText, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var o server.Options
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o.AddFlags(fs)
	for name, val := range args {
		if name == "http-token-file" {
			// The file is a mounted Secret in the deployment: stand in a
			// token of the length serve requires.
			val = filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(val, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if name != "config" && fs.Lookup(name) != nil {
			if err := fs.Set(name, val); err != nil {
				t.Fatalf("%s: --%s: %v", where, name, err)
			}
		}
	}
	if err := fs.Set("config", p); err != nil {
		t.Fatal(err)
	}
	if err := o.ReadConfig(fs); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if len(o.Kafka.Brokers) == 0 {
		t.Errorf("%s: no brokers: serve would start its embedded test broker", where)
	}
	return &o
}

// systemdUnit parses a unit file into section -> key -> values.
func systemdUnit(t *testing.T, raw []byte) map[string]map[string][]string {
	t.Helper()
	u := map[string]map[string][]string{}
	sec := ""
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			sec = line[1 : len(line)-1]
			u[sec] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || sec == "" || strings.HasSuffix(line, "\\") {
				t.Fatalf("graphtide.service:%d: not a key=value line in a section: %q", n, line)
			}
			u[sec][strings.TrimSpace(k)] = append(u[sec][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// stopTimeout reads a systemd time span such as 120s, 2min or 90.
func stopTimeout(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(strings.ReplaceAll(s, "min", "m"))
}

func TestDeploySystemd(t *testing.T) {
	u := systemdUnit(t, readDeploy(t, "systemd/graphtide.service"))
	svc := u["Service"]
	one := func(k string) string {
		if len(svc[k]) != 1 {
			t.Errorf("[Service] %s: want one value, got %q", k, svc[k])
			return ""
		}
		return svc[k][0]
	}
	for k, want := range map[string]string{
		"User": "graphtide", "EnvironmentFile": "/etc/graphtide/graphtide.env", "Restart": "on-failure",
		"KillSignal": "SIGTERM", "Type": "simple", "StateDirectory": "graphtide",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"PrivateDevices": "yes", "RestrictSUIDSGID": "yes", "CapabilityBoundingSet": "",
	} {
		if got := one(k); got != want {
			t.Errorf("[Service] %s=%s, want %s", k, got, want)
		}
	}
	if n, err := strconv.Atoi(one("LimitNOFILE")); err != nil || n < 4096 {
		t.Errorf("LimitNOFILE=%q, want a number >= 4096", one("LimitNOFILE"))
	}
	if d, err := stopTimeout(one("TimeoutStopSec")); err != nil || d < time.Minute {
		t.Errorf("TimeoutStopSec=%q: want at least a minute for the final flush (%v)", one("TimeoutStopSec"), err)
	}
	if u["Install"]["WantedBy"] == nil {
		t.Errorf("no [Install] WantedBy")
	}

	exec := strings.Fields(one("ExecStart"))
	if len(exec) < 2 || !path.IsAbs(exec[0]) || path.Base(exec[0]) != "graphtide" || exec[1] != "serve" {
		t.Fatalf("ExecStart=%q, want /path/graphtide serve ...", exec)
	}
	flags := checkServeArgs(t, "ExecStart", exec[2:])
	if flags["config"] != "/etc/graphtide/graphtide.yaml" {
		t.Errorf("ExecStart passes --config %q, want /etc/graphtide/graphtide.yaml", flags["config"])
	}

	// The environment file: GRAPHTIDE_* names of serve's flags, also in
	// the commented examples.
	env := map[string]string{}
	for n, line := range strings.Split(string(readDeploy(t, "systemd/graphtide.env")), "\n") {
		line = strings.TrimSpace(line)
		example := strings.TrimSpace(strings.TrimPrefix(line, "#"))
		if m := regexp.MustCompile(`^(GRAPHTIDE_[A-Z0-9_]+)=`).FindStringSubmatch(example); m != nil {
			checkEnvName(t, fmt.Sprintf("graphtide.env:%d", n+1), m[1])
		}
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("graphtide.env:%d: not KEY=value: %q", n+1, line)
		}
		env[k] = v
	}

	o := loadServeConfig(t, "deploy/systemd/graphtide.yaml", readDeploy(t, "systemd/graphtide.yaml"), env, flags)
	if want := "/var/lib/" + one("StateDirectory"); o.Dir != want {
		t.Errorf("graphtide.yaml dir: %s, want the unit's StateDirectory %s", o.Dir, want)
	}
	if host, _, err := net.SplitHostPort(o.HTTPAddr); err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("graphtide.yaml http-addr %s: the systemd example binds loopback (Prometheus on the host)", o.HTTPAddr)
	}
}

// ---------------------------------------------------------------- Kubernetes

type k8sMeta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type k8sObject struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   k8sMeta           `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       yaml.Node         `yaml:"spec"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sKeyPath struct {
	Key  string `yaml:"key"`
	Path string `yaml:"path"`
}

type k8sStatefulSet struct {
	ServiceName string `yaml:"serviceName"`
	Replicas    int    `yaml:"replicas"`
	Selector    struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata k8sMeta `yaml:"metadata"`
		Spec     struct {
			TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
			SecurityContext               struct {
				RunAsNonRoot bool `yaml:"runAsNonRoot"`
				RunAsUser    int  `yaml:"runAsUser"`
			} `yaml:"securityContext"`
			Containers []struct {
				Name  string   `yaml:"name"`
				Image string   `yaml:"image"`
				Args  []string `yaml:"args"`
				Env   []struct {
					Name      string `yaml:"name"`
					ValueFrom struct {
						FieldRef struct {
							FieldPath string `yaml:"fieldPath"`
						} `yaml:"fieldRef"`
					} `yaml:"valueFrom"`
				} `yaml:"env"`
				Ports []struct {
					Name          string `yaml:"name"`
					ContainerPort int    `yaml:"containerPort"`
				} `yaml:"ports"`
				StartupProbe   *k8sProbe `yaml:"startupProbe"`
				LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
				ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
				Resources      struct {
					Requests map[string]string `yaml:"requests"`
					Limits   map[string]string `yaml:"limits"`
				} `yaml:"resources"`
				VolumeMounts []struct {
					Name      string `yaml:"name"`
					MountPath string `yaml:"mountPath"`
				} `yaml:"volumeMounts"`
			} `yaml:"containers"`
			Volumes []struct {
				Name      string `yaml:"name"`
				Projected *struct {
					Sources []struct {
						ConfigMap *struct {
							Name  string       `yaml:"name"`
							Items []k8sKeyPath `yaml:"items"`
						} `yaml:"configMap"`
						Secret *struct {
							Name  string       `yaml:"name"`
							Items []k8sKeyPath `yaml:"items"`
						} `yaml:"secret"`
					} `yaml:"sources"`
				} `yaml:"projected"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
	VolumeClaimTemplates []struct {
		Metadata k8sMeta `yaml:"metadata"`
		Spec     struct {
			AccessModes []string `yaml:"accessModes"`
			Resources   struct {
				Requests map[string]string `yaml:"requests"`
			} `yaml:"resources"`
		} `yaml:"spec"`
	} `yaml:"volumeClaimTemplates"`
}

type k8sService struct {
	ClusterIP string            `yaml:"clusterIP"`
	Selector  map[string]string `yaml:"selector"`
	Ports     []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort any    `yaml:"targetPort"`
	} `yaml:"ports"`
}

// loadK8s reads the objects of the YAML files in deploy/kubernetes/dir.
func loadK8s(t *testing.T, dir string) []k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "kubernetes", dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []k8sObject
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := yamlDocs(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range docs {
			var o k8sObject
			if err := d.Decode(&o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" || o.APIVersion == "" {
				t.Errorf("%s: a document without kind or apiVersion", f)
			}
			objs = append(objs, o)
		}
	}
	return objs
}

// mebibytes reads a Kubernetes memory quantity in Mi, Gi or Ti.
func mebibytes(q string) (int64, error) {
	for suffix, mul := range map[string]int64{"Mi": 1, "Gi": 1 << 10, "Ti": 1 << 20} {
		if n, ok := strings.CutSuffix(q, suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v * mul, err
		}
	}
	return 0, fmt.Errorf("memory quantity %q: write it in Mi, Gi or Ti", q)
}

func subset(sub, super map[string]string) bool {
	for k, v := range sub {
		if super[k] != v {
			return false
		}
	}
	return len(sub) > 0
}

func TestDeployKubernetes(t *testing.T) {
	objs := loadK8s(t, "")
	byKind := map[string][]k8sObject{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	if len(byKind["StatefulSet"]) != 1 || len(byKind["ConfigMap"]) != 1 || len(byKind["Secret"]) != 1 ||
		len(byKind["Service"]) != 2 || len(byKind["ServiceMonitor"]) != 1 {
		t.Fatalf("want one StatefulSet, ConfigMap, Secret and ServiceMonitor and two Services; got %v", func() map[string]int {
			m := map[string]int{}
			for k, v := range byKind {
				m[k] = len(v)
			}
			return m
		}())
	}
	var ss k8sStatefulSet
	if err := byKind["StatefulSet"][0].Spec.Decode(&ss); err != nil {
		t.Fatal(err)
	}
	if ss.Replicas < 1 {
		t.Errorf("replicas %d: want at least one", ss.Replicas)
	}
	pod := ss.Template.Spec
	podLabels := ss.Template.Metadata.Labels
	if !subset(ss.Selector.MatchLabels, podLabels) {
		t.Errorf("selector %v does not match the pod labels %v", ss.Selector.MatchLabels, podLabels)
	}
	if pod.TerminationGracePeriodSeconds < 60 {
		t.Errorf("terminationGracePeriodSeconds %d: want at least 60 for the final flush", pod.TerminationGracePeriodSeconds)
	}
	if !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser == 0 {
		t.Errorf("the pod must run as non-root: %+v", pod.SecurityContext)
	}
	if uid := dockerUser(t); strconv.Itoa(pod.SecurityContext.RunAsUser) != uid {
		t.Errorf("runAsUser %d, but the image's USER is %s", pod.SecurityContext.RunAsUser, uid)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]

	// Settings: the args are serve's flags, and with them the ConfigMap's
	// graphtide.yaml is a valid serve config (in the first pod: the
	// kubelet expands $(POD_NAME), the pod's name, from the env).
	pod0 := byKind["StatefulSet"][0].Metadata.Name + "-0"
	podName := ""
	for _, e := range c.Env {
		if e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			podName = "$(" + e.Name + ")"
		}
	}
	flags := checkServeArgs(t, "StatefulSet args", c.Args)
	group := flags["group"] // as written, before the expansion
	for k, v := range flags {
		if podName != "" {
			flags[k] = strings.ReplaceAll(v, podName, pod0)
		}
	}
	cm := byKind["ConfigMap"][0]
	o := loadServeConfig(t, "configmap.yaml graphtide.yaml", []byte(cm.Data["graphtide.yaml"]), nil, flags)
	// Replicas (docs/replicas.md): a consumer group and a group instance
	// id of each pod's own, readiness on lag, and alerts from one pod.
	if ss.Replicas > 1 {
		if podName == "" || !strings.Contains(group, podName) {
			t.Errorf("%d replicas: each pod needs a consumer group of its own (--group naming the pod, from an env of its metadata.name); --group is %q", ss.Replicas, group)
		}
		if o.GroupInstanceID != pod0 {
			t.Errorf("%d replicas: --group-instance-id is %q in the first pod, want its name %s", ss.Replicas, o.GroupInstanceID, pod0)
		}
		if o.AlertLeader != "" {
			t.Errorf("%d replicas: alert-leader %q is set: it is ignored (alert production fails over by itself)", ss.Replicas, o.AlertLeader)
		}
		if o.ReadyMaxLag <= 0 {
			t.Errorf("%d replicas: set ready-max-lag, so that a pod behind the brokers leaves the Service", ss.Replicas)
		}
	}
	host, portStr, err := net.SplitHostPort(o.HTTPAddr)
	if err != nil || (host != "0.0.0.0" && host != "" && host != "::") {
		t.Errorf("ConfigMap http-addr %q: a pod must bind every address (0.0.0.0)", o.HTTPAddr)
	}
	httpPort, _ := strconv.Atoi(portStr)

	// Ports and probes.
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != httpPort {
		t.Errorf("container port http is %d, serve listens on %d (ConfigMap http-addr)", ports["http"], httpPort)
	}
	resolve := func(p any) int {
		switch v := p.(type) {
		case int:
			return v
		case string:
			return ports[v]
		}
		return 0
	}
	for name, pr := range map[string]struct {
		p    *k8sProbe
		path string
	}{"startupProbe": {c.StartupProbe, "/healthz"}, "livenessProbe": {c.LivenessProbe, "/healthz"}, "readinessProbe": {c.ReadinessProbe, "/readyz"}} {
		if pr.p == nil || pr.p.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe", name)
			continue
		}
		if pr.p.HTTPGet.Path != pr.path || resolve(pr.p.HTTPGet.Port) != httpPort {
			t.Errorf("%s: %s on port %v, want %s on %d", name, pr.p.HTTPGet.Path, pr.p.HTTPGet.Port, pr.path, httpPort)
		}
	}
	if a := ss.Template.Metadata.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != strconv.Itoa(httpPort) || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("pod scrape annotations %v do not point at /metrics on %d", a, httpPort)
	}

	// Environment.
	for _, e := range c.Env {
		checkEnvName(t, "StatefulSet env", e.Name)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	// The data volume is a claim template mounted at --dir.
	claims := map[string]bool{}
	for _, vc := range ss.VolumeClaimTemplates {
		claims[vc.Metadata.Name] = true
		if !slices.Contains(vc.Spec.AccessModes, "ReadWriteOnce") || vc.Spec.Resources.Requests["storage"] == "" {
			t.Errorf("claim template %s: want ReadWriteOnce and a storage request", vc.Metadata.Name)
		}
	}
	dataVol := ""
	for name, mp := range mounts {
		if mp == o.Dir {
			dataVol = name
		}
	}
	if !claims[dataVol] {
		t.Errorf("--dir %s is not the mount path of a volumeClaimTemplate (mounts %v)", o.Dir, mounts)
	}
	// --config and --http-token-file are files of one projected volume:
	// the ConfigMap's graphtide.yaml and the token Secret's token.
	secret := byKind["Secret"][0]
	files := map[string]string{} // path in the container -> "configmap/key" or "secret/key"
	for _, v := range pod.Volumes {
		if v.Projected == nil || mounts[v.Name] == "" {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				for _, it := range s.ConfigMap.Items {
					files[path.Join(mounts[v.Name], it.Path)] = "configmap/" + s.ConfigMap.Name + "/" + it.Key
				}
			}
			if s.Secret != nil {
				for _, it := range s.Secret.Items {
					files[path.Join(mounts[v.Name], it.Path)] = "secret/" + s.Secret.Name + "/" + it.Key
				}
			}
		}
	}
	if got, want := files[flags["config"]], "configmap/"+cm.Metadata.Name+"/graphtide.yaml"; got != want {
		t.Errorf("--config=%s is %q in the pod, want %s", flags["config"], got, want)
	}
	if flags["http-token-file"] != "/etc/graphtide/token" {
		t.Errorf("args pass --http-token-file=%q, want /etc/graphtide/token", flags["http-token-file"])
	}
	if got, want := files[flags["http-token-file"]], "secret/"+secret.Metadata.Name+"/token"; got != want {
		t.Errorf("--http-token-file=%s is %q in the pod, want %s", flags["http-token-file"], got, want)
	}
	if secret.StringData["token"] == "" && secret.Data["token"] == "" {
		t.Errorf("Secret %s has no key token", secret.Metadata.Name)
	}

	// Memory sized from --memory-budget, which serve stays within: the
	// request at least the budget, and a limit above it for the page cache
	// of the mapped store files.
	req, err1 := mebibytes(c.Resources.Requests["memory"])
	lim, err2 := mebibytes(c.Resources.Limits["memory"])
	if err := errors.Join(err1, err2); err != nil {
		t.Error(err)
	}
	if b := o.Plan.Total >> 20; req < b || lim <= req {
		t.Errorf("memory request %dMi and limit %dMi: want a request >= --memory-budget (%dMi) and a larger limit", req, lim, b)
	}
	if c.Resources.Requests["cpu"] == "" {
		t.Errorf("no cpu request")
	}

	// Services select the pod and target its port; the headless one governs the StatefulSet.
	services := map[string]k8sService{}
	headless := ""
	for _, so := range byKind["Service"] {
		var s k8sService
		if err := so.Spec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		services[so.Metadata.Name] = s
		if !subset(s.Selector, podLabels) {
			t.Errorf("Service %s: selector %v does not match the pod labels %v", so.Metadata.Name, s.Selector, podLabels)
		}
		for _, p := range s.Ports {
			if resolve(p.TargetPort) != httpPort {
				t.Errorf("Service %s port %s: targetPort %v is not the container's http port", so.Metadata.Name, p.Name, p.TargetPort)
			}
		}
		if s.ClusterIP == "None" {
			headless = so.Metadata.Name
		}
	}
	if headless == "" || ss.ServiceName != headless {
		t.Errorf("serviceName %q: want the headless Service (%q)", ss.ServiceName, headless)
	}

	// The ServiceMonitor selects exactly one Service, scrapes /metrics on a
	// port of it, with the token Secret.
	var smon struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port          string `yaml:"port"`
			Path          string `yaml:"path"`
			Authorization struct {
				Type        string `yaml:"type"`
				Credentials struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"credentials"`
			} `yaml:"authorization"`
		} `yaml:"endpoints"`
	}
	if err := byKind["ServiceMonitor"][0].Spec.Decode(&smon); err != nil {
		t.Fatal(err)
	}
	var selected []string
	for _, so := range byKind["Service"] {
		if subset(smon.Selector.MatchLabels, so.Metadata.Labels) {
			selected = append(selected, so.Metadata.Name)
		}
	}
	if len(selected) != 1 {
		t.Fatalf("the ServiceMonitor selects services %q, want exactly one (else each pod is scraped twice)", selected)
	}
	for _, e := range smon.Endpoints {
		ok := false
		for _, p := range services[selected[0]].Ports {
			ok = ok || p.Name == e.Port
		}
		if !ok || e.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint %s%s: want /metrics on a port of Service %s", e.Port, e.Path, selected[0])
		}
		if a := e.Authorization; a.Type != "Bearer" || a.Credentials.Name != secret.Metadata.Name || a.Credentials.Key != "token" {
			t.Errorf("ServiceMonitor authorization %+v: want Bearer from Secret %s key token", a, secret.Metadata.Name)
		}
	}

	// kustomization.yaml lists files that exist and renames the image the StatefulSet uses.
	var kz struct {
		Resources []string `yaml:"resources"`
		Images    []struct {
			Name string `yaml:"name"`
		} `yaml:"images"`
	}
	decodeYAML(t, "kubernetes/kustomization.yaml", &kz)
	for _, r := range kz.Resources {
		if _, err := os.Stat(filepath.Join(deployDir, "kubernetes", r)); err != nil {
			t.Errorf("kustomization resources: %v", err)
		}
	}
	for _, want := range []string{"configmap.yaml", "service.yaml", "statefulset.yaml"} {
		if !slices.Contains(kz.Resources, want) {
			t.Errorf("kustomization.yaml does not list %s", want)
		}
	}
	image, _, _ := strings.Cut(c.Image, ":")
	if len(kz.Images) != 1 || kz.Images[0].Name != image {
		t.Errorf("kustomization images %+v do not name the StatefulSet's image %s", kz.Images, image)
	}
}

// TestDeployPartitioned checks the example of partitioned mode: each
// owner's pods pass serve's validation with the shared ConfigMap (their
// flags as the kubelet expands them), own one entry of the owners map
// whose URL is the Service of exactly their pods, and together own every
// partition once; replica k of every owner shares group graphtide-r<k>;
// each owner has its own alert leader and readiness on lag.
func TestDeployPartitioned(t *testing.T) {
	byKind := map[string][]k8sObject{}
	for _, o := range loadK8s(t, "partitioned") {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	if len(byKind["ConfigMap"]) != 1 || len(byKind["StatefulSet"]) < 2 {
		t.Fatalf("want one ConfigMap and a StatefulSet per owner (at least two), got %d and %d", len(byKind["ConfigMap"]), len(byKind["StatefulSet"]))
	}
	cm := byKind["ConfigMap"][0].Data["graphtide.yaml"]
	services := map[string]k8sService{}
	for _, so := range byKind["Service"] {
		var s k8sService
		if err := so.Spec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		services[so.Metadata.Name] = s
	}
	owned := map[int32]string{}
	var count int32
	for _, so := range byKind["StatefulSet"] {
		var ss k8sStatefulSet
		if err := so.Spec.Decode(&ss); err != nil {
			t.Fatal(err)
		}
		name := so.Metadata.Name
		if len(ss.Template.Spec.Containers) != 1 {
			t.Fatalf("%s: want one container", name)
		}
		c := ss.Template.Spec.Containers[0]
		vars := map[string]string{}
		for _, e := range c.Env {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				vars["$("+e.Name+")"] = name + "-0"
			case "metadata.labels['apps.kubernetes.io/pod-index']":
				vars["$("+e.Name+")"] = "0"
			}
		}
		flags := checkServeArgs(t, name+" args", c.Args)
		group := flags["group"]
		for k, v := range flags {
			for from, to := range vars {
				v = strings.ReplaceAll(v, from, to)
			}
			flags[k] = v
		}
		o := loadServeConfig(t, name, []byte(cm), nil, flags)
		m := o.Partitioning
		if m == nil {
			t.Fatalf("%s: not in partitioned mode (owners and own-partitions)", name)
		}
		count = m.Count
		for _, p := range m.Own() {
			if prev, dup := owned[p]; dup {
				t.Errorf("partition %d is owned by %s and %s", p, prev, name)
			}
			owned[p] = name
		}
		// Its entry's URL is the Service of exactly its pods, on their port.
		u := m.Owners[m.Self].URL
		host, port, _ := net.SplitHostPort(u.Host)
		svc, ok := services[host]
		if !ok || !subset(svc.Selector, ss.Template.Metadata.Labels) || !subset(ss.Selector.MatchLabels, svc.Selector) {
			t.Errorf("%s: its owners entry %s is not a Service selecting exactly its pods", name, u)
		}
		if len(svc.Ports) == 0 || strconv.Itoa(svc.Ports[0].Port) != port {
			t.Errorf("%s: its owners entry %s is not its Service's port", name, u)
		}
		if !strings.Contains(group, "$(") || flags["group"] != "graphtide-r0" {
			t.Errorf("%s: --group %q; want replica k of every owner in one group, graphtide-r<k>", name, group)
		}
		if o.GroupInstanceID != name+"-0" || o.AlertLeader != "" {
			t.Errorf("%s: group instance id %q (want %s-0) and alert leader %q (ignored: leave it out) in its first pod", name, o.GroupInstanceID, name+"-0", o.AlertLeader)
		}
		if o.ReadyMaxLag <= 0 || ss.Replicas < 2 {
			t.Errorf("%s: want replicas (%d) of the owner with readiness on lag (ready-max-lag %d)", name, ss.Replicas, o.ReadyMaxLag)
		}
	}
	if int32(len(owned)) != count {
		t.Errorf("the StatefulSets own %d of the %d partitions", len(owned), count)
	}
	var kz struct {
		Resources []string `yaml:"resources"`
	}
	decodeYAML(t, "kubernetes/partitioned/kustomization.yaml", &kz)
	for _, want := range []string{"configmap.yaml", "owners.yaml"} {
		if !slices.Contains(kz.Resources, want) {
			t.Errorf("partitioned/kustomization.yaml does not list %s", want)
		}
	}
}

// ---------------------------------------------------------------- Docker

// dockerInstr is one Dockerfile instruction, continuation lines joined.
type dockerInstr struct {
	cmd, args string
	stage     int // index of the FROM it belongs to
}

func dockerfile(t *testing.T) []dockerInstr {
	t.Helper()
	var out []dockerInstr
	stage := -1
	var cur strings.Builder
	for _, line := range strings.Split(string(readDeploy(t, "docker/Dockerfile")), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || trimmed[0] == '#') {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, dockerInstr{cmd: cmd, args: strings.Join(strings.Fields(args), " "), stage: stage})
	}
	return out
}

// dockerUser is the uid the image's final stage runs as.
func dockerUser(t *testing.T) string {
	t.Helper()
	ins := dockerfile(t)
	last, user := ins[len(ins)-1].stage, ""
	for _, in := range ins {
		if in.stage == last && in.cmd == "USER" {
			user, _, _ = strings.Cut(in.args, ":")
		}
	}
	return user
}

func TestDeployDockerfile(t *testing.T) {
	ins := dockerfile(t)
	var froms []string
	stageName := map[int]string{}
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stageName[in.stage] = f[2]
			}
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got FROM %q", froms)
	}
	// The builder's Go is the go directive's release; the final stage is
	// Debian slim of the same release as the builder.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	build, last := 0, len(froms)-1
	if want := "golang:" + string(m[1]) + "-bookworm"; !strings.HasPrefix(froms[build], want+" ") || stageName[build] == "" {
		t.Errorf("first stage FROM %q, want %s AS <name>", froms[build], want)
	}
	if !strings.HasPrefix(froms[last], "debian:bookworm-slim") {
		t.Errorf("final stage FROM %q, want debian:bookworm-slim", froms[last])
	}

	var buildRun, gxx, libstdcxx, copyFrom, volume, expose, entrypoint, user, cgoOff, envGraphtide bool
	for _, in := range ins {
		switch {
		case in.stage == build && in.cmd == "RUN":
			buildRun = buildRun || strings.Contains(in.args, "go build") && strings.Contains(in.args, "./cmd/graphtide")
			gxx = gxx || strings.Contains(in.args, "install") && strings.Contains(in.args, " g++")
			cgoOff = cgoOff || strings.Contains(in.args, "CGO_ENABLED=0")
		case in.stage == last && in.cmd == "RUN":
			libstdcxx = libstdcxx || strings.Contains(in.args, "install") && strings.Contains(in.args, "libstdc++6")
		case in.stage == last && in.cmd == "COPY":
			copyFrom = copyFrom || strings.HasPrefix(in.args, "--from="+stageName[build]+" ")
		case in.stage == last && in.cmd == "VOLUME":
			volume = true
		case in.stage == last && in.cmd == "EXPOSE":
			_, port, _ := strings.Cut(serveFlags().Lookup("http-addr").DefValue, ":")
			expose = in.args == port || in.args == port+"/tcp"
		case in.stage == last && in.cmd == "USER":
			u, _, _ := strings.Cut(in.args, ":")
			user = u != "" && u != "0" && u != "root"
		case in.stage == last && in.cmd == "ENTRYPOINT":
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil {
				t.Errorf("ENTRYPOINT %s: want the JSON (exec) form: %v", in.args, err)
			}
			entrypoint = len(argv) == 2 && path.Base(argv[0]) == "graphtide" && argv[1] == "serve"
		case in.stage == last && in.cmd == "ENV":
			envGraphtide = envGraphtide || strings.Contains(in.args, "GRAPHTIDE_")
		}
	}
	for what, ok := range map[string]bool{
		"a build stage RUN with go build ./cmd/graphtide": buildRun,
		"g++ installed in the build stage":                gxx,
		"libstdc++6 installed in the final stage":         libstdcxx,
		"COPY --from=<build stage> in the final stage":    copyFrom,
		"a VOLUME for the data":                           volume,
		"EXPOSE of serve's default --http-addr port":      expose,
		"a non-root USER in the final stage":              user,
		`ENTRYPOINT ["/.../graphtide", "serve"]`:          entrypoint,
	} {
		if !ok {
			t.Errorf("Dockerfile lacks %s", what)
		}
	}
	if cgoOff {
		t.Errorf("Dockerfile: CGO_ENABLED=0 cannot build the C++ core")
	}
	if envGraphtide {
		t.Errorf("Dockerfile: GRAPHTIDE_* variables in the image would override a --config file")
	}

	// .dockerignore (at the repository root, the build context) keeps
	// everything the build reads.
	raw, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
			patterns = append(patterns, l)
		}
	}
	ignored := func(p string) bool {
		out := false
		for _, pat := range patterns {
			neg := strings.HasPrefix(pat, "!")
			pat = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(pat, "!"), "/"), "/")
			for q := p; q != "."; q = path.Dir(q) {
				if ok, _ := path.Match(pat, q); ok {
					out = !neg
				}
			}
		}
		return out
	}
	for _, p := range []string{"go.mod", "go.sum", "internal/core/core.go", "internal/core/graphtide.h", "cmd/graphtide/main.go", "internal/engine/store.go"} {
		if ignored(p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
	for _, p := range []string{".git/HEAD", "bin/graphtide", "internal/core/build-asan/x.o"} {
		if !ignored(p) {
			t.Errorf(".dockerignore keeps %s in the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "internal/core/core.go", "cmd/graphtide/main.go", "internal/engine/store.go"} {
		if _, err := os.Stat(filepath.Join("..", p)); err != nil {
			t.Errorf("the .dockerignore check names %s, which does not exist: %v", p, err)
		}
	}
}

// TestDeployReadme checks that deploy/README.md names every file it
// documents and that the main README links it.
func TestDeployReadme(t *testing.T) {
	doc := string(readDeploy(t, "README.md"))
	var missing []string
	for _, f := range deployFiles[1:] {
		if !strings.Contains(doc, f) {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("deploy/README.md does not mention %q", missing)
	}
	main, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(main), "(deploy/README.md)") {
		t.Errorf("README.md does not link deploy/README.md")
	}
}

// serveFlags are graphtide serve's flags, with their defaults.
func serveFlags() *pflag.FlagSet {
	var o server.Options
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o.AddFlags(fs)
	return fs
}
