package alerts

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/alertlog"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// namedAlerts are alerts as a registry hands them over: named (ids as the
// sources gave them, keys, type names), with evidence.
func namedAlerts(n int) []analytics.Alert {
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	al := make([]analytics.Alert, n)
	for i := range al {
		ev := make([]analytics.Evidence, 8)
		for j := range ev {
			ev[j] = analytics.Evidence{Seq: uint64(100*i + j), Src: uint64(j), Dst: 9, SrcID: fmt.Sprint(j), SrcKey: fmt.Sprintf("acct-%d", j),
				DstID: "9", DstKey: "mule & <co>", TypeName: "payment", Amount: 10.5 + float64(j), EventTime: at.Add(time.Duration(j) * time.Minute),
				EventRef: fmt.Sprintf("e-%d-%d", i, j), Props: `{"currency":"EUR","channel":"<web>"}`,
				Source: &analytics.AlertSource{Topic: "payments", Partition: 1, Offset: int64(100*i + j)}}
		}
		al[i] = analytics.Alert{ID: fmt.Sprintf("%032x", i), Time: at.Add(time.Hour), Analytic: "mules", Kind: "fan_in", Seq: uint64(100*i + 8),
			Vertex: 9, VertexID: "9", VertexKey: "mule & <co>", Value: 8, Threshold: 7, Evidence: ev, EvidenceDropped: 2,
			Source: &analytics.AlertSource{Topic: "payments", Partition: 1, Offset: int64(100*i + 7)},
			Totals: &analytics.AlertTotals{Events: 10, Amount: 150, Counterparties: 8, First: at, Last: at.Add(7 * time.Minute)}}
	}
	al[n-1].VertexKey = "" // keyed by its id
	return al
}

// PublishJSON produces each alert's JSON as it is given (the registry's,
// the same bytes alerts.log keeps), keyed and headed as Publish does; and
// for alerts the registry named, the JSON Publish writes itself is the
// registry's (analytics.AlertJSON of the sink's graph): one shape.
func TestKafkaSinkProducesTheJSONItIsGiven(t *testing.T) {
	c := newCluster(t)
	k := newSink(t, c, "payments")
	if k.AlertGraph() != "payments" {
		t.Fatalf("the sink's graph is %q", k.AlertGraph())
	}
	start(t, k, nil)
	defer closeSink(k)
	al := namedAlerts(3)
	docs := analytics.AlertJSON(al, "payments")
	// What Publish writes of the same alerts, from another sink of the
	// graph: the registry's bytes.
	for i, a := range al {
		r := k.named(a)
		v, err := encode(&r)
		if err != nil || !bytes.Equal(v, docs[i]) {
			t.Fatalf("alert %d: Publish writes\n%s\nthe registry\n%s\n(%v)", i, v, docs[i], err)
		}
	}
	// A document as given, not written again: spaces stay.
	docs[1] = append(bytes.Clone(docs[1][:len(docs[1])-1]), []byte(" }")...)
	k.PublishJSON(al, docs)
	got := consume(t, c, len(al))
	if len(got) != len(al) {
		t.Fatalf("%d alerts produced, want %d", len(got), len(al))
	}
	for i, g := range got {
		wantKey := []string{"mule & <co>", "mule & <co>", "9"}[i]
		if !bytes.Equal(g.rec.Value, docs[i]) || string(g.rec.Key) != wantKey || kafkaconn.Header(g.rec, HeaderID) != al[i].ID ||
			kafkaconn.Header(g.rec, HeaderGraph) != "payments" || kafkaconn.Header(g.rec, HeaderKind) != "fan_in" || kafkaconn.Header(g.rec, HeaderAnalytic) != "mules" {
			t.Errorf("alert %d produced as key %q headers %v value\n%s\nwant key %q value\n%s", i, g.rec.Key, g.rec.Headers, g.rec.Value, wantKey, docs[i])
		}
	}
}

// handOver is what serve does with alerts a registry raised: its Kafka
// sink and alerts.log get them, each alert's JSON written once (once) or,
// as before, by each of them (twice).
func handOver(b testing.TB, once bool) func() {
	c := newCluster(b)
	k := newSink(b, c, "payments")
	l, err := alertlog.Open(filepath.Join(b.TempDir(), alertlog.FileName), 1<<20, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(); k.admin.Close() })
	al := namedAlerts(64)
	return func() {
		if once {
			docs := analytics.AlertJSON(al, "payments")
			k.PublishJSON(al, docs)
			if err := l.AppendJSON(al, docs); err != nil {
				b.Fatal(err)
			}
		} else {
			k.Publish(al)
			if err := l.Append(al); err != nil {
				b.Fatal(err)
			}
		}
		k.mu.Lock()
		k.led = newLedger(k.cfg.MaxPending) // nothing produces them: start over
		k.mu.Unlock()
	}
}

// BenchmarkAlertHandOver: 64 alerts with 8 events of evidence each to the
// Kafka sink and alerts.log, their JSON written once or by each.
func BenchmarkAlertHandOver(b *testing.B) {
	for _, once := range []bool{false, true} {
		b.Run(map[bool]string{false: "twice", true: "once"}[once], func(b *testing.B) {
			run := handOver(b, once)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/alert")
		})
	}
}
