package api

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// graph is the independent oracle of the store (internal/testref): live
// edges and weights, updated op by op with the documented semantics.
type graph = testref.Edges

// refDists are the lengths of the shortest paths from one vertex to every
// vertex it reaches, by plain single-threaded searches over the map: BFS
// by hops; by weight, maxDepth rounds of Bellman-Ford over every edge (or,
// unbounded, until nothing changes).
func refDists(g graph, from uint64, weighted bool, maxDepth int) map[uint64]float64 {
	dist := map[uint64]float64{from: 0}
	if !weighted {
		out := g.Adj(engine.Out)
		for q := []uint64{from}; len(q) > 0; q = q[1:] {
			v := q[0]
			if maxDepth > 0 && dist[v] == float64(maxDepth) {
				continue
			}
			for _, w := range out[v] {
				if _, ok := dist[w]; !ok {
					dist[w] = dist[v] + 1
					q = append(q, w)
				}
			}
		}
		return dist
	}
	for round := 1; maxDepth == 0 || round <= maxDepth; round++ {
		next := maps.Clone(dist)
		for k, w := range g {
			if d, ok := dist[k[0]]; ok {
				if nd, ok := next[k[1]]; !ok || d+w < nd {
					next[k[1]] = d + w
				}
			}
		}
		same := maps.Equal(next, dist)
		dist = next
		if same {
			break
		}
	}
	return dist
}

var (
	refPageRank   = testref.PageRank
	refComponents = testref.Components
	refDistances  = testref.Dijkstra
)

// The keys of the fixture: plain ones, one with a space and a slash (it
// must be percent-encoded in a path) and one that looks like a number
// (only "key:42" reaches it).
var fixtureKeys = []string{"alice", "bob", "carol", "acct 7/x", "42", "émile"}

// fixtureLabels are the labels of the fixture's vertex records.
var fixtureLabels = []string{"", "account", "merchant", "ünï"}

// fixture is a store with data, its key dictionary, views and analytics,
// and oracles of its live and its durable (flushed) graph.
type fixture struct {
	store   *engine.Store
	dict    *keydict.Dict
	vm      *views.Manager
	reg     *analytics.Registry
	live    graph // every batch applied
	durable graph // as of the last flush (what a stale view sees)
	keys    map[string]uint64
	// lastSeq and durableSeq are the sequence numbers Apply returned for
	// the last batch and for the last one before the flush.
	lastSeq, durableSeq uint64
	// The vertex records, live and as of durableSeq.
	records, durableRecords map[uint64]engine.Vertex
}

// fixtureAnalytics are registered before any edge is written, so that the
// monitors see every operation.
var fixtureAnalytics = []string{
	"type=bfs,name=reach,root=alice",
	"type=wcc",
	"type=pagerank,tolerance=1e-12,max_iterations=1000",
	"type=sssp,name=cost,root=3",
	"type=degree,name=hubs,threshold=6",
	"type=fanin,threshold=3,window_edges=500",
	"type=fanout,threshold=3,window_edges=500",
	"type=fraud,max_cycle=3,threshold=4,window_edges=500",
}

