package analytics

import (
	"context"
	"slices"
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// degree raises an alert when a vertex's degree (out, in or both) comes to
// exceed the threshold, and re-arms when it falls back to it or below.
// INVARIANT (between calls): above holds exactly the vertices whose degree
// in the graph at seq exceeds the threshold.
type degree struct {
	spec   Spec
	alerts func([]Alert)

	mu    sync.RWMutex
	above map[uint64]uint64 // vertex -> degree; Protected by mu.
	seq   uint64            // Protected by mu.
}

func newDegree(s Spec, alerts func([]Alert)) *degree {
	return &degree{spec: s, alerts: alerts, above: map[uint64]uint64{}}
}

func (a *degree) Spec() Spec { return a.spec }

func (a *degree) Seq() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seq
}

func (a *degree) dirs() []engine.Direction {
	switch a.spec.Direction {
	case "in":
		return []engine.Direction{engine.In}
	case "both":
		return []engine.Direction{engine.Out, engine.In}
	}
	return []engine.Direction{engine.Out}
}

// Recompute finds every vertex above the threshold. It raises no alerts:
// those are for crossings seen by updates.
func (a *degree) Recompute(ctx context.Context, g views.Graph) error {
	deg := map[uint64]uint64{}
	for _, dir := range a.dirs() {
		err := g.Each(dir, false, func(v uint64, nb []uint64, _ []float64) { deg[v] += uint64(len(nb)) })
		if err != nil {
			return err
		}
	}
	above := map[uint64]uint64{}
	for v, d := range deg {
		if float64(d) > a.spec.Threshold {
			above[v] = d
		}
	}
	a.mu.Lock()
	a.above, a.seq = above, g.Seq()
	a.mu.Unlock()
	return ctx.Err()
}

func (a *degree) Update(ctx context.Context, u *views.Update) (bool, error) {
	if u.All {
		// The changed set is unknown: rescan, and alert for vertices that
		// were not above before.
		a.mu.RLock()
		before := a.above
		a.mu.RUnlock()
		if err := a.Recompute(ctx, u.View); err != nil {
			return true, err
		}
		var al []Alert
		a.mu.RLock()
		for v, d := range a.above {
			if _, was := before[v]; !was {
				al = append(al, a.alert(v, d, u.View.Seq()))
			}
		}
		a.mu.RUnlock()
		a.publish(al)
		return true, nil
	}
	deg := make([]uint64, len(u.Changed))
	for _, dir := range a.dirs() {
		err := u.View.GatherEach(u.Changed, dir, false, func(i int, nb []uint64, _ []float64) { deg[i] += uint64(len(nb)) })
		if err != nil {
			return false, err
		}
	}
	var al []Alert
	a.mu.Lock()
	for i, v := range u.Changed {
		_, was := a.above[v]
		if now := float64(deg[i]) > a.spec.Threshold; now {
			a.above[v] = deg[i]
			if !was {
				al = append(al, a.alert(v, deg[i], u.View.Seq()))
			}
		} else if was {
			delete(a.above, v)
		}
	}
	a.mu.Unlock()
	// INVARIANT: the seq moves only once the alerts of the operations up
	// to it are handed over (a reader, or a checkpoint, that sees the seq
	// sees them).
	a.publish(al)
	a.mu.Lock()
	a.seq = u.View.Seq()
	a.mu.Unlock()
	return false, nil
}

func (a *degree) alert(v, d, seq uint64) Alert {
	return Alert{Analytic: a.spec.Name, Kind: "degree", Seq: seq, Vertex: v, Value: float64(d), Threshold: a.spec.Threshold}
}

