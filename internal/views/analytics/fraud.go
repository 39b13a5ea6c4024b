package analytics

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// fraud reports rings of payments and every vertex whose fan-in (upserts
// into it) within the window comes to exceed the threshold. It follows the
// Manager's topology (TopoAnalytic), so that its state, checkpointed with
// the topology, resumes exactly where a restart's replay takes it up.
//
// Rings: with ring_search=timed (the default) a ring is a cycle of events
// in time order within max_span, searched in the monitor's own window of
// events when the event that completes it arrives (rings.go). With
// ring_search=any it is every new directed cycle of length at most
// MaxCycle closed by a newly ingested edge in the topology, whatever the
// times, as follows; its alert's evidence is, per hop, the newest event of
// the edge the ring window holds.
//
// A cycle is new when it exists in the graph after a pull and not before:
// it then holds at least one edge that did not exist before (a new edge:
// absent just before its first operation of the pull, TopoUpdate.Prior,
// and present after). For each new edge (a, b) the search enumerates
// simple paths b -> ... -> a of at most MaxCycle-1 edges in the new
// graph, level by level over the out-lists, first finding each vertex's
// distance to a over the in-lists (up to MaxCycle-2) and extending a path
// only towards vertices that can still close it in time. A cycle holding
// several new edges is reported once, credited to the one whose last
// upsert came latest (the trigger: its alert names that operation's Kafka
// record). A search that would exceed SearchBudget path extensions stops
// and is counted as truncated.
//
// The fan-in window (fanWindow: its measure, and with MuleSenders and
// MuleReceivers the mule pattern, which keeps each vertex's money out too)
// is kept here, operation by operation in log order, so that the measures
// and the crossings, each raised by the upsert that made it, depend on
// the order of the operations only, not on how pulls cut them.
//
// A partial pull (TopoUpdate.Partial: the stream is further behind than
// MaxBehind) carries the next operations only, while its G is already at
// the newest seq: the search then runs over the graph after the pull's
// operations (cutGraph: G with the edges the operations beyond them
// changed set back), never over G itself, in which a cycle that a later
// operation closes would be found now, credited to an edge of this pull,
// and again by the pull that holds its closing edge (two alerts of two
// IDs for one cycle).
//
// One pull is bounded in time (PullTimeout) and memory (PullMemoryMiB, the
// searches' paths, distances and cycles found, and a partial pull's
// changes set back): a pull over either stops
// searching, reports the cycles found so far (each a real new cycle: a cut
// pull may miss cycles, never invents one), counts itself in cutShort and
// returns; the next pull goes on from the next operations.
type fraud struct {
	spec   Spec
	alerts func([]Alert)
	now    func() time.Time // the clock of the pull deadline and the window (tests replace it)
	// maxPullBytes is PullMemoryMiB in bytes (tests lower it).
	maxPullBytes int64
	// handOver is the alerts a pull holds before it hands them over
	// (handOverBytes; tests lower it).
	handOver int64

	mu        sync.RWMutex
	win       *fanWindow  // Protected by mu.
	seq       uint64      // Protected by mu.
	cycles    uint64      // reported so far; Protected by mu.
	truncated uint64      // searches cut short; Protected by mu.
	cutShort  uint64      // pulls cut short; Protected by mu.
	ringSum   RingSummary // the ring window's figures after the last pull; Protected by mu.

	// rmu guards the ring window, which the updater uses for a whole
	// pull's searches without holding mu (readers of the summary do not
	// wait for them); a checkpoint reads it. Lock order: rmu, then mu.
	rmu sync.Mutex
	rw  *ringWindow // Protected by rmu.

	pullBytes atomic.Int64 // memory the pull in progress holds (0 between pulls)
	ringBytes atomic.Int64 // the ring window's memory after the last pull
}

func newFraud(s Spec, alerts func([]Alert)) *fraud {
	return &fraud{spec: s, alerts: alerts, now: time.Now, maxPullBytes: int64(s.PullMemoryMiB) << 20,
		handOver: handOverBytes, win: newFanWindow(fanConfigOf(s)),
		rw: newRingWindow(s)}
}

