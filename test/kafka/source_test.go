package kafkatest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// Tests of the binding between a store and its Kafka source (issue 9,
// items 5 and 6): recorded offsets apply only to the cluster and topics
// they were consumed from, and a consumer group split between stores
// pauses instead of splitting the graph.

// startExtraBroker starts another single-node cluster (a fresh cluster ID)
// with deploy/kafka/kafka.sh on free ports in its own directory, and
// stops it when the test ends.
func startExtraBroker(t *testing.T) []string {
	t.Helper()
	needBroker(t)
	dir := t.TempDir()
	if r := startReaper(dir); r != nil {
		t.Cleanup(func() { _ = r.Process.Kill(); _, _ = r.Process.Wait() })
	}
	for attempt := 0; ; attempt++ {
		port, err := freePortPair()
		if err != nil {
			t.Fatal(err)
		}
		so, out, err := script(5*time.Minute, "start", "--port", strconv.Itoa(port), "--dir", dir)
		if err != nil {
			_, _, _ = script(time.Minute, "stop", "--dir", dir)
			if attempt < 2 && strings.Contains(string(out), "already in use") {
				continue
			}
			t.Fatalf("starting a second broker: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			if _, out, err := script(time.Minute, "stop", "--dir", dir); err != nil {
				t.Errorf("stopping the second broker: %v\n%s", err, out)
			}
		})
		addrs := []string{strings.TrimSpace(so)}
		if err := waitReady(addrs, 60*time.Second); err != nil {
			t.Fatalf("the second broker %s is not usable: %v\n%s", addrs[0], err, logTail(dir))
		}
		return addrs
	}
}

// sourceOf returns the cluster ID of addrs and the ID of topic there, read
// with a direct metadata request.
func sourceOf(t *testing.T, addrs []string, topic string) (string, ingest.TopicID) {
	t.Helper()
	cl := newClient(t, kgo.SeedBrokers(addrs...))
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ClusterID == nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s on %v: cluster %v, topics %+v", topic, addrs, resp.ClusterID, resp.Topics)
	}
	return *resp.ClusterID, ingest.TopicID(resp.Topics[0].TopicID)
}

// storeRecorded decodes what the store recorded, source included.
func storeRecorded(t *testing.T, s *engine.Store) ingest.Recorded {
	t.Helper()
	raw, err := s.SourcePosition()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ingest.DecodeRecorded(raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// produceTo produces recs to the cluster of addrs.
func produceTo(t *testing.T, addrs []string, recs []*record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t, kgo.SeedBrokers(addrs...)), recs); err != nil {
		t.Fatal(err)
	}
}

// ingestAll runs an ingester on s until its durable position covers end,
// stops it and checks that Run returned nil.
func ingestAll(t *testing.T, s *engine.Store, cfg ingest.Config, end ingest.Position) {
	t.Helper()
	r := startIngester(t, s, nil, cfg)
	r.waitDurable(t, end, 2*time.Minute)
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// runRefused runs an ingester that must refuse to start, and returns its
// error, which must be a *ingest.SourceMismatchError, after checking that
// the store's recorded position did not change.
func runRefused(t *testing.T, s *engine.Store, cfg ingest.Config) *ingest.SourceMismatchError {
	t.Helper()
	raw, _ := s.SourcePosition()
	r := startIngester(t, s, nil, cfg)
	var err error
	select {
	case err = <-r.done:
		r.done <- err
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not refuse to start within 2 minutes")
	}
	var mm *ingest.SourceMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("Run returned %v, want a *ingest.SourceMismatchError", err)
	}
	if !strings.Contains(err.Error(), "--reset-source-position") {
		t.Errorf("the error does not name the flag that discards the position: %v", err)
	}
	if after, _ := s.SourcePosition(); string(after) != string(raw) {
		t.Errorf("the refused run changed the store's recorded position")
	}
	if got := r.in.Applied(); !samePosition(got, storePosition(t, s)) {
		t.Errorf("the refused run applied something: %s", fmtPos(got))
	}
	return mm
}

