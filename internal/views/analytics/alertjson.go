package analytics

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/typedict"
)

// An alert has one JSON shape wherever it leaves the process: GET
// /v1/alerts, the alert topic's records and the records of alerts.log
// (AlertRecord; deploy/alerts/alert.schema.json describes it for
// consumers, openapi.yaml for the API). Alert's own JSON encoding is that
// shape (without a graph): json.Marshal of an Alert writes it, and
// json.Unmarshal into an Alert reads it, and the records written before
// it (alerts.log's older records, whose vertex and cycle numbers were the
// store's: the ids their vertex_id and cycle_ids give are taken instead).
//
// The JSON names vertices and types as their sources did (ids in decimal,
// string keys, type names), never by the store's numbers for them, which
// differ between replicas; the store's numbers (Alert.Vertex of a key,
// Evidence.Src, Dst, Type) do not survive a round trip through JSON.

// Bounds of an alert (Registry keeps them before an alert goes anywhere).
const (
	// MaxAlertBytes bounds an alert's JSON: the evidence is cut, its
	// oldest events first (counted in evidence_dropped), until the alert
	// fits. INVARIANT: an alert without evidence fits: its largest parts
	// are a cycle of MaxMaxCycle keys (each at most keydict.MaxKeyLen
	// bytes, escaped at most 6 bytes a byte: 8 * 2 * 24 KiB), far below.
	// Half the alert topic's default max.message.bytes (1 MiB).
	MaxAlertBytes = 512 << 10
	// maxEvidenceRef bounds an evidence event's reference: the engine's
	// bound of an event reference, or a Kafka record's coordinates (a
	// topic name has at most 249 bytes).
	maxEvidenceRef = 300
)

// AlertRecord is an alert in its one JSON shape.
type AlertRecord struct {
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Graph    string    `json:"graph,omitempty"` // the graph the alert is of ("": a store that recorded none; alerts.log's records written before serve wrote an alert's JSON once carry none)
	Analytic string    `json:"analytic"`
	Kind     string    `json:"kind"`
	Seq      uint64    `json:"seq"`
	// Vertex is the vertex's id as its source gave it (a key's: the
	// store's id for it, which differs between replicas), as a JSON
	// number, inexact above 2^53 in many readers: VertexID is the same in
	// decimal, VertexKey its string key. Cycle, CycleIDs and CycleKeys
	// are the same for a cycle's vertices (CycleKeys only when one has a
	// key; "" for one without).
	Vertex    uint64           `json:"vertex"`
	VertexID  string           `json:"vertex_id"`
	VertexKey string           `json:"vertex_key,omitempty"`
	Cycle     []uint64         `json:"cycle,omitempty"`
	CycleIDs  []string         `json:"cycle_ids,omitempty"`
	CycleKeys []string         `json:"cycle_keys,omitempty"`
	Value     float64          `json:"value"`
	Threshold float64          `json:"threshold,omitempty"`
	Source    *AlertSource     `json:"source,omitempty"`
	EventTime time.Time        `json:"event_time,omitzero"`
	Evidence  []EvidenceRecord `json:"evidence,omitempty"`
	// EvidenceDropped counts the pattern's events the alert does not
	// carry (over the monitor's evidence setting, or MaxAlertBytes).
	EvidenceDropped int           `json:"evidence_dropped,omitempty"`
	Totals          *TotalsRecord `json:"totals,omitempty"`
}

// EvidenceRecord is an evidence event in an alert's JSON.
type EvidenceRecord struct {
	SrcID     string    `json:"src_id"`
	SrcKey    string    `json:"src_key,omitempty"`
	DstID     string    `json:"dst_id"`
	DstKey    string    `json:"dst_key,omitempty"`
	Type      string    `json:"type"` // its name ("default" for type 0; a number for a type without one)
	Amount    float64   `json:"amount"`
	EventTime time.Time `json:"event_time,omitzero"`
	// Ref is the event's reference: the event's id when its mapping named
	// one, else its Kafka record's "topic/partition/offset".
	Ref    string          `json:"ref,omitempty"`
	Source *AlertSource    `json:"source,omitempty"`
	Props  json.RawMessage `json:"props,omitempty"` // a JSON object of at most engine.MaxEdgeProps bytes
	Seq    uint64          `json:"seq"`
}

