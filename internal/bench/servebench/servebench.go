// Package servebench measures graphtide serve as a whole, in a process of
// its own: it starts `graphtide serve` with a memory budget and analytics
// against a real Kafka broker, produces a Kronecker stream (with deletes)
// to it, waits until the store holds every record and every analytic has
// caught up, and reports the serve process's peak resident set against its
// budget, and the memory each component held.
package servebench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/genkafka"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// Config of a run.
type Config struct {
	Binary      string // the graphtide executable
	Brokers     []string
	Scale       int
	EdgeFactor  int
	Partitions  int
	Deletes     float64 // share of events that delete an earlier edge
	Seed        uint64
	Budget      string   // serve --memory-budget
	Analytics   []string // serve --analytic specs; "{hub}" is replaced by the vertex with the most out-edges
	Dir         string   // serve's data directory goes in here
	Log         io.Writer
	CatchUpWait time.Duration // how long serve may take to hold everything and catch up (default 10 min)
	// OutEdgesOnly runs serve on a store created with --in-edges=false
	// (default: with in-edges, a new store's default), to compare their
	// memory.
	OutEdgesOnly bool
	// EdgeEvents, when above 0, is the payments of the edge-events
	// comparison (events.go) run after the rest, among EdgeAccounts
	// accounts.
	EdgeEvents, EdgeAccounts int
}

// DefaultConfig is the command's defaults, without Binary, Brokers and Dir.
func DefaultConfig() Config {
	return Config{Scale: 20, EdgeFactor: 16, Partitions: 4, Deletes: 0.05, Seed: 1, Budget: "1GiB",
		Analytics: DefaultAnalytics, CatchUpWait: 10 * time.Minute, EdgeEvents: 300_000, EdgeAccounts: 20_000}
}

// Bounds of Config.Scale and Config.EdgeFactor.
const (
	MaxScale      = 24
	MaxEdgeFactor = 64
)

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.Brokers, "brokers", c.Brokers, "Kafka bootstrap brokers (required)")
	bench.GraphFlags(fs, &c.Scale, &c.EdgeFactor, &c.Seed, "log2 of the vertex count of the RMAT graph", "generator seed")
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "partitions of the benchmark topic")
	fs.Float64Var(&c.Deletes, "deletes", c.Deletes, "share of events that delete an earlier edge")
	fs.StringVar(&c.Budget, "memory-budget", c.Budget, "serve's --memory-budget")
	fs.StringArrayVar(&c.Analytics, "analytic", c.Analytics, "analytics serve runs ({hub}: the vertex with the most out-edges); repeatable")
	fs.DurationVar(&c.CatchUpWait, "catch-up-wait", c.CatchUpWait, "how long serve may take to ingest everything and catch up")
	fs.BoolVar(&c.OutEdgesOnly, "out-edges-only", c.OutEdgesOnly, "run serve with --in-edges=false (default: its store keeps in-edges, a new store's default)")
	fs.IntVar(&c.EdgeEvents, "edge-events", c.EdgeEvents, "then run serve on this many JSON payments through a mapping as replace, accumulate and accumulate with properties (0: skip)")
	fs.IntVar(&c.EdgeAccounts, "edge-accounts", c.EdgeAccounts, "accounts of those payments")
}

// Validate checks the settings; its messages name the command's flags.
func (c Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("--brokers is required (start one with deploy/kafka/kafka.sh)")
	}
	if err := bench.ValidateGraph(c.Scale, c.EdgeFactor, MaxScale, MaxEdgeFactor); err != nil {
		return err
	}
	if c.Partitions < 1 || c.Partitions > 1024 {
		return fmt.Errorf("--partitions must be between 1 and 1024, got %d", c.Partitions)
	}
	if c.Deletes < 0 || c.Deletes > 0.5 {
		return fmt.Errorf("--deletes must be between 0 and 0.5, got %v", c.Deletes)
	}
	if _, err := budget.Parse(c.Budget); err != nil {
		return fmt.Errorf("--memory-budget: %w", err)
	}
	if c.EdgeEvents < 0 || c.EdgeEvents > 100_000_000 {
		return fmt.Errorf("--edge-events must be between 0 and 100000000, got %d", c.EdgeEvents)
	}
	if c.EdgeAccounts < 2 || c.EdgeAccounts > 100_000_000 {
		return fmt.Errorf("--edge-accounts must be between 2 and 100000000, got %d", c.EdgeAccounts)
	}
	return nil
}

// DefaultAnalytics are those the benchmark registers by default: BFS from
// the hub, components, and a fraud monitor.
var DefaultAnalytics = []string{"type=bfs,root={hub}", "type=wcc", "type=fraud,max_cycle=4,threshold=50"}

