package kafkatest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// lastServeRun starts the last serve child (a group of its own), waits
// until its store covers end, and returns it, its HTTP base URL and its
// store's newest seq.
func lastServeRun(t *testing.T, cfg childConfig, log *logBuffer, end ingest.Position) (*child, string, uint64) {
	t.Helper()
	cfg.Group = uniq(cfg.Group)
	ch := startChild(t, cfg, log)
	t.Cleanup(func() {
		if ch.alive() {
			ch.kill(t)
		}
	})
	if !waitFor(90*time.Second, func() bool { return !ch.alive() || covers(ch.storePos(), end) }) {
		t.Fatalf("the last child did not catch up: store at %s, want %s\n%s", fmtPos(ch.storePos()), fmtPos(end), log.tail(30))
	}
	base := "http://" + ch.httpAddr()
	// The store covers the end before a replay for a restored checkpoint
	// (of records it holds already) has applied them all again, each
	// batch a new seq.
	seq, behind, ok := appliedSeqOf(t, base, 90*time.Second)
	if !ok {
		t.Fatalf("the last child's replay did not end: behind %v\n%s", behind, log.tail(30))
	}
	return ch, base, seq
}

// appliedSeqOf is the newest seq of the store of the serve at base once
// its ingester has applied every record it has seen the end of (/readyz:
// behind 0), waiting up to d for it; false (with the last behind known)
// when it did not. A replay after a restore applies records the store
// holds again, each batch a new seq, and counts them
// (graphtide_ingest_records_total) again: the store's seq is the last
// one only once nothing is behind.
func appliedSeqOf(t *testing.T, base string, d time.Duration) (uint64, *int64, bool) {
	t.Helper()
	var ready struct {
		Behind *int64 `json:"behind"`
	}
	if !waitFor(d, func() bool { return getJSON(base+"/readyz", &ready) && ready.Behind != nil && *ready.Behind == 0 }) {
		return 0, ready.Behind, false
	}
	return lastSeqOf(t, base), ready.Behind, true
}

// lastSeqOf is the newest seq of the store of the serve at base.
func lastSeqOf(t *testing.T, base string) uint64 {
	t.Helper()
	var stats struct {
		Store struct {
			LastSeq uint64 `json:"last_seq"`
		} `json:"store"`
	}
	if !getJSON(base+"/v1/stats", &stats) {
		t.Fatal("GET /v1/stats failed")
	}
	return stats.Store.LastSeq
}

// seededTopic creates a topic named after prefix and a random binary
// stream of vertices vertices for its partitions, seeded by the clock
// (logged); r is a generator of the same seed (salted) for the test's own
// choices.
func seededTopic(t *testing.T, prefix string, partitions, vertices, maxPerRec int, salt uint64) (topic string, st *stream, r *rand.Rand) {
	t.Helper()
	topic = uniq(prefix)
	createTopic(t, topic, partitions)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return topic, newStream(topic, partitions, decode.FormatBinary, "", 0, vertices, maxPerRec, seed), rand.New(rand.NewPCG(seed, salt))
}

// TestAnalyticsResumeAcrossCrashes runs serve in a child process with bfs,
// wcc, sssp and pagerank checkpointed every second, SIGKILLs it three
// times (each after it has checkpointed once) while a producer keeps
// producing upserts, deletes, re-inserts and vertex deletes, restarts it
// each time, and at the end
// lets it catch up. Every restart after a checkpoint resumes the analytics
// from it (the records after it replayed through the store); the last
// run's analytics must say so, and their results must equal the reference
// algorithms on the oracle of the whole stream.
func TestAnalyticsResumeAcrossCrashes(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic, st, r := seededTopic(t, "ckpt", 2, 1500, 1, 2)
	recs := st.records(14000)
	const root = 1
	specs := []analytics.Spec{{Type: "bfs", Root: fmt.Sprint(root)}, {Type: "wcc"}, {Type: "sssp", Root: fmt.Sprint(root)},
		{Type: "pagerank", Tolerance: 1e-12, MaxIterations: 2000}}
	dir := t.TempDir()
	_, log := testLogger(t, "the serve children")
	cfg := childConfig{
		Brokers: addrs, Topics: []string{topic}, DeadLetter: uniq("ckpt-dead"), Dir: dir,
		MemBytes: 256 << 10, FlushEvery: 200 * time.Millisecond, Serve: true, Analytics: specs, CheckpointEvery: time.Second,
		NoRace: true, // a test of volume (childBinary)
	}
	killThriceWhileProducing(t, cfg, log, recs, 100, r, 1500*time.Millisecond, "ckpt-group")
	cfg.Group = "ckpt-group"
	ch, base, lastSeq := lastServeRun(t, cfg, log, endOffsets(t, adm, topic))
	for _, sp := range specs {
		res := waitAnalytic(t, base, sp.Type, lastSeq)
		if !res.Restored {
			t.Errorf("%s was not restored from the checkpoint in the last run: %+v\n%s", sp.Type, res, log.tail(40))
		}
		t.Logf("%s: %+v", sp.Type, res)
	}
	checkAnalyticResults(t, base, oracleOf(recs, nil), root, true)
	if err := ch.term(t); err != nil {
		t.Fatalf("the last child: %v", err)
	}
	if !log.contains("analytics restored from their checkpoint") {
		t.Fatal("no run restored the analytics")
	}
	t.Logf("%d runs restored the analytics from a checkpoint", log.count("analytics restored from their checkpoint"))
}

