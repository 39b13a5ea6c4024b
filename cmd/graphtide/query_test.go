package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// queryGraph is the oracle of a loaded data directory: its live edges with
// weights, by id, and the ids of its string keys.
type queryGraph struct {
	edges testref.Edges
	keys  map[string]uint64
	names map[uint64]string // id -> key
}

func (g *queryGraph) adj(dir engine.Direction) map[uint64][]uint64 { return g.edges.Adj(dir) }

// pageOrder sorts ids (in place, and returns them) as a page of
// neighbors lists them: numbers by value, then keys by their bytes.
func (g *queryGraph) pageOrder(ids []uint64) []uint64 {
	sort.SliceStable(ids, func(i, j int) bool {
		ki, iKey := g.names[ids[i]]
		kj, jKey := g.names[ids[j]]
		switch {
		case iKey != jKey:
			return jKey
		case iKey:
			return ki < kj
		}
		return ids[i] < ids[j]
	})
	return ids
}

// arg names vertex v on the command line: its key (with "key:" when it
// looks like a number), or its id.
func (g *queryGraph) arg(v uint64) string {
	if k, ok := g.names[v]; ok {
		if _, err := strconv.ParseUint(k, 10, 64); err == nil {
			return "key:" + k
		}
		return k
	}
	return strconv.FormatUint(v, 10)
}

// dists are the shortest path lengths from a: BFS by hops (at most
// maxDepth when it is not 0), or by weight a plain Bellman-Ford over the
// map until nothing changes.
func (g *queryGraph) dists(a uint64, weighted bool, maxDepth int) map[uint64]float64 {
	d := map[uint64]float64{a: 0}
	if !weighted {
		out := g.adj(engine.Out)
		for q := []uint64{a}; len(q) > 0; q = q[1:] {
			if maxDepth > 0 && d[q[0]] == float64(maxDepth) {
				continue
			}
			for _, w := range out[q[0]] {
				if _, ok := d[w]; !ok {
					d[w] = d[q[0]] + 1
					q = append(q, w)
				}
			}
		}
		return d
	}
	for changed := true; changed; {
		changed = false
		for e, w := range g.edges {
			if x, ok := d[e[0]]; ok {
				if y, ok := d[e[1]]; !ok || x+w < y {
					d[e[1]], changed = x+w, true
				}
			}
		}
	}
	return d
}

// pagerank is the analytics' definition (damping 0.85) at its fixed point.
func (g *queryGraph) pagerank() map[uint64]float64 { return testref.PageRank(g.edges, 0.85) }

// components names each vertex with an edge by the smallest id of its
// weakly connected component, with the component's size.
func (g *queryGraph) components() (map[uint64]uint64, map[uint64]int) {
	return testref.Components(g.edges)
}

// loadQueryDir loads a data directory with in-edges: numeric vertices below
// 60 and string keys (one of them "42"), non-negative weights, edge and
// vertex deletes, in a text and a JSON-lines file.
func loadQueryDir(t *testing.T) (string, *queryGraph) {
	t.Helper()
	tmp, dir := t.TempDir(), t.TempDir()
	r := rand.New(rand.NewPCG(9, 9))
	keys := []string{"alice", "bob", "acct 7", "42", "zoë"}
	vertex := func(withKeys bool) vtx {
		if withKeys && r.IntN(5) == 0 {
			return vtx{key: keys[r.IntN(len(keys))]}
		}
		return vtx{id: uint64(r.IntN(60))}
	}
	gen := func(n int, withKeys bool) []testOp {
		var ops, ups []testOp
		for len(ops) < n {
			switch x := r.IntN(100); {
			case x < 1:
				ops = append(ops, testOp{kind: engine.OpDeleteVertex, src: vertex(withKeys)})
			case x < 12 && len(ups) > 0:
				u := ups[r.IntN(len(ups))]
				ops = append(ops, testOp{kind: engine.OpDeleteEdge, src: u.src, dst: u.dst})
			default:
				op := testOp{kind: engine.OpUpsert, src: vertex(withKeys), dst: vertex(withKeys), weight: float64(r.IntN(16)) / 4, hasWeight: true}
				ops, ups = append(ops, op), append(ups, op)
			}
		}
		return ops
	}
	text, js := gen(500, false), gen(300, true)
	writeText(t, filepath.Join(tmp, "a.el"), text)
	writeJSON(t, filepath.Join(tmp, "b.json"), js)
	if _, _, err := execute(t, "load", "--dir", dir, "--in-edges", filepath.Join(tmp, "a.el"), filepath.Join(tmp, "b.json")); err != nil {
		t.Fatal(err)
	}
	o := edgeOracle{}
	o.apply(text...)
	o.apply(js...)
	g := &queryGraph{edges: o.ids(t, dir), keys: map[string]uint64{}, names: map[uint64]string{}}
	d, err := keydict.Open(datadir.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, k := range keys {
		if id, ok := d.Lookup(k); ok {
			g.keys[k], g.names[id] = id, k
		}
	}
	if len(g.keys) != len(keys) {
		t.Fatalf("keys %v, want all of %v", g.keys, keys)
	}
	return dir, g
}

// sample returns some numeric vertices, every key, and a vertex no edge
// touches.
func (g *queryGraph) sample() []uint64 {
	vs := []uint64{0, 1, 5, 11, 23, 38, 59, 1000}
	for _, k := range slices.Sorted(maps.Keys(g.keys)) {
		vs = append(vs, g.keys[k])
	}
	return vs
}

// queryJSON runs graphtide query with args and --json and decodes the
// answer into v.
func queryJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, _, err := execute(t, append(append([]string{"query"}, args...), "--json")...)
	if err != nil {
		t.Fatalf("query %v: %v", args, err)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("query %v: %v in %q", args, err, out)
	}
}

