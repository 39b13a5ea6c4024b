package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The JSON bodies of the API. openapi.yaml describes each of them; the
// package's tests validate every response against it. `graphtide query
// --json` prints the same bodies whether it asks a server or reads a
// data directory.

// ErrorResponse is the body of every error.
type ErrorResponse struct {
	Error string `json:"error"`
}

// StatusResponse is the body of /healthz and /readyz when all is well.
type StatusResponse struct {
	Status string `json:"status"`
	// Behind (/readyz, when Config.Behind knows it) is how many records
	// the assigned partitions are behind the brokers' end offsets.
	Behind *int64 `json:"behind,omitempty"`
}

// Vertex is a vertex id with its string key, if it has one.
type Vertex struct {
	ID  uint64 `json:"id"`
	Key string `json:"key,omitempty"`
}

// DegreeResponse answers GET /v1/vertices/{v}/degree.
type DegreeResponse struct {
	Vertex uint64 `json:"vertex"`
	Key    string `json:"key,omitempty"`
	Dir    string `json:"dir"`
	View   string `json:"view"`
	Seq    uint64 `json:"seq"` // the view's sequence number
	Degree uint64 `json:"degree"`
}

// Neighbor is one neighbor with the weight and type of the edge to (or
// from) it. A neighbor joined by edges of several types comes once per
// type.
type Neighbor struct {
	ID     uint64  `json:"id"`
	Key    string  `json:"key,omitempty"`
	Weight float64 `json:"weight"`
	Type   string  `json:"type,omitempty"` // the edge type's name; left out for the default type
	// Time is the event time the edge's operation gave (RFC 3339, UTC,
	// microseconds); left out when it gave none. An accumulate edge's is
	// its newest event's (Aggregate.LastTime).
	Time string `json:"time,omitempty"`
	// Ref is the event reference of the edge's upsert (an accumulate
	// edge's newest event's); left out when it has none.
	Ref string `json:"ref,omitempty"`
	// Props is the edge's property document (an accumulate edge's newest
	// event's); left out when it has none.
	Props JSONObject `json:"props,omitempty"`
	// Aggregate is an accumulate edge's aggregate of its events (nil for
	// a replace edge); Weight is its Sum.
	Aggregate *EdgeAggregate `json:"aggregate,omitempty"`
	// Window is, when the read asked for one (window=), the accumulate
	// edge's events within it.
	Window *EdgeWindow `json:"window,omitempty"`
}

// EdgeAggregate is an accumulate edge's aggregate of its events: how
// many, the sum of their weights (amounts), the least and greatest event
// time, and the newest event's reference.
type EdgeAggregate struct {
	Count     uint64  `json:"count"`
	Sum       float64 `json:"sum"`
	FirstTime string  `json:"first_time,omitempty"`
	LastTime  string  `json:"last_time,omitempty"`
	Ref       string  `json:"ref,omitempty"`
}

// EdgeWindow is an accumulate edge's events within a window of event
// time ending at the store's newest event time: Count and Sum of all of
// them, and the newest of them one by one (at most the read's limit of
// events in all; More when this edge's list was cut).
type EdgeWindow struct {
	Since  string      `json:"since"` // the window's start (RFC 3339)
	Count  uint64      `json:"count"`
	Sum    float64     `json:"sum"`
	Events []EdgeEvent `json:"events"`
	More   bool        `json:"more,omitempty"`
}

// EdgeEvent is one event of an accumulate edge: its amount (weight),
// event time, reference, properties and the seq of the batch that
// applied it.
type EdgeEvent struct {
	Amount float64    `json:"amount"`
	Time   string     `json:"time,omitempty"`
	Ref    string     `json:"ref,omitempty"`
	Props  JSONObject `json:"props,omitempty"`
	Seq    uint64     `json:"seq"`
}

// JSONObject is a JSON object's text, written as the object itself ("":
// none, left out). A string, so that the structs holding one compare
// with ==.
type JSONObject string

// MarshalJSON writes the object's text.
func (o JSONObject) MarshalJSON() ([]byte, error) {
	if o == "" {
		return []byte("null"), nil
	}
	return []byte(o), nil
}

// UnmarshalJSON keeps the object's text.
func (o *JSONObject) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = ""
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("props must be a JSON object, got %.20s", b)
	}
	*o = JSONObject(b)
	return nil
}