// TestSourceOtherCluster: a store filled from broker A, then pointed at a
// fresh broker B that has a topic of the same name (issue 9, item 5: A's
// offsets were applied to B and B's first records skipped). The ingester
// refuses to start, naming both cluster IDs and the flag; with
// ResetSourcePosition it ingests all of B, and records B's IDs.
func TestSourceOtherCluster(t *testing.T) {
	t.Parallel()
	addrsA := needBroker(t)
	addrsB := startExtraBroker(t)
	topic := uniq("other-cluster")
	createTopicAt(t, addrsA, topic, 4)
	createTopicAt(t, addrsB, topic, 4)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	// Disjoint vertices; B has more records than A, so that A's offsets
	// fall inside B's partitions.
	recsA := newStream(topic, 4, decode.FormatBinary, "", 0, 2000, 2, seed).records(3000)
	recsB := newStream(topic, 4, decode.FormatBinary, "", 1_000_000, 2000, 2, seed+1).records(8000)
	produceTo(t, addrsA, recsA)
	produceTo(t, addrsB, recsB)
	endA := endOffsets(t, newAdmin(t), topic)
	endB := endOffsets(t, kadm.NewClient(newClient(t, kgo.SeedBrokers(addrsB...))), topic)
	clusterA, idA := sourceOf(t, addrsA, topic)
	clusterB, idB := sourceOf(t, addrsB, topic)
	if clusterA == clusterB {
		t.Fatalf("both brokers report cluster ID %q", clusterA)
	}

	s, _ := openStore(t, t.TempDir(), 256<<10)
	defer s.Close()
	log, lb := testLogger(t, "ingester")
	group := uniq("other-cluster-group")
	cfg := ingest.Config{Brokers: addrsA, Topics: []string{topic}, Group: group, DeadLetterTopic: uniq("other-cluster-dead"),
		FlushInterval: 100 * time.Millisecond, Logger: log}
	ingestAll(t, s, cfg, endA)
	rec := storeRecorded(t, s)
	if rec.ClusterID != clusterA || rec.TopicIDs[topic] != idA || !samePosition(rec.Position, endA) {
		t.Fatalf("after broker A the store recorded cluster %q, topic ID %s, %s; want %q, %s, %s",
			rec.ClusterID, rec.TopicIDs[topic], fmtPos(rec.Position), clusterA, idA, fmtPos(endA))
	}

	cfg.Brokers = addrsB
	mm := runRefused(t, s, cfg)
	if !mm.OtherCluster() || mm.RecordedCluster != clusterA || mm.Cluster != clusterB {
		t.Errorf("mismatch %+v, want recorded cluster %q and found %q", mm, clusterA, clusterB)
	}
	for _, w := range []string{strconv.Quote(clusterA), strconv.Quote(clusterB)} {
		if !strings.Contains(mm.Error(), w) {
			t.Errorf("the error does not name cluster ID %s: %v", w, mm)
		}
	}
	t.Logf("refused: %v", mm)

	cfg.ResetSourcePosition = true
	ingestAll(t, s, cfg, endB)
	if !lb.contains("discarding the store's recorded offsets: they belong to another Kafka cluster") {
		t.Errorf("no WARN says what was discarded")
	}
	checkStore(t, "after broker B", s, nil, oracleOf(append(append([]*record(nil), recsA...), recsB...), nil))
	rec = storeRecorded(t, s)
	if rec.ClusterID != clusterB || rec.TopicIDs[topic] != idB || !samePosition(rec.Position, endB) {
		t.Errorf("after broker B the store recorded cluster %q, topic ID %s, %s; want %q, %s, %s",
			rec.ClusterID, rec.TopicIDs[topic], fmtPos(rec.Position), clusterB, idB, fmtPos(endB))
	}

	// Bound to B now: a restart without the flag resumes.
	cfg.ResetSourcePosition = false
	r := startIngester(t, s, nil, cfg)
	if !waitFor(time.Minute, func() bool { return r.exited.Load() || r.in.Ready() == nil }) || r.exited.Load() {
		t.Fatalf("restarted on B without the flag: ready %v, Run %v", r.in.Ready(), r.stop(t))
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestSourceTopicRecreated: a topic deleted and re-created under the same
// name on the same broker is another log. Once the topic is deleted the
// ingester refuses to start, naming it and its recorded ID; once it is
// re-created, naming both IDs; with ResetSourcePosition it ingests the new
// topic's records exactly.
func TestSourceTopicRecreated(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("recreated")
	createTopic(t, topic, 4)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	recsOld := newStream(topic, 4, decode.FormatBinary, "", 0, 2000, 2, seed).records(3000)
	recsNew := newStream(topic, 4, decode.FormatBinary, "", 1_000_000, 2000, 2, seed+1).records(8000)
	produceTo(t, addrs, recsOld)
	endOld := endOffsets(t, adm, topic)
	_, idOld := sourceOf(t, addrs, topic)

	s, _ := openStore(t, t.TempDir(), 256<<10)
	defer s.Close()
	log, lb := testLogger(t, "ingester")
	cfg := ingest.Config{Brokers: addrs, Topics: []string{topic}, Group: uniq("recreated-group"), DeadLetterTopic: uniq("recreated-dead"),
		FlushInterval: 100 * time.Millisecond, Logger: log}
	ingestAll(t, s, cfg, endOld)

	// Deleted: refused, naming the recorded ID.
	deleteTopic(t, adm, topic)
	mm := runRefused(t, s, cfg)
	if mm.OtherCluster() || len(mm.Topics) != 1 || mm.Topics[0] != (ingest.TopicMismatch{Topic: topic, Recorded: idOld, Missing: true}) {
		t.Errorf("mismatch %+v, want topic %s recorded %s missing", mm, topic, idOld)
	}
	if !strings.Contains(mm.Error(), idOld.String()) || !strings.Contains(mm.Error(), "was deleted") {
		t.Errorf("the error does not say that topic ID %s was deleted: %v", idOld, mm)
	}

	// Re-created under the same name: refused, naming both IDs.
	createTopicAgain(t, adm, topic, 4)
	produceTo(t, addrs, recsNew)
	endNew := endOffsets(t, adm, topic)
	_, idNew := sourceOf(t, addrs, topic)
	if idNew == idOld {
		t.Fatalf("the re-created topic kept ID %s", idOld)
	}

	mm = runRefused(t, s, cfg)
	if mm.OtherCluster() || len(mm.Topics) != 1 || mm.Topics[0] != (ingest.TopicMismatch{Topic: topic, Recorded: idOld, Found: idNew}) {
		t.Errorf("mismatch %+v, want topic %s recorded %s found %s", mm, topic, idOld, idNew)
	}
	for _, w := range []string{strconv.Quote(topic), idOld.String(), idNew.String()} {
		if !strings.Contains(mm.Error(), w) {
			t.Errorf("the error does not name %s: %v", w, mm)
		}
	}
	t.Logf("refused: %v", mm)

	cfg.ResetSourcePosition = true
	ingestAll(t, s, cfg, endNew)
	if !lb.contains("discarding the store's recorded offsets of topic " + topic) {
		t.Errorf("no WARN says what was discarded")
	}
	checkStore(t, "after the re-created topic", s, nil, oracleOf(append(append([]*record(nil), recsOld...), recsNew...), nil))
	if rec := storeRecorded(t, s); rec.TopicIDs[topic] != idNew || !samePosition(rec.Position, endNew) {
		t.Errorf("the store recorded topic ID %s, %s; want %s, %s", rec.TopicIDs[topic], fmtPos(rec.Position), idNew, fmtPos(endNew))
	}
}

// deleteTopic deletes topic and waits until the metadata no longer has it.
func deleteTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
	cl := newClient(t)
	for {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = false
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, cl)
		if err == nil && len(r.Topics) == 1 && errors.Is(kerr.ErrorForCode(r.Topics[0].ErrorCode), kerr.UnknownTopicOrPartition) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s still in the metadata 2 minutes after its deletion (%v)", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopicAgain creates a deleted topic again, once the deletion has
// gone through everywhere.
func createTopicAgain(t *testing.T, adm *kadm.Client, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		r, err := adm.CreateTopics(ctx, int32(partitions), 1, nil, topic)
		if err == nil {
			err = r.Error()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) || ctx.Err() != nil {
			t.Fatalf("re-create topic %s: %v", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	createTopic(t, topic, partitions) // waits for leaders
}

// TestSplitGroupPauses: two ingesters with their own stores in one
// consumer group (issue 9, item 6: each kept what it was assigned, and a
// delete consumed by one never reached the other's store). The second is
// assigned partitions whose history is in the first's store: it applies
// none of their records and is not ready, saying which; the first, having
// lost partitions it has history for, stops too and says why. When the
// second leaves, the first gets everything back, resumes, and ends with
// exactly the whole stream.
func TestSplitGroupPauses(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("split")
	createTopic(t, topic, 4)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	st := newStream(topic, 4, decode.FormatBinary, "", 0, 2000, 2, seed)
	recs1 := st.records(4000)
	produceTo(t, addrs, recs1)
	end1 := endOffsets(t, adm, topic)
	group := uniq("split-group")
	cfg := func(name string) (ingest.Config, *logBuffer) {
		log, lb := testLogger(t, name)
		return ingest.Config{Brokers: addrs, Topics: []string{topic}, Group: group, DeadLetterTopic: uniq("split-dead"),
			FlushInterval: 100 * time.Millisecond, Logger: log, Metrics: ingest.NewMetrics(nil)}, lb
	}

	sA, _ := openStore(t, t.TempDir(), 256<<10)
	defer sA.Close()
	cfgA, logA := cfg("ingester A")
	a := startIngester(t, sA, nil, cfgA)
	a.waitDurable(t, end1, 2*time.Minute)

	sB, _ := openStore(t, t.TempDir(), 256<<10)
	defer sB.Close()
	cfgB, logB := cfg("ingester B")
	b := startIngester(t, sB, nil, cfgB)
	conflicted := func(r *running, about string) bool {
		err := r.in.Ready()
		return err != nil && strings.HasPrefix(err.Error(), "source conflict") && strings.Contains(err.Error(), about)
	}
	// B joins with nothing and is then given partitions A consumed.
	if !waitFor(2*time.Minute, func() bool {
		return a.exited.Load() || b.exited.Load() ||
			conflicted(a, "this store holds the history of") && conflicted(b, "their history is in another store")
	}) {
		t.Fatalf("not both paused for the conflict within 2 minutes: A %v; B %v", a.in.Ready(), b.in.Ready())
	}
	if a.exited.Load() || b.exited.Load() {
		t.Fatalf("an ingester stopped: A %v, B %v", a.exited.Load(), b.exited.Load())
	}
	errA, errB := a.in.Ready(), b.in.Ready()
	t.Logf("A: %v", errA)
	t.Logf("B: %v", errB)
	// Which partitions: A holds history of all four, B was given some.
	if !strings.Contains(errA.Error(), "this store holds the history of "+topic+"[") {
		t.Errorf("A's reason does not name the partitions with its history held elsewhere: %v", errA)
	}
	if !strings.Contains(errB.Error(), "their history is in another store") || !strings.Contains(errB.Error(), "partitions "+topic+"[") {
		t.Errorf("B's reason does not name the partitions whose history is in another store: %v", errB)
	}
	for name, r := range map[string]struct {
		m   *ingest.Metrics
		log *logBuffer
		why string
	}{"A": {cfgA.Metrics, logA, errA.Error()}, "B": {cfgB.Metrics, logB, errB.Error()}} {
		if g, c := testutil.ToFloat64(r.m.SourceConflict), testutil.ToFloat64(r.m.SourceConflicts); g != 1 || c != 1 {
			t.Errorf("%s: source conflict gauge %v, count %v; want 1 and 1", name, g, c)
		}
		// One ERROR line per conflict, with the partitions and the remedy.
		if n := r.log.count(`level=ERROR msg="ingestion paused: source conflict`); n < 1 || !r.log.contains(strconv.Quote("ingestion paused: "+r.why)) {
			t.Errorf("%s logged %d ERROR lines about the conflict, none of them with the reason Ready gives", name, n)
		}
	}

	// More records, to every partition, deletes included, while both are
	// paused: neither may apply any of them.
	recs2 := st.records(4000)
	produceTo(t, addrs, recs2)
	end2 := endOffsets(t, adm, topic)
	appliedA := a.in.Applied()
	time.Sleep(3 * time.Second) // a chance to ingest what they must not
	if got := a.in.Applied(); !samePosition(got, appliedA) || !covers(end1, got) {
		t.Errorf("A applied records while paused: %s (at the conflict %s, first stream %s)", fmtPos(got), fmtPos(appliedA), fmtPos(end1))
	}
	if got := b.in.Applied(); len(got) > 0 {
		t.Errorf("B applied records of partitions whose history is in A's store: %s", fmtPos(got))
	}
	if err := b.stop(t); err != nil {
		t.Fatalf("B's Run: %v", err)
	}
	if got, _, err := readStore(sB, nil); err != nil || len(got) > 0 {
		t.Errorf("B's store holds %d edges (%v), want none", len(got), err)
	}
	if p := storePosition(t, sB); len(p) > 0 {
		t.Errorf("B's store recorded %s, want nothing", fmtPos(p))
	}

	// B left: A gets every partition back and resumes by itself.
	a.waitDurable(t, end2, 2*time.Minute)
	if !waitFor(30*time.Second, func() bool { return a.in.Ready() == nil }) {
		t.Errorf("A holds everything again but is not ready: %v", a.in.Ready())
	}
	if g := testutil.ToFloat64(cfgA.Metrics.SourceConflict); g != 0 {
		t.Errorf("A's source conflict gauge is %v after it resumed", g)
	}
	if err := a.stop(t); err != nil {
		t.Fatalf("A's Run: %v", err)
	}
	checkStore(t, "A at the end", sA, nil, oracleOf(append(append([]*record(nil), recs1...), recs2...), nil))
	if got := storePosition(t, sA); !samePosition(restrict(got, end2), end2) {
		t.Errorf("A's store recorded %s, want %s", fmtPos(got), fmtPos(end2))
	}
}

// TestSourceTopicRecreatedWhileRunning: a topic deleted and re-created
// while the ingester consumes it is another log too: when its partitions
// are assigned again, Run returns a *SourceMismatchError naming both IDs
// (it applies nothing of the new topic), and a restart is refused until
// the flag is given.
func TestSourceTopicRecreatedWhileRunning(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("recreated-live")
	createTopic(t, topic, 2)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	recsOld := newStream(topic, 2, decode.FormatBinary, "", 0, 1000, 2, seed).records(1000)
	recsNew := newStream(topic, 2, decode.FormatBinary, "", 1_000_000, 1000, 2, seed+1).records(3000)
	produceTo(t, addrs, recsOld)
	endOld := endOffsets(t, adm, topic)
	_, idOld := sourceOf(t, addrs, topic)

	s, _ := openStore(t, t.TempDir(), 256<<10)
	defer s.Close()
	log, _ := testLogger(t, "ingester")
	cfg := ingest.Config{Brokers: addrs, Topics: []string{topic}, Group: uniq("recreated-live-group"), DeadLetterTopic: uniq("recreated-live-dead"),
		FlushInterval: 100 * time.Millisecond, Logger: log}
	r := startIngester(t, s, nil, cfg)
	r.waitDurable(t, endOld, 2*time.Minute)

	deleteTopic(t, adm, topic)
	createTopicAgain(t, adm, topic, 2)
	produceTo(t, addrs, recsNew)
	_, idNew := sourceOf(t, addrs, topic)
	var err error
	select {
	case err = <-r.done:
		r.done <- err
	case <-time.After(3 * time.Minute):
		t.Fatalf("Run still running 3 minutes after the topic was re-created (ready: %v)", r.in.Ready())
	}
	var mm *ingest.SourceMismatchError
	if !errors.As(err, &mm) || !mm.WhileRunning || len(mm.Topics) != 1 || mm.Topics[0] != (ingest.TopicMismatch{Topic: topic, Recorded: idOld, Found: idNew}) {
		t.Fatalf("Run returned %v, want a mismatch of %s: %s then %s", err, topic, idOld, idNew)
	}
	t.Logf("Run returned: %v", err)
	checkStore(t, "after the re-creation", s, nil, oracleOf(recsOld, nil))
	if rec := storeRecorded(t, s); rec.TopicIDs[topic] != idOld || !samePosition(rec.Position, endOld) {
		t.Errorf("the store recorded topic ID %s, %s; want the old topic's %s, %s", rec.TopicIDs[topic], fmtPos(rec.Position), idOld, fmtPos(endOld))
	}
	runRefused(t, s, cfg)
}
