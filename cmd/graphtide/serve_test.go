package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// syncBuffer is a goroutine-safe output sink.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeEmbeddedEndToEnd: serve with the embedded broker, feed it with
// gen --brokers, watch /metrics, stop it like SIGTERM does, and check that
// the store holds exactly the generated graph.
func TestServeEmbeddedEndToEnd(t *testing.T) {
	dir := t.TempDir()
	o := server.Options{Dir: dir, Topics: []string{"edges"}, Group: "g", Format: "binary", DeadLetterTopic: "dlq",
		FlushInterval: 100 * time.Millisecond, Reset: "earliest", HTTPAddr: "127.0.0.1:0", MemGraphMiB: 1, EmbeddedPort: 0,
		LogCapacity: 1 << 16, AlertTopic: "alerts", AnalyticFlags: []string{"type=wcc", "type=fanin,threshold=40,window_edges=5000,name=hubs"},
		HTTPTimeout: 10 * time.Second, HTTPPathBudget: api.DefaultPathBudget}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, &o, slog.New(slog.NewTextHandler(io.Discard, nil)), out) }()

	var broker, httpAddr string
	waitFor(t, "serve to print its addresses", func() bool {
		m := regexp.MustCompile(`embedded broker listening on (\S+);`).FindStringSubmatch(out.String())
		h := regexp.MustCompile(`http listening on (\S+)`).FindStringSubmatch(out.String())
		if m != nil && h != nil {
			broker, httpAddr = m[1], h[1]
			return true
		}
		return false
	})
	if _, _, err := execute(t, "gen", "--scale", "9", "--edge-factor", "4", "--seed", "5", "--brokers", broker, "--topic", "edges"); err != nil {
		t.Fatal(err)
	}
	edges := gen.RMAT{Scale: 9, EdgeFactor: 4, Seed: 5}.Generate()
	waitFor(t, "/readyz", func() bool { c, _ := httpGet("http://" + httpAddr + "/readyz"); return c == 200 })
	want := fmt.Sprintf("graphtide_ingest_edges_total %d", len(edges))
	waitFor(t, "all edges ingested", func() bool {
		_, body := httpGet("http://" + httpAddr + "/metrics")
		return strings.Contains(body, want)
	})
	if c, body := httpGet("http://" + httpAddr + "/healthz"); c != 200 {
		t.Fatalf("/healthz = %d %s", c, body)
	}
	// The analytics caught up with the stream, and the fan-in monitor saw
	// the RMAT hubs (its alerts went to the alert topic).
	waitFor(t, "analytics to catch up", func() bool {
		_, body := httpGet("http://" + httpAddr + "/metrics")
		return strings.Contains(body, `graphtide_analytics_staleness_sequences{analytic="wcc"} 0`) &&
			strings.Contains(body, `graphtide_analytics_ready{analytic="wcc"} 1`) &&
			regexp.MustCompile(`graphtide_analytics_alerts_total\{analytic="hubs",kind="fan_in"\} [1-9]`).MatchString(body)
	})
	checkAnalyticsOverHTTP(t, "http://"+httpAddr, edges)
	_, body := httpGet("http://" + httpAddr + "/metrics")
	for _, m := range []string{"graphtide_store_flushes_total", "graphtide_kafka_", "go_goroutines", "graphtide_ingest_consumer_lag_records",
		"graphtide_views_streams_open 2", "graphtide_analytics_update_duration_seconds_bucket"} {
		if !strings.Contains(body, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v after shutdown", err)
	}

	s, err := openStore(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sn, _ := s.Snapshot()
	defer sn.Release()
	distinct := map[[2]uint64]bool{}
	for _, e := range edges {
		distinct[[2]uint64{e.Src, e.Dst}] = true
	}
	var n int
	buf := engine.NewScanBuffer(1024, 1<<16, false)
	for lo := uint64(0); lo < sn.VertexBound(); {
		if lo, err = sn.Scan(lo, sn.VertexBound(), engine.Out, buf); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < buf.Len(); i++ {
			for _, d := range buf.Neighbors(i) {
				if !distinct[[2]uint64{buf.Vertices[i], d}] {
					t.Fatalf("unexpected edge %d->%d", buf.Vertices[i], d)
				}
				n++
			}
		}
	}
	if n != len(distinct) {
		t.Fatalf("store has %d edges after restart, want %d", n, len(distinct))
	}
}

// checkAnalyticsOverHTTP reads the analytics' results and alerts from the
// HTTP API and checks them against the generated stream (inserts only): the
// wcc result against a union-find over the edges, every fan-in alert
// against the number of edges into its vertex.
func checkAnalyticsOverHTTP(t *testing.T, base string, edges []gen.Edge) {
	t.Helper()
	var list api.AnalyticsResponse
	getJSON(t, base+"/v1/analytics", &list)
	if len(list.Analytics) != 2 || list.Analytics[0].Spec.Name != "hubs" || list.Analytics[1].Spec.Name != "wcc" {
		t.Fatalf("/v1/analytics lists %+v, want hubs and wcc", list.Analytics)
	}
	var wcc struct {
		api.AnalyticResult
		Summary analytics.WCCSummary `json:"summary"`
	}
	getJSON(t, base+"/v1/analytics/wcc", &wcc)
	parent := map[uint64]uint64{}
	var find func(uint64) uint64
	find = func(v uint64) uint64 {
		if p, ok := parent[v]; ok && p != v {
			parent[v] = find(p)
			return parent[v]
		}
		parent[v] = v
		return v
	}
	var bound uint64
	into := map[uint64]int{}
	for _, e := range edges {
		parent[find(e.Src)] = find(e.Dst)
		bound = max(bound, e.Src+1, e.Dst+1)
		into[e.Dst]++
	}
	size := map[uint64]int{}
	for v := range parent {
		size[find(v)]++
	}
	comps, largest, inComps := 0, 0, 0
	for _, n := range size {
		if n > 1 {
			comps, largest, inComps = comps+1, max(largest, n), inComps+n
		}
	}
	want := analytics.WCCSummary{Seq: wcc.Seq, Components: comps, Largest: largest}
	if !wcc.Ready || wcc.Summary != want {
		t.Errorf("wcc over HTTP: ready %v, %+v; want %+v", wcc.Ready, wcc.Summary, want)
	}
	var alerts api.AlertsResponse
	getJSON(t, base+"/v1/alerts?analytic=hubs&limit=10000", &alerts)
	if len(alerts.Alerts) == 0 || alerts.Total < uint64(len(alerts.Alerts)) {
		t.Fatalf("/v1/alerts: %d fan-in alerts of %d raised", len(alerts.Alerts), alerts.Total)
	}
	for _, a := range alerts.Alerts {
		if a.Analytic != "hubs" || a.Kind != "fan_in" || a.Threshold != 40 || a.Value <= 40 || a.Value > float64(into[a.Vertex]) {
			t.Errorf("alert %+v: want a fan-in above 40 of at most the %d edges into %d", a, into[a.Vertex], a.Vertex)
		}
	}
}

// getJSON GETs url, wants 200, and decodes the body into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := httpGet(url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

func TestServeBadFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--format csv":                                       `--format must be one of: binary, json, text; got "csv"`,
		"--reset middle":                                     `--reset must be earliest or latest, got "middle"`,
		"--topic-format edges":                               `--topic-format must look like topic=format, got "edges"`,
		"--sasl-mechanism gssapi":                            `--sasl-mechanism must be one of: plain, scram-sha-256, scram-sha-512, oauthbearer; got "gssapi"`,
		"--flush-interval 1ms":                               "--flush-interval must be at least 10ms, got 1ms",
		"--dead-letter-timeout 10ms":                         "--dead-letter-timeout must be between 1s and 10m, got 10ms",
		"--ready-grace 50ms":                                 "--ready-grace must be between 100ms and 24h, got 50ms",
		"--ready-max-lag -1":                                 "--ready-max-lag must be 0 (no limit) or a number of records, got -1",
		"--group-instance-id pod/0":                          `--group-instance-id "pod/0": only letters, digits, '.', '_' and '-' are allowed`,
		"--alert-failover-timeout 1s":                        "--alert-failover-timeout must be between 6s and 5m (Kafka's brokers refuse a shorter session by default), got 1s",
		"--graph a/b":                                        `--graph: graph name "a/b": only letters, digits, '.', '_' and '-' are allowed`,
		"--analytic type=bfs":                                `analytic "bfs": bfs needs a root vertex (root: <id or key>)`,
		"--analytic colour=red":                              `--analytic: analytic "colour=red": unknown key "colour"; allowed: batch_size, damping, direction, evidence, interval, lateness, max_behind, max_cycle, max_iterations, max_span, measure, min_ratio, mule_receivers, mule_senders, name, pull_memory_mib, pull_timeout, ring_search, root, search_budget, threshold, tolerance, type, types, window, window_edges`,
		"--analytic type=pagerank,max_iterations=1000000000": `analytic "pagerank": max_iterations 1000000000 is out of range: allowed 1..10000`,
		"--analytic type=fanin,threshold=5,window=1000000h":  `analytic "fanin": window 1000000h0m0s is out of range: allowed 0s..168h0m0s`,
		"--http-addr 0.0.0.0:9464":                           "--http-addr 0.0.0.0:9464 is not a loopback address: serving the API beyond this machine needs a bearer token (--http-token-file FILE or GRAPHTIDE_HTTP_TOKEN)",
		"--http-addr :9464":                                  "--http-addr :9464 is not a loopback address: serving the API beyond this machine needs a bearer token (--http-token-file FILE or GRAPHTIDE_HTTP_TOKEN)",
		"--http-tls-cert c.pem":                              "--http-tls-cert and --http-tls-key go together: give both, or neither",
		"--http-request-timeout 0":                           "--http-request-timeout must be between 1ms and 1h, got 0s",
		"--http-path-budget 0":                               "--http-path-budget must be positive, got 0",
		"--http-token-file /nonexistent/token":               "--http-token-file: open /nonexistent/token: no such file or directory",
		"--own-partitions 0-1":                               "partitioned mode needs both --owners (PARTITIONS=URL,... for every partition) and --own-partitions (this instance's entry)",
		"--adopt-partitions 1":                               "--adopt-partitions is a hand-over of partitioned mode: it needs --owners and --own-partitions",
		"--owners 0-1=http://a:1,2-3=http://b:1 --own-partitions 0-2":                                                "--own-partitions 0-2 is not one entry of --owners (0-1; 2-3): an instance owns exactly the partitions --owners gives its address, so that every instance routes a vertex to the one that ingests it",
		"--owners 0-1=http://a:1,3=http://b:1 --own-partitions 0-1":                                                  "--owners gives partitions up to 3 but none owns partition 2: every partition of the topics, from 0, needs an owner",
		"--owners 0-1=a:1,2=http://b:1 --own-partitions 2":                                                           `--owners "0-1=a:1": the owner must be a base URL http://host:port or https://host:port (its API's address; no user or password: requests carry the bearer token), got "a:1"`,
		"--owners 0-1=http://a:1,2=http://b:1 --own-partitions 2 --writes-topic w":                                   "partitioned mode (--owners) takes no writes topic: a batch of POST /v1/batches may name vertices of several owners; leave --writes-topic out (producers write to the topics, keyed by source vertex)",
		"--owners 0-1=http://a:1,2=http://b:1 --own-partitions 2 --writes-topic= --adopt-partitions 1":               "--adopt-partitions: partition 1 is not one of --own-partitions 2: an instance adopts partitions it owns",
		"--owners 0-1=http://a:1,2=http://b:1 --own-partitions 2 --writes-topic= --analytic type=wcc":                `analytics: a graph-wide analytic in partitioned mode: analytic "wcc" (wcc) reads more than each vertex's out-edges, and this instance holds the out-edges of its own partitions' vertices only (serve --owners): it would give a partial answer. Partitioned mode runs out-degree monitors (degree, direction out) and fanout monitors over a window of time; run replica mode, where every instance holds the whole graph, for bfs, wcc, pagerank, sssp, fraud, fanin and in-degree`,
		"--owners 0-1=http://a:1,2=http://b:1 --own-partitions 2 --writes-topic= --in-edges":                         "partitioned mode (--owners) keeps no in-edges: an owner would hold only those from its own vertices (dir=in is refused there); leave --in-edges out",
		"--owners 0-1=http://a:1,2=http://b:1 --own-partitions 2 --writes-topic= --analytic type=fanout,threshold=5": `analytics: a graph-wide analytic in partitioned mode: fanout monitor "fanout" counts over a window of operations, and this instance sees only its partitions' share of them (serve --owners), so its window would span more time than the whole stream's: give it a window of time (window=1m) and no window_edges`,
	} {
		_, _, err := execute(t, append([]string{"serve"}, strings.Fields(args)...)...)
		if err == nil || err.Error() != want {
			t.Errorf("serve %s: got %v, want %q", args, err, want)
		}
	}
	t.Setenv("GRAPHTIDE_RESET", "sideways")
	if _, _, err := execute(t, "serve"); err == nil || !strings.Contains(err.Error(), `"sideways"`) {
		t.Errorf("env GRAPHTIDE_RESET not applied: %v", err)
	}
}

