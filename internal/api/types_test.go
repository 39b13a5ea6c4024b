package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Typed reads over HTTP, each response validated against openapi.yaml:
// neighbors with their types and event times, filtered by types, paged through
// (after, after_type) one edge at a time, degrees and paths of some
// types, and an unknown type refused.
func TestTypedReadsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open(filepath.Join(dir, "store"), &engine.Options{InEdges: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	types, err := typedict.Open(filepath.Join(dir, "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	vm, err := views.NewManager(s, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Types: typedict.Resolver(types)})
	defer reg.Close()
	pay, _ := types.ID("payment")
	login, _ := types.ID("login")
	var b engine.Batch
	// 1 -> 2 by payment, login and the default type; 1 -> 3 by login;
	// 2 -> 4 by payment.
	for _, e := range []struct {
		s, d uint64
		t    uint16
		w    float64
	}{{1, 2, pay, 5}, {1, 2, login, 1}, {1, 2, 0, 2}, {1, 3, login, 1}, {2, 4, pay, 7}} {
		b.InsertWeighted(e.s, e.d, e.w)
		b.SetType(e.t)
		if e.t == pay {
			b.SetEventTime(1763892900123456) // 2025-11-23T10:15:00.123456Z
		}
	}
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Store: s, Views: vm, Analytics: reg, Types: types})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	c := newClient(t, hs, "", &coverage{})

	var all NeighborsResponse
	c.get("/v1/vertices/1/neighbors", &all)
	got := fmt.Sprint(all.Neighbors)
	// Edges to 2 by type name, the default first: default, login, payment
	// (named in the other order: type numbers are each replica's own).
	want := fmt.Sprint([]Neighbor{{ID: 2, Weight: 2}, {ID: 2, Weight: 1, Type: "login"},
		{ID: 2, Weight: 5, Type: "payment", Time: "2025-11-23T10:15:00.123456Z"}, {ID: 3, Weight: 1, Type: "login"}})
	if got != want || all.Degree != 4 {
		t.Errorf("neighbors of 1: %s (degree %d); want %s (4)", got, all.Degree, want)
	}
	var paid NeighborsResponse
	c.get("/v1/vertices/1/neighbors?types=payment,default", &paid)
	if got, want := fmt.Sprint(paid.Neighbors), fmt.Sprint([]Neighbor{{ID: 2, Weight: 2}, {ID: 2, Weight: 5, Type: "payment", Time: "2025-11-23T10:15:00.123456Z"}}); got != want || paid.Degree != 2 {
		t.Errorf("payments and default of 1: %s (degree %d); want %s (2)", got, paid.Degree, want)
	}
	// One edge per page, following next_after and next_after_type.
	var paged []Neighbor
	q := "/v1/vertices/1/neighbors?limit=1"
	for pages := 0; pages < 10; pages++ {
		var p NeighborsResponse
		c.get(q, &p)
		paged = append(paged, p.Neighbors...)
		if p.NextAfter == nil {
			break
		}
		q = fmt.Sprintf("/v1/vertices/1/neighbors?limit=1&after=%d", *p.NextAfter)
		if p.NextAfterType != "" {
			q += "&after_type=" + p.NextAfterType
		}
	}
	if fmt.Sprint(paged) != fmt.Sprint(all.Neighbors) {
		t.Errorf("pages of one: %v; want %v", paged, all.Neighbors)
	}
	var d DegreeResponse
	if c.get("/v1/vertices/2/degree?dir=in&types=login", &d); d.Degree != 1 {
		t.Errorf("login in-degree of 2: %d", d.Degree)
	}
	var p PathResponse
	if c.get("/v1/paths?from=1&to=4&types=payment", &p); !p.Found || len(p.Path) != 3 {
		t.Errorf("a payment path 1 -> 4: %+v", p)
	}
	if c.get("/v1/paths?from=1&to=4&types=login", &p); p.Found {
		t.Errorf("a login path 1 -> 4: %+v", p)
	}
	c.expect("GET", "/v1/vertices/1/neighbors?types=wire", nil, http.StatusBadRequest, `unknown edge type "wire"`)
	c.expect("GET", "/v1/vertices/1/neighbors?after_type=login", nil, http.StatusBadRequest, "after_type needs after")
}

// The API's Spec carries every field of analytics.Spec, both ways: a spec
// with every field set comes back the same through SpecOf and Analytics
// (types was once dropped on the way in, so a typed analytic registered
// over HTTP read every type).
func TestSpecCarriesEveryField(t *testing.T) {
	var in analytics.Spec
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("v%d", i))
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.Int64: // durations
			f.SetInt(int64(i+1) * int64(time.Millisecond))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("field %s of kind %s: teach this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	out, err := SpecOf(in).Analytics()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("through the API's Spec:\n%+v\nbecame\n%+v", in, out)
	}
}

// A data directory computes wcc and pagerank over the edge types asked
// (query component|top-pagerank --types --dir), and a server refuses
// --types for its registered analytics.
func TestLocalAnalyticsOfTypes(t *testing.T) {
	dir := t.TempDir()
	d, err := datadir.Open(dir, datadir.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	pay, err := d.Types.ID("payment")
	if err != nil {
		t.Fatal(err)
	}
	var b engine.Batch
	b.Insert(1, 2)
	b.SetType(pay)
	b.Insert(2, 3) // the default type
	if _, err := d.Store.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := d.Store.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	q, err := OpenQuerier(Target{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := t.Context()
	size := func(types string) int {
		r, err := q.Component(ctx, "3", AnalyticQuery{Types: types})
		if err != nil {
			t.Fatal(err)
		}
		c, err := ResultAs[ComponentResult](r)
		if err != nil {
			t.Fatal(err)
		}
		return c.Size
	}
	if all, paid := size(""), size("default"); all != 3 || paid != 2 {
		t.Errorf("the component of 3: %d vertices over every type (want 3), %d over the default type (want 2)", all, paid)
	}
	top, err := q.TopPageRank(ctx, 5, AnalyticQuery{Damping: 0.85, Tolerance: 1e-9, Types: "payment"})
	if err != nil || len(top.Top) == 0 || top.Top[0].Vertex != 2 {
		t.Errorf("pagerank over payments: %+v, %v; want vertex 2 first", top, err)
	}
	if _, err := q.Component(ctx, "3", AnalyticQuery{Types: "wire"}); err == nil {
		t.Error("an unknown type was accepted")
	}
	srv := &Querier{client: &Client{}}
	if _, err := srv.Component(ctx, "3", AnalyticQuery{Types: "payment"}); !errors.Is(err, errServerTypes) {
		t.Errorf("a server's component with --types: %v", err)
	}
}
