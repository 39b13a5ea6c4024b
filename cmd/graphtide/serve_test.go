package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
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
	o := serveOptions{dir: dir, topics: []string{"edges"}, group: "g", format: "binary", deadLetter: "dlq",
		flushInterval: 100 * time.Millisecond, reset: "earliest", httpAddr: "127.0.0.1:0", memgraphMiB: 1, embeddedPort: 0,
		logCapacity: 1 << 16, alertTopic: "alerts", analytics: []string{"type=wcc", "type=fanin,threshold=40,window_edges=5000,name=hubs"}}
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

	s, err := engine.Open(filepath.Join(dir, "store"), nil)
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

func TestServeBadFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--format csv":            `--format must be one of: binary, json, text; got "csv"`,
		"--reset middle":          `--reset must be earliest or latest, got "middle"`,
		"--topic-format edges":    `--topic-format must look like topic=format, got "edges"`,
		"--sasl-mechanism gssapi": `--sasl-mechanism must be one of: plain, scram-sha-256, scram-sha-512; got "gssapi"`,
		"--flush-interval 1ms":    "--flush-interval must be at least 10ms, got 1ms",
		"--analytic type=bfs":     `analytic "bfs": bfs needs a root vertex (root: <id or key>)`,
		"--analytic colour=red":   `--analytic: analytic "colour=red": unknown key "colour"; allowed: batch_size, damping, direction, interval, max_cycle, max_iterations, name, root, search_budget, stale, threshold, tolerance, type, window, window_edges`,
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
	if _, _, err := execute(t, "serve", "--config", cfg, "--format", "binary"); err == nil || !strings.Contains(err.Error(), `damping must be in (0, 1), got 3`) {
		t.Fatalf("analytics section: %v", err)
	}
	write("analytics:\n  - {type: wcc, colour: red}\n")
	if _, _, err := execute(t, "serve", "--config", cfg, "--format", "binary"); err == nil || !strings.Contains(err.Error(), `field colour not found`) {
		t.Fatalf("unknown analytics field: %v", err)
	}
	write("brokerz: [x]\n")
	if _, _, err := execute(t, "serve", "--config", cfg); err == nil || !strings.Contains(err.Error(), `unknown setting "brokerz"; allowed: `) {
		t.Fatalf("unknown key: %v", err)
	}
}