// logCheckpointed is the line serve logs after each checkpoint of its
// analytics (internal/server's checkpoint.go).
const logCheckpointed = "analytics checkpointed"

// killThriceWhileProducing produces recs in four parts (chunk records
// every 60 ms) and runs three serve children of cfg, each killed by
// killAfterCheckpoint after a random delay below maxDelay, while a part is
// produced: part k while child k runs, the last after the third kill. So
// every child has records its store has not seen and checkpoints, however
// fast it ingests (a child that had caught up with the whole stream before
// its kill would never checkpoint again). Each child joins a group of its
// own named after group: a killed child's membership would hold its
// partitions until its session times out (the store's position, not the
// group's offsets, says where each child resumes).
func killThriceWhileProducing(t *testing.T, cfg childConfig, log *logBuffer, recs []*record, chunk int, r *rand.Rand, maxDelay time.Duration, group string) {
	t.Helper()
	part := (len(recs) + 3) / 4
	for k := 1; k <= 4; k++ {
		prod := startProducing(t, recs[(k-1)*part:min(k*part, len(recs))], chunk, 60*time.Millisecond)
		if k <= 3 {
			cfg.Group = uniq(group)
			killAfterCheckpoint(t, cfg, log, k, time.Duration(r.Int64N(int64(maxDelay))))
		}
		if err := <-prod.done; err != nil {
			t.Fatal(err)
		}
	}
}

// killAfterCheckpoint starts a serve child of cfg, waits until it has
// checkpointed its analytics once, then for delay, and SIGKILLs it (kill
// k of a test). A kill at a fixed time would test nothing on a loaded
// machine: make test's other parts beside it (load 13-16 on 2 cores), a
// child took 52 s to restore, catch up and write its first checkpoint,
// and three children killed at 1.8-3.3 s each left no checkpoint for the
// last run to resume from.
func killAfterCheckpoint(t *testing.T, cfg childConfig, log *logBuffer, k int, delay time.Duration) {
	t.Helper()
	before := log.count(logCheckpointed)
	ch := startChild(t, cfg, log)
	if !waitFor(2*time.Minute, func() bool { return !ch.alive() || log.count(logCheckpointed) > before }) || !ch.alive() {
		t.Fatalf("child %d did not checkpoint: %v\n%s", k, ch.err, log.tail(30))
	}
	time.Sleep(delay)
	ch.kill(t)
	t.Logf("kill %d: store at %s", k, fmtPos(ch.storePos()))
}

// analyticResult is GET /v1/analytics/{name}, in part.
type analyticResult struct {
	Ready      bool   `json:"ready"`
	Seq        uint64 `json:"seq"`
	Recomputes uint64 `json:"recomputes"`
	Restored   bool   `json:"restored"`
	Error      string `json:"error"`
}

// waitAnalytic waits until the analytic name of the serve at base is
// ready at seq, and returns its result.
func waitAnalytic(t *testing.T, base, name string, seq uint64) analyticResult {
	t.Helper()
	var res analyticResult
	if !waitFor(60*time.Second, func() bool {
		return getJSON(base+"/v1/analytics/"+name, &res) && res.Ready && res.Seq == seq
	}) {
		t.Fatalf("%s at %s did not reach seq %d: %+v", name, base, seq, res)
	}
	return res
}

