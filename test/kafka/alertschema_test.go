package kafkatest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/alertlog"
	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/alerts/alertschema"
	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestAlertsMatchTheirSchema: every alert on the real broker's alert topic
// and every alert of GET /v1/alerts validates against the alerts' JSON
// Schema (deploy/alerts/alert.schema.json), and an alert is the same JSON,
// byte for byte, on the topic, over HTTP and (those the registry raised:
// it writes an alert's JSON once for both) in alerts.log. The alerts: those a fraud
// monitor raises on transfers consumed from the broker (cycles, fan-in),
// and alerts with evidence (keys, a type name, properties, references,
// totals; one with its evidence cut by the bound of an alert) kept in
// alerts.log before a restart and produced by the sink.
func TestAlertsMatchTheirSchema(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	sch, err := alertschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	topic, alertTopic := uniq("transfers"), uniq("alerts")
	createTopic(t, topic, 1)
	s, dict, vm := openStoreViews(t, 256<<10)
	ctx := context.Background()

	// The alerts with evidence, as the registry raised them before a
	// restart: in alerts.log, and on their way to the topic.
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	wide := make([]analytics.Evidence, 40)
	for i := range wide {
		wide[i] = analytics.Evidence{Seq: uint64(10 + i), SrcID: fmt.Sprint(4611686018427387904 + i), SrcKey: fmt.Sprintf("sender-%d", i),
			DstID: "4611686018427387999", DstKey: "mule & co", TypeName: "payment", Amount: float64(i) + 0.5,
			EventTime: at.Add(time.Duration(i) * time.Minute), EventRef: fmt.Sprintf("e-%d", i), Props: `{"currency":"EUR","tags":["<a>",1]}`,
			Source: &analytics.AlertSource{Topic: topic, Partition: 0, Offset: int64(1000 + i)}}
	}
	before := []analytics.Alert{
		{Time: at.Add(time.Hour), Analytic: "mules", Kind: "fan_in", Seq: 49, Vertex: 4611686018427387999, VertexID: "4611686018427387999",
			VertexKey: "mule & co", Value: 40, Threshold: 39, ID: "aaaa0000aaaa0000aaaa0000aaaa0000", EventTime: at.Add(39 * time.Minute),
			Source: &analytics.AlertSource{Topic: topic, Partition: 0, Offset: 1039}, Evidence: wide[8:], EvidenceDropped: 8,
			Totals: &analytics.AlertTotals{Events: 40, Amount: 800, Counterparties: 40, First: at, Last: at.Add(39 * time.Minute)}},
		{Time: at.Add(time.Hour + time.Second), Analytic: "rings", Kind: "cycle", Seq: 50, Vertex: 77, VertexID: "77", Cycle: []uint64{77, 78},
			CycleIDs: []string{"77", "78"}, Value: 2, ID: "bbbb0000bbbb0000bbbb0000bbbb0000",
			Evidence: []analytics.Evidence{
				{Seq: 48, SrcID: "77", DstID: "78", TypeName: "default", Amount: 100, EventRef: topic + "/0/7", Source: &analytics.AlertSource{Topic: topic, Offset: 7}},
				{Seq: 50, SrcID: "78", DstID: "77", TypeName: "default", Amount: 99},
			},
			Totals: &analytics.AlertTotals{Events: 2, Amount: 199}},
	}
	logPath := filepath.Join(t.TempDir(), alertlog.FileName)
	hist, err := alertlog.Open(logPath, 0, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := hist.Append(before); err != nil {
		t.Fatal(err)
	}
	if err := hist.Close(); err != nil {
		t.Fatal(err)
	}
	if hist, err = alertlog.Open(logPath, 0, false, &alertlog.Claim{Records: uint64(len(before))}); err != nil {
		t.Fatal(err)
	}
	defer hist.Close()

	sink, err := alerts.NewKafkaSink(ctx, alerts.Config{Brokers: addrs, Topic: alertTopic, Graph: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	sink.SetVertexIDs(dict.SourceID)
	if err := sink.Start(nil); err != nil {
		t.Fatal(err)
	}
	sinkOpen := true
	defer func() {
		if sinkOpen {
			sink.Close(ctx)
		}
	}()
	sink.Publish(before)
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Sinks: []analytics.AlertSink{sink}, History: hist, Names: dict.Name, Graph: "payments",
		Source: func(ref uint64) (analytics.AlertSource, bool) {
			r, ok := ingest.SourceOf([]string{topic}, ref)
			return analytics.AlertSource{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, ok
		}})
	defer reg.Close()
	if _, err := reg.Register(analytics.Spec{Name: "fraud", Type: "fraud", MaxCycle: 3, Threshold: 2, BatchSize: 1}); err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Store: s, Views: vm, Analytics: reg, Dict: dict, Graph: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	// A ring of three accounts, then three more senders into one of them.
	prod := newProducer(t)
	for _, v := range []string{
		`{"src":"acct-1","dst":"acct-2","weight":10}`, `{"src":"acct-2","dst":"acct-3","weight":9.5}`, `{"src":"acct-3","dst":"acct-1","weight":9}`,
		`{"src":"acct-4","dst":"acct-1","weight":900}`, `{"src":"acct-5","dst":"acct-1","weight":900}`, `{"src":"acct-6","dst":"acct-1","weight":900}`,
	} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := endOffsets(t, newAdmin(t), topic)
	run := startIngester(t, s, dict, ingest.Config{Brokers: addrs, Topics: []string{topic}, Group: uniq("schema-group"),
		Format: decode.FormatJSON, DeadLetterTopic: uniq("schema-dead"), FlushInterval: 200 * time.Millisecond})
	run.waitDurable(t, end, 60*time.Second)
	const raised = 2 // the ring, and acct-1's fourth sender within the window
	if !waitFor(60*time.Second, func() bool { _, total := reg.Alerts("fraud", 10); return total == raised }) {
		al, total := reg.Alerts("fraud", 10)
		t.Fatalf("the fraud monitor raised %d alerts (%+v), want %d", total, al, raised)
	}

	resp, err := http.Get(hs.URL + "/v1/alerts?limit=100")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/alerts: %d %s %v", resp.StatusCode, body, err)
	}
	var listed struct {
		Alerts []json.RawMessage `json:"alerts"`
	}
	if err := json.Unmarshal(body, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Alerts) != len(before)+raised {
		t.Fatalf("GET /v1/alerts lists %d alerts, want %d: %s", len(listed.Alerts), len(before)+raised, body)
	}
	overHTTP := map[string][]byte{}
	for _, a := range listed.Alerts {
		if err := sch.Validate(a); err != nil {
			t.Errorf("an alert of GET /v1/alerts: %v", err)
		}
		var id struct{ ID string }
		if err := json.Unmarshal(a, &id); err != nil {
			t.Fatal(err)
		}
		overHTTP[id.ID] = a
	}

	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	reg.Close()
	sinkOpen = false
	closeSinkDelivered(t, sink, 60*time.Second)
	recs := consumeAll(t, alertTopic, len(before)+raised, 2*time.Second, 30*time.Second)
	if len(recs) != len(before)+raised {
		t.Fatalf("%d alerts on the topic, want %d", len(recs), len(before)+raised)
	}
	kinds := map[string]int{}
	for _, r := range recs {
		if err := sch.Validate(r.Value); err != nil {
			t.Errorf("an alert of the topic: %v", err)
		}
		var a analytics.AlertRecord
		if err := json.Unmarshal(r.Value, &a); err != nil {
			t.Fatal(err)
		}
		kinds[a.Kind]++
		h, ok := overHTTP[a.ID]
		if !ok {
			t.Errorf("alert %s is on the topic, not over HTTP", a.ID)
			continue
		}
		if !bytes.Equal(h, r.Value) {
			i := 0
			for i < min(len(h), len(r.Value)) && h[i] == r.Value[i] {
				i++
			}
			from := max(0, i-80)
			t.Errorf("alert %s differs from byte %d:\nover HTTP …%s\non the topic …%s", a.ID, i, h[from:min(len(h), i+80)], r.Value[from:min(len(r.Value), i+80)])
		}
	}
	// The records of alerts.log: the registry's alerts are the topic's
	// bytes (the alerts appended before, without a graph, are not).
	inLog := alertLogRecords(t, logPath)
	if len(inLog) != len(before)+raised {
		t.Fatalf("alerts.log holds %d alerts, want %d", len(inLog), len(before)+raised)
	}
	for _, r := range recs {
		id := kafkaconn.Header(r, alerts.HeaderID)
		if slices.ContainsFunc(before, func(a analytics.Alert) bool { return a.ID == id }) {
			continue
		}
		if l := inLog[id]; !bytes.Equal(l, r.Value) {
			t.Errorf("alert %s in alerts.log:\n%s\non the topic:\n%s", id, l, r.Value)
		}
	}
	if kinds["cycle"] != 2 || kinds["fan_in"] != 2 {
		t.Errorf("alert kinds %v, want 2 cycles and 2 fan-ins", kinds)
	}
	var mule analytics.AlertRecord
	if err := json.Unmarshal(overHTTP[before[0].ID], &mule); err != nil {
		t.Fatal(err)
	}
	if len(mule.Evidence) != 32 || mule.EvidenceDropped != 8 || string(mule.Evidence[0].Props) != `{"currency":"EUR","tags":["<a>",1]}` ||
		mule.Evidence[0].SrcKey != "sender-8" || mule.Evidence[0].Ref != "e-8" || mule.Totals.Span != "39m0s" || mule.Graph != "payments" {
		t.Errorf("the alert with evidence reads back as %+v", mule)
	}
}

// alertLogRecords reads the records of the alert log at path as they are
// (the file's format: package alertlog), by alert ID.
func alertLogRecords(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 28 || string(data[:8]) != "GTALRT01" {
		t.Fatalf("%s is no alert log", path)
	}
	out := map[string][]byte{}
	at := 28 + int(binary.LittleEndian.Uint32(data[24:])) + 4
	res := durable.ScanRecords(data, at, 2, 1<<20, func(_ int, payload []byte) bool {
		var a struct{ ID string }
		if err := json.Unmarshal(payload, &a); err != nil {
			t.Fatalf("a record of %s: %v", path, err)
		}
		out[a.ID] = bytes.Clone(payload)
		return true
	})
	if res.Damage != "" || res.Torn {
		t.Fatalf("%s: %+v", path, res)
	}
	return out
}
