package analytics

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
)

// TopoAnalytic is maintained over the Manager's shared topology (bfs, wcc,
// pagerank, sssp, degree, fraud): computed from scratch on it, then kept up to date one
// Update at a time. Calls are serialized by the Registry, each with the
// topology read-locked; Result and Vertex may run concurrently with them.
type TopoAnalytic interface {
	// Recompute replaces the state with one computed from scratch on g.
	Recompute(ctx context.Context, g *views.Topo) error
	// Update brings the state to g, applying edges: the operations between
	// the state's seq and g.Seq, in order. It may recompute when the change
	// cannot be applied incrementally; it reports whether it did.
	Update(ctx context.Context, g *views.Topo, edges []views.Edge) (recomputed bool, err error)
}

// StreamAnalytic is maintained over a stateless stream view with a window.
type StreamAnalytic interface {
	// Consume applies one pulled batch: the new operations and those that
	// left the window.
	Consume(b *views.StreamBatch)
	// Reset forgets everything (the stream lost data and restarts empty).
	Reset()
}

// Analytic is what every built-in implements, with one of the three above.
type Analytic interface {
	Spec() Spec
	// Summary is the analytic's current result in JSON-able form.
	Summary() any
	// Vertex is the per-vertex result of v (false when the analytic has
	// none or v is unknown).
	Vertex(v uint64) (any, bool)
	// Seq is the sequence number the current result corresponds to.
	Seq() uint64
}

// Alert is one event a monitor raises. Its JSON is the one shape of an
// alert everywhere (AlertRecord, alertjson.go); the json tags below are
// that shape's names. Once raised, the registry owns it and its slices
// (it fills their names in place and bounds them): a monitor gives each
// alert slices of its own.
type Alert struct {
	Time      time.Time `json:"time"`
	Analytic  string    `json:"analytic"`
	Kind      string    `json:"kind"` // cycle, fan_in, fan_out, degree
	Seq       uint64    `json:"seq"`  // sequence number of the snapshot or batch that raised it
	Vertex    uint64    `json:"vertex"`
	Cycle     []uint64  `json:"cycle,omitempty"` // cycle: v0 -> v1 -> ... -> v0, from the new edge's source
	Value     float64   `json:"value"`           // the degree or count (cycle: its length)
	Threshold float64   `json:"threshold,omitempty"`
	// VertexID is the vertex as its source named it (a mapped number's
	// own value), in decimal: exact in every JSON reader, which a number
	// above 2^53 such as a key's id is not. VertexKey is its string key
	// ("" for a numeric id). CycleIDs and CycleKeys are the same for a
	// cycle's vertices. Set by the registry (RegistryConfig.Names).
	VertexID  string   `json:"vertex_id,omitempty"`
	VertexKey string   `json:"vertex_key,omitempty"`
	CycleIDs  []string `json:"cycle_ids,omitempty"`
	CycleKeys []string `json:"cycle_keys,omitempty"`
	// ID names the alert for deduplication: the same trigger (the
	// analytic, the kind, the Kafka record of the operation that raised it,
	// the vertex or the cycle) gives the same ID in every run, so that an
	// alert raised again by a replay after a restart is recognized (see
	// Registry). Alerts of operations from no Kafka record get an ID from
	// the seq, unique within a run only.
	ID string `json:"id"`
	// Source is the Kafka record of the operation that raised the alert
	// (none when unknown).
	Source *AlertSource `json:"source,omitempty"`
	// EventTime is that operation's event time, as its record gave it
	// (zero when it gave none).
	EventTime time.Time `json:"event_time,omitzero"`
	// Ref is the reference of that operation (views.Edge.Ref), which the
	// registry turns into Source.
	Ref uint64 `json:"-"`
	// Evidence is the events the alert rests on, oldest first, at most
	// Spec.Evidence of them (the newest kept when there were more;
	// EvidenceDropped counts the rest), and Totals sums what the pattern
	// holds in all, the dropped events included.
	Evidence        []Evidence   `json:"evidence,omitempty"`
	EvidenceDropped int          `json:"evidence_dropped,omitempty"`
	Totals          *AlertTotals `json:"totals,omitempty"`
}