// checkAnalyticResults checks every vertex's result of the analytics bfs
// and wcc (and, with all, sssp and pagerank) of the serve at base, rooted
// at root, against the reference algorithms on the graph o (numeric ids).
func checkAnalyticResults(t *testing.T, base string, o oracle, root uint64, all bool) {
	t.Helper()
	g := testref.Edges{}
	for k, w := range o {
		g[[2]uint64{k.src.id, k.dst.id}] = w
	}
	lv, dist, pr := testref.BFS(g, root), testref.Dijkstra(g, root), testref.PageRank(g, 0.85)
	comp, _ := testref.Components(g)
	type vres struct {
		Result struct {
			Level     *int     `json:"level"`
			Component *uint64  `json:"component"`
			Distance  *float64 `json:"distance"`
			Reachable *bool    `json:"reachable"`
			Rank      *float64 `json:"rank"`
		} `json:"result"`
	}
	get := func(name string, v uint64) vres {
		var x vres
		if !getJSON(fmt.Sprintf("%s/v1/analytics/%s/vertices/%d", base, name, v), &x) {
			t.Fatalf("GET the %s result of %d failed", name, v)
		}
		return x
	}
	l1 := 0.0
	for v := range g.Vertices() {
		wl, ok := lv[v]
		if !ok {
			wl = -1
		}
		if x := get("bfs", v); x.Result.Level == nil || *x.Result.Level != wl {
			t.Fatalf("bfs level of %d: %+v, reference %d", v, x.Result, wl)
		}
		if x := get("wcc", v); x.Result.Component == nil || *x.Result.Component != comp[v] {
			t.Fatalf("component of %d: %+v, reference %d", v, x.Result, comp[v])
		}
		if !all {
			continue
		}
		wd, reach := dist[v]
		if x := get("sssp", v); x.Result.Reachable == nil || *x.Result.Reachable != reach || reach && *x.Result.Distance != wd {
			t.Fatalf("distance of %d: %+v, reference %v %v", v, x.Result, wd, reach)
		}
		l1 += math.Abs(*get("pagerank", v).Result.Rank - pr[v])
	}
	if all && l1 > 1e-8 {
		t.Fatalf("pagerank is %g from the reference in L1", l1)
	}
}