// Result is what a run measured; it is printed as one JSON object.
type Result struct {
	Events             int     `json:"events"`
	Budget             int64   `json:"budget_bytes"`
	PeakRSS            int64   `json:"peak_rss_bytes"`
	PeakAnon           int64   `json:"peak_anon_bytes"`
	PeakFile           int64   `json:"peak_file_bytes"`
	PeakRSSOverBudget  float64 `json:"peak_rss_over_budget"`
	PeakAnonOverBudget float64 `json:"peak_anon_over_budget"`
	// WithinBudget: the peak of anonymous memory (heaps, stacks, MemGraphs)
	// stayed within the budget. File-backed resident pages (the mapped
	// store files, the executable) are page cache the kernel reclaims under
	// pressure; they are reported apart (peak_file_bytes).
	WithinBudget       bool             `json:"within_budget"`
	ProduceSeconds     float64          `json:"produce_seconds"`
	CatchUpSeconds     float64          `json:"catch_up_seconds"` // from the first record produced to everything ingested and every analytic caught up
	EventsPerSec       float64          `json:"events_per_sec"`
	MemoryByComponent  map[string]int64 `json:"memory_bytes_by_component"` // graphtide_memory_bytes at the end
	BudgetByComponent  map[string]int64 `json:"budget_bytes_by_component"`
	Analytics          []string         `json:"analytics"`
	Scale              int              `json:"scale"`
	EdgeFactor         int              `json:"edge_factor"`
	DeleteShare        float64          `json:"delete_share"`
	ServeLog           string           `json:"serve_log"`
	FraudPullsCutShort float64          `json:"fraud_pulls_cut_short,omitempty"`
	// EdgeEvents is the edge-events comparison (--edge-events).
	EdgeEvents *EventsResult `json:"edge_events,omitempty"`
}