// TotalsRecord is an alert's totals in its JSON: AlertTotals and its span.
type TotalsRecord struct {
	Events         int       `json:"events"`
	Amount         float64   `json:"amount"`
	Counterparties int       `json:"counterparties,omitempty"`
	AmountOut      float64   `json:"amount_out,omitempty"`
	Receivers      int       `json:"receivers,omitempty"`
	First          time.Time `json:"first,omitzero"`
	Last           time.Time `json:"last,omitzero"`
	// Span is Last - First (a Go duration: "9m30s"), when both are known.
	Span string `json:"span,omitempty"`
}

// Record is the alert in its JSON shape, of graph. Names the registry has
// not filled (an alert made by hand) are the store's numbers.
func (a *Alert) Record(graph string) AlertRecord {
	r := AlertRecord{ID: a.ID, Time: a.Time, Graph: graph, Analytic: a.Analytic, Kind: a.Kind, Seq: a.Seq,
		Vertex: a.Vertex, VertexID: a.VertexID, VertexKey: a.VertexKey, Value: finite(a.Value), Threshold: finite(a.Threshold),
		EventTime: a.EventTime, EvidenceDropped: a.EvidenceDropped}
	r.Vertex, r.VertexID = named(a.Vertex, a.VertexID)
	if a.Source != nil {
		src := *a.Source
		r.Source = &src
	}
	if len(a.Cycle) > 0 {
		r.Cycle, r.CycleIDs = make([]uint64, len(a.Cycle)), make([]string, len(a.Cycle))
		for i, v := range a.Cycle {
			id := ""
			if len(a.CycleIDs) == len(a.Cycle) {
				id = a.CycleIDs[i]
			}
			r.Cycle[i], r.CycleIDs[i] = named(v, id)
		}
		if len(a.CycleKeys) == len(a.Cycle) {
			r.CycleKeys = append([]string(nil), a.CycleKeys...)
		}
	}
	if len(a.Evidence) > 0 {
		r.Evidence = make([]EvidenceRecord, len(a.Evidence))
		for i := range a.Evidence {
			r.Evidence[i] = a.Evidence[i].record()
		}
	}
	if t := a.Totals; t != nil {
		r.Totals = &TotalsRecord{Events: t.Events, Amount: finite(t.Amount), Counterparties: t.Counterparties, AmountOut: finite(t.AmountOut),
			Receivers: t.Receivers, First: t.First, Last: t.Last}
		if !t.First.IsZero() && !t.Last.IsZero() {
			r.Totals.Span = t.Last.Sub(t.First).String()
		}
	}
	return r
}

// record is e in an alert's JSON.
func (e *Evidence) record() EvidenceRecord {
	r := EvidenceRecord{SrcKey: e.SrcKey, DstKey: e.DstKey, Type: e.TypeName, Amount: finite(e.Amount), EventTime: e.EventTime,
		Ref: e.EventRef, Seq: e.Seq}
	_, r.SrcID = named(e.Src, e.SrcID)
	_, r.DstID = named(e.Dst, e.DstID)
	if r.Type == "" {
		r.Type = (*typedict.Dict)(nil).Name(e.Type)
	}
	if e.Source != nil {
		src := *e.Source
		r.Source = &src
	}
	if validProps(e.Props) {
		r.Props = json.RawMessage(e.Props)
	}
	return r
}

// named is a vertex's number and decimal id in an alert's JSON: those of
// its id as its source gave it, when it has one, else of v.
func named(v uint64, id string) (uint64, string) {
	if id != "" {
		if n, err := strconv.ParseUint(id, 10, 64); err == nil {
			return n, id
		}
	}
	return v, strconv.FormatUint(v, 10)
}

// NamedID is a vertex's number and decimal id in an alert's JSON: those
// of id, the id its source gave it (Alert.VertexID), when it has one, else
// of v, the store's.
func NamedID(v uint64, id string) (uint64, string) { return named(v, id) }

// finite is x, or the float nearest it when it is infinite (a sum of
// weights past the float range), which JSON cannot hold.
func finite(x float64) float64 {
	switch {
	case math.IsInf(x, 1):
		return math.MaxFloat64
	case math.IsInf(x, -1):
		return -math.MaxFloat64
	case math.IsNaN(x):
		return 0
	}
	return x
}