// TestFraudAlertsExactlyOnceAcrossCrashes runs serve in a child process
// with a fraud monitor (cycles of length <= 4, fan-in over a window of 400
// operations) checkpointed every second, SIGKILLs it three times while
// transfers stream in (each kill after the child has checkpointed at
// least once), and lets the last run catch up. The alert topic must hold
// every simple cycle of length <= 4 of the final graph exactly once, and
// every fan-in crossing of a reference window over the records in offset
// order exactly once, named by the record that raised it (and a fan-out
// by amount with the evidence and totals of the reference window); and,
// from a second fraud monitor with the timed ring search (the records
// carry event times, a little out of order), every ring of the reference
// over the records in offset order exactly once, by the record that
// completed it; no alert ID twice.
func TestFraudAlertsExactlyOnceAcrossCrashes(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	topic, alertTopic := uniq("fraud-ckpt"), uniq("fraud-alerts")
	createTopic(t, topic, 1)
	createTopic(t, alertTopic, 1)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	// Distinct transfers among 200 accounts (inserts only: the cycles new
	// at each pull add up to the final graph's, however pulls fall), a few
	// accounts taking many (fan-in). About 6,000 cycles: among 150
	// accounts, 20,000 made this the dearest test of make test (a minute
	// of CPU) and checked nothing more.
	const accounts, window, threshold = 200, 400, 25
	seen := map[[2]uint64]bool{}
	var recs []*record
	var times []int64 // each record's event time, µs
	clock := int64(1_800_000_000_000_000)
	for len(recs) < 2500 {
		src, dst := 1+r.Uint64N(accounts), 1+r.Uint64N(accounts)
		if r.IntN(3) == 0 { // a third into 4 accounts: about 33 each per window
			dst = 1 + r.Uint64N(4)
		}
		if src == dst || seen[[2]uint64{src, dst}] {
			continue
		}
		seen[[2]uint64{src, dst}] = true
		// Amounts in quarters: their sums are exact in any order.
		ev := event{op: decode.OpUpsert, src: vid{id: src}, dst: vid{id: dst}, w: float64(1+r.IntN(8)) / 4, hasW: true}
		clock += 1_000_000
		at := clock - r.Int64N(5_000_000)
		e := ev.edge()
		e.EventTime = time.UnixMicro(at).UTC()
		recs = append(recs, &record{topic: topic, value: decode.AppendBinary(nil, e), events: []event{ev}, offset: -1})
		times = append(times, at)
	}
	// max_behind 200: a restart's replay, a burst of hundreds of records,
	// reaches the monitor 200 operations at a time (never Lost). Its
	// alerts (about 20,000 cycles) carry their evidence (an event per hop,
	// the default cap): each is raised once across crashes, with as many
	// events as its cycle has hops.
	spec := analytics.Spec{Type: "fraud", MaxCycle: 4, RingSearch: "any", Threshold: threshold, WindowEdges: window, PullTimeout: time.Minute, MaxBehind: 200}
	// Beside it, on the same stream: a fraud monitor of timed rings, a
	// degree monitor (out plus in) and a fanout monitor, checkpointed with
	// it.
	const ringSpan = 10 * time.Minute
	ringSpec := analytics.Spec{Name: "rings", Type: "fraud", MaxCycle: 4, MaxSpan: ringSpan, Threshold: 1e9, PullTimeout: time.Minute, MaxBehind: 200}
	const degThreshold, outThreshold = 30, 5
	degSpec := analytics.Spec{Type: "degree", Direction: "both", Threshold: degThreshold, MaxBehind: 200}
	outSpec := analytics.Spec{Type: "fanout", Threshold: outThreshold, WindowEdges: window, MaxBehind: 200}
	// And a fan-out by amount, whose alerts carry the newest 5 transfers.
	const amountThreshold, evidence = 6, 5
	amountSpec := analytics.Spec{Name: "out-amount", Type: "fanout", Measure: "amount", Threshold: amountThreshold, WindowEdges: window,
		MaxBehind: 200, Evidence: evidence}
	dir := t.TempDir()
	_, log := testLogger(t, "the serve children")
	cfg := childConfig{
		Brokers: addrs, Topics: []string{topic}, DeadLetter: uniq("fraud-dead"), Dir: dir, MemBytes: 256 << 10,
		FlushEvery: 200 * time.Millisecond, Serve: true, Analytics: []analytics.Spec{spec, ringSpec, degSpec, outSpec, amountSpec}, CheckpointEvery: time.Second,
		AlertTopic: alertTopic, NoRace: true, // a test of volume (childBinary)
	}
	killThriceWhileProducing(t, cfg, log, recs, 20, r, 1200*time.Millisecond, "fraud-group")
	cfg.Group = "fraud-group"
	ch, base, lastSeq := lastServeRun(t, cfg, log, endOffsets(t, newAdmin(t), topic))
	var res struct {
		Seq      uint64 `json:"seq"`
		Restored bool   `json:"restored"`
		Summary  struct {
			CutShort  uint64 `json:"pulls_cut_short"`
			Truncated uint64 `json:"truncated"`
		} `json:"summary"`
	}
	if !waitFor(60*time.Second, func() bool { return getJSON(base+"/v1/analytics/fraud", &res) && res.Seq == lastSeq }) {
		t.Fatalf("the fraud monitor did not reach seq %d: %+v", lastSeq, res)
	}
	if !res.Restored || res.Summary.CutShort != 0 || res.Summary.Truncated != 0 {
		t.Fatalf("the last run's fraud monitor: %+v", res)
	}
	for _, name := range []string{"rings", "degree", "fanout", "out-amount"} {
		var mres struct {
			Seq      uint64 `json:"seq"`
			Restored bool   `json:"restored"`
		}
		if !waitFor(60*time.Second, func() bool { return getJSON(base+"/v1/analytics/"+name, &mres) && mres.Seq == lastSeq }) || !mres.Restored {
			t.Fatalf("the last run's %s monitor: %+v (seq %d)", name, mres, lastSeq)
		}
	}
	// The last run produces the alerts once the alert producers' group has
	// dropped the killed runs' sessions (--alert-failover-timeout).
	if !waitFor(60*time.Second, func() bool {
		return scrapeSum(base, "graphtide_alerts_producing") == 1 && scrapeSum(base, "graphtide_alerts_pending") == 0
	}) {
		t.Fatalf("the last run does not produce its alerts: producing %v, pending %v", scrapeSum(base, "graphtide_alerts_producing"), scrapeSum(base, "graphtide_alerts_pending"))
	}
	// GET /v1/alerts of the last run lists every alert of every run once
	// (alerts.log kept them across the kills; the replays raised some
	// again): the topic's, below.
	// Up to a minute for the answer: thousands of alerts with their
	// evidence, listed by a serve starved of CPU (make test's other parts)
	// took longer than the usual 10s.
	var listed api.AlertsResponse
	if code, b := httpGetWithin(base+"/v1/alerts?limit=10000", time.Minute); code != 200 || json.Unmarshal(b, &listed) != nil {
		t.Fatalf("GET /v1/alerts: %d %.300s", code, b)
	}
	if err := ch.term(t); err != nil {
		t.Fatalf("the last child: %v", err)
	}

	// The reference: the cycles of the final graph, and the fan-in
	// crossings of the window, operation by operation in offset order.
	g := testref.Edges{}
	for k := range seen {
		g[k] = 1
	}
	wantCycles := testref.Cycles(g, 4)
	type crossing struct {
		offset int64
		vertex uint64
	}
	// windowCrossings are the crossings of a window of the last `window`
	// records, counting each record for key(record).
	windowCrossings := func(key func(*record) uint64, thr int) map[crossing]bool {
		want := map[crossing]bool{}
		count, above := map[uint64]int{}, map[uint64]bool{}
		var q []uint64
		for _, rec := range recs {
			d := key(rec)
			q = append(q, d)
			count[d]++
			if len(q) > window {
				old := q[0]
				q = q[1:]
				if count[old]--; count[old] <= thr {
					delete(above, old)
				}
			}
			if count[d] > thr && !above[d] {
				above[d] = true
				want[crossing{rec.offset, d}] = true
			}
		}
		return want
	}
	// amountCrossings are the crossings of the window by the amount out of
	// each source, each with its evidence (the newest transfers out of
	// the source in the window, as dst:amount) and totals.
	amountCrossings := func() map[crossing]string {
		want := map[crossing]string{}
		var q []*record
		above := map[uint64]bool{}
		sum := func(v uint64) (s float64, evs []string, peers map[uint64]bool) {
			peers = map[uint64]bool{}
			for _, x := range q {
				if e := x.events[0]; e.src.id == v {
					s += e.w
					evs = append(evs, fmt.Sprintf("%d:%v", e.dst.id, e.w))
					peers[e.dst.id] = true
				}
			}
			return s, evs, peers
		}
		for _, rec := range recs {
			q = append(q, rec)
			if len(q) > window {
				old := q[0]
				q = q[1:]
				if s, _, _ := sum(old.events[0].src.id); s <= amountThreshold {
					delete(above, old.events[0].src.id)
				}
			}
			v := rec.events[0].src.id
			if s, evs, peers := sum(v); s > amountThreshold && !above[v] {
				above[v] = true
				n := len(evs)
				want[crossing{rec.offset, v}] = fmt.Sprintf("%v %v +%d %d/%v/%d", s, evs[max(0, n-evidence):], max(0, n-evidence), n, s, len(peers))
			}
		}
		return want
	}
	wantAmount := amountCrossings()
	gotAmount := map[crossing]int{}
	wantFan := windowCrossings(func(r *record) uint64 { return r.events[0].dst.id }, threshold)
	wantOut := windowCrossings(func(r *record) uint64 { return r.events[0].src.id }, outThreshold)
	// Degrees (out plus in) only grow: each vertex crosses once, at the
	// record that takes it above.
	wantDeg := map[crossing]bool{}
	deg := map[uint64]int{}
	for _, rec := range recs {
		for _, v := range []uint64{rec.events[0].src.id, rec.events[0].dst.id} {
			if deg[v]++; deg[v] == degThreshold+1 {
				wantDeg[crossing{rec.offset, v}] = true
			}
		}
	}
	wantRings := timedRings(recs, times, 4, ringSpan.Microseconds())
	if len(wantCycles) == 0 || len(wantFan) == 0 || len(wantOut) == 0 || len(wantDeg) == 0 || len(wantAmount) == 0 || len(wantRings) < 5 {
		t.Fatalf("the transfers hold %d cycles, %d fan-in, %d fan-out, %d by amount, %d degree crossings and %d timed rings: the test checks too little",
			len(wantCycles), len(wantFan), len(wantOut), len(wantAmount), len(wantDeg), len(wantRings))
	}
	got := consumeAll(t, alertTopic, len(wantCycles)+len(wantFan)+len(wantOut)+len(wantDeg)+len(wantAmount)+len(wantRings), 2*time.Second, 60*time.Second)
	gotRings := map[string]int{}
	ids := map[string]bool{}
	gotCycles := map[string]int{}
	gotFan, gotOut, gotDeg := map[crossing]int{}, map[crossing]int{}, map[crossing]int{}
	for _, rec := range got {
		var a analytics.Alert
		if err := json.Unmarshal(rec.Value, &a); err != nil {
			t.Fatal(err)
		}
		if ids[a.ID] || a.ID == "" {
			t.Errorf("alert ID %q produced twice (or empty): %+v", a.ID, a)
		}
		ids[a.ID] = true
		if a.Source == nil || a.Source.Topic != topic {
			t.Fatalf("alert %+v names no record of %s", a, topic)
		}
		switch {
		case a.Analytic == "rings":
			gotRings[fmt.Sprint(a.Source.Offset, a.Cycle)]++
		case a.Analytic == "out-amount":
			c := crossing{a.Source.Offset, a.Vertex}
			gotAmount[c]++
			var evs []string
			for _, e := range a.Evidence {
				evs = append(evs, fmt.Sprintf("%d:%v", e.Dst, e.Amount))
				if e.Src != a.Vertex {
					t.Errorf("alert %+v: evidence of another source", a)
				}
			}
			tot := a.Totals
			if tot == nil {
				tot = &analytics.AlertTotals{}
			}
			if g := fmt.Sprintf("%v %v +%d %d/%v/%d", a.Value, evs, a.EvidenceDropped, tot.Events, tot.Amount, tot.Counterparties); g != wantAmount[c] {
				t.Errorf("the fan-out by amount of %d at offset %d: %s; the reference %q", c.vertex, c.offset, g, wantAmount[c])
			}
		case a.Kind == "cycle":
			gotCycles[testref.CycleKey(a.Cycle)]++
			if len(a.Evidence) != len(a.Cycle) {
				t.Errorf("cycle alert %s: %d events of evidence for %d hops", a.ID, len(a.Evidence), len(a.Cycle))
			}
		case a.Kind == "fan_in":
			gotFan[crossing{a.Source.Offset, a.Vertex}]++
		case a.Kind == "fan_out":
			gotOut[crossing{a.Source.Offset, a.Vertex}]++
		case a.Kind == "degree":
			gotDeg[crossing{a.Source.Offset, a.Vertex}]++
		default:
			t.Errorf("an alert of kind %q: %+v", a.Kind, a)
		}
	}
	listedIDs := map[string]bool{}
	for _, a := range listed.Alerts {
		if listedIDs[a.ID] {
			t.Errorf("GET /v1/alerts lists alert %s twice", a.ID)
		}
		listedIDs[a.ID] = true
	}
	// It keeps the newest 10,000 (--alert-history), and counts them all.
	if len(listedIDs) != min(len(ids), 10000) || listed.Total != uint64(len(ids)) {
		t.Errorf("GET /v1/alerts after three kills lists %d alerts (total %d); the topic holds %d", len(listedIDs), listed.Total, len(ids))
	}
	for id := range listedIDs {
		if !ids[id] {
			t.Errorf("GET /v1/alerts lists alert %s, which is not on the topic", id)
		}
	}
	for k := range wantRings {
		if gotRings[k] != 1 {
			t.Errorf("timed ring %s alerted %d times", k, gotRings[k])
		}
	}
	for k, n := range gotRings {
		if !wantRings[k] {
			t.Errorf("an alert for a timed ring the reference does not raise (%d times): %s", n, k)
		}
	}
	for k := range wantCycles {
		if gotCycles[k] != 1 {
			t.Errorf("cycle %v alerted %d times", wantCycles[k], gotCycles[k])
		}
	}
	for k, n := range gotCycles {
		if _, ok := wantCycles[k]; !ok {
			t.Errorf("an alert for a cycle the graph does not have (%d times): %q", n, k)
		}
	}
	for _, k := range []struct {
		what string
		want map[crossing]bool
		got  map[crossing]int
	}{{"fan-in", wantFan, gotFan}, {"fan-out", wantOut, gotOut}, {"degree", wantDeg, gotDeg}} {
		for c := range k.want {
			if k.got[c] != 1 {
				t.Errorf("the %s crossing of %d at offset %d alerted %d times", k.what, c.vertex, c.offset, k.got[c])
			}
		}
		for c, n := range k.got {
			if !k.want[c] {
				t.Errorf("a %s alert the reference does not raise (%d times): %+v", k.what, n, c)
			}
		}
	}
	for c := range wantAmount {
		if gotAmount[c] != 1 {
			t.Errorf("the fan-out by amount of %d at offset %d alerted %d times", c.vertex, c.offset, gotAmount[c])
		}
	}
	for c, n := range gotAmount {
		if _, ok := wantAmount[c]; !ok {
			t.Errorf("a fan-out by amount the reference does not raise (%d times): %+v", n, c)
		}
	}
	t.Logf("%d cycles, %d timed rings, %d fan-in, %d fan-out, %d by amount and %d degree crossings, each alerted once across 3 SIGKILLs; %d runs restored the monitors",
		len(wantCycles), len(wantRings), len(wantFan), len(wantOut), len(wantAmount), len(wantDeg), log.count("analytics restored from their checkpoint"))
}

