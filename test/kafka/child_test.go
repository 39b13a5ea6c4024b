package kafkatest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/ownership"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The crash tests re-run this test binary as a child process (as
// internal/engine/recovery_test.go does) that runs an Ingester on a store
// directory until SIGTERM, or until the parent kills it with SIGKILL. The
// child reports on stdout, every few milliseconds, the ingester's durable
// position and the store's recorded position.

const childEnv = "GRAPHTIDE_KAFKA_TEST_CHILD"

type childConfig struct {
	Brokers    []string
	Topics     []string
	Formats    map[string]decode.Format
	Group      string
	Instance   string // static group membership, so a restart takes over at once
	DeadLetter string
	Dir        string // store in Dir/store, key dictionary in Dir/keys
	MemBytes   int64
	FlushEvery time.Duration
	MaxPoll    int

	// Serve: the child runs graphtide serve (package server) on the data
	// directory Dir instead of a bare ingester, with these analytics,
	// checkpointed every CheckpointEvery; it reports "http <addr>" and the
	// store's position.
	Serve           bool
	Analytics       []analytics.Spec
	CheckpointEvery time.Duration
	AlertTopic      string
	// Graph: serve's graph ("": derived from the topics); AlertFailover:
	// the alert producers' session timeout (0: serve's default).
	Graph         string
	AlertFailover time.Duration
	// DefaultNames: the group and the writes, alert and dead-letter
	// topics are left to default from the graph (serve without those
	// flags); Group, DeadLetter, AlertTopic and WritesTopic are ignored.
	DefaultNames bool
	// WritesTopic: serve's writes topic ("" none); HTTPAddr: its API's
	// address (default 127.0.0.1:0: any port).
	WritesTopic string
	HTTPAddr    string
	// HistorySeqs: serve --history-seqs (0: no history).
	HistorySeqs uint64
	// Owners, OwnPartitions, Adopt: partitioned mode (serve --owners,
	// --own-partitions, --adopt-partitions); empty: replica mode.
	Owners, OwnPartitions string
	Adopt                 []int32

	// NoRace: run the child without the race detector (childBinary); not
	// sent to the child.
	NoRace bool `json:"-"`
}

func runChild(raw string) int {
	// Do not outlive the test process (if it dies of a panic or timeout).
	go func(parent int) {
		for range time.Tick(200 * time.Millisecond) {
			if os.Getppid() != parent {
				fmt.Fprintln(os.Stderr, "child: the test process is gone; exiting")
				os.Exit(3)
			}
		}
	}(os.Getppid())
	var c childConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	if c.Serve {
		return runServeChild(c)
	}
	s, err := engine.Open(c.Dir+"/store", &engine.Options{MemGraphBytes: c.MemBytes, InEdgesAsStored: true}) // as serve would
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open store:", err)
		return 2
	}
	dict, err := keydict.Open(c.Dir + "/keys")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open key dictionary:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	in, err := ingest.New(s, dict, ingest.Config{
		Brokers: c.Brokers, Topics: c.Topics, TopicFormats: c.Formats, Group: c.Group,
		DeadLetterTopic: c.DeadLetter, FlushInterval: c.FlushEvery, MaxPollRecords: c.MaxPoll,
		ClientOpts: []kgo.Opt{kgo.InstanceID(c.Instance)}, Logger: log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: new ingester:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var mu sync.Mutex // serializes stdout lines
	report := func() {
		raw, _ := s.SourcePosition()
		mu.Lock()
		fmt.Printf("durable %s\nstore %s\n", hex.EncodeToString(in.Durable().Encode()), hex.EncodeToString(raw))
		mu.Unlock()
	}
	stopReports := reportEvery(report)
	runErr := in.Run(ctx)
	stopReports()
	report()
	if err := dict.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if err := s.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "child: run:", runErr)
		return 1
	}
	return 0
}

// reportEvery calls report every 20 ms until the returned stop is called
// (it returns once no report runs).
func reportEvery(report func()) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				report()
			}
		}
	}()
	return func() { close(done); <-exited }
}

