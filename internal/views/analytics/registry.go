package analytics

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
)

// AlertSink receives every alert the monitors raise (serve writes them to
// a Kafka topic). Publish must not block for long: it runs on the
// analytic's goroutine.
type AlertSink interface {
	Publish(alerts []Alert)
}

// JSONSink is an AlertSink that takes each alert with its JSON as the
// registry wrote it (AlertJSON, of the registry's graph): the registry
// writes an alert's JSON once, for its history (alerts.log) and every such
// sink, which all carry the same bytes. A sink whose AlertGraph is not the
// registry's graph gets Publish instead.
type JSONSink interface {
	AlertSink
	// PublishJSON is Publish, with docs[i] the JSON of alerts[i]. The
	// sink may keep docs (nothing writes to them after); it must not
	// change them.
	PublishJSON(alerts []Alert, docs [][]byte)
	// AlertGraph is the graph the sink's alerts must name.
	AlertGraph() string
}

// Hooks let an embedding service observe the registry (metrics). Each may
// be nil.
type Hooks struct {
	// Updated: one update of an analytic took d; recompute tells whether it
	// was computed from scratch.
	Updated func(name string, recompute bool, d time.Duration)
	// Fresh: an update made an analytic's result reflect operations the
	// oldest of which was applied d before (from its batch's apply to the
	// result being readable: the wait for the pull, the shared topology's
	// advance and the update); seq is the sequence number the result is
	// at now. It is called after the result became readable, so a reader
	// that saw the result at seq may have to wait for the call. Not
	// called for a first compute.
	Fresh func(name string, seq uint64, d time.Duration)
	// Alerted: an analytic raised n alerts of a kind.
	Alerted func(name, kind string, n int)
	// Registered: an analytic was registered (before it runs);
	// Unregistered: it was unregistered and has stopped (not called if
	// another of its name was registered meanwhile). Both are called under
	// the registry's lock: they must not call the Registry.
	Registered   func(s Spec)
	Unregistered func(name string)
}

// RegistryConfig configures a Registry. Zero fields take defaults.
type RegistryConfig struct {
	// AlertRing is how many recent alerts are kept for reading (default
	// 10000), and AlertRingBytes the most memory they may hold (default
	// DefaultAlertRingBytes): beyond it the oldest are no longer kept for
	// reading (their counts are; a History keeps them still).
	AlertRing      int
	AlertRingBytes int64
	// History, when set, keeps the alerts beyond the process: the ring
	// starts from it, every alert kept goes to it, and a checkpoint syncs
	// it first. An alert whose ID the history held at the start (raised
	// before a restart, raised again by the replay) is not kept again,
	// once per alert held; the sinks get it still (they match it against
	// what they delivered).
	History AlertHistory
	// Resolve turns a root given as a string into a vertex id (serve: a
	// number, or a string key through the key dictionary). Default: numbers only.
	Resolve func(string) (uint64, error)
	// Types turns a spec's types (a comma-separated list) into a set
	// (serve: through the type dictionary, typedict.Resolver). Default:
	// type numbers and "default" only.
	Types func(string) (*engine.TypeSet, error)
	Sinks []AlertSink
	// Graph is the graph the alerts are of (package graphid; "": none),
	// as their JSON names it (AlertRecord.Graph) on the alert topic, in
	// the history and over HTTP.
	Graph  string
	Hooks  Hooks
	Logger *slog.Logger
	// Source, when set, turns the reference of an operation (views.Edge.Ref)
	// into the Kafka record it came from: alerts then carry it, and their
	// IDs are derived from it (serve: the ingester's).
	Source func(ref uint64) (AlertSource, bool)
	// Names, when set, names a vertex of an alert: the id its source gave
	// (ext) and its string key ("" when it has none); alerts then carry
	// them (Alert.VertexID, VertexKey, CycleIDs, CycleKeys). Default: the
	// store id, no key.
	Names func(id uint64) (ext uint64, key string)
	// TypeName, when set, names an edge type of an alert's evidence
	// (Evidence.TypeName; serve: the type dictionary's name). Default:
	// "default" for type 0, else the number.
	TypeName func(t uint16) string
	// MemoryLimit, when positive, is the analytics' share of the memory
	// budget: Register refuses an analytic whose estimated need (its
	// per-vertex state over the vertices indexed so far, a fraud monitor's
	// pull_memory_mib) would take what the analytics hold past it.
	MemoryLimit int64
	// VertexLocal, when set, is partitioned mode (serve --owners): the
	// store holds the out-edges of some vertices only, and Register
	// refuses (ErrGraphWide) every analytic whose results would differ
	// from the whole graph's (see VertexLocal).
	VertexLocal bool
}

// ErrGraphWide is Register's refusal, in partitioned mode, of an analytic
// that reads the whole graph.
var ErrGraphWide = errors.New("analytics: a graph-wide analytic in partitioned mode")

