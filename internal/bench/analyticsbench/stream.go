package analyticsbench

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
)

// source is the graph a run loads and the stream it applies.
type source struct {
	edges []wedge
	// nv bounds the vertex ids of the graph and the stream.
	nv uint64
	// ops is the stream, cut into batches of the run's batch size.
	ops [][]engine.Op
	// origin: "file", "generator" or "beside" (Result.StreamSource).
	origin string
	hubs   int // hub vertex deletes in ops
}

// sourceGraph makes the graph and (unless the run times kernels only) its
// stream: the whole --input file or a generated graph (graphOf); the
// --stream file, or a stream generated beside the graph (newStream).
func sourceGraph(cfg Config) (*source, error) {
	src, extra, err := graphOf(cfg)
	if err != nil || cfg.KernelsOnly {
		return src, err
	}
	var flat []engine.Op
	if cfg.Stream != "" {
		ops, err := readOps(cfg.Stream)
		if err != nil {
			return nil, err
		}
		if len(ops) == 0 {
			return nil, fmt.Errorf("%s holds no operations", cfg.Stream)
		}
		flat, src.origin = ops, "file"
	} else {
		hubs := topVertices(src.edges, src.nv, cfg.HubVertexDeletes)
		flat, src.hubs = newStream(src.edges, extra, hubs, cfg), len(hubs)
	}
	for _, o := range flat {
		src.nv = max(src.nv, o.Src+1, o.Dst+1)
	}
	src.ops = cutBatches(flat, cfg.BatchSize)
	return src, nil
}

// graphOf is the graph of the source, and the new edges a stream
// generated beside it inserts (none when the stream is a file or the run
// times kernels only): drawn in proportion to the edges of --input, or
// the generator's next draws.
func graphOf(cfg Config) (*source, []wedge, error) {
	switch {
	case cfg.Input != "":
		edges, nv, err := readInput(cfg.Input)
		if err != nil {
			return nil, nil, err
		}
		k, err := extraEdges(cfg, len(edges))
		if err != nil {
			return nil, nil, err
		}
		return &source{edges: edges, nv: nv, origin: "beside"}, drawBeside(edges, k, cfg.Seed), nil
	case cfg.Graph == "kron":
		g := gen.Kronecker{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}
		if err := g.Validate(); err != nil {
			return nil, nil, err
		}
		return generated(cfg, cfg.EdgeFactor<<cfg.Scale, g.NumVertices(), g.GenerateWithTail)
	default:
		g := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}
		if err := g.Validate(); err != nil {
			return nil, nil, err
		}
		return generated(cfg, g.NumEdges(), g.NumVertices(), g.GenerateWithTail)
	}
}

// generated is a generated graph of e edges over nv vertices, drawn by
// draw with the stream's new edges as its tail.
func generated(cfg Config, e int, nv uint64, draw func(tail int) ([]gen.Edge, []gen.Edge)) (*source, []wedge, error) {
	k, err := extraEdges(cfg, e)
	if err != nil {
		return nil, nil, err
	}
	edges, more := draw(k)
	return &source{edges: unweighted(edges), nv: nv, origin: "generator"}, unweighted(more), nil
}

// extraEdges is how many new edges a stream generated beside a graph of
// e edges inserts (--stream-fraction of them; none with --stream or
// --kernels-only).
func extraEdges(cfg Config, e int) (int, error) {
	k := int(float64(e) * cfg.StreamFraction)
	if k == 0 && cfg.Stream == "" && !cfg.KernelsOnly {
		return 0, fmt.Errorf("--stream-fraction %v of %d edges streams none: raise it", cfg.StreamFraction, e)
	}
	if cfg.Stream != "" || cfg.KernelsOnly {
		k = 0
	}
	return k, nil
}

// unweighted are es as edges of weight 1.
func unweighted(es []gen.Edge) []wedge {
	out := make([]wedge, len(es))
	for i, e := range es {
		out[i] = wedge{e.Src, e.Dst, 1}
	}
	return out
}