// newFixture builds the store in a temporary directory. Numeric vertices
// are below nv; the string keys join them. Weights are non-negative
// except on the edge 900 -> 901 (-1), which nothing else reaches. About
// the last fifth of the batches is applied after the last flush, so a
// stale view differs from a fresh one.
func newFixture(t *testing.T, inEdges bool, seed uint64, nv, nops int, specs []string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{live: graph{}, keys: map[string]uint64{}, records: map[uint64]engine.Vertex{}}
	var err error
	if f.dict, err = keydict.Open(filepath.Join(dir, "keys.dict")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.dict.Close() })
	// MemGraphs large enough that only the fixture's flush runs; all
	// history kept, so that reads as of f.durableSeq see f.durable.
	if f.store, err = engine.Open(filepath.Join(dir, "store"), &engine.Options{InEdges: inEdges, MemGraphBytes: 4 << 20, KeepHistory: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.store.Close() })
	if f.vm, err = views.NewManager(f.store, views.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.vm.Close)
	for _, k := range fixtureKeys {
		if f.keys[k], err = f.dict.ID(k); err != nil {
			t.Fatal(err)
		}
	}
	f.reg = analytics.NewRegistry(f.vm, analytics.RegistryConfig{Resolve: ResolveVertex(f.dict), Names: f.dict.Name})
	t.Cleanup(f.reg.Close)
	for _, s := range specs {
		sp, err := analytics.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.reg.Register(sp); err != nil {
			t.Fatal(err)
		}
	}
	// Each analytic opens its stream view on its own goroutine, and a
	// stream sees only the operations applied after it opened.
	for deadline := time.Now().Add(30 * time.Second); f.vm.Stats().Streams < len(specs); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d analytics opened their streams", f.vm.Stats().Streams, len(specs))
		}
	}

	r := rand.New(rand.NewPCG(seed, 1))
	vertex := func() uint64 {
		if r.IntN(6) == 0 {
			return f.keys[fixtureKeys[r.IntN(len(fixtureKeys))]]
		}
		return uint64(r.IntN(nv))
	}
	var ups [][2]uint64
	var b engine.Batch
	apply := func() {
		if f.lastSeq, err = f.store.Apply(&b); err != nil {
			t.Fatal(err)
		}
		f.live.ApplyBatch(&b)
		b.Reset()
	}
	b.InsertWeighted(900, 901, -1)
	b.InsertWeighted(901, 902, 1)
	apply()
	for i := 0; i < nops; i++ {
		switch x := r.IntN(100); {
		case x < 1:
			v := vertex()
			b.DeleteVertex(v)
			delete(f.records, v)
		case x < 3:
			v := vertex()
			rec := engine.Vertex{Label: fixtureLabels[r.IntN(len(fixtureLabels))]}
			if r.IntN(2) == 0 {
				rec.Props = fmt.Appendf(nil, `{"n":%d,"s":"é\u0000%d"}`, i, r.IntN(1000))
			}
			b.PutVertex(v, rec.Label, rec.Props)
			f.records[v] = rec
		case x < 12 && len(ups) > 0:
			e := ups[r.IntN(len(ups))]
			b.DeleteEdge(e[0], e[1])
		default:
			e := [2]uint64{vertex(), vertex()}
			b.InsertWeighted(e[0], e[1], float64(r.IntN(20))/4)
			ups = append(ups, e)
		}
		if b.Len() == 50 {
			apply()
		}
		if i == nops*4/5 {
			apply()
			if err := f.store.Flush(); err != nil {
				t.Fatal(err)
			}
			f.durable, f.durableSeq = maps.Clone(f.live), f.lastSeq
			f.durableRecords = maps.Clone(f.records)
		}
	}
	apply()
	// The fixture's promises: a stale view sees exactly f.durable, which
	// differs from f.live.
	m, err := f.store.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.DurableSeq != f.durableSeq || maps.Equal(f.live, f.durable) {
		t.Fatalf("fixture: durable seq %d, want %d (a background flush ran?); live and durable graphs equal: %v",
			m.DurableSeq, f.durableSeq, maps.Equal(f.live, f.durable))
	}
	return f
}

// waitAnalytics waits until every registered analytic is ready and has
// caught up with the store's newest batch.
func (f *fixture) waitAnalytics(t *testing.T) {
	t.Helper()
	m, err := f.store.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		behind := ""
		for _, res := range f.reg.Results() {
			if res.Error != "" {
				t.Fatalf("analytic %s failed: %s", res.Spec.Name, res.Error)
			}
			if !res.Ready || res.Seq < m.LastSeq {
				behind += fmt.Sprintf(" %s(ready=%v seq=%d)", res.Spec.Name, res.Ready, res.Seq)
			}
		}
		if behind == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("analytics did not catch up with seq %d:%s", m.LastSeq, behind)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inPositionOrder sorts vertex ids (in place, and returns them) as a page
// of neighbors lists them: numbers by the value the sources gave, then
// string keys by their bytes.
func inPositionOrder(dict *keydict.Dict, ids []uint64) []uint64 {
	sort.SliceStable(ids, func(i, j int) bool {
		ki, iKey := dict.Key(ids[i])
		kj, jKey := dict.Key(ids[j])
		switch {
		case iKey != jKey:
			return jKey
		case iKey:
			return ki < kj
		}
		return dict.SourceID(ids[i]) < dict.SourceID(ids[j])
	})
	return ids
}

// syncLog is a log destination safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