func (a *fraud) Spec() Spec { return a.spec }

func (a *fraud) Seq() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seq
}

// Recompute starts over: cycles already in g are not new, and the
// windows restart empty.
func (a *fraud) Recompute(ctx context.Context, g *views.Topo) error {
	a.rmu.Lock()
	a.rw.reset()
	a.rmu.Unlock()
	a.ringBytes.Store(0)
	a.mu.Lock()
	a.win.reset()
	a.seq = g.Seq
	a.ringSum = RingSummary{}
	a.mu.Unlock()
	return ctx.Err()
}

// Update without what was there before each operation cannot tell new
// edges: the registry calls UpdatePrior (its stream has Presence).
func (a *fraud) Update(ctx context.Context, g *views.Topo, _ []views.Edge) (bool, error) {
	return true, a.Recompute(ctx, g)
}

// UpdatePrior applies one pull of a stream with Presence: its edges with
// what was there before each (u.Prior), over u.G; the monitor is then at
// u.Seq (a partial pull leaves the rest for the next).
func (a *fraud) UpdatePrior(ctx context.Context, u *views.TopoUpdate) (bool, error) {
	g, edges, prior := u.G, u.Edges, u.Prior
	if len(prior) != len(edges) {
		return true, a.Recompute(ctx, g)
	}
	// The pull's alerts go out as they come, a batch at a time (see
	// handOverBytes), in the order they were raised: fan-in and mule
	// alerts, then rings.
	b := newAlertBatch(a.alerts, a.handOver)
	defer b.flush() // what an error left: raised, so handed over
	var fan []Alert
	a.mu.Lock()
	for k, e := range edges {
		if k%warmAhead == 0 {
			a.win.warm(edges[k:min(k+warmAhead, len(edges))])
		}
		if prior[k] == views.Expansion {
			continue // not an operation of the log: its vertex delete is
		}
		e.Op = u.LoggedOp(k)                                     // each payment's own amount, type and payload, not the topology's edge
		fan = windowAlerts(a.win, a.spec.Name, e, &a.mu, b, fan) // fan_in and mule alerts
	}
	a.mu.Unlock()
	// The pull's searches get what the ring window leaves of pull_memory_mib
	// (at least half: the window takes at most the other).
	lim := pullLimits{deadline: a.now().Add(a.spec.PullTimeout), now: a.now, maxBytes: max(a.maxPullBytes/2, a.maxPullBytes-a.ringBytes.Load()), live: &a.pullBytes}
	rings, truncated, cut, err := a.updateRings(ctx, u, lim, b)
	a.pullBytes.Store(0)
	if err != nil {
		return false, err
	}
	b.flush()
	// INVARIANT: the seq moves only once the alerts up to it are handed
	// over (a reader, or a checkpoint, that sees the seq sees them).
	a.mu.Lock()
	a.seq = u.Seq
	a.cycles += rings
	a.truncated += truncated
	if cut {
		a.cutShort++
	}
	a.mu.Unlock()
	return false, nil
}

// updateRings applies one pull to the rings: its events to the ring
// window and, by ring_search, the timed search of each or the search
// without time of the topology; it adds the alerts to b and returns the
// counts of rings and of searches cut short by the budget, and whether
// the pull's limits cut it.
func (a *fraud) updateRings(ctx context.Context, u *views.TopoUpdate, lim pullLimits, b *alertBatch) (rings, truncated uint64, cut bool, err error) {
	a.rmu.Lock()
	defer func() {
		sum := RingSummary{Events: len(a.rw.held), Late: a.rw.late, Dropped: a.rw.dropped}
		a.ringBytes.Store(a.rw.memory())
		a.rmu.Unlock()
		a.mu.Lock()
		a.ringSum = sum
		a.mu.Unlock()
	}()
	if a.spec.RingSearch != "any" {
		s := &topoSearch{lim: lim}
		rings, truncated, cut = a.ringsOf(u, s, nil, b)
		return rings, truncated, cut, ctx.Err()
	}
	// The window first (every event of the pull), for the evidence.
	posAt := make([]uint64, len(u.Edges))
	a.ringsOf(u, nil, posAt, nil)
	var ahead func(func(views.Edge, views.Prior)) bool
	if u.Partial {
		ahead = u.EachAhead
	}
	cyc, tr, cut, err := topoNewCycles(ctx, u.G, ahead, u.Edges, u.Prior, a.spec.MaxCycle, a.spec.SearchBudget, lim)
	if err != nil {
		return 0, 0, false, err
	}
	for _, c := range cyc {
		ev, dropped, t := a.anyEvidence(u.G, c.ids, posAt[c.at])
		if b.add(Alert{Analytic: a.spec.Name, Kind: "cycle", Seq: u.Seq, Vertex: c.ids[0], Cycle: c.ids, Value: float64(len(c.ids)),
			Ref: c.by.Ref, EventTime: c.by.Op.Time(), Evidence: ev, EvidenceDropped: dropped, Totals: t}) {
			b.flush()
		}
	}
	return uint64(len(cyc)), uint64(tr), cut, nil
}

