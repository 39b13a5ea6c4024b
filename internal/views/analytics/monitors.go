package analytics

import (
	"context"
	"slices"
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// degree raises an alert when an operation takes a vertex's degree (out,
// in or both: out plus in) above the threshold, and re-arms the vertex
// when its degree falls back to the threshold or below. It follows the
// Manager's topology (TopoAnalytic, with Presence), so a degree is the
// number of distinct neighbors in the simple graph every graph analytic
// reads, read in O(1), and its state checkpoints with the topology.
//
// It decides operation by operation, in log order: each upsert that adds
// an edge, each delete that removes one (a vertex delete's expansion
// included) moves its endpoints' degrees by one, and the upsert that
// takes a vertex above raises its alert, naming that operation's record.
// So the alerts depend on the operations only, not on how pulls cut them:
// a replay after a restart raises the same alerts (exactly once, with the
// alert sinks' checkpoint).
//
// INVARIANT (between calls): above holds exactly the vertices whose degree
// in the graph at seq exceeds the threshold, each with its degree.
type degree struct {
	spec              Spec
	alerts            func([]Alert)
	countOut, countIn bool // which lists count

	mu    sync.RWMutex
	above map[uint64]uint64 // vertex -> degree; Protected by mu.
	seq   uint64            // Protected by mu.
}

func newDegree(s Spec, alerts func([]Alert)) *degree {
	return &degree{spec: s, alerts: alerts, above: map[uint64]uint64{},
		countOut: s.Direction != "in", countIn: s.Direction == "in" || s.Direction == "both"}
}

func (a *degree) Spec() Spec { return a.spec }

func (a *degree) Seq() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seq
}

// deg is vertex index i's degree in g.
func (a *degree) deg(g *views.Topo, i int32) uint64 {
	var d uint64
	if a.countOut {
		d += uint64(g.Out.Deg(i))
	}
	if a.countIn {
		d += uint64(g.In.Deg(i))
	}
	return d
}

// Recompute finds every vertex above the threshold. It raises no alerts:
// those are for crossings that operations make.
func (a *degree) Recompute(ctx context.Context, g *views.Topo) error {
	above := map[uint64]uint64{}
	for i := range int32(g.Bound()) {
		if d := a.deg(g, i); float64(d) > a.spec.Threshold {
			above[g.IDs.ID(int(i))] = d
		}
	}
	a.mu.Lock()
	a.above, a.seq = above, g.Seq
	a.mu.Unlock()
	return ctx.Err()
}

// Update without what was there before each operation cannot tell which
// changed a degree: the registry calls UpdatePrior (its stream has
// Presence).
func (a *degree) Update(ctx context.Context, g *views.Topo, _ []views.Edge) (bool, error) {
	return true, a.Recompute(ctx, g)
}

// UpdatePrior applies one pull: the degrees after it are g's; walking the
// operations back from them gives each touched vertex's degree before the
// pull, and walking forward again finds, operation by operation, the
// upserts that take a vertex above.
func (a *degree) UpdatePrior(ctx context.Context, u *views.TopoUpdate) (bool, error) {
	g, edges, prior := u.G, u.Edges, u.Prior
	if len(prior) != len(edges) {
		return true, a.Recompute(ctx, g)
	}
	// step is what operation k does to the degrees of its endpoints: +1
	// (an upsert of an absent edge), -1 (a delete of a present one, or an
	// expansion) or 0.
	step := func(k int) int64 {
		switch op := edges[k].Op.Kind; {
		case prior[k] == views.VertexOp:
			return 0
		case op == engine.OpUpsert && prior[k] == views.WasAbsent:
			return 1
		case op == engine.OpDeleteEdge && prior[k] != views.WasAbsent:
			return -1
		}
		return 0
	}
	// deg: each touched vertex's degree, first after the pull (g's), then
	// walked back to before it.
	deg := map[uint64]int64{}
	touch := func(v uint64) {
		if _, ok := deg[v]; !ok {
			var d int64
			if i, ok := g.IDs.Index(v); ok && i < g.Len() {
				d = int64(a.deg(g, int32(i)))
			}
			deg[v] = d
		}
	}
	for k, e := range edges {
		if step(k) != 0 {
			touch(e.Op.Src)
			touch(e.Op.Dst)
		}
	}
	for k := len(edges) - 1; k >= 0; k-- {
		if d := step(k); d != 0 {
			a.move(deg, edges[k].Op, -d)
		}
	}
	var al []Alert
	a.mu.Lock()
	for k, e := range edges {
		d := step(k)
		if d == 0 {
			continue
		}
		for _, v := range a.move(deg, e.Op, d) {
			n := deg[v]
			_, was := a.above[v]
			switch now := float64(n) > a.spec.Threshold; {
			case now && !was:
				a.above[v] = uint64(n)
				al = append(al, Alert{Analytic: a.spec.Name, Kind: "degree", Seq: e.Seq, Vertex: v, Value: float64(n),
					Threshold: a.spec.Threshold, Ref: e.Ref, EventTime: e.Op.Time()})
			case now:
				a.above[v] = uint64(n)
			case was:
				delete(a.above, v)
			}
		}
	}
	a.mu.Unlock()
	if len(al) > 0 && a.alerts != nil {
		a.alerts(al)
	}
	// INVARIANT: the seq moves only once the alerts of the operations up
	// to it are handed over (a reader, or a checkpoint, that sees the seq
	// sees them).
	a.mu.Lock()
	a.seq = u.Seq
	a.mu.Unlock()
	return false, ctx.Err()
}

