package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/graphtide/graphtide/internal/alerts/alertschema"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The sink against franz-go's in-process broker; the real-broker tests of
// alerts end to end, and of a producing replica killed mid-stream, live in
// test/kafka.

func newCluster(t testing.TB) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "alerts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newSink(t testing.TB, c *kfake.Cluster, graph string) *KafkaSink {
	t.Helper()
	return newSinkConfig(t, Config{Brokers: c.ListenAddrs(), Topic: "alerts", Graph: graph, SessionTimeout: 6 * time.Second})
}

func newSinkConfig(t testing.TB, cfg Config) *KafkaSink {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(newTestHandler(t))
	}
	cfg.Opts = append(cfg.Opts, kgo.WithLogger(kgo.BasicLogger(&testWriter{t: t}, kgo.LogLevelInfo, nil)))
	k, err := NewKafkaSink(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func start(t *testing.T, k *KafkaSink, floor []byte) {
	t.Helper()
	if err := k.Start(floor); err != nil {
		t.Fatal(err)
	}
}

func closeSink(k *KafkaSink) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k.Close(ctx)
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// consumed is what a read_committed reader finds on the topic.
type consumed struct {
	rec   *kgo.Record
	alert analytics.AlertRecord
}

// consume reads the topic until n alerts came or 10s passed, as a
// read_committed consumer (what the package asks of readers).
func consume(t *testing.T, c *kfake.Cluster, n int) []consumed {
	t.Helper()
	return consumeFor(t, c, n, 10*time.Second)
}

// consumeFor is consume for up to d.
func consumeFor(t *testing.T, c *kfake.Cluster, n int, d time.Duration) []consumed {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("alerts"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []consumed
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for len(got) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var a analytics.AlertRecord
			if err := json.Unmarshal(r.Value, &a); err != nil {
				t.Fatal(err)
			}
			got = append(got, consumed{r, a})
		})
	}
	return got
}

func ids(cs []consumed) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = kafkaconn.Header(c.rec, HeaderID)
	}
	return out
}

// The sink turns the store's ids into the sources' (here: ids from 4 up
// stand for 1000 times themselves) without changing the alerts it was
// given, and names the graph in each record.
func TestKafkaSinkDeliversAlerts(t *testing.T) {
	c := newCluster(t)
	k := newSink(t, c, "payments")
	k.SetVertexIDs(func(v uint64) uint64 {
		if v >= 4 {
			return v * 1000
		}
		return v
	})
	start(t, k, nil)
	defer closeSink(k)
	given := []analytics.Alert{
		{Analytic: "fraud", Kind: "cycle", Seq: 7, Vertex: 3, Cycle: []uint64{3, 4, 5}, Value: 3, ID: "c1"},
		{Analytic: "hubs", Kind: "fan_in", Seq: 8, Vertex: 9, Value: 12, Threshold: 10, ID: "f1"},
	}
	k.Publish(given)
	if given[0].Cycle[1] != 4 || given[1].Vertex != 9 {
		t.Fatalf("Publish changed the alerts it was given: %+v", given)
	}
	want := []analytics.Alert{
		{Analytic: "fraud", Kind: "cycle", Seq: 7, Vertex: 3, Cycle: []uint64{3, 4000, 5000}, Value: 3},
		{Analytic: "hubs", Kind: "fan_in", Seq: 8, Vertex: 9000, Value: 12, Threshold: 10},
	}
	got := consume(t, c, 2)
	if len(got) != 2 {
		t.Fatalf("consumed %d alerts: %+v", len(got), k.Stats())
	}
	for i, r := range got {
		a := r.alert
		if a.Analytic != want[i].Analytic || a.Kind != want[i].Kind || a.Vertex != want[i].Vertex || !slices.Equal(a.Cycle, want[i].Cycle) || a.Graph != "payments" {
			t.Fatalf("alert %d: %+v, want %+v", i, a, want[i])
		}
		if kafkaconn.Header(r.rec, HeaderAnalytic) != want[i].Analytic || kafkaconn.Header(r.rec, HeaderKind) != want[i].Kind || kafkaconn.Header(r.rec, HeaderGraph) != "payments" ||
			string(r.rec.Key) != []string{"3", "9000"}[i] {
			t.Fatalf("alert %d: key %q headers %v", i, r.rec.Key, r.rec.Headers)
		}
	}
	if !waitFor(5*time.Second, func() bool { st := k.Stats(); return st.Pending == 0 && st.Produced == 2 }) {
		t.Fatalf("stats after delivery: %+v", k.Stats())
	}
}