// Evidence is one event an alert rests on: an upsert the monitor saw.
type Evidence struct {
	Seq       uint64    `json:"seq"` // the batch that applied it
	Src       uint64    `json:"src"`
	Dst       uint64    `json:"dst"`
	Type      uint16    `json:"type"`
	Amount    float64   `json:"amount"`              // its weight
	EventTime time.Time `json:"event_time,omitzero"` // its event time, when it had one
	// EventRef and Props are its payload (engine.Op): the event's
	// reference and its property document ("": none).
	EventRef string `json:"ref,omitempty"`
	Props    string `json:"-"`
	// OpRef is its views.Edge.Ref, which the registry turns into Source.
	OpRef  uint64       `json:"-"`
	Source *AlertSource `json:"source,omitempty"`
	// SrcID, SrcKey, DstID, DstKey and TypeName are the names of Src, Dst
	// and Type, set by the registry as Alert.VertexID and VertexKey are.
	SrcID    string `json:"src_id,omitempty"`
	SrcKey   string `json:"src_key,omitempty"`
	DstID    string `json:"dst_id,omitempty"`
	DstKey   string `json:"dst_key,omitempty"`
	TypeName string `json:"type_name,omitempty"`
}

// AlertTotals is what an alert's pattern holds in all: the events, their
// amounts summed, the distinct counterparties (fan-in and fan-out: senders
// or receivers; 0 where it means nothing) and the event times of the
// oldest and newest.
type AlertTotals struct {
	Events         int     `json:"events"`
	Amount         float64 `json:"amount"`
	Counterparties int     `json:"counterparties,omitempty"`
	// Mule: Amount and Counterparties are the money in and its senders;
	// AmountOut and Receivers the money out and its receivers.
	AmountOut float64   `json:"amount_out,omitempty"`
	Receivers int       `json:"receivers,omitempty"`
	First     time.Time `json:"first,omitzero"`
	Last      time.Time `json:"last,omitzero"`
}

