package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// consumeIDs reads every alert of topic on c and returns their ID headers.
func consumeIDs(t *testing.T, c *kfake.Cluster, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var ids []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(ids) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == HeaderID {
					ids = append(ids, string(h.Value))
				}
			}
		})
	}
	return ids
}

// A checkpoint waits for the alerts published before it; a sink resumed
// from it skips, once each, the IDs delivered after it and publishes the
// others; a checkpoint after a lost alert fails.
func TestKafkaSinkResumeSkipsWhatWasDelivered(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	alert := func(id string) analytics.Alert {
		return analytics.Alert{Analytic: "fraud", Kind: "cycle", Vertex: 1, Cycle: []uint64{1, 2}, ID: id}
	}
	k, err := NewKafkaSink(ctx, c.ListenAddrs(), "alerts", nil)
	if err != nil {
		t.Fatal(err)
	}
	k.Publish([]analytics.Alert{alert("a"), alert("b")})
	pos, err := k.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sent, _, _ := k.Stats(); sent != 2 {
		t.Fatalf("the checkpoint returned with %d of 2 alerts acknowledged", sent)
	}
	k.Publish([]analytics.Alert{alert("c"), alert("d")}) // then a crash
	k.Close(ctx)

	k2, err := NewKafkaSink(ctx, c.ListenAddrs(), "alerts", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := k2.Resume(ctx, pos); err != nil {
		t.Fatal(err)
	}
	// The replay raises c and d again, then e; c once more is new.
	k2.Publish([]analytics.Alert{alert("c"), alert("d"), alert("e"), alert("c")})
	k2.Close(ctx)
	if got := consumeIDs(t, c, "alerts", 6); fmt.Sprint(got) != "[a b c d e c]" {
		t.Fatalf("the topic holds %v", got)
	}

	// A lost alert (the brokers refuse to take it): the next checkpoint
	// fails, and so does every later one.
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	// Refused for good (a delivery timeout) or still retried when the
	// checkpoint's deadline passes: either way no checkpoint is taken.
	for _, opts := range [][]kgo.Opt{{kgo.RecordDeliveryTimeout(time.Second)}, nil} {
		k3, err := NewKafkaSink(ctx, c.ListenAddrs(), "alerts", nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		k3.Publish([]analytics.Alert{alert("f")})
		for range 2 {
			cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			_, err := k3.Checkpoint(cctx)
			cancel()
			if err == nil {
				t.Fatalf("options %v: a checkpoint after a lost alert succeeded", opts)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		k3.Close(cctx)
		cancel()
	}
}