// EventsResponse answers GET /v1/edges/{src}/{dst}/events: the events of
// the accumulate edge (src, dst, type) held one by one (those of its
// type's retain; within the window when one is asked for), newest first,
// at most limit of them. Count and Sum cover all of them (past limit
// too); More says the list was cut; Folded that the edge also holds older
// events folded into its aggregate, no longer listed.
type EventsResponse struct {
	Src    Vertex      `json:"src"`
	Dst    Vertex      `json:"dst"`
	Type   string      `json:"type,omitempty"`
	View   string      `json:"view"`
	Seq    uint64      `json:"seq"`
	Since  string      `json:"since,omitempty"`
	Count  uint64      `json:"count"`
	Sum    float64     `json:"sum"`
	Events []EdgeEvent `json:"events"`
	More   bool        `json:"more,omitempty"`
	Folded bool        `json:"folded"`
}

// NeighborsResponse answers GET /v1/vertices/{v}/neighbors: one page of
// edges in Position order (numbers by value, then keys by bytes; a
// neighbor's types by name: the same on every replica), those past the
// cursor (or after and after_type).
type NeighborsResponse struct {
	Vertex    uint64     `json:"vertex"`
	Key       string     `json:"key,omitempty"`
	Dir       string     `json:"dir"`
	View      string     `json:"view"`
	Seq       uint64     `json:"seq"`
	Degree    uint64     `json:"degree"` // all neighbors, every page
	Neighbors []Neighbor `json:"neighbors"`
	// NextCursor, when more remain, continues the listing on any replica:
	// pass it as cursor= for the next page. It names the page's last edge
	// alike on every replica, and pins the next pages to this page's view
	// (when the store keeps its seq readable) on this server.
	NextCursor string `json:"next_cursor,omitempty"`
	// NextAfter is the last id of this page when more remain: pass it as
	// after= for the next page, with NextAfterType (when set) as
	// after_type=. The id of a key is this replica's own: send the
	// cursor (or the key) to another.
	NextAfter     *uint64 `json:"next_after,omitempty"`
	NextAfterType string  `json:"next_after_type,omitempty"`
	// NextAsOfSeq, with NextAfter, is this page's seq when the store keeps
	// it readable (history retention): pass it as as_of_seq= so that every
	// page comes from the view the first one read. Seqs are each
	// replica's own.
	NextAsOfSeq *uint64 `json:"next_as_of_seq,omitempty"`
}

// VertexResponse answers GET /v1/vertices/{v}: whether the vertex exists
// (it has a record or an edge of any type), and its record when it has
// one (Record true: its label, maybe empty, and its property document,
// absent when it has none).
type VertexResponse struct {
	Vertex Vertex          `json:"vertex"`
	View   string          `json:"view"`
	Seq    uint64          `json:"seq"`
	Exists bool            `json:"exists"`
	Record bool            `json:"record"`
	Label  string          `json:"label,omitempty"`
	Props  json.RawMessage `json:"props,omitempty"`
}

// EdgeResponse answers GET /v1/edges/{src}/{dst}: the edges from src to
// dst, one per edge type that links them (the larger type first), each
// with its weight, type and event time (its ID is dst); Found is false and
// Edges empty when there is none.
type EdgeResponse struct {
	Src   Vertex     `json:"src"`
	Dst   Vertex     `json:"dst"`
	View  string     `json:"view"`
	Seq   uint64     `json:"seq"`
	Found bool       `json:"found"`
	Edges []Neighbor `json:"edges"`
}

// PathResponse answers GET /v1/paths.
type PathResponse struct {
	From      Vertex   `json:"from"`
	To        Vertex   `json:"to"`
	Weighted  bool     `json:"weighted"`
	MaxDepth  int      `json:"max_depth,omitempty"`
	Seq       uint64   `json:"seq"`
	Found     bool     `json:"found"`
	Length    *float64 `json:"length,omitempty"` // hops, or total weight; only when found
	Path      []Vertex `json:"path"`             // from ... to; empty when not found
	EdgesRead int64    `json:"edges_read"`
}

// KindCounts counts per kind of static view.
type KindCounts struct {
	Fresh   uint64 `json:"fresh"`
	Stale   uint64 `json:"stale"`
	Private uint64 `json:"private"`
}

// LevelStats describes one level of the store (L0 first).
type LevelStats struct {
	Level   int   `json:"level"`
	Files   int64 `json:"files"`
	Bytes   int64 `json:"bytes"`
	Entries int64 `json:"entries"` // edge versions, tombstones included
}

