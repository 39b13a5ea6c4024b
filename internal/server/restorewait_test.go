package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// freePort is a loopback port nobody listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// getStatus GETs url and returns the status and body (0 when nothing
// answers).
func getStatus(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCheckpointRestoreWaitsForTheBrokers: serve with a fanin monitor on
// a broker (kfake, its data on disk) ingests transfers and stops,
// checkpointing the monitor. The broker is then down when serve starts
// again: Open waits for it instead of computing the analytics from the
// store, /readyz answers 503 saying why and since when, other paths
// answer 503 too, /healthz 200, and the log says so once. The broker
// comes back on the same port: Open returns, the monitor is restored and
// its window holds every transfer (the oracle: the upserts into each
// account, all within the window). With the broker down for longer than
// --checkpoint-restore-wait, Open fails, leaving the checkpoint as it
// was. A restore needs the brokers when the checkpoint is behind the
// store (as after a SIGKILL: where the topics start is asked, and the
// replay brings the monitor forward); one at the store's position needs
// none, alert topic or not (the alert sink's state is in the checkpoint,
// and it reads the topic once started): Open returns with the broker
// down, the monitor restored whole.
func TestCheckpointRestoreWaitsForTheBrokers(t *testing.T) {
	t.Run("alert topic, at the store", func(t *testing.T) { testRestoreWait(t, "alerts", false) })
	t.Run("checkpoint behind the store", func(t *testing.T) { testRestoreWait(t, "alerts", true) })
}

func testRestoreWait(t *testing.T, alertTopic string, behind bool) {
	port := freePort(t)
	bdir := t.TempDir()
	startBroker := func() *kfake.Cluster {
		t.Helper()
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(bdir), kfake.ClusterID("restore-wait"),
			kfake.SeedTopics(1, "edges", "alerts", "dlq"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	broker := startBroker()
	defer func() { broker.Close() }()

	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Kafka = kafkaconn.Options{Brokers: broker.ListenAddrs()}
	cfg.AlertTopic = alertTopic
	cfg.CheckpointInterval = time.Hour // only the stop checkpoints
	cfg.CheckpointRestoreWait = 2 * time.Minute
	const threshold = 4
	cfg.Analytics = []analytics.Spec{{Type: "fanin", Threshold: threshold, WindowEdges: 10000}}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg.HTTP = HTTPConfig{Addr: httpAddr, RequestTimeout: time.Second, PathBudget: 1000}
	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))

	// 1. Transfers into accounts 1..12, account a taking a of them (twice
	// with a checkpoint behind the store).
	want := map[uint64]float64{}
	transfers := func(round uint64) []*kgo.Record {
		var recs []*kgo.Record
		for a := uint64(1); a <= 12; a++ {
			for i := uint64(0); i < a; i++ {
				e := decode.Edge{Op: decode.OpUpsert, Src: 1000*round + 100 + 13*a + i, Dst: a, Weight: 1}
				recs = append(recs, &kgo.Record{Topic: "edges", Value: decode.AppendBinary(nil, e)})
				want[a]++
			}
		}
		return recs
	}
	fanin := func(srv *Server) (analytics.Result, analytics.MonitorSummary) {
		res, err := srv.Analytics().Result("fanin")
		if err != nil {
			t.Fatal(err)
		}
		sum, _ := res.Summary.(analytics.MonitorSummary)
		return res, sum
	}
	// windowDiff is "" when srv's fanin window holds want, else the first
	// difference.
	windowDiff := func(srv *Server) string {
		for a, n := range want {
			got, ok, err := srv.Analytics().Vertex("fanin", a)
			if err != nil {
				return err.Error()
			}
			if vv, _ := got.(analytics.VertexValue); !ok || vv.Value != n {
				return fmt.Sprintf("account %d: the window holds %v (found %v), want %v upserts", a, got, ok, n)
			}
		}
		return ""
	}
	// ingest runs serve until its monitor has taken in recs, then stops
	// it (which checkpoints); it returns the monitor's summary then.
	ingest := func(recs []*kgo.Record) analytics.MonitorSummary {
		t.Helper()
		srv, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		prod, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		prod.Close()
		if !waitFor(t, func() bool { return windowDiff(srv) == "" }) {
			t.Fatalf("the fanin monitor did not take in the %d transfers: %s", len(recs), windowDiff(srv))
		}
		_, sum := fanin(srv)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return sum
	}
	before := ingest(transfers(1))
	var old []byte // with behind: the first run's checkpoint
	if behind {
		// A checkpoint older than the store, as a SIGKILL after the
		// second run's flush would leave.
		var err error
		if old, err = os.ReadFile(datadir.CheckpointPath(dir)); err != nil {
			t.Fatal(err)
		}
		before = ingest(transfers(2))
		if err := os.WriteFile(datadir.CheckpointPath(dir), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// 2. The broker goes down; serve starts again meanwhile.
	broker.Close()
	type opened struct {
		srv *Server
		err error
	}
	if !behind {
		// Nothing to ask the brokers: Open returns, restored.
		srv, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatalf("Open with the broker down and a checkpoint at the store: %v\n%s", err, logs.String())
		}
		defer srv.Close()
		if res, _ := fanin(srv); !res.Restored {
			t.Errorf("the fanin monitor was not restored from its checkpoint: %+v\n%s", res, logs.String())
		}
		if d := windowDiff(srv); d != "" {
			t.Errorf("restored with the broker down: %s", d)
		}
		if strings.Contains(logs.String(), "checkpoint is not used") || strings.Contains(logs.String(), "waiting for the Kafka brokers") {
			t.Errorf("the restore dropped the checkpoint or waited\n%s", logs.String())
		}
		return
	}
	openDone := make(chan opened, 1)
	go func() {
		s, err := Open(context.Background(), cfg)
		openDone <- opened{s, err}
	}()
	var body string
	if !waitFor(t, func() bool {
		var code int
		code, body = getStatus("http://" + httpAddr + "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "waiting since")
	}) {
		t.Fatalf("/readyz did not say serve waits for the brokers: %q\n%s", body, logs.String())
	}
	for _, part := range []string{"for the Kafka brokers", "to check the analytics' checkpoint", "--checkpoint-restore-wait"} {
		if !strings.Contains(body, part) {
			t.Errorf("/readyz does not say %q: %s", part, body)
		}
	}
	time.Sleep(3 * time.Second) // several tries of the brokers
	if code, b := getStatus("http://" + httpAddr + "/v1/stats"); code != http.StatusServiceUnavailable || !strings.Contains(b, "waiting since") {
		t.Errorf("/v1/stats while waiting: %d %s", code, b)
	}
	if code, b := getStatus("http://" + httpAddr + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while waiting: %d %s", code, b)
	}
	select {
	case o := <-openDone:
		t.Fatalf("Open returned while the broker was down: %v\n%s", o.err, logs.String())
	default:
	}

	// 3. The broker comes back: Open finishes, the monitor is restored.
	broker = startBroker()
	var o opened
	select {
	case o = <-openDone:
	case <-time.After(60 * time.Second):
		t.Fatalf("Open did not return after the broker came back\n%s", logs.String())
	}
	if o.err != nil {
		t.Fatalf("Open: %v\n%s", o.err, logs.String())
	}
	srv := o.srv
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	if res, _ := fanin(srv); !res.Restored {
		t.Errorf("the fanin monitor was not restored from its checkpoint: %+v\n%s", res, logs.String())
	}
	if behind && !strings.Contains(logs.String(), "replay=true") {
		t.Errorf("no replay from the checkpoint\n%s", logs.String())
	}
	// (A replay brings it forward from the checkpoint.)
	if !waitFor(t, func() bool { return windowDiff(srv) == "" }) {
		t.Errorf("after the restart: %s", windowDiff(srv))
	}
	_, after := fanin(srv)
	var above []analytics.VertexValue
	for a, n := range want {
		if n > threshold {
			above = append(above, analytics.VertexValue{Vertex: a, Value: n})
		}
	}
	slices.SortFunc(above, func(x, y analytics.VertexValue) int { return int(y.Value - x.Value) })
	a, _ := json.Marshal(after.Top)
	b, _ := json.Marshal(above[:min(10, len(above))])
	if after.Above != len(above) || string(a) != string(b) {
		t.Errorf("after the restart the monitor has %d above (%s), want %d (%s); before the restart: %+v", after.Above, a, len(above), b, before)
	}
	if n := strings.Count(logs.String(), "waiting for the Kafka brokers to check the analytics' checkpoint"); n != 1 {
		t.Errorf("the wait was logged %d times, want once\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "checkpoint is not used") {
		t.Errorf("the checkpoint was dropped\n%s", logs.String())
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// 4. Past --checkpoint-restore-wait Open fails, and the checkpoint
	// stays as it was for the next start.
	broker.Close()
	if behind { // the stop checkpointed at the store's position
		if err := os.WriteFile(datadir.CheckpointPath(dir), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ckpt, err := os.ReadFile(datadir.CheckpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	cfg.CheckpointRestoreWait = time.Second
	t0 := time.Now()
	if s, err := Open(context.Background(), cfg); err == nil {
		s.Close()
		t.Fatal("Open succeeded with the broker down past --checkpoint-restore-wait")
	} else if !strings.Contains(err.Error(), "did not answer within --checkpoint-restore-wait 1s") {
		t.Errorf("Open's error: %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("Open gave up after %v, with a limit of 1s", d)
	}
	if now, err := os.ReadFile(datadir.CheckpointPath(dir)); err != nil || !bytes.Equal(now, ckpt) {
		t.Errorf("the checkpoint changed (%v)", err)
	}
}

// TestBrokersDidNotAnswer: which failures of a restore are waited out
// (the brokers may answer later) and which make the analytics compute
// from the store at once (the checkpoint is unusable).
func TestBrokersDidNotAnswer(t *testing.T) {
	dial := errors.New("unable to dial: dial tcp 127.0.0.1:9092: connect: connection refused")
	for _, c := range []struct {
		err  error
		wait bool
	}{
		{&brokersError{dial}, true},
		{fmt.Errorf("listing: %w", context.DeadlineExceeded), true},
		{&brokersError{fmt.Errorf("listing: %w", kerr.LeaderNotAvailable)}, true},
		// A sink's state that cannot be read is the checkpoint's fault.
		{&analytics.ResumeError{Err: errors.New("alerts: the checkpoint's alert state: unexpected end of JSON input")}, false},
		{errors.New("the records of edges/0 after the checkpoint (from offset 3) are gone from the brokers (retention): the log starts at 9"), false},
		{errors.New("the checkpoint is at seq 9, ahead of the store (seq 3)"), false},
		{analytics.ErrNoCheckpoint, false},
		{nil, false},
	} {
		if got := brokersDidNotAnswer(c.err); got != c.wait {
			t.Errorf("%v: waited out %v, want %v", c.err, got, c.wait)
		}
	}
}
