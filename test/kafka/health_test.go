package kafkatest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestReadyFollowsBrokers stops the broker for longer than ReadyGrace:
// Ready must say that no broker answers (before, it stayed ready), and be
// ready again once the broker is back; nothing is lost.
func TestReadyFollowsBrokers(t *testing.T) {
	addrs := needBroker(t)
	if !broker.own {
		t.Skipf("the broker comes from %s: not ours to stop", brokersEnv)
	}
	adm := newAdmin(t)
	topic := uniq("ready-brokers")
	createTopic(t, topic, 2)
	st := newStream(topic, 2, decode.FormatBinary, "", 0, 500, 2, uint64(time.Now().UnixNano()))
	recs := st.records(500)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, topic)

	restarted := true
	t.Cleanup(func() {
		if !restarted {
			if out, err := startBroker(broker.port); err != nil {
				t.Errorf("restarting the broker after the test: %v\n%s", err, out)
			}
		}
	})
	s, dict := openStore(t, t.TempDir(), 1<<20)
	defer s.Close()
	defer dict.Close()
	log, _ := testLogger(t, "ingester")
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("ready-brokers-group"),
		DeadLetterTopic: uniq("ready-brokers-dead"), FlushInterval: 100 * time.Millisecond,
		ReadyGrace: 2 * time.Second, Logger: log,
	})
	run.waitDurable(t, end, time.Minute)
	if !waitFor(30*time.Second, func() bool { return run.in.Ready() == nil }) {
		t.Fatalf("not ready with the broker up: %v", run.in.Ready())
	}

	restarted = false
	t0 := time.Now()
	if out, err := stopBroker(); err != nil {
		t.Fatalf("stopping the broker: %v\n%s", err, out)
	}
	ok := waitFor(time.Minute, func() bool {
		err := run.in.Ready()
		return err != nil && strings.Contains(err.Error(), "no Kafka broker has answered")
	})
	t.Logf("broker stopped; after %v ready says: %v", time.Since(t0).Round(time.Millisecond), run.in.Ready())
	if !ok {
		t.Errorf("the broker is stopped but Ready does not say so within a minute: %v", run.in.Ready())
	}
	if out, err := startBroker(broker.port); err != nil {
		t.Fatalf("restarting the broker: %v\n%s", err, out)
	}
	restarted = true
	t1 := time.Now()
	if !waitFor(3*time.Minute, func() bool { return run.in.Ready() == nil }) {
		t.Fatalf("the broker is back but the ingester is not ready after 3 minutes: %v", run.in.Ready())
	}
	t.Logf("ready again %v after the broker restarted", time.Since(t1).Round(time.Millisecond))

	// Still ingesting.
	more := st.records(200)
	if err := produce(ctx, newProducer(t), more); err != nil {
		t.Fatal(err)
	}
	run.waitDurable(t, endOffsets(t, adm, topic), 2*time.Minute)
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkStore(t, "after the broker came back", s, dict, oracleOf(append(recs, more...), nil))
}

