package kafkatest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestReplicasConverge runs three serve replicas in replica mode: each a
// child process with a data directory and a consumer group of its own, so
// each consumes every partition of the topic into a complete store. One
// stream of upserts, re-weights, deletes and vertex deletes goes to three
// partitions. One replica is SIGKILLed mid-stream; while it is down the
// other two stay ready and answer neighbor queries for every vertex
// exactly as the oracle of the records produced so far (the producer
// paused, both caught up). It restarts, ready at once (static group
// membership, --group-instance-id), and the stream resumes. At the end
// every replica's bfs and wcc equal the references on the oracle of the
// whole stream, its store holds exactly that oracle, and its group has
// committed the end offsets (lag tools see each replica).
func TestReplicasConverge(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic, st, r := seededTopic(t, "replicas", 3, 1500, 2, 3)
	first, second := st.records(6000), st.records(6000)
	_, log := testLogger(t, "the replicas")
	dead, alertTopic := uniq("replicas-dead"), uniq("replicas-alerts")
	cfgs := make([]childConfig, 3)
	chs := make([]*child, 3)
	for i := range cfgs {
		cfgs[i] = childConfig{
			Brokers: addrs, Topics: []string{topic}, Group: uniq(fmt.Sprintf("replica-%d", i)),
			Instance:   fmt.Sprintf("replica-%d", i), // static membership: a restart takes its partitions back at once
			DeadLetter: dead, Dir: t.TempDir(), MemBytes: 256 << 10, FlushEvery: 200 * time.Millisecond, Serve: true,
			Analytics:  []analytics.Spec{{Type: "bfs", Root: "1"}, {Type: "wcc"}, {Type: "degree", Direction: "out", Threshold: 6}},
			AlertTopic: alertTopic,
		}
		chs[i] = startChild(t, cfgs[i], log)
	}
	t.Cleanup(func() {
		for _, ch := range chs {
			if ch.alive() {
				ch.kill(t)
			}
		}
	})

	prod := startProducing(t, first, 100, 40*time.Millisecond)
	time.Sleep(time.Duration(800+r.IntN(1500)) * time.Millisecond)
	if !chs[1].alive() {
		t.Fatalf("replica 1 exited before the kill: %v\n%s", chs[1].err, log.tail(30))
	}
	if prod.produced.Load() == int64(len(first)) {
		t.Fatal("the stream was all produced before the kill: the kill tests nothing (make it longer)")
	}
	chs[1].kill(t)
	t.Logf("replica 1 killed after %d of %d records", prod.produced.Load(), len(first))
	if err := <-prod.done; err != nil {
		t.Fatal(err)
	}

	// The other two: caught up, ready, and answering as the oracle.
	end := endOffsets(t, adm, topic)
	want := oracleOf(first, nil)
	for _, i := range []int{0, 2} {
		if !waitFor(90*time.Second, func() bool { return !chs[i].alive() || covers(chs[i].storePos(), end) }) {
			t.Fatalf("replica %d did not catch up: store at %s, want %s\n%s", i, fmtPos(chs[i].storePos()), fmtPos(end), log.tail(30))
		}
		base := "http://" + chs[i].httpAddr()
		var ready api.StatusResponse
		if code, body := httpGet(base + "/readyz"); code != 200 || json.Unmarshal(body, &ready) != nil || ready.Behind == nil {
			t.Fatalf("replica %d, its peer down: /readyz %d %s (want 200 saying how far behind it is)", i, code, body)
		}
		if d := diff(want, neighborsOf(t, base, st)); d != "" {
			t.Fatalf("replica %d, its peer down: its answers differ from the oracle: %s", i, d)
		}
	}

	// Static membership: the restart takes its partitions back at once,
	// not after the killed member's session timeout (45 s).
	restarted := time.Now()
	chs[1] = startChild(t, cfgs[1], log)
	if !waitFor(20*time.Second, func() bool {
		code, _ := httpGet("http://" + chs[1].httpAddr() + "/readyz")
		return !chs[1].alive() || code == 200
	}) || !chs[1].alive() {
		t.Fatalf("replica 1 not ready 20 s after its restart (group instance id %s)\n%s", cfgs[1].Instance, log.tail(30))
	}
	t.Logf("replica 1 ready %v after its restart", time.Since(restarted).Round(time.Millisecond))
	prod = startProducing(t, second, 100, 40*time.Millisecond)
	if err := <-prod.done; err != nil {
		t.Fatal(err)
	}
	end = endOffsets(t, adm, topic)
	for i, ch := range chs {
		if !waitFor(90*time.Second, func() bool { return !ch.alive() || covers(ch.storePos(), end) }) {
			t.Fatalf("replica %d did not catch up: store at %s, want %s\n%s", i, fmtPos(ch.storePos()), fmtPos(end), log.tail(30))
		}
	}
	// Every replica runs the analytics too: bfs and wcc at its last seq
	// equal the references on the oracle.
	want = oracleOf(append(slices.Clone(first), second...), nil)
	t.Logf("oracle: %d edges", len(want))
	for _, ch := range chs {
		base := "http://" + ch.httpAddr()
		seq := lastSeqOf(t, base)
		waitAnalytic(t, base, "bfs", seq)
		waitAnalytic(t, base, "wcc", seq)
		checkAnalyticResults(t, base, want, 1, false)
	}
	// Alerts: every replica raises them (the degree monitor's crossings
	// follow each vertex's records, all in one partition: the same on
	// every replica), one of them produces them, whichever the group
	// chose (replica 1, killed mid-stream, may have been it): the topic
	// holds each alert replica 0 raised, once, and no other.
	raised := make([]uint64, len(chs))
	var ref map[string]bool
	for i, ch := range chs {
		var al api.AlertsResponse
		if !getJSON("http://"+ch.httpAddr()+"/v1/alerts?limit=10000", &al) {
			t.Fatalf("replica %d: GET /v1/alerts failed", i)
		}
		raised[i] = al.Total
		if i == 0 {
			ref = map[string]bool{}
			for _, a := range al.Alerts {
				ref[a.ID] = true
			}
		}
	}
	if raised[0] == 0 || raised[2] == 0 {
		t.Fatalf("alerts raised by the replicas: %v; the test needs some (lower the degree threshold)", raised)
	}
	if len(ref) != int(raised[0]) {
		t.Fatalf("replica 0 lists %d distinct alerts of %d raised", len(ref), raised[0])
	}
	ids := alertIDs(t, alertTopic, int(raised[0]))
	produced := 0
	for id, n := range ids {
		produced += n
		if n != 1 || !ref[id] {
			t.Errorf("alert %s is in the alert topic %d times (raised by replica 0: %v)", id, n, ref[id])
		}
	}
	if produced != int(raised[0]) || len(ids) != produced {
		t.Errorf("the alert topic holds %d alerts (%d IDs); replica 0 raised %d, the others %d and %d", produced, len(ids), raised[0], raised[1], raised[2])
	}
	t.Logf("alerts raised: %v; produced: %d", raised, produced)
	for i, ch := range chs {
		if err := ch.term(t); err != nil {
			t.Fatalf("replica %d: %v\n%s", i, err, log.tail(30))
		}
	}
	for i, c := range cfgs {
		if df := diff(want, storeOf(t, c.Dir)); df != "" {
			t.Errorf("replica %d: its store differs from the oracle: %s", i, df)
		}
		committed := committedOffsets(t, adm, c.Group)
		if !samePosition(restrict(committed, end), end) {
			t.Errorf("replica %d: group %s committed %s, want %s", i, c.Group, fmtPos(committed), fmtPos(end))
		}
	}
}

// neighborsOf reads every vertex of st's out-edges through the API at
// base (GET /v1/vertices/{v}/neighbors, page by page) into an oracle.
func neighborsOf(t *testing.T, base string, st *stream) oracle {
	t.Helper()
	got := oracle{}
	for i := range st.vertices {
		src := st.vertex(i)
		after := ""
		for {
			u := fmt.Sprintf("%s/v1/vertices/%d/neighbors?limit=500%s", base, src.id, after)
			code, body := httpGet(u)
			if code == 404 {
				break // never seen
			}
			var page api.NeighborsResponse
			if code != 200 || json.Unmarshal(body, &page) != nil {
				t.Fatalf("GET %s: %d %s", u, code, body)
			}
			for _, n := range page.Neighbors {
				got[edgeKey{src, vid{id: n.ID}}] = n.Weight
			}
			if page.NextAfter == nil {
				break
			}
			after = "&after=" + url.QueryEscape(fmt.Sprint(*page.NextAfter))
			if page.NextAsOfSeq != nil {
				after += fmt.Sprintf("&as_of_seq=%d", *page.NextAsOfSeq)
			}
		}
	}
	return got
}
