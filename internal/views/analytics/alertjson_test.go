package analytics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// raised runs alerts through a registry's raise (as a monitor's callback
// does), named by names, types and sources like serve's, and returns what
// its sink got.
func raised(t *testing.T, al []Alert) []Alert {
	t.Helper()
	h := newHarness(t, 3, false, denseIDs)
	sink := &sinkRecorder{}
	r := NewRegistry(h.m, RegistryConfig{Sinks: []AlertSink{sink},
		Names: func(id uint64) (uint64, string) {
			if id >= 100 {
				return id, fmt.Sprintf("acct-%d", id-100)
			}
			return id * 1000, ""
		},
		TypeName: func(t uint16) string { return map[uint16]string{0: "default", 3: "payment"}[t] },
		Source: func(ref uint64) (AlertSource, bool) {
			return AlertSource{Topic: "payments", Partition: int32(ref % 4), Offset: int64(ref / 4)}, ref != 0
		}})
	defer r.Close()
	r.raise("mules", al)
	got, total := r.Alerts("mules", 10)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if total != uint64(len(al)) || !reflect.DeepEqual(got, sink.al) {
		t.Fatalf("the ring holds %d alerts (total %d) that differ from the sink's %d", len(got), total, len(sink.al))
	}
	return sink.al
}

// The registry names an alert's evidence as it names its vertex: ids as
// the sources gave them (decimal), keys, type names, the Kafka record of
// each event, and the record's "topic/partition/offset" as the reference
// of an event that has none; the alert's JSON is its one shape (checked
// against the JSON written out by hand).
func TestRegistryNamesEvidence(t *testing.T) {
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	al := raised(t, []Alert{{Analytic: "mules", Kind: "fan_in", Seq: 9, Vertex: 109, Value: 2, Threshold: 1, Ref: 4*40 + 1, EventTime: at,
		Evidence: []Evidence{
			{Seq: 7, Src: 101, Dst: 109, Type: 3, Amount: 12.5, EventTime: at.Add(-time.Minute), EventRef: "e-91", Props: `{"currency":"EUR"}`, OpRef: 4*38 + 1},
			{Seq: 9, Src: 5, Dst: 109, Type: 0, Amount: 50, EventTime: at, OpRef: 4*40 + 1},
		},
		EvidenceDropped: 3,
		Totals:          &AlertTotals{Events: 5, Amount: 90.5, Counterparties: 4, First: at.Add(-time.Hour), Last: at}}})
	a := al[0]
	a.Time = time.Date(2026, 12, 6, 5, 0, 1, 0, time.UTC) // the wall clock's
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + a.ID + `","time":"2026-12-06T05:00:01Z","analytic":"mules","kind":"fan_in","seq":9,` +
		`"vertex":109,"vertex_id":"109","vertex_key":"acct-9","value":2,"threshold":1,` +
		`"source":{"topic":"payments","partition":1,"offset":40},"event_time":"2026-12-06T05:00:00Z",` +
		`"evidence":[` +
		`{"src_id":"101","src_key":"acct-1","dst_id":"109","dst_key":"acct-9","type":"payment","amount":12.5,"event_time":"2026-12-06T04:59:00Z",` +
		`"ref":"e-91","source":{"topic":"payments","partition":1,"offset":38},"props":{"currency":"EUR"},"seq":7},` +
		`{"src_id":"5000","dst_id":"109","dst_key":"acct-9","type":"default","amount":50,"event_time":"2026-12-06T05:00:00Z",` +
		`"ref":"payments/1/40","source":{"topic":"payments","partition":1,"offset":40},"seq":9}],` +
		`"evidence_dropped":3,` +
		`"totals":{"events":5,"amount":90.5,"counterparties":4,"first":"2026-12-06T04:00:00Z","last":"2026-12-06T05:00:00Z","span":"1h0m0s"}}`
	if string(b) != want {
		t.Fatalf("the alert's JSON\n%s\nwant\n%s", b, want)
	}
	// And it reads back to what was raised, but for the store's numbers
	// (the JSON names the vertices as their sources did).
	var back Alert
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	a.Ref = 0
	a.Evidence = append([]Evidence(nil), a.Evidence...)
	a.Evidence[1].Src = 5000
	for i := range a.Evidence {
		a.Evidence[i].Type, a.Evidence[i].OpRef = 0, 0
	}
	if !reflect.DeepEqual(back, a) {
		t.Fatalf("read back\n%+v\nwant\n%+v", back, a)
	}
}