// AlertSource names a Kafka record.
type AlertSource struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Spec configures one analytic. Only the fields its type uses matter;
// zero fields take the documented defaults.
type Spec struct {
	Name string `yaml:"name" json:"name"` // unique; default: the type
	Type string `yaml:"type" json:"type"` // bfs, wcc, pagerank, sssp, degree, fanin, fanout, fraud

	// Root of bfs and sssp: a vertex id, or a string key (resolved through
	// the key dictionary).
	Root string `yaml:"root,omitempty" json:"root,omitempty"`

	// Types, when set, is the edge types the analytic reads: a
	// comma-separated list of type names or numbers ('|'-separated in
	// ParseSpec's key=value form: types=payment|refund), resolved through the
	// type dictionary: RegistryConfig.Types). Default: every type. A graph
	// analytic over several types sees an edge from a to b when an edge of
	// one of them joins a to b, weighing the least of their weights
	// (views.Topology). An analytic with types is not checkpointed: it
	// computes from the store when serve starts.
	Types string `yaml:"types,omitempty" json:"types,omitempty"`

	// Cadence: pull once at least BatchSize new operations exist (default
	// 1) and at most once per Interval (default 0: as soon as they exist).
	BatchSize int           `yaml:"batch_size,omitempty" json:"batch_size,omitempty"`
	Interval  time.Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
	// Stale is refused: every analytic that reads the graph reads the
	// in-memory topology, always fresh (degree read views, where stale
	// ones were cheaper, before it followed the topology too). Kept so
	// that a spec that sets it gets an error saying so.
	Stale bool `yaml:"stale,omitempty" json:"stale,omitempty"`
	// MaxBehind: when more operations than this wait for one pull, the
	// analytic does not read them one by one but recomputes from the new
	// view (bfs and wcc; the others, fraud, degree, pagerank, sssp, fanin
	// and fanout, instead take them MaxBehind at a time, missing nothing
	// while the edge log holds them); this bounds the memory one
	// pull takes. Default 262144, at most the edge log's capacity.
	MaxBehind int `yaml:"max_behind,omitempty" json:"max_behind,omitempty"`

	// PageRank: damping (default 0.85), tolerance on the L1 change of the
	// ranks (default 1e-4, GAPBS's; see DefaultTolerance) and the most
	// iterations per update (default 100).
	Damping       float64 `yaml:"damping,omitempty" json:"damping,omitempty"`
	Tolerance     float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
	MaxIterations int     `yaml:"max_iterations,omitempty" json:"max_iterations,omitempty"`

	// Monitors: the threshold a value must exceed, the direction of the
	// degree monitor (out, in or both; default out) and the window of
	// fanin, fanout and fraud (operations and/or duration; default 10000
	// operations when neither is set).
	Threshold      float64       `yaml:"threshold,omitempty" json:"threshold,omitempty"`
	Direction      string        `yaml:"direction,omitempty" json:"direction,omitempty"`
	WindowEdges    int           `yaml:"window_edges,omitempty" json:"window_edges,omitempty"`
	WindowDuration time.Duration `yaml:"window,omitempty" json:"window,omitempty"`
	// Lateness of a window duration: how far behind the newest event time
	// its watermark runs (views.Window).
	Lateness time.Duration `yaml:"lateness,omitempty" json:"lateness,omitempty"`

	// Fraud: the longest cycle reported (default 4, at most 8), the most
	// path extensions searched per new edge (default 100000; a search cut
	// short is counted in the summary), and what one pull (one update) may
	// take in all: PullTimeout of time (default 2s) and PullMemoryMiB of
	// memory for its searches (default 64). A pull over either is cut short:
	// the cycles found so far are reported, the rest of the pull's new
	// edges are not searched, and the cut is counted (PullsCutShort).
	MaxCycle      int           `yaml:"max_cycle,omitempty" json:"max_cycle,omitempty"`
	SearchBudget  int           `yaml:"search_budget,omitempty" json:"search_budget,omitempty"`
	PullTimeout   time.Duration `yaml:"pull_timeout,omitempty" json:"pull_timeout,omitempty"`
	PullMemoryMiB int           `yaml:"pull_memory_mib,omitempty" json:"pull_memory_mib,omitempty"`

	// Money and time (fanin, fanout and fraud). Measure is what a fan-in
	// or fan-out window counts: events (the default), senders (distinct
	// counterparties) or amount (the sum of the weights). Evidence is the
	// most events an alert carries (default 32). Rings (fraud): MaxSpan
	// bounds the time from a ring's first hop to its last (default 1h),
	// each hop's event time not before the previous hop's; RingSearch "any" is the
	// search without time or order instead ("timed", the default);
	// MinRatio, when above 0, is the least share of a hop's amount the
	// next hop carries on. Mule (fraud): money in from at least
	// MuleSenders senders and out to at least MuleReceivers receivers
	// within the window (both 0: off).
	Measure       string        `yaml:"measure,omitempty" json:"measure,omitempty"`
	Evidence      int           `yaml:"evidence,omitempty" json:"evidence,omitempty"`
	MaxSpan       time.Duration `yaml:"max_span,omitempty" json:"max_span,omitempty"`
	RingSearch    string        `yaml:"ring_search,omitempty" json:"ring_search,omitempty"`
	MinRatio      float64       `yaml:"min_ratio,omitempty" json:"min_ratio,omitempty"`
	MuleSenders   int           `yaml:"mule_senders,omitempty" json:"mule_senders,omitempty"`
	MuleReceivers int           `yaml:"mule_receivers,omitempty" json:"mule_receivers,omitempty"`
}

// Limits of the settings: every one has a documented range (docs/analytics.md,
// openapi.yaml); Validate refuses a value outside it, naming the range.
const (
	MaxBatchSize     = 1_000_000
	MaxInterval      = time.Hour
	MaxMaxBehind     = 1 << 22 // operations one pull may carry (96 bytes each and their payloads: 384 MiB)
	MinTolerance     = 1e-15
	MaxTolerance     = 1.0
	MaxMaxIterations = 10_000
	MaxThreshold     = 1e15
	MaxWindowEdges   = 1 << 24
	MaxWindow        = 7 * 24 * time.Hour
	MaxMaxCycle      = 8
	MaxSearchBudget  = 10_000_000
	MinPullTimeout   = 10 * time.Millisecond
	MaxPullTimeout   = time.Minute
	MaxPullMemoryMiB = 4096
	MaxEvidence      = 1024
	MaxMuleParties   = 1_000_000

	// The strings of a spec (a spec comes over the HTTP API too): name, a
	// type word (type, direction), root (a key with its "key:" prefix),
	// and the types list. Validate refuses a longer one, naming it and
	// its limit, before it reads or echoes it.
	MaxNameLen  = 128
	MaxWordLen  = 32
	MaxRootLen  = keydict.MaxKeyLen + len("key:")
	MaxTypesLen = 4096
)