func alert(id string) analytics.Alert {
	return analytics.Alert{Analytic: "fraud", Kind: "cycle", Vertex: 1, Cycle: []uint64{1, 2}, ID: id}
}

// A checkpoint keeps what is pending; a sink resumed from it matches the
// alerts its replay raises again against what the topic got since, and
// produces the rest: across a crash each alert is on the topic once.
func TestKafkaSinkResumeProducesEachOnce(t *testing.T) {
	c := newCluster(t)
	k := newSink(t, c, "g")
	start(t, k, nil)
	k.Publish([]analytics.Alert{alert("a"), alert("b")})
	if !waitFor(10*time.Second, func() bool { return k.Stats().Produced == 2 }) {
		t.Fatalf("not produced: %+v", k.Stats())
	}
	state, err := k.Checkpoint(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	k.Publish([]analytics.Alert{alert("c"), alert("d")}) // produced, then a crash
	if !waitFor(10*time.Second, func() bool { return k.Stats().Produced == 4 }) {
		t.Fatalf("not produced: %+v", k.Stats())
	}
	closeSink(k)

	k2 := newSink(t, c, "g")
	if err := k2.Resume(context.Background(), state); err != nil {
		t.Fatal(err)
	}
	start(t, k2, nil)
	defer closeSink(k2)
	// The replay raises c and d again, then e; c once more is a new alert.
	k2.Publish([]analytics.Alert{alert("c"), alert("d"), alert("e"), alert("c")})
	// k2 produces once it holds the election group, which k left on
	// Close; on a loaded machine the rejoin alone can take seconds, so
	// wait for it (and for k2 to have nothing pending) before reading.
	if !waitFor(30*time.Second, func() bool { st := k2.Stats(); return st.Leading && st.Pending == 0 }) {
		t.Fatalf("k2 does not lead or still holds alerts: %+v", k2.Stats())
	}
	if got := ids(consume(t, c, 6)); fmt.Sprint(got) != "[a b c d e c]" {
		t.Fatalf("the topic holds %v", got)
	}
	// Nothing left: the topic holds everything k2 raised.
	if !waitFor(5*time.Second, func() bool { st := k2.Stats(); return st.Pending == 0 && st.Ahead == 0 }) {
		t.Fatalf("stats: %+v", k2.Stats())
	}
}

// A checkpoint taken while alerts wait (no producer yet) carries them,
// and a start from it produces them.
func TestKafkaSinkCheckpointCarriesPending(t *testing.T) {
	c := newCluster(t)
	k := newSink(t, c, "g")
	k.Publish([]analytics.Alert{alert("p1"), alert("p2")}) // not started: nothing is produced
	state, err := k.Checkpoint(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	k.Close(context.Background())
	k2 := newSink(t, c, "g")
	if err := k2.Resume(context.Background(), state); err != nil {
		t.Fatal(err)
	}
	start(t, k2, nil)
	defer closeSink(k2)
	if got := ids(consume(t, c, 2)); fmt.Sprint(got) != "[p1 p2]" {
		t.Fatalf("the topic holds %v", got)
	}
}

// Two replicas raise the same alerts, one ahead of the other; one produces
// them. Stopping it hands production over: the other produces what the
// first had not, and nothing twice; a third graph's sink on the same topic
// changes nothing of theirs.
func TestKafkaSinkHandOver(t *testing.T) {
	c := newCluster(t)
	a, b := newSink(t, c, "g"), newSink(t, c, "g")
	other := newSink(t, c, "h")
	start(t, a, nil)
	if !waitFor(15*time.Second, func() bool { return a.Stats().Leading }) {
		t.Fatal("the only replica does not produce")
	}
	start(t, b, nil)
	start(t, other, nil)
	defer closeSink(other)
	other.Publish([]analytics.Alert{alert("x0"), alert("x1")}) // another graph's: its own election
	var all []analytics.Alert
	for i := range 40 {
		all = append(all, alert(fmt.Sprintf("a%02d", i)))
	}
	a.Publish(all[:30])
	b.Publish(all[:10]) // b is behind
	if !waitFor(10*time.Second, func() bool { return a.Stats().Produced == 30 }) {
		t.Fatalf("a: %+v", a.Stats())
	}
	if !waitFor(10*time.Second, func() bool { return b.Stats().Pending == 0 }) {
		t.Fatalf("b still holds alerts a produced: %+v", b.Stats())
	}
	b.Publish(all[10:35]) // b passes a
	closeSink(a)          // a stops: b takes over
	if !waitFor(20*time.Second, func() bool { st := b.Stats(); return st.Leading && st.Pending == 0 }) {
		t.Fatalf("b did not take over: %+v", b.Stats())
	}
	b.Publish(all[35:])
	defer closeSink(b)
	got := consume(t, c, 42)
	var mine []string
	theirs := 0
	for _, r := range got {
		if r.alert.Graph == "g" {
			mine = append(mine, kafkaconn.Header(r.rec, HeaderID))
		} else {
			theirs++
		}
	}
	want := make([]string, len(all))
	for i, x := range all {
		want[i] = x.ID
	}
	if !slices.Equal(mine, want) || theirs != 2 {
		t.Fatalf("the topic holds %v of g (want %v) and %d of h", mine, want, theirs)
	}
	// Produced counts a transaction once the topic is read past it.
	if !waitFor(10*time.Second, func() bool { return b.Stats().Produced >= 10 }) || b.Stats().Produced != 10 {
		t.Fatalf("b produced %d, want the 10 a had not: %+v", b.Stats().Produced, b.Stats())
	}
}

// A replica that takes over while the old producer still produces (a
// partition, a pause) fences it: the old one's transactions fail, and
// every alert is on the topic once. The second takes over first (its
// producer ID fences the first's), then both are handed every alert: the
// first, lingering 300ms, tries to commit them under its old producer ID
// before the second, lingering a second, commits them; without the fence
// both would produce them all. (The order is made, not hoped for: when
// the take-over came after the first's commit, under load, there was
// nothing to fence.)
func TestKafkaSinkFencesTheOldProducer(t *testing.T) {
	c := newCluster(t)
	cfg := Config{Brokers: c.ListenAddrs(), Topic: "alerts", Graph: "g", SessionTimeout: 6 * time.Second, Linger: 300 * time.Millisecond}
	aTookOver := newMessageSignal(t, "took over the alert producer")
	cfgA := cfg
	cfgA.Logger = slog.New(aTookOver)
	a := newSinkConfig(t, cfgA)
	tookOver := newMessageSignal(t, "took over the alert producer")
	cfgB := cfg
	cfgB.Linger, cfgB.Logger = time.Second, slog.New(tookOver)
	b := newSinkConfig(t, cfgB)
	start(t, a, nil)
	defer closeSink(a)
	// a leads once its own take-over is done, not when the group assigns
	// it the partition: a take-over of a's after b's would fence b.
	select {
	case <-aTookOver.ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("a does not produce: %+v", a.Stats())
	}
	start(t, b, nil)
	defer closeSink(b)
	// b believes it leads too (as if the group had moved the partition and
	// a had not heard yet), and takes the producer over.
	b.gen.Add(1)
	b.leading.Store(true)
	b.poke()
	select {
	case <-tookOver.ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("b did not take the producer over: %+v", b.Stats())
	}
	var all []analytics.Alert
	for i := range 200 {
		all = append(all, alert(fmt.Sprintf("f%03d", i)))
	}
	a.Publish(all)
	b.Publish(all)
	if !waitFor(20*time.Second, func() bool { return a.Stats().Pending == 0 && b.Stats().Pending == 0 }) {
		t.Fatalf("alerts still pending: a %+v b %+v", a.Stats(), b.Stats())
	}
	got := ids(consumeFor(t, c, len(all)+1, 2*time.Second))
	want := make([]string, len(all))
	for i, x := range all {
		want[i] = x.ID
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the topic holds %d alerts, want each of %d once (a %+v, b %+v)", len(got), len(want), a.Stats(), b.Stats())
	}
	if a.Stats().TxErrors == 0 {
		t.Fatalf("a was not fenced: a %+v, b %+v", a.Stats(), b.Stats())
	}
}

// messageSignal is a log handler that closes ch at the first record whose
// message starts with prefix, and passes every record on to the test's
// log.
type messageSignal struct {
	prefix string
	ch     chan struct{}
	once   sync.Once
	next   slog.Handler
}

func newMessageSignal(t testing.TB, prefix string) *messageSignal {
	return &messageSignal{prefix: prefix, ch: make(chan struct{}), next: newTestHandler(t)}
}

func (h *messageSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h *messageSignal) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.once.Do(func() { close(h.ch) })
	}
	return h.next.Handle(ctx, r)
}
func (h *messageSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *messageSignal) WithGroup(string) slog.Handler      { return h }