// VertexLocal returns nil when an analytic of spec s (validated) gives
// each vertex, on the part of a graph that holds some vertices' out-edges
// (partitioned by source vertex), the result the whole graph would: an
// out-degree monitor, or a fan-out monitor over a window of time (a window
// of operations would span more time on a part that sees a share of
// them). Else an error wrapping ErrGraphWide says why, and what to run.
func VertexLocal(s Spec) error {
	switch {
	case s.Type == "degree" && s.Direction == "out":
		return nil
	case s.Type == "fanout" && s.WindowDuration > 0 && s.WindowEdges == 0:
		return nil
	case s.Type == "fanout":
		return fmt.Errorf("%w: fanout monitor %q counts over a window of operations, and this instance sees only its partitions' share of them (serve --owners), so its window would span more time than the whole stream's: give it a window of time (window=1m) and no window_edges", ErrGraphWide, s.Name)
	}
	return fmt.Errorf("%w: analytic %q (%s) reads more than each vertex's out-edges, and this instance holds the out-edges of its own partitions' vertices only (serve --owners): it would give a partial answer. "+
		"Partitioned mode runs out-degree monitors (degree, direction out) and fanout monitors over a window of time; run replica mode, where every instance holds the whole graph, for bfs, wcc, pagerank, sssp, fraud, fanin and in-degree", ErrGraphWide, s.Name, describe(s))
}

// Need estimates the memory an analytic of spec s (validated) will hold
// over a graph of the given vertex and edge counts.
func Need(s Spec, vertices int, edges int64) int64 {
	k, _ := kindOf(s.Type)
	n := k.perVertex*int64(vertices) + k.perEdge*edges
	if k.fixed != nil {
		n += k.fixed(s)
	}
	return n
}

// Registry runs analytics, each on its own goroutine over its own stream
// view, and serves their results and alerts.
type Registry struct {
	m   *views.Manager
	cfg RegistryConfig

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	entries map[string]*entry // Protected by mu.

	amu       sync.Mutex
	ring      *alertRing // the newest alerts and the counts; Protected by amu.
	lastAlert time.Time  // Time of the newest alert; Protected by amu.
	// historyErr: the history failed; said once. Protected by amu.
	historyErr bool
	// jsonHistory is cfg.History when it takes the alerts' JSON; jsonSinks
	// (nil: none) is, for each of cfg.Sinks, the sink when it takes the
	// JSON of the registry's graph, else nil. Set by NewRegistry.
	jsonHistory JSONHistory
	jsonSinks   []JSONSink

	// onDisk is what the checkpoint file this registry last wrote or
	// restored from holds: each analytic's spec key (specKey) by name;
	// nil: no file known. deferred counts the checkpoints in a row that
	// kept that file (DeferredError). Protected by ckFileMu.
	ckFileMu sync.Mutex
	onDisk   map[string]string
	deferred int
}

// entry is one registered analytic and its run statistics.
type entry struct {
	a      Analytic
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	ready      bool // first compute done; Protected by mu.
	updates    uint64
	recomputes uint64
	last       time.Duration
	lastAt     time.Time
	err        string
	registered time.Time
	// restored: the analytic started from a checkpoint's state (its first
	// pull is an update); a restart after an error recomputes.
	restored bool

	// Catch-up requests of a checkpoint (checkpoint.go): ckReqs wait to be
	// answered; ckWake cancels the wait the analytic is in. Protected by
	// ckMu.
	ckMu   sync.Mutex
	ckReqs []*catchUpReq
	ckWake context.CancelFunc
}