// pullLimits bound one pull's searches.
type pullLimits struct {
	deadline time.Time
	now      func() time.Time
	maxBytes int64
	live     *atomic.Int64 // where the searches' memory is published (for metrics)
}

// Memory the searches account for, per item (Go's slice headers, map
// entries and their overhead, rounded up).
const (
	distEntryBytes = 40 // one entry of a distance map
	pathBytes      = 24 // one path, besides 4 bytes per vertex
	cycleBytes     = 96 // one cycle found and its key, besides 16 bytes per vertex
	clockEvery     = 256
)

// foundCycle is a new cycle (as ids, from the new edge's source) and the
// operation credited with closing it (at index at of the pull's edges).
type foundCycle struct {
	ids []uint64
	by  views.Edge
	at  int
}

// topoNewCycles returns the cycles of length <= k of the graph after
// edges that hold an edge absent before edges, each once, in the order
// their triggers arrived. That graph is g when ahead is nil, else g with
// the operations ahead gives (those g holds beyond edges: a partial
// pull's TopoUpdate.EachAhead) set back. cut reports that the pull's
// limits stopped it (or that ahead could not give them all): the cycles
// returned are real new cycles, but the new edges not yet searched were
// skipped.
func topoNewCycles(ctx context.Context, g *views.Topo, ahead func(func(views.Edge, views.Prior)) bool, edges []views.Edge, prior []views.Prior, k, budget int, lim pullLimits) (found []foundCycle, truncated int, cut bool, err error) {
	s := &topoSearch{g: g, k: k, budget: budget, lim: lim, dists: map[int32]map[int32]int{}}
	if ahead != nil {
		if s.at = cutOf(g, ahead, s.charge); s.at == nil {
			return nil, 0, true, nil
		}
		defer func() { s.charge(-s.at.bytes) }()
	}
	// Per pair: present before the pull (what its first operation found)
	// and its last upsert.
	type pairState struct {
		before bool
		last   int // index in edges of its last upsert, -1: none
	}
	pairs := map[[2]uint64]*pairState{}
	for i, e := range edges {
		if prior[i] == views.VertexOp || e.Op.Kind == engine.OpDeleteVertex {
			continue
		}
		key := [2]uint64{e.Op.Src, e.Op.Dst}
		p, ok := pairs[key]
		if !ok {
			p = &pairState{before: prior[i] != views.WasAbsent, last: -1}
			pairs[key] = p
		}
		if e.Op.Kind == engine.OpUpsert {
			p.last = i
		}
	}
	type fresh struct {
		a, b int32
		by   int
	}
	var fs []fresh
	for key, p := range pairs {
		if p.before || p.last < 0 {
			continue
		}
		a, aok := g.IDs.Index(key[0])
		b, bok := g.IDs.Index(key[1])
		if !aok || !bok {
			continue
		}
		if s.has(int32(a), int32(b)) {
			fs = append(fs, fresh{int32(a), int32(b), p.last})
		}
	}
	// Latest trigger first, so that a cycle is credited to the edge that
	// closed it last.
	slices.SortFunc(fs, func(x, y fresh) int { return y.by - x.by })
	seen := map[string]bool{}
	for _, f := range fs {
		if s.cut {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, false, err
		}
		if lim.now != nil && lim.now().After(lim.deadline) {
			s.cut = true
			break
		}
		cs, short := s.through(f.a, f.b)
		if short && !s.cut {
			truncated++
		}
		for _, c := range cs {
			ids := make([]uint64, len(c))
			for i, x := range c {
				ids[i] = g.IDs.ID(int(x))
			}
			key := canonicalKey(ids)
			if !seen[key] {
				seen[key] = true
				found = append(found, foundCycle{ids: ids, by: edges[f.by], at: f.by})
				s.charge(int64(cycleBytes + 16*len(c)))
			}
		}
	}
	slices.Reverse(found)
	return found, truncated, s.cut, nil
}