// validProps reports whether p is a property document an alert carries:
// a JSON object within the engine's bounds.
func validProps(p string) bool {
	return p != "" && engine.CheckEdgePayload("", []byte(p)) == nil
}

// Alert is the alert r holds. Its vertices are the ids their sources gave
// (Vertex, Cycle, Evidence.Src and Dst; the store's own numbers are not in
// the JSON), its evidence types by name only.
func (r *AlertRecord) Alert() Alert {
	a := Alert{ID: r.ID, Time: r.Time, Analytic: r.Analytic, Kind: r.Kind, Seq: r.Seq, VertexID: r.VertexID, VertexKey: r.VertexKey,
		Value: r.Value, Threshold: r.Threshold, EventTime: r.EventTime, EvidenceDropped: r.EvidenceDropped}
	// The ids the names give: a record written before this shape (an
	// older alerts.log's) held the store's number in vertex and cycle.
	a.Vertex, a.VertexID = named(r.Vertex, r.VertexID)
	if r.Source != nil {
		src := *r.Source
		a.Source = &src
	}
	if len(r.Cycle) > 0 || len(r.CycleIDs) > 0 {
		n := max(len(r.Cycle), len(r.CycleIDs))
		a.Cycle, a.CycleIDs = make([]uint64, n), make([]string, n)
		for i := range n {
			var v uint64
			var id string
			if i < len(r.Cycle) {
				v = r.Cycle[i]
			}
			if i < len(r.CycleIDs) {
				id = r.CycleIDs[i]
			}
			a.Cycle[i], a.CycleIDs[i] = named(v, id)
		}
		if len(r.CycleKeys) == n {
			a.CycleKeys = append([]string(nil), r.CycleKeys...)
		}
	}
	for _, e := range r.Evidence {
		ev := Evidence{Seq: e.Seq, SrcID: e.SrcID, SrcKey: e.SrcKey, DstID: e.DstID, DstKey: e.DstKey, TypeName: e.Type,
			Amount: e.Amount, EventTime: e.EventTime, EventRef: e.Ref, Props: string(e.Props)}
		ev.Src, ev.SrcID = named(0, e.SrcID)
		ev.Dst, ev.DstID = named(0, e.DstID)
		if e.Source != nil {
			src := *e.Source
			ev.Source = &src
		}
		a.Evidence = append(a.Evidence, ev)
	}
	if t := r.Totals; t != nil {
		a.Totals = &AlertTotals{Events: t.Events, Amount: t.Amount, Counterparties: t.Counterparties, AmountOut: t.AmountOut,
			Receivers: t.Receivers, First: t.First, Last: t.Last}
	}
	return a
}

// MarshalJSON writes the alert in its one JSON shape (Record, without a
// graph).
func (a Alert) MarshalJSON() ([]byte, error) {
	r := a.Record("")
	return marshal(&r)
}

// AlertJSON is each alert's JSON, of graph (Record(graph), written as
// MarshalJSON writes it, HTML characters as they are): docs[i] is al[i]'s,
// nil for one that cannot be written (none: Record writes finite floats
// and valid documents only). The registry writes it once per alert for
// alerts.log and the alert topic (JSONSink). The documents share one
// allocation of their size, each capped at its end.
func AlertJSON(al []Alert, graph string) [][]byte {
	b := jsonScratch.Get().(*bytes.Buffer)
	defer func() {
		if b.Cap() <= maxScratch {
			b.Reset()
			jsonScratch.Put(b)
		}
	}()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	bounds := make([][2]int, len(al))
	for i := range al {
		r := al[i].Record(graph)
		start := b.Len()
		if err := enc.Encode(&r); err != nil {
			bounds[i] = [2]int{-1, -1} // Encode writes nothing when it fails
			continue
		}
		bounds[i] = [2]int{start, b.Len() - 1} // without the newline
	}
	buf := bytes.Clone(b.Bytes()) // the scratch is used again
	docs := make([][]byte, len(al))
	for i, x := range bounds {
		if x[0] >= 0 {
			docs[i] = buf[x[0]:x[1]:x[1]]
		}
	}
	return docs
}

