package engine

import (
	"fmt"
	"slices"

	"github.com/graphtide/graphtide/internal/core"
	"sort"
	"testing"
)

// edgeKey is (src, dst).
type edgeKey [2]uint64

// oracle is the independent model the store is checked against: a plain map
// of live out-edges with their weights, updated op by op.
type oracle map[edgeKey]float64

func (o oracle) clone() oracle {
	c := make(oracle, len(o))
	for k, v := range o {
		c[k] = v
	}
	return c
}

// applyOps applies ops in order with the documented semantics.
func (o oracle) applyOps(ops []core.Op) {
	for _, p := range ops {
		switch p.Kind {
		case core.OpUpsert:
			o[edgeKey{p.Src, p.Dst}] = p.Weight
		case core.OpDeleteEdge:
			delete(o, edgeKey{p.Src, p.Dst})
		case core.OpDeleteVertex:
			for k := range o {
				if k[0] == p.Src || k[1] == p.Src {
					delete(o, k)
				}
			}
		}
	}
}

// reversed returns the in-edge view: (dst, src) -> weight.
func (o oracle) reversed() oracle {
	r := make(oracle, len(o))
	for k, v := range o {
		r[edgeKey{k[1], k[0]}] = v
	}
	return r
}

// scanAll reads every edge of the snapshot in dir through Scan with a small
// buffer so that many calls and resumptions happen.
func scanAll(t testing.TB, sn *Snapshot, dir Direction) oracle {
	t.Helper()
	got := oracle{}
	buf := NewScanBuffer(7, 50, true)
	lo, hi := uint64(0), sn.VertexBound()
	prev := int64(-1)
	for lo < hi {
		next, err := sn.Scan(lo, hi, dir, buf)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		for i := 0; i < buf.Len(); i++ {
			v := buf.Vertices[i]
			if int64(v) <= prev {
				t.Fatalf("scan vertices not increasing: %d after %d", v, prev)
			}
			prev = int64(v)
			ns := buf.Neighbors(i)
			if len(ns) == 0 {
				t.Fatalf("scan reported vertex %d with no edges", v)
			}
			for j, d := range ns {
				if j > 0 && d <= ns[j-1] {
					t.Fatalf("neighbors of %d not strictly sorted: %v", v, ns)
				}
				got[edgeKey{v, d}] = buf.Weights[int(buf.Offsets[i])+j]
			}
		}
		if next <= lo && buf.Len() == 0 {
			t.Fatalf("scan made no progress at %d", lo)
		}
		lo = next
	}
	return got
}