// topoSearch enumerates cycles through one edge at a time in a topology.
//
// INVARIANT: bytes is at least the memory held by dists, the paths being
// extended and the cycles found (by the constants above); once it passes
// lim.maxBytes, or the clock passes lim.deadline, cut is set and every
// search returns at once.
type topoSearch struct {
	g      *views.Topo
	at     *cutGraph // the graph searched, when not g (a partial pull)
	k      int
	budget int
	lim    pullLimits
	dists  map[int32]map[int32]int // distTo per closing vertex; nil entry: its search read too much
	bytes  int64                   // accounted memory
	steps  int                     // work done, for reading the clock every clockEvery steps
	cut    bool
}

// charge accounts n bytes (negative: released) and reports whether the
// pull must stop.
func (s *topoSearch) charge(n int64) bool {
	s.bytes += n
	if s.lim.live != nil {
		s.lim.live.Store(s.bytes)
	}
	if s.lim.maxBytes > 0 && s.bytes > s.lim.maxBytes {
		s.cut = true
	}
	return s.cut
}

// tick counts one step of work and reports whether the pull must stop.
func (s *topoSearch) tick() bool {
	if s.steps++; s.steps%clockEvery == 0 && s.lim.now != nil && s.lim.now().After(s.lim.deadline) {
		s.cut = true
	}
	return s.cut
}

// distTo returns the distance to a (in edges, up to limit) of every vertex
// that reaches a within limit, over the in-lists, remembered per a for the
// pull; nil when the backward search would read more than the budget's
// worth of edges (the forward search then runs unpruned, within its own
// budget).
func (s *topoSearch) distTo(a int32, limit int) map[int32]int {
	if d, ok := s.dists[a]; ok {
		return d
	}
	dist := map[int32]int{a: 0}
	frontier := []int32{a}
	read := 0
	for d := 1; d <= limit && len(frontier) > 0 && dist != nil && !s.cut; d++ {
		var next []int32
		for _, v := range frontier {
			nb := s.in(v)
			if read += len(nb); read > s.budget {
				dist = nil // too costly to prune with
				break
			}
			for _, w := range nb {
				if _, ok := dist[w]; !ok {
					dist[w] = d
					next = append(next, w)
					s.charge(distEntryBytes)
				}
			}
		}
		frontier = next
	}
	s.dists[a] = dist
	return dist
}

// through returns the simple cycles of length <= k that use edge (a, b),
// as [a, b, ...], and whether the budget cut the search short.
func (s *topoSearch) through(a, b int32) ([][]int32, bool) {
	if a == b {
		return [][]int32{{a}}, false
	}
	if s.k < 2 {
		return nil, false
	}
	dist := s.distTo(a, s.k-1)
	if s.cut {
		return nil, false
	}
	if dist != nil {
		if d, ok := dist[b]; !ok || 1+d > s.k {
			return nil, false // b cannot reach a in time
		}
	}
	var found [][]int32
	paths := [][]int32{{b}} // simple paths from b, a not on them
	var held int64          // bytes of paths, charged
	defer func() { s.charge(-held) }()
	spent := 0
	for len(paths) > 0 {
		var next [][]int32
		var nextHeld int64
		for _, p := range paths {
			L := len(p) // the cycle a, p..., a has L+1 edges
			for _, w := range s.out(p[len(p)-1]) {
				if w == a {
					if L+1 <= s.k {
						found = append(found, append([]int32{a}, p...))
					}
					continue
				}
				// Extending to w makes a path of L+1 vertices; closing
				// it takes at least dist[w] more edges.
				need := 1
				if dist != nil {
					d, ok := dist[w]
					if !ok {
						continue
					}
					need = d
				}
				if L+1+need > s.k || slices.Contains(p, w) {
					continue
				}
				if spent++; spent > s.budget {
					return found, true
				}
				nb := int64(pathBytes + 4*(L+1))
				nextHeld += nb
				if s.charge(nb) || s.tick() {
					s.charge(-nextHeld)
					return found, true
				}
				next = append(next, append(slices.Clip(p), w))
			}
		}
		s.charge(-held)
		paths, held = next, nextHeld
	}
	return found, false
}