// jsonScratch holds AlertJSON's buffers (*bytes.Buffer), so that the
// JSON of a batch of alerts is written where the last was and copied once
// into memory of its size; one grown past maxScratch (a burst) is left to
// the collector.
var jsonScratch = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxScratch = 4 << 20

// MarshalJSON writes the event as an alert's JSON holds it.
func (e Evidence) MarshalJSON() ([]byte, error) {
	r := e.record()
	return marshal(&r)
}

// marshal is v's JSON with HTML characters as they are (an Encoder that
// escapes them still does; one that does not, as the API's, keeps them:
// a property document reads back as it was written).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads an alert's JSON (AlertRecord.Alert), also as
// written before it carried evidence.
func (a *Alert) UnmarshalJSON(b []byte) error {
	var r AlertRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	*a = r.Alert()
	return nil
}

// bound keeps a within the bounds of an alert, in place: at most
// MaxEvidence evidence events, each with a reference and property
// document within the engine's bounds (a reference or a document outside
// them, which the engine would not have taken, is left out), and a JSON
// of at most MaxAlertBytes (the oldest events left out first). What is
// left out of the evidence is counted in EvidenceDropped.
func bound(a *Alert) {
	if n := len(a.Evidence) - MaxEvidence; n > 0 {
		a.Evidence = a.Evidence[n:]
		a.EvidenceDropped += n
	}
	for i := range a.Evidence {
		e := &a.Evidence[i]
		if len(e.EventRef) > maxEvidenceRef {
			e.EventRef = ""
		}
		if e.Props != "" && !validProps(e.Props) {
			e.Props = ""
		}
	}
	if len(a.Evidence) == 0 || jsonUpperBound(a) <= MaxAlertBytes {
		return // within the bound whatever its JSON: no need to write it
	}
	// The JSON's size: the alert without evidence, with room for the
	// widest evidence_dropped and time (set after: RFC 3339 with
	// nanoseconds, at most 35 bytes), then the events.
	ev := a.Evidence
	a.Evidence = nil
	base, err := json.Marshal(a)
	a.Evidence = ev
	if err != nil {
		return // Record never fails: finite floats, valid documents
	}
	size := len(base) + len(`,"evidence":[]`) + len(`,"evidence_dropped":`) + 20 + 35
	sizes := make([]int, len(ev))
	for i := range ev {
		b, _ := json.Marshal(ev[i].record())
		sizes[i] = len(b) + 1 // and its comma
		size += sizes[i]
	}
	drop := 0
	for drop < len(ev) && size > MaxAlertBytes {
		size -= sizes[drop]
		drop++
	}
	if drop > 0 {
		a.Evidence = ev[drop:]
		a.EvidenceDropped += drop
	}
}

// jsonUpperBound is at least the size of a's JSON (as MarshalJSON writes
// it, with a time and evidence_dropped of the widest), without writing
// it: every string counted as if each byte took an escape (6 bytes), each
// number and time at its widest, each key and punctuation generously. So
// bound writes an alert's JSON to measure it only when it could be near
// MaxAlertBytes (it cost an alert a few marshals, most of what handing
// an alert over took).
func jsonUpperBound(a *Alert) int {
	const (
		esc      = 6   // the widest a string's byte is written (\u00XX)
		fixed    = 900 // keys, punctuation, numbers, times, totals, source, graph's room
		perEvent = 400 // an event's keys, punctuation, numbers, times and source's offsets
		perID    = 48  // a cycle vertex: a number, a decimal-string id, separators
	)
	n := fixed + esc*(len(a.Analytic)+len(a.Kind)+len(a.ID)+len(a.VertexID)+len(a.VertexKey)) + perID*len(a.Cycle)
	if a.Source != nil {
		n += esc * len(a.Source.Topic)
	}
	for _, k := range a.CycleIDs {
		n += esc*len(k) + 3
	}
	for _, k := range a.CycleKeys {
		n += esc*len(k) + 3
	}
	for i := range a.Evidence {
		e := &a.Evidence[i]
		n += perEvent + esc*(len(e.SrcID)+len(e.SrcKey)+len(e.DstID)+len(e.DstKey)+len(e.TypeName)+len(e.EventRef)) + esc*len(e.Props)
		if e.Source != nil {
			n += esc * len(e.Source.Topic)
		}
	}
	return n
}