// testWriter writes a sink's log into its test's log (shown when the test
// fails), until the test ends.
type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool // Protected by mu.
}

func newTestHandler(t testing.TB) slog.Handler {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

// A new producer reads the topic to its end before it produces: what the
// old one produced is not produced again, even when the new one's reader
// is slow (here: its fetches wait until the take-over had time to
// happen).
func TestKafkaSinkTakeOverReadsToTheEnd(t *testing.T) {
	c := newCluster(t)
	var all []analytics.Alert
	for i := range 50 {
		all = append(all, alert(fmt.Sprintf("e%02d", i)))
	}
	a := newSink(t, c, "g")
	start(t, a, nil)
	a.Publish(all)
	if !waitFor(10*time.Second, func() bool { return a.Stats().Produced == uint64(len(all)) }) {
		t.Fatalf("a: %+v", a.Stats())
	}
	closeSink(a)
	b := newSink(t, c, "g")
	b.Publish(all)
	gate := make(chan struct{})
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case <-gate:
		default:
			c.SleepControl(func() { <-gate })
		}
		return nil, nil, false
	})
	start(t, b, nil)
	defer closeSink(b)
	time.Sleep(1500 * time.Millisecond)
	close(gate)
	if !waitFor(15*time.Second, func() bool { st := b.Stats(); return st.Leading && st.Pending == 0 }) {
		t.Fatalf("b: %+v", b.Stats())
	}
	if got := consumeFor(t, c, len(all)+1, 2*time.Second); len(got) != len(all) || b.Stats().Produced != 0 {
		t.Fatalf("the topic holds %d alerts, want %d; b produced %d", len(got), len(all), b.Stats().Produced)
	}
}

