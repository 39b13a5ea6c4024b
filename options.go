package graphtide

import (
	"strconv"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

// BuiltIn is a built-in analytic and its options, for DB.Register: one of
// BFS, WCC, PageRank, SSSP, Degree, FanIn, FanOut and Fraud, or a Spec.
// Both forms go through one validation: a typed option and the same
// option in a Spec are refused (*OptionError) with the same message.
//
// Every built-in has these options (a zero value takes the default):
//   - Name is the name it is registered under (letters, digits, '-', '_'
//     and '.', at most 128 bytes); default: its type ("bfs", "fanin").
//   - Types, when set, is the edge types it reads, by name (DB.TypeID);
//     default: every type.
//   - BatchSize: it pulls once at least this many new operations exist
//     (1..1000000, default 1). Interval: at most once per Interval
//     (0..1h, default 0: as soon as they exist).
//   - MaxBehind: when more operations than this wait for one pull, bfs
//     and wcc recompute instead of reading them one by one, and the others
//     take them MaxBehind at a time (at least BatchSize, at most 4194304;
//     default 262144).
type BuiltIn interface {
	spec() (analytics.Spec, error)
}

// Spec is a built-in analytic written as serve's --analytic flag takes it:
// key=value pairs separated by commas, "type=bfs,root=acct-1,name=reach"
// (the keys are the typed options' in snake case: batch_size, window,
// max_cycle; several types are separated by '|': types=payment|refund).
type Spec string

func (s Spec) spec() (analytics.Spec, error) { return analytics.ParseSpec(string(s)) }

// BFS keeps the level of every vertex in a breadth-first search from a
// root: Result's Summary is a BFSSummary, VertexResult a VertexLevel.
// Spec form: type=bfs,root=1 (or root=key:acct-1).
type BFS struct {
	Name string // registered under this name; default: the type (see BuiltIn)
	// Root is the root vertex's id (0 is vertex 0), unless RootKey is set.
	Root uint64
	// RootKey is the root vertex's string key (DB.VertexID): a key not
	// yet used gets its id now, and the root is unreached until it has an
	// edge. Set Root or RootKey, not both.
	RootKey   string
	Types     []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize int           // pull once this many operations wait, 1..1000000; default 1
	Interval  time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o BFS) rootKey() string { return o.RootKey }

func (o BFS) spec() (analytics.Spec, error) {
	s := common("bfs", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind)
	return s, rootOf(&s, o.Root, o.RootKey)
}

// WCC keeps the weakly connected components: Result's Summary is a
// WCCSummary, VertexResult a VertexComponent. Spec form: type=wcc.
type WCC struct {
	Name      string        // registered under this name; default: the type (see BuiltIn)
	Types     []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize int           // pull once this many operations wait, 1..1000000; default 1
	Interval  time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o WCC) spec() (analytics.Spec, error) {
	return common("wcc", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind), nil
}

// PageRank keeps every vertex's PageRank: Result's Summary is a
// PageRankSummary, VertexResult a VertexRank. Spec form:
// type=pagerank,damping=0.85.
type PageRank struct {
	Name string // registered under this name; default: the type (see BuiltIn)
	// Damping is the damping factor, in (0, 1); default 0.85.
	Damping float64
	// Tolerance is the L1 change of the ranks at which an update stops,
	// 1e-15..1; default 1e-4 (GAPBS's).
	Tolerance float64
	// MaxIterations is the most iterations of one update, 1..10000;
	// default 100.
	MaxIterations int
	Types         []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize     int           // pull once this many operations wait, 1..1000000; default 1
	Interval      time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind     int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o PageRank) spec() (analytics.Spec, error) {
	s := common("pagerank", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind)
	s.Damping, s.Tolerance, s.MaxIterations = o.Damping, o.Tolerance, o.MaxIterations
	return s, nil
}

// SSSP keeps the shortest-path distance (the sum of the weights) of every
// vertex from a root: Result's Summary is an SSSPSummary, VertexResult a
// VertexDistance. Spec form: type=sssp,root=1.
type SSSP struct {
	Name string // registered under this name; default: the type (see BuiltIn)
	// Root is the root vertex's id, unless RootKey is set (see BFS).
	Root      uint64
	RootKey   string        // the root vertex's string key (see BFS)
	Types     []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize int           // pull once this many operations wait, 1..1000000; default 1
	Interval  time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o SSSP) rootKey() string { return o.RootKey }

func (o SSSP) spec() (analytics.Spec, error) {
	s := common("sssp", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind)
	return s, rootOf(&s, o.Root, o.RootKey)
}

// Degree is a monitor: it raises an alert (kind AlertDegree) when a
// vertex's degree rises above Threshold. Result's Summary is a
// MonitorSummary, VertexResult a VertexValue (of the vertices above the
// threshold). Spec form: type=degree,threshold=100,direction=in.
type Degree struct {
	Name string // registered under this name; default: the type (see BuiltIn)
	// Threshold is the degree to exceed, in (0, 1e15]; required.
	Threshold float64
	// Direction is the degree monitored: "out" (the default), "in" or
	// "both".
	Direction string
	Types     []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize int           // pull once this many operations wait, 1..1000000; default 1
	Interval  time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o Degree) spec() (analytics.Spec, error) {
	s := common("degree", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind)
	s.Threshold, s.Direction = o.Threshold, o.Direction
	return s, nil
}

// FanIn is a monitor: it raises an alert (kind AlertFanIn) when an edge
// inserted into a vertex takes its Measure within a sliding window above
// Threshold; the vertex re-arms once its measure is back at or below it.
// The alert carries the window's events into the vertex (Alert.Evidence)
// and their totals. Result's Summary is a MonitorSummary, VertexResult a
// VertexValue (the measure in the window). Spec form:
// type=fanin,threshold=200,window=1m,measure=senders.
type FanIn struct {
	Name string // registered under this name; default: the type (see BuiltIn)
	// Threshold is the measure to exceed, in (0, 1e15]; required.
	Threshold float64
	// Measure is what the window measures: "events" (the default: the
	// edges inserted), "senders" (their distinct sources; FanOut: their
	// distinct destinations) or "amount" (the sum of their weights).
	Measure string
	// Evidence is the most events an alert carries, 1..1024 (the newest;
	// Alert.EvidenceDropped counts the others); default 32.
	Evidence int
	// Window is the window's length in event time (Batch.SetEventTime;
	// the time of applying for an operation without one), 0..168h;
	// WindowEdges its length in operations, 0..16777216. With both the
	// window holds what is within both; with neither, 10000 operations.
	Window      time.Duration
	WindowEdges int // see Window
	// Lateness is how far behind the newest event time a window of time
	// waits for late operations (0..168h; only with Window).
	Lateness  time.Duration
	Types     []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize int           // pull once this many operations wait, 1..1000000; default 1
	Interval  time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o FanIn) spec() (analytics.Spec, error) {
	s := common("fanin", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind)
	s.Threshold, s.WindowDuration, s.WindowEdges, s.Lateness = o.Threshold, o.Window, o.WindowEdges, o.Lateness
	s.Measure, s.Evidence = o.Measure, o.Evidence
	return s, nil
}

// FanOut is FanIn by source: an alert (kind AlertFanOut) when an edge
// inserted out of a vertex takes its measure within the window above
// Threshold. Spec form: type=fanout,threshold=200,window=1m.
type FanOut struct {
	Name        string        // registered under this name; default: the type (see BuiltIn)
	Threshold   float64       // the measure to exceed, in (0, 1e15]; required
	Measure     string        // events (default), senders (distinct receivers) or amount (see FanIn)
	Evidence    int           // the most events an alert carries, 1..1024; default 32
	Window      time.Duration // the window in event time, 0..168h (see FanIn)
	WindowEdges int           // the window in operations, 0..16777216 (see FanIn)
	Lateness    time.Duration // how long a window of time waits for late operations, 0..168h
	Types       []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize   int           // pull once this many operations wait, 1..1000000; default 1
	Interval    time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind   int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o FanOut) spec() (analytics.Spec, error) {
	s := common("fanout", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind)
	s.Threshold, s.WindowDuration, s.WindowEdges, s.Lateness = o.Threshold, o.Window, o.WindowEdges, o.Lateness
	s.Measure, s.Evidence = o.Measure, o.Evidence
	return s, nil
}

// Fraud is the fraud monitor: an alert (kind AlertCycle) for each ring
// of at most MaxCycle payments (with RingSearch "timed", the default:
// each hop's event time not before the previous one's, all within
// MaxSpan; with "any": each new cycle of the graph a new edge closes),
// (kind AlertFanIn) for a fan-in over Threshold within the window, as
// FanIn, and with
// MuleSenders and MuleReceivers (kind AlertMule) for a vertex whose
// window holds money in from at least MuleSenders senders and out to at
// least MuleReceivers receivers. Result's Summary is a FraudSummary,
// VertexResult a VertexValue (the fan-in measure). Spec form:
// type=fraud,threshold=50,max_cycle=4,max_span=1h.
type Fraud struct {
	Name        string        // registered under this name; default: the type (see BuiltIn)
	Threshold   float64       // the fan-in to exceed, in (0, 1e15]; required
	Window      time.Duration // the window in event time, 0..168h (see FanIn)
	WindowEdges int           // the window in operations, 0..16777216 (see FanIn)
	Lateness    time.Duration // how long a window of time waits for late operations, 0..168h
	// Measure is the fan-in's measure: events (the default), senders or
	// amount (see FanIn).
	Measure string
	// Evidence is the most events an alert carries, 1..1024; default 32.
	Evidence int
	// MuleSenders and MuleReceivers, 1..1000000 each, set together and
	// with a Window of time, turn the mule pattern on: an alert (kind
	// AlertMule) when an edge makes a vertex's window hold edges in from
	// MuleSenders distinct sources and out to MuleReceivers distinct
	// destinations (it re-arms once either falls below). Default 0: off.
	MuleSenders   int
	MuleReceivers int // see MuleSenders
	// MaxCycle is the longest cycle reported, 1..8; default 4.
	MaxCycle int
	// MaxSpan bounds a timed ring: from its first payment's event time to
	// its last, 1ms..168h; default 1h.
	MaxSpan time.Duration
	// RingSearch is "timed" (the default: rings in time order within
	// MaxSpan) or "any" (every new cycle of the graph, whatever the
	// times).
	RingSearch string
	// MinRatio, when above 0 (at most 1), is the least share of a timed
	// ring's payment the next payment carries on; default 0 (off).
	MinRatio float64
	// SearchBudget is the most path extensions searched per new edge,
	// 1..10000000; default 100000 (a search cut short is counted:
	// FraudSummary.Truncated).
	SearchBudget int
	// PullTimeout (10ms..1m, default 2s) and PullMemoryMiB (1..4096,
	// default 64) bound one pull's searches; a pull over either is cut
	// short and counted (FraudSummary.PullsCutShort).
	PullTimeout   time.Duration
	PullMemoryMiB int           // see PullTimeout
	Types         []string      // the edge types it reads, by name; default: all (see BuiltIn)
	BatchSize     int           // pull once this many operations wait, 1..1000000; default 1
	Interval      time.Duration // pull at most once per Interval, 0..1h; default 0
	MaxBehind     int           // the most operations of one pull (see BuiltIn); default 262144
}

func (o Fraud) spec() (analytics.Spec, error) {
	s := common("fraud", o.Name, o.Types, o.BatchSize, o.Interval, o.MaxBehind)
	s.MaxSpan, s.RingSearch, s.MinRatio = o.MaxSpan, o.RingSearch, o.MinRatio
	s.Threshold, s.WindowDuration, s.WindowEdges, s.Lateness = o.Threshold, o.Window, o.WindowEdges, o.Lateness
	s.MaxCycle, s.SearchBudget, s.PullTimeout, s.PullMemoryMiB = o.MaxCycle, o.SearchBudget, o.PullTimeout, o.PullMemoryMiB
	s.Measure, s.Evidence, s.MuleSenders, s.MuleReceivers = o.Measure, o.Evidence, o.MuleSenders, o.MuleReceivers
	return s, nil
}

// common is the spec of the options every built-in has.
func common(typ, name string, types []string, batchSize int, interval time.Duration, maxBehind int) analytics.Spec {
	return analytics.Spec{Type: typ, Name: name, Types: strings.Join(types, ","), BatchSize: batchSize, Interval: interval,
		MaxBehind: maxBehind}
}

// rootOf sets s's root from the typed options' Root and RootKey.
func rootOf(s *analytics.Spec, root uint64, key string) error {
	if key == "" {
		s.Root = strconv.FormatUint(root, 10)
		return nil
	}
	if root != 0 {
		return &OptionError{Option: "root", Field: "RootKey",
			msg: "analytic " + strconv.Quote(cmpOr(s.Name, s.Type)) + ": set Root or RootKey, not both (Root " + strconv.FormatUint(root, 10) + ", RootKey " + strconv.Quote(key) + ")"}
	}
	s.Root = "key:" + key
	return nil
}

// cmpOr is the first of a, b that is not empty.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