// StringLimits is the most bytes of each string setting of a Spec, by its
// name in a spec (the JSON and YAML field).
var StringLimits = map[string]int{"name": MaxNameLen, "type": MaxWordLen, "root": MaxRootLen, "types": MaxTypesLen, "direction": MaxWordLen,
	"measure": MaxWordLen, "ring_search": MaxWordLen}

// SettingError is the refusal of one setting of a spec: every error of
// Validate and ParseSpec (and Registry.Register's of a root or types that
// do not resolve) is one, so that a caller can tell which setting to fix.
type SettingError struct {
	// Key is the setting as a spec names it (batch_size, window, root,
	// ...); "" when the spec as a whole is malformed (ParseSpec).
	Key string
	// Msg is the whole message: the analytic, the setting, its value and
	// what is allowed.
	Msg string
	// Err is the cause, when another error is (a root that does not
	// resolve).
	Err error
}

func (e *SettingError) Error() string { return e.Msg }

func (e *SettingError) Unwrap() error { return e.Err }

// settingErr is a *SettingError of key; its message is the format's.
func settingErr(key, format string, a ...any) *SettingError {
	return &SettingError{Key: key, Msg: fmt.Sprintf(format, a...)}
}

// checkLengths refuses a string setting longer than its StringLimits.
func (s *Spec) checkLengths() error {
	for _, f := range []struct{ name, v string }{{"name", s.Name}, {"type", s.Type}, {"root", s.Root}, {"types", s.Types}, {"direction", s.Direction},
		{"measure", s.Measure}, {"ring_search", s.RingSearch}} {
		if most := StringLimits[f.name]; len(f.v) > most {
			return settingErr(f.name, "analytic spec: %s is %d bytes; at most %d", f.name, len(f.v), most)
		}
	}
	return nil
}

// kind is one built-in analytic type: everything the package switches on
// by type is here, in one row.
type kind struct {
	name string
	// root: the spec needs a root vertex (bfs, sssp).
	root bool
	// monitor: it raises alerts over a threshold; window: over a sliding
	// window of operations or time.
	monitor, window bool
	// stream: it reads a plain stream view (no views of the graph); topo:
	// it reads the Manager's topology.
	stream, topo bool
	// perVertex is the memory of its state per vertex index, perEdge per
	// edge (pagerank: the copy its iterations read); fixed, if set, what
	// it may hold besides (fraud: one pull's memory).
	perVertex, perEdge int64
	fixed              func(s Spec) int64
	// alerts are the kinds of the alerts it raises (Alert.Kind).
	alerts []string
	// settings fills the defaults of its own settings and checks them.
	settings func(s *Spec) *SettingError
	build    func(s Spec, root uint64, alerts func([]Alert)) Analytic
}

var kinds = []kind{
	{name: "bfs", topo: true, root: true, perVertex: 9, build: func(s Spec, root uint64, _ func([]Alert)) Analytic { return newBFS(s, root) }},
	{name: "wcc", topo: true, perVertex: 17, build: func(s Spec, _ uint64, _ func([]Alert)) Analytic { return newWCC(s) }},
	{name: "pagerank", topo: true, perVertex: 110, perEdge: 4, settings: (*Spec).pagerankSettings,
		build: func(s Spec, _ uint64, _ func([]Alert)) Analytic { return newPageRank(s) }},
	{name: "sssp", topo: true, root: true, perVertex: 9, build: func(s Spec, root uint64, _ func([]Alert)) Analytic { return newSSSP(s, root) }},
	{name: "degree", topo: true, monitor: true, perVertex: 4, alerts: []string{"degree"}, settings: (*Spec).degreeSettings,
		build: func(s Spec, _ uint64, al func([]Alert)) Analytic { return newDegree(s, al) }},
	{name: "fanin", monitor: true, window: true, stream: true, alerts: []string{"fan_in"}, settings: (*Spec).fanSettings,
		build: func(s Spec, _ uint64, al func([]Alert)) Analytic { return newFan(s, al) }},
	{name: "fanout", monitor: true, window: true, stream: true, alerts: []string{"fan_out"}, settings: (*Spec).fanSettings,
		build: func(s Spec, _ uint64, al func([]Alert)) Analytic { return newFan(s, al) }},
	{name: "fraud", topo: true, monitor: true, window: true, alerts: []string{"fan_in", "cycle", "mule"}, settings: (*Spec).fraudSettings,
		fixed: func(s Spec) int64 { return int64(s.PullMemoryMiB) << 20 },
		build: func(s Spec, _ uint64, al func([]Alert)) Analytic { return newFraud(s, al) }},
	// custom: an analytic built outside the package (graphtide's
	// user-defined analytics), registered with Registry.RegisterCustom,
	// never from a spec alone.
	{name: CustomType, topo: true},
}

