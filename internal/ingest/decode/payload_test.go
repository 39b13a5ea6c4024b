package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/settings"
)

// paymentsMapping is the issue's payment event with its reference and
// properties.
var paymentsMapping = Mapping{Src: "/from_account", Dst: "/to_account", Op: "/op", Weight: "/amount", Time: "/ts", Type: "/type", EventID: "/event_id",
	Props: PropsMapping{Fields: map[string]string{"currency": "/currency", "channel": "/meta/channel", "region": "header:region", "missing": "/nope"}}}

const issuePayment = `{"event_id":"e-91","from_account":"acct-123","to_account":"acct-9","amount":12.5,"currency":"EUR","ts":"2026-12-06T05:00:00Z","type":"payment","meta":{"channel":"web"}}`

// sameJSON reports whether two JSON texts hold the same value (the
// oracle: encoding/json).
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

type nameTypes map[string]uint16

func (n nameTypes) ID(name string) (uint16, error) {
	if id, ok := n[name]; ok {
		return id, nil
	}
	n[name] = uint16(len(n) + 1)
	return n[name], nil
}

func TestMappingEventRefAndProps(t *testing.T) {
	cases := []struct {
		name      string
		m         Mapping
		r         Record
		refs      []string // per operation
		props     []string // per operation, JSON ("" none)
		wantTypes int
	}{
		{"the issue's payment", paymentsMapping, Record{Value: []byte(issuePayment), Headers: []Header{{"region", []byte(`eu "west"`)}}},
			[]string{"e-91"}, []string{`{"currency":"EUR","channel":"web","region":"eu \"west\""}`}, 1},
		{"a number as event_id, nested and null props", paymentsMapping,
			Record{Value: []byte(`{"event_id":91,"from_account":"a","to_account":"b","currency":{"code":"EUR","n":[1,2.50]},"meta":{"channel":null}}`)},
			[]string{"91"}, []string{`{"currency":{"code":"EUR","n":[1,2.5]}}`}, 0},
		{"no props present, an escaped event_id", paymentsMapping,
			Record{Value: []byte(`{"event_id":"e-\u00e9\n","from_account":"a","to_account":"b"}`)},
			[]string{"e-é\n"}, []string{""}, 0},
		{"an array: each its own", paymentsMapping,
			Record{Value: []byte(`[{"event_id":"e\u0031","from_account":"a","to_account":"b","currency":"EUR"},{"event_id":"e\u0032","from_account":"a","to_account":"c","currency":"NZD","meta":{"channel":"app"}},{"op":"delete","event_id":"x","from_account":"a","to_account":"d","currency":"X"}]`),
				Headers: []Header{{"region", []byte("nz")}}},
			[]string{"e1", "e2", ""}, []string{`{"currency":"EUR","region":"nz"}`, `{"currency":"NZD","channel":"app","region":"nz"}`, ""}, 0},
		{"props from one source, event_id from a header", Mapping{Src: "/s", Dst: "/d", Props: PropsMapping{Source: "/attrs"}, EventID: "header:id"},
			Record{Value: []byte(`{"s":"a","d":"b","attrs":{"k":"v"}}`), Headers: []Header{{"id", []byte("kafka-1")}}},
			[]string{"kafka-1"}, []string{`{"k":"v"}`}, 0},
		{"props of record-level sources only", Mapping{Src: "/s", Dst: "/d", Props: PropsMapping{Fields: map[string]string{"k": "key:0", "c": "const:card"}}, KeySeparator: "|"},
			Record{Key: []byte("x\ty|z"), Value: []byte(`[{"s":"a","d":"b"},{"s":"a","d":"c"}]`)},
			[]string{"", ""}, []string{`{"k":"x\ty","c":"card"}`, `{"k":"x\ty","c":"card"}`}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			types := nameTypes{}
			d := mustMapped(t, c.m, WithTypes(newFakeKeys(), types))
			got, err := decodeRecord(d, &c.r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.refs) {
				t.Fatalf("%d operations, want %d", len(got), len(c.refs))
			}
			for i, e := range got {
				if string(e.EventRef) != c.refs[i] {
					t.Errorf("op %d: event ref %q, want %q", i, e.EventRef, c.refs[i])
				}
				if c.props[i] == "" {
					if e.Props != nil {
						t.Errorf("op %d: props %s, want none", i, e.Props)
					}
				} else if !sameJSON(t, e.Props, c.props[i]) {
					t.Errorf("op %d: props %s, want %s", i, e.Props, c.props[i])
				}
				if why := ruleViolation(e, nil); why != "" && !strings.Contains(why, "out of range") {
					t.Errorf("op %d breaks a rule: %s", i, why)
				}
			}
			if len(types) != c.wantTypes {
				t.Errorf("types %v", types)
			}
		})
	}
}