// Alerts on the topic from records below the floor (the analytics are
// past them) are not kept as ahead; those above are, and match.
func TestKafkaSinkFloor(t *testing.T) {
	c := newCluster(t)
	a := newSink(t, c, "g")
	start(t, a, nil)
	src := func(off int64) *analytics.AlertSource {
		return &analytics.AlertSource{Topic: "edges", Partition: 0, Offset: off}
	}
	old, later := alert("old"), alert("later")
	old.Source, later.Source = src(5), src(50)
	a.Publish([]analytics.Alert{old, later})
	if !waitFor(10*time.Second, func() bool { return a.Stats().Produced == 2 }) {
		t.Fatalf("a: %+v", a.Stats())
	}
	closeSink(a)
	floor := ingest.Position{}
	floor.Set("edges", 0, 10)
	b := newSink(t, c, "g")
	start(t, b, floor.Encode())
	defer closeSink(b)
	if !waitFor(10*time.Second, func() bool { return b.Stats().Ahead == 1 }) {
		t.Fatalf("b: %+v, want the one alert above the floor ahead", b.Stats())
	}
	b.Publish([]analytics.Alert{later})
	if st := b.Stats(); st.Ahead != 0 || st.Pending != 0 {
		t.Fatalf("b: %+v", st)
	}
}