// An alert stays within its bounds whatever its monitor gives: at most
// MaxEvidence events, the newest; no property document that is not a
// JSON object within engine.MaxEdgeProps, no reference beyond its bound;
// at most MaxAlertBytes of JSON (the oldest events left out first); what
// is left out is counted in evidence_dropped, and the totals stay.
func TestAlertsAreBounded(t *testing.T) {
	many := make([]Evidence, MaxEvidence+76)
	for i := range many {
		many[i] = Evidence{Seq: uint64(i + 1), Src: 1, Dst: 2, Amount: float64(i)}
	}
	huge := strings.Repeat("\x01", 4096) // a key of the most bytes, each escaped in 6
	bigProps := `{"p":"` + strings.Repeat("x", 4100) + `"}`
	wide := make([]Evidence, 100)
	for i := range wide {
		wide[i] = Evidence{Seq: uint64(i + 1), Src: uint64(100 + 2*i), Dst: uint64(101 + 2*i), Amount: 1, Props: `{"n":` + fmt.Sprint(i) + `}`}
	}
	totals := &AlertTotals{Events: 2000, Amount: math.Inf(1), AmountOut: math.Inf(-1)}
	al := raised(t, []Alert{
		{Analytic: "mules", Kind: "fan_in", Vertex: 2, Evidence: many, EvidenceDropped: 5},
		{Analytic: "mules", Kind: "fan_in", Vertex: 2, Evidence: []Evidence{
			{Seq: 1, Src: 1, Dst: 2, Props: `["not","an","object"]`},
			{Seq: 2, Src: 1, Dst: 2, Props: bigProps},
			{Seq: 3, Src: 1, Dst: 2, Props: `{"ok":true}`, EventRef: strings.Repeat("r", 301)},
		}},
		{Analytic: "mules", Kind: "fan_in", Vertex: 2, Evidence: wide, Totals: totals},
	})
	// The first: the newest MaxEvidence.
	if a := al[0]; len(a.Evidence) != MaxEvidence || a.Evidence[0].Seq != 77 || a.EvidenceDropped != 5+76 {
		t.Fatalf("%d events from seq %d, %d dropped; want %d from 77, 81 dropped", len(a.Evidence), a.Evidence[0].Seq, a.EvidenceDropped, MaxEvidence)
	}
	// The second: its documents and its reference.
	b, _ := json.Marshal(al[1])
	if a := al[1]; a.Evidence[0].Props != "" || a.Evidence[1].Props != "" || a.Evidence[2].Props != `{"ok":true}` || a.Evidence[2].EventRef != "" ||
		strings.Contains(string(b), "not") || !strings.Contains(string(b), `"props":{"ok":true}`) {
		t.Fatalf("documents and references out of bounds kept: %s", b)
	}
	// The third, with keys of the most bytes: cut to MaxAlertBytes.
	h := newHarness(t, 4, false, denseIDs)
	sink := &sinkRecorder{}
	r := NewRegistry(h.m, RegistryConfig{Sinks: []AlertSink{sink}, Names: func(id uint64) (uint64, string) { return id, huge + fmt.Sprint(id) }})
	defer r.Close()
	r.raise("mules", []Alert{{Analytic: "mules", Kind: "fan_in", Vertex: 2, Evidence: wide, Totals: totals}})
	a := sink.al[0]
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxAlertBytes || len(a.Evidence) == 0 || len(a.Evidence)+a.EvidenceDropped != len(wide) || a.Evidence[len(a.Evidence)-1].Seq != 100 {
		t.Fatalf("an alert of %d bytes (bound %d) with %d events, %d dropped", len(b), MaxAlertBytes, len(a.Evidence), a.EvidenceDropped)
	}
	// One event more would not have fitted.
	more := a
	more.Evidence = wide[len(wide)-len(a.Evidence)-1:]
	if c, _ := json.Marshal(more); len(c) <= MaxAlertBytes {
		t.Fatalf("%d events dropped, but one more fits (%d bytes)", a.EvidenceDropped, len(c))
	}
	var back AlertRecord
	if err := json.Unmarshal(b, &back); err != nil || back.Totals.Events != 2000 || back.Totals.Amount != math.MaxFloat64 || back.Totals.AmountOut != -math.MaxFloat64 {
		t.Fatalf("totals %+v (%v)", back.Totals, err)
	}
}

