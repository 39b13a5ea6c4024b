package decode

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/keydict"
)

const kb = keydict.KeyBase

func TestJSONValid(t *testing.T) {
	cases := []struct {
		name  string
		keys  bool
		value string
		want  []Edge
	}{
		{"default op", false, `{"src":1,"dst":2}`, []Edge{{Src: 1, Dst: 2}}},
		{"add with weight", false, `{"op":"add","src":1,"dst":2,"weight":0.5}`, []Edge{{Src: 1, Dst: 2, Weight: 0.5, HasWeight: true}}},
		{"upsert with exponent weight", false, `{"op":"upsert","src":1,"dst":2,"weight":-2e3}`, []Edge{{Src: 1, Dst: 2, Weight: -2000, HasWeight: true}}},
		{"integer weight", false, `{"src":1,"dst":2,"weight":7}`, []Edge{{Src: 1, Dst: 2, Weight: 7, HasWeight: true}}},
		{"delete with ms ts", false, `{"op":"delete","src":1,"dst":2,"ts":1700000000123}`, []Edge{{Op: OpDeleteEdge, Src: 1, Dst: 2, EventTime: us(1700000000123000)}}},
		{"delete vertex", false, `{"op":"delete_vertex","src":5}`, []Edge{{Op: OpDeleteVertex, Src: 5}}},
		{"rfc3339 ts with zone, sub-microsecond truncated", false, `{"src":1,"dst":2,"ts":"2024-05-01T14:00:00.1234567+02:00"}`,
			[]Edge{{Src: 1, Dst: 2, EventTime: time.Date(2024, 5, 1, 12, 0, 0, 123456000, time.UTC)}}},
		{"rfc3339 ts without fraction", false, `{"src":1,"dst":2,"ts":"1970-01-01T00:00:00Z"}`, []Edge{{Src: 1, Dst: 2, EventTime: us(0)}}},
		{"last ts", false, `{"src":1,"dst":2,"ts":"9999-12-31T23:59:59.999999Z"}`, []Edge{{Src: 1, Dst: 2, EventTime: us(maxEventMicros)}}},
		{"ms ts zero", false, `{"src":1,"dst":2,"ts":0}`, []Edge{{Src: 1, Dst: 2, EventTime: us(0)}}},
		{"nulls are absent", false, `{"src":1,"dst":2,"weight":null,"ts":null}`, []Edge{{Src: 1, Dst: 2}}},
		{"null weight on delete", false, `{"op":"delete","src":1,"dst":2,"weight":null}`, []Edge{{Op: OpDeleteEdge, Src: 1, Dst: 2}}},
		{"any field order, whitespace", false, " \n{ \"dst\" : 2 ,\t\"src\":1, \"op\" : \"delete\" }\r\n", []Edge{{Op: OpDeleteEdge, Src: 1, Dst: 2}}},
		{"max vertex without keys", false, `{"src":9223372036854775807,"dst":0}`, []Edge{{Src: MaxVertex}}},
		{"array", false, `[{"src":1,"dst":2},{"op":"delete","src":3,"dst":4},{"op":"delete_vertex","src":5,"ts":2}]`, []Edge{
			{Src: 1, Dst: 2}, {Op: OpDeleteEdge, Src: 3, Dst: 4}, {Op: OpDeleteVertex, Src: 5, EventTime: us(2000)},
		}},
		{"keys", true, `[{"src":"alice","dst":"bob"},{"src":"bob","dst":"123"},{"src":"alice","dst":7,"weight":1}]`, []Edge{
			{Src: kb, Dst: kb + 1}, {Src: kb + 1, Dst: kb + 2}, {Src: kb, Dst: 7, Weight: 1, HasWeight: true},
		}},
		{"escaped keys", true, `{"src":"a\"b\\c","dst":"\u00e9t\u00e9"}`, []Edge{{Src: kb, Dst: kb + 1}}},
		{"key vertex delete", true, `{"op":"delete_vertex","src":"carol"}`, []Edge{{Op: OpDeleteVertex, Src: kb}}},
		{"numeric below key base with keys", true, `{"src":4611686018427387903,"dst":0}`, []Edge{{Src: kb - 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys KeyResolver
			if c.keys {
				keys = newFakeKeys()
			}
			got, err := decodeAll(New(FormatJSON, keys), []byte(c.value))
			if err != nil {
				t.Fatal(err)
			}
			checkEdges(t, got, c.want)
			for _, e := range got {
				if e.Op == OpDeleteVertex && e.Dst != 0 {
					t.Fatalf("vertex delete with dst %d", e.Dst)
				}
			}
		})
	}
}

func TestJSONInvalid(t *testing.T) {
	longKey := strings.Repeat("k", keydict.MaxKeyLen+1)
	cases := []struct {
		name   string
		keys   bool
		value  string
		off    int
		reason string
	}{
		{"empty", false, ``, 0, "empty value"},
		{"blank", false, " \n\t", 0, "empty value"},
		{"empty array", false, ` []`, 1, "empty array"},
		{"number", false, `42`, 0, "must be a json object"},
		{"string", false, `"x"`, 0, "must be a json object"},
		{"null", false, `null`, 0, "must be a json object"},
		{"array of numbers", false, `[1]`, 1, "array element must be an object"},
		{"nested array", false, `[{"src":1,"dst":2}, [ ]]`, 20, "array element must be an object"},
		{"two objects", false, `{"src":1,"dst":2}{"src":1,"dst":2}`, 17, "trailing data"},
		{"trailing garbage", false, `{"src":1,"dst":2} x`, 18, "trailing data"},
		{"truncated", false, `{"src":1,"dst":2`, 16, "unexpected end"},
		{"truncated array", false, `[{"src":1,"dst":2}`, 18, "unexpected end"},
		{"double comma", false, `{"src":1,,"dst":2}`, 9, "invalid json"},
		{"trailing comma", false, `{"src":1,"dst":2,}`, 17, "invalid json"},
		{"missing comma", false, `{"src":1 "dst":2}`, 9, "invalid json"},
		{"bad escape", false, `{"src":"\q","dst":1}`, 8, "invalid json"},
		{"bad literal", false, `{"src":1,"dst":tru}`, 15, "invalid json"},
		{"unknown field", false, `{"src":1,"dst":2,"w":3}`, 17, `unknown field "w"`},
		{"repeated field", false, `{"src":1,"src":2,"dst":3}`, 9, `repeated field "src"`},
		{"op not a string", false, `{"op":1,"src":1,"dst":2}`, 6, "op must be a string"},
		{"unknown op", false, `{"op":"remove","src":1,"dst":2}`, 6, `unknown op "remove"`},
		{"fraction", false, `{"src":1.5,"dst":2}`, 7, "src: vertex id 1.5 is not a non-negative integer"},
		{"integral fraction", false, `{"src":1,"dst":2.0}`, 15, "dst: vertex id 2.0 is not a non-negative integer"},
		{"negative", false, `{"src":-1,"dst":2}`, 7, "vertex id -1 is not a non-negative integer"},
		{"exponent", false, `{"src":1e30,"dst":2}`, 7, "not a non-negative integer"},
		{"small exponent", false, `{"src":1e3,"dst":2}`, 7, "not a non-negative integer"},
		{"uint64 overflow", false, `{"src":18446744073709551616,"dst":2}`, 7, "vertex id 18446744073709551616 out of range"},
		{"huge number is clipped", false, `{"src":1,"dst":` + strings.Repeat("9", 10000) + `}`, 15, "dst: vertex id " + strings.Repeat("9", 64) + "... out of range"},
		{"above max vertex", false, `{"src":1,"dst":9223372036854775808}`, 15, "dst: vertex id 9223372036854775808 out of range (max 9223372036854775807)"},
		{"key range with keys", true, `{"src":4611686018427387904,"dst":2}`, 7, "vertex id 4611686018427387904 out of range (numeric ids must be below"},
		{"bool vertex", false, `{"src":true,"dst":2}`, 7, "src must be an unsigned integer or a string key"},
		{"null vertex", false, `{"src":1,"dst":null}`, 15, "dst must be an unsigned integer or a string key"},
		{"object vertex", false, `{"src":{"a":1},"dst":2}`, 7, "src must be an unsigned integer or a string key"},
		{"key without dictionary", false, `{"src":"alice","dst":2}`, 7, `src: string key "alice", but no key dictionary`},
		{"empty key", true, `{"src":"","dst":2}`, 7, "src: empty key"},
		{"long key", true, `{"src":1,"dst":"` + longKey + `"}`, 15, "longer than 4096"},
		{"missing src", false, `{"dst":2}`, 0, "missing src"},
		{"missing dst", false, `{"src":1}`, 0, "missing dst"},
		{"empty object", false, `{}`, 0, "missing src"},
		{"delete missing dst", false, `[{"src":1,"dst":2}, {"op":"delete","src":1}]`, 20, "missing dst"},
		{"vertex delete with dst", false, `{"op":"delete_vertex","src":1,"dst":2}`, 36, "dst not allowed for delete_vertex"},
		{"weight on delete", false, `{"op":"delete","src":1,"dst":2,"weight":1}`, 40, "weight not allowed for delete_edge"},
		{"weight on vertex delete", false, `{"weight":1,"op":"delete_vertex","src":1}`, 10, "weight not allowed for delete_vertex"},
		{"weight string", false, `{"src":1,"dst":2,"weight":"1"}`, 26, "weight must be a number"},
		{"weight overflow", false, `{"src":1,"dst":2,"weight":1e400}`, 26, "weight 1e400 out of range"},
		{"ts not rfc3339", false, `{"src":1,"dst":2,"ts":"yesterday"}`, 22, "not an RFC 3339 time"},
		{"ts before 1970", false, `{"src":1,"dst":2,"ts":"1969-12-31T23:59:59Z"}`, 22, "out of range"},
		{"ts negative ms", false, `{"src":1,"dst":2,"ts":-5}`, 22, "Unix milliseconds"},
		{"ts fractional ms", false, `{"src":1,"dst":2,"ts":1.5}`, 22, "Unix milliseconds"},
		{"ts too large ms", false, `{"src":1,"dst":2,"ts":253402300800000}`, 22, "Unix milliseconds in [0, 253402300799999]"},
		{"ts bool", false, `{"src":1,"dst":2,"ts":true}`, 22, "ts must be"},
		{"bad second element", false, `[{"src":1,"dst":2},{"src":1}]`, 19, "missing dst"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys KeyResolver
			if c.keys {
				keys = newFakeKeys()
			}
			got, err := decodeAll(New(FormatJSON, keys), []byte(c.value))
			checkDecodeError(t, FormatJSON, got, err, c.off, c.reason)
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	edges := []Edge{
		{Src: 1, Dst: 2},
		{Src: 0, Dst: MaxVertex, Weight: 0.1, HasWeight: true},
		{Src: 3, Dst: 4, Weight: math.Copysign(0, -1), HasWeight: true, EventTime: us(1_700_000_000_000_001)},
		{Src: 3, Dst: 4, Weight: 1e300, HasWeight: true},
		{Src: 3, Dst: 4, Weight: 5e-324, HasWeight: true},
		{Op: OpDeleteEdge, Src: 5, Dst: 6, EventTime: us(maxEventMicros)},
		{Op: OpDeleteVertex, Src: 7, EventTime: us(0)},
	}
	d := New(FormatJSON, nil)
	var all []byte
	all = append(all, '[')
	for i, e := range edges {
		one := AppendJSON(nil, e, "", "")
		if !json.Valid(one) {
			t.Fatalf("AppendJSON wrote invalid json %s", one)
		}
		got, err := decodeAll(d, one)
		if err != nil {
			t.Fatalf("decode %s: %v", one, err)
		}
		checkEdges(t, got, []Edge{e})
		if i > 0 {
			all = append(all, ',')
		}
		all = append(all, one...)
	}
	all = append(all, ']')
	got, err := decodeAll(d, all)
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, edges)

	if got := string(AppendJSON(nil, Edge{Op: OpDeleteVertex, Src: 9, Dst: 3}, "", "")); got != `{"op":"delete_vertex","src":9}` {
		t.Fatalf("vertex delete written as %s", got)
	}
}

func TestJSONRoundTripKeys(t *testing.T) {
	keys := newFakeKeys()
	d := New(FormatJSON, keys)
	odd := "quote\" back\\ nl\n tab\t nul\x00 é 😀"
	v := AppendJSON(nil, Edge{Src: 0, Dst: 0, Weight: 2, HasWeight: true}, odd, "plain")
	if !json.Valid(v) {
		t.Fatalf("invalid json %q", v)
	}
	got, err := decodeAll(d, v)
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, []Edge{{Src: kb, Dst: kb + 1, Weight: 2, HasWeight: true}})
	if k, _ := keys.key(kb); k != odd {
		t.Fatalf("key read back as %q, want %q", k, odd)
	}
	// A key for src only, a number for dst.
	got, err = decodeAll(d, AppendJSON(nil, Edge{Op: OpDeleteEdge, Dst: 12}, "plain", ""))
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, []Edge{{Op: OpDeleteEdge, Src: kb + 1, Dst: 12}})
}

