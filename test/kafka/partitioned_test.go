package kafkatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// keyedStream is a stream whose vertex i has an id that a producer's
// default partitioner sends to partition i mod partitions (sparse ids from
// base up): the stream's home partitions, where every edge into a vertex
// that may be deleted comes from its own partition, are Kafka's.
func keyedStream(topic string, partitions int, base uint64, vertices int, seed uint64) *stream {
	st := newStream(topic, partitions, decode.FormatBinary, "", base, vertices, 3, seed)
	part := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	byPart := make([][]uint64, partitions)
	for id := base; ; id += 7919 {
		p := part.Partition(&kgo.Record{Key: []byte(strconv.FormatUint(id, 10))}, partitions)
		byPart[p] = append(byPart[p], id)
		full := true
		for q := range byPart {
			full = full && len(byPart[q]) >= (vertices+partitions-1)/partitions
		}
		if full {
			break
		}
	}
	for i := 0; i < vertices; i++ {
		st.ids = append(st.ids, byPart[i%partitions][i/partitions])
	}
	return st
}

// keyedRecords are n records of the stream, each keyed by the source of
// its first event (every event of a record has a source of the record's
// home partition), as graphtide's producers and docs/partitioned.md ask of
// partitioned mode; the partition is left to the producer (produceKeyed),
// and home keeps the stream's.
func keyedRecords(st *stream, n int) (recs []*record, home []int32) {
	recs = st.records(n)
	for _, r := range recs {
		home = append(home, r.part)
		r.key, r.part = []byte(strconv.FormatUint(r.events[0].src.id, 10)), -1
	}
	return recs, home
}

// produceKeyed sends recs with a producer's default partitioner (franz-go's,
// murmur2 of the key as Kafka's Java producer) and records each one's
// partition and offset.
func produceKeyed(t *testing.T, recs []*record) {
	t.Helper()
	cl := newClient(t, kgo.ProducerLinger(2*time.Millisecond))
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: r.topic, Key: r.key, Value: r.value}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		r.part, r.offset = krs[i].Partition, krs[i].Offset
	}
}

// inPartitions keeps the records of the partitions ps.
func inPartitions(ps ...int32) func(*record) bool {
	return func(r *record) bool {
		for _, p := range ps {
			if r.part == p {
				return true
			}
		}
		return false
	}
}