func TestMappingPayloadErrors(t *testing.T) {
	long := strings.Repeat("r", MaxEventRef+1)
	big := strings.Repeat("x", MaxEdgeProps)
	cases := []struct {
		name   string
		m      Mapping
		r      Record
		off    int
		reason string
	}{
		{"event_id an object", paymentsMapping, Record{Value: []byte(`{"event_id":{},"from_account":"a","to_account":"b"}`)}, 12, "event_id (/event_id) is an object: want a string or a number"},
		{"event_id too long", paymentsMapping, Record{Value: []byte(`{"event_id":"` + long + `","from_account":"a","to_account":"b"}`)}, 12, "event_id (/event_id) an event reference has at most 255 bytes, got 256"},
		{"event_id from a header not UTF-8", Mapping{Src: "/s", Dst: "/d", EventID: "header:id"}, Record{Value: []byte(`{"s":"a","d":"b"}`), Headers: []Header{{"id", []byte("\xff")}}}, 0, "an event reference must be UTF-8"},
		{"props too large", paymentsMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","currency":"` + big + `"}`)}, 0, "an edge's props have at most 4096 bytes"},
		{"props one source, an array", Mapping{Src: "/s", Dst: "/d", Props: PropsMapping{Source: "/attrs"}}, Record{Value: []byte(`{"s":"a","d":"b","attrs":[1]}`)}, 25, "props (/attrs) is an array: want a JSON object"},
		{"props of a header not UTF-8", paymentsMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b"}`), Headers: []Header{{"region", []byte("e\xffu")}}}, 0, "an edge's props: invalid UTF-8"},
		{"a bad record in an array", paymentsMapping, Record{Value: []byte(`[{"from_account":"a","to_account":"b"},{"event_id":true,"from_account":"a","to_account":"b"}]`)}, 51, "event_id (/event_id) is true"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys := newFakeKeys()
			d := mustMapped(t, c.m, keys)
			got, err := decodeRecord(d, &c.r)
			checkDecodeError(t, FormatJSON, got, err, c.off, c.reason)
			if len(keys.keys) != 0 {
				t.Errorf("a rejected record took key ids: %v", keys.keys)
			}
		})
	}
}

func TestMappingPayloadRefused(t *testing.T) {
	base := func(f func(m *Mapping)) Mapping {
		m := Mapping{Src: "/s", Dst: "/d"}
		f(&m)
		return m
	}
	cases := []struct {
		m      Mapping
		reason string
	}{
		{base(func(m *Mapping) { m.Props = PropsMapping{Source: "/p", Fields: map[string]string{"a": "/a"}} }), "props: either a source or a map"},
		{base(func(m *Mapping) { m.Props.Fields = map[string]string{"": "/a"} }), `props: property "": empty`},
		{base(func(m *Mapping) { m.Props.Fields = map[string]string{"a": ""} }), `props: property "a" has no source`},
		{base(func(m *Mapping) { m.Props.Fields = map[string]string{"a": "currency"} }), `props.a "currency": a source is`},
		{base(func(m *Mapping) { m.EventID = "id" }), `event_id "id": a source is`},
		{base(func(m *Mapping) { m.EventID = "const:" + strings.Repeat("x", 300) }), "an event reference has at most 255 bytes"},
		{base(func(m *Mapping) { m.Types = map[string]TypeSettings{"payment": {Aggregate: "sum"}} }), `types: payment: aggregate "sum": want replace or accumulate`},
		{base(func(m *Mapping) { m.Types = map[string]TypeSettings{"payment": {Retain: "1h"}} }), "types: payment: retain is for an accumulate type"},
		{base(func(m *Mapping) {
			m.Types = map[string]TypeSettings{"payment": {Aggregate: "accumulate", Retain: "721h"}}
		}), "types: payment: retain 721h: want 0 to 720h0m0s (30 days)"},
		{base(func(m *Mapping) {
			m.Types = map[string]TypeSettings{"payment": {Aggregate: "accumulate", Retain: "a day"}}
		}), `retain "a day": want a duration`},
		{base(func(m *Mapping) {
			m.Types = map[string]TypeSettings{"payment": {Aggregate: "accumulate", Retain: "-1h"}}
		}), "want 0 to"},
		{base(func(m *Mapping) { m.Types = map[string]TypeSettings{"a,b": {}} }), `types: "a,b":`},
		{base(func(m *Mapping) { m.Types = map[string]TypeSettings{"99999": {}} }), `types: "99999": the number 99999`},
		{base(func(m *Mapping) { m.Types = map[string]TypeSettings{"0": {}, "default": {}} }), "are the same type"},
	}
	for _, c := range cases {
		_, err := NewMapped(c.m, newFakeKeys())
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%+v: got %v, want %q", c.m, err, c.reason)
		}
	}
	m := base(func(m *Mapping) {
		m.Types = map[string]TypeSettings{"payment": {Aggregate: "accumulate", Retain: "24h"}, "login": {}, "7": {Aggregate: "accumulate"}, "default": {Aggregate: "replace"}}
	})
	got, err := m.TypeAggregates()
	if err != nil {
		t.Fatal(err)
	}
	want := []TypeAggregate{{"7", true, 0}, {"default", false, 0}, {"login", false, 0}, {"payment", true, 24 * time.Hour}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TypeAggregates %+v, want %+v", got, want)
	}
}