// TestJSONUpperBoundHolds: the size bound skips writing an alert's JSON
// only when that JSON cannot exceed it: for alerts of every part, with
// strings of characters JSON escapes, the estimate is at least the JSON
// as written (with the widest time and evidence_dropped).
func TestJSONUpperBoundHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	str := func() string {
		const chars = "a<>&\"\\\x01é\u2028Z9/"
		b := []rune{}
		for range r.IntN(40) {
			b = append(b, []rune(chars)[r.IntN(len([]rune(chars)))])
		}
		return string(b)
	}
	for i := 0; i < 2000; i++ {
		a := Alert{Time: time.Date(2026, 12, 6, 5, 0, 0, 123456789, time.UTC), Analytic: str(), Kind: str(), Seq: r.Uint64(), Vertex: r.Uint64(),
			Value: r.NormFloat64() * 1e300, Threshold: r.Float64() * 1e15, VertexID: str(), VertexKey: str(), ID: str(),
			EventTime: time.Unix(r.Int64N(1<<37), r.Int64N(1e9)), EvidenceDropped: r.IntN(1 << 30)}
		if r.IntN(2) == 0 {
			a.Source = &AlertSource{Topic: str(), Partition: r.Int32(), Offset: r.Int64()}
		}
		for range r.IntN(6) {
			a.Cycle = append(a.Cycle, r.Uint64())
			a.CycleIDs = append(a.CycleIDs, str())
			a.CycleKeys = append(a.CycleKeys, str())
		}
		if r.IntN(2) == 0 {
			a.Totals = &AlertTotals{Events: r.Int(), Amount: -r.Float64() * 1e300, Counterparties: r.Int(), AmountOut: r.Float64(), Receivers: r.Int(),
				First: time.Unix(r.Int64N(1<<37), 1), Last: time.Unix(r.Int64N(1<<37), 999999999)}
		}
		for range r.IntN(8) {
			e := Evidence{Seq: r.Uint64(), Src: r.Uint64(), Dst: r.Uint64(), Type: uint16(r.IntN(1024)), Amount: -r.Float64() * 1e300,
				EventTime: time.Unix(r.Int64N(1<<37), r.Int64N(1e9)), EventRef: str(), SrcID: str(), SrcKey: str(), DstID: str(), DstKey: str(), TypeName: str()}
			if r.IntN(2) == 0 {
				e.Props = `{"k":"` + strings.Repeat("<&>", r.IntN(300)) + `","n":1}`
			}
			if r.IntN(2) == 0 {
				e.Source = &AlertSource{Topic: str(), Partition: r.Int32(), Offset: r.Int64()}
			}
			a.Evidence = append(a.Evidence, e)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if est := jsonUpperBound(&a); est < len(b) {
			t.Fatalf("alert %d: the bound estimates %d bytes, its JSON takes %d:\n%s", i, est, len(b), b)
		}
	}
}

// jsonRecorder is a JSONSink (of graph) and a JSONHistory that keeps what
// it was given; plain counts what reached Publish or Append.
type jsonRecorder struct {
	graph string
	al    []Alert
	docs  [][]byte
	plain int
}