// timedRings is the reference of a fraud monitor's timed rings (the rules
// of docs/analytics.md, "Rings in time") over records of one upsert each,
// in offset order, with their event times (µs), for distinct pairs (so
// one ring per account cycle but for rotations of equal times, which
// these times do not have) and no min_ratio or lateness: for each record that is not late, every
// cycle of earlier records (not late) and it, with distinct sources,
// whose rotation starting after its one drop in time (or any, when all
// times are equal) is in time order within span; one per account cycle
// per episode, the least span first. Each as "offset [accounts from the
// first hop]".
func timedRings(recs []*record, times []int64, k int, span int64) map[string]bool {
	type ev struct {
		src, dst uint64
		t        int64
		i        int
	}
	held := map[uint64][]ev{} // by source
	var newest int64
	have := false
	episodes := map[string]int64{}
	want := map[string]bool{}
	for i, rec := range recs {
		x := ev{rec.events[0].src.id, rec.events[0].dst.id, times[i], i}
		if have && x.t < newest-span {
			continue // late
		}
		best := map[string][]ev{}
		var walk func(path []ev)
		walk = func(path []ev) {
			last := path[len(path)-1]
			for _, e := range held[last.dst] {
				// A ring holding x is within span of it.
				if e.t < x.t-span || e.t > x.t+span || slices.ContainsFunc(path, func(p ev) bool { return p.src == e.src }) {
					continue
				}
				c := append(slices.Clone(path), e)
				if e.dst != x.src {
					if len(c) < k {
						walk(c)
					}
					continue
				}
				for at := range c {
					r := append(slices.Clone(c[at:]), c[:at]...)
					ok := r[len(r)-1].t-r[0].t <= span
					for j := 1; j < len(r) && ok; j++ {
						ok = r[j].t >= r[j-1].t
					}
					if !ok {
						continue
					}
					ids := make([]uint64, len(r))
					for j, e := range r {
						ids[j] = e.src
					}
					key := testref.CycleKey(ids)
					if T, ok := episodes[key]; ok && r[0].t <= T {
						continue
					}
					if b, ok := best[key]; ok {
						sb, sr := b[len(b)-1].t-b[0].t, r[len(r)-1].t-r[0].t
						if sb < sr || sb == sr && (b[0].t < r[0].t || b[0].t == r[0].t && b[0].i <= r[0].i) {
							continue
						}
					}
					best[key] = r
				}
			}
		}
		if x.src != x.dst {
			walk([]ev{x})
		}
		for key, r := range best {
			episodes[key] = r[len(r)-1].t
			ids := make([]uint64, len(r))
			for j, e := range r {
				ids[j] = e.src
			}
			want[fmt.Sprint(rec.offset, ids)] = true
		}
		held[x.src] = append(held[x.src], x)
		if !have || x.t > newest {
			newest, have = x.t, true
		}
	}
	return want
}