// StoreStats is engine.Metrics with units in the names.
type StoreStats struct {
	LastSeq                uint64       `json:"last_seq"`
	DurableSeq             uint64       `json:"durable_seq"`
	InEdges                bool         `json:"in_edges"`
	MemGraphBytes          int64        `json:"memgraph_bytes"`
	MemGraphEntries        int64        `json:"memgraph_entries"`
	Files                  int64        `json:"files"`
	DiskBytes              int64        `json:"disk_bytes"`
	Levels                 []LevelStats `json:"levels"`
	VertexRecords          RecordStats  `json:"vertex_records"`
	Flushes                int64        `json:"flushes"`
	FlushSeconds           float64      `json:"flush_seconds"`
	FlushBytes             int64        `json:"flush_bytes"`
	Compactions            int64        `json:"compactions"`
	CompactionSeconds      float64      `json:"compaction_seconds"`
	CompactionBytesRead    int64        `json:"compaction_bytes_read"`
	CompactionBytesWritten int64        `json:"compaction_bytes_written"`
	WriteStalls            int64        `json:"write_stalls"`
	WriteStallSeconds      float64      `json:"write_stall_seconds"`
	SnapshotsOpen          int64        `json:"snapshots_open"`
	VertexDeletes          int64        `json:"vertex_deletes"`
	BackgroundErrors       int64        `json:"background_errors"`
	WriteAmplification     float64      `json:"write_amplification"`
	ReadAmplification      float64      `json:"read_amplification"`
}

// RecordStats is the vertex records' files: not among the levels, whose
// entries are edge versions.
type RecordStats struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	Cells int64 `json:"cells"`
}

// ViewStats is views.Stats.
type ViewStats struct {
	Open                 KindCounts `json:"open"`
	Created              KindCounts `json:"created"`
	OldestViewAgeSeconds float64    `json:"oldest_view_age_seconds"`
	OldestViewSeq        uint64     `json:"oldest_view_seq"`
	Streams              int        `json:"streams"`
	LostEvents           uint64     `json:"lost_events"`
	LogHead              uint64     `json:"log_head"`
	LogRetained          uint64     `json:"log_retained"`
	LogCapacity          int        `json:"log_capacity"`
	LogLastSeq           uint64     `json:"log_last_seq"`
}

// AnalyticsStats summarizes the registry.
type AnalyticsStats struct {
	Count  int    `json:"count"`  // registered analytics
	Alerts uint64 `json:"alerts"` // alerts ever raised
}

// StatsResponse answers GET /v1/stats.
type StatsResponse struct {
	Store     StoreStats     `json:"store"`
	Views     ViewStats      `json:"views"`
	Analytics AnalyticsStats `json:"analytics"`
	Keys      int            `json:"keys"` // string keys in the dictionary
}

func storeStats(m engine.Metrics, inEdges bool) StoreStats {
	s := StoreStats{
		LastSeq: m.LastSeq, DurableSeq: m.DurableSeq, InEdges: inEdges,
		MemGraphBytes: m.MemGraphBytes, MemGraphEntries: m.MemGraphEntries,
		Files: m.Files(), DiskBytes: m.DiskBytes(), Levels: []LevelStats{},
		Flushes: m.Flushes, FlushSeconds: m.FlushDuration.Seconds(), FlushBytes: m.FlushBytes,
		Compactions: m.Compactions, CompactionSeconds: m.CompactionDuration.Seconds(),
		CompactionBytesRead: m.CompactionBytesRead, CompactionBytesWritten: m.CompactionBytesWritten,
		WriteStalls: m.WriteStalls, WriteStallSeconds: m.WriteStallDuration.Seconds(),
		SnapshotsOpen: m.SnapshotsOpen, VertexDeletes: m.VertexDeletes, BackgroundErrors: m.BackgroundErrors,
		WriteAmplification: m.WriteAmplification(), ReadAmplification: m.ReadAmplification(inEdges),
		VertexRecords: RecordStats{Files: m.VertexRecords.Files, Bytes: m.VertexRecords.Bytes, Cells: m.VertexRecords.Entries},
	}
	for i, l := range m.Levels {
		s.Levels = append(s.Levels, LevelStats{Level: i, Files: l.Files, Bytes: l.Bytes, Entries: l.Entries})
	}
	return s
}

func kindCounts[N int | uint64](m map[views.Kind]N) KindCounts {
	return KindCounts{Fresh: uint64(m[views.Fresh]), Stale: uint64(m[views.Stale]), Private: uint64(m[views.Private])}
}