func (s *jsonRecorder) Publish(al []Alert)      { s.plain += len(al) }
func (s *jsonRecorder) AlertGraph() string      { return s.graph }
func (s *jsonRecorder) Append(al []Alert) error { s.plain += len(al); return nil }
func (s *jsonRecorder) Sync() error             { return nil }
func (s *jsonRecorder) PublishJSON(al []Alert, docs [][]byte) {
	s.al, s.docs = append(s.al, al...), append(s.docs, docs...)
}
func (s *jsonRecorder) AppendJSON(al []Alert, docs [][]byte) error {
	s.PublishJSON(al, docs)
	return nil
}
func (s *jsonRecorder) Alerts() ([]Alert, uint64, map[string]uint64, error) {
	return append([]Alert(nil), s.al...), uint64(len(s.al)), map[string]uint64{"mules": uint64(len(s.al))}, nil
}

// The registry writes an alert's JSON once, of its graph, and hands the
// same bytes to its history and to every sink that takes JSON of that
// graph (a sink of another graph gets the alerts, and writes its own):
// the JSON is the alert's one shape as GET /v1/alerts writes it
// (Record(graph) through an Encoder that keeps HTML characters), and an
// alert a replay raises again reaches the sinks but not the history, the
// others' documents staying with their alerts.
func TestRegistryWritesAnAlertsJSONOnce(t *testing.T) {
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	names := func(id uint64) (uint64, string) { return id, fmt.Sprintf("acct & <%d>", id) }
	al := []Alert{
		{Analytic: "mules", Kind: "fan_in", Seq: 9, Vertex: 109, Value: 2, Threshold: 1, Source: &AlertSource{Topic: "p", Offset: 1},
			Evidence: []Evidence{{Seq: 7, Src: 101, Dst: 109, Amount: 12.5, EventTime: at, EventRef: "e-91", Props: `{"note":"<a href>&"}`}},
			Totals:   &AlertTotals{Events: 1, Amount: 12.5, First: at, Last: at}},
		{Analytic: "mules", Kind: "fan_in", Seq: 9, Vertex: 110, Source: &AlertSource{Topic: "p", Offset: 2}},
		{Analytic: "mules", Kind: "fan_in", Seq: 10, Vertex: 111, Source: &AlertSource{Topic: "p", Offset: 3}},
	}
	// The history held the second alert before a restart.
	held := al[1]
	NewRegistry(nil, RegistryConfig{Names: names}).name(&held)
	held.ID = alertID(&held)
	hist := &jsonRecorder{al: []Alert{held}, docs: [][]byte{nil}}
	same, other, plain := &jsonRecorder{graph: "payments"}, &jsonRecorder{graph: "another"}, &sinkRecorder{}
	r := NewRegistry(nil, RegistryConfig{Graph: "payments", History: hist, Sinks: []AlertSink{same, other, plain}, Names: names})
	defer r.Close()
	r.raise("mules", al[:1])
	r.raise("mules", al[1:]) // the second a replay, the third new
	if len(same.docs) != 3 || other.plain != 3 || len(other.docs) != 0 || len(plain.al) != 3 {
		t.Fatalf("the sink of the graph took %d documents, the other graph's %d alerts by Publish (%d documents), the plain one %d; want 3, 3 (0), 3",
			len(same.docs), other.plain, len(other.docs), len(plain.al))
	}
	for i, a := range same.al {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		rec := a.Record("payments")
		if err := enc.Encode(&rec); err != nil {
			t.Fatal(err)
		}
		if want := bytes.TrimSuffix(b.Bytes(), []byte("\n")); !bytes.Equal(same.docs[i], want) {
			t.Errorf("alert %d's JSON:\n%s\nwant\n%s", i, same.docs[i], want)
		}
		if !reflect.DeepEqual(a, plain.al[i]) {
			t.Errorf("alert %d reached the sinks as two alerts: %+v and %+v", i, a, plain.al[i])
		}
	}
	if !bytes.Contains(same.docs[0], []byte(`"graph":"payments"`)) || !bytes.Contains(same.docs[0], []byte(`"note":"<a href>&"`)) ||
		!bytes.Contains(same.docs[0], []byte(`"vertex_key":"acct & <109>"`)) {
		t.Errorf("the JSON names no graph or escapes HTML: %s", same.docs[0])
	}
	// The history: the first and third (the second was a replay of what
	// it held), their documents the very bytes the sink got.
	kept := hist.al[1:]
	if len(kept) != 2 || kept[0].Vertex != 109 || kept[1].Vertex != 111 || hist.plain != 0 {
		t.Fatalf("the history kept %d alerts (%+v), %d by Append; want 109 and 111", len(kept), kept, hist.plain)
	}
	for i, j := range []int{0, 2} {
		if d := hist.docs[1+i]; len(d) == 0 || &d[0] != &same.docs[j][0] || len(d) != len(same.docs[j]) {
			t.Errorf("the history's document of alert %d is not the sink's (written twice?)", j)
		}
	}
}