// CustomType is the type of a user-defined analytic (RegisterCustom).
const CustomType = "custom"

// kindOf returns the row of type t.
func kindOf(t string) (kind, bool) {
	for _, k := range kinds {
		if k.name == t {
			return k, true
		}
	}
	return kind{}, false
}

// Types lists the built-in analytic types.
var Types = func() []string {
	var ts []string
	for _, k := range kinds {
		if k.build != nil {
			ts = append(ts, k.name)
		}
	}
	return ts
}()

// AlertKinds lists the kinds of the alerts analytics of type t raise
// (Alert.Kind); none for the graph analytics.
func AlertKinds(t string) []string {
	k, _ := kindOf(t)
	return slices.Clone(k.alerts)
}

// AlertKinds lists the kinds of the alerts an analytic of spec s raises:
// those of its type, but mule for a fraud monitor without the mule
// pattern (MuleSenders, MuleReceivers).
func (s Spec) AlertKinds() []string {
	ks := AlertKinds(s.Type)
	if s.MuleSenders == 0 || s.MuleReceivers == 0 {
		ks = slices.DeleteFunc(ks, func(k string) bool { return k == "mule" })
	}
	return ks
}

// NeedsRoot reports whether analytics of type t need a root vertex.
func NeedsRoot(t string) bool {
	k, _ := kindOf(t)
	return k.root
}

// Validate fills defaults and checks the spec. resolve turns a root given
// as a string key into an id (nil: only numeric roots are accepted).
func (s *Spec) Validate() error {
	if err := s.checkLengths(); err != nil {
		return err
	}
	k, known := kindOf(s.Type)
	if !known {
		return settingErr("type", "analytic %q: type must be one of: %s; got %q", s.Name, strings.Join(Types, ", "), s.Type)
	}
	if s.Name == "" {
		s.Name = s.Type
	}
	for _, r := range s.Name {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return settingErr("name", "analytic %q: a name may hold only letters, digits, '-', '_' and '.'", s.Name)
		}
	}
	bad := func(key, f string, a ...any) error {
		return settingErr(key, "analytic %q: "+f, append([]any{s.Name}, a...)...)
	}
	// named is a *SettingError of a helper (intIn, a kind's settings)
	// with the analytic's name in front.
	named := func(err *SettingError) error { return bad(err.Key, "%s", err.Msg) }
	if err := intIn("batch_size", &s.BatchSize, 1, MaxBatchSize); err != nil {
		return named(err)
	}
	if err := durIn("interval", &s.Interval, 0, 0, MaxInterval); err != nil {
		return named(err)
	}
	if err := intIn("max_behind", &s.MaxBehind, max(1<<18, s.BatchSize), MaxMaxBehind); err != nil {
		return named(err)
	}
	if s.MaxBehind < s.BatchSize {
		return bad("max_behind", "max_behind (%d) must be at least batch_size (%d)", s.MaxBehind, s.BatchSize)
	}
	if s.Stale {
		return bad("stale", "stale is not a setting of %s: every analytic reads the in-memory topology or the edge log, always fresh and as cheap to read; remove it", s.Type)
	}
	if k.root && s.Root == "" {
		return bad("root", "%s needs a root vertex (root: <id or key>)", s.Type)
	}
	if err := s.moneySettings(); err != nil {
		return named(err)
	}
	if k.settings != nil {
		if err := k.settings(s); err != nil {
			return named(err)
		}
	}
	if k.monitor && !(s.Threshold > 0 && s.Threshold <= MaxThreshold) {
		return bad("threshold", "threshold %v is out of range: %s needs one in (0, %g]", s.Threshold, s.Type, MaxThreshold)
	}
	if k.window {
		if s.WindowEdges == 0 && s.WindowDuration == 0 {
			s.WindowEdges = 10000
		}
		if s.WindowEdges < 0 || s.WindowEdges > MaxWindowEdges {
			return bad("window_edges", "window_edges %d is out of range: allowed 0..%d", s.WindowEdges, MaxWindowEdges)
		}
		if s.WindowDuration < 0 || s.WindowDuration > MaxWindow {
			return bad("window", "window %v is out of range: allowed 0s..%v", s.WindowDuration, MaxWindow)
		}
		if s.Lateness < 0 || s.Lateness > MaxWindow {
			return bad("lateness", "lateness %v is out of range: allowed 0s..%v", s.Lateness, MaxWindow)
		}
		if s.Lateness > 0 && s.WindowDuration == 0 {
			return bad("lateness", "lateness applies to a window of a duration (window=10m): give one")
		}
	} else if s.Lateness != 0 {
		return bad("lateness", "lateness applies to the windows of fanin, fanout and fraud, not to %s", s.Type)
	}
	if !k.window {
		return s.noFanSettings()
	}
	return nil
}