// checkQueries runs every query subcommand with the source flags src
// (--dir or --server) and compares the answers with the oracle; prArgs
// choose the PageRank (the analytic of a server) and prTol is how close
// its ranks are to the fixed point.
func checkQueries(t *testing.T, g *queryGraph, src, prArgs []string, prTol float64) {
	t.Helper()
	with := func(args ...string) []string { return append(args, src...) }
	for _, dir := range []engine.Direction{engine.Out, engine.In} {
		adj := g.adj(dir)
		dname := map[engine.Direction]string{engine.Out: "out", engine.In: "in"}[dir]
		for _, v := range g.sample() {
			var d api.DegreeResponse
			queryJSON(t, &d, with("degree", g.arg(v), "--direction", dname)...)
			if d.Vertex != v || d.Key != g.names[v] || d.Degree != uint64(len(adj[v])) || d.Dir != dname || d.View != "fresh" {
				t.Errorf("degree %s of %d: %+v, want %d", dname, v, d, len(adj[v]))
			}
			var got []api.Neighbor
			for after, pages := "", 0; ; pages++ {
				if pages > len(adj[v])/4 {
					t.Fatalf("%s-neighbors of %d: more pages than %d neighbors need", dname, v, len(adj[v]))
				}
				args := with("neighbors", g.arg(v), "--direction", dname, "--limit", "4")
				if after != "" {
					args = append(args, "--after", after)
				}
				var n api.NeighborsResponse
				queryJSON(t, &n, args...)
				got = append(got, n.Neighbors...)
				if n.NextAfter == nil {
					break
				}
				after = g.arg(*n.NextAfter)
			}
			if len(got) != len(adj[v]) {
				t.Fatalf("%s-neighbors of %d: %d, want %d", dname, v, len(got), len(adj[v]))
			}
			for i, w := range g.pageOrder(slices.Clone(adj[v])) {
				e := [2]uint64{v, w}
				if dir == engine.In {
					e = [2]uint64{w, v}
				}
				if want := (api.Neighbor{ID: w, Key: g.names[w], Weight: g.edges[e]}); got[i] != want {
					t.Errorf("%s-neighbor %d of %d: %+v, want %+v", dname, i, v, got[i], want)
				}
			}
		}
	}
	vs := g.sample()
	found := map[bool]int{}
	for i, a := range vs {
		for _, b := range vs[i%3:] {
			for _, o := range []struct {
				weighted bool
				depth    int
			}{{false, 0}, {false, 2}, {true, 0}} {
				args := with("path", g.arg(a), g.arg(b))
				if o.weighted {
					args = append(args, "--weighted")
				}
				if o.depth > 0 {
					args = append(args, "--max-depth", strconv.Itoa(o.depth))
				}
				var p api.PathResponse
				queryJSON(t, &p, args...)
				want, ok := g.dists(a, o.weighted, o.depth)[b]
				found[ok]++
				if p.Found != ok || (ok && (p.Length == nil || math.Abs(*p.Length-want) > 1e-9)) {
					length := "none"
					if p.Length != nil {
						length = fmt.Sprint(*p.Length)
					}
					t.Errorf("path %d -> %d %+v: found %v length %s; want %v %v", a, b, o, p.Found, length, ok, want)
					continue
				}
				if !ok {
					continue
				}
				sum := 0.0
				for j := 1; j < len(p.Path); j++ {
					w, ok := g.edges[[2]uint64{p.Path[j-1].ID, p.Path[j].ID}]
					if !ok {
						t.Errorf("path %d -> %d: %v uses a missing edge", a, b, p.Path)
					}
					sum += w
				}
				if !o.weighted {
					sum = float64(len(p.Path) - 1)
				}
				if p.Path[0].ID != a || p.Path[len(p.Path)-1].ID != b || math.Abs(sum-*p.Length) > 1e-9 {
					t.Errorf("path %d -> %d: %v of length %v, reported %v", a, b, p.Path, sum, *p.Length)
				}
			}
		}
	}
	if found[true] < 20 || found[false] < 20 {
		t.Errorf("paths found %d times and not %d times: the sample should give both often", found[true], found[false])
	}

	// Edge lookups: each sampled vertex to each of its out-neighbors, and
	// to the other sampled vertices (mostly no edge).
	edgesFound := map[bool]int{}
	for _, a := range vs {
		targets := append(slices.Clone(vs), g.adj(engine.Out)[a]...)
		for _, b := range targets {
			var r api.EdgeResponse
			queryJSON(t, &r, with("edge", g.arg(a), g.arg(b))...)
			w, ok := g.edges[[2]uint64{a, b}]
			edgesFound[ok]++
			want := api.EdgeResponse{Src: api.Vertex{ID: a, Key: g.names[a]}, Dst: api.Vertex{ID: b, Key: g.names[b]},
				View: "fresh", Seq: r.Seq, Found: ok, Edges: []api.Neighbor{}}
			if ok {
				want.Edges = []api.Neighbor{{ID: b, Key: g.names[b], Weight: w}}
			}
			if fmt.Sprint(r) != fmt.Sprint(want) {
				t.Errorf("edge %d -> %d: %+v, want %+v", a, b, r, want)
			}
		}
	}
	if edgesFound[true] < 10 || edgesFound[false] < 10 {
		t.Errorf("edges found %d times and not %d times: the sample should give both often", edgesFound[true], edgesFound[false])
	}

	pr := g.pagerank()
	ranked := slices.Collect(maps.Keys(pr))
	sort.Slice(ranked, func(i, j int) bool { return pr[ranked[i]] > pr[ranked[j]] })
	var top api.TopResponse
	queryJSON(t, &top, with(append([]string{"top-pagerank", "-k", "7"}, prArgs...)...)...)
	if len(top.Top) != 7 || !top.Ready {
		t.Fatalf("top-pagerank: %+v", top)
	}
	for i, x := range top.Top {
		if math.Abs(x.Rank-pr[x.Vertex]) > prTol || math.Abs(x.Rank-pr[ranked[i]]) > prTol || x.Key != g.names[x.Vertex] {
			t.Errorf("top %d: %+v; want the rank %v of %d", i, x, pr[ranked[i]], ranked[i])
		}
	}
	comp, size := g.components()
	for _, v := range g.sample() {
		var c struct {
			api.VertexResultResponse
			Result api.ComponentResult `json:"result"`
		}
		queryJSON(t, &c, with("component", g.arg(v))...)
		want := api.ComponentResult{Component: v, Size: 1}
		if m, ok := comp[v]; ok {
			want = api.ComponentResult{Component: m, Size: size[m]}
		}
		want.ComponentKey = g.names[want.Component]
		if c.Result != want || c.Vertex != v || c.Key != g.names[v] {
			t.Errorf("component of %d: %+v, want %+v", v, c, want)
		}
	}

	// The text output says the same.
	alice := g.keys["alice"]
	out, _, err := execute(t, with("query", "degree", "alice")...)
	if err != nil || !strings.HasPrefix(out, fmt.Sprintf("out-degree of alice (%d): %d (fresh view at seq ", alice, len(g.adj(engine.Out)[alice]))) {
		t.Errorf("query degree alice: %q, %v", out, err)
	}
	ns := g.pageOrder(g.adj(engine.Out)[g.keys["42"]])
	if len(ns) < 2 {
		t.Fatalf("the data gives key 42 %d out-neighbors, want a few", len(ns))
	}
	out, _, err = execute(t, with("query", "neighbors", "key:42", "--limit", "1")...)
	if err != nil || !strings.Contains(out, fmt.Sprintf("out-neighbors of 42 (%d): %d in all", g.keys["42"], len(ns))) ||
		!strings.Contains(out, fmt.Sprintf("\n%d ", ns[0])) || !strings.Contains(out, "\nmore: --cursor ") {
		t.Errorf("query neighbors key:42 --limit 1: %q, %v", out, err)
	}
	// The more: line's cursor gives the next page.
	if _, cur, ok := strings.Cut(strings.TrimSpace(out), "\nmore: --cursor "); ok {
		var n api.NeighborsResponse
		queryJSON(t, &n, with("neighbors", "key:42", "--limit", "1", "--cursor", cur)...)
		if len(n.Neighbors) != 1 || n.Neighbors[0].ID != ns[1] {
			t.Errorf("query neighbors key:42 --limit 1 --cursor %s: %+v, want neighbor %d", cur, n.Neighbors, ns[1])
		}
	} else {
		t.Errorf("query neighbors key:42 --limit 1 has no more: line: %q", out)
	}
	out, _, err = execute(t, with("query", "edge", "key:42", g.arg(ns[0]))...)
	if err != nil || !strings.HasPrefix(out, fmt.Sprintf("edges from 42 (%d) to %s: 1 (fresh view at seq ", g.keys["42"], api.VertexName(ns[0], g.names[ns[0]]))) {
		t.Errorf("query edge key:42 %s: %q, %v", g.arg(ns[0]), out, err)
	}
	out, _, err = execute(t, with("query", "edge", "key:42", "key:42")...)
	if _, self := g.edges[[2]uint64{g.keys["42"], g.keys["42"]}]; err != nil || self || !strings.HasPrefix(out, fmt.Sprintf("no edge from 42 (%d) to 42 (%d) (fresh view at seq ", g.keys["42"], g.keys["42"])) {
		t.Errorf("query edge key:42 key:42: %q, %v", out, err)
	}
	out, _, err = execute(t, with(append([]string{"query", "top-pagerank", "-k", "3"}, prArgs...)...)...)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 4 || !strings.HasPrefix(lines[1], "1 ") {
		t.Errorf("query top-pagerank -k 3: %q, %v", out, err)
	}
	out, _, err = execute(t, with("query", "component", "1")...)
	if m := comp[1]; err != nil || !strings.Contains(out, fmt.Sprintf("component of 1: %s (its smallest vertex), %d vertices", g.arg(m), size[m])) {
		t.Errorf("query component 1: %q, %v", out, err)
	}
}

