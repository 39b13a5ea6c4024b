package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
)

// newTestClient is a Client of hs.
func newTestClient(t *testing.T, url, token string) *Client {
	t.Helper()
	c, err := NewClient(url, ClientOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestClientAgainstOracle asks a server over a fixture store through the
// Client and checks every typed answer against the fixture's oracles
// (plain maps of the edges written, single-threaded references).
func TestClientAgainstOracle(t *testing.T) {
	const nv = 120
	f := newFixture(t, true, 7, nv, 2500, []string{"type=bfs,name=reach,root=alice", "type=wcc",
		"type=pagerank,tolerance=1e-12,max_iterations=1000"})
	f.waitAnalytics(t)
	_, hs := serve(t, f, func(c *Config) { c.Token = testToken })
	c := newTestClient(t, hs.URL, testToken)
	ctx := context.Background()

	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Store.LastSeq != f.lastSeq || st.Store.DurableSeq != f.durableSeq || st.Analytics.Count != 3 {
		t.Errorf("stats: last seq %d durable %d analytics %d; want %d, %d, 3", st.Store.LastSeq, st.Store.DurableSeq,
			st.Analytics.Count, f.lastSeq, f.durableSeq)
	}

	for _, v := range f.sample(nv) {
		name := f.vertexParam(v)
		for _, tc := range []struct {
			o ReadOptions
			g graph
		}{{ReadOptions{}, f.live}, {ReadOptions{Dir: "in"}, f.live}, {ReadOptions{Dir: "out", View: "stale"}, f.durable}} {
			dir := engine.Out
			if tc.o.Dir == "in" {
				dir = engine.In
			}
			want := inPositionOrder(f.dict, tc.g.Adj(dir)[v])
			d, err := c.Degree(ctx, name, tc.o)
			if err != nil {
				t.Fatalf("degree %s %+v: %v", name, tc.o, err)
			}
			if d.Degree != uint64(len(want)) || d.Vertex != v {
				t.Errorf("degree %s %+v: %d (vertex %d), want %d", name, tc.o, d.Degree, d.Vertex, len(want))
			}
			// Pages of 3, following next_cursor, list every neighbor once.
			var got []uint64
			after := ""
			for pages := 0; ; pages++ {
				r, err := c.Neighbors(ctx, name, tc.o, PageOptions{Cursor: after, Limit: 3})
				if err != nil {
					t.Fatalf("neighbors %s %+v after %q: %v", name, tc.o, after, err)
				}
				for _, n := range r.Neighbors {
					got = append(got, n.ID)
					if w := tc.g.Weight(v, n.ID, dir); n.Weight != w {
						t.Errorf("%s: weight of the edge with %d is %v, want %v", name, n.ID, n.Weight, w)
					}
				}
				if r.NextAfter == nil {
					break
				}
				if pages > len(want) {
					t.Fatalf("neighbors %s: more pages than neighbors", name)
				}
				after = r.NextCursor
			}
			if !slices.Equal(got, want) {
				t.Errorf("neighbors %s %+v: %v, want %v", name, tc.o, got, want)
			}
		}
	}

	// Paths by hops from alice, against a BFS over the oracle.
	alice := f.keys["alice"]
	dist := refDists(f.live, alice, false, 0)
	for _, v := range f.sample(nv) {
		r, err := c.Path(ctx, "alice", f.vertexParam(v), "", false, 0, AsOf{})
		if err != nil {
			t.Fatalf("path alice %d: %v", v, err)
		}
		d, ok := dist[v]
		if r.Found != ok || (ok && (r.Length == nil || *r.Length != d || len(r.Path) != int(d)+1)) {
			t.Errorf("path alice -> %d: found %v length %v path %v; want found %v length %v", v, r.Found, r.Length, r.Path, ok, d)
		}
	}

	// Components, through the registered wcc analytic.
	var se *StatusError
	comp, size := refComponents(f.live)
	name, err := c.Registered(ctx, "wcc", "")
	if err != nil || name != "wcc" {
		t.Fatalf("registered wcc: %q, %v", name, err)
	}
	for _, v := range f.sample(nv) {
		want, ok := comp[v]
		if !ok { // no edge: a component of its own
			want, size[v] = v, 1
		}
		r, err := c.AnalyticVertex(ctx, "wcc", f.vertexParam(v))
		if err != nil {
			t.Fatalf("component of %d: %v", v, err)
		}
		cr, err := ResultAs[ComponentResult](r)
		if err != nil {
			t.Fatal(err)
		}
		if cr.Component != want || cr.Size != size[want] || r.Vertex != v {
			t.Errorf("component of %d: %+v, want %d of size %d", v, cr, want, size[want])
		}
	}

	if _, err := c.AnalyticVertex(ctx, "wcc", "nobody"); !errors.As(err, &se) || se.Status != http.StatusNotFound {
		t.Errorf("component of an unknown key: %v, want a 404", err)
	}

	// The top PageRanks, against the reference ranks.
	ranks := refPageRank(f.live, 0.85)
	top, err := c.Top(ctx, "pagerank", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Top) != 5 || !top.Ready {
		t.Fatalf("top: %+v", top)
	}
	all := make([]float64, 0, len(ranks))
	for _, r := range ranks {
		all = append(all, r)
	}
	slices.Sort(all)
	for i, x := range top.Top {
		if math.Abs(x.Rank-ranks[x.Vertex]) > 1e-9 || math.Abs(x.Rank-all[len(all)-1-i]) > 1e-9 {
			t.Errorf("top %d: %+v; reference rank of that vertex %v, %d-th highest reference rank %v", i, x, ranks[x.Vertex], i+1, all[len(all)-1-i])
		}
	}

	// Registering, reading and removing an analytic; asking for the wrong
	// type names the ones there are.
	var nr *NotRegisteredError
	if _, err := c.Registered(ctx, "wcc", "reach"); !errors.As(err, &nr) || nr.NameType != "bfs" || !slices.Equal(nr.OfType, []string{"wcc"}) {
		t.Errorf("registered wcc named reach: %v", err)
	}
	if _, err := c.Registered(ctx, "sssp", ""); !errors.As(err, &nr) || nr.NameType != "" || len(nr.OfType) != 0 {
		t.Errorf("registered sssp: %v", err)
	}
	res, err := c.Register(ctx, Spec{Name: "hubs", Type: "degree", Threshold: 4, Direction: "in"})
	if err != nil || res.Type != "degree" || res.Threshold != 4 {
		t.Fatalf("register: %+v, %v", res, err)
	}
	if got, err := c.Analytic(ctx, "hubs"); err != nil || got.Spec.Direction != "in" {
		t.Errorf("analytic hubs: %+v, %v", got, err)
	}
	if _, err := c.Register(ctx, Spec{Name: "hubs", Type: "degree", Threshold: 4}); !errors.As(err, new(*StatusError)) {
		t.Errorf("registering hubs twice: %v", err)
	}
	if err := c.Unregister(ctx, "hubs"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Analytic(ctx, "hubs"); !errors.As(err, &se) || se.Status != http.StatusNotFound || se.Message == "" {
		t.Errorf("analytic hubs after unregistering: %v", err)
	}

	// Without the token: 401, with the server's message.
	if _, err := newTestClient(t, hs.URL, "").Degree(ctx, "1", ReadOptions{}); !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Errorf("without the token: %v", err)
	}
	if _, err := NewClient("ftp://x", ClientOptions{}); err == nil {
		t.Error("NewClient accepted ftp://x")
	}
}