// runServeChild runs serve until SIGTERM, reporting its HTTP address and
// its store's recorded position.
func runServeChild(c childConfig) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	plan, err := budget.Divide(512<<20, budget.Explicit{MemGraphBytes: c.MemBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: budget:", err)
		return 2
	}
	var owners *ownership.Map
	if c.Owners != "" {
		if owners, err = ownership.Parse(c.Owners, c.OwnPartitions); err != nil {
			fmt.Fprintln(os.Stderr, "child: owners:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var derive server.DeriveNames
	if c.DefaultNames {
		derive = server.DeriveNames{Group: true, Writes: true, Alerts: true, DeadLetters: true}
	}
	srv, err := server.Open(ctx, server.Config{Owners: owners, Adopt: c.Adopt, Derive: derive,
		Dir: c.Dir, Plan: plan, Kafka: kafkaconn.Options{Brokers: c.Brokers}, Topics: c.Topics, Group: c.Group, GroupInstanceID: c.Instance,
		Format: decode.FormatBinary, TopicFormats: c.Formats, DeadLetterTopic: c.DeadLetter, FlushInterval: c.FlushEvery,
		CheckpointInterval: c.CheckpointEvery, Reset: "earliest", Analytics: c.Analytics, AlertTopic: c.AlertTopic, Graph: c.Graph, AlertSessionTimeout: c.AlertFailover,
		WritesTopic: c.WritesTopic, WritesRetention: time.Hour, HistorySeqs: c.HistorySeqs,
		HTTP: server.HTTPConfig{Addr: cmp.Or(c.HTTPAddr, "127.0.0.1:0"), RequestTimeout: 10 * time.Second, PathBudget: 1 << 20}, Logger: log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	fmt.Printf("http %s\n", srv.HTTPAddr())
	var mu sync.Mutex
	report := func() {
		raw, _ := srv.Store().SourcePosition()
		mu.Lock()
		fmt.Printf("store %s\n", hex.EncodeToString(raw))
		mu.Unlock()
	}
	stopReports := reportEvery(report)
	err = srv.Run(ctx) // it closes the store: no report after
	stopReports()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: run:", err)
		return 1
	}
	return 0
}

// child is a running child process, seen from the parent.
type child struct {
	cmd    *exec.Cmd
	out    *lineWriter
	stderr *logBuffer
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

func startChild(t testing.TB, c childConfig, log *logBuffer) *child {
	t.Helper()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	ch := &child{out: &lineWriter{}, stderr: log, exited: make(chan struct{})}
	ch.cmd = exec.Command(childBinary(t, c.NoRace), "-test.run=^$")
	ch.cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	ch.cmd.Stdout = ch.out
	ch.cmd.Stderr = log
	fmt.Fprintf(log, "----- parent: starting child at %s\n", time.Now().Format("15:04:05.000"))
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.exited)
	}()
	return ch
}

// kill sends SIGKILL and waits for the child to be gone.
func (c *child) kill(t testing.TB) {
	t.Helper()
	fmt.Fprintf(c.stderr, "----- parent: SIGKILL at %s\n", time.Now().Format("15:04:05.000"))
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// term sends SIGTERM and returns the exit status.
func (c *child) term(t testing.TB) error {
	t.Helper()
	fmt.Fprintf(c.stderr, "----- parent: SIGTERM at %s\n", time.Now().Format("15:04:05.000"))
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return c.err
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.exited
		return fmt.Errorf("child did not exit within 60 s of SIGTERM")
	}
}

func (c *child) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// durable is the newest durable position the child reported.
func (c *child) durable() ingest.Position { return c.out.pos("durable") }

// storePos is the newest position the child saw recorded in its store.
func (c *child) storePos() ingest.Position { return c.out.pos("store") }

// httpAddr is the HTTP address a serve child reported ("" until then).
func (c *child) httpAddr() string {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	return c.out.last["http"]
}

// lineWriter keeps the newest "<name> <hex position>" line per name.
type lineWriter struct {
	mu      sync.Mutex
	partial []byte
	last    map[string]string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]string{}
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if name, val, ok := strings.Cut(line, " "); ok {
			w.last[name] = val
		}
	}
	return len(p), nil
}

func (w *lineWriter) pos(name string) ingest.Position {
	w.mu.Lock()
	v := w.last[name]
	w.mu.Unlock()
	raw, err := hex.DecodeString(v)
	if err != nil {
		return ingest.Position{}
	}
	p, err := ingest.DecodePosition(raw)
	if err != nil {
		return ingest.Position{}
	}
	return p
}
