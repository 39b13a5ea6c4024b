package analytics

import (
	"sync"

	"github.com/graphtide/graphtide/internal/views"
)

// AlertHistory keeps the alerts a registry raised beyond its process
// (serve: the data directory's alerts.log, package alertlog), so that they
// read the same after a restart.
type AlertHistory interface {
	// Alerts returns the alerts kept (the newest, oldest first) and how
	// many were ever appended, in all and by analytic.
	Alerts() (alerts []Alert, total uint64, byAnalytic map[string]uint64, err error)
	// Append keeps al after the alerts before it, in order. It need not
	// be durable before Sync.
	Append(al []Alert) error
	// Sync makes every alert appended so far durable. A checkpoint calls
	// it before it is written: an alert lost from the history after a
	// crash was raised after the checkpoint, and the restart's replay
	// raises it again.
	Sync() error
}

// JSONHistory is an AlertHistory that takes each alert with its JSON as
// the registry wrote it for its sinks too (JSONSink): AppendJSON is Append
// with docs[i] the JSON of al[i], which it must not change.
type JSONHistory interface {
	AppendJSON(al []Alert, docs [][]byte) error
}

// boundedHistory is an AlertHistory that reads only as many of its newest
// alerts as hold at most maxBytes (the newest one whatever its size).
type boundedHistory interface {
	AlertsWithin(maxBytes int64) (alerts []Alert, total uint64, byAnalytic map[string]uint64, err error)
}

// alertRing is the newest alerts, for reading, and how many were ever
// raised. Not safe for concurrent use: the registry guards it with amu.
//
// INVARIANT: the alert numbered k (counting from 0 over every alert ever
// kept, next in all) is at buf[(k-base)%size] while next-k <= len(buf).
// replay counts the IDs of the alerts the ring was seeded with that no
// alert raised since has matched: a replay after a restart raises them
// again, and each matches one (IDs may repeat within a run: two crossings
// of one vertex in one record; those are kept).
//
// INVARIANT: the readable alerts are the newest held of them (held <=
// len(buf)); bytes is alertBytes summed over them, at most maxBytes but
// for the newest alert alone: the oldest are let go (their slots zeroed)
// until it is.
type alertRing struct {
	size   int
	buf    []Alert
	base   uint64
	next   uint64
	held   int
	bytes  int64
	max    int64
	byName map[string]uint64
	replay map[string]int
}

// DefaultAlertRingBytes is what the alerts a registry keeps for reading
// may hold at most by default (RegistryConfig.AlertRingBytes).
const DefaultAlertRingBytes = 64 << 20

func newAlertRing(size int, maxBytes int64) *alertRing {
	return &alertRing{size: size, max: maxBytes, byName: map[string]uint64{}, replay: map[string]int{}}
}

// alertBytes estimates the memory an alert holds: its strings and
// slices, its evidence events and their documents (within a few percent
// of its JSON's size, which bounds it: MaxAlertBytes).
func alertBytes(a *Alert) int64 {
	n := 256 + len(a.Analytic) + len(a.Kind) + len(a.ID) + len(a.VertexID) + len(a.VertexKey) + 8*len(a.Cycle)
	for _, s := range a.CycleIDs {
		n += 16 + len(s)
	}
	for _, s := range a.CycleKeys {
		n += 16 + len(s)
	}
	for i := range a.Evidence {
		e := &a.Evidence[i]
		n += 200 + len(e.SrcID) + len(e.SrcKey) + len(e.DstID) + len(e.DstKey) + len(e.TypeName) + len(e.EventRef) + len(e.Props)
	}
	return int64(n)
}

// trim lets the oldest alerts go until the held ones are within max
// bytes (the newest stays).
func (g *alertRing) trim() {
	for g.bytes > g.max && g.held > 1 {
		i := (g.next - uint64(g.held) - g.base) % uint64(g.size)
		g.bytes -= alertBytes(&g.buf[i])
		g.buf[i] = Alert{}
		g.held--
	}
}

