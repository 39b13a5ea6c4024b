package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
)

// TestVertexRecordsThroughKafka produces vertex records (puts that
// replace, grow and shrink documents, vertex deletes, edges beside them)
// to a binary, a JSON (string keys), a text and a mapped topic on the real
// broker, with a malformed record of each kind among them; ingests them,
// and compares every vertex's record and existence with an oracle of the
// records in log order; then again after reopening the store. The
// malformed records are dead-lettered and nothing else is lost.
func TestVertexRecordsThroughKafka(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	binT, jsonT, textT, mapT := uniq("vtx-bin"), uniq("vtx-json"), uniq("vtx-text"), uniq("vtx-map")
	for _, topic := range []string{binT, jsonT, textT, mapT} {
		createTopic(t, topic, 1)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	type rec struct {
		label string
		props string
	}
	// Per topic, its own vertices (so that the order across topics does
	// not matter): the oracle of records and of vertices with edges.
	recs := map[string]map[string]rec{}
	edged := map[string]map[string]bool{}
	var out []*record
	add := func(topic, value string) { out = append(out, &record{topic: topic, value: []byte(value)}) }
	labels := []string{"", "account", "merchant", "ünï"}
	props := func() string {
		switch r.IntN(3) {
		case 0:
			return ""
		case 1:
			return fmt.Sprintf(`{"n":%d}`, r.IntN(1000))
		}
		b, _ := json.Marshal(map[string]any{"blob": fmt.Sprintf("%0*d", 100+r.IntN(3500), 7), "k": r.Float64()})
		return string(b)
	}
	// Numeric ids: each topic its own thousand.
	base := map[string]int{binT: 1000, textT: 2000, mapT: 3000}
	for _, topic := range []string{binT, jsonT, textT, mapT} {
		recs[topic], edged[topic] = map[string]rec{}, map[string]bool{}
		for i := range 400 {
			v := base[topic] + r.IntN(40)
			name := fmt.Sprint(v)
			if topic == jsonT {
				name = fmt.Sprintf("user-%d", v)
			}
			switch x := r.IntN(10); {
			case x == 0:
				// A vertex delete: its record and edges go.
				delete(recs[topic], name)
				delete(edged[topic], name)
				switch topic {
				case binT:
					out = append(out, &record{topic: topic, value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpDeleteVertex, Src: uint64(v)})})
				case jsonT:
					add(topic, fmt.Sprintf(`{"op":"delete_vertex","src":%q}`, name))
				case textT:
					add(topic, "dv "+name)
				default:
					add(topic, fmt.Sprintf(`{"kind":"closed","id":%s}`, name))
				}
			case x == 1 && topic != jsonT:
				// An edge to a vertex of its own (a self-loop: both ends
				// exist), so existence comes from edges too.
				edged[topic][name] = true
				switch topic {
				case binT:
					out = append(out, &record{topic: topic, value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpUpsert, Src: uint64(v), Dst: uint64(v)})})
				case textT:
					add(topic, name+" "+name)
				default:
					add(topic, fmt.Sprintf(`{"kind":"paid","id":%s,"to":%s}`, name, name))
				}
			case x == 2 && i%50 == 0:
				// Malformed: dead-lettered.
				switch topic {
				case binT:
					out = append(out, &record{topic: topic, value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpPutVertex, Src: 1, Props: []byte("[1]")}), poison: "props"})
				case jsonT:
					out = append(out, &record{topic: topic, value: []byte(`{"op":"add_vertex","src":"x","props":"no"}`), poison: "props"})
				case textT:
					out = append(out, &record{topic: topic, value: []byte("v 1 a b c"), poison: "fields"})
				default:
					out = append(out, &record{topic: topic, value: []byte(`{"kind":"opened","id":1,"type":7}`), poison: "label"})
				}
			default:
				lb := labels[r.IntN(len(labels))]
				p := props()
				if topic == textT {
					p = ""
					if lb == "" {
						lb = "plain"
					}
				}
				recs[topic][name] = rec{lb, p}
				switch topic {
				case binT:
					out = append(out, &record{topic: topic, value: decode.AppendBinary(nil, decode.Edge{Op: decode.OpPutVertex, Src: uint64(v), Label: []byte(lb), Props: []byte(p)})})
				case jsonT:
					e := map[string]any{"op": "add_vertex", "src": name, "label": lb}
					if p != "" {
						e["props"] = json.RawMessage(p)
					}
					b, _ := json.Marshal(e)
					add(topic, string(b))
				case textT:
					add(topic, "v "+name+" "+lb)
				default:
					e := map[string]any{"kind": "opened", "id": v, "type": lb}
					if p != "" {
						e["attrs"] = json.RawMessage(p)
					}
					b, _ := json.Marshal(e)
					add(topic, string(b))
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := produce(ctx, newProducer(t), out); err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, binT, jsonT, textT, mapT)
	dir := t.TempDir()
	s, dict := openStore(t, dir, 256<<10)
	m := ingest.NewMetrics(nil)
	log, _ := testLogger(t, "ingester")
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{binT, jsonT, textT, mapT}, Group: uniq("vtx-group"),
		TopicFormats: map[string]decode.Format{jsonT: decode.FormatJSON, textT: decode.FormatText},
		Mappings: map[string]decode.Mapping{mapT: {Src: "/id", Dst: "/to", Op: "/kind", Label: "/type", Props: decode.PropsMapping{Source: "/attrs"},
			OpValues: map[string]string{"opened": "add_vertex", "paid": "add", "closed": "delete_vertex"}}},
		DeadLetterTopic: uniq("vtx-dead"), FlushInterval: 200 * time.Millisecond, Logger: log, Metrics: m,
	})
	run.waitDurable(t, end, 90*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	poisoned, puts := 0, 0
	for _, o := range out {
		if o.poison != "" {
			poisoned++
		}
	}
	for _, topic := range []string{binT, jsonT, textT, mapT} {
		puts += int(testutil.ToFloat64(m.DecodeErrs.WithLabelValues(topic)))
	}
	if puts != poisoned {
		t.Errorf("decode errors %d, malformed records %d", puts, poisoned)
	}
	if testutil.ToFloat64(m.Vertices) == 0 {
		t.Error("graphtide_ingest_vertex_records_total stayed 0")
	}
	check := func(what string, s *engine.Store, dict *keydict.Dict) {
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		n := 0
		for _, topic := range []string{binT, jsonT, textT, mapT} {
			for i := range 40 {
				v := base[topic] + i
				name := fmt.Sprint(v)
				id := uint64(v)
				if topic == jsonT {
					name = fmt.Sprintf("user-%d", v)
					var ok bool
					if id, ok = dict.Lookup(name); !ok {
						continue // never named: no record, no edge
					}
				}
				got, ok, err := sn.Vertex(id)
				if err != nil {
					t.Fatal(err)
				}
				want, wok := recs[topic][name]
				if ok != wok || ok && (got.Label != want.label || string(got.Props) != want.props) {
					t.Errorf("%s: %s vertex %s: (%q, %s, %v), want (%q, %s, %v)", what, topic, name, got.Label, got.Props, ok, want.label, want.props, wok)
				}
				ex, err := sn.VertexExists(id)
				if err != nil {
					t.Fatal(err)
				}
				if ex != (wok || edged[topic][name]) {
					t.Errorf("%s: %s vertex %s exists: %v, want %v", what, topic, name, ex, !ex)
				}
				if ok {
					n++
				}
			}
		}
		if n == 0 {
			t.Fatalf("%s: no record found at all", what)
		}
	}
	check("after ingest", s, dict)
	if err := dict.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, dict = openStore(t, dir, 256<<10)
	defer s.Close()
	defer dict.Close()
	check("after reopening", s, dict)
}
