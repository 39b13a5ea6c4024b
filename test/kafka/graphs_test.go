package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/graphid"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/writes"
)

// TestTwoGraphsOnOneCluster runs two serve instances on the real broker,
// each on topics of its own and with no other Kafka name given (the
// group, the writes, alert and dead-letter topics default from each
// graph), both with a degree monitor. A batch written to one graph over
// HTTP must reach that graph only, each graph's alert topic must hold its
// own alerts only (named by the header graphtide-graph) and hold some, and
// neither may have consumed the other's group.
func TestTwoGraphsOnOneCluster(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	type graph struct {
		topic string
		st    *stream
		ch    *child
		log   *logBuffer
	}
	gs := make([]*graph, 2)
	for i, name := range []string{"payments", "edges"} {
		topic, st, _ := seededTopic(t, "graphs-"+name, 2, 300, 2, uint64(i))
		_, log := testLogger(t, "graph "+name)
		ch := startChild(t, childConfig{Brokers: addrs, Topics: []string{topic}, DefaultNames: true, Dir: t.TempDir(), MemBytes: 256 << 10,
			FlushEvery: 200 * time.Millisecond, Serve: true, Analytics: []analytics.Spec{{Type: "degree", Direction: "out", Threshold: 5}}}, log)
		t.Cleanup(func() {
			if ch.alive() {
				ch.kill(t)
			}
		})
		gs[i] = &graph{topic: topic, st: st, ch: ch, log: log}
	}
	ctx := context.Background()
	for _, g := range gs {
		if err := produce(ctx, newProducer(t), g.st.records(1500)); err != nil {
			t.Fatal(err)
		}
	}
	// The tour's write, to the first graph only: a vertex neither stream
	// names.
	for i, g := range gs {
		if !waitFor(30*time.Second, func() bool { return g.ch.httpAddr() != "" }) {
			t.Fatalf("graph %d does not serve HTTP\n%s", i, g.log.tail(20))
		}
	}
	c, err := api.NewClient("http://"+gs[0].ch.httpAddr(), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const src, dst = 987654321, 77
	res, err := c.PostBatch(ctx, &writes.Request{Ops: []byte(fmt.Sprintf(`[{"src":%d,"dst":%d,"weight":2}]`, src, dst))})
	if err != nil || !res.Applied {
		t.Fatalf("the write to graph 0: %+v, %v", res, err)
	}
	for i, g := range gs {
		end := endOffsets(t, newAdmin(t), g.topic)
		if !waitFor(60*time.Second, func() bool { return covers(g.ch.storePos(), end) }) {
			t.Fatalf("graph %d did not catch up\n%s", i, g.log.tail(20))
		}
		base := "http://" + g.ch.httpAddr()
		waitAnalytic(t, base, "degree", lastSeqOf(t, base))
		var deg struct {
			Degree int `json:"degree"`
		}
		if !getJSON(fmt.Sprintf("%s/v1/vertices/%d/degree", base, src), &deg) {
			t.Fatalf("graph %d: GET degree failed", i)
		}
		if want := 1 - i; deg.Degree != want {
			t.Errorf("graph %d: vertex %d has degree %d, want %d (the write went to graph 0 only)", i, src, deg.Degree, want)
		}
	}
	// Each graph's alerts on its own topic, and only there.
	for i, g := range gs {
		var al api.AlertsResponse
		if !getJSON("http://"+g.ch.httpAddr()+"/v1/alerts?limit=10000", &al) || al.Total == 0 {
			t.Fatalf("graph %d raised no alert (%+v): the test needs some", i, al)
		}
		name := graphid.Derive([]string{g.topic})
		recs := consumeAll(t, graphid.Defaults(name).Alerts, int(al.Total), 2*time.Second, 60*time.Second)
		if len(recs) != int(al.Total) {
			t.Errorf("graph %d: its alert topic holds %d alerts, it raised %d", i, len(recs), al.Total)
		}
		for _, r := range recs {
			if g := kafkaconn.Header(r, alerts.HeaderGraph); g != name {
				t.Fatalf("graph %s's alert topic holds an alert of graph %q", name, g)
			}
		}
		// Its group is its own, and at the end of its own topic only.
		committed := committedOffsets(t, newAdmin(t), graphid.Defaults(name).Group)
		for topic := range committed {
			if topic != g.topic && topic != graphid.Defaults(name).Writes {
				t.Errorf("graph %s's group committed offsets of topic %s", name, topic)
			}
		}
	}
	for _, g := range gs {
		if err := g.ch.term(t); err != nil {
			t.Fatal(err)
		}
	}
}