// TestMappingYAML: the config file's shape of a mapping, props either a
// source or a map, and the types section; decoded strictly.
func TestMappingYAML(t *testing.T) {
	var ms map[string]Mapping
	err := settings.DecodeStrict([]byte(`
payments:
  src: /from_account
  dst: /to_account
  event_id: /event_id
  props: {currency: /currency, channel: /meta/channel}
  types: {payment: {aggregate: accumulate, retain: 24h}}
logins:
  src: /user
  dst: /device
  props: /attrs
`), &ms)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Mapping{
		"payments": {Src: "/from_account", Dst: "/to_account", EventID: "/event_id",
			Props: PropsMapping{Fields: map[string]string{"currency": "/currency", "channel": "/meta/channel"}},
			Types: map[string]TypeSettings{"payment": {Aggregate: "accumulate", Retain: "24h"}}},
		"logins": {Src: "/user", Dst: "/device", Props: PropsMapping{Source: "/attrs"}},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("got %+v\nwant %+v", ms, want)
	}
	for doc, reason := range map[string]string{
		"src: /a\ndst: /b\ntypes: {payment: {aggregate: accumulate, keep: 1h}}\n": `unknown key "keep"; allowed: aggregate, retain`,
		"src: /a\ndst: /b\nprops: [/a, /b]\n":                                     "props: want a source or a map",
		"src: /a\ndst: /b\nevent: /id\n":                                          `unknown key "event"; allowed: dst, event_id,`,
	} {
		var m Mapping
		if err := settings.DecodeStrict([]byte(doc), &m); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("%q: got %v, want %q", doc, err, reason)
		}
	}
	// JSON, both ways.
	for _, m := range want {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Mapping
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, m) {
			t.Errorf("%s: back %+v, %v", b, back, err)
		}
	}
}