func (a *degree) publish(al []Alert) {
	if len(al) > 0 && a.alerts != nil {
		slices.SortFunc(al, func(x, y Alert) int { return cmpU64(x.Vertex, y.Vertex) })
		a.alerts(al)
	}
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

// windowCounter counts upserts per vertex (by source or by destination)
// over a window's worth of operations, and reports vertices whose count
// comes to exceed a threshold. Not safe for concurrent use.
type windowCounter struct {
	byDst     bool
	threshold float64
	count     map[uint64]uint64
	above     map[uint64]bool
}

func newWindowCounter(byDst bool, thr float64) *windowCounter {
	return &windowCounter{byDst: byDst, threshold: thr, count: map[uint64]uint64{}, above: map[uint64]bool{}}
}

func (c *windowCounter) key(e views.Edge) uint64 {
	if c.byDst {
		return e.Op.Dst
	}
	return e.Op.Src
}

// crossing is a vertex that crossed above the threshold, with its count,
// and the upsert that took it above.
type crossing struct {
	VertexValue
	by views.Edge
}

// apply adds the new operations and removes the expired ones, then returns
// (sorted) the vertices that crossed above the threshold, each credited to
// the first upsert of the pull that took its count above (the counts only
// fall after the new ones are in, so one did).
func (c *windowCounter) apply(added, expired []views.Edge) []crossing {
	touched := map[uint64]bool{}
	by := map[uint64]views.Edge{}
	for _, e := range added {
		if e.Op.Kind == engine.OpUpsert {
			k := c.key(e)
			c.count[k]++
			touched[k] = true
			if _, ok := by[k]; !ok && float64(c.count[k]) > c.threshold && !c.above[k] {
				by[k] = e
			}
		}
	}
	for _, e := range expired {
		if e.Op.Kind == engine.OpUpsert {
			k := c.key(e)
			if c.count[k]--; c.count[k] == 0 {
				delete(c.count, k)
			}
			touched[k] = true
		}
	}
	var out []crossing
	for v := range touched {
		n := c.count[v]
		if float64(n) > c.threshold {
			if !c.above[v] {
				c.above[v] = true
				out = append(out, crossing{VertexValue{v, float64(n)}, by[v]})
			}
		} else {
			delete(c.above, v)
		}
	}
	slices.SortFunc(out, func(x, y crossing) int { return cmpU64(x.Vertex, y.Vertex) })
	return out
}

func (c *windowCounter) reset() {
	clear(c.count)
	clear(c.above)
}

func (c *windowCounter) aboveCounts() map[uint64]uint64 { return countsOf(c.above, c.count) }

// countsOf is count restricted to the vertices of above.
func countsOf(above map[uint64]bool, count map[uint64]uint64) map[uint64]uint64 {
	m := make(map[uint64]uint64, len(above))
	for v := range above {
		m[v] = count[v]
	}
	return m
}

// fan is the fanin (by destination) or fanout (by source) monitor over a
// stateless stream with a window: it raises an alert when a vertex's
// upserts within the window, as of a pull, come to exceed the threshold.
type fan struct {
	spec   Spec
	alerts func([]Alert)

	mu   sync.RWMutex
	c    *windowCounter // Protected by mu.
	seq  uint64         // Protected by mu.
	late uint64         // operations late for the window (views.StreamBatch.Late). Protected by mu.
}

func newFan(s Spec, alerts func([]Alert)) *fan {
	return &fan{spec: s, alerts: alerts, c: newWindowCounter(s.Type == "fanin", s.Threshold)}
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
	a.mu.Lock()
	crossed := a.c.apply(b.Edges, b.Expired)
	a.late += uint64(len(b.Late))
	a.mu.Unlock()
	if len(crossed) > 0 && a.alerts != nil {
		al := make([]Alert, len(crossed))
		for i, x := range crossed {
			al[i] = Alert{Analytic: a.spec.Name, Kind: a.kind(), Seq: b.Seq, Vertex: x.Vertex, Value: x.Value, Threshold: a.spec.Threshold,
				Ref: x.by.Ref, EventTime: x.by.Op.Time()}
		}
		a.alerts(al)
	}
	// INVARIANT: the seq moves only once the alerts up to it are handed
	// over (see degree.Update).
	a.mu.Lock()
	a.seq = b.Seq
	a.mu.Unlock()
}

func (a *fan) Reset() {
	a.mu.Lock()
	a.c.reset()
	a.mu.Unlock()
}

func (a *fan) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	s := summarize(a.seq, a.spec.Threshold, a.c.aboveCounts())
	s.Late = a.late
	return s
}

func (a *fan) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	n, ok := a.c.count[v]
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

func (c *windowCounter) bytes() int64 { return mapEntryBytes * int64(len(c.count)+len(c.above)) }

// MemoryBytes is the size of the window's counts.
func (a *fan) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.c.bytes()
}