// TestPartitionedOwners runs partitioned mode with two owners of a
// 4-partition topic, A (0-1) and B (2-3), sharing one consumer group, on
// a stream of upserts, re-weights, deletes and vertex deletes keyed by
// source vertex (sparse 64-bit ids) and sent by a producer's default
// partitioner:
//
//   - each owner ingests its own partitions only, and its store holds
//     exactly the oracle of their records; records whose source vertex
//     belongs to another partition are dead letters, with the reason;
//   - every vertex's neighbors, asked of either owner, are its owner's
//     answer (the oracles' union: each source's out-edges are in one
//     store), and so are an out-degree monitor's per-vertex results;
//   - a graph-wide analytic is refused at registration, pointing to
//     replica mode; the group's committed offsets cover the topic;
//   - an instance given B's partitions on a new data directory, while the
//     group holds B's committed offsets, refuses to start and ingests
//     nothing; A restarted to own partition 2 as well refuses too, its
//     store untouched; so does B restarted to give partition 2 up;
//   - the documented hand-over, a new data directory with
//     --adopt-partitions, replays B's partitions from their start and
//     then answers as B did;
//   - when the topic grows a partition, the owner is no longer ready and
//     says why.
func TestPartitionedOwners(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("owned")
	createTopic(t, topic, 4)
	st := keyedStream(topic, 4, 1<<40, 1200, 41)
	recs, home := keyedRecords(st, 3000)
	produceKeyed(t, recs)
	for i, r := range recs {
		if r.part != home[i] {
			t.Fatalf("record %d (key %s) went to partition %d, not its home %d", i, r.key, r.part, home[i])
		}
	}
	// Five records on partition 0 whose source is partition 2's: dead
	// letters at A, in no store.
	var misplaced []*record
	for i := range 5 {
		e := event{op: decode.OpUpsert, src: st.vertex(2 + 4*i), dst: st.vertex(5)}
		misplaced = append(misplaced, &record{topic: topic, part: 0, key: []byte("misplaced"), value: encode(st.format, []event{e}), events: []event{e}})
	}
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	if err := produce(pctx, newProducer(t), misplaced); err != nil {
		t.Fatal(err)
	}
	_, log := testLogger(t, "the owners")
	group := uniq("owners")
	addrsHTTP := [3]string{}
	for i := range addrsHTTP {
		addrsHTTP[i] = fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	}
	owners := fmt.Sprintf("0-1=http://%s,2-3=http://%s", addrsHTTP[0], addrsHTTP[1])
	cfg := func(i int, owners, own string) childConfig {
		return childConfig{Brokers: addrs, Topics: []string{topic}, Group: group, DeadLetter: uniq("owned-dead"), Dir: t.TempDir(),
			MemBytes: 256 << 10, FlushEvery: 200 * time.Millisecond, Serve: true, HTTPAddr: addrsHTTP[i],
			Analytics: []analytics.Spec{{Name: "outdeg", Type: "degree", Direction: "out", Threshold: 2}},
			Owners:    owners, OwnPartitions: own}
	}
	cfgs := []childConfig{cfg(0, owners, "0-1"), cfg(1, owners, "2-3")}
	chs := []*child{startChild(t, cfgs[0], log), startChild(t, cfgs[1], log)}
	t.Cleanup(func() {
		for _, ch := range chs {
			if ch.alive() {
				ch.kill(t)
			}
		}
	})
	end := endOffsets(t, adm, topic)
	own := [][]int32{{0, 1}, {2, 3}}
	ownEnd := func(ps []int32) ingest.Position {
		p := ingest.Position{}
		for _, q := range ps {
			o, _ := end.Get(topic, q)
			p.Set(topic, q, o)
		}
		return p
	}
	for i, ch := range chs {
		want := ownEnd(own[i])
		if !waitFor(90*time.Second, func() bool { return !ch.alive() || samePosition(ch.storePos(), want) }) {
			t.Fatalf("owner %d: its store's position is %s, want exactly its partitions' ends %s\n%s", i, fmtPos(ch.storePos()), fmtPos(want), log.tail(30))
		}
	}
	oracles := []oracle{oracleOf(recs, inPartitions(own[0]...)), oracleOf(recs, inPartitions(own[1]...))}
	dead := consumeAll(t, cfgs[0].DeadLetter, len(misplaced), 2*time.Second, 60*time.Second)
	if len(dead) != len(misplaced) {
		t.Fatalf("owner A dead-lettered %d records, want the %d misplaced ones", len(dead), len(misplaced))
	}
	for _, r := range dead {
		reason := ""
		for _, h := range r.Headers {
			if h.Key == ingest.HeaderReason {
				reason = string(h.Value)
			}
		}
		if !strings.Contains(reason, "belongs to partition 2 of 4, not to this record's partition 0") {
			t.Fatalf("dead letter of a misplaced record: reason %q", reason)
		}
	}
	union := oracle{}
	for _, o := range oracles {
		for k, w := range o {
			if _, dup := union[k]; dup {
				t.Fatalf("edge %v->%v is in both owners' oracles: its source's records went to two partitions", k.src, k.dst)
			}
			union[k] = w
		}
	}
	t.Logf("owners' edges: %d and %d", len(oracles[0]), len(oracles[1]))
	if len(oracles[0]) == 0 || len(oracles[1]) == 0 {
		t.Fatal("an owner has no edges: the test checks nothing")
	}
	for i, ch := range chs {
		base := "http://" + ch.httpAddr()
		if d := diff(union, neighborsOf(t, base, st)); d != "" {
			t.Fatalf("owner %d answers neighbor queries unlike their owners: %s\n%s", i, d, log.tail(20))
		}
	}
	// The out-degree monitor's per-vertex result, from either owner, is
	// the owner's: the out-degree of a vertex above the threshold (2), no
	// result (404) for the others.
	outdeg := map[uint64]float64{}
	for k := range union {
		outdeg[k.src.id]++
	}
	above := 0
	for i := 0; i < st.vertices; i += 3 {
		v := st.vertex(i).id
		for _, ch := range chs {
			u := fmt.Sprintf("http://%s/v1/analytics/outdeg/vertices/%d", ch.httpAddr(), v)
			ok := waitFor(30*time.Second, func() bool {
				code, body := httpGet(u)
				var res api.VertexResultResponse
				if outdeg[v] <= 2 {
					return code == 404
				}
				if code != 200 || json.Unmarshal(body, &res) != nil {
					return false
				}
				m, _ := res.Result.(map[string]any)
				return m["value"] == outdeg[v]
			})
			if !ok {
				code, body := httpGet(u)
				t.Fatalf("GET %s: %d %s; want the owner's out-degree %v (a result only above 2)", u, code, body, outdeg[v])
			}
		}
		if outdeg[v] > 2 {
			above++
		}
	}
	if above < 10 {
		t.Fatalf("only %d vertices checked have a monitor result: lower the threshold", above)
	}
	// Graph-wide analytics are refused at registration.
	for _, sp := range []api.Spec{{Name: "b", Type: "bfs", Root: "1"}, {Name: "w", Type: "wcc"}, {Name: "f", Type: "fraud", Threshold: 5}, {Name: "in", Type: "degree", Direction: "in", Threshold: 5}, {Name: "fi", Type: "fanin", Threshold: 5}} {
		body, _ := json.Marshal(sp)
		resp, err := http.Post("http://"+chs[0].httpAddr()+"/v1/analytics", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 409 || !bytes.Contains(msg, []byte("replica mode")) {
			t.Errorf("registering %s in partitioned mode: %d %s; want 409 pointing to replica mode", sp.Type, resp.StatusCode, msg)
		}
	}
	// One group holds the whole topic's offsets: lag tools see it.
	if !waitFor(30*time.Second, func() bool { return samePosition(restrict(committedOffsets(t, adm, group), end), end) }) {
		t.Errorf("group %s committed %s, want %s", group, fmtPos(committedOffsets(t, adm, group)), fmtPos(end))
	}

	// An instance given B's partitions, on a new data directory, while
	// the group holds B's offsets: refused, nothing ingested.
	claim := cfg(2, fmt.Sprintf("0-1=http://%s,2-3=http://%s", addrsHTTP[0], addrsHTTP[2]), "2-3")
	if err := runToExit(t, claim, log, "committed offsets for "+topic+"[2,3], of which this store has no history"); err != nil {
		t.Fatal(err)
	}
	if got := storeOf(t, claim.Dir); len(got) > 0 {
		t.Fatalf("the refused instance ingested %d edges", len(got))
	}
	// A, restarted to own partition 2 as well (B's): refused, its store
	// as it was.
	if err := chs[0].term(t); err != nil {
		t.Fatalf("owner A: %v\n%s", err, log.tail(20))
	}
	grow := cfgs[0]
	grow.Owners, grow.OwnPartitions = fmt.Sprintf("0-2=http://%s,3=http://%s", addrsHTTP[0], addrsHTTP[1]), "0-2"
	if err := runToExit(t, grow, log, "committed offsets for "+topic+"[2], of which this store has no history"); err != nil {
		t.Fatal(err)
	}
	if df := diff(oracles[0], storeOf(t, cfgs[0].Dir)); df != "" {
		t.Fatalf("owner A's store, after the refused restart: %s", df)
	}

	// B, restarted to give partition 2 up: refused, its store holds
	// partition 2's history.
	if err := chs[1].term(t); err != nil {
		t.Fatalf("owner B: %v\n%s", err, log.tail(20))
	}
	shrink := cfgs[1]
	shrink.Owners, shrink.OwnPartitions = fmt.Sprintf("0-2=http://%s,3=http://%s", addrsHTTP[0], addrsHTTP[1]), "3"
	if err := runToExit(t, shrink, log, "this store holds the history of "+topic+"[2], which it does not own"); err != nil {
		t.Fatal(err)
	}

	// The hand-over: B's partitions adopted on a new data directory,
	// replayed from their start; the new owner answers as B did.
	claim.Adopt = []int32{2, 3}
	chs = append(chs, startChild(t, claim, log))
	if !waitFor(90*time.Second, func() bool { return !chs[2].alive() || samePosition(chs[2].storePos(), ownEnd(own[1])) }) {
		t.Fatalf("the adopting owner: store at %s, want %s\n%s", fmtPos(chs[2].storePos()), fmtPos(ownEnd(own[1])), log.tail(30))
	}
	// A is down, so its vertices' requests fail at the new owner (502);
	// B's vertices' edges are answered by the new owner as B did.
	base := "http://" + chs[2].httpAddr()
	for k, w := range oracles[1] {
		u := fmt.Sprintf("%s/v1/edges/%d/%d", base, k.src.id, k.dst.id)
		var e api.EdgeResponse
		if !getJSON(u, &e) || !e.Found || len(e.Edges) != 1 || e.Edges[0].Weight != w {
			t.Fatalf("GET %s after the hand-over: %+v, want weight %v", u, e, w)
		}
	}
	// The topic grows a partition: its keys move, and the owner says so.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreatePartitions(ctx, 1, topic); err != nil {
		t.Fatal(err)
	}
	grown := fmt.Sprintf("topic %q has 5 partitions now, but --owners maps 4", topic)
	if !waitFor(40*time.Second, func() bool {
		code, body := httpGet(base + "/readyz")
		var e api.ErrorResponse
		return code == 503 && json.Unmarshal(body, &e) == nil && strings.Contains(e.Error, grown)
	}) {
		code, body := httpGet(base + "/readyz")
		t.Fatalf("after the topic grew: /readyz %d %s; want 503 saying %s", code, body, grown)
	}
	if err := chs[2].term(t); err != nil {
		t.Fatalf("the adopting owner: %v\n%s", err, log.tail(20))
	}
	for i, c := range []childConfig{cfgs[1], claim} {
		if df := diff(oracles[1], storeOf(t, c.Dir)); df != "" {
			t.Errorf("store %d of partitions 2-3 (B's, then the adopting owner's): %s", i, df)
		}
	}
}

