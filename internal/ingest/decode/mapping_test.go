package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/jsontext"
	"github.com/graphtide/graphtide/internal/keydict"
)

// payment is the example event.
const payment = `{"event_id":"e-91","from_account":"acct-17","to_account":"acct-4","amount":"12.50","currency":"EUR","ts":"2026-11-23T10:15:00Z"}`

var paymentMapping = Mapping{Src: "/from_account", Dst: "/to_account", Weight: "/amount", Time: "/ts"}

func mustMapped(t *testing.T, m Mapping, keys KeyResolver) RecordDecoder {
	t.Helper()
	d, err := NewMapped(m, keys)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func decodeRecord(d RecordDecoder, r *Record) ([]Edge, error) {
	var out []Edge
	err := d.DecodeRecord(r, func(e Edge) { out = append(out, keep(e)) })
	return out, err
}

// kedge is an expected edge with its keys spelled out.
type kedge struct {
	op       Op
	src, dst string // a key, or "#n" for numeric id n
	w        float64
	hasW     bool
	ts       time.Time
}

func (k kedge) String() string {
	return fmt.Sprintf("%v %s->%s w=%v/%v t=%v", k.op, k.src, k.dst, k.w, k.hasW, k.ts)
}

func spell(f *fakeKeys, id uint64) string {
	if k, ok := f.key(id); ok {
		return k
	}
	return fmt.Sprintf("#%d", id)
}

func TestMappingSources(t *testing.T) {
	ts := time.Date(2026, 11, 23, 10, 15, 0, 0, time.UTC)
	cases := []struct {
		name string
		m    Mapping
		r    Record
		want []kedge
	}{
		{"the payment", paymentMapping, Record{Value: []byte(payment)},
			[]kedge{{OpUpsert, "acct-17", "acct-4", 12.5, true, ts}}},
		{"numbers as numbers", paymentMapping,
			Record{Value: []byte(`{"from_account":17,"to_account":4,"amount":-3e2,"ts":1700000000123}`)},
			[]kedge{{OpUpsert, "#17", "#4", -300, true, time.UnixMilli(1700000000123).UTC()}}},
		{"nulls are absent", paymentMapping,
			Record{Value: []byte(`{"from_account":"a","to_account":"b","amount":null,"ts":null}`)},
			[]kedge{{OpUpsert, "a", "b", 0, false, time.Time{}}}},
		{"missing optional fields", paymentMapping,
			Record{Value: []byte(`{"to_account":"b","from_account":"a"}`)},
			[]kedge{{OpUpsert, "a", "b", 0, false, time.Time{}}}},
		{"nested pointers, escapes, arrays", Mapping{Src: "/p/a~1b", Dst: "/p/list/1", Weight: "/w~0x"},
			Record{Value: []byte(`{"skip":{"deep":[1,{"x":[true,false,null]}]},"p":{"a/b":"k\u00e9y\n","list":["no","d\"st"]},"w~x":"2"}`)},
			[]kedge{{OpUpsert, "kéy\n", `d"st`, 2, true, time.Time{}}}},
		{"an escaped member name", Mapping{Src: "/s\u00e9", Dst: "/d"},
			Record{Value: []byte(`{"s\u00e9":"x","d":"y"}`)},
			[]kedge{{OpUpsert, "x", "y", 0, false, time.Time{}}}},
		{"an array of events", Mapping{Src: "/s", Dst: "/d", Op: "/kind", OpValues: map[string]string{"paid": "upsert", "refunded": "delete", "closed": "delete_vertex"}},
			Record{Value: []byte(` [ {"s":"a","d":"b","kind":"paid"}, {"s":"a","d":"b","kind":"refunded"},{"s":"c","kind":"closed","d":"ignored"} ] `)},
			[]kedge{{OpUpsert, "a", "b", 0, false, time.Time{}}, {OpDeleteEdge, "a", "b", 0, false, time.Time{}}, {OpDeleteVertex, "c", "#0", 0, false, time.Time{}}}},
		{"standard op names", Mapping{Src: "/s", Dst: "/d", Op: "/op", Weight: "/w"},
			Record{Value: []byte(`[{"s":"a","d":"b","op":"delete","w":5},{"s":"a","d":"b","op":"add","w":5}]`)},
			[]kedge{{OpDeleteEdge, "a", "b", 0, false, time.Time{}}, {OpUpsert, "a", "b", 5, true, time.Time{}}}},
		{"the record key", Mapping{Src: "key", Dst: "/to"},
			Record{Key: []byte("acct-1"), Value: []byte(`{"to":"acct-2"}`)},
			[]kedge{{OpUpsert, "acct-1", "acct-2", 0, false, time.Time{}}}},
		{"key parts", Mapping{Src: "key:0", Dst: "key:1", KeySeparator: "->"},
			Record{Key: []byte("u1->u2"), Value: []byte(`{}`)},
			[]kedge{{OpUpsert, "u1", "u2", 0, false, time.Time{}}}},
		{"a JSON key", Mapping{Src: "key:/from", Dst: "key:/to", Weight: "/amount"},
			Record{Key: []byte(`{"to":9,"from":"x"}`), Value: []byte(`{"amount":1.5}`)},
			[]kedge{{OpUpsert, "x", "#9", 1.5, true, time.Time{}}}},
		{"headers, the last one wins", Mapping{Src: "header:from", Dst: "/d", Time: "header:at", TimeUnit: "s"},
			Record{Headers: []Header{{"from", []byte("h0")}, {"at", []byte("1700000000.5")}, {"from", []byte("h1")}}, Value: []byte(`{"d":"y"}`)},
			[]kedge{{OpUpsert, "h1", "y", 0, false, time.UnixMilli(1700000000500).UTC()}}},
		{"constants", Mapping{Src: "/s", Dst: "/d", Op: "const:delete"},
			Record{Value: []byte(`{"s":"a","d":"b"}`)},
			[]kedge{{OpDeleteEdge, "a", "b", 0, false, time.Time{}}}},
		{"constant weight", Mapping{Src: "/s", Dst: "/d", Weight: "const:0.25"},
			Record{Value: []byte(`{"s":"a","d":"b"}`)},
			[]kedge{{OpUpsert, "a", "b", 0.25, true, time.Time{}}}},
		{"epoch micros as a string", Mapping{Src: "/s", Dst: "/d", Time: "/t", TimeUnit: "us"},
			Record{Value: []byte(`{"s":"a","d":"b","t":"1700000000123456"}`)},
			[]kedge{{OpUpsert, "a", "b", 0, false, time.UnixMicro(1700000000123456).UTC()}}},
		{"RFC 3339 with an offset and a fraction", Mapping{Src: "/s", Dst: "/d", Time: "/t"},
			Record{Value: []byte(`{"s":"a","d":"b","t":"2026-11-23T11:15:00.1234567+01:00"}`)},
			[]kedge{{OpUpsert, "a", "b", 0, false, ts.Add(123456 * time.Microsecond)}}},
		{"a tombstone ignored", Mapping{Src: "key:0", Dst: "key:1", KeySeparator: "|"},
			Record{Key: []byte("a|b")}, nil},
		{"a tombstone deletes", Mapping{Src: "key:0", Dst: "key:1", KeySeparator: "|", Tombstone: "delete"},
			Record{Key: []byte("a|b")},
			[]kedge{{OpDeleteEdge, "a", "b", 0, false, time.Time{}}}},
		{"a tombstone deletes by its own sources", Mapping{Src: "/s", Dst: "/d", Tombstone: "delete", TombstoneSrc: "key:/s", TombstoneDst: "header:dst"},
			Record{Key: []byte(`{"s":"a"}`), Headers: []Header{{"dst", []byte("b")}}},
			[]kedge{{OpDeleteEdge, "a", "b", 0, false, time.Time{}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys := newFakeKeys()
			d := mustMapped(t, c.m, keys)
			got, err := decodeRecord(d, &c.r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d edges %+v, want %v", len(got), got, c.want)
			}
			for i, e := range got {
				k := kedge{e.Op, spell(keys, e.Src), spell(keys, e.Dst), e.Weight, e.HasWeight, e.EventTime}
				if k.String() != c.want[i].String() {
					t.Errorf("edge %d: got %v, want %v", i, k, c.want[i])
				}
			}
		})
	}
}

func TestMappingErrors(t *testing.T) {
	cases := []struct {
		name   string
		m      Mapping
		r      Record
		off    int
		reason string
	}{
		{"src missing", paymentMapping, Record{Value: []byte(`{"to_account":"b"}`)}, 0, "src (/from_account) is missing"},
		{"dst an object", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":{"id":1}}`)}, 33, "dst (/to_account) is an object: want a string key or an unsigned integer"},
		{"amount with a comma", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","amount":"12,50"}`)}, 46, `weight (/amount) invalid weight "12,50"`},
		{"amount a boolean", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","amount":true}`)}, 46, "weight (/amount) is true: want a number"},
		{"time not a time", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","ts":"yesterday"}`)}, 42, `time (/ts) "yesterday" is neither RFC 3339 nor a number of milliseconds`},
		{"time before 1970", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","ts":"1969-12-31T23:59:59Z"}`)}, 42, "out of range"},
		{"time too large", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","ts":99999999999999999}`)}, 42, "is not a time since the epoch in milliseconds"},
		{"time negative", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","ts":-5}`)}, 42, "is not a time since the epoch"},
		{"time before 1970", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b","ts":"1960-01-01T00:00:00Z"}`)}, 42, `time (/ts) "1960-01-01T00:00:00Z" is out of range (1970 to 9999)`},
		{"a float id", paymentMapping, Record{Value: []byte(`{"from_account":1.5,"to_account":"b"}`)}, 16, "src (/from_account) is the number 1.5: want an unsigned integer or a string key"},
		{"an id too large", paymentMapping, Record{Value: []byte(`{"from_account":99999999999999999999,"to_account":"b"}`)}, 16, "out of range"},
		{"an id in the key range", paymentMapping, Record{Value: []byte(fmt.Sprintf(`{"from_account":%d,"to_account":"b"}`, keydict.KeyBase))}, 16, "must be below"},
		{"an empty key", paymentMapping, Record{Value: []byte(`{"from_account":"","to_account":"b"}`)}, 16, "src (/from_account) is not a key: empty key"},
		{"an unknown op", Mapping{Src: "/s", Dst: "/d", Op: "/op"}, Record{Value: []byte(`{"s":"a","d":"b","op":"merge"}`)}, 22, `op (/op) "merge" is not an operation: want add, add_vertex, delete, delete_vertex, put_vertex, upsert`},
		{"an op not a string", Mapping{Src: "/s", Dst: "/d", Op: "/op"}, Record{Value: []byte(`{"s":"a","d":"b","op":1}`)}, 22, "op (/op) is a number: want a string"},
		{"not JSON", paymentMapping, Record{Value: []byte(`from=a to=b`)}, 0, "the value is not JSON ('f')"},
		{"a string value", paymentMapping, Record{Value: []byte(`"x"`)}, 0, "the value is a string: want a JSON object"},
		{"empty", paymentMapping, Record{Value: []byte(`  `)}, 2, "empty value"},
		{"an empty array", paymentMapping, Record{Value: []byte(`[ ]`)}, 2, "empty array"},
		{"an array of numbers", paymentMapping, Record{Value: []byte(`[1]`)}, 1, "an array element is a number: want an object"},
		{"bad syntax in an ignored field", paymentMapping, Record{Value: []byte(`{"x":[1,2,,3],"from_account":"a","to_account":"b"}`)}, 10, "looking for the beginning of a value"},
		{"trailing data", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b"} x`)}, 38, "data after the JSON value"},
		{"cut short", paymentMapping, Record{Value: []byte(`{"from_account":"a","to_account":"b"`)}, 36, "unexpected end of JSON input"},
		{"invalid UTF-8 in an ignored field", paymentMapping, Record{Value: []byte("{\"x\":\"\xff\",\"from_account\":\"a\",\"to_account\":\"b\"}")}, 6, "invalid UTF-8"},
		{"a lone surrogate", paymentMapping, Record{Value: []byte(`{"from_account":"\ud800","to_account":"b"}`)}, 17, "lone surrogate"},
		{"too deep", paymentMapping, Record{Value: []byte(`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`)}, 68, "nested deeper than 64"},
		{"no record key", Mapping{Src: "key", Dst: "/d"}, Record{Value: []byte(`{"d":"b"}`)}, 0, "src (key of the record key) is missing"},
		{"a key with too few parts", Mapping{Src: "key:0", Dst: "key:1", KeySeparator: "|"}, Record{Key: []byte("a"), Value: []byte(`{}`)}, 0, "dst (key:1 of the record key) is missing"},
		{"a key that is not JSON", Mapping{Src: "key:/s", Dst: "/d"}, Record{Key: []byte("a"), Value: []byte(`{"d":"b"}`)}, 0, "the record key is not JSON"},
		{"a missing header", Mapping{Src: "header:from", Dst: "/d"}, Record{Value: []byte(`{"d":"b"}`)}, 0, `src (header "from") is missing`},
		{"a tombstone dead-lettered", Mapping{Src: "/s", Dst: "/d", Tombstone: "dead-letter"}, Record{Key: []byte("k")}, 0, "a null value (a tombstone)"},
		{"a tombstone with no key", Mapping{Src: "key:0", Dst: "key:1", KeySeparator: "|", Tombstone: "delete"}, Record{}, 0, "tombstone_src (key:0 of the record key) is missing"},
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

func TestMappingRefused(t *testing.T) {
	cases := []struct {
		m      Mapping
		reason string
	}{
		{Mapping{Src: "/s"}, "a mapping needs src and dst"},
		{Mapping{Src: "s", Dst: "/d"}, `src "s": a source is /json/pointer, key, key:/json/pointer, key:N, header:NAME or const:TEXT`},
		{Mapping{Src: "/s", Dst: "/d", Weight: "/a~2"}, "must be ~0 or ~1"},
		{Mapping{Src: "key:0", Dst: "/d"}, "key:N needs key_separator"},
		{Mapping{Src: "key:x", Dst: "/d"}, "key:N needs N from 0 to 64"},
		{Mapping{Src: "key:+1", Dst: "/d"}, "key:N needs N from 0 to 64"},
		{Mapping{Src: "key:01", Dst: "/d"}, "key:N needs N from 0 to 64"},
		{Mapping{Src: "/s", Dst: "/d", TimeUnit: "ns"}, `time_unit "ns": want s, ms or us`},
		{Mapping{Src: "/s", Dst: "/d", OpValues: map[string]string{"x": "merge"}}, `op_values: "x" maps to "merge"`},
		{Mapping{Src: "/s", Dst: "/d", Tombstone: "drop"}, `tombstone "drop": want ignore, delete or dead-letter`},
		{Mapping{Src: "/s", Dst: "key", Tombstone: "delete"}, `tombstone delete: src "/s" reads the value`},
		{Mapping{Src: "/s", Dst: "/d", TombstoneSrc: "/s"}, "a tombstone has no value"},
	}
	for _, c := range cases {
		_, err := NewMapped(c.m, newFakeKeys())
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%+v: got %v, want %q", c.m, err, c.reason)
		}
	}
}

// TestMappingNoKeys: without a key dictionary a string key is an error,
// numbers use the whole range.
func TestMappingNoKeys(t *testing.T) {
	d := mustMapped(t, paymentMapping, nil)
	got, err := decodeRecord(d, &Record{Value: []byte(payment)})
	checkDecodeError(t, FormatJSON, got, err, 34, "no key dictionary is configured")
	got, err = decodeRecord(d, &Record{Value: []byte(fmt.Sprintf(`{"from_account":%d,"to_account":0}`, MaxVertex))})
	if err != nil || len(got) != 1 || got[0].Src != MaxVertex {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// TestMappingAgreesWithTheNativeFormat: a native JSON value decoded by the
// native decoder and by the mapping that names its own fields give the same
// edges (the native decoder is the oracle), for random values.
func TestMappingAgreesWithTheNativeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	nk, mk := newFakeKeys(), newFakeKeys()
	native := New(FormatJSON, nk)
	m := mustMapped(t, Mapping{Src: "/src", Dst: "/dst", Op: "/op", Weight: "/weight", Time: "/ts"}, mk)
	for i := 0; i < 2000; i++ {
		var v []byte
		n := 1 + r.IntN(4)
		v = append(v, '[')
		for k := 0; k < n; k++ {
			e := Edge{Op: Op(r.IntN(3)), Src: r.Uint64N(1000), Dst: r.Uint64N(1000)}
			if e.Op == OpDeleteVertex {
				e.Dst = 0
			}
			if e.Op == OpUpsert && r.IntN(2) == 0 {
				e.Weight, e.HasWeight = float64(r.IntN(1000))/8-50, true
			}
			if r.IntN(2) == 0 {
				e.EventTime = time.UnixMilli(r.Int64N(1 << 42)).UTC()
			}
			sk, dk := "", ""
			if r.IntN(2) == 0 {
				sk = fmt.Sprintf("k\u00e9\\%d\"", e.Src)
			}
			if r.IntN(2) == 0 && e.Op != OpDeleteVertex {
				dk = fmt.Sprintf("d%d", e.Dst)
			}
			if k > 0 {
				v = append(v, ',')
			}
			v = AppendJSON(v, e, sk, dk)
		}
		v = append(v, ']')
		want, werr := decodeAll(native, v)
		got, gerr := decodeAll(m, v)
		if werr != nil || gerr != nil {
			t.Fatalf("%s: native %v, mapped %v", v, werr, gerr)
		}
		if len(want) != len(got) {
			t.Fatalf("%s: native %d edges, mapped %d", v, len(want), len(got))
		}
		for k := range want {
			w, g := want[k], got[k]
			w.Src, w.Dst = uint64(len(spell(nk, w.Src))), uint64(len(spell(nk, w.Dst)))
			g.Src, g.Dst = uint64(len(spell(mk, g.Src))), uint64(len(spell(mk, g.Dst)))
			if spell(nk, want[k].Src) != spell(mk, got[k].Src) || spell(nk, want[k].Dst) != spell(mk, got[k].Dst) || !reflect.DeepEqual(w, g) {
				t.Fatalf("%s: edge %d: native %+v, mapped %+v", v, k, want[k], got[k])
			}
		}
	}
}

// TestScannerAcceptsExactlyJSON: the scanner accepts a text iff
// encoding/json.Valid does and the text is valid UTF-8 with no escaped lone
// surrogate (the oracle), over random JSON and mutations of it; and the
// values it picks are those encoding/json finds at the same pointers.
func TestScannerAcceptsExactlyJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	root := &jnode{}
	root.add([]string{"a"}, 0)
	root.add([]string{"b", "c"}, 1)
	root.add([]string{"l", "1"}, 2)
	for i := 0; i < 20000; i++ {
		doc := map[string]any{"a": randJSON(r, 3), "b": map[string]any{"c": randJSON(r, 2), "z": randJSON(r, 2)}, "l": []any{randJSON(r, 1), randJSON(r, 2)}, "x": randJSON(r, 3)}
		v, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 { // mutate
			for k := 0; k < 1+r.IntN(3); k++ {
				p := r.IntN(len(v))
				switch r.IntN(4) {
				case 0:
					v = append(v[:p], v[p+1:]...)
				case 1:
					const pool = "{}[]\",:0-.eE\\u tfn\xff\x01 "
					v[p] = pool[r.IntN(len(pool))]
				case 2:
					const pool = "{}[]\",:1\\"
					v = append(v[:p], append([]byte{pool[r.IntN(len(pool))]}, v[p:]...)...)
				case 3:
					v = append(v[:p], append([]byte(`\ud83d`), v[p:]...)...)
				}
				if len(v) == 0 {
					v = []byte("{")
				}
			}
		}
		s := jscan{v: v, vals: make([]jval, 3)}
		end, jerr := s.value(0, root, 0)
		ok := jerr == nil && s.ws(end) == len(v)
		_, why := jsontext.Check(v)
		want := json.Valid(v) && utf8.Valid(v) && why == ""
		if ok != want {
			t.Fatalf("%q: scanner says %v (%v), oracle %v", v, ok, jerr, want)
		}
		if !ok || v[0] != '{' {
			continue
		}
		var back map[string]any
		if err := unmarshalNumbers(v, &back); err != nil {
			t.Fatal(err)
		}
		want3 := []any{back["a"], nil, nil}
		if b, ok := back["b"].(map[string]any); ok {
			want3[1] = b["c"]
		}
		if l, ok := back["l"].([]any); ok && len(l) > 1 {
			want3[2] = l[1]
		}
		for f, w := range want3 {
			g := s.vals[f]
			var gv any
			if g.kind != jMissing {
				txt := v[g.start:g.end]
				if g.kind == jString {
					txt = v[g.start-1 : g.end+1]
				}
				if err := unmarshalNumbers(txt, &gv); err != nil {
					t.Fatalf("%q: field %d picked %q: %v", v, f, txt, err)
				}
			}
			if fmt.Sprint(gv) != fmt.Sprint(w) {
				t.Fatalf("%q: field %d picked %v, encoding/json %v", v, f, gv, w)
			}
		}
	}
}

// unmarshalNumbers is json.Unmarshal keeping numbers as their text (an
// exponent beyond float64's range is still JSON).
func unmarshalNumbers(v []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	return d.Decode(out)
}

// randJSON returns a random JSON value (strings with escapes and
// non-ASCII, numbers of every shape) nested up to depth.
func randJSON(r *rand.Rand, depth int) any {
	switch k := r.IntN(8); {
	case k == 0 && depth > 0:
		m := map[string]any{}
		for i := 0; i < r.IntN(4); i++ {
			m[fmt.Sprintf("k%d\u00e9\"", r.IntN(5))] = randJSON(r, depth-1)
		}
		return m
	case k == 1 && depth > 0:
		var l []any
		for i := 0; i < r.IntN(4); i++ {
			l = append(l, randJSON(r, depth-1))
		}
		return l
	case k == 2:
		return fmt.Sprintf("s\t\\/%d\u2028\U0001F600", r.IntN(100))
	case k == 3:
		return r.NormFloat64() * 1e6
	case k == 4:
		return json.Number(fmt.Sprintf("%de%d", r.IntN(1000)-500, r.IntN(20)-10))
	case k == 5:
		return r.IntN(2) == 0
	case k == 6:
		return nil
	}
	return r.Int64()
}

// TestMappedDecodeAllocatesNothing: with known keys (the key dictionary's
// byte path), a mapped payment costs no allocation.
func TestMappedDecodeAllocatesNothing(t *testing.T) {
	dict, err := keydict.Open(t.TempDir() + "/keys.dict")
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	d := mustMapped(t, paymentMapping, dict)
	r := &Record{Value: []byte(payment)}
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
	var de *Error
	if _, err := decodeRecord(d, &Record{Value: []byte(`{}`)}); !errors.As(err, &de) {
		t.Fatalf("got %v", err)
	}
}

func TestParseMappingFlag(t *testing.T) {
	topic, m, err := ParseMappingFlag("payments:src=/from_account,dst=/to_account,weight=/amount,time=/ts,time_unit=s,op=/kind,op_values=paid:upsert|refunded:delete,tombstone=ignore")
	if err != nil {
		t.Fatal(err)
	}
	want := Mapping{Src: "/from_account", Dst: "/to_account", Weight: "/amount", Time: "/ts", TimeUnit: "s", Op: "/kind",
		OpValues: map[string]string{"paid": "upsert", "refunded": "delete"}, Tombstone: "ignore"}
	if topic != "payments" || fmt.Sprint(m) != fmt.Sprint(want) {
		t.Fatalf("got %s %+v", topic, m)
	}
	for in, reason := range map[string]string{
		"payments":                           "want topic:src=SOURCE",
		"payments:src=/a,dst":                `"dst" is not field=source`,
		"payments:src=/a,dst=/b,src=/c":      "src given twice",
		"payments:src=/a,dst=/b,amount=/c":   `unknown field "amount"`,
		"payments:src=/a,dst=/b,op_values=x": "op_values wants name:op",
		"payments:src=/a":                    "topic payments: a mapping needs src and dst",
	} {
		if _, _, err := ParseMappingFlag(in); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: got %v, want %q", in, err, reason)
		}
	}
}
