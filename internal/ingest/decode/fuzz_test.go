package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzDecode decodes value with a fresh decoder of format f, using a fake
// resolver if withKeys, and checks what every outcome must satisfy: an
// *Error with an offset inside the value and nothing emitted, or edges that
// obey the package rules. It returns the edges and the resolver.
func fuzzDecode(t *testing.T, f Format, value []byte, withKeys bool) ([]Edge, *fakeKeys, bool) {
	t.Helper()
	var (
		keys     *fakeKeys
		resolver KeyResolver
	)
	if withKeys {
		keys = newFakeKeys()
		resolver = keys
	}
	got, err := decodeAll(New(f, resolver), value)
	if err != nil {
		var de *Error
		if !errors.As(err, &de) {
			t.Fatalf("error %v is not an *Error (the fake resolver never fails)", err)
		}
		if de.Format != f || de.Offset < 0 || de.Offset > len(value) || de.Reason == "" {
			t.Fatalf("bad *Error %+v for value of %d bytes", de, len(value))
		}
		if len(got) != 0 {
			t.Fatalf("rejected value emitted %d edges", len(got))
		}
		if keys != nil && keys.calls != 0 {
			t.Fatalf("rejected value resolved %d keys", keys.calls)
		}
		return nil, keys, false
	}
	if len(got) == 0 {
		t.Fatal("accepted value emitted no edges")
	}
	for i, e := range got {
		if why := ruleViolation(e, keys); why != "" {
			t.Fatalf("edge %d %+v breaks a rule: %s", i, e, why)
		}
	}
	return got, keys, true
}

func FuzzBinary(f *testing.F) {
	w := math.Float64bits
	seeds := [][]byte{
		entry(0, 0, 1, 2),
		entry(0, 1, 1, 2, w(0.5)),
		entry(0, 3, 1, 2, w(-1), 1_700_000_000_000_000),
		entry(1, 2, 3, 4, 5),
		entry(2, 0, 9, 0),
		cat(entry(0, 0, 1, 2), entry(1, 0, 3, 4), entry(2, 2, 5, 0, 6)),
		entry(0, 0, MaxVertex, kb),
		entry(0, 1, 1, 2, w(math.NaN())),
		entry(3, 0, 1, 2),
		ventry(1, "account", `{"a":[1,{"b":null}]}`),
		cat(ventry(kb, "", ""), entry(2, 0, 1, 0), ventry(2, "é", "{}")),
		ventry(1, "a", "{"),
		entry(4, 0, 1, 2),
		entry(0, 4, 1, 2),
		entry(0, 2, 1, 2, 1<<63),
		{0},
		{},
	}
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, value []byte, withKeys bool) {
		got, _, ok := fuzzDecode(t, FormatBinary, value, withKeys)
		if !ok {
			return
		}
		var re []byte
		for _, e := range got {
			re = AppendBinary(re, e)
		}
		if !bytes.Equal(re, value) && !explicitTypeZero(value) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", re, value)
		}
		again, _, ok := fuzzDecode(t, FormatBinary, re, withKeys)
		if !ok {
			t.Fatal("re-encoded value rejected")
		}
		checkEdges(t, again, got)
	})
}

// explicitTypeZero reports whether the valid binary value v has an entry
// that gives type 0 explicitly, which AppendBinary leaves out (so the
// value is not reproduced byte for byte, only its edges).
func explicitTypeZero(v []byte) bool {
	for off := 0; off < len(v); off += entrySizeAt(v[off:]) {
		if e := v[off:]; Op(e[0]) != OpPutVertex && e[1]&flagType != 0 &&
			binary.LittleEndian.Uint16(e[entrySize(e[1])-binTypeSize:]) == 0 {
			return true
		}
	}
	return false
}

