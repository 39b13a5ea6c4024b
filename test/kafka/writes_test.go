package kafkatest

import (
	"context"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestWritesSurviveCrashes runs serve in a child process with a writes
// topic on the real broker (serve creates it), while clients race each
// other with conditional batches through POST /v1/batches, each with an
// idempotency key, resending a request that got no answer until it gets
// one. The parent SIGKILLs serve three times mid-stream and restarts it;
// each restart replays from the analytics' checkpoint, behind the store.
// Replaying the writes topic serially on a map (the oracle) must then
// give every answer any client got (an acknowledged write is never lost,
// a refused one never applied, a retried key applied once, at its first
// record) and the final store's graph.
func TestWritesSurviveCrashes(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	edges := uniq("wr-edges")
	createTopic(t, edges, 1)
	wt := uniq("wr-writes")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	_, log := testLogger(t, "the serve children")
	cfg := childConfig{Brokers: addrs, Topics: []string{edges}, DeadLetter: uniq("wr-dead"), Dir: dir, MemBytes: 256 << 10,
		FlushEvery: 300 * time.Millisecond, Serve: true, WritesTopic: wt, HTTPAddr: addr,
		// A checkpointed analytic: a restart replays from its checkpoint,
		// behind the store, so writes are replayed on a state ahead of
		// their own (their logged outcomes must be repeated).
		Analytics: []analytics.Spec{{Type: "wcc"}}, CheckpointEvery: time.Second}
	c, err := api.NewClient("http://"+addr, api.ClientOptions{Timeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var answers []writestest.Answer
	var unanswered int
	var finished atomic.Bool
	clientsDone := make(chan struct{})
	go func() {
		defer close(clientsDone)
		answers, unanswered = writestest.RunClients(ctx, c, 3, 1000, 8, seed)
		finished.Store(true)
	}()
	var ch *child
	for k := 1; k <= 3; k++ {
		cfg.Group = uniq("wr-group") // a killed child's membership must not hold the partitions
		ch = startChild(t, cfg, log)
		time.Sleep(time.Duration(700+r.IntN(1000)) * time.Millisecond)
		if !ch.alive() {
			t.Fatalf("child exited before kill %d: %v\n%s", k, ch.err, log.tail(30))
		}
		if finished.Load() {
			t.Fatalf("the clients finished before kill %d: the kills test nothing (make them send more)", k)
		}
		ch.kill(t)
		t.Logf("kill %d", k)
	}
	cfg.Group = uniq("wr-group")
	ch = startChild(t, cfg, log)
	<-clientsDone
	if ctx.Err() != nil {
		t.Fatalf("the clients did not finish: %v\n%s", ctx.Err(), log.tail(30))
	}
	if err := ch.term(t); err != nil {
		t.Fatalf("the last child: %v\n%s", err, log.tail(30))
	}
	t.Logf("%d answers, %d sends without an answer (the kills)", len(answers), unanswered)
	if unanswered == 0 {
		t.Error("no send went unanswered: no kill landed while clients waited")
	}
	recs, err := writestest.ReadTopic(ctx, addrs, wt)
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := writestest.Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range writestest.Check(replayed, answers) {
		t.Error(p)
	}
	got := storeOf(t, dir)
	want := oracle{}
	for e, w := range replayed.Graph {
		want[edgeKey{vid{id: e.Src}, vid{id: e.Dst}}] = w
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("the store after the crashes differs from the writes topic replayed (%d records):\n%s", len(recs), d)
	}
}