// out is v's out-neighbors in the graph searched, in order.
func (s *topoSearch) out(v int32) []int32 {
	if s.at == nil {
		return s.g.Out.Nbrs(v)
	}
	return s.at.nbrs(v, true)
}

// in is v's in-neighbors in the graph searched, in order.
func (s *topoSearch) in(v int32) []int32 {
	if s.at == nil {
		return s.g.In.Nbrs(v)
	}
	return s.at.nbrs(v, false)
}

// has reports whether the graph searched has the edge (a, b).
func (s *topoSearch) has(a, b int32) bool {
	if s.at != nil {
		if then, ok := s.at.diff[[2]int32{a, b}]; ok {
			return then
		}
	}
	_, now := s.g.Weight(a, b)
	return now
}

// cutGraph is the graph after a partial pull's operations: g, which is
// at the newest seq, with every edge the operations beyond the pull
// changed set back to what it was before the first of them.
//
// INVARIANT: diff holds exactly the edges (as indexes of g) whose
// presence after the pull differs from g's: true, present then and not
// in g; false, in g and absent then. addOut (addIn) holds the edges of
// diff present then, by source (destination). outs (ins) holds the
// out-lists (in-lists) then of the vertices with an edge of diff out
// (in), each once built. bytes is the memory charged for all of it,
// released at the search's end.
//
// Not safe for concurrent use: one pull's search owns it.
type cutGraph struct {
	g             *views.Topo
	diff          map[[2]int32]bool
	addOut, addIn map[int32][]int32
	changedOut    map[int32]bool // vertices with an edge of diff out
	changedIn     map[int32]bool // vertices with an edge of diff in
	outs, ins     map[int32][]int32
	charge        func(int64) bool
	bytes         int64
}

// Memory a cutGraph accounts for, per item.
const (
	cutTouchBytes = 48  // one edge touched beyond the pull, while reading them
	cutDiffBytes  = 112 // one edge of diff, its vertices' marks and its place in addOut and addIn
	cutListBytes  = 48  // one list built, besides 4 bytes per vertex
)

// cutOf reads the operations ahead (beyond a partial pull) and returns
// the graph after the pull, its memory charged with charge (true: over
// the pull's limit); nil when ahead cannot give them all, or the memory
// limit is passed (the pull is then cut short: its search skipped).
func cutOf(g *views.Topo, ahead func(func(views.Edge, views.Prior)) bool, charge func(int64) bool) *cutGraph {
	// The first operation beyond the pull on an edge says what it was
	// after the pull.
	then := map[[2]uint64]bool{}
	var touched int64
	over := false
	ok := ahead(func(e views.Edge, p views.Prior) {
		if over || p == views.VertexOp || e.Op.Kind == engine.OpDeleteVertex {
			return
		}
		k := [2]uint64{e.Op.Src, e.Op.Dst}
		if _, seen := then[k]; seen {
			return
		}
		then[k] = p != views.WasAbsent
		touched += cutTouchBytes
		over = charge(cutTouchBytes)
	})
	defer charge(-touched)
	if !ok || over {
		return nil
	}
	c := &cutGraph{g: g, diff: map[[2]int32]bool{}, addOut: map[int32][]int32{}, addIn: map[int32][]int32{},
		changedOut: map[int32]bool{}, changedIn: map[int32]bool{}, outs: map[int32][]int32{}, ins: map[int32][]int32{}, charge: charge}
	for k, was := range then {
		a, aok := g.IDs.Index(k[0])
		b, bok := g.IDs.Index(k[1])
		if !aok || !bok {
			if was {
				charge(-c.bytes)
				return nil // an edge of a vertex g does not index: it cannot be set back
			}
			continue
		}
		e := [2]int32{int32(a), int32(b)}
		if _, now := g.Weight(e[0], e[1]); now == was {
			continue
		}
		c.diff[e] = was
		c.changedOut[e[0]], c.changedIn[e[1]] = true, true
		if was {
			c.addOut[e[0]] = append(c.addOut[e[0]], e[1])
			c.addIn[e[1]] = append(c.addIn[e[1]], e[0])
		}
		c.bytes += cutDiffBytes
		if charge(cutDiffBytes) {
			charge(-c.bytes)
			return nil
		}
	}
	return c
}