func diffOracle(want, got oracle) string {
	var out []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("missing %v (w=%v)", k, v))
		} else if g != v {
			out = append(out, fmt.Sprintf("weight of %v: got %v want %v", k, g, v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("unexpected %v", k))
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... %d more", len(out)-10))
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}

// checkSnapshot compares a snapshot with the oracle through Scan, and
// through Degree and Neighbors for the given vertices.
func checkSnapshot(t testing.TB, sn *Snapshot, want oracle, inEdges bool, probe []uint64) {
	t.Helper()
	if d := diffOracle(want, scanAll(t, sn, Out)); d != "" {
		t.Fatalf("snapshot seq %d out-edges differ from oracle: %s", sn.Seq(), d)
	}
	adj := want.adjacency()
	var rev oracle
	var radj map[uint64][]uint64
	if inEdges {
		rev = want.reversed()
		radj = rev.adjacency()
		if d := diffOracle(rev, scanAll(t, sn, In)); d != "" {
			t.Fatalf("snapshot seq %d in-edges differ from oracle: %s", sn.Seq(), d)
		}
	}
	for _, v := range probe {
		checkVertex(t, sn, want, adj, Out, v)
		checkLookups(t, sn, want, adj, v)
		if inEdges {
			checkVertex(t, sn, rev, radj, In, v)
		}
	}
	checkGather(t, sn, want, adj, Out)
	if inEdges {
		checkGather(t, sn, rev, radj, In)
	}
}

// adjacency is the oracle's edges by source, each list sorted: what a
// read of the source's neighbors must return.
func (o oracle) adjacency() map[uint64][]uint64 {
	adj := map[uint64][]uint64{}
	for k := range o {
		adj[k[0]] = append(adj[k[0]], k[1])
	}
	for _, l := range adj {
		slices.Sort(l)
	}
	return adj
}

// checkGather reads every vertex below the snapshot's bound, in reverse
// order, through Gather with a tiny buffer (many calls, growth for big
// vertices) and compares each list with the oracle (adj is its adjacency).
func checkGather(t testing.TB, sn *Snapshot, want oracle, adj map[uint64][]uint64, dir Direction) {
	t.Helper()
	var vids []uint64
	for v := sn.VertexBound(); v > 0; v-- {
		vids = append(vids, v-1)
	}
	buf := NewGatherBuffer(3, true)
	for len(vids) > 0 {
		done, err := sn.Gather(vids, dir, buf)
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		if done == 0 {
			t.Fatalf("gather made no progress at vertex %d", vids[0])
		}
		for i := 0; i < done; i++ {
			v := vids[i]
			e := adj[v]
			got := buf.Neighbors(i)
			if !slices.Equal(got, e) {
				t.Fatalf("seq %d dir %d gather(%d) = %v, want %v", sn.Seq(), dir, v, got, e)
			}
			for j, d := range got {
				if w := want[edgeKey{v, d}]; buf.Weights[int(buf.Offsets[i])+j] != w {
					t.Fatalf("gathered weight of (%d,%d) = %v want %v", v, d, buf.Weights[int(buf.Offsets[i])+j], w)
				}
			}
		}
		vids = vids[done:]
	}
}

func checkVertex(t testing.TB, sn *Snapshot, want oracle, adj map[uint64][]uint64, dir Direction, v uint64) {
	t.Helper()
	exp := adj[v]
	got, ws, err := sn.Neighbors(v, dir, make([]uint64, 0, 2), []float64{})
	if err != nil {
		t.Fatalf("neighbors(%d): %v", v, err)
	}
	if !slices.Equal(got, exp) {
		t.Fatalf("seq %d dir %d neighbors(%d) = %v, want %v", sn.Seq(), dir, v, got, exp)
	}
	for i, d := range got {
		if w := want[edgeKey{v, d}]; ws[i] != w {
			t.Fatalf("weight of (%d,%d) = %v want %v", v, d, ws[i], w)
		}
	}
	deg, err := sn.Degree(v, dir)
	if err != nil {
		t.Fatalf("degree(%d): %v", v, err)
	}
	if deg != uint64(len(exp)) {
		t.Fatalf("seq %d degree(%d) = %d want %d", sn.Seq(), v, deg, len(exp))
	}
}

// checkLookups looks up the edge from v to each of its out-neighbors in
// want and to as many vertices it has no edge to (the ids just past them,
// and the bound), and compares each with want.
func checkLookups(t testing.TB, sn *Snapshot, want oracle, adj map[uint64][]uint64, v uint64) {
	t.Helper()
	dsts := []uint64{sn.VertexBound(), 0}
	for _, d := range adj[v] {
		dsts = append(dsts, d, d+1)
	}
	// The same lookups as one batch (EdgeCounts).
	srcs, counts := make([]uint64, len(dsts)), make([]uint32, len(dsts))
	for i := range srcs {
		srcs[i] = v
	}
	if err := sn.EdgeCounts(srcs, dsts, counts); err != nil {
		t.Fatalf("edge counts of %d: %v", v, err)
	}
	for i, d := range dsts {
		wantN := uint32(0)
		if _, ok := want[edgeKey{v, d}]; ok {
			wantN = 1
		}
		if counts[i] != wantN {
			t.Fatalf("seq %d edge counts (%d, %d) = %d, want %d", sn.Seq(), v, d, counts[i], wantN)
		}
	}
	for _, d := range dsts {
		w, ok := want[edgeKey{v, d}]
		c, err := sn.Edge(v, d)
		switch {
		case err != nil:
			t.Fatalf("edge(%d, %d): %v", v, d, err)
		case ok && (len(c.Weights) != 1 || c.Weights[0] != w || c.Types[0] != 0):
			t.Fatalf("seq %d edge(%d, %d) = %+v, want weight %v", sn.Seq(), v, d, c, w)
		case !ok && len(c.Weights) != 0:
			t.Fatalf("seq %d edge(%d, %d) = %+v, want none", sn.Seq(), v, d, c)
		}
	}
}