// move adds d to the degrees op's edge counts in (its source's out-degree,
// its destination's in-degree, as the direction counts them) and returns
// the vertices whose degree it moved, source first (one for a self-loop).
func (a *degree) move(deg map[uint64]int64, op engine.Op, d int64) []uint64 {
	var vs []uint64
	if a.countOut {
		deg[op.Src] += d
		vs = append(vs, op.Src)
	}
	if a.countIn {
		deg[op.Dst] += d
		if len(vs) == 0 || op.Dst != op.Src {
			vs = append(vs, op.Dst)
		}
	}
	return vs
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MonitorSummary is the result of the degree, fanin and fanout monitors.
type MonitorSummary struct {
	Seq       uint64        `json:"seq"`
	Threshold float64       `json:"threshold"`
	Above     int           `json:"above"` // vertices above the threshold now
	Top       []VertexValue `json:"top"`   // the 10 highest of them
	// Late counts the operations that came too late for a window of a
	// duration (views.Window): counted here, never in the window.
	Late uint64 `json:"late,omitempty"`
}

// VertexValue is a vertex with its monitored value.
type VertexValue struct {
	Vertex uint64  `json:"vertex"`
	Value  float64 `json:"value"`
}

func summarize(seq uint64, thr float64, above map[uint64]uint64) MonitorSummary {
	s := MonitorSummary{Seq: seq, Threshold: thr, Above: len(above)}
	for v, d := range above {
		s.Top = append(s.Top, VertexValue{v, float64(d)})
	}
	slices.SortFunc(s.Top, func(x, y VertexValue) int {
		if x.Value != y.Value {
			if x.Value > y.Value {
				return -1
			}
			return 1
		}
		return cmpU64(x.Vertex, y.Vertex)
	})
	if len(s.Top) > 10 {
		s.Top = s.Top[:10]
	}
	return s
}

func (a *degree) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return summarize(a.seq, a.spec.Threshold, a.above)
}

func (a *degree) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	d, ok := a.above[v]
	return VertexValue{v, float64(d)}, ok
}

// countsOf is count restricted to the vertices of above.
func countsOf(above map[uint64]bool, count map[uint64]uint64) map[uint64]uint64 {
	m := make(map[uint64]uint64, len(above))
	for v := range above {
		m[v] = count[v]
	}
	return m
}

// fan is the fanin (by destination) or fanout (by source) monitor: it
// raises an alert when an upsert takes a vertex's upserts within the
// window above the threshold (fanWindow: one operation at a time, so
// that a replay raises the same alerts, each naming its upsert). It reads
// a plain stream view without a window: the window is its own, which a
// checkpoint keeps.
type fan struct {
	spec   Spec
	alerts func([]Alert)

	mu  sync.RWMutex
	win *fanWindow // Protected by mu.
	seq uint64     // Protected by mu.
}

func newFan(s Spec, alerts func([]Alert)) *fan {
	cfg := views.Window{Edges: s.WindowEdges, Duration: s.WindowDuration, Lateness: s.Lateness}
	return &fan{spec: s, alerts: alerts, win: newFanWindow(cfg, s.Type == "fanin", s.Threshold)}
}

func (a *fan) Spec() Spec { return a.spec }

func (a *fan) Seq() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seq
}

func (a *fan) kind() string {
	if a.spec.Type == "fanin" {
		return "fan_in"
	}
	return "fan_out"
}

func (a *fan) Consume(b *views.StreamBatch) {
	var al []Alert
	a.mu.Lock()
	for _, e := range b.Edges {
		if x, ok := a.win.add(e); ok {
			al = append(al, Alert{Analytic: a.spec.Name, Kind: a.kind(), Seq: e.Seq, Vertex: x.Vertex, Value: x.Value,
				Threshold: a.spec.Threshold, Ref: e.Ref, EventTime: e.Op.Time()})
		}
	}
	a.mu.Unlock()
	if len(al) > 0 && a.alerts != nil {
		a.alerts(al)
	}
	// INVARIANT: the seq moves only once the alerts up to it are handed
	// over (see degree.UpdatePrior).
	a.mu.Lock()
	a.seq = b.Seq
	a.mu.Unlock()
}

func (a *fan) Reset() {
	a.mu.Lock()
	a.win.reset()
	a.mu.Unlock()
}

func (a *fan) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	s := summarize(a.seq, a.spec.Threshold, a.win.aboveCounts())
	s.Late = a.win.win.Late()
	return s
}

func (a *fan) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	n, ok := a.win.count[v]
	return VertexValue{v, float64(n)}, ok
}

// mapEntryBytes is what one entry of a map of uint64 keys costs, overhead
// included (rounded up).
const mapEntryBytes = 48

// MemoryBytes is the size of the degree map.
func (a *degree) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return mapEntryBytes * int64(len(a.above))
}

// MemoryBytes is the size of the window and its counts.
func (a *fan) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.win.bytes()
}