// intIn fills *p with def when zero and checks it against [1, hi].
func intIn(key string, p *int, def, hi int) *SettingError {
	if *p == 0 {
		*p = def
	}
	if *p < 1 || *p > hi {
		return settingErr(key, "%s %d is out of range: allowed 1..%d", key, *p, hi)
	}
	return nil
}

// durIn is intIn for a duration.
func durIn(key string, p *time.Duration, def, lo, hi time.Duration) *SettingError {
	if *p == 0 {
		*p = def
	}
	if *p < lo || *p > hi {
		return settingErr(key, "%s %v is out of range: allowed %v..%v", key, *p, lo, hi)
	}
	return nil
}

// PageRank's defaults: damping, and tolerance on the L1 change of the
// ranks. DefaultTolerance is GAPBS's: a recompute stops once an
// iteration changes the ranks by at most 1e-4 in L1, and an update keeps
// them as close (within damping*tolerance/(1-damping), about 5.7e-4, of
// the exact ones in L1; see pagerank). A spec that states a tolerance
// keeps it: a tighter one (1e-6) costs more iterations per recompute and
// makes updates push less often (docs/analytics.md gives the figures).
const (
	DefaultDamping   = 0.85
	DefaultTolerance = 1e-4
)

func (s *Spec) pagerankSettings() *SettingError {
	if s.Damping == 0 {
		s.Damping = DefaultDamping
	}
	if !(s.Damping > 0 && s.Damping < 1) {
		return settingErr("damping", "damping %v is out of range: allowed (0, 1)", s.Damping)
	}
	if s.Tolerance == 0 {
		s.Tolerance = DefaultTolerance
	}
	if !(s.Tolerance >= MinTolerance && s.Tolerance <= MaxTolerance) {
		return settingErr("tolerance", "tolerance %v is out of range: allowed %v..%v", s.Tolerance, MinTolerance, MaxTolerance)
	}
	return intIn("max_iterations", &s.MaxIterations, 100, MaxMaxIterations)
}

func (s *Spec) degreeSettings() *SettingError {
	if s.Direction == "" {
		s.Direction = "out"
	}
	if s.Direction != "out" && s.Direction != "in" && s.Direction != "both" {
		return settingErr("direction", "direction must be out, in or both; got %q", s.Direction)
	}
	return nil
}

// Defaults of the fan settings (fanin, fanout and fraud's fan-in): what
// the window measures, and the most events an alert carries.
const (
	DefaultMeasure  = "events"
	DefaultEvidence = 32
)