// A checkpoint of the version before alerts had one JSON shape holds a
// pending alert in that version's record (no vertex_id, the store's
// number in vertex): a sink resumed from it produces it in today's shape,
// which the alerts' JSON Schema accepts, named as the registry named it.
func TestKafkaSinkResumesPendingAlertsOfTheShapeBefore(t *testing.T) {
	sch, err := alertschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	// What the version before wrote for a pending alert: its record's
	// value was the analytics.Alert fields and the graph.
	old := `{"version":2,"graph":"g","watched":{},"pending":[{"id":"p1","analytic":"rings","kind":"cycle","key":"acct-9",` +
		`"value":{"time":"2026-12-06T10:29:42.41193875Z","analytic":"rings","kind":"cycle","seq":3,"vertex":4611686018427387906,` +
		`"cycle":[4611686018427387906,4611686018427387904],"value":2,"vertex_id":"4611686018427387906","vertex_key":"acct-9",` +
		`"cycle_ids":["4611686018427387906","4611686018427387904"],"cycle_keys":["acct-9","acct-17"],"id":"p1",` +
		`"source":{"topic":"transfers","partition":0,"offset":2},"graph":"g"},"source":{"topic":"transfers","partition":0,"offset":2}}]}`
	c := newCluster(t)
	k := newSink(t, c, "g")
	if err := k.Resume(context.Background(), []byte(old)); err != nil {
		t.Fatal(err)
	}
	start(t, k, nil)
	defer closeSink(k)
	got := consume(t, c, 1)
	if len(got) != 1 {
		t.Fatalf("%d alerts produced: %+v", len(got), k.Stats())
	}
	v := string(got[0].rec.Value)
	want := `{"id":"p1","time":"2026-12-06T10:29:42.41193875Z","graph":"g","analytic":"rings","kind":"cycle","seq":3,` +
		`"vertex":4611686018427387906,"vertex_id":"4611686018427387906","vertex_key":"acct-9",` +
		`"cycle":[4611686018427387906,4611686018427387904],"cycle_ids":["4611686018427387906","4611686018427387904"],"cycle_keys":["acct-9","acct-17"],` +
		`"value":2,"source":{"topic":"transfers","partition":0,"offset":2}}`
	if v != want {
		t.Fatalf("the pending alert is produced as\n%s\nwant\n%s", v, want)
	}
	if err := sch.Validate(got[0].rec.Value); err != nil {
		t.Fatal(err)
	}
	if string(got[0].rec.Key) != "acct-9" || kafkaconn.Header(got[0].rec, HeaderID) != "p1" {
		t.Fatalf("key %q headers %v", got[0].rec.Key, got[0].rec.Headers)
	}
}