// drawBeside draws n new edges for a stream into edges: each source the
// source of a random edge and each head the head of another, so that
// vertices get new edges in proportion to the edges they have (as traffic
// comes to the hubs); a weighted graph's new edges take the weight of a
// third random edge. No self-loops; an edge may already exist (its
// insert then replaces it).
func drawBeside(edges []wedge, n int, seed uint64) []wedge {
	r := rand.New(rand.NewPCG(seed, 0x62657369)) // "besi"
	weighted := slices.ContainsFunc(edges, func(e wedge) bool { return e.w != 1 })
	out := make([]wedge, 0, n)
	for tries := 0; len(out) < n && tries < 64*n+4096; tries++ {
		e := wedge{edges[r.IntN(len(edges))].src, edges[r.IntN(len(edges))].dst, 1}
		if e.src == e.dst {
			continue
		}
		if weighted {
			e.w = edges[r.IntN(len(edges))].w
		}
		out = append(out, e)
	}
	return out
}

// topVertices returns the n vertices with the most edges (out and in) in
// edges, the most first (ties: the smaller id first).
func topVertices(edges []wedge, nv uint64, n int) []uint64 {
	if n == 0 {
		return nil
	}
	deg := make([]int32, nv)
	for _, e := range edges {
		deg[e.src]++
		deg[e.dst]++
	}
	vs := make([]uint64, 0, nv)
	for v := range nv {
		if deg[v] > 0 {
			vs = append(vs, v)
		}
	}
	slices.SortFunc(vs, func(a, b uint64) int { return cmp.Or(cmp.Compare(deg[b], deg[a]), cmp.Compare(a, b)) })
	return vs[:min(n, len(vs))]
}

// newStream makes the stream generated beside the graph: upserts of the
// extra edges, deletes of existing edges drawn at random (loaded or
// streamed before), vertex deletes of vertices with edges (the source of
// a random edge: a hub as often as its edges make it), in the shares the
// configuration asks for, and the hub vertex deletes spread evenly over
// it (a hub's later upserts and deletes still come: re-inserts, and
// deletes of missing edges, as happens).
func newStream(edges, extra []wedge, hubs []uint64, cfg Config) []engine.Op {
	r := rand.New(rand.NewPCG(cfg.Seed, 99))
	live := make([][2]uint64, 0, len(edges)+len(extra))
	for _, e := range edges {
		live = append(live, [2]uint64{e.src, e.dst})
	}
	ops := make([]engine.Op, 0, len(extra)+len(extra)/4+len(hubs))
	for next := 0; next < len(extra); {
		x := r.Float64()
		switch {
		case x < cfg.DeleteFraction && len(live) > 0:
			k := r.IntN(len(live))
			e := live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			ops = append(ops, engine.Op{Src: e[0], Dst: e[1], Kind: engine.OpDeleteEdge})
		case x < cfg.DeleteFraction+cfg.VertexDeleteFraction && len(live) > 0:
			// A vertex with edges (its edges stay in live: deleting one
			// of them again is a delete of a missing edge, as happens).
			ops = append(ops, engine.Op{Src: live[r.IntN(len(live))][0], Kind: engine.OpDeleteVertex})
		default:
			e := extra[next]
			next++
			ops = append(ops, engine.Op{Src: e.src, Dst: e.dst, Weight: e.w, Kind: engine.OpUpsert})
			live = append(live, [2]uint64{e.src, e.dst})
		}
	}
	if len(hubs) == 0 {
		return ops
	}
	// Hub i goes before the operation at (i+1)/(len(hubs)+1) of the stream.
	out := make([]engine.Op, 0, len(ops)+len(hubs))
	h := 0
	for k, o := range ops {
		for h < len(hubs) && k >= (h+1)*len(ops)/(len(hubs)+1) {
			out = append(out, engine.Op{Src: hubs[h], Kind: engine.OpDeleteVertex})
			h++
		}
		out = append(out, o)
	}
	for ; h < len(hubs); h++ {
		out = append(out, engine.Op{Src: hubs[h], Kind: engine.OpDeleteVertex})
	}
	return out
}