// fanSettings fills the defaults of measure and evidence (fanin, fanout
// and fraud) and checks the mule's settings: fraud's only, both or
// neither, over a window of time.
func (s *Spec) fanSettings() *SettingError {
	if s.Measure == "" {
		s.Measure = DefaultMeasure
	}
	if s.Evidence == 0 {
		s.Evidence = DefaultEvidence
	}
	switch {
	case s.MuleSenders == 0 && s.MuleReceivers == 0:
	case s.Type != "fraud":
		key := "mule_senders"
		if s.MuleSenders == 0 {
			key = "mule_receivers"
		}
		return settingErr(key, "%s is a setting of the fraud monitor (the mule pattern), not of %s", key, s.Type)
	case s.MuleSenders == 0:
		return settingErr("mule_senders", "mule_receivers needs mule_senders too: a mule takes money in from at least mule_senders senders and pays out to at least mule_receivers receivers within the window")
	case s.MuleReceivers == 0:
		return settingErr("mule_receivers", "mule_senders needs mule_receivers too: a mule takes money in from at least mule_senders senders and pays out to at least mule_receivers receivers within the window")
	case s.WindowDuration == 0:
		return settingErr("window", "the mule pattern (mule_senders, mule_receivers) counts within a window of time: give one (window=24h)")
	}
	return nil
}

// noFanSettings refuses the fan settings in a spec of another type.
func (s *Spec) noFanSettings() error {
	for _, f := range []struct {
		key string
		set bool
	}{{"measure", s.Measure != ""}, {"evidence", s.Evidence != 0}, {"mule_senders", s.MuleSenders != 0}, {"mule_receivers", s.MuleReceivers != 0}} {
		if f.set {
			return settingErr(f.key, "analytic %q: %s applies to the monitors fanin, fanout and fraud, not to %s", s.Name, f.key, s.Type)
		}
	}
	return nil
}

func (s *Spec) fraudSettings() *SettingError {
	if err := s.fanSettings(); err != nil {
		return err
	}
	if err := intIn("max_cycle", &s.MaxCycle, 4, MaxMaxCycle); err != nil {
		return err
	}
	if err := intIn("search_budget", &s.SearchBudget, 100000, MaxSearchBudget); err != nil {
		return err
	}
	if err := durIn("pull_timeout", &s.PullTimeout, 2*time.Second, MinPullTimeout, MaxPullTimeout); err != nil {
		return err
	}
	if err := intIn("pull_memory_mib", &s.PullMemoryMiB, 64, MaxPullMemoryMiB); err != nil {
		return err
	}
	return s.ringSettings()
}

// Rings' defaults (fraud): the longest span of a timed ring, and the
// search.
const (
	DefaultMaxSpan    = time.Hour
	DefaultRingSearch = "timed"
)

// ringSettings fills the defaults of the fraud monitor's rings (max_span,
// ring_search; min_ratio 0 is off) and checks them (moneySettings checked
// the ranges of the values given).
func (s *Spec) ringSettings() *SettingError {
	if s.RingSearch == "" {
		s.RingSearch = DefaultRingSearch
	}
	if err := durIn("max_span", &s.MaxSpan, DefaultMaxSpan, time.Millisecond, MaxWindow); err != nil {
		return err
	}
	if s.RingSearch == "any" && s.MinRatio != 0 {
		return settingErr("min_ratio", "min_ratio applies to ring_search=timed (a ring's hops in time order); ring_search=any has no order of hops")
	}
	return nil
}

// moneySettings checks the settings of money and time (Spec.Measure and
// the rest) against their ranges; zero is each one's default.
func (s *Spec) moneySettings() *SettingError {
	switch {
	case s.Measure != "" && s.Measure != "events" && s.Measure != "senders" && s.Measure != "amount":
		return settingErr("measure", "measure must be events, senders or amount; got %q", s.Measure)
	case s.Evidence < 0 || s.Evidence > MaxEvidence:
		return settingErr("evidence", "evidence %d is out of range: allowed 1..%d", s.Evidence, MaxEvidence)
	case s.MaxSpan < 0 || s.MaxSpan > MaxWindow:
		return settingErr("max_span", "max_span %v is out of range: allowed %v..%v", s.MaxSpan, time.Millisecond, MaxWindow)
	case s.RingSearch != "" && s.RingSearch != "timed" && s.RingSearch != "any":
		return settingErr("ring_search", "ring_search must be timed or any; got %q", s.RingSearch)
	case !(s.MinRatio >= 0 && s.MinRatio <= 1):
		return settingErr("min_ratio", "min_ratio %v is out of range: allowed 0..1", s.MinRatio)
	case s.MuleSenders < 0 || s.MuleSenders > MaxMuleParties:
		return settingErr("mule_senders", "mule_senders %d is out of range: allowed 1..%d", s.MuleSenders, MaxMuleParties)
	case s.MuleReceivers < 0 || s.MuleReceivers > MaxMuleParties:
		return settingErr("mule_receivers", "mule_receivers %d is out of range: allowed 1..%d", s.MuleReceivers, MaxMuleParties)
	}
	return nil
}