// runToExit starts c, which must refuse to start: exit with an error whose
// message (in the log) holds want. (The caller checks its store.)
func runToExit(t *testing.T, c childConfig, log *logBuffer, want string) error {
	t.Helper()
	ch := startChild(t, c, log)
	select {
	case <-ch.exited:
	case <-time.After(60 * time.Second):
		ch.kill(t)
		return fmt.Errorf("an instance that must refuse to start ran for 60 s\n%s", log.tail(20))
	}
	if ch.err == nil {
		return fmt.Errorf("the instance exited with status 0; want an error saying %q\n%s", want, log.tail(20))
	}
	if !log.contains(want) {
		return fmt.Errorf("the instance exited with %w; want an error saying %q\n%s", ch.err, want, log.tail(20))
	}
	return nil
}

// readyProxy is a stand-in for an owner's Kubernetes Service: it listens
// on addr and passes each request to the first of backends (host:port,
// read when the request comes) whose /readyz answers 200.
func readyProxy(t *testing.T, addr string, backends func() []string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, b := range backends() {
			if code, _ := httpGet("http://" + b + "/readyz"); code == 200 {
				httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: b}).ServeHTTP(w, r)
				return
			}
		}
		http.Error(w, "no ready backend", http.StatusServiceUnavailable)
	})}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
}