func viewStats(st views.Stats) ViewStats {
	return ViewStats{
		Open: kindCounts(st.ViewsOpen), Created: kindCounts(st.ViewsCreated),
		OldestViewAgeSeconds: st.OldestViewAge.Seconds(), OldestViewSeq: st.OldestViewSeq,
		Streams: st.Streams, LostEvents: st.LostEvents, LogHead: st.LogHead, LogRetained: st.LogRetained,
		LogCapacity: st.LogCapacity, LogLastSeq: st.LogLastSeq,
	}
}

// Spec is analytics.Spec as the API reads and writes it: durations are Go
// duration strings ("1s", "250ms"), as in the config file.
type Spec struct {
	Name          string  `json:"name,omitempty"`
	Type          string  `json:"type"`
	Root          string  `json:"root,omitempty"`
	Types         string  `json:"types,omitempty"`
	BatchSize     int     `json:"batch_size,omitempty"`
	Interval      string  `json:"interval,omitempty"`
	Stale         bool    `json:"stale,omitempty"`
	Damping       float64 `json:"damping,omitempty"`
	Tolerance     float64 `json:"tolerance,omitempty"`
	MaxIterations int     `json:"max_iterations,omitempty"`
	Threshold     float64 `json:"threshold,omitempty"`
	Direction     string  `json:"direction,omitempty"`
	WindowEdges   int     `json:"window_edges,omitempty"`
	Window        string  `json:"window,omitempty"`
	Lateness      string  `json:"lateness,omitempty"`
	MaxCycle      int     `json:"max_cycle,omitempty"`
	SearchBudget  int     `json:"search_budget,omitempty"`
	PullTimeout   string  `json:"pull_timeout,omitempty"`
	PullMemoryMiB int     `json:"pull_memory_mib,omitempty"`
	MaxBehind     int     `json:"max_behind,omitempty"`
	Measure       string  `json:"measure,omitempty"`
	Evidence      int     `json:"evidence,omitempty"`
	MaxSpan       string  `json:"max_span,omitempty"`
	RingSearch    string  `json:"ring_search,omitempty"`
	MinRatio      float64 `json:"min_ratio,omitempty"`
	MuleSenders   int     `json:"mule_senders,omitempty"`
	MuleReceivers int     `json:"mule_receivers,omitempty"`
}

func duration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// SpecOf converts an analytics.Spec.
func SpecOf(s analytics.Spec) Spec {
	return Spec{Name: s.Name, Type: s.Type, Root: s.Root, Types: s.Types, BatchSize: s.BatchSize, Interval: duration(s.Interval),
		Stale: s.Stale, Damping: s.Damping, Tolerance: s.Tolerance, MaxIterations: s.MaxIterations,
		Threshold: s.Threshold, Direction: s.Direction, WindowEdges: s.WindowEdges, Window: duration(s.WindowDuration),
		Lateness: duration(s.Lateness), MaxCycle: s.MaxCycle, SearchBudget: s.SearchBudget, PullTimeout: duration(s.PullTimeout), PullMemoryMiB: s.PullMemoryMiB,
		MaxBehind: s.MaxBehind, Measure: s.Measure, Evidence: s.Evidence, MaxSpan: duration(s.MaxSpan), RingSearch: s.RingSearch,
		MinRatio: s.MinRatio, MuleSenders: s.MuleSenders, MuleReceivers: s.MuleReceivers}
}

// Analytics converts the spec to an analytics.Spec (not yet validated),
// refusing a string longer than its bound (SpecLimits).
func (s Spec) Analytics() (analytics.Spec, error) {
	if err := s.checkLengths(); err != nil {
		return analytics.Spec{}, err
	}
	out := analytics.Spec{Name: s.Name, Type: s.Type, Root: s.Root, Types: s.Types, BatchSize: s.BatchSize, Stale: s.Stale,
		Damping: s.Damping, Tolerance: s.Tolerance, MaxIterations: s.MaxIterations, Threshold: s.Threshold,
		Direction: s.Direction, WindowEdges: s.WindowEdges, MaxCycle: s.MaxCycle, SearchBudget: s.SearchBudget,
		PullMemoryMiB: s.PullMemoryMiB, MaxBehind: s.MaxBehind, Measure: s.Measure, Evidence: s.Evidence, RingSearch: s.RingSearch,
		MinRatio: s.MinRatio, MuleSenders: s.MuleSenders, MuleReceivers: s.MuleReceivers}
	for _, d := range []struct {
		name, s string
		to      *time.Duration
	}{{"interval", s.Interval, &out.Interval}, {"window", s.Window, &out.WindowDuration}, {"lateness", s.Lateness, &out.Lateness}, {"pull_timeout", s.PullTimeout, &out.PullTimeout}, {"max_span", s.MaxSpan, &out.MaxSpan}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return out, fmt.Errorf("%s: want a duration such as 500ms or 2s, got %q", d.name, d.s)
		}
		*d.to = v
	}
	return out, nil
}

