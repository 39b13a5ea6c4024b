package kafkatest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestAlertProductionFailsOver runs two serve replicas of one graph (A and
// B: a data directory and a group each, one alert topic) and a reference
// instance alone (graph "ref", an alert topic of its own), with a degree
// and a fan-in monitor, on a stream of one partition (so that every
// instance raises the same alerts: see docs/concepts.md, Order). A starts first
// and takes production; mid-stream it is SIGKILLed, and B must take over
// within the failover timeout. At the end the replicas' alert topic must
// hold each alert of the reference's topic once, and no other.
func TestAlertProductionFailsOver(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	topic, st, r := seededTopic(t, "failover", 1, 600, 2, 7)
	recs := st.records(9000)
	alertTopic, refTopic, dead := uniq("failover-alerts"), uniq("failover-ref-alerts"), uniq("failover-dead")
	specs := []analytics.Spec{{Type: "degree", Direction: "out", Threshold: 8}, {Type: "fanin", Threshold: 6, WindowEdges: 300}}
	const failover = 6 * time.Second
	cfg := func(name, graph, alertTopic string) childConfig {
		return childConfig{Brokers: addrs, Topics: []string{topic}, Group: uniq("failover-" + name), DeadLetter: dead,
			Dir: t.TempDir(), MemBytes: 256 << 10, FlushEvery: 200 * time.Millisecond, Serve: true, Analytics: specs,
			CheckpointEvery: time.Second, AlertTopic: alertTopic, Graph: graph, AlertFailover: failover}
	}
	_, logA := testLogger(t, "replica A")
	_, logB := testLogger(t, "replica B")
	_, logRef := testLogger(t, "the reference")
	const leads = "this replica produces the alerts now"
	a := startChild(t, cfg("a", "", alertTopic), logA)
	t.Cleanup(func() {
		if a.alive() {
			a.kill(t)
		}
	})
	if !waitFor(30*time.Second, func() bool { return logA.contains(leads) }) {
		t.Fatalf("A, the only replica, does not produce the alerts\n%s", logA.tail(30))
	}
	b := startChild(t, cfg("b", "", alertTopic), logB)
	ref := startChild(t, cfg("ref", "ref", refTopic), logRef)
	t.Cleanup(func() {
		for _, ch := range []*child{b, ref} {
			if ch.alive() {
				ch.kill(t)
			}
		}
	})

	prod := startProducing(t, recs, 60, 30*time.Millisecond)
	time.Sleep(time.Duration(1500+r.IntN(1500)) * time.Millisecond)
	if logB.contains(leads) {
		t.Fatalf("B produces the alerts while A is alive\n%s", logB.tail(20))
	}
	if !a.alive() || prod.produced.Load() == int64(len(recs)) {
		t.Fatalf("A exited, or the stream ended, before the kill: %v\n%s", a.err, logA.tail(30))
	}
	a.kill(t)
	killed := time.Now()
	if !waitFor(4*failover, func() bool { return logB.contains("took over the alert producer") }) {
		t.Fatalf("B did not take over within %v of A's death\n%s", 4*failover, logB.tail(30))
	}
	took := time.Since(killed)
	if err := <-prod.done; err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, newAdmin(t), topic)
	for _, ch := range []*child{b, ref} {
		if !waitFor(90*time.Second, func() bool { return covers(ch.storePos(), end) }) {
			t.Fatalf("an instance did not catch up: store at %s, want %s", fmtPos(ch.storePos()), fmtPos(end))
		}
		base := "http://" + ch.httpAddr()
		seq := lastSeqOf(t, base)
		for _, sp := range []string{"degree", "fanin"} {
			waitAnalytic(t, base, sp, seq)
		}
	}
	want := alertIDs(t, refTopic, 0)
	if len(want) < 20 {
		t.Fatalf("the reference raised %d alerts; the test needs more (lower the thresholds)", len(want))
	}
	got := alertIDs(t, alertTopic, len(want))
	var missing, extra, twice []string
	for id, n := range got {
		switch {
		case want[id] == 0:
			extra = append(extra, id)
		case n > 1:
			twice = append(twice, id)
		}
	}
	for id := range want {
		if got[id] == 0 {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	if len(missing)+len(extra)+len(twice) > 0 {
		t.Fatalf("the replicas' alert topic against the reference's %d alerts: %d missing %v, %d extra %v, %d more than once %v",
			len(want), len(missing), missing, len(extra), extra, len(twice), twice)
	}
	t.Logf("%d alerts, each once; B took over %.1fs after A's death (failover timeout %v)", len(want), took.Seconds(), failover)
	for _, ch := range []*child{b, ref} {
		if err := ch.term(t); err != nil {
			t.Fatal(err)
		}
	}
}

// alertIDs reads an alert topic (read_committed) and counts each alert ID;
// n is how many alerts to wait for (0: whatever comes within 3s of quiet).
func alertIDs(t *testing.T, topic string, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, rec := range consumeAll(t, topic, n, 3*time.Second, 60*time.Second) {
		id := kafkaconn.Header(rec, alerts.HeaderID)
		if id == "" || !strings.Contains(string(rec.Value), `"id":"`+id+`"`) {
			t.Fatalf("alert record without a matching ID header: %s", fmt.Sprint(rec.Headers))
		}
		out[id]++
	}
	return out
}