// TestJSONStringsByteForByte: a key is taken byte for byte or refused:
// invalid UTF-8 and escaped lone surrogates are refused with their offset
// (encoding/json would turn each into U+FFFD, merging distinct keys into
// one vertex); valid text, escaped pairs and a literal U+FFFD are kept.
func TestJSONStringsByteForByte(t *testing.T) {
	bad := []struct {
		name, value string
		off         int
		reason      string
	}{
		{"invalid byte 0xff", "{\"src\":\"acct-\xff\",\"dst\":1}", 13, "invalid UTF-8 (byte 0xff)"},
		{"invalid byte 0xfe", "{\"src\":1,\"dst\":\"acct-\xfe\"}", 21, "invalid UTF-8 (byte 0xfe)"},
		{"truncated sequence", "{\"src\":\"\xe2\x82\",\"dst\":1}", 8, "invalid UTF-8"},
		{"UTF-8 encoded surrogate", "{\"src\":\"\xed\xa0\x80\",\"dst\":1}", 8, "invalid UTF-8"},
		{"overlong encoding", "{\"src\":\"\xc0\xaf\",\"dst\":1}", 8, "invalid UTF-8"},
		{"outside a string", "{\"src\":1,\"dst\":2}\xff", 17, "invalid UTF-8"},
		{"lone high surrogate", `{"src":"a\ud800","dst":1}`, 9, `escaped lone surrogate \ud800`},
		{"high surrogate then text", `{"src":"\ud83dx","dst":1}`, 8, `escaped lone surrogate \ud83d`},
		{"high surrogate then a non-surrogate escape", `{"src":"\ud83d\u0041","dst":1}`, 8, `escaped lone surrogate \ud83d`},
		{"two high surrogates", `{"src":"\ud83d\ud83d","dst":1}`, 8, `escaped lone surrogate \ud83d`},
		{"lone low surrogate", `{"src":"\uDE00","dst":1}`, 8, `escaped lone surrogate \ude00`},
		{"in an array's second object", `[{"src":1,"dst":2},{"src":"\udfff","dst":3}]`, 27, `escaped lone surrogate \udfff`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			keys := newFakeKeys()
			got, err := decodeAll(New(FormatJSON, keys), []byte(c.value))
			checkDecodeError(t, FormatJSON, got, err, c.off, c.reason)
			if keys.calls != 0 {
				t.Errorf("a refused value resolved %d keys", keys.calls)
			}
		})
	}
	good := []struct {
		name, value string
		keys        []string
	}{
		{"literal replacement character", "{\"src\":\"acct-\xef\xbf\xbd\",\"dst\":\"acct-\"}", []string{"acct-\uFFFD", "acct-"}},
		{"escaped pair", `{"src":"\ud83d\ude00","dst":"\uD83D\uDE01"}`, []string{"😀", "😁"}},
		{"escaped backslash before u", `{"src":"a\\ud800","dst":"b\\\"c"}`, []string{`a\ud800`, `b\"c`}},
		{"escaped replacement character", `{"src":"\ufffd","dst":"x\u00e9"}`, []string{"\uFFFD", "xé"}},
		{"multi-byte text", "{\"src\":\"Zürich\",\"dst\":\"東京\"}", []string{"Zürich", "東京"}},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			keys := newFakeKeys()
			got, err := decodeAll(New(FormatJSON, keys), []byte(c.value))
			if err != nil || len(got) != 1 {
				t.Fatalf("%s: %v, %d edges", c.value, err, len(got))
			}
			if strings.Join(keys.keys, "|") != strings.Join(c.keys, "|") {
				t.Fatalf("keys %q, want %q", keys.keys, c.keys)
			}
		})
	}
	// The three keys of the finding stay three vertices, or are refused.
	keys := newFakeKeys()
	var accepted int
	for _, v := range []string{"{\"src\":\"acct-\xff\",\"dst\":1}", "{\"src\":\"acct-\xfe\",\"dst\":1}", "{\"src\":\"acct-\xef\xbf\xbd\",\"dst\":1}"} {
		if _, err := decodeAll(New(FormatJSON, keys), []byte(v)); err == nil {
			accepted++
		}
	}
	if accepted != 1 || len(keys.keys) != 1 || keys.keys[0] != "acct-\uFFFD" {
		t.Fatalf("accepted %d of the three, keys %q", accepted, keys.keys)
	}
}

// TestJSONAllocatesNothing: once its scratch space has grown, the JSON
// decoder allocates nothing per value, with numbers and with known keys
// (escaped ones included).
func TestJSONAllocatesNothing(t *testing.T) {
	dict, err := keydict.Open(t.TempDir() + "/keys.dict")
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	for _, c := range []struct {
		keys  KeyResolver
		value string
	}{
		{nil, `[{"src":1,"dst":2,"weight":0.5,"ts":"2026-11-23T10:15:00+05:30"},{"op":"delete","src":3,"dst":4,"ts":1700000000123}]`},
		{dict, `{"op":"upsert","src":"acct-17","dst":"acct-\u00e94","weight":12.5,"ts":"2026-11-23T10:15:00Z"}`},
	} {
		d := New(FormatJSON, c.keys)
		v := []byte(c.value)
		if _, err := decodeAll(d, v); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = d.Decode(v, func(Edge) {}) }); n != 0 {
			t.Errorf("%s: %v allocations per value", c.value, n)
		}
	}
}
