package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/writes"
)

// TestEveryRequestStringIsBounded: see checkBounded.
func TestEveryRequestStringIsBounded(t *testing.T) { checkBounded(t, &coverage{}) }

// jsonName is the JSON name of a struct field ("" when it has none).
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// stringFields lists, by reflection, the JSON names of t's fields that
// carry text: strings and json.RawMessage (a JSON value, which may be a
// string); a slice of structs is walked as prefix+name+"[].".
func stringFields(t reflect.Type, prefix string) []string {
	var out []string
	raw := reflect.TypeFor[json.RawMessage]()
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" || !f.IsExported() {
			continue
		}
		switch {
		case f.Type == raw, f.Type.Kind() == reflect.String:
			out = append(out, prefix+name)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			out = append(out, stringFields(f.Type.Elem(), prefix+name+"[].")...)
		case f.Type.Kind() == reflect.Struct:
			panic(fmt.Sprintf("field %s%s is a struct: walk it", prefix, name))
		}
	}
	return out
}

// checkBounded walks every string a request can carry and sends each at
// its bound, which is not refused for its length, and one byte over,
// which is refused with 400 naming the field and the bound: the path and
// query parameters of every route the server registers (the query
// parameters it accepts must be the ones openapi.yaml documents), every
// string field of the request bodies found by reflection (Spec,
// writes.Request and its conditions), the strings of the batches' ops (the
// JSON record format's) and the Idempotency-Key header. A target over
// MaxTargetBytes is 414 on every operation. A field added to a request
// without a bound fails here.
func checkBounded(t *testing.T, cov *coverage) {
	dir := t.TempDir()
	store, err := engine.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dict, err := keydict.Open(filepath.Join(dir, "keys.dict"))
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	types, err := typedict.Open(filepath.Join(dir, "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	vm, err := views.NewManager(store, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Resolve: ResolveVertex(dict), Types: typedict.Resolver(types)})
	defer reg.Close()
	fw := &fakeWriter{next: func(*writes.Request) (writes.Result, error) {
		return writes.Result{Outcome: writes.Outcome{Applied: true, Seq: 1}}, nil
	}}
	srv, err := New(Config{Store: store, Views: vm, Analytics: reg, Dict: dict, Types: types, Writes: fw})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	c := newClient(t, hs, "", cov)
	doc := loadDoc(t)

	// lengthRefusal reports whether r refuses a field for its length, and
	// whether it names field and most.
	lengthRefusal := func(r reply, field string, most int) (refused, named bool) {
		msg := r.errorMsg()
		refused = r.status == 400 && strings.Contains(msg, " bytes; at most ")
		return refused, refused && strings.Contains(msg, field) && strings.Contains(msg, strconv.Itoa(most))
	}
	over := func(what, field string, most int, r reply) {
		t.Helper()
		if refused, named := lengthRefusal(r, field, most); !named {
			t.Errorf("%s: %d bytes (one over its bound, %d) got %v (refused for its length: %v); want 400 naming %s and %d", what, most+1, most, r, refused, field, most)
		}
	}
	at := func(what, field string, most int, r reply) {
		t.Helper()
		if refused, _ := lengthRefusal(r, field, most); refused {
			t.Errorf("%s: %d bytes, its bound, refused for its length: %v", what, most, r)
		}
	}
	fill := func(n int) string { return strings.Repeat("a", n) }

	// The path and query parameters of every route.
	for _, route := range srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		op := doc.Paths.Find(path).GetOperation(method)
		if op == nil {
			t.Fatalf("route %s is not documented", route)
		}
		var docQuery []string
		for _, p := range op.Parameters {
			if p.Value.In == "query" {
				docQuery = append(docQuery, p.Value.Name)
			}
		}
		slices.Sort(docQuery)
		code := slices.Sorted(slices.Values(queryParams[route]))
		if !slices.Equal(docQuery, code) {
			t.Errorf("%s takes query parameters %v; openapi.yaml documents %v", route, code, docQuery)
		}
		concrete := func(param, value string) string {
			p := path
			for _, w := range wildcards(path) {
				v := map[string]string{"name": "wcc"}[w]
				if v == "" {
					v = "1"
				}
				if w == param {
					v = value
				}
				p = strings.Replace(p, "{"+w+"}", url.PathEscape(v), 1)
			}
			return p
		}
		for _, w := range wildcards(path) {
			most := PathLimit(w)
			field := "path parameter " + w
			over(route+" "+w, field, most, c.do(method, concrete(w, fill(most+1)), nil, false))
			at(route+" "+w, field, most, c.do(method, concrete(w, fill(most)), nil, false))
		}
		for _, q := range queryParams[route] {
			most := ParamLimit(q)
			field := "query parameter " + q
			over(route+" ?"+q, field, most, c.do(method, concrete("", "")+"?"+q+"="+fill(most+1), nil, false))
			at(route+" ?"+q, field, most, c.do(method, concrete("", "")+"?"+q+"="+fill(most), nil, false))
		}
		// The whole target: 414 on every operation.
		long := concrete("", "") + "?" + strings.Repeat("x=1&", MaxTargetBytes/4)
		if r := c.do(method, long, nil, false); r.status != http.StatusRequestURITooLong || !strings.Contains(r.errorMsg(), strconv.Itoa(MaxTargetBytes)) {
			t.Errorf("%s with a target of %d bytes: %v; want 414 naming %d", route, len(long), r, MaxTargetBytes)
		}
	}
	// A parameter's name.
	c.expect("GET", "/v1/alerts?"+fill(MaxParamBytes+1)+"=1", nil, 400, fmt.Sprintf("at most %d", MaxParamBytes))

	// Every string of a spec, by reflection over Spec.
	specFields := stringFields(reflect.TypeFor[Spec](), "")
	for _, name := range specFields {
		most, ok := SpecLimits[name]
		if !ok {
			t.Errorf("Spec field %s has no bound (SpecLimits)", name)
			continue
		}
		body := func(n int) []byte {
			m := map[string]any{"type": "degree", "threshold": 1, "name": "bounded"}
			m[name] = fill(n)
			b, _ := json.Marshal(m)
			return b
		}
		over("spec "+name, name, most, c.do("POST", "/v1/analytics", body(most+1), false))
		at("spec "+name, name, most, c.do("POST", "/v1/analytics", body(most), false))
		for _, r := range reg.Results() {
			if err := reg.Unregister(r.Spec.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	// analytics.Spec's own strings are bounded too (configuration files).
	for _, f := range reflect.VisibleFields(reflect.TypeFor[analytics.Spec]()) {
		if f.Type.Kind() == reflect.String {
			if _, ok := analytics.StringLimits[jsonName(f)]; !ok {
				t.Errorf("analytics.Spec field %s has no bound (analytics.StringLimits)", jsonName(f))
			}
		}
	}

	// Every string of a batch, by reflection over writes.Request. The
	// conditions' vertices and types are JSON strings in a RawMessage; the
	// ops are the JSON record format's, below.
	condition := func(field, v string) map[string]any {
		switch field {
		case "kind":
			return map[string]any{"kind": v, "vertex": 1}
		case "vertex":
			return map[string]any{"kind": writes.KindVertexExists, "vertex": v}
		}
		c := map[string]any{"kind": writes.KindEdgeExists, "src": 1, "dst": 2}
		c[field] = v
		return c
	}
	for _, name := range stringFields(reflect.TypeFor[writes.Request](), "") {
		if name == "ops" {
			continue
		}
		most, ok := BatchLimits[name]
		if !ok {
			t.Errorf("writes.Request field %s has no bound (BatchLimits)", name)
			continue
		}
		body := func(n int) []byte {
			m := map[string]any{"ops": []any{map[string]any{"src": 1, "dst": 2}}}
			if f, ok := strings.CutPrefix(name, "conditions[]."); ok {
				m["conditions"] = []any{condition(f, fill(n))}
			} else {
				m[name] = fill(n)
			}
			b, _ := json.Marshal(m)
			return b
		}
		field := strings.TrimPrefix(name, "conditions[].")
		over("batch "+name, field, most, c.do("POST", "/v1/batches", body(most+1), false))
		at("batch "+name, field, most, c.do("POST", "/v1/batches", body(most), false))
	}
	// The ops' strings: keys, type names, labels, props.
	for _, op := range []struct {
		field, named string
		most         int
		op           func(string) map[string]any
	}{
		{"src", "key", keydict.MaxKeyLen, func(v string) map[string]any { return map[string]any{"src": v, "dst": 2} }},
		{"dst", "key", keydict.MaxKeyLen, func(v string) map[string]any { return map[string]any{"src": 1, "dst": v} }},
		{"type", "type name", typedict.MaxNameLen, func(v string) map[string]any { return map[string]any{"src": 1, "dst": 2, "type": v} }},
		{"label", "label", decode.MaxVertexLabel, func(v string) map[string]any { return map[string]any{"op": "add_vertex", "src": 1, "label": v} }},
		{"props", "props", decode.MaxVertexProps, func(v string) map[string]any {
			return map[string]any{"op": "add_vertex", "src": 1, "props": json.RawMessage(`{"p":"` + v[:len(v)-8] + `"}`)}
		}},
	} {
		body := func(n int) []byte {
			b, _ := json.Marshal(map[string]any{"ops": []any{op.op(fill(n))}})
			return b
		}
		for n, refused := range map[int]bool{op.most: false, op.most + 1: true} {
			r := c.do("POST", "/v1/batches", body(n), false)
			msg := r.errorMsg()
			named := r.status == 400 && strings.Contains(msg, op.named) && strings.Contains(msg, strconv.Itoa(op.most))
			if refused != named {
				t.Errorf("an op's %s of %d bytes (bound %d): %v; want refused: %v", op.field, n, op.most, r, refused)
			}
		}
	}
	// The Idempotency-Key header.
	for n, refused := range map[int]bool{writes.MaxKeyLen: false, writes.MaxKeyLen + 1: true} {
		c.header = http.Header{"Idempotency-Key": {fill(n)}}
		r := c.do("POST", "/v1/batches", []byte(`{"ops":[{"src":1,"dst":2}]}`), false)
		c.header = nil
		if named := r.status == 400 && strings.Contains(r.errorMsg(), "Idempotency-Key") && strings.Contains(r.errorMsg(), strconv.Itoa(writes.MaxKeyLen)); named != refused {
			t.Errorf("an Idempotency-Key header of %d bytes: %v; want refused: %v", n, r, refused)
		}
	}
	if len(specFields) < 9 {
		t.Errorf("reflection found %d string fields of Spec: %v", len(specFields), specFields)
	}
}
