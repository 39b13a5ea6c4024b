package kafkatest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestCheckpointRestoreWaitsForTheBroker runs serve in a child process
// with a fanin monitor and an alert topic, lets it take in transfers into
// a dozen accounts, in two runs each stopped by SIGTERM (which
// checkpoints the monitor); the first run's checkpoint is then put back,
// behind the store, as a SIGKILL after the second run's flushes leaves
// it (a checkpoint at the store's position needs no broker to restore).
// With the broker stopped (kafka.sh stop), serve starts again: it waits
// for the broker (where the topics start, to replay from the checkpoint)
// instead of computing the monitor from the store, /readyz answers 503
// saying so and since when, and the log says so once. The broker starts
// again on the same ports and data: serve finishes starting, the monitor
// says "restored": true, and its window holds every transfer (the oracle:
// the upserts into each account).
func TestCheckpointRestoreWaitsForTheBroker(t *testing.T) {
	addrs := needBroker(t)
	if !broker.own {
		t.Skipf("the broker comes from %s: not ours to stop", brokersEnv)
	}
	topic, alertTopic := uniq("restorewait"), uniq("restorewait-alerts")
	createTopic(t, topic, 2)
	createTopic(t, alertTopic, 1)
	const threshold, accounts = 5, 12
	want := map[uint64]float64{}
	var recs []*record
	for a := uint64(1); a <= accounts; a++ {
		for i := uint64(0); i < a; i++ {
			ev := event{op: decode.OpUpsert, src: vid{id: 1000 + 100*a + i}, dst: vid{id: a}, w: 1, hasW: true}
			recs = append(recs, &record{topic: topic, part: int32(a % 2), value: encode(decode.FormatBinary, []event{ev}), events: []event{ev}, offset: -1})
			want[a]++
		}
	}
	half := len(recs) / 2
	if err := produce(context.Background(), newProducer(t), recs[:half]); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := l.Addr().String()
	l.Close()
	base := "http://" + httpAddr
	_, log := testLogger(t, "the serve children")
	cfg := childConfig{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("restorewait-group"), DeadLetter: uniq("restorewait-dead"), Dir: t.TempDir(),
		MemBytes: 256 << 10, FlushEvery: 100 * time.Millisecond, Serve: true, CheckpointEvery: time.Hour, AlertTopic: alertTopic, HTTPAddr: httpAddr,
		Analytics: []analytics.Spec{{Type: "fanin", Threshold: threshold, WindowEdges: 10000}},
	}
	// windowDiff is "" when the fanin window of the serve at base holds
	// want, else the first difference.
	windowDiff := func(want map[uint64]float64) string {
		for a, n := range want {
			var res struct {
				Result struct {
					Value float64 `json:"value"`
				} `json:"result"`
			}
			if !getJSON(fmt.Sprintf("%s/v1/analytics/fanin/vertices/%d", base, a), &res) || res.Result.Value != n {
				return fmt.Sprintf("account %d: %+v, want %v upserts", a, res, n)
			}
		}
		return ""
	}

	// run ingests until the window holds w, then stops (a checkpoint).
	var ch *child
	run := func(w map[uint64]float64) {
		t.Helper()
		before := log.count(logCheckpointed)
		ch = startChild(t, cfg, log)
		t.Cleanup(func() {
			if ch.alive() {
				ch.kill(t)
			}
		})
		if !waitFor(60*time.Second, func() bool { return !ch.alive() || windowDiff(w) == "" }) {
			t.Fatalf("the fanin monitor did not take in the transfers: %s\n%s", windowDiff(w), log.tail(30))
		}
		if err := ch.term(t); err != nil {
			t.Fatalf("a child: %v\n%s", err, log.tail(30))
		}
		if log.count(logCheckpointed) == before {
			t.Fatalf("no checkpoint at the stop\n%s", log.tail(30))
		}
	}
	first := map[uint64]float64{}
	for _, r := range recs[:half] {
		first[r.events[0].dst.id]++
	}
	run(first)
	ckpt := filepath.Join(cfg.Dir, "analytics.ckpt")
	old, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if err := produce(context.Background(), newProducer(t), recs[half:]); err != nil {
		t.Fatal(err)
	}
	run(want)
	if err := os.WriteFile(ckpt, old, 0o644); err != nil { // behind the store
		t.Fatal(err)
	}

	// The broker stops; serve starts meanwhile.
	restarted := true
	t.Cleanup(func() {
		if !restarted {
			if out, err := startBroker(broker.port); err != nil {
				t.Errorf("restarting the broker after the test: %v\n%s", err, out)
			}
		}
	})
	restarted = false
	if out, err := stopBroker(); err != nil {
		t.Fatalf("stopping the broker: %v\n%s", err, out)
	}
	stopped := time.Now()
	ch = startChild(t, cfg, log)
	var body string
	if !waitFor(60*time.Second, func() bool {
		code, b := httpGet(base + "/readyz")
		body = string(b)
		return !ch.alive() || code == 503 && strings.Contains(body, "waiting since")
	}) || !ch.alive() {
		t.Fatalf("/readyz did not say serve waits for the broker: %q\n%s", body, log.tail(30))
	}
	for _, part := range []string{"for the Kafka brokers", "to check the analytics' checkpoint", "--checkpoint-restore-wait"} {
		if !strings.Contains(body, part) {
			t.Errorf("/readyz does not say %q: %s", part, body)
		}
	}
	if code, _ := httpGet(base + "/healthz"); code != 200 {
		t.Errorf("/healthz while waiting: %d", code)
	}
	time.Sleep(3 * time.Second) // several tries
	if out, err := startBroker(broker.port); err != nil {
		t.Fatalf("restarting the broker: %v\n%s", err, out)
	}
	restarted = true
	t.Logf("the broker was down for %v", time.Since(stopped).Round(time.Millisecond))

	var res analyticResult
	if !waitFor(90*time.Second, func() bool {
		return !ch.alive() || getJSON(base+"/v1/analytics/fanin", &res) && res.Ready
	}) || !ch.alive() {
		t.Fatalf("serve did not start after the broker came back: %+v\n%s", res, log.tail(40))
	}
	if !res.Restored {
		t.Errorf("the fanin monitor was not restored: %+v\n%s", res, log.tail(40))
	}
	// The replay from the checkpoint brings the window forward.
	if !waitFor(60*time.Second, func() bool { return windowDiff(want) == "" }) {
		t.Errorf("after the restart: %s", windowDiff(want))
	}
	if err := ch.term(t); err != nil {
		t.Errorf("the second child: %v", err)
	}
	if n := log.count("waiting for the Kafka brokers to check the analytics' checkpoint"); n != 1 {
		t.Errorf("the wait was logged %d times, want once\n%s", n, log.tail(40))
	}
	if log.contains("checkpoint is not used") {
		t.Errorf("the checkpoint was dropped\n%s", log.tail(40))
	}
}