// NewRegistry makes an empty registry over m.
func NewRegistry(m *views.Manager, cfg RegistryConfig) *Registry {
	if cfg.AlertRing <= 0 {
		cfg.AlertRing = 10000
	}
	if cfg.AlertRingBytes <= 0 {
		cfg.AlertRingBytes = DefaultAlertRingBytes
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(s string) (uint64, error) {
			var v uint64
			if _, err := fmt.Sscan(s, &v); err != nil {
				return 0, fmt.Errorf("root %q is not a vertex id", s)
			}
			return v, nil
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Types == nil {
		cfg.Types = typedict.Resolver(nil)
	}
	if cfg.Names == nil {
		cfg.Names = func(id uint64) (uint64, string) { return id, "" }
	}
	if cfg.TypeName == nil {
		cfg.TypeName = (*typedict.Dict)(nil).Name
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Registry{m: m, cfg: cfg, ctx: ctx, cancel: cancel, entries: map[string]*entry{}, ring: newAlertRing(cfg.AlertRing, cfg.AlertRingBytes)}
	r.jsonHistory, _ = cfg.History.(JSONHistory)
	for i, s := range cfg.Sinks {
		if js, ok := s.(JSONSink); ok && js.AlertGraph() == cfg.Graph {
			if r.jsonSinks == nil {
				r.jsonSinks = make([]JSONSink, len(cfg.Sinks))
			}
			r.jsonSinks[i] = js
		}
	}
	if h := cfg.History; h != nil {
		var al []Alert
		var total uint64
		var byName map[string]uint64
		var err error
		if b, ok := h.(boundedHistory); ok { // reads no more than the ring keeps
			al, total, byName, err = b.AlertsWithin(cfg.AlertRingBytes)
		} else {
			al, total, byName, err = h.Alerts()
		}
		if err != nil {
			cfg.Logger.Error("the alert history could not be read: GET /v1/alerts starts empty", "err", err)
		}
		r.ring.seed(al, total, byName)
		if n := len(al); n > 0 {
			r.lastAlert = al[n-1].Time
		}
	}
	return r
}

// topologyNeed estimates the topology's memory from the store's edge
// versions (an upper bound of its edges: versions a compaction has not
// merged yet count too): about 10 bytes per edge (its head in both
// directions and the room lists keep) and 32 per vertex; 8 more per edge
// when the graph turns out to be weighted, which the estimate cannot know.
func (r *Registry) topologyNeed() int64 {
	return 10*r.m.EdgeVersions() + 32*int64(r.m.IndexStats().Vertices)
}

// ErrExists is returned by Register for a name already in use.
var ErrExists = errors.New("analytics: an analytic of that name is registered")

// ErrMemory is returned by Register when the analytics' memory share
// cannot hold one more.
var ErrMemory = errors.New("analytics: over the memory budget")

// ErrNotFound is returned for an unknown analytic name.
var ErrNotFound = errors.New("analytics: no analytic of that name")

// Register validates the spec, starts the analytic on its own goroutine
// and returns its (defaulted) spec. Its first result is ready once its
// first full compute finishes (Result says so).
func (r *Registry) Register(s Spec) (Spec, error) {
	return r.register(s, nil, nil, nil)
}

// Custom is a user-defined analytic over the topology: its Spec has Type
// CustomType and a name; the Registry serializes its Recompute and Update
// calls as for the built-in graph analytics.
type Custom interface {
	Analytic
	TopoAnalytic
}

// RegisterCustom registers a user-defined analytic and starts it like a
// built-in graph analytic (it is not checkpointed: a restart computes it
// from scratch).
func (r *Registry) RegisterCustom(a Custom) (Spec, error) {
	s := a.Spec()
	if s.Type != CustomType {
		return s, fmt.Errorf("analytic %q: a custom analytic's spec has type %q, got %q", s.Name, CustomType, s.Type)
	}
	return r.register(s, nil, nil, a)
}

// register registers s; restored, when not nil, is the analytic with its
// state loaded from a checkpoint, which follows the topology from the log
// position *from on (Restore); custom, when not nil, is a user-defined
// analytic of spec s.
func (r *Registry) register(s Spec, restored Analytic, from *uint64, custom Analytic) (Spec, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	if r.cfg.VertexLocal {
		if err := VertexLocal(s); err != nil {
			return s, err
		}
	}
	var root uint64
	if NeedsRoot(s.Type) {
		var err error
		if root, err = r.cfg.Resolve(s.Root); err != nil {
			return s, &SettingError{Key: "root", Msg: fmt.Sprintf("analytic %q: %v", s.Name, err), Err: err}
		}
	}
	ts, err := r.types(s)
	if err != nil {
		return s, err
	}
	if lim := r.cfg.MemoryLimit; lim > 0 {
		held, need := r.MemoryBytes(), Need(s, r.m.IndexStats().Vertices, r.m.EdgeVersions())
		if k, _ := kindOf(s.Type); k.topo && r.m.TopologyOf(ts).Bytes() == 0 {
			need += r.topologyNeed() // the first graph analytic builds it
		}
		if held+need > lim {
			return s, fmt.Errorf("%w: analytic %q needs about %d MiB, and the analytics hold %d MiB of their %d MiB share of the memory budget: "+
				"raise --memory-budget, remove an analytic, or lower pull_memory_mib", ErrMemory, s.Name, need>>20, held>>20, lim>>20)
		}
	}
	if r.exists(s.Name) {
		return s, fmt.Errorf("%w: %q", ErrExists, s.Name)
	}
	a := restored
	if custom != nil {
		a = custom
	}
	if a == nil {
		var err error
		if a, err = New(s, root, func(al []Alert) { r.raise(s.Name, al) }); err != nil {
			return s, err
		}
	}
	// The stream view opens here, so that the analytic sees every
	// operation applied after Register returns.
	var sv streamView
	sv, err = r.open(s, ts, from)
	if err != nil {
		return s, err
	}
	ready := restored != nil // its saved state, at the checkpoint's seq
	if k, _ := kindOf(s.Type); k.topo && k.monitor && restored == nil {
		// A monitor reports what changes after Register returns: its
		// first compute (which takes the graph as it is) runs now, not at
		// its first pull, which may come after more operations. Not under
		// mu: building the topology takes a while.
		if err := r.firstCompute(a.(TopoAnalytic), sv.(*views.TopoStream)); err != nil {
			sv.Close()
			return s, err
		}
		ready = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		sv.Close()
		return s, views.ErrClosed
	}
	if _, ok := r.entries[s.Name]; ok { // registered meanwhile
		sv.Close()
		return s, fmt.Errorf("%w: %q", ErrExists, s.Name)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	e := &entry{a: a, cancel: cancel, done: make(chan struct{}), registered: time.Now(), restored: restored != nil, ready: ready}
	r.entries[s.Name] = e
	if r.cfg.Hooks.Registered != nil {
		r.cfg.Hooks.Registered(s)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(e.done)
		r.run(ctx, e, sv)
	}()
	return s, nil
}

// exists reports whether an analytic of that name is registered.
func (r *Registry) exists(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.entries[name]
	return ok
}

// firstCompute computes a on the topology now (its stream's first pull).
func (r *Registry) firstCompute(a TopoAnalytic, st *views.TopoStream) error {
	u, err := st.PullNow(r.ctx)
	if err != nil {
		return err
	}
	defer u.Done()
	return a.Recompute(r.ctx, u.G)
}

// streamView is the stream an analytic follows: a *views.TopoStream or a
// *views.Stream.
type streamView interface{ Close() }

// types is the set of edge types an analytic of spec s reads (nil: all).
func (r *Registry) types(s Spec) (*engine.TypeSet, error) {
	if s.Types == "" {
		return nil, nil
	}
	ts, err := r.cfg.Types(s.Types)
	if err != nil {
		return nil, &SettingError{Key: "types", Msg: fmt.Sprintf("analytic %q: types: %v", s.Name, err), Err: err}
	}
	return ts, nil
}

// open registers the stream view of an analytic of spec s, which reads
// the edge types ts (nil: all); from, when not nil, is the log position a
// restored analytic's stream starts at (Restore).
func (r *Registry) open(s Spec, ts *engine.TypeSet, from *uint64) (streamView, error) {
	k, _ := kindOf(s.Type)
	if k.stream {
		// The fan monitors hold their window themselves (fanWindow), and
		// take a burst (a restart's replay) MaxBehind at a time.
		so := views.StreamOptions{BatchSize: s.BatchSize, MaxBehind: min(s.MaxBehind, r.m.LogCapacity()), Types: ts, InChunks: true}
		if from != nil {
			return r.m.RestoredStream(so, *from)
		}
		return r.m.Stream(so)
	}
	if from != nil { // a checkpoint holds the topology of every type only
		return r.m.Topology().RestoredStream(r.topoOptions(s), *from)
	}
	return r.m.TopologyOf(ts).Stream(r.topoOptions(s))
}

// topoOptions are the options of a graph analytic's topology stream.
func (r *Registry) topoOptions(s Spec) views.StreamOptions {
	return views.StreamOptions{BatchSize: s.BatchSize, MaxBehind: min(s.MaxBehind, r.m.LogCapacity()), Presence: NeedsPresence(s)}
}

// NeedsPresence says whether the stream of an analytic of spec s is opened
// with Presence (it says what was there before each operation, which fraud,
// degree, pagerank and sssp, the priorUpdaters, read).
func NeedsPresence(s Spec) bool {
	return s.Type == "fraud" || s.Type == "degree" || s.Type == "pagerank" || s.Type == "sssp"
}

// UpdateTopo brings a to u, a pull of its stream (opened with Presence
// when NeedsPresence): a recompute when u is Lost, else its update. It
// returns whether a recomputed.
func UpdateTopo(ctx context.Context, a TopoAnalytic, u *views.TopoUpdate) (bool, error) {
	if r, ok := a.(releaser); ok && u.Lost {
		return true, r.recomputeReleasing(ctx, u)
	}
	if u.Lost {
		return true, a.Recompute(ctx, u.G)
	}
	if p, ok := a.(priorUpdater); ok {
		return p.UpdatePrior(ctx, u)
	}
	return a.Update(ctx, u.G, u.Edges)
}

// releaser is a TopoAnalytic whose recompute copies what it reads and
// releases the pull u before it runs (pagerank: see kernels.PRGraph); u must not
// be read after it.
type releaser interface {
	recomputeReleasing(ctx context.Context, u *views.TopoUpdate) error
}

// priorUpdater is a TopoAnalytic whose updates need what was there before
// each operation (fraud: which edges are new); its stream has Presence.
type priorUpdater interface {
	UpdatePrior(ctx context.Context, u *views.TopoUpdate) (recomputed bool, err error)
}

// Unregister stops an analytic and forgets it.
func (r *Registry) Unregister(name string) error {
	r.mu.Lock()
	e, ok := r.entries[name]
	delete(r.entries, name)
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	e.cancel()
	<-e.done
	if r.cfg.Hooks.Unregistered != nil {
		// Under mu, as Registered: not after the Registered of an analytic
		// of the same name registered meanwhile.
		r.mu.Lock()
		if _, again := r.entries[name]; !again {
			r.cfg.Hooks.Unregistered(name)
		}
		r.mu.Unlock()
	}
	return nil
}

// Close stops every analytic and waits for them.
func (r *Registry) Close() {
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}

func (e *entry) record(recompute bool, d time.Duration, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.err = err.Error()
		return
	}
	e.err = ""
	e.ready = true
	e.last, e.lastAt = d, time.Now()
	if recompute {
		e.recomputes++
	} else {
		e.updates++
	}
}

// run drives one analytic until ctx ends, starting on sv. Errors are
// recorded in the result and retried after a pause; the analytic starts
// over from a full compute on a fresh stream.
func (r *Registry) run(ctx context.Context, e *entry, sv streamView) {
	s := e.a.Spec()
	log := r.cfg.Logger.With("analytic", s.Name)
	for ctx.Err() == nil {
		if sv == nil {
			ts, err := r.types(s) // resolved at Register: names do not go away
			if err == nil {
				sv, err = r.open(s, ts, nil)
			}
			if err != nil {
				if errors.Is(err, views.ErrClosed) {
					return
				}
				e.record(false, 0, err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
		}
		err := r.follow(ctx, e, sv)
		sv = nil
		if ctx.Err() != nil || errors.Is(err, views.ErrClosed) {
			return
		}
		e.record(false, 0, err)
		log.Error("analytic failed; restarting from a full compute", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *Registry) observe(name string, recompute bool, d time.Duration) {
	if r.cfg.Hooks.Updated != nil {
		r.cfg.Hooks.Updated(name, recompute, d)
	}
}

// fresh reports, once an update has made e's result readable at its new
// seq, how long ago the oldest operation it absorbed (the first after
// prev, its seq before the update) was applied.
func (r *Registry) fresh(e *entry, prev uint64) {
	seq := e.a.Seq()
	if r.cfg.Hooks.Fresh == nil || seq <= prev {
		return
	}
	if at, ok := r.m.AppliedAfter(prev); ok {
		r.cfg.Hooks.Fresh(e.a.Spec().Name, seq, max(0, time.Since(at)))
	}
}

// follow computes from scratch on the stream view sv (closing it when
// done), then applies every pull.
func (r *Registry) follow(ctx context.Context, e *entry, sv streamView) error {
	s := e.a.Spec()
	defer sv.Close()
	// step computes one pull of a graph analytic (the first from scratch),
	// reports whether it recomputed, and sets began once the pull is in
	// (the time spent waiting for operations is not the update's).
	var step func(first bool) (bool, error)
	var began time.Time
	switch a := e.a.(type) {
	case TopoAnalytic:
		st := sv.(*views.TopoStream)
		step = func(bool) (bool, error) {
			// The first pull is Lost (compute from scratch), unless the
			// analytic was restored from a checkpoint.
			u, err := pullFor(ctx, e, st.Pull, st.PullNow)
			if err != nil {
				return false, err
			}
			defer u.Done()
			began = time.Now()
			return UpdateTopo(ctx, a, u)
		}
	case StreamAnalytic:
		st := sv.(*views.Stream)
		t0 := time.Now()
		for first := true; ; first = false {
			// The first pull takes what there is, at once, and the analytic
			// is ready after it (an empty window, or the checkpoint's, with
			// what came since): so it reports the seq its stream started at
			// (the store's), not 0 (and that far behind) until the next
			// operation comes.
			var b *views.StreamBatch
			var err error
			if first {
				b, err = st.PullNow(ctx)
			} else {
				if err := e.pace(ctx, s.Interval, t0); err != nil {
					return err
				}
				b, err = pullFor(ctx, e, st.Pull, st.PullNow)
			}
			prev := e.a.Seq()
			var lost *views.LostError
			if errors.As(err, &lost) {
				a.Reset()
				r.cfg.Logger.Warn("analytic fell behind the edge log; its window restarts", "analytic", s.Name, "missed", lost.Missed)
				e.record(true, 0, nil)
				continue
			}
			if err != nil {
				return err
			}
			t0 = time.Now()
			a.Consume(b)
			e.record(first && !e.restored, time.Since(t0), nil)
			r.observe(s.Name, false, time.Since(t0))
			e.answer(e.a.Seq())
			if !first {
				r.fresh(e, prev)
			}
		}
	}
	if step == nil {
		return fmt.Errorf("analytic %q has no driver", s.Name)
	}
	for first := true; ; first = false {
		if !first {
			if err := e.pace(ctx, s.Interval, began); err != nil {
				return err
			}
		}
		prev := e.a.Seq()
		re, err := step(first)
		if err != nil {
			return err
		}
		d := time.Since(began)
		e.record(re, d, nil)
		r.observe(s.Name, re, d)
		e.answer(e.a.Seq())
		if !first {
			r.fresh(e, prev)
		}
	}
}

// pace waits until interval has passed since t0, cut short by a
// checkpoint's catch-up request; it fails only when ctx ends.
func (e *entry) pace(ctx context.Context, interval time.Duration, t0 time.Time) error {
	wctx, stop := e.waitContext(ctx)
	defer stop()
	if err := pace(wctx, interval, t0); err != nil && ctx.Err() != nil {
		return err
	}
	return nil
}

// pullFor pulls an analytic's stream with pull, waiting for new
// operations, unless a checkpoint's catch-up request comes meanwhile: then
// with now, which takes what there is.
func pullFor[B any](ctx context.Context, e *entry, pull, now func(context.Context) (B, error)) (B, error) {
	wctx, stop := e.waitContext(ctx)
	b, err := pull(wctx)
	stop()
	if err != nil && ctx.Err() == nil && e.pending() {
		b, err = now(ctx)
	}
	return b, err
}

// pace waits until interval has passed since t0.
func pace(ctx context.Context, interval time.Duration, t0 time.Time) error {
	if wait := interval - time.Since(t0); wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}

// raise names, stamps, keeps and forwards alerts, a part of at most
// handOverBytes of alerts at a time (the first alert whatever its size),
// so that their JSON, written for the history and the sinks, is never
// that of a whole burst at once.
func (r *Registry) raise(name string, al []Alert) {
	for i := range al {
		if al[i].Ref != 0 && r.cfg.Source != nil {
			if src, ok := r.cfg.Source(al[i].Ref); ok {
				al[i].Source = &src
			}
		}
		r.name(&al[i])
		al[i].ID = alertID(&al[i])
		bound(&al[i]) // before the time, which the bound makes room for
	}
	for len(al) > 0 {
		n, bytes := 1, alertBytes(&al[0])
		for ; n < len(al); n++ {
			if bytes += alertBytes(&al[n]); bytes > handOverBytes {
				break
			}
		}
		r.raisePart(name, al[:n])
		al = al[n:]
	}
}

// raisePart stamps, keeps and forwards named alerts.
func (r *Registry) raisePart(name string, al []Alert) {
	kinds := map[string]int{}
	for i := range al {
		kinds[al[i].Kind]++
	}
	r.amu.Lock()
	// The time is read under amu, so that the ring (and every sink's
	// stream) is in time order even when analytics on several goroutines
	// raise at once; and never before the last alert's, whatever the wall
	// clock does. INVARIANT: r.lastAlert is the Time of the newest alert
	// in the ring. Protected by amu.
	now := time.Now().UTC()
	if now.Before(r.lastAlert) {
		now = r.lastAlert
	}
	r.lastAlert = now
	for i := range al {
		al[i].Time = now
	}
	// Each alert's JSON, written once for the history and the sinks that
	// take it (the same bytes in alerts.log and on the alert topic).
	var docs [][]byte
	if r.jsonHistory != nil || r.jsonSinks != nil {
		docs = AlertJSON(al, r.cfg.Graph)
	}
	// The alerts kept: all of them, but while alerts kept before a
	// restart may be raised again (a replay), those are kept once.
	fresh, freshDocs := al, docs
	if r.ring.replaying() {
		fresh = make([]Alert, 0, len(al))
		freshDocs = freshDocs[:0:0]
		for i, a := range al {
			if r.ring.replayed(a.ID) {
				kinds[a.Kind]--
				continue
			}
			fresh = append(fresh, a)
			if docs != nil {
				freshDocs = append(freshDocs, docs[i])
			}
		}
	}
	for _, a := range fresh {
		r.ring.add(a)
	}
	if h := r.cfg.History; h != nil && len(fresh) > 0 {
		var err error
		if r.jsonHistory != nil {
			err = r.jsonHistory.AppendJSON(fresh, freshDocs)
		} else {
			err = h.Append(fresh)
		}
		if err != nil && !r.historyErr {
			r.historyErr = true
			r.cfg.Logger.Error("the alert history failed: alerts raised from now on are not kept across a restart (GET /v1/alerts still lists them until then)", "err", err)
		}
	}
	r.amu.Unlock()
	for i, s := range r.cfg.Sinks {
		if js := jsonSinkAt(r.jsonSinks, i); js != nil {
			js.PublishJSON(al, docs)
		} else {
			s.Publish(al)
		}
	}
	if r.cfg.Hooks.Alerted != nil {
		for k, n := range kinds {
			if n > 0 {
				r.cfg.Hooks.Alerted(name, k, n)
			}
		}
	}
}

// jsonSinkAt is sinks[i], nil past the end.
func jsonSinkAt(sinks []JSONSink, i int) JSONSink {
	if i < len(sinks) {
		return sinks[i]
	}
	return nil
}

// name fills a's names: of its vertex, its cycle's and its evidence's
// (RegistryConfig.Names), its evidence's types (TypeName), records
// (Source) and, where an event has no reference, its record's
// "topic/partition/offset".
func (r *Registry) name(a *Alert) {
	ext, key := r.cfg.Names(a.Vertex)
	a.VertexID, a.VertexKey = strconv.FormatUint(ext, 10), key
	for i := range a.Evidence {
		e := &a.Evidence[i]
		ext, key := r.cfg.Names(e.Src)
		e.SrcID, e.SrcKey = strconv.FormatUint(ext, 10), key
		ext, key = r.cfg.Names(e.Dst)
		e.DstID, e.DstKey = strconv.FormatUint(ext, 10), key
		e.TypeName = r.cfg.TypeName(e.Type)
		if e.OpRef != 0 && r.cfg.Source != nil {
			if src, ok := r.cfg.Source(e.OpRef); ok {
				e.Source = &src
			}
		}
		if e.EventRef == "" && e.Source != nil {
			e.EventRef = fmt.Sprintf("%s/%d/%d", e.Source.Topic, e.Source.Partition, e.Source.Offset)
		}
	}
	if a.Cycle == nil {
		return
	}
	a.CycleIDs, a.CycleKeys = make([]string, len(a.Cycle)), nil
	for i, v := range a.Cycle {
		ext, key := r.cfg.Names(v)
		a.CycleIDs[i] = strconv.FormatUint(ext, 10)
		if key == "" {
			continue
		}
		if a.CycleKeys == nil { // only a cycle through a key has keys
			a.CycleKeys = make([]string, len(a.Cycle))
		}
		a.CycleKeys[i] = key
	}
}

// alertID derives an alert's ID from what raised it: the analytic, the
// kind, the Kafka record of the operation (else the seq) and the vertex
// or, for a cycle, the cycle whatever vertex its list starts at, each
// vertex by the name its source gave it (its key, else its id as the
// source gave it: a.VertexKey and a.VertexID, set by name first), never
// by the store's id for it, which differs between replicas (each numbers
// keys in the order it met them). So every replica gives one trigger
// one ID. 32 hex digits (128 bits of SHA-256).
func alertID(a *Alert) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", a.Analytic, a.Kind)
	if s := a.Source; s != nil {
		fmt.Fprintf(h, "record\x00%s\x00%d\x00%d\x00", s.Topic, s.Partition, s.Offset)
	} else {
		fmt.Fprintf(h, "seq\x00%d\x00", a.Seq)
	}
	if a.Kind == "cycle" {
		names := make([]string, len(a.CycleIDs))
		for i := range names {
			names[i] = vertexName(a.CycleIDs[i], a.CycleKeys, i)
		}
		h.Write([]byte(canonicalNames(names)))
	} else {
		h.Write([]byte(vertexName(a.VertexID, []string{a.VertexKey}, 0)))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// vertexName is a vertex as its source named it: "k:" and its key when
// keys[i] is one, else "n:" and id (the source's id in decimal).
func vertexName(id string, keys []string, i int) string {
	if i < len(keys) && keys[i] != "" {
		return "k:" + keys[i]
	}
	return "n:" + id
}

// canonicalNames is a cycle of vertex names as one string, from its
// least name (in byte order) on, whatever name its list starts at; each
// name after its length (a uvarint), so that no two cycles give one
// string.
func canonicalNames(c []string) string {
	m := 0
	for i, v := range c {
		if v < c[m] {
			m = i
		}
	}
	var b []byte
	for i := range c {
		n := c[(m+i)%len(c)]
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
	}
	return string(b)
}

// Alerts returns up to limit of the newest alerts (of the named analytic
// when name is not empty), oldest first, and how many were ever raised (by
// that analytic when name is not empty), across restarts with a History.
func (r *Registry) Alerts(name string, limit int) ([]Alert, uint64) {
	r.amu.Lock()
	defer r.amu.Unlock()
	return r.ring.newest(name, limit)
}

// Result is an analytic's state as the API reports it.
type Result struct {
	Spec       Spec      `json:"spec"`
	Ready      bool      `json:"ready"` // the first full compute has finished
	Seq        uint64    `json:"seq"`   // sequence number the result corresponds to
	Updates    uint64    `json:"updates"`
	Recomputes uint64    `json:"recomputes"`
	LastSecs   float64   `json:"last_update_seconds"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	Error      string    `json:"error,omitempty"`
	// Restored: the analytic resumed from a checkpoint's state instead of
	// computing from scratch.
	Restored bool `json:"restored,omitempty"`
	Summary  any  `json:"summary,omitempty"`
}

func (e *entry) result() Result {
	e.mu.Lock()
	res := Result{Spec: e.a.Spec(), Ready: e.ready, Updates: e.updates, Recomputes: e.recomputes,
		LastSecs: e.last.Seconds(), UpdatedAt: e.lastAt, Error: e.err, Restored: e.restored}
	e.mu.Unlock()
	if res.Ready {
		res.Seq = e.a.Seq()
		res.Summary = e.a.Summary()
	}
	return res
}

// list returns the registered entries (in no order).
func (r *Registry) list() []*entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	es := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		es = append(es, e)
	}
	return es
}

// Results returns every analytic's result, by name.
func (r *Registry) Results() []Result {
	es := r.list()
	out := make([]Result, len(es))
	for i, e := range es {
		out[i] = e.result()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name < out[j].Spec.Name })
	return out
}

func (r *Registry) get(name string) (*entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return e, nil
}

// Result returns one analytic's result.
func (r *Registry) Result(name string) (Result, error) {
	e, err := r.get(name)
	if err != nil {
		return Result{}, err
	}
	return e.result(), nil
}

// Vertex returns an analytic's per-vertex result for v (false: none).
func (r *Registry) Vertex(name string, v uint64) (any, bool, error) {
	e, err := r.get(name)
	if err != nil {
		return nil, false, err
	}
	x, ok := e.a.Vertex(v)
	return x, ok, nil
}

// TopRanks returns the k highest ranks of a pagerank analytic.
func (r *Registry) TopRanks(name string, k int) ([]VertexRank, error) {
	e, err := r.get(name)
	if err != nil {
		return nil, err
	}
	pr, ok := e.a.(*pagerank)
	if !ok {
		return nil, fmt.Errorf("analytics: %q is a %s analytic, not pagerank", name, e.a.Spec().Type)
	}
	return pr.Top(k), nil
}

// Freshness of one analytic's result against the newest batch, and what
// it holds.
type Freshness struct {
	Ready  bool   // the first full compute has finished
	Behind uint64 // sequence numbers the result is behind head (0 before Ready)
	// Age is how long the oldest operation the result does not reflect has
	// waited (0 when it reflects every one; since registration before the
	// first compute).
	Age time.Duration
	// MemoryBytes is what the analytic holds (per-vertex state, windows,
	// the pull in progress); the shared vertex index is the views'.
	MemoryBytes int64
	// PullsCutShort counts pulls its limits cut short (fraud).
	PullsCutShort uint64
}

// memoryReporter is implemented by every built-in analytic.
type memoryReporter interface{ MemoryBytes() int64 }

// cutShorter is implemented by analytics whose pulls are bounded.
type cutShorter interface{ PullsCutShort() uint64 }

// MemoryBytes is what the analytics hold in all, the views' shared vertex
// index and topology included.
func (r *Registry) MemoryBytes() int64 {
	n := r.m.IndexStats().Bytes + r.m.TopologiesBytes()
	for _, e := range r.list() {
		if m, ok := e.a.(memoryReporter); ok {
			n += m.MemoryBytes()
		}
	}
	return n
}

// AlertBytes is the memory of the alerts kept for reading (at most
// RegistryConfig.AlertRingBytes but for the newest alone).
func (r *Registry) AlertBytes() int64 {
	r.amu.Lock()
	defer r.amu.Unlock()
	return r.ring.bytes
}

// Freshness returns, per analytic, how fresh its result is against head,
// the newest sequence number (for metrics).
// It reads only each analytic's readiness and seq: no summary is built, so
// a metrics scrape costs nothing per vertex.
func (r *Registry) Freshness(head uint64) map[string]Freshness {
	now := time.Now()
	es := r.list()
	out := make(map[string]Freshness, len(es))
	for _, e := range es {
		name := e.a.Spec().Name
		e.mu.Lock()
		f := Freshness{Ready: e.ready}
		registered := e.registered
		e.mu.Unlock()
		seq := e.a.Seq()
		if f.Ready && head > seq {
			f.Behind = head - seq
		}
		switch at, ok := r.m.AppliedAfter(seq); {
		case !f.Ready:
			f.Age = now.Sub(registered)
		case ok:
			f.Age = max(0, now.Sub(at))
		}
		if m, ok := e.a.(memoryReporter); ok {
			f.MemoryBytes = m.MemoryBytes()
		}
		if c, ok := e.a.(cutShorter); ok {
			f.PullsCutShort = c.PullsCutShort()
		}
		out[name] = f
	}
	return out
}

// describe names s's type, with its direction for a degree monitor.
func describe(s Spec) string {
	if s.Type == "degree" {
		return "degree, direction " + s.Direction
	}
	return s.Type
}
