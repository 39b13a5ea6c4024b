package graphtide

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Register registers a built-in analytic, given by its typed options
// (BFS{Root: 1}, FanIn{Threshold: 200, Window: time.Minute}, ...) or by
// a Spec, and returns its name. It starts following every batch applied
// from now on; Result says when its first result is ready. An option out
// of its range is refused with an *OptionError naming it and the range;
// a name in use with an error matching ErrAnalyticExists.
func (db *DB) Register(a BuiltIn) (string, error) {
	if db.closed.Load() {
		return "", ErrClosed
	}
	s, err := a.spec()
	if err == nil {
		s, err = db.reg.Register(s)
	}
	err = db.err(err)
	var oe *OptionError
	if k, ok := a.(interface{ rootKey() string }); ok && k.rootKey() != "" && errors.As(err, &oe) && oe.Option == "root" {
		oe.Field = "RootKey" // the root was given by its key
	}
	return s.Name, err
}

// Unregister stops an analytic and forgets it (ErrUnknownAnalytic when
// there is none of that name).
func (db *DB) Unregister(name string) error { return db.err(db.reg.Unregister(name)) }

// Result is an analytic's current result.
type Result struct {
	Name string // the name it was registered under
	// Type is its type: bfs, wcc, pagerank, sssp, degree, fanin, fanout,
	// fraud, or custom for an Analytic of your own.
	Type       string
	Ready      bool   // its first full compute has finished
	Seq        uint64 // the sequence number it corresponds to
	Updates    uint64 // incremental updates so far
	Recomputes uint64 // full computes so far (the first one included)
	Error      string // the last error, if any
	// Summary is the result itself, by Type: a BFSSummary, WCCSummary,
	// PageRankSummary, SSSPSummary, MonitorSummary (degree, fanin,
	// fanout) or FraudSummary; for an Analytic of your own, what its
	// Result returns. Nil until Ready.
	Summary any
}

// BFSSummary is the Summary of a bfs analytic.
type BFSSummary struct {
	Root     uint64 `json:"root"`      // the root vertex
	RootKey  string `json:"root_key"`  // its string key ("" when it has none)
	Seq      uint64 `json:"seq"`       // the sequence number it is at
	Reached  int    `json:"reached"`   // vertices at a finite level, the root included
	MaxLevel int    `json:"max_level"` // the deepest level reached
	Levels   []int  `json:"levels"`    // Levels[l] is the number of vertices at level l
}

// WCCSummary is the Summary of a wcc analytic.
type WCCSummary struct {
	Seq        uint64 `json:"seq"`        // the sequence number it is at
	Components int    `json:"components"` // components of two or more vertices
	Largest    int    `json:"largest"`    // vertices of the largest component
}

// PageRankSummary is the Summary of a pagerank analytic.
type PageRankSummary struct {
	Seq        uint64  `json:"seq"`        // the sequence number it is at
	Vertices   int     `json:"vertices"`   // vertices with an edge (N)
	Iterations int     `json:"iterations"` // of the last full compute
	Delta      float64 `json:"delta"`      // the L1 change of its last iteration
	// Residual bounds the error: the ranks are within about
	// 2*Residual/(1-damping) of the exact ones.
	Residual  float64      `json:"residual"`
	Pushes    int          `json:"pushes"`     // the residual pushes of the last update
	EdgesRead int          `json:"edges_read"` // the edges the last update read
	Top       []VertexRank `json:"top"`        // the 10 highest ranks, highest first
}

// SSSPSummary is the Summary of an sssp analytic.
type SSSPSummary struct {
	Root        uint64  `json:"root"`         // the root vertex
	RootKey     string  `json:"root_key"`     // its string key ("" when it has none)
	Seq         uint64  `json:"seq"`          // the sequence number it is at
	Reached     int     `json:"reached"`      // vertices with a path from the root, the root included
	MaxDistance float64 `json:"max_distance"` // the largest finite distance
	// Error says why the distances are not kept (a negative weight),
	// "" when they are.
	Error string `json:"error,omitempty"`
}

// MonitorSummary is the Summary of the degree, fanin and fanout monitors
// (and FraudSummary's FanIn).
type MonitorSummary struct {
	Seq       uint64        `json:"seq"`       // the sequence number it is at
	Threshold float64       `json:"threshold"` // the monitor's threshold
	Above     int           `json:"above"`     // vertices above the threshold now
	Top       []VertexValue `json:"top"`       // the 10 highest of them, highest first
	// Late counts the operations that came too late for a window of time
	// (see FanIn.Lateness): counted here, never in the window.
	Late uint64 `json:"late"`
}