// TestPayloadLimitsAreTheStores: the decoder checks what the store
// checks, so a record it passes is never a batch the store refuses (the
// store's check is the oracle), on random JSON objects.
func TestPayloadLimitsAreTheStores(t *testing.T) {
	if MaxEventRef != engine.MaxEventRef || MaxEdgeProps != engine.MaxEdgeProps {
		t.Fatalf("limits %d/%d, the store's %d/%d", MaxEventRef, MaxEdgeProps, engine.MaxEventRef, engine.MaxEdgeProps)
	}
	r := rand.New(rand.NewPCG(42, 7))
	for i := range 2000 {
		obj := map[string]any{}
		for k := range r.IntN(6) {
			obj[fmt.Sprintf("k%d", k)] = randJSON(r, 0)
		}
		if i%50 == 0 {
			obj["big"] = strings.Repeat("é", r.IntN(MaxEdgeProps))
		}
		if i%77 == 0 {
			obj["surrogate"] = json.RawMessage(`"\ud800"`)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			continue
		}
		ours := edgePropsReason(b) == ""
		theirs := engine.CheckEdgePayload("", b) == nil
		if ours != theirs {
			t.Fatalf("%.80s: decoder says %q, the store %v", b, edgePropsReason(b), engine.CheckEdgePayload("", b))
		}
	}
	for _, ref := range []string{"", "e-91", strings.Repeat("r", 255), strings.Repeat("r", 256), "\xff", strings.Repeat("é", 128)} {
		if (refReason([]byte(ref)) == "") != (engine.CheckEdgePayload(ref, nil) == nil) {
			t.Errorf("ref %q: decoder %q, store %v", ref, refReason([]byte(ref)), engine.CheckEdgePayload(ref, nil))
		}
	}
}

// TestMappedPaymentAllocatesNothing: a payment with an event reference
// and props of fields costs no allocation once the scratch has grown.
func TestMappedPaymentAllocatesNothing(t *testing.T) {
	dict, err := keydict.Open(t.TempDir() + "/keys.dict")
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	m := paymentsMapping
	m.Type = ""
	d := mustMapped(t, m, dict)
	r := &Record{Value: []byte(`{"event_id":"e-\u0039","from_account":"acct-123","to_account":"acct-9","amount":12.5,"currency":"EUR","meta":{"channel":"web"}}`),
		Headers: []Header{{"region", []byte("eu")}}}
	emit := func(Edge) {}
	if err := d.DecodeRecord(r, emit); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := d.DecodeRecord(r, emit); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per record", n)
	}
}

func TestParseMappingFlagPayload(t *testing.T) {
	topic, m, err := ParseMappingFlag("payments:src=/from_account,dst=/to_account,event_id=/event_id,props.currency=/currency,props.channel=header:ch,types=payment:accumulate:24h|login:replace")
	if err != nil {
		t.Fatal(err)
	}
	want := Mapping{Src: "/from_account", Dst: "/to_account", EventID: "/event_id",
		Props: PropsMapping{Fields: map[string]string{"currency": "/currency", "channel": "header:ch"}},
		Types: map[string]TypeSettings{"payment": {Aggregate: "accumulate", Retain: "24h"}, "login": {Aggregate: "replace"}}}
	if topic != "payments" || !reflect.DeepEqual(m, want) {
		t.Fatalf("got %s %+v", topic, m)
	}
	for in, reason := range map[string]string{
		"p:src=/a,dst=/b,types=payment":             "types wants name:aggregate[:retain]",
		"p:src=/a,dst=/b,types=payment:sum":         `aggregate "sum"`,
		"p:src=/a,dst=/b,props=/p,props.a=/a":       "either a source or a map",
		"p:src=/a,dst=/b,props.a=/a,props.a=/b":     "props.a given twice",
		"p:src=/a,dst=/b,event=/id":                 `unknown field "event"`,
		"p:src=/a,dst=/b,types=payment:replace:24h": "retain is for an accumulate type",
	} {
		if _, _, err := ParseMappingFlag(in); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: got %v, want %q", in, err, reason)
		}
	}
}