func TestServeConfigFilePrecedence(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "graphtide.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("reset: sideways\ntopics: [a, b]\n")
	if _, _, err := execute(t, "serve", "--config", cfg); err == nil || !strings.Contains(err.Error(), `"sideways"`) {
		t.Fatalf("config file value not applied: %v", err)
	}
	// The command line wins over the file.
	write("reset: latest\nformat: csv\n")
	if _, _, err := execute(t, "serve", "--config", cfg, "--format", "xml"); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("flag should win over the config file: %v", err)
	}
	// The environment wins over the file.
	t.Setenv("GRAPHTIDE_FORMAT", "yaml")
	if _, _, err := execute(t, "serve", "--config", cfg); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Fatalf("environment should win over the config file: %v", err)
	}
	// The analytics section of the file: decoded strictly, validated.
	write("analytics:\n  - {type: pagerank, damping: 3}\n")
	if _, _, err := execute(t, "serve", "--config", cfg, "--format", "binary"); err == nil || !strings.Contains(err.Error(), `damping 3 is out of range: allowed (0, 1)`) {
		t.Fatalf("analytics section: %v", err)
	}
	write("analytics:\n  - {type: wcc, colour: red}\n")
	if _, _, err := execute(t, "serve", "--config", cfg, "--format", "binary"); err == nil || !strings.Contains(err.Error(), `unknown key "colour"; allowed: batch_size,`) {
		t.Fatalf("unknown analytics field: %v", err)
	}
	write("brokerz: [x]\n")
	if _, _, err := execute(t, "serve", "--config", cfg); err == nil || !strings.Contains(err.Error(), `unknown setting "brokerz"; allowed: `) {
		t.Fatalf("unknown key: %v", err)
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key as PEM
// files in dir and returns their paths and a pool trusting it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "graphtide test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestServeHTTPSWithToken: serve with TLS and a bearer token from a file;
// /v1 needs the token, the probes and /metrics do not, plain HTTP gets
// nothing.
func TestServeHTTPSWithToken(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, tmp)
	const token = "0123456789abcdef-serve-test"
	tokenFile := filepath.Join(tmp, "token")
	writeFile(t, tokenFile, token+"\n")
	o := server.Options{Dir: dir, Topics: []string{"edges"}, Group: "g", Format: "binary", DeadLetterTopic: "dlq",
		FlushInterval: 100 * time.Millisecond, Reset: "earliest", HTTPAddr: "127.0.0.1:0", MemGraphMiB: 1, EmbeddedPort: 0,
		LogCapacity: 1 << 10, HTTPTimeout: 10 * time.Second, HTTPPathBudget: 1000,
		HTTPTokenFile: tokenFile, HTTPTLSCert: certFile, HTTPTLSKey: keyFile}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(o.HTTPTokens) != 1 || o.HTTPTokens[0] != (api.Token{Secret: token, Scopes: api.AllScopes}) {
		t.Fatalf("tokens read as %+v, want %q with every scope (trimmed)", o.HTTPTokens, token)
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, &o, slog.New(slog.NewTextHandler(io.Discard, nil)), out) }()
	var addr string
	waitFor(t, "serve to listen", func() bool {
		m := regexp.MustCompile(`http listening on (\S+) \(TLS\)`).FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest("GET", "https://"+addr+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/healthz", "/metrics"} {
		if code, body := get(p, ""); code != 200 {
			t.Errorf("GET %s without a token: %d %s", p, code, body)
		}
	}
	for _, p := range []string{"/v1/stats", "/v1/analytics", "/v1/openapi.yaml", "/v1/vertices/1/degree"} {
		if code, _ := get(p, ""); code != 401 {
			t.Errorf("GET %s without a token: %d, want 401", p, code)
		}
		if code, _ := get(p, token+"x"); code != 401 {
			t.Errorf("GET %s with a wrong token: %d, want 401", p, code)
		}
		if code, body := get(p, token); code != 200 {
			t.Errorf("GET %s with the token: %d %s", p, code, body)
		}
	}
	var st api.StatsResponse
	if _, body := get("/v1/stats", token); json.Unmarshal([]byte(body), &st) != nil || st.Store.LastSeq != 0 {
		t.Errorf("/v1/stats of an empty store: %s", body)
	}
	if code, _ := httpGet("http://" + addr + "/healthz"); code == 200 {
		t.Error("plain HTTP was answered on the TLS port")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
}

// TestServeEmbeddedRestart: the embedded broker keeps its data in
// <dir>/embedded-broker, so serve restarted on the same --dir finds the
// cluster and topic IDs its store recorded: it starts, resumes where it
// stopped (nothing is ingested twice: the new process counts only the new
// edges) and ends with both streams.
func TestServeEmbeddedRestart(t *testing.T) {
	dir := t.TempDir()
	o := server.Options{Dir: dir, Topics: []string{"edges"}, Group: "g", Format: "binary", DeadLetterTopic: "dlq",
		FlushInterval: 100 * time.Millisecond, Reset: "earliest", HTTPAddr: "127.0.0.1:0", MemGraphMiB: 1, EmbeddedPort: 0,
		LogCapacity: 1 << 10, HTTPTimeout: 10 * time.Second, HTTPPathBudget: api.DefaultPathBudget}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	distinct := map[[2]uint64]bool{}
	var recorded []ingest.Recorded
	for run, seed := range []string{"5", "6"} {
		out := &syncBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runServe(ctx, &o, slog.New(slog.NewTextHandler(io.Discard, nil)), out) }()
		var broker, httpAddr string
		waitFor(t, "serve to print its addresses", func() bool {
			select {
			case err := <-done:
				t.Fatalf("run %d: serve returned %v", run, err)
			default:
			}
			m := regexp.MustCompile(`embedded broker listening on (\S+);`).FindStringSubmatch(out.String())
			h := regexp.MustCompile(`http listening on (\S+)`).FindStringSubmatch(out.String())
			if m != nil && h != nil {
				broker, httpAddr = m[1], h[1]
				return true
			}
			return false
		})
		if _, _, err := execute(t, "gen", "--scale", "8", "--edge-factor", "4", "--seed", seed, "--brokers", broker, "--topic", "edges"); err != nil {
			t.Fatal(err)
		}
		var s uint64
		fmt.Sscan(seed, &s)
		edges := gen.RMAT{Scale: 8, EdgeFactor: 4, Seed: s}.Generate()
		for _, e := range edges {
			distinct[[2]uint64{e.Src, e.Dst}] = true
		}
		want := fmt.Sprintf("graphtide_ingest_edges_total %d\n", len(edges))
		waitFor(t, fmt.Sprintf("run %d: the new edges ingested", run), func() bool {
			_, body := httpGet("http://" + httpAddr + "/metrics")
			return strings.Contains(body, want)
		})
		if c, body := httpGet("http://" + httpAddr + "/readyz"); c != 200 {
			t.Errorf("run %d: /readyz = %d %s", run, c, body)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d: serve returned %v after shutdown", run, err)
		}
		s2, err := openStore(dir, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := s2.SourcePosition()
		rec, err := ingest.DecodeRecorded(raw)
		if err != nil || rec.ClusterID == "" || rec.ClusterID == "kfake" || rec.TopicIDs["edges"] == (ingest.TopicID{}) {
			t.Errorf("run %d: the store recorded %+v (%v), want the embedded broker's random cluster ID and a topic ID", run, rec, err)
		}
		recorded = append(recorded, rec)
		got := 0
		sn, _ := s2.Snapshot()
		buf := engine.NewScanBuffer(1024, 1<<16, false)
		for lo := uint64(0); lo < sn.VertexBound(); {
			if lo, err = sn.Scan(lo, sn.VertexBound(), engine.Out, buf); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < buf.Len(); i++ {
				for _, d := range buf.Neighbors(i) {
					if !distinct[[2]uint64{buf.Vertices[i], d}] {
						t.Errorf("run %d: unexpected edge %d->%d", run, buf.Vertices[i], d)
					}
					got++
				}
			}
		}
		sn.Release()
		s2.Close()
		if got != len(distinct) {
			t.Errorf("run %d: the store has %d edges, want %d", run, got, len(distinct))
		}
	}
	if recorded[0].ClusterID != recorded[1].ClusterID || recorded[0].TopicIDs["edges"] != recorded[1].TopicIDs["edges"] {
		t.Errorf("the embedded broker's IDs changed across the restart: %q %v, then %q %v", recorded[0].ClusterID, recorded[0].TopicIDs, recorded[1].ClusterID, recorded[1].TopicIDs)
	}
}

// TestServeHTTPFlagsFromConfigFile: the HTTP flags come from the config
// file like every other, and are checked as on the command line.
func TestServeHTTPFlagsFromConfigFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "graphtide.yaml")
	writeFile(t, cfg, "http-addr: 10.1.2.3:9464\nhttp-request-timeout: 2h\n")
	os.Unsetenv("GRAPHTIDE_HTTP_TOKEN")
	if _, _, err := execute(t, "serve", "--config", cfg); err == nil || err.Error() != "--http-request-timeout must be between 1ms and 1h, got 2h0m0s" {
		t.Errorf("config file: %v", err)
	}
	writeFile(t, cfg, "http-addr: 10.1.2.3:9464\n")
	if _, _, err := execute(t, "serve", "--config", cfg); err == nil || !strings.Contains(err.Error(), "--http-addr 10.1.2.3:9464 is not a loopback address") {
		t.Errorf("config file: %v", err)
	}
}