// AnalyticResult is one analytic's state (analytics.Result with keys).
type AnalyticResult struct {
	Spec              Spec       `json:"spec"`
	Ready             bool       `json:"ready"`
	Seq               uint64     `json:"seq"`
	Updates           uint64     `json:"updates"`
	Recomputes        uint64     `json:"recomputes"`
	LastUpdateSeconds float64    `json:"last_update_seconds"`
	UpdatedAt         *time.Time `json:"updated_at,omitempty"`
	Error             string     `json:"error,omitempty"`
	Restored          bool       `json:"restored,omitempty"`
	Summary           any        `json:"summary,omitempty"`
}

// AnalyticsResponse answers GET /v1/analytics.
type AnalyticsResponse struct {
	Analytics []AnalyticResult `json:"analytics"`
}

// DeletedResponse answers DELETE /v1/analytics/{name}.
type DeletedResponse struct {
	Deleted string `json:"deleted"`
}

// The summaries of the analytics, with keys next to their ids: each is
// the analytics package's summary of the same name.
//
//revive:disable:exported
type (
	BFSSummary struct {
		Root     uint64 `json:"root"`
		RootKey  string `json:"root_key,omitempty"`
		Seq      uint64 `json:"seq"`
		Reached  int    `json:"reached"`
		MaxLevel int    `json:"max_level"`
		Levels   []int  `json:"levels"`
	}
	SSSPSummary struct {
		Root    uint64  `json:"root"`
		RootKey string  `json:"root_key,omitempty"`
		Seq     uint64  `json:"seq"`
		Reached int     `json:"reached"`
		MaxDist float64 `json:"max_distance"`
		Error   string  `json:"error,omitempty"`
	}
	VertexRank struct {
		Vertex uint64  `json:"vertex"`
		Key    string  `json:"key,omitempty"`
		Rank   float64 `json:"rank"`
	}
	PageRankSummary struct {
		Seq        uint64  `json:"seq"`
		Vertices   int     `json:"vertices"`
		Iterations int     `json:"iterations"`
		Delta      float64 `json:"delta"`
		// Residual bounds the ranks' distance to the exact ones (about
		// 2*residual/(1-damping) in L1); Pushes and EdgesRead are the
		// last update's work (0 when it iterated).
		Residual  float64      `json:"residual"`
		Pushes    int          `json:"pushes"`
		EdgesRead int          `json:"edges_read"`
		Top       []VertexRank `json:"top"`
	}
	VertexValue struct {
		Vertex uint64  `json:"vertex"`
		Key    string  `json:"key,omitempty"`
		Value  float64 `json:"value"`
	}
	MonitorSummary struct {
		Seq       uint64        `json:"seq"`
		Threshold float64       `json:"threshold"`
		Above     int           `json:"above"`
		Top       []VertexValue `json:"top"`
		Late      uint64        `json:"late,omitempty"` // operations late for a window of a duration
	}
	FraudSummary struct {
		Seq       uint64         `json:"seq"`
		MaxCycle  int            `json:"max_cycle"`
		Cycles    uint64         `json:"cycles"`
		Truncated uint64         `json:"truncated"`
		CutShort  uint64         `json:"pulls_cut_short"`
		Rings     RingSummary    `json:"rings"`
		FanIn     MonitorSummary `json:"fan_in"`
		Mules     int            `json:"mules,omitempty"` // vertices raised as mules, not re-armed
	}
	RingSummary struct {
		Events  int    `json:"events"`
		Late    uint64 `json:"late,omitempty"`
		Dropped uint64 `json:"dropped,omitempty"`
	}
)

// keyer adds keys to the results of package analytics.
type keyer struct{ dict *keydict.Dict }

func (k keyer) key(id uint64) string { return keyOf(k.dict, id) }

// id is the vertex id as the sources gave it (see extID).
func (k keyer) id(id uint64) uint64 { return extID(k.dict, id) }

func (k keyer) ranks(rs []analytics.VertexRank) []VertexRank {
	out := make([]VertexRank, 0, len(rs))
	for _, r := range rs {
		out = append(out, VertexRank{k.id(r.Vertex), k.key(r.Vertex), r.Rank})
	}
	return out
}

