package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestFraudAlertsReachKafka runs serve's pieces against the real broker:
// an ingester consuming JSON transfers between string-keyed accounts, a
// fraud monitor (cycles of length <= 4, fan-in over a window) on a
// stateful view, and the Kafka alert sink. Every simple cycle of length
// <= 4 of the final graph must arrive on the alert topic exactly once (only
// inserts: the cycles new at each pull add up to the final graph's), named
// by the accounts' keys through the dictionary, with the alert headers.
func TestFraudAlertsReachKafka(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	topic, alertTopic := uniq("transfers"), uniq("alerts")
	createTopic(t, topic, 2)
	s, dict, vm := openStoreViews(t, 256<<10)
	ctx := context.Background()
	sink, err := alerts.NewKafkaSink(ctx, alerts.Config{Brokers: addrs, Topic: alertTopic, Graph: "transfers"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Start(nil); err != nil {
		t.Fatal(err)
	}
	// Named as serve names them: keys and source ids from the dictionary,
	// the Kafka record of the operation from the ingester's references.
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Sinks: []analytics.AlertSink{sink},
		Names: dict.Name,
		Source: func(ref uint64) (analytics.AlertSource, bool) {
			r, ok := ingest.SourceOf([]string{topic}, ref)
			return analytics.AlertSource{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, ok
		}})
	if _, err := reg.Register(analytics.Spec{Type: "fraud", MaxCycle: 4, RingSearch: "any", Threshold: 1000, BatchSize: 50}); err != nil {
		t.Fatal(err)
	}

	// Transfers among 40 accounts, as JSON with string keys, one per record.
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	type tr struct{ from, to int }
	var trs []tr
	seen := map[tr]bool{}
	for len(trs) < 150 {
		x := tr{r.IntN(40), r.IntN(40)}
		if !seen[x] {
			seen[x] = true
			trs = append(trs, x)
		}
	}
	prod := newProducer(t)
	for i, x := range trs {
		v := fmt.Sprintf(`{"op":"add","src":"acct-%d","dst":"acct-%d","weight":%d}`, x.from, x.to, 10+i)
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := endOffsets(t, newAdmin(t), topic)
	run := startIngester(t, s, dict, ingest.Config{Brokers: addrs, Topics: []string{topic}, Group: uniq("alerts-group"),
		Format: decode.FormatJSON, DeadLetterTopic: uniq("alerts-dead"), FlushInterval: 200 * time.Millisecond})
	run.waitDurable(t, end, 60*time.Second)
	last, _ := s.Metrics()
	if !waitFor(60*time.Second, func() bool { res, _ := reg.Result("fraud"); return res.Ready && res.Seq == last.LastSeq }) {
		t.Fatalf("the fraud monitor did not catch up with seq %d", last.LastSeq)
	}
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	reg.Close()
	closeSinkDelivered(t, sink, 60*time.Second)

	// The reference: every simple cycle of length <= 4, by account keys.
	out := map[string][]string{}
	for _, x := range trs {
		out[fmt.Sprint("acct-", x.from)] = append(out[fmt.Sprint("acct-", x.from)], fmt.Sprint("acct-", x.to))
	}
	want := map[string]bool{}
	var path []string
	var dfs func(start, v string)
	dfs = func(start, v string) {
		for _, w := range out[v] {
			if w == start {
				want[cycleKey(path)] = true
				continue
			}
			if w < start || len(path) == 4 {
				continue
			}
			dup := false
			for _, p := range path {
				dup = dup || p == w
			}
			if !dup {
				path = append(path, w)
				dfs(start, w)
				path = path[:len(path)-1]
			}
		}
	}
	for v := range out {
		path = []string{v}
		dfs(v, v)
	}
	if len(want) == 0 {
		t.Fatal("the random transfers hold no cycle: the test checks nothing")
	}

	recs := consumeAll(t, alertTopic, len(want), 2*time.Second, 30*time.Second)
	got := map[string]bool{}
	for _, rec := range recs {
		var a analytics.Alert
		if err := json.Unmarshal(rec.Value, &a); err != nil {
			t.Fatal(err)
		}
		hdr := map[string]string{}
		for _, h := range rec.Headers {
			hdr[h.Key] = string(h.Value)
		}
		if hdr[alerts.HeaderAnalytic] != "fraud" || hdr[alerts.HeaderKind] != a.Kind || hdr[alerts.HeaderGraph] != "transfers" {
			t.Fatalf("alert headers %v for %+v", hdr, a)
		}
		if a.Kind != "cycle" {
			continue
		}
		// The alert names its accounts (and its ids as decimal strings),
		// is keyed by the account it is about, and names the record that
		// raised it.
		var keys []string
		for i, id := range a.Cycle {
			k, ok := dict.Key(id)
			if !ok {
				t.Fatalf("alert %+v names id %d, which has no key", a, id)
			}
			if len(a.CycleKeys) != len(a.Cycle) || a.CycleKeys[i] != k || a.CycleIDs[i] != strconv.FormatUint(id, 10) {
				t.Fatalf("alert %s: cycle %v named %v / %v, want key %q at %d", rec.Value, a.Cycle, a.CycleKeys, a.CycleIDs, k, i)
			}
			keys = append(keys, a.CycleKeys[i])
		}
		if vk, _ := dict.Key(a.Vertex); a.VertexKey != vk || string(rec.Key) != vk || a.VertexID != strconv.FormatUint(a.Vertex, 10) {
			t.Fatalf("alert %s (record key %q): vertex %d named %q / %q, want %q", rec.Value, rec.Key, a.Vertex, a.VertexKey, a.VertexID, vk)
		}
		if a.Source == nil || a.Source.Topic != topic || a.Source.Offset < 0 || a.Source.Offset >= int64(len(trs)) {
			t.Fatalf("alert %s: source %+v, want a record of %s", rec.Value, a.Source, topic)
		}
		k := cycleKey(keys)
		if got[k] {
			t.Fatalf("cycle %v alerted twice", keys)
		}
		got[k] = true
	}
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Fatalf("%d cycles expected, %d alerted; missing %v, unexpected %v", len(want), len(got), missing, extra)
	}
	t.Logf("%d transfers, %d cycles alerted on %s", len(trs), len(got), alertTopic)
}

// cycleKey names a cycle by its rotation starting at its smallest element.
func cycleKey(c []string) string {
	m := 0
	for i := range c {
		if c[i] < c[m] {
			m = i
		}
	}
	return fmt.Sprint(append(append([]string(nil), c[m:]...), c[:m]...))
}

// closeSinkDelivered waits until sink has produced every alert raised to
// it (the alert topic holds them all), at most wait, then closes it. A
// sink produces only once it holds the alert topic's partition 0 in its
// election group, and on a fresh or busy broker that join can take longer
// than a shutdown's deadline: closing before it would leave the alerts to
// the next start, which a test that reads the topic next does not have.
func closeSinkDelivered(t *testing.T, sink *alerts.KafkaSink, wait time.Duration) {
	t.Helper()
	if !waitFor(wait, func() bool { st := sink.Stats(); return st.Leading && st.Pending == 0 }) {
		t.Fatalf("the alert sink did not produce its alerts within %v: %+v", wait, sink.Stats())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sink.Close(ctx)
}