// RingSummary is a fraud monitor's window of payments: the events it
// holds (those of the last 2*MaxSpan + Lateness), those that came too
// late to be in a ring (more than MaxSpan + Lateness behind the newest),
// and those a full window pushed out early (at most 1,048,576 events and
// half of Fraud.PullMemoryMiB are held).
type RingSummary struct {
	Events  int    `json:"events"`            // payments held
	Late    uint64 `json:"late,omitempty"`    // payments too late to be in a ring
	Dropped uint64 `json:"dropped,omitempty"` // payments a full window pushed out early
}

// FraudSummary is the Summary of a fraud analytic.
type FraudSummary struct {
	Seq           uint64         `json:"seq"`             // the sequence number it is at
	MaxCycle      int            `json:"max_cycle"`       // the longest cycle it reports (Fraud.MaxCycle)
	Cycles        uint64         `json:"cycles"`          // new cycles reported so far (alerts of kind AlertCycle)
	Truncated     uint64         `json:"truncated"`       // searches cut short by Fraud.SearchBudget
	PullsCutShort uint64         `json:"pulls_cut_short"` // pulls cut short by Fraud.PullTimeout or PullMemoryMiB
	Rings         RingSummary    `json:"rings"`           // its window of payments (timed rings; evidence)
	FanIn         MonitorSummary `json:"fan_in"`          // its fan-in monitor
	// Mules counts the vertices raised as mules (AlertMule) that have not
	// re-armed.
	Mules int `json:"mules,omitempty"`
}

// VertexLevel is a bfs analytic's VertexResult.
type VertexLevel struct {
	Level int `json:"level"` // the vertex's level: 0 for the root, -1 when unreached
}

// VertexComponent is a wcc analytic's VertexResult.
type VertexComponent struct {
	Component uint64 `json:"component"` // the smallest vertex id of its component
	Size      int    `json:"size"`      // the vertices of its component
}

// VertexRank is a pagerank analytic's VertexResult, and an entry of
// PageRankSummary.Top.
type VertexRank struct {
	Vertex uint64  `json:"vertex"`        // the vertex
	Key    string  `json:"key,omitempty"` // its string key ("" when it has none)
	Rank   float64 `json:"rank"`          // its rank; the ranks of all vertices sum to 1
}

// VertexDistance is an sssp analytic's VertexResult.
type VertexDistance struct {
	Distance  float64 `json:"distance"`  // the least sum of weights of a path from the root
	Reachable bool    `json:"reachable"` // false: no path (Distance is 0)
}

// VertexValue is a monitor's VertexResult (degree: the degree of a vertex
// above the threshold; fanin, fanout and fraud: its count in the window),
// and an entry of MonitorSummary.Top.
type VertexValue struct {
	Vertex uint64  `json:"vertex"`        // the vertex
	Key    string  `json:"key,omitempty"` // its string key ("" when it has none)
	Value  float64 `json:"value"`         // its degree or count
}

// Result returns the named analytic's result (ErrUnknownAnalytic when
// there is none of that name).
func (db *DB) Result(name string) (Result, error) {
	r, err := db.reg.Result(name)
	if err != nil {
		return Result{}, db.err(err)
	}
	return Result{Name: r.Spec.Name, Type: r.Spec.Type, Ready: r.Ready, Seq: r.Seq, Updates: r.Updates,
		Recomputes: r.Recomputes, Error: r.Error, Summary: db.public(r.Summary)}, nil
}