func (k keyer) monitor(m analytics.MonitorSummary) MonitorSummary {
	out := MonitorSummary{Seq: m.Seq, Threshold: m.Threshold, Above: m.Above, Top: make([]VertexValue, 0, len(m.Top)), Late: m.Late}
	for _, v := range m.Top {
		out.Top = append(out.Top, VertexValue{k.id(v.Vertex), k.key(v.Vertex), v.Value})
	}
	return out
}

// summary converts an analytic's summary; a type it does not know passes
// through unchanged.
func (k keyer) summary(s any) any {
	switch s := s.(type) {
	case analytics.BFSSummary:
		levels := s.Levels
		if levels == nil {
			levels = []int{}
		}
		return BFSSummary{k.id(s.Root), k.key(s.Root), s.Seq, s.Reached, s.MaxLevel, levels}
	case analytics.SSSPSummary:
		return SSSPSummary{k.id(s.Root), k.key(s.Root), s.Seq, s.Reached, s.MaxDist, s.Error}
	case analytics.PageRankSummary:
		return PageRankSummary{s.Seq, s.Vertices, s.Iterations, s.Delta, s.Residual, s.Pushes, s.EdgesRead, k.ranks(s.Top)}
	case analytics.MonitorSummary:
		return k.monitor(s)
	case analytics.FraudSummary:
		return FraudSummary{s.Seq, s.MaxCycle, s.Cycles, s.Truncated, s.CutShort, RingSummary(s.Rings), k.monitor(s.FanIn), s.Mules}
	}
	return s
}

func (k keyer) result(r analytics.Result) AnalyticResult {
	out := AnalyticResult{Spec: SpecOf(r.Spec), Ready: r.Ready, Seq: r.Seq, Updates: r.Updates, Recomputes: r.Recomputes,
		LastUpdateSeconds: r.LastSecs, Error: r.Error, Restored: r.Restored}
	if !r.UpdatedAt.IsZero() {
		t := r.UpdatedAt.UTC()
		out.UpdatedAt = &t
	}
	if r.Summary != nil {
		out.Summary = k.summary(r.Summary)
	}
	return out
}

// The per-vertex results of the analytics.
//
//revive:disable:exported
type (
	LevelResult struct {
		Level int `json:"level"`
	} // bfs: -1 when unreached
	ComponentResult struct {
		Component    uint64 `json:"component"` // the member with the smallest store id (numbers below 2^32 first, then keys and mapped numbers in order of first sight): each replica's own choice
		ComponentKey string `json:"component_key,omitempty"`
		Size         int    `json:"size"`
	}
	DistanceResult struct {
		Distance  float64 `json:"distance"`
		Reachable bool    `json:"reachable"`
	}
	RankResult struct {
		Rank float64 `json:"rank"`
	}
	ValueResult struct {
		Value float64 `json:"value"`
	} // monitors: the degree or count
)

// VertexResultResponse answers GET /v1/analytics/{name}/vertices/{v}.
type VertexResultResponse struct {
	Analytic string `json:"analytic"`
	Type     string `json:"type"`
	Vertex   uint64 `json:"vertex"`
	Key      string `json:"key,omitempty"`
	Seq      uint64 `json:"seq"` // of the analytic's result when it was read
	Result   any    `json:"result"`
}

func (k keyer) vertexResult(x any) any {
	switch x := x.(type) {
	case analytics.VertexLevel:
		return LevelResult{x.Level}
	case analytics.VertexComponent:
		return ComponentResult{k.id(x.Component), k.key(x.Component), x.Size}
	case analytics.VertexDistance:
		return DistanceResult{x.Distance, x.Reachable}
	case analytics.VertexRank:
		return RankResult{x.Rank}
	case analytics.VertexValue:
		return ValueResult{x.Value}
	}
	return x
}

// TopResponse answers GET /v1/analytics/{name}/top.
type TopResponse struct {
	Analytic string       `json:"analytic"`
	Ready    bool         `json:"ready"`
	K        int          `json:"k"`
	Top      []VertexRank `json:"top"`
}

// Alert is an alert in its one JSON shape, the same as on the alert
// topic and in alerts.log (analytics.AlertRecord; the schema consumers
// validate against is deploy/alerts/alert.schema.json).
type Alert = analytics.AlertRecord

// AlertsResponse answers GET /v1/alerts.
type AlertsResponse struct {
	Alerts []Alert `json:"alerts"`
	Total  uint64  `json:"total"` // alerts ever raised, by every analytic
}