// A state this sink wrote (shape 1) holds its pending alerts as the sink
// encoded them: Resume takes each as it is, without decoding and encoding
// it again (which, for an alert storm's thousands of pending alerts with
// evidence, made every restart slow), so its bytes reach the topic
// unchanged, spaces and all; a state of the shape before is written again
// (TestKafkaSinkResumesPendingAlertsOfTheShapeBefore).
func TestKafkaSinkResumesPendingAlertsAsWritten(t *testing.T) {
	value := `{"id": "p2", "time": "2026-12-06T10:29:42Z", "analytic": "rings", "kind": "cycle", "seq": 3, "vertex": 4, "vertex_id": "4", "value": 2}`
	state := `{"version":2,"shape":1,"graph":"g","watched":{},"pending":[{"id":"p2","analytic":"rings","kind":"cycle","key":"4","value":` + value + `}]}`
	c := newCluster(t)
	k := newSink(t, c, "g")
	if err := k.Resume(context.Background(), []byte(state)); err != nil {
		t.Fatal(err)
	}
	start(t, k, nil)
	defer closeSink(k)
	got := consume(t, c, 1)
	if len(got) != 1 || string(got[0].rec.Value) != value {
		t.Fatalf("the pending alert is produced as %d records (%+v); want %s", len(got), got, value)
	}
	// And a checkpoint says so.
	b, err := k.Checkpoint(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := decodeState(b); err != nil || st.Shape != alertShape {
		t.Fatalf("the state checkpointed: %s (%v)", b, err)
	}
}

// An alert with evidence reaches the topic with it: names, type, amount,
// times, reference, record and the property document as its object.
func TestKafkaSinkDeliversEvidence(t *testing.T) {
	sch, err := alertschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t)
	k := newSink(t, c, "payments")
	k.SetVertexIDs(func(v uint64) uint64 { return v * 10 })
	start(t, k, nil)
	defer closeSink(k)
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	k.Publish([]analytics.Alert{{Analytic: "mules", Kind: "mule", Seq: 4, Vertex: 2, VertexID: "20", Value: 2, Threshold: 1, ID: "m1",
		Evidence: []analytics.Evidence{
			{Seq: 3, Src: 1, Dst: 2, SrcKey: "acct-1", DstID: "20", TypeName: "payment", Amount: 12.5, EventTime: at, EventRef: "e-91",
				Props: `{"currency":"EUR"}`, Source: &analytics.AlertSource{Topic: "payments", Offset: 5}},
		},
		Totals: &analytics.AlertTotals{Events: 1, Amount: 12.5, Counterparties: 1, AmountOut: 7, Receivers: 1, First: at, Last: at}}})
	got := consume(t, c, 1)
	if len(got) != 1 {
		t.Fatalf("%d alerts produced: %+v", len(got), k.Stats())
	}
	want := `{"id":"m1","time":"0001-01-01T00:00:00Z","graph":"payments","analytic":"mules","kind":"mule","seq":4,"vertex":20,"vertex_id":"20","value":2,"threshold":1,` +
		`"evidence":[{"src_id":"10","src_key":"acct-1","dst_id":"20","type":"payment","amount":12.5,"event_time":"2026-12-06T05:00:00Z","ref":"e-91",` +
		`"source":{"topic":"payments","partition":0,"offset":5},"props":{"currency":"EUR"},"seq":3}],` +
		`"totals":{"events":1,"amount":12.5,"counterparties":1,"amount_out":7,"receivers":1,"first":"2026-12-06T05:00:00Z","last":"2026-12-06T05:00:00Z","span":"0s"}}`
	if v := string(got[0].rec.Value); v != want {
		t.Fatalf("the alert is produced as\n%s\nwant\n%s", v, want)
	}
	if err := sch.Validate(got[0].rec.Value); err != nil {
		t.Fatal(err)
	}
}

// A transaction the client reports committed while the broker aborted it
// (franz-go 1.22 does this when it ends a transaction before it counted
// its produce as added: it aborts and returns nil) does not lose its
// alerts: the sink confirms each commit against the topic and, when the
// alerts are not there, takes the producer over again and produces them.
// Here the broker turns the first commit into an abort.
func TestKafkaSinkConfirmsCommitsOnTheTopic(t *testing.T) {
	c := newCluster(t)
	var turned atomic.Int32
	c.ControlKey(int16(kmsg.EndTxn), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req := kr.(*kmsg.EndTxnRequest); req.Commit && turned.Add(1) == 1 {
			req.Commit = false // answered as the commit asked for, done as an abort
		}
		return nil, nil, false
	})
	k := newSink(t, c, "g")
	start(t, k, nil)
	defer closeSink(k)
	k.Publish([]analytics.Alert{alert("a1"), alert("a2")})
	got := ids(consume(t, c, 2))
	if !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("the topic holds %v, want a1 and a2 once: %+v", got, k.Stats())
	}
	if turned.Load() < 2 {
		t.Fatalf("%d commits: the first was aborted, so a second must come", turned.Load())
	}
	if !waitFor(5*time.Second, func() bool { st := k.Stats(); return st.Pending == 0 && st.Produced == 2 && st.TxErrors == 1 }) {
		t.Fatalf("stats: %+v (want 2 produced after 1 failed transaction)", k.Stats())
	}
}