// Wait waits until the named analytic's result is at seq or later and
// returns it. It returns early with ctx's error, with ErrClosed after
// Close, and with the analytic's error while it has one (an analytic that
// fails recomputes at its next pull). An analytic waits for the operations
// it pulls: one with a BatchSize of N reaches seq only once N operations
// exist past its last pull, and an analytic sees only the batches that
// hold operations.
func (db *DB) Wait(ctx context.Context, name string, seq uint64) (Result, error) {
	for {
		if db.closed.Load() {
			return Result{}, ErrClosed
		}
		r, err := db.Result(name)
		if err != nil || r.Ready && r.Seq >= seq {
			return r, err
		}
		if r.Error != "" {
			return r, fmt.Errorf("analytic %q failed: %s", name, clean(r.Error, db.dir.Keys.Key))
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// VertexResult returns the named analytic's result for vertex v, and
// false when it has none: a VertexLevel (bfs), VertexComponent (wcc),
// VertexRank (pagerank), VertexDistance (sssp) or VertexValue (the
// monitors); for an Analytic of your own, what its VertexResult returns.
func (db *DB) VertexResult(name string, v uint64) (any, bool, error) {
	x, ok, err := db.reg.Vertex(name, v)
	if err != nil {
		return nil, false, db.err(err)
	}
	return db.public(x), ok, nil
}

// public is a built-in's summary or per-vertex result as this package's
// type, vertices named by their keys. A value of another type (an
// Analytic of your own's) is returned as it is.
func (db *DB) public(x any) any {
	key := func(id uint64) string { k, _ := db.dir.Keys.Key(id); return k }
	switch x := x.(type) {
	case analytics.BFSSummary:
		return BFSSummary{Root: x.Root, RootKey: key(x.Root), Seq: x.Seq, Reached: x.Reached, MaxLevel: x.MaxLevel, Levels: x.Levels}
	case analytics.WCCSummary:
		return WCCSummary{Seq: x.Seq, Components: x.Components, Largest: x.Largest}
	case analytics.PageRankSummary:
		s := PageRankSummary{Seq: x.Seq, Vertices: x.Vertices, Iterations: x.Iterations, Delta: x.Delta, Residual: x.Residual,
			Pushes: x.Pushes, EdgesRead: x.EdgesRead}
		for _, r := range x.Top {
			s.Top = append(s.Top, VertexRank{Vertex: r.Vertex, Key: key(r.Vertex), Rank: r.Rank})
		}
		return s
	case analytics.SSSPSummary:
		return SSSPSummary{Root: x.Root, RootKey: key(x.Root), Seq: x.Seq, Reached: x.Reached, MaxDistance: x.MaxDist, Error: x.Error}
	case analytics.MonitorSummary:
		return db.monitorSummary(x)
	case analytics.FraudSummary:
		return FraudSummary{Seq: x.Seq, MaxCycle: x.MaxCycle, Cycles: x.Cycles, Truncated: x.Truncated, PullsCutShort: x.CutShort,
			Rings: RingSummary(x.Rings), FanIn: db.monitorSummary(x.FanIn), Mules: x.Mules}
	case analytics.VertexLevel:
		return VertexLevel{Level: x.Level}
	case analytics.VertexComponent:
		return VertexComponent{Component: x.Component, Size: x.Size}
	case analytics.VertexRank:
		return VertexRank{Vertex: x.Vertex, Key: key(x.Vertex), Rank: x.Rank}
	case analytics.VertexDistance:
		return VertexDistance{Distance: x.Distance, Reachable: x.Reachable}
	case analytics.VertexValue:
		return VertexValue{Vertex: x.Vertex, Key: key(x.Vertex), Value: x.Value}
	}
	return x
}

func (db *DB) monitorSummary(x analytics.MonitorSummary) MonitorSummary {
	s := MonitorSummary{Seq: x.Seq, Threshold: x.Threshold, Above: x.Above, Late: x.Late}
	for _, v := range x.Top {
		k, _ := db.dir.Keys.Key(v.Vertex)
		s.Top = append(s.Top, VertexValue{Vertex: v.Vertex, Key: k, Value: v.Value})
	}
	return s
}

// AlertKind is what an alert reports.
type AlertKind string

// The kinds of alerts.
const (
	// AlertDegree: a vertex's degree rose above a Degree monitor's
	// threshold.
	AlertDegree AlertKind = "degree"
	// AlertFanIn: the edges into a vertex within the window rose above a
	// FanIn's (or a Fraud's) threshold.
	AlertFanIn AlertKind = "fan_in"
	// AlertFanOut: the edges out of a vertex within the window rose
	// above a FanOut's threshold.
	AlertFanOut AlertKind = "fan_out"
	// AlertCycle: a new edge closed a cycle of at most Fraud.MaxCycle
	// edges.
	AlertCycle AlertKind = "cycle"
	// AlertMule: a vertex's window came to hold edges in from
	// Fraud.MuleSenders sources and out to Fraud.MuleReceivers
	// destinations.
	AlertMule AlertKind = "mule"
)

// Alert is one alert a monitor raised.
type Alert struct {
	// ID names the alert: the same trigger (the analytic, the kind, the
	// batch, the vertex or the cycle) gives the same ID.
	ID       string    `json:"id"`
	Analytic string    `json:"analytic"` // the monitor's name
	Kind     AlertKind `json:"kind"`     // what it reports
	Time     time.Time `json:"time"`     // when it was raised
	Seq      uint64    `json:"seq"`      // the sequence number of the batch that raised it
	// Vertex is the vertex it is about (a cycle's: the new edge's
	// source).
	Vertex uint64 `json:"vertex"`
	Key    string `json:"key,omitempty"` // Vertex's string key ("" when it has none)
	// Value is what crossed the threshold: the degree or the count in the
	// window; a cycle's length.
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold,omitempty"` // the threshold it crossed (0 for a cycle)
	// Cycle is a cycle's vertices, v0 -> v1 -> ... -> v0 from the new
	// edge's source (nil for another kind).
	Cycle []uint64 `json:"cycle,omitempty"`
	// CycleKeys are the keys of Cycle's vertices ("" for one without),
	// when some have keys; else nil.
	CycleKeys []string `json:"cycle_keys,omitempty"`
	// EventTime is the event time of the operation that raised it
	// (Batch.SetEventTime); zero when it had none.
	EventTime time.Time `json:"event_time,omitzero"`
	// Evidence is the edges inserted that the alert rests on (a fan-in's,
	// a fan-out's: the window's edges into or out of Vertex; a mule's:
	// both), oldest first in the window's order, the newest of them up to
	// the monitor's Evidence.
	Evidence        []AlertEvent `json:"evidence,omitempty"`
	EvidenceDropped int          `json:"evidence_dropped,omitempty"` // the others, older, left out of Evidence
	// Totals is what the pattern holds in all, the dropped events
	// included (nil for a degree or cycle alert).
	Totals *AlertTotals `json:"totals,omitempty"`
}

// AlertEvent is one edge insert an alert rests on.
type AlertEvent struct {
	Src    uint64 `json:"src"`               // the edge's source
	SrcKey string `json:"src_key,omitempty"` // Src's string key, "" when it has none
	Dst    uint64 `json:"dst"`               // the edge's destination
	DstKey string `json:"dst_key,omitempty"` // Dst's string key
	// Type is the edge's type by name (DB.TypeName).
	Type   string  `json:"type"`
	Amount float64 `json:"amount"` // its weight
	// EventTime is its event time (Batch.SetEventTime); zero when it had
	// none.
	EventTime time.Time `json:"event_time,omitzero"`
	// Ref is its event reference, "" when it had none.
	Ref string `json:"ref,omitempty"`
	// Props is its property document (a JSON object), "" when it had
	// none.
	Props string `json:"props,omitempty"`
	Seq   uint64 `json:"seq"` // the sequence number of the batch that inserted it
}

// AlertTotals is what an alert's pattern holds in all.
type AlertTotals struct {
	Events int     `json:"events"` // its events (edges inserted)
	Amount float64 `json:"amount"` // their amounts summed (a mule's: the money in)
	// Counterparties counts their distinct counterparties: a fan-in's or
	// a mule's sources, a fan-out's destinations.
	Counterparties int     `json:"counterparties,omitempty"`
	AmountOut      float64 `json:"amount_out,omitempty"` // a mule's money out
	Receivers      int     `json:"receivers,omitempty"`  // a mule's distinct destinations
	// First and Last are the event times of its oldest and newest events
	// (for a window of operations only, the first and last inserted).
	First time.Time `json:"first,omitzero"`
	Last  time.Time `json:"last,omitzero"` // see First
}

// Alerts returns up to limit of the newest alerts, oldest first (of the
// named analytic when name is not empty).
func (db *DB) Alerts(name string, limit int) []Alert {
	al, _ := db.reg.Alerts(name, limit)
	out := make([]Alert, len(al))
	for i, a := range al {
		out[i] = Alert{ID: a.ID, Analytic: a.Analytic, Kind: AlertKind(a.Kind), Time: a.Time, Seq: a.Seq, Vertex: a.Vertex,
			Key: a.VertexKey, Value: a.Value, Threshold: a.Threshold, Cycle: a.Cycle, CycleKeys: a.CycleKeys, EventTime: a.EventTime,
			EvidenceDropped: a.EvidenceDropped}
		for _, e := range a.Evidence {
			sk, _ := db.dir.Keys.Key(e.Src)
			dk, _ := db.dir.Keys.Key(e.Dst)
			out[i].Evidence = append(out[i].Evidence, AlertEvent{Src: e.Src, SrcKey: sk, Dst: e.Dst, DstKey: dk, Type: db.TypeName(e.Type),
				Amount: e.Amount, EventTime: e.EventTime, Ref: e.EventRef, Props: e.Props, Seq: e.Seq})
		}
		if t := a.Totals; t != nil {
			out[i].Totals = &AlertTotals{Events: t.Events, Amount: t.Amount, Counterparties: t.Counterparties, AmountOut: t.AmountOut,
				Receivers: t.Receivers, First: t.First, Last: t.Last}
		}
	}
	return out
}