// FuzzMappedPayload: whatever the record, a mapping with an event
// reference and props either refuses it with an *Error or emits
// operations whose payloads the store accepts (its check is the oracle).
func FuzzMappedPayload(f *testing.F) {
	f.Add([]byte(issuePayment), []byte("eu"))
	f.Add([]byte(`[{"event_id":1e3,"from_account":"a","to_account":"b","currency":{"a":[1,{"b":null}]}},{"op":"delete","from_account":"a","to_account":"b"}]`), []byte{0xff})
	f.Add([]byte(`{"event_id":"\ud83d\ude00","from_account":1,"to_account":2,"currency":"\u0000","meta":{"channel":[]}}`), []byte(`"`))
	f.Fuzz(func(t *testing.T, value, header []byte) {
		keys := newFakeKeys()
		m := paymentsMapping
		m.Type = ""
		d := mustMapped(t, m, keys)
		got, err := decodeRecord(d, &Record{Value: value, Headers: []Header{{"region", header}}})
		if err != nil {
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if len(got) != 0 || keys.calls != 0 {
				t.Fatalf("a refused record emitted %d operations, resolved %d keys", len(got), keys.calls)
			}
			return
		}
		for i, e := range got {
			if why := ruleViolation(e, keys); why != "" {
				t.Fatalf("op %d %+v: %s", i, e, why)
			}
		}
	})
}

// TestJSONFormatPayload: the JSON format's upsert takes a ref and props
// (what POST /v1/batches and the writes topic carry), written back by
// AppendJSON; another operation takes no ref, a delete no props.
func TestJSONFormatPayload(t *testing.T) {
	d := New(FormatJSON, newFakeKeys())
	v := `[{"src":1,"dst":2,"weight":12.5,"ref":"e-\u0039\u0031","props":{"currency":"EUR"}},{"src":1,"dst":3,"ref":null,"props":null}]`
	got, err := decodeAll(d, []byte(v))
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{{Op: OpUpsert, Src: 1, Dst: 2, Weight: 12.5, HasWeight: true, EventRef: []byte("e-91"), Props: []byte(`{"currency":"EUR"}`)},
		{Op: OpUpsert, Src: 1, Dst: 3}}
	checkEdges(t, got, want)
	back, err := decodeAll(d, AppendJSON(nil, got[0], "", ""))
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, back, want[:1])
	for _, c := range []struct {
		v      string
		off    int
		reason string
	}{
		{`{"op":"delete","src":1,"dst":2,"ref":"e"}`, 37, "ref not allowed for delete_edge (only for add)"},
		{`{"op":"delete","src":1,"dst":2,"props":{}}`, 39, "props not allowed for delete_edge"},
		{`{"src":1,"dst":2,"ref":91}`, 23, "ref must be a string"},
		{`{"src":1,"dst":2,"ref":"` + strings.Repeat("r", 256) + `"}`, 23, "ref: an event reference has at most 255 bytes"},
		{`{"src":1,"dst":2,"props":[1]}`, 25, "props must be a JSON object"},
		{`{"src":1,"dst":2,"props":{"a":"` + strings.Repeat("x", MaxEdgeProps) + `"}}`, 25, "an edge's props have at most 4096 bytes"},
	} {
		got, err := decodeAll(New(FormatJSON, nil), []byte(c.v))
		checkDecodeError(t, FormatJSON, got, err, c.off, c.reason)
	}
}