// TestRestartCommitsGroupOffsets: a caught-up store restarted with
// nothing new to consume, whose group has no committed offsets (deleted
// here; a crash before the commit, or offsets expired, leave the same),
// commits its recorded position once assigned, so that lag tools see no
// lag; and its own lag, from the brokers' end offsets, is 0 for every
// partition although no record arrives.
func TestRestartCommitsGroupOffsets(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic, end := producedTopic(t, "restart-commit", 3, 900)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	group := uniq("restart-commit-group")
	s, dict := openStore(t, t.TempDir(), 1<<20)
	defer s.Close()
	defer dict.Close()
	log, _ := testLogger(t, "ingester")
	cfg := ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: group,
		DeadLetterTopic: uniq("restart-commit-dead"), FlushInterval: 100 * time.Millisecond,
		LagInterval: 500 * time.Millisecond, Logger: log,
	}
	run := startIngester(t, s, dict, cfg)
	run.waitDurable(t, end, time.Minute)
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// The group has left; forget its offsets.
	set := kadm.TopicsSet{}
	for p := range end[topic] {
		set.Add(topic, p)
	}
	if _, err := adm.DeleteOffsets(ctx, group, set); err != nil {
		t.Fatalf("deleting the group's offsets: %v", err)
	}
	committed := func() ingest.Position { return committedOffsets(t, adm, group) }
	if c := committed(); len(c) > 0 {
		t.Fatalf("the group still has offsets %s", fmtPos(c))
	}

	m := ingest.NewMetrics(nil)
	cfg.Metrics = m
	run = startIngester(t, s, dict, cfg)
	stored := storePosition(t, s)
	if !samePosition(restrict(stored, end), end) {
		t.Fatalf("the store recorded %s, want %s", fmtPos(stored), fmtPos(end))
	}
	// lag returns a partition's lag, if reported (asking for a series
	// that is not there would create it).
	lag := func(p int32) (float64, bool) {
		if testutil.CollectAndCount(m.Lag) < len(end[topic]) {
			return 0, false
		}
		return testutil.ToFloat64(m.Lag.WithLabelValues(topic, strconv.Itoa(int(p)))), true
	}
	ok := waitFor(time.Minute, func() bool {
		if !samePosition(committed(), end) {
			return false
		}
		for p := range end[topic] {
			if v, ok := lag(p); !ok || v != 0 {
				return false
			}
		}
		return run.in.Ready() == nil
	})
	if !ok {
		t.Errorf("after a restart with nothing new: the group's offsets are %s, want the store's %s; ready %v", fmtPos(committed()), fmtPos(end), run.in.Ready())
		for p := range end[topic] {
			v, ok := lag(p)
			t.Errorf("lag of partition %d: %v (reported %v), want 0", p, v, ok)
		}
	}
	if got := testutil.ToFloat64(m.Records.WithLabelValues(topic)); got != 0 {
		t.Errorf("%v records consumed after the restart, want none: the test needs nothing new", got)
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestReadyMaxLagFollowsTheBroker: a replica whose applier is held while
// the topic holds more than --ready-max-lag records past what it applied
// is not ready, saying how far behind it is, and is ready again once it
// caught up (the lag measured against the broker's end offsets).
func TestReadyMaxLagFollowsTheBroker(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	topic, end := producedTopic(t, "ready-lag", 2, 1000)
	s, dict := openStore(t, t.TempDir(), 1<<20)
	defer s.Close()
	defer dict.Close()
	log, _ := testLogger(t, "ingester")
	// The first batch applied holds the applier until gate closes.
	gate, held := make(chan struct{}), make(chan struct{})
	var once, release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	defer open()
	cfg := ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("ready-lag-group"),
		DeadLetterTopic: uniq("ready-lag-dead"), FlushInterval: 100 * time.Millisecond, MaxPollRecords: 50,
		LagInterval: 200 * time.Millisecond, ReadyMaxLag: 100, Logger: log,
		OnVisible: func([]time.Time, time.Time) { once.Do(func() { close(held); <-gate }) },
	}
	run := startIngester(t, s, dict, cfg)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("nothing applied within a minute")
	}
	want := "records behind the brokers' end offsets (more than --ready-max-lag 100"
	if !waitFor(30*time.Second, func() bool { err := run.in.Ready(); return err != nil && strings.Contains(err.Error(), want) }) {
		t.Fatalf("held after one batch of at most 50 of 1000 records: Ready says %v, want %q", run.in.Ready(), want)
	}
	open()
	run.waitDurable(t, end, time.Minute)
	if !waitFor(30*time.Second, func() bool { n, ok := run.in.Behind(); return run.in.Ready() == nil && n == 0 && ok }) {
		n, ok := run.in.Behind()
		t.Fatalf("caught up: Ready says %v, Behind %d (%v)", run.in.Ready(), n, ok)
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// producedTopic creates a topic named after prefix with the given
// partitions (seededTopic), produces n binary records of a random stream
// of 500 vertices to it, and returns its name and end offsets.
func producedTopic(t *testing.T, prefix string, partitions, n int) (string, ingest.Position) {
	t.Helper()
	topic, st, _ := seededTopic(t, prefix, partitions, 500, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), st.records(n)); err != nil {
		t.Fatal(err)
	}
	return topic, endOffsets(t, newAdmin(t), topic)
}