// TestPartitionedReplicas runs replicas of an owner in partitioned mode:
// owner A (partitions 0-1) as two replicas behind a stand-in Service, each
// with a data directory and a group of its own (replica k of every owner
// in group r<k>, as deploy/kubernetes/partitioned does), and owner B
// (2-3). One replica of A is SIGKILLed mid-stream; while it is down, B
// answers every vertex's neighbors as the owners' oracles, A's through the
// other replica. It restarts and resumes; at the end both of A's stores
// hold exactly A's oracle, and each group has committed the end offsets of
// the partitions its members own.
func TestPartitionedReplicas(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("owned-replicas")
	createTopic(t, topic, 4)
	st := keyedStream(topic, 4, 1<<40, 900, 43)
	first, _ := keyedRecords(st, 2000)
	second, _ := keyedRecords(st, 2000)
	_, log := testLogger(t, "the owners' replicas")
	var addr [4]string // A0, A1, B, A's Service
	for i := range addr {
		addr[i] = fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	}
	owners := fmt.Sprintf("0-1=http://%s,2-3=http://%s", addr[3], addr[2])
	groups := [2]string{uniq("r0"), uniq("r1")}
	cfg := func(i int, own, group string) childConfig {
		return childConfig{Brokers: addrs, Topics: []string{topic}, Group: group, Instance: fmt.Sprintf("owner-%d", i), DeadLetter: uniq("owned-dead"),
			Dir: t.TempDir(), MemBytes: 256 << 10, FlushEvery: 200 * time.Millisecond, Serve: true, HTTPAddr: addr[i],
			Owners: owners, OwnPartitions: own}
	}
	cfgs := []childConfig{cfg(0, "0-1", groups[0]), cfg(1, "0-1", groups[1]), cfg(2, "2-3", groups[0])}
	chs := make([]*child, len(cfgs))
	for i, c := range cfgs {
		chs[i] = startChild(t, c, log)
	}
	t.Cleanup(func() {
		for _, ch := range chs {
			if ch.alive() {
				ch.kill(t)
			}
		}
	})
	readyProxy(t, addr[3], func() []string { return []string{addr[0], addr[1]} })

	own := [][]int32{{0, 1}, {0, 1}, {2, 3}}
	caughtUp := func(i int) {
		t.Helper()
		end := endOffsets(t, adm, topic)
		want := ingest.Position{}
		for _, p := range own[i] {
			o, _ := end.Get(topic, p)
			want.Set(topic, p, o)
		}
		if !waitFor(90*time.Second, func() bool { return !chs[i].alive() || samePosition(chs[i].storePos(), want) }) {
			t.Fatalf("instance %d: store at %s, want %s\n%s", i, fmtPos(chs[i].storePos()), fmtPos(want), log.tail(30))
		}
	}
	produceKeyed(t, first[:1000])
	for i := range chs {
		caughtUp(i)
	}
	chs[0].kill(t)
	produceKeyed(t, first[1000:])
	caughtUp(1)
	caughtUp(2)
	answers := func(base string, recs []*record) {
		t.Helper()
		want := oracle{}
		for _, ps := range [][]int32{own[0], own[2]} {
			for k, w := range oracleOf(recs, inPartitions(ps...)) {
				want[k] = w
			}
		}
		if d := diff(want, neighborsOf(t, base, st)); d != "" {
			t.Fatalf("%s answers unlike the owners' oracles: %s\n%s", base, d, log.tail(20))
		}
	}
	answers("http://"+addr[2], first) // A's vertices through its live replica

	chs[0] = startChild(t, cfgs[0], log)
	produceKeyed(t, second)
	all := append(slices.Clone(first), second...)
	for i := range chs {
		caughtUp(i)
	}
	answers("http://"+addr[0], all)
	answers("http://"+addr[2], all)
	end := endOffsets(t, adm, topic)
	for i, ch := range chs {
		if err := ch.term(t); err != nil {
			t.Fatalf("instance %d: %v\n%s", i, err, log.tail(20))
		}
	}
	wantA := oracleOf(all, inPartitions(own[0]...))
	for i := range 2 {
		if d := diff(wantA, storeOf(t, cfgs[i].Dir)); d != "" {
			t.Errorf("replica %d of owner A: its store differs from A's oracle: %s", i, d)
		}
	}
	for g, parts := range map[string][]int32{groups[0]: {0, 1, 2, 3}, groups[1]: {0, 1}} {
		want := ingest.Position{}
		for _, p := range parts {
			o, _ := end.Get(topic, p)
			want.Set(topic, p, o)
		}
		if got := committedOffsets(t, adm, g); !samePosition(got, want) {
			t.Errorf("group %s committed %s, want %s", g, fmtPos(got), fmtPos(want))
		}
	}
}