func (c *Config) defaults() error {
	if c.Binary == "" || len(c.Brokers) == 0 || c.Dir == "" {
		return errors.New("servebench: Binary, Brokers and Dir are required")
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.Budget == "" {
		c.Budget = "1GiB"
	}
	if c.Analytics == nil {
		c.Analytics = DefaultAnalytics
	}
	if c.CatchUpWait == 0 {
		c.CatchUpWait = 10 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// Run runs the benchmark once.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	total, err := budget.Parse(cfg.Budget)
	if err != nil {
		return Result{}, err
	}
	r := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	fmt.Fprintf(cfg.Log, "generating scale %d x %d...\n", cfg.Scale, cfg.EdgeFactor)
	edges := r.Generate()
	deg := map[uint64]int{}
	hub := uint64(0)
	for _, e := range edges {
		deg[e.Src]++
		if deg[e.Src] > deg[hub] {
			hub = e.Src
		}
	}
	specs := make([]string, len(cfg.Analytics))
	for i, a := range cfg.Analytics {
		specs[i] = strings.ReplaceAll(a, "{hub}", strconv.FormatUint(hub, 10))
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("graphtide-bench-serve-%d", stamp)
	if err := bench.CreateTopic(ctx, adm, topic, cfg.Partitions); err != nil {
		return Result{}, err
	}
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }() // best effort: a benchmark topic left behind is harmless

	port, err := freePort()
	if err != nil {
		return Result{}, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logPath := filepath.Join(cfg.Dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return Result{}, err
	}
	defer logFile.Close()
	args := []string{"serve", "--brokers", strings.Join(cfg.Brokers, ","), "--topics", topic, "--group", topic,
		"--dir", filepath.Join(cfg.Dir, "data"), "--memory-budget", cfg.Budget, fmt.Sprintf("--in-edges=%v", !cfg.OutEdgesOnly), "--http-addr", addr,
		"--alert-topic", "", "--dead-letter-topic", topic + "-dead"}
	for _, s := range specs {
		args = append(args, "--analytic", s)
	}
	cmd := exec.CommandContext(ctx, cfg.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = os.Environ()
	fmt.Fprintf(cfg.Log, "starting %s %s\n", cfg.Binary, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM) // it may have exited: then exited says so
		select {
		case err := <-exited:
			return err
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			return errors.New("serve did not stop within 2 minutes of SIGTERM")
		}
	}
	defer func() { _ = stop() }() // the error is returned where it matters, below

	peak := &peakOf{pid: cmd.Process.Pid}
	sampleDone := make(chan struct{})
	sctx, scancel := context.WithCancel(ctx)
	go func() {
		defer close(sampleDone)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			peak.sample()
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	defer func() { scancel(); <-sampleDone }()

	base := "http://" + addr
	if err := waitFor(ctx, exited, 2*time.Minute, func() (bool, error) {
		code, _, err := get(base + "/readyz")
		return err == nil && code == http.StatusOK, nil
	}); err != nil {
		return Result{}, fmt.Errorf("serve never became ready (log %s): %w", logPath, err)
	}

	fmt.Fprintf(cfg.Log, "producing %d events to %s...\n", len(edges), topic)
	start := time.Now()
	st, err := genkafka.Produce(ctx, genkafka.Config{Brokers: cfg.Brokers, Topic: topic, Format: decode.FormatBinary,
		DeleteShare: cfg.Deletes, Seed: cfg.Seed}, edges)
	if err != nil {
		return Result{}, err
	}
	produced := time.Since(start)
	events := st.Upserts + st.Deletes

	fmt.Fprintf(cfg.Log, "waiting for serve to ingest and its analytics to catch up...\n")
	if err := waitFor(ctx, exited, cfg.CatchUpWait, func() (bool, error) { return caughtUp(base, events) }); err != nil {
		return Result{}, fmt.Errorf("serve did not catch up (log %s): %w", logPath, err)
	}
	caught := time.Since(start)
	peak.sample()
	used, err := scrape(base, "graphtide_memory_bytes")
	if err != nil {
		return Result{}, err
	}
	budgets, err := scrape(base, "graphtide_memory_budget_bytes")
	if err != nil {
		return Result{}, err
	}
	cut, _ := scrape(base, "graphtide_analytics_pulls_cut_short_total")
	if err := stop(); err != nil {
		return Result{}, fmt.Errorf("serve exited with %w (log %s)", err, logPath)
	}
	m := peak.get()
	res := Result{Events: events, Budget: total, PeakRSS: m.PeakRSS, PeakAnon: m.Anon, PeakFile: m.File,
		PeakRSSOverBudget: float64(m.PeakRSS) / float64(total), PeakAnonOverBudget: float64(m.Anon) / float64(total),
		WithinBudget:   m.Anon <= total,
		ProduceSeconds: produced.Seconds(), CatchUpSeconds: caught.Seconds(), EventsPerSec: float64(events) / caught.Seconds(),
		MemoryByComponent: used, BudgetByComponent: budgets, Analytics: specs, Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor,
		DeleteShare: cfg.Deletes, ServeLog: logPath}
	for _, v := range cut {
		res.FraudPullsCutShort += float64(v)
	}
	if cfg.EdgeEvents > 0 {
		ev, err := RunEvents(ctx, cfg, cfg.EdgeEvents, max(cfg.EdgeAccounts, 2))
		if err != nil {
			return res, err
		}
		res.EdgeEvents = &ev
	}
	return res, nil
}

// peakOf keeps the peaks of a process's memory counters.
type peakOf struct {
	pid  int
	mu   sync.Mutex
	peak bench.Memory // Protected by mu.
}

func (p *peakOf) sample() {
	m, err := bench.ReadMemoryOf(p.pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak.RSS = max(p.peak.RSS, m.RSS)
	p.peak.PeakRSS = max(p.peak.PeakRSS, m.PeakRSS, m.RSS)
	p.peak.Anon = max(p.peak.Anon, m.Anon)
	p.peak.File = max(p.peak.File, m.File)
}

func (p *peakOf) get() bench.Memory {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// caughtUp reports whether serve ingested events records and every
// analytic is ready at the store's newest sequence number.
func caughtUp(base string, events int) (bool, error) {
	rec, err := scrape(base, "graphtide_ingest_records_total")
	if err != nil {
		return false, nil
	}
	var n int64
	for _, v := range rec {
		n += v
	}
	if n < int64(events) {
		return false, nil
	}
	var stats api.StatsResponse
	if code, body, err := get(base + "/v1/stats"); err != nil || code != 200 || json.Unmarshal(body, &stats) != nil {
		return false, nil
	}
	var list api.AnalyticsResponse
	code, body, err := get(base + "/v1/analytics")
	if err != nil || code != 200 {
		return false, nil
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return false, fmt.Errorf("GET /v1/analytics: %w", err)
	}
	for _, a := range list.Analytics {
		if !a.Ready || a.Seq < stats.Store.LastSeq {
			return false, nil
		}
	}
	return true, nil
}

// scrape reads the samples of metric from /metrics, by their label values
// joined with "," ("" for none).
func scrape(base, metric string) (map[string]int64, error) {
	code, body, err := get(base + "/metrics")
	if err != nil || code != 200 {
		return nil, fmt.Errorf("GET /metrics: %d %w", code, err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		rest := line[len(metric):]
		labels := ""
		if strings.HasPrefix(rest, "{") {
			end := strings.Index(rest, "}")
			if end < 0 {
				continue
			}
			var vals []string
			for _, kv := range strings.Split(rest[1:end], ",") {
				if _, v, ok := strings.Cut(kv, "="); ok {
					vals = append(vals, strings.Trim(v, `"`))
				}
			}
			labels, rest = strings.Join(vals, ","), rest[end+1:]
		} else if !strings.HasPrefix(rest, " ") {
			continue // another metric with this prefix
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			continue
		}
		out[labels] = int64(f)
	}
	return out, sc.Err()
}

func get(url string) (int, []byte, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// waitFor polls cond until it holds, fails, the process exits, or
// timeout passes.
func waitFor(ctx context.Context, exited chan error, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("serve exited: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