// nbrs is v's list (out, else in) after the pull, in order; nil when the
// pull's memory limit does not allow building it (the search is cut
// short then: topoSearch.cut).
func (c *cutGraph) nbrs(v int32, out bool) []int32 {
	lists, changed, add, adj := c.outs, c.changedOut, c.addOut, &c.g.Out
	if !out {
		lists, changed, add, adj = c.ins, c.changedIn, c.addIn, &c.g.In
	}
	if !changed[v] {
		return adj.Nbrs(v)
	}
	if l, ok := lists[v]; ok {
		return l
	}
	now := adj.Nbrs(v)
	n := int64(cutListBytes + 4*(len(now)+len(add[v])))
	c.bytes += n
	if c.charge(n) {
		return nil
	}
	l := make([]int32, 0, len(now)+len(add[v]))
	for _, w := range now {
		e := [2]int32{v, w}
		if !out {
			e = [2]int32{w, v}
		}
		if _, gone := c.diff[e]; !gone { // an edge of g in diff was absent then
			l = append(l, w)
		}
	}
	l = append(l, add[v]...)
	slices.Sort(l)
	lists[v] = l
	return l
}

// canonicalKey names a cycle independently of where its list starts.
func canonicalKey(c []uint64) string {
	m := 0
	for i, v := range c {
		if v < c[m] {
			m = i
		}
	}
	b := make([]byte, 0, 8*len(c))
	for i := range c {
		v := c[(m+i)%len(c)]
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(v>>s))
		}
	}
	return string(b)
}

// FraudSummary is the result of a fraud analytic.
type FraudSummary struct {
	Seq       uint64         `json:"seq"`
	MaxCycle  int            `json:"max_cycle"`
	Cycles    uint64         `json:"cycles"`          // rings (cycles) reported so far
	Truncated uint64         `json:"truncated"`       // searches cut short by search_budget
	CutShort  uint64         `json:"pulls_cut_short"` // pulls cut short by pull_timeout or pull_memory_mib
	Rings     RingSummary    `json:"rings"`           // the ring window
	FanIn     MonitorSummary `json:"fan_in"`
	// Mules counts the vertices raised as mules that have not re-armed
	// (mule_senders and mule_receivers).
	Mules int `json:"mules,omitempty"`
}

func (a *fraud) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return FraudSummary{Seq: a.seq, MaxCycle: a.spec.MaxCycle, Cycles: a.cycles, Truncated: a.truncated, CutShort: a.cutShort,
		Rings: a.ringSum, FanIn: a.fanIn(), Mules: a.win.mules}
}

// fanIn is the summary of the fan-in window. Called with mu held.
func (a *fraud) fanIn() MonitorSummary {
	s := summarizeValues(a.seq, a.spec.Threshold, a.win.aboveValues())
	s.Late = a.win.win.Late()
	return s
}

func (a *fraud) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.win.value(v)
}

// MemoryBytes is the size of the fan-in window, of the ring window and
// of the pull in progress.
func (a *fraud) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.win.bytes() + a.ringBytes.Load() + a.pullBytes.Load()
}

// PullsCutShort counts the pulls cut short by the pull's limits.
func (a *fraud) PullsCutShort() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.cutShort
}