// ParseSpec parses the compact form of the --analytic flag:
// "type=bfs,name=reach,root=42,batch_size=1000,interval=1s" (keys as in the
// YAML config).
func ParseSpec(s string) (Spec, error) {
	var sp Spec
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return sp, settingErr("", "analytic %q: want key=value pairs separated by commas, got %q", s, kv)
		}
		if err := sp.set(k, v); err != nil {
			e := settingErr(k, "analytic %q: %v", s, err)
			e.Err = err
			return sp, e
		}
	}
	return sp, nil
}

func (s *Spec) set(k, v string) error {
	var err error
	i := func(p *int) { _, err = fmt.Sscan(v, p) }
	f := func(p *float64) { _, err = fmt.Sscan(v, p) }
	d := func(p *time.Duration) { *p, err = time.ParseDuration(v) }
	switch k {
	case "name":
		s.Name = v
	case "type":
		s.Type = v
	case "root":
		s.Root = v
	case "types": // the commas separate the pairs here: types=payment|refund
		s.Types = strings.ReplaceAll(v, "|", ",")
	case "batch_size":
		i(&s.BatchSize)
	case "interval":
		d(&s.Interval)
	case "stale":
		s.Stale = v == "true" || v == "1"
		if v != "true" && v != "false" && v != "1" && v != "0" {
			err = fmt.Errorf("want true or false")
		}
	case "damping":
		f(&s.Damping)
	case "tolerance":
		f(&s.Tolerance)
	case "max_iterations":
		i(&s.MaxIterations)
	case "threshold":
		f(&s.Threshold)
	case "direction":
		s.Direction = v
	case "window_edges":
		i(&s.WindowEdges)
	case "window":
		d(&s.WindowDuration)
	case "lateness":
		d(&s.Lateness)
	case "max_cycle":
		i(&s.MaxCycle)
	case "search_budget":
		i(&s.SearchBudget)
	case "pull_timeout":
		d(&s.PullTimeout)
	case "pull_memory_mib":
		i(&s.PullMemoryMiB)
	case "max_behind":
		i(&s.MaxBehind)
	case "measure":
		s.Measure = v
	case "evidence":
		i(&s.Evidence)
	case "max_span":
		d(&s.MaxSpan)
	case "ring_search":
		s.RingSearch = v
	case "min_ratio":
		f(&s.MinRatio)
	case "mule_senders":
		i(&s.MuleSenders)
	case "mule_receivers":
		i(&s.MuleReceivers)
	default:
		keys := []string{"name", "type", "root", "types", "batch_size", "interval", "damping", "tolerance",
			"max_iterations", "threshold", "direction", "window_edges", "window", "lateness", "max_cycle", "search_budget", "pull_timeout", "pull_memory_mib", "max_behind",
			"measure", "evidence", "max_span", "ring_search", "min_ratio", "mule_senders", "mule_receivers"}
		sort.Strings(keys)
		return fmt.Errorf("unknown key %q; allowed: %s", k, strings.Join(keys, ", "))
	}
	if err != nil {
		return fmt.Errorf("%s=%q: %w", k, v, err)
	}
	return nil
}

// New builds the analytic of a validated spec; root is the resolved root
// vertex of bfs and sssp. A TopoAnalytic or a StreamAnalytic, it is
// driven as one.
func New(s Spec, root uint64, alerts func([]Alert)) (Analytic, error) {
	k, ok := kindOf(s.Type)
	if !ok {
		return nil, fmt.Errorf("analytic %q: unknown type %q", s.Name, s.Type)
	}
	if k.build == nil {
		return nil, fmt.Errorf("analytic %q: a %s analytic is registered from Go (graphtide.DB.RegisterAnalytic), not from a spec; type must be one of: %s", s.Name, s.Type, strings.Join(Types, ", "))
	}
	return k.build(s, root, alerts), nil
}