// seed starts the ring from a history: its newest alerts (at most size)
// and its counts.
func (g *alertRing) seed(alerts []Alert, total uint64, byName map[string]uint64) {
	if len(alerts) > g.size {
		alerts = alerts[len(alerts)-g.size:]
	}
	g.next = total
	g.base = total - uint64(len(alerts))
	g.buf = append(g.buf[:0], alerts...)
	g.held, g.bytes = len(alerts), 0
	for i := range g.buf {
		g.bytes += alertBytes(&g.buf[i])
	}
	g.trim()
	for name, n := range byName {
		g.byName[name] = n
	}
	for _, a := range alerts {
		g.replay[a.ID]++
	}
}

// replaying reports whether some alert the ring was seeded with has not
// been matched yet (replayed may still find one).
func (g *alertRing) replaying() bool { return len(g.replay) > 0 }

// replayed reports whether an alert with that ID was kept before the
// restart the ring was seeded at, and not matched since (a replay raises
// it again): it matches it.
func (g *alertRing) replayed(id string) bool {
	n := g.replay[id]
	if n == 0 {
		return false
	}
	if n == 1 {
		delete(g.replay, id)
	} else {
		g.replay[id] = n - 1
	}
	return true
}

// add keeps a as the newest alert.
func (g *alertRing) add(a Alert) {
	if len(g.buf) < g.size {
		g.buf = append(g.buf, a)
	} else {
		i := (g.next - g.base) % uint64(g.size)
		if g.held == g.size { // the oldest held goes
			g.bytes -= alertBytes(&g.buf[i])
			g.held--
		}
		g.buf[i] = a
	}
	g.held++
	g.bytes += alertBytes(&a)
	g.byName[a.Analytic]++
	g.next++
	g.trim()
}

// newest returns up to limit of the newest alerts (of the named analytic
// when name is not empty), oldest first, and how many were ever raised
// (by that analytic).
func (g *alertRing) newest(name string, limit int) ([]Alert, uint64) {
	var out []Alert
	c := uint64(g.size)
	for i := uint64(0); i < uint64(g.held) && len(out) < limit; i++ {
		if a := g.buf[(g.next-1-i-g.base)%c]; name == "" || a.Analytic == name {
			out = append(out, a)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if name != "" {
		return out, g.byName[name]
	}
	return out, g.next
}

// handOverBytes is how much of one pull's alerts (by alertBytes) a monitor
// holds before it hands them over: a pull that raises thousands of alerts
// (a burst of rings among hubs, fan-ins of a hub) never holds them all,
// nor the registry their JSON at once. About 1 MiB of alerts is a few
// hundred with full evidence, thousands without.
const handOverBytes = 1 << 20

// alertBatch is the alerts of a pull not yet handed over.
//
// INVARIANT: bytes is alertBytes summed over al; add reports the batch
// full as soon as bytes reaches limit, and its caller flushes it, so a
// batch never holds more than limit plus one alert (MaxAlertBytes).
type alertBatch struct {
	hand  func([]Alert) // the monitor's alerts callback; nil: they go nowhere
	limit int64
	al    []Alert
	bytes int64
}

func newAlertBatch(hand func([]Alert), limit int64) *alertBatch {
	return &alertBatch{hand: hand, limit: limit}
}

// add appends a and reports whether the batch is full: the caller then
// calls flush, outside its locks (the registry takes its own).
func (b *alertBatch) add(a Alert) (full bool) {
	b.al = append(b.al, a)
	b.bytes += alertBytes(&b.al[len(b.al)-1])
	return b.bytes >= b.limit
}

// flush hands the alerts held over (the slice is the callback's) and
// starts empty.
func (b *alertBatch) flush() {
	if len(b.al) > 0 && b.hand != nil {
		b.hand(b.al)
	}
	b.al, b.bytes = nil, 0
}

// windowAlerts adds e to the window w (guarded by mu, which the caller
// holds), stamps the alerts it raises as the analytic name's and adds them
// to b, handing a full batch over with mu unlocked (the window is whole
// between operations). scratch is reused: the call returns it for the
// next.
func windowAlerts(w *fanWindow, name string, e views.Edge, mu *sync.RWMutex, b *alertBatch, scratch []Alert) []Alert {
	scratch = w.add(e, scratch[:0])
	for i := range scratch {
		scratch[i].Analytic, scratch[i].Seq, scratch[i].Ref, scratch[i].EventTime = name, e.Seq, e.Ref, e.Op.Time()
		if b.add(scratch[i]) {
			mu.Unlock()
			b.flush()
			mu.Lock()
		}
	}
	return scratch
}