// partsRecorder is a JSONSink that keeps each PublishJSON's alerts apart.
type partsRecorder struct {
	parts [][]Alert
	docs  [][][]byte
}

func (s *partsRecorder) Publish(al []Alert) { s.PublishJSON(al, nil) }
func (s *partsRecorder) AlertGraph() string { return "" }
func (s *partsRecorder) PublishJSON(al []Alert, docs [][]byte) {
	s.parts, s.docs = append(s.parts, slices.Clone(al)), append(s.docs, docs)
}

// An analytic that hands the registry a burst of alerts at once gets them
// written and forwarded in parts of at most handOverBytes of alerts (the
// first alert of a part whatever its size), in order: the JSON of the
// whole burst is never held at once.
func TestRegistryRaisesABurstInParts(t *testing.T) {
	var al []Alert
	for i := range 300 {
		a := Alert{Analytic: "mules", Kind: "fan_in", Seq: uint64(i), Vertex: uint64(i)}
		for j := range 1 + i%40 {
			a.Evidence = append(a.Evidence, Evidence{Seq: uint64(j), Src: uint64(j), Dst: uint64(i), Amount: 1, EventRef: fmt.Sprintf("e-%d-%d", i, j),
				Props: fmt.Sprintf(`{"note":%q}`, strings.Repeat("x", 200+j))})
		}
		al = append(al, a)
	}
	if i := slices.IndexFunc(al, func(a Alert) bool { return alertBytes(&a) > handOverBytes }); i >= 0 {
		t.Fatalf("alert %d is larger than a part", i)
	}
	var total int64
	for i := range al {
		total += alertBytes(&al[i])
	}
	sink := &partsRecorder{}
	r := NewRegistry(nil, RegistryConfig{Sinks: []AlertSink{sink}})
	defer r.Close()
	r.raise("mules", slices.Clone(al))
	if want := total / handOverBytes; int64(len(sink.parts)) < want {
		t.Fatalf("%d alerts of %d bytes in %d parts; want at least %d", len(al), total, len(sink.parts), want)
	}
	var got []uint64
	for i, p := range sink.parts {
		var bytes int64
		for j := range p {
			bytes += alertBytes(&p[j])
		}
		if len(p) > 1 && bytes > handOverBytes || len(sink.docs[i]) != len(p) {
			t.Fatalf("part %d: %d alerts of %d bytes with %d documents", i, len(p), bytes, len(sink.docs[i]))
		}
		for j := range p {
			got = append(got, p[j].Vertex)
			if !strings.Contains(string(sink.docs[i][j]), fmt.Sprintf(`"vertex_id":"%d"`, p[j].Vertex)) {
				t.Fatalf("part %d, alert %d: its document is another's: %.200s", i, j, sink.docs[i][j])
			}
		}
	}
	for i, v := range got {
		if v != uint64(i) {
			t.Fatalf("alerts forwarded out of order or lost: %v", got)
		}
	}
	if len(got) != len(al) {
		t.Fatalf("%d alerts forwarded of %d", len(got), len(al))
	}
}
