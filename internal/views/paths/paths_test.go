package paths

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/views"
)

// boundedDists are the lightest path weights of at most k hops from root
// (k rounds of Bellman-Ford over every edge of the map), or by hops when
// unweighted.
func boundedDists(g testref.Edges, root uint64, weighted bool, k int) map[uint64]float64 {
	dist := map[uint64]float64{root: 0}
	for round := 0; round < k; round++ {
		next := maps.Clone(dist)
		for e, w := range g {
			if !weighted {
				w = 1
			}
			if d, ok := dist[e[0]]; ok {
				if nd, ok := next[e[1]]; !ok || d+w < nd {
					next[e[1]] = d + w
				}
			}
		}
		dist = next
	}
	return dist
}

// TestFindMatchesReference: on random graphs, with and without in-edges,
// every search mode finds a path exactly when the reference search over a
// plain map of the edges reaches the target, of the reference's length,
// made of edges of the graph.
func TestFindMatchesReference(t *testing.T) {
	volume.Mark(t)
	for _, inEdges := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("in=%v/seed=%d", inEdges, seed), func(t *testing.T) {
				s, err := engine.Open(t.TempDir(), &engine.Options{InEdges: inEdges})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				r := rand.New(rand.NewPCG(seed, 9))
				g := testref.Edges{}
				var b engine.Batch
				const nv = 60
				for i := 0; i < 150; i++ {
					a, c := r.Uint64N(nv), r.Uint64N(nv)
					w := float64(r.IntN(9)) / 2
					b.InsertWeighted(a, c, w)
					g[[2]uint64{a, c}] = w
				}
				if _, err := s.Apply(&b); err != nil {
					t.Fatal(err)
				}
				m, err := views.NewManager(s, views.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				v, err := m.Static(views.StaticOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer v.Release()
				for from := uint64(0); from < nv; from += 7 {
					hops := testref.BFS(g, from)
					weights := testref.Dijkstra(g, from)
					for _, o := range []Options{{}, {MaxDepth: 3}, {Weighted: true}, {Weighted: true, MaxDepth: 3}} {
						var want map[uint64]float64
						switch {
						case o.MaxDepth > 0:
							want = boundedDists(g, from, o.Weighted, o.MaxDepth)
						case o.Weighted:
							want = weights
						default:
							want = map[uint64]float64{}
							for x, l := range hops {
								want[x] = float64(l)
							}
						}
						for to := uint64(0); to < nv+2; to++ {
							res, err := Find(context.Background(), v, from, to, o)
							if err != nil {
								t.Fatalf("%d -> %d %+v: %v", from, to, o, err)
							}
							d, ok := want[to]
							if res.Found != ok || (ok && math.Abs(res.Length-d) > 1e-9) {
								t.Fatalf("%d -> %d %+v: found %v length %v, want found %v length %v", from, to, o, res.Found, res.Length, ok, d)
							}
							if !ok {
								continue
							}
							// The path is made of edges of g and has the length found.
							if res.Path[0] != from || res.Path[len(res.Path)-1] != to {
								t.Fatalf("%d -> %d: path %v", from, to, res.Path)
							}
							l := 0.0
							for i := 1; i < len(res.Path); i++ {
								w, ok := g[[2]uint64{res.Path[i-1], res.Path[i]}]
								if !ok {
									t.Fatalf("%d -> %d: path %v uses a missing edge", from, to, res.Path)
								}
								if o.Weighted {
									l += w
								} else {
									l++
								}
							}
							if math.Abs(l-res.Length) > 1e-9 || (o.MaxDepth > 0 && len(res.Path)-1 > o.MaxDepth) {
								t.Fatalf("%d -> %d %+v: path %v has length %v and %d hops, reported %v", from, to, o, res.Path, l, len(res.Path)-1, res.Length)
							}
						}
					}
				}
			})
		}
	}
}