// TestQueryDir answers every query from a data directory, as the oracle
// does, and leaves the key dictionary as it was.
func TestQueryDir(t *testing.T) {
	dir, g := loadQueryDir(t)
	checkQueries(t, g, []string{"--dir", dir}, []string{"--tolerance", "1e-12"}, 1e-9)

	out, _, err := execute(t, "query", "path", "1", "1", "--dir", dir)
	if err != nil || !regexp.MustCompile(`^shortest path from 1 to 1 by hops: 0 \(read 0 edges, seq \d+\)\n1\n$`).MatchString(out) {
		t.Errorf("query path 1 1: %q, %v", out, err)
	}
	if _, _, err := execute(t, "query", "degree", "nobody", "--dir", dir); err == nil || err.Error() != `vertex "nobody" is neither an id nor a known key` {
		t.Errorf("unknown key: %v", err)
	}
	if _, _, err := execute(t, "query", "top-pagerank", "--analytic", "pr", "--dir", dir); err == nil || !strings.Contains(err.Error(), "--analytic names a registered analytic of a server") {
		t.Errorf("--analytic with --dir: %v", err)
	}
	// A path search over its budget.
	far, near := uint64(0), uint64(0)
	for a := range g.adj(engine.Out) {
		for b, l := range g.dists(a, false, 0) {
			if l >= 3 {
				far, near = b, a
			}
		}
	}
	if _, _, err := execute(t, "query", "path", g.arg(near), g.arg(far), "--budget", "1", "--dir", dir); err == nil || !strings.Contains(err.Error(), "over its budget of 1") {
		t.Errorf("budget: %v", err)
	}
	d, err := keydict.Open(datadir.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Len() != len(g.keys) {
		t.Errorf("the dictionary holds %d keys after the queries, want %d", d.Len(), len(g.keys))
	}
}

// TestQueryServer answers every query from a running API server over the
// same data (analytics registered on it), as the oracle does.
func TestQueryServer(t *testing.T) {
	dir, g := loadQueryDir(t)
	store, err := openStore(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dict, err := keydict.Open(datadir.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	vm, err := views.NewManager(store, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Resolve: api.ResolveVertex(dict)})
	defer reg.Close()
	for _, s := range []string{"type=pagerank,name=pr,tolerance=1e-12,max_iterations=10000", "type=wcc", "type=bfs,root=alice,name=reach"} {
		sp, err := analytics.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Register(sp); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the analytics", func() bool {
		for _, r := range reg.Results() {
			if !r.Ready {
				return false
			}
		}
		return true
	})
	const token = "query-test-token-0123456789"
	srv, err := api.New(api.Config{Store: store, Views: vm, Analytics: reg, Dict: dict, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokenFile, token+"\n")
	src := []string{"--server", hs.URL, "--token-file", tokenFile}
	checkQueries(t, g, src, []string{"--analytic", "pr"}, 1e-9)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"top-pagerank"}, `the server has no pagerank analytic named "pagerank"; its pagerank analytics: pr (choose with --analytic)`},
		{[]string{"top-pagerank", "--analytic", "reach"}, `analytic "reach" of the server is a bfs analytic, not pagerank; its pagerank analytics: pr (choose with --analytic)`},
		{[]string{"component", "1", "--analytic", "cc"}, `the server has no wcc analytic named "cc"; its wcc analytics: wcc (choose with --analytic)`},
		{[]string{"degree", "nobody"}, `server: 404 Not Found: vertex "nobody" is neither an id nor a known key`},
		{[]string{"path", "1", "2", "--budget", "5"}, "--budget applies to --dir; a server's path budget is serve's --http-path-budget"},
	} {
		if _, _, err := execute(t, append(append([]string{"query"}, tc.args...), src...)...); err == nil || err.Error() != tc.want {
			t.Errorf("query %v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if err := reg.Unregister("pr"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, append([]string{"query", "top-pagerank", "--analytic", "pr"}, src...)...); err == nil ||
		err.Error() != `the server has no pagerank analytic named "pr", and none of that type is registered: register one (serve --analytic type=pagerank, or POST /v1/analytics), or query --dir` {
		t.Errorf("no pagerank analytic: %v", err)
	}
	if _, _, err := execute(t, "query", "degree", "1", "--server", hs.URL); err == nil ||
		!strings.HasPrefix(err.Error(), "server: 401 Unauthorized: missing or wrong bearer token") || !strings.HasSuffix(err.Error(), "(give the token with --token-file or GRAPHTIDE_HTTP_TOKEN)") {
		t.Errorf("no token: %v", err)
	}
	t.Setenv("GRAPHTIDE_HTTP_TOKEN", token)
	var d api.DegreeResponse
	queryJSON(t, &d, "degree", "alice", "--server", hs.URL)
	if d.Degree != uint64(len(g.adj(engine.Out)[g.keys["alice"]])) {
		t.Errorf("degree with the token from the environment: %+v", d)
	}
	// The store is in use: --dir says to use the server.
	if _, _, err := execute(t, "query", "degree", "1", "--dir", dir); err == nil || !strings.Contains(err.Error(), "is in use by another process") {
		t.Errorf("--dir on a store in use: %v", err)
	}
}

func TestQueryFlags(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"degree", "1", "--dir", empty, "--server", "http://x:1"}, "give --dir or --server, not both"},
		{[]string{"degree", "1", "--server", "ftp://x"}, `--server must be an http:// or https:// URL such as http://127.0.0.1:9464, got "ftp://x"`},
		{[]string{"degree", "1", "--direction", "up", "--dir", empty}, `--direction must be out or in, got "up"`},
		{[]string{"degree", "1", "--view", "private", "--dir", empty}, `--view private is not offered by query: a private view is a copy of the graph that one program owns for a long computation, and a query holds its view only while it reads; use --view fresh or --view stale, or embed the Go package github.com/graphtide/graphtide (docs/embedding.md)`},
		{[]string{"degree", "1", "--view", "copy", "--dir", empty}, `--view must be fresh or stale, got "copy"`},
		{[]string{"neighbors", "1", "--limit", "0", "--dir", empty}, "--limit must be between 1 and 10000, got 0"},
		{[]string{"top-pagerank", "-k", "1001", "--dir", empty}, "-k must be between 1 and 1000, got 1001"},
		{[]string{"top-pagerank", "--damping", "1", "--dir", empty}, "--damping must be in (0, 1), got 1"},
		{[]string{"path", "1", "--dir", empty}, "accepts 2 arg(s), received 1"},
		{[]string{"degree", "1", "--token-file", "t", "--dir", empty}, "--token-file and --server-ca go with --server"},
		{[]string{"degree", "1", "--dir", empty}, "no store in --dir " + empty},
	} {
		_, _, err := execute(t, append([]string{"query"}, tc.args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("query %v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// Settings from the environment and the config file.
	t.Setenv("GRAPHTIDE_LIMIT", "0")
	if _, _, err := execute(t, "query", "neighbors", "1", "--dir", empty); err == nil || err.Error() != "--limit must be between 1 and 10000, got 0" {
		t.Errorf("GRAPHTIDE_LIMIT: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, "server: http://127.0.0.1:1\ntimeout: 0s\n")
	if _, _, err := execute(t, "query", "degree", "1", "--config", cfg); err == nil || err.Error() != "--timeout must be positive, got 0s" {
		t.Errorf("config file: %v", err)
	}
	for _, sub := range []string{"", "neighbors", "degree", "path", "top-pagerank", "component"} {
		args := []string{"query", sub, "--help"}
		if sub == "" {
			args = []string{"query", "--help"}
		}
		out, _, err := execute(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Examples:\n  graphtide query " + sub, "--dir string", "--server string", "--json", "GRAPHTIDE_"} {
			if !strings.Contains(out, want) {
				t.Errorf("query %s --help lacks %q:\n%s", sub, want, out)
			}
		}
	}
	if out, _, _ := execute(t, "--help"); !strings.Contains(out, "query ") {
		t.Error("root help does not list query")
	}
}

// TestLargeNumbersMapped: load maps numbers from 2^32 up (text and binary
// files) and every query gives them back as they were given; a number from
// 2^32 up that no edge named is unknown, like a key.
func TestLargeNumbersMapped(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	const a, b, top = uint64(5000000000), uint64(9000000000000), uint64(1<<62 - 1)
	text := filepath.Join(tmp, "big.el")
	if err := os.WriteFile(text, []byte(fmt.Sprintf("%d 7\n%d %d\n7 %d\nacct %d\n", a, a, b, top, a)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "big.bin")
	if err := edgefile.WriteFile(bin, edgefile.FormatBinary, []gen.Edge{{Src: b, Dst: top}, {Src: 3, Dst: b}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "load", "--dir", dir, text, bin); err != nil {
		t.Fatal(err)
	}
	want := map[string][]uint64{fmt.Sprint(a): {7, b}, fmt.Sprint(b): {top}, "7": {top}, "acct": {a}, "3": {b}}
	for v, nbrs := range want {
		out, _, err := execute(t, "query", "neighbors", v, "--dir", dir, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var r api.NeighborsResponse
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v in %q", v, err, out)
		}
		var got []uint64
		for _, n := range r.Neighbors {
			got = append(got, n.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, nbrs) {
			t.Errorf("neighbors of %s: %v, want %v", v, got, nbrs)
		}
		if v == fmt.Sprint(a) && r.Vertex != a {
			t.Errorf("neighbors of %s: vertex %d", v, r.Vertex)
		}
	}
	if _, _, err := execute(t, "query", "degree", fmt.Sprint(a+1), "--dir", dir); err == nil || err.Error() != fmt.Sprintf("vertex %d has never been in the graph", a+1) {
		t.Errorf("a number never seen: %v", err)
	}
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !d.MapsNumbers() || d.Keys.Numbers() != 3 {
		t.Errorf("MapsNumbers %v, %d numbers mapped; want true and 3", d.MapsNumbers(), d.Keys.Numbers())
	}
	d.Close()
	out, _, err := execute(t, "inspect", "--dir", dir)
	if err != nil || !strings.Contains(out, "key dictionary: 1 keys, 3 numbers from 2^32 up mapped to dense ids, ") {
		t.Errorf("inspect: %v\n%s", err, out)
	}
}

// TestQueryAsOfAndChanges loads two files, one edge a batch, into a store
// that keeps history, and reads it as of the seq between them: degree,
// edge lookups and neighbors as they were, and the changes between the
// two points; a seq not applied yet is refused.
func TestQueryAsOfAndChanges(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	a, b := filepath.Join(tmp, "a.el"), filepath.Join(tmp, "b.json")
	if err := os.WriteFile(a, []byte("1 2 1.5\n2 3\n3 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(`{"op":"delete","src":1,"dst":2}
{"op":"add","src":4,"dst":5,"weight":2}
{"op":"add","src":2,"dst":3,"weight":7}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{a, b} {
		if _, _, err := execute(t, "load", "--dir", dir, "--batch", "1", "--history-seqs", "100", f); err != nil {
			t.Fatal(err)
		}
	}
	var d api.DegreeResponse
	queryJSON(t, &d, "degree", "1", "--dir", dir, "--as-of-seq", "3")
	if d.Degree != 1 || d.Seq != 3 {
		t.Errorf("degree of 1 as of seq 3: %+v, want 1 at seq 3", d)
	}
	queryJSON(t, &d, "degree", "1", "--dir", dir)
	if d.Degree != 0 || d.Seq != 6 {
		t.Errorf("degree of 1 now: %+v, want 0 at seq 6", d)
	}
	var e api.EdgeResponse
	queryJSON(t, &e, "edge", "2", "3", "--dir", dir, "--as-of-seq", "3")
	if !e.Found || e.Edges[0].Weight != 1 {
		t.Errorf("edge 2 -> 3 as of seq 3: %+v, want weight 1", e)
	}
	queryJSON(t, &e, "edge", "2", "3", "--dir", dir)
	if !e.Found || e.Edges[0].Weight != 7 {
		t.Errorf("edge 2 -> 3 now: %+v, want weight 7", e)
	}
	var n api.NeighborsResponse
	queryJSON(t, &n, "neighbors", "1", "--dir", dir, "--as-of-seq", "2")
	if len(n.Neighbors) != 1 || n.Neighbors[0] != (api.Neighbor{ID: 2, Weight: 1.5}) {
		t.Errorf("neighbors of 1 as of seq 2: %+v", n)
	}
	var c api.ChangesResponse
	queryJSON(t, &c, "changes", "--from", "3", "--to", "6", "--dir", dir)
	one := 1.0
	want := []api.Change{{Src: 1, Dst: 2, Change: "removed", Weight: 1.5}, {Src: 2, Dst: 3, Change: "changed", Weight: 7, OldWeight: &one},
		{Src: 4, Dst: 5, Change: "added", Weight: 2}}
	if describeChanges(c.Changes) != describeChanges(want) || c.NextAfter != nil {
		t.Errorf("changes from 3 to 6: %s, want %s", describeChanges(c.Changes), describeChanges(want))
	}
	// Paged one at a time, the same.
	var paged []api.Change
	args := []string{"changes", "--from", "3", "--to", "6", "--dir", dir, "--limit", "1"}
	for i := 0; i < 5; i++ {
		var p api.ChangesResponse
		queryJSON(t, &p, args...)
		paged = append(paged, p.Changes...)
		if p.NextAfter == nil {
			break
		}
		args = []string{"changes", "--from", "3", "--to", "6", "--dir", dir, "--limit", "1",
			"--after", strconv.FormatUint(*p.NextAfter, 10), "--after-dst", strconv.FormatUint(*p.NextAfterDst, 10)}
	}
	if describeChanges(paged) != describeChanges(want) {
		t.Errorf("changes paged one at a time: %s, want %s", describeChanges(paged), describeChanges(want))
	}
	out, _, err := execute(t, "query", "changes", "--from", "3", "--to", "6", "--dir", dir)
	if err != nil || !strings.HasPrefix(out, "changes from seq 3 to seq 6: 3 on this page") || !strings.Contains(out, "changed  2    3    default  7       1") {
		t.Errorf("query changes as text: %q, %v", out, err)
	}
	if _, _, err := execute(t, "query", "degree", "1", "--dir", dir, "--as-of-seq", "7"); err == nil || !strings.Contains(err.Error(), "seq 7 is not applied yet: the newest is 6") {
		t.Errorf("degree as of a seq not applied yet: %v", err)
	}
	if _, _, err := execute(t, "query", "degree", "1", "--dir", dir, "--as-of-seq", "x"); err == nil || err.Error() != `--as-of-seq must be a sequence number (an unsigned integer), got "x"` {
		t.Errorf("--as-of-seq x: %v", err)
	}
	for args, want := range map[string]string{
		"changes --to 6": "--from (a sequence number) or --from-time (an RFC 3339 time) is required",
		"changes --from 3 --from-time 2026-11-26T10:00:00Z --to 6": "give --from or --from-time, not both",
		"degree 1 --as-of-time 2026-11-26T10:00:00Z":               "this store has none: read as of a seq instead (as_of_seq)",
		"degree 1 --as-of-seq 3 --as-of-time 2026-11-26T10:00:00Z": "give --as-of-seq or --as-of-time, not both",
	} {
		_, _, err := execute(t, append(append([]string{"query"}, strings.Fields(args)...), "--dir", dir)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("query %s: %v, want an error containing %q", args, err, want)
		}
	}
}

// describeChanges writes changes as text, old weights by value.
func describeChanges(cs []api.Change) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%d %q -> %d %q %s %s %v", c.Src, c.SrcKey, c.Dst, c.DstKey, c.Type, c.Change, c.Weight)
		if c.OldWeight != nil {
			fmt.Fprintf(&b, " from %v", *c.OldWeight)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestLoadAndQueryVertexRecords: records from a text file and a JSON file
// with keys (the binary record format is Kafka's: decode's tests), then `query vertex` now and as of an
// earlier seq, in JSON and as text; a vertex delete removes the record.
func TestLoadAndQueryVertexRecords(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	a, b := filepath.Join(tmp, "a.el"), filepath.Join(tmp, "b.json")
	if err := os.WriteFile(a, []byte("v 1 account\nv 2\n1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(`{"op":"add_vertex","src":1,"label":"merchant","props":{"mcc":5411,"name":"Corner \"Shop\""}}
{"op":"add_vertex","src":"alice","label":"person"}
{"op":"delete_vertex","src":2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{a, b} {
		out, _, err := execute(t, "load", "--dir", dir, "--batch", "1", "--history-seqs", "100", f)
		if err != nil {
			t.Fatal(err)
		}
		if f == b && !strings.Contains(out, "1 vertex deletes, 2 vertex records") {
			t.Errorf("load %s printed %q", f, out)
		}
	}
	var v api.VertexResponse
	v = api.VertexResponse{}
	queryJSON(t, &v, "vertex", "1", "--dir", dir)
	if !v.Record || !v.Exists || v.Label != "merchant" || string(v.Props) != `{"mcc":5411,"name":"Corner \"Shop\""}` || v.Seq != 6 {
		t.Errorf("vertex 1 now: %+v (props %s)", v, v.Props)
	}
	v = api.VertexResponse{}
	queryJSON(t, &v, "vertex", "1", "--dir", dir, "--as-of-seq", "3")
	if !v.Record || v.Label != "account" || v.Props != nil || v.Seq != 3 {
		t.Errorf("vertex 1 as of seq 3: %+v", v)
	}
	v = api.VertexResponse{}
	queryJSON(t, &v, "vertex", "2", "--dir", dir, "--as-of-seq", "3")
	if !v.Record || v.Label != "" || !v.Exists {
		t.Errorf("vertex 2 as of seq 3: %+v", v)
	}
	v = api.VertexResponse{}
	queryJSON(t, &v, "vertex", "2", "--dir", dir)
	if v.Record || v.Exists {
		t.Errorf("vertex 2 after its delete: %+v", v)
	}
	v = api.VertexResponse{}
	queryJSON(t, &v, "vertex", "alice", "--dir", dir)
	if !v.Record || v.Label != "person" || v.Vertex.Key != "alice" {
		t.Errorf("vertex alice: %+v", v)
	}
	out, _, err := execute(t, "query", "vertex", "1", "--dir", dir)
	if err != nil || out != "vertex 1 (fresh view at seq 6)\nlabel: merchant\nprops: {\"mcc\":5411,\"name\":\"Corner \\\"Shop\\\"\"}\n" {
		t.Errorf("query vertex 1 as text: %q, %v", out, err)
	}
	out, _, err = execute(t, "query", "vertex", "5", "--dir", dir)
	if err != nil || out != "vertex 5 does not exist (fresh view at seq 6)\n" {
		t.Errorf("query vertex 5 as text: %q, %v", out, err)
	}
}
