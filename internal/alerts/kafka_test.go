package alerts

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The sink against franz-go's in-process broker; the real-broker test of
// alerts end to end lives in test/kafka. The sink turns the store's ids
// into the sources' (here: ids from 4 up stand for 1000 times themselves),
// without changing the alerts it was given.
func TestKafkaSinkDeliversAlerts(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	k, err := NewKafkaSink(ctx, c.ListenAddrs(), "alerts", nil)
	if err != nil {
		t.Fatal(err)
	}
	k.SetVertexIDs(func(v uint64) uint64 {
		if v >= 4 {
			return v * 1000
		}
		return v
	})
	given := []analytics.Alert{
		{Analytic: "fraud", Kind: "cycle", Seq: 7, Vertex: 3, Cycle: []uint64{3, 4, 5}, Value: 3},
		{Analytic: "hubs", Kind: "fan_in", Seq: 8, Vertex: 9, Value: 12, Threshold: 10},
	}
	k.Publish(given)
	if given[0].Cycle[1] != 4 || given[1].Vertex != 9 {
		t.Fatalf("Publish changed the alerts it was given: %+v", given)
	}
	want := []analytics.Alert{
		{Analytic: "fraud", Kind: "cycle", Seq: 7, Vertex: 3, Cycle: []uint64{3, 4000, 5000}, Value: 3},
		{Analytic: "hubs", Kind: "fan_in", Seq: 8, Vertex: 9000, Value: 12, Threshold: 10},
	}
	k.Close(ctx)
	if sent, dropped, failed := k.Stats(); sent != 2 || dropped != 0 || failed != 0 {
		t.Fatalf("sent %d dropped %d failed %d", sent, dropped, failed)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("alerts"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for len(got) < 2 && cctx.Err() == nil {
		cl.PollFetches(cctx).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	if len(got) != 2 {
		t.Fatalf("consumed %d alerts", len(got))
	}
	for i, r := range got {
		var a analytics.Alert
		if err := json.Unmarshal(r.Value, &a); err != nil {
			t.Fatal(err)
		}
		if a.Analytic != want[i].Analytic || a.Kind != want[i].Kind || a.Vertex != want[i].Vertex || !slices.Equal(a.Cycle, want[i].Cycle) {
			t.Fatalf("alert %d: %+v, want %+v", i, a, want[i])
		}
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if h[HeaderAnalytic] != want[i].Analytic || h[HeaderKind] != want[i].Kind || string(r.Key) != []string{"3", "9000"}[i] {
			t.Fatalf("alert %d: key %q headers %v", i, r.Key, h)
		}
	}
}
