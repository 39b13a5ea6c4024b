package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// name is a vertex as the sources name it: a number, or a string key.
type name struct {
	key string // "" for a number
	num uint64
}

// param is how a request names it.
func (n name) param() string {
	if n.key != "" {
		return "key:" + n.key
	}
	return strconv.FormatUint(n.num, 10)
}

// typedEdge is one edge of the oracle.
type typedEdge struct {
	src, dst name
	typ      string // "" the default type
	w        float64
}

// replica is one store fed the oracle's edges in an order of its own,
// and a server over it.
type replica struct {
	dict  *keydict.Dict
	types *typedict.Dict
	url   string
}

// newReplica builds a store (keeping history when history is set, so
// that its cursors pin their view) and feeds it edges in the order given,
// batch at a time (so that two replicas' seqs differ too); keys, numbers from 2^32 up and type names
// get their ids in the order this replica meets them.
func newReplica(t *testing.T, edges []typedEdge, history bool, batch int) replica {
	t.Helper()
	dir := t.TempDir()
	s, err := engine.Open(filepath.Join(dir, "store"), &engine.Options{InEdges: true, KeepHistory: history})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dict, err := keydict.Open(filepath.Join(dir, "keys.dict"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dict.Close() })
	dict.SetMapNumbers(true)
	types, err := typedict.Open(filepath.Join(dir, "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	id := func(n name) uint64 {
		var v uint64
		if n.key != "" {
			v, err = dict.ID(n.key)
		} else {
			v, err = dict.NumID(n.num)
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var b engine.Batch
	for i, e := range edges {
		var tn uint16
		if e.typ != "" {
			if tn, err = types.ID(e.typ); err != nil {
				t.Fatal(err)
			}
		}
		b.InsertWeighted(id(e.src), id(e.dst), e.w)
		b.SetType(tn)
		if i%batch == batch-1 || i == len(edges)-1 {
			if _, err := s.Apply(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	vm, err := views.NewManager(s, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Resolve: ResolveVertex(dict), Types: typedict.Resolver(types)})
	t.Cleanup(reg.Close)
	srv, err := New(Config{Store: s, Views: vm, Analytics: reg, Dict: dict, Types: types})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return replica{dict: dict, types: types, url: hs.URL}
}

// TestPagesAlternateBetweenReplicas: two stores fed the same edges in
// different orders give one key, one large number and one type name
// different ids; pages of every vertex's out- and in-neighbors, asked
// of the two in turn (each page of the other's next_cursor), list every
// edge exactly once, in the order both share (numbers by value, then keys
// by bytes; a neighbor's types by name), with or without history (a pin
// from the other server is not honoured: each reads its newest view).
// And the legacy after, given as a key or a number (as any replica names
// it), continues alike on both.
func TestPagesAlternateBetweenReplicas(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 2))
	var vertices []name
	for i := range 12 {
		vertices = append(vertices, name{key: fmt.Sprintf("acct-%d", i)})
	}
	vertices = append(vertices, name{key: "émile"}, name{key: "42"}, name{key: "a/b c"})
	for _, n := range []uint64{0, 1, 7, 99, 1 << 20, 1<<32 + 5, 1<<40 + 1, 1<<62 - 1} {
		vertices = append(vertices, name{num: n})
	}
	typeNames := []string{"", "payment", "login", "refund", "device"}
	seen := map[[3]string]bool{}
	var edges []typedEdge
	for len(edges) < 600 {
		e := typedEdge{src: vertices[r.IntN(len(vertices))], dst: vertices[r.IntN(len(vertices))], typ: typeNames[r.IntN(len(typeNames))],
			w: float64(r.IntN(100)) / 4}
		k := [3]string{e.src.param(), e.dst.param(), e.typ}
		if !seen[k] {
			seen[k] = true
			edges = append(edges, e)
		}
	}
	// The first vertex is a hub of 400 more edges: pages of many.
	for i := range 400 {
		e := typedEdge{src: vertices[0], dst: name{key: fmt.Sprintf("m-%03d", r.IntN(1000))}, typ: typeNames[i%len(typeNames)], w: 1}
		if i%3 == 0 {
			e.dst = name{num: uint64(r.IntN(1 << 34))}
		}
		k := [3]string{e.src.param(), e.dst.param(), e.typ}
		if !seen[k] {
			seen[k] = true
			edges = append(edges, e)
		}
	}
	other := slices.Clone(edges)
	r.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
	// The other replica meets the hub's neighbors first.
	hub := func(e typedEdge) int {
		if strings.HasPrefix(e.dst.key, "m-") {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(other, func(a, b typedEdge) int { return cmp.Compare(hub(a), hub(b)) })

	for _, history := range []bool{false, true} {
		// The second replica's seqs stop short of the first's: a pin
		// honoured by the wrong replica would be refused (not applied yet)
		// or read an older graph.
		reps := [2]replica{newReplica(t, edges, history, 5), newReplica(t, other, history, 7)}
		// The precondition: ids differ between the two.
		ka, _ := reps[0].dict.Lookup("acct-3")
		kb, _ := reps[1].dict.Lookup("acct-3")
		na, _ := reps[0].dict.LookupNum(1<<40 + 1)
		nb, _ := reps[1].dict.LookupNum(1<<40 + 1)
		ta, _ := reps[0].types.Lookup("login")
		tb, _ := reps[1].types.Lookup("login")
		if ka == kb || na == nb || ta == tb {
			t.Fatalf("the replicas agree on an id (acct-3 %d %d, 2^40+1 %d %d, login %d %d): the test would test nothing", ka, kb, na, nb, ta, tb)
		}
		for _, dir := range []string{"out", "in"} {
			for _, v := range vertices {
				// The oracle: v's edges in the order both share, named as
				// the sources name them.
				var want []seenEdge
				for _, e := range edges {
					from, to := e.src, e.dst
					if dir == "in" {
						from, to = e.dst, e.src
					}
					if from == v {
						want = append(want, describe(to, e.typ, e.w))
					}
				}
				slices.SortFunc(want, compareDescribed)
				for _, limit := range []int{1, 2, 3, 7, 50} {
					got := walk(t, reps, v, dir, limit, func(c string) string { return "cursor=" + url.QueryEscape(c) })
					if !slices.Equal(got, want) {
						t.Fatalf("history %v: %s-neighbors of %s, %d a page, alternating replicas: %d edges\n got  %v\n want %v", history, dir, v.param(), limit, len(got), got, want)
					}
				}
			}
		}
		// The legacy after as a key or a number, as the sources name it.
		v := vertices[0]
		var want []seenEdge
		for _, e := range edges {
			if e.src == v {
				want = append(want, describe(e.dst, e.typ, e.w))
			}
		}
		slices.SortFunc(want, compareDescribed)
		got := walk(t, reps, v, "out", 7, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("history %v: out-neighbors of %s by after as a key or number, alternating replicas:\n got  %v\n want %v", history, v.param(), got, want)
		}
	}
}

// seenEdge is an edge of a vertex as the sources name it: its other end,
// its type's name and its weight.
type seenEdge struct {
	to  name
	typ string
	w   float64
}

func describe(n name, typ string, w float64) seenEdge { return seenEdge{n, typ, w} }

// compareDescribed is the order both replicas share, written here from
// the documentation: numbers by value before keys, keys by their bytes,
// then type names (the default type, "", first).
func compareDescribed(a, b seenEdge) int {
	ak, bk := a.to.key != "", b.to.key != ""
	switch {
	case ak != bk:
		if ak {
			return 1
		}
		return -1
	case ak:
		if c := strings.Compare(a.to.key, b.to.key); c != 0 {
			return c
		}
	default:
		if c := cmp.Compare(a.to.num, b.to.num); c != 0 {
			return c
		}
	}
	return strings.Compare(a.typ, b.typ)
}

// walk lists v's dir-neighbors page by page, of limit each, asking the
// two replicas in turn. next gives the next page's parameter from the
// previous page's cursor; nil: the legacy after and after_type, the
// neighbor as the sources name it.
func walk(t *testing.T, reps [2]replica, v name, dir string, limit int, next func(cursor string) string) []seenEdge {
	t.Helper()
	var got []seenEdge
	page := ""
	for i := 0; ; i++ {
		u := fmt.Sprintf("%s/v1/vertices/%s/neighbors?dir=%s&limit=%d", reps[i%2].url, url.PathEscape(v.param()), dir, limit)
		if page != "" {
			u += "&" + page
		}
		body := httpGet(t, u)
		var n NeighborsResponse
		if err := json.Unmarshal(body, &n); err != nil {
			t.Fatalf("GET %s: %s", u, body)
		}
		dict := reps[i%2].dict
		for _, x := range n.Neighbors {
			var nm name
			if x.Key != "" {
				nm.key = x.Key
			} else {
				nm.num = x.ID // a mapped number comes back as its number
				if _, isKey := dict.Key(x.ID); isKey {
					t.Fatalf("neighbor %d of %s is a key's id without its key", x.ID, v.param())
				}
			}
			got = append(got, describe(nm, x.Type, x.Weight))
		}
		if i > 0 && len(n.Neighbors) == 0 {
			t.Fatalf("GET %s: an empty page after a cursor", u)
		}
		if n.NextCursor == "" {
			if n.NextAfter != nil || len(n.Neighbors) == limit && len(got) < int(n.Degree) {
				t.Fatalf("GET %s: no cursor, %d of %d listed", u, len(got), n.Degree)
			}
			return got
		}
		if len(n.Neighbors) != limit {
			t.Fatalf("GET %s: a page of %d (limit %d) with a cursor", u, len(n.Neighbors), limit)
		}
		if i > 2000 {
			t.Fatalf("more than 2000 pages of %s", v.param())
		}
		if next != nil {
			page = next(n.NextCursor)
			continue
		}
		last := n.Neighbors[len(n.Neighbors)-1]
		after := strconv.FormatUint(last.ID, 10)
		if last.Key != "" {
			after = "key:" + last.Key
		}
		page = "after=" + url.QueryEscape(after)
		if n.NextAfterType != "" {
			page += "&after_type=" + url.QueryEscape(n.NextAfterType)
		}
	}
}

// httpGet is the body of a GET that must answer 200.
func httpGet(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", u, resp.StatusCode, b, err)
	}
	return b
}