func FuzzJSON(f *testing.F) {
	seeds := []string{
		`{"src":1,"dst":2}`,
		`{"op":"add","src":1,"dst":2,"weight":0.5,"ts":"2024-05-01T12:00:00.123456789Z"}`,
		`{"op":"upsert","src":"alice","dst":"bob","weight":-2e3,"ts":1700000000123}`,
		`[{"op":"delete","src":1,"dst":2},{"op":"delete_vertex","src":"x"}]`,
		`{"op":"delete_vertex","src":5,"dst":null,"weight":null}`,
		`{"src":9223372036854775807,"dst":4611686018427387904}`,
		`{"src":1.5,"dst":-1}`,
		`[{"op":"add_vertex","src":"a","label":"x\ty","props":{"k":[1,"\u00e9"]}},{"op":"add_vertex","src":2}]`,
		`{"op":"put_vertex","src":1,"props":[]}`,
		`{"src":1,"dst":2,"ref":"e-\u0039","props":{"currency":"EUR","n":[1,{"x":null}]}}`, `{"op":"delete","src":1,"dst":2,"ref":"x"}`,
		`{"src":"a\u0000\"b","dst":"\ud83d\ude00"}`,
		"{\"src\":\"acct-\xff\",\"dst\":\"acct-\xef\xbf\xbd\"}", `{"src":"\ud800","dst":"\udc00x"}`, `{"src":"\\ud800","dst":1}`,
		`[]`, ``, `[{"src":1,"dst":2},]`, `{"src":1,"dst":2}{}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, value []byte, withKeys bool) {
		got, keys, ok := fuzzDecode(t, FormatJSON, value, withKeys)
		if !ok {
			return
		}
		// Strings are taken byte for byte or refused: an accepted value is
		// valid UTF-8, and no key holds a U+FFFD the value did not spell
		// (encoding/json would put one for each invalid byte and each
		// escaped lone surrogate).
		if !utf8.Valid(value) {
			t.Fatalf("accepted a value that is not valid UTF-8: %q", value)
		}
		if keys != nil {
			spelled := strings.Count(string(value), "\uFFFD") + strings.Count(strings.ToLower(string(value)), `\ufffd`)
			held := 0
			for _, k := range keys.keys {
				if !utf8.ValidString(k) {
					t.Fatalf("key %q is not valid UTF-8", k)
				}
				held += strings.Count(k, "\uFFFD")
			}
			if held > spelled {
				t.Fatalf("keys %q hold %d U+FFFD, the value %q spells %d", keys.keys, held, value, spelled)
			}
		}
		// Each edge, written back with AppendJSON (keys as keys), decodes to
		// itself through the same resolver.
		var resolver KeyResolver
		if keys != nil {
			resolver = keys
		}
		d := New(FormatJSON, resolver)
		for _, e := range got {
			var srcKey, dstKey string
			if keys != nil {
				srcKey, _ = keys.key(e.Src)
				if e.Op != OpDeleteVertex {
					dstKey, _ = keys.key(e.Dst)
				}
			}
			one := AppendJSON(nil, e, srcKey, dstKey)
			back, err := decodeAll(d, one)
			if err != nil {
				t.Fatalf("AppendJSON output %s rejected: %v", one, err)
			}
			checkEdges(t, back, []Edge{e})
		}
	})
}

func FuzzText(f *testing.F) {
	seeds := []string{
		"1 2\n",
		"1\t2\t0.5\r\n# comment\n% other\n\nd 1 2\ndv 3\n",
		"alice bob 1e-3\nd bob 7\ndv carol",
		"9223372036854775807 4611686018427387904",
		"1 2 nan\n", "1 2 3 4", "d 1", "dv", "-1 2", "1 2 1e400", "",
		"v 1 account\nv 2\nv alice #x\n", "v", "v 1 a b",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, value []byte, withKeys bool) {
		got, _, ok := fuzzDecode(t, FormatText, value, withKeys)
		if !ok {
			return
		}
		// Written back with AppendText (ids as numbers), the edges decode to
		// themselves without a resolver.
		var re []byte
		for _, e := range got {
			re = AppendText(re, e)
		}
		back, err := decodeAll(New(FormatText, nil), re)
		if err != nil {
			t.Fatalf("AppendText output %q rejected: %v", re, err)
		}
		checkEdges(t, back, got)
	})
}
