package analytics

import (
	"context"
	"slices"
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// degree raises an alert when an operation takes a vertex's degree (out,
// in or both: out plus in) above the threshold, and re-arms the vertex
// when its degree falls back to the threshold or below. It follows the
// Manager's topology (TopoAnalytic, with Presence), so a degree is the
// number of distinct neighbors in the simple graph every graph analytic
// reads, and its state checkpoints with the topology.
//
// It decides operation by operation, in log order: each upsert that adds
// an edge, each delete that removes one (a vertex delete's expansion
// included) moves its endpoints' degrees by one, and the upsert that
// takes a vertex above raises its alert, naming that operation's record.
// So the alerts depend on the operations only, not on how pulls cut them
// (a partial pull included): a replay after a restart raises the same
// alerts (exactly once, with the alert sinks' checkpoint).
//
// INVARIANT (between calls): deg holds, over ids, each index's degree in
// the graph at seq; above holds exactly the vertices whose degree exceeds
// the threshold, each with its degree.
type degree struct {
	spec              Spec
	alerts            func([]Alert)
	countOut, countIn bool // which lists count

	mu    sync.RWMutex
	ids   views.IDSpace     // Protected by mu.
	deg   []int32           // Protected by mu.
	above map[uint64]uint64 // vertex -> degree; Protected by mu.
	seq   uint64            // Protected by mu.
	// computed: a state exists (a compute or a checkpoint's). Protected
	// by mu.
	computed bool
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

// Recompute takes every degree from g. The first raises no alerts (they
// are for crossings operations make); a later one (its stream lost
// operations, so which made a vertex cross is unknown) raises one, naming
// no operation, for each vertex above now that was not before.
func (a *degree) Recompute(ctx context.Context, g *views.Topo) error {
	deg := make([]int32, g.Len())
	above := map[uint64]uint64{}
	for i := range int32(g.Bound()) {
		var d int32
		if a.countOut {
			d += g.Out.Deg(i)
		}
		if a.countIn {
			d += g.In.Deg(i)
		}
		deg[i] = d
		if float64(d) > a.spec.Threshold {
			above[g.IDs.ID(int(i))] = uint64(d)
		}
	}
	var al []Alert
	a.mu.Lock()
	if a.computed {
		for v, d := range above {
			if _, was := a.above[v]; !was {
				al = append(al, Alert{Analytic: a.spec.Name, Kind: "degree", Seq: g.Seq, Vertex: v, Value: float64(d), Threshold: a.spec.Threshold})
			}
		}
	}
	a.ids, a.deg, a.above, a.computed = g.IDs, deg, above, true
	a.mu.Unlock()
	if len(al) > 0 && a.alerts != nil {
		slices.SortFunc(al, func(x, y Alert) int { return cmpU64(x.Vertex, y.Vertex) })
		a.alerts(al)
	}
	// INVARIANT: the seq moves only once the alerts are handed over.
	a.mu.Lock()
	a.seq = g.Seq
	a.mu.Unlock()
	return ctx.Err()
}

// Update without what was there before each operation cannot tell which
// changed a degree: the registry calls UpdatePrior (its stream has
// Presence).
func (a *degree) Update(ctx context.Context, g *views.Topo, _ []views.Edge) (bool, error) {
	return true, a.Recompute(ctx, g)
}

// UpdatePrior applies one pull's operations, in order, to the degrees:
// never reading g's (a partial pull's g is ahead of its operations).
func (a *degree) UpdatePrior(ctx context.Context, u *views.TopoUpdate) (bool, error) {
	g, edges, prior := u.G, u.Edges, u.Prior
	if len(prior) != len(edges) {
		return true, a.Recompute(ctx, g)
	}
	var al []Alert
	bad := false
	a.mu.Lock()
	if a.ids != g.IDs {
		a.deg, a.ids = repair.Resize(a.deg, a.ids, g.IDs, 0), g.IDs
	}
	check := func(x int32, e views.Edge) {
		n := a.deg[x]
		if n < 0 {
			bad = true // cannot be: recompute
			return
		}
		v := g.IDs.ID(int(x))
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
	for k, e := range edges {
		// What the operation does to its endpoints' degrees: +1 (an
		// upsert of an absent edge), -1 (a delete of a present one, or an
		// expansion) or nothing.
		var d int32
		switch op := e.Op.Kind; {
		case prior[k] == views.VertexOp:
		case op == engine.OpUpsert && prior[k] == views.WasAbsent:
			d = 1
		case op == engine.OpDeleteEdge && prior[k] != views.WasAbsent:
			d = -1
		}
		if d == 0 {
			continue
		}
		x, ok1 := g.IDs.Index(e.Op.Src)
		y, ok2 := g.IDs.Index(e.Op.Dst)
		if !ok1 || !ok2 || x >= len(a.deg) || y >= len(a.deg) {
			bad = true // an edge the topology added or removed has both ends
			break
		}
		i, j := int32(x), int32(y)
		// Source first; a self-loop's one vertex once.
		if a.countOut {
			a.deg[i] += d
		}
		if a.countIn {
			a.deg[j] += d
		}
		if a.countOut {
			check(i, e)
		}
		if a.countIn && (!a.countOut || j != i) {
			check(j, e)
		}
	}
	a.mu.Unlock()
	if bad {
		return true, a.Recompute(ctx, g)
	}
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
	vals := make([]VertexValue, 0, len(above))
	for v, d := range above {
		vals = append(vals, VertexValue{v, float64(d)})
	}
	return summarizeValues(seq, thr, vals)
}

// summarizeValues is the summary of the vertices above the threshold,
// with their values (vals, which it sorts).
func summarizeValues(seq uint64, thr float64, vals []VertexValue) MonitorSummary {
	s := MonitorSummary{Seq: seq, Threshold: thr, Above: len(vals)}
	if len(vals) > 0 {
		s.Top = vals
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
		s.Top = slices.Clip(s.Top[:10])
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

// fan is the fanin (by destination) or fanout (by source) monitor: it
// raises an alert when an upsert takes a vertex's measure over the window
// (its events, distinct counterparties or amount) above the threshold
// (fanWindow: one operation at a time, so that a replay raises the same
// alerts, each naming its upsert, with the window's events as evidence).
// It reads a plain stream view without a window: the window is its own,
// which a checkpoint keeps.
type fan struct {
	spec   Spec
	alerts func([]Alert)

	mu  sync.RWMutex
	win *fanWindow // Protected by mu.
	seq uint64     // Protected by mu.
}

func newFan(s Spec, alerts func([]Alert)) *fan {
	return &fan{spec: s, alerts: alerts, win: newFanWindow(fanConfigOf(s))}
}

func (a *fan) Spec() Spec { return a.spec }

func (a *fan) Seq() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seq
}

func (a *fan) Consume(b *views.StreamBatch) {
	out := newAlertBatch(a.alerts, handOverBytes) // handed over as they come (as fraud's)
	var al []Alert
	a.mu.Lock()
	for i, e := range b.Edges {
		if i%warmAhead == 0 {
			a.win.warm(b.Edges[i:min(i+warmAhead, len(b.Edges))])
		}
		al = windowAlerts(a.win, a.spec.Name, e, &a.mu, out, al)
	}
	a.mu.Unlock()
	out.flush()
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
	s := summarizeValues(a.seq, a.spec.Threshold, a.win.aboveValues())
	s.Late = a.win.win.Late()
	return s
}

func (a *fan) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.win.value(v)
}

// mapEntryBytes is what one entry of a map of uint64 keys costs, overhead
// included (rounded up).
const mapEntryBytes = 48

// MemoryBytes is the size of the degrees and of the map of those above.
func (a *degree) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return mapEntryBytes*int64(len(a.above)) + repair.SliceBytes(a.deg)
}

// MemoryBytes is the size of the window and its counts.
func (a *fan) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.win.bytes()
}
