package analytics

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

// alertRing is the newest alerts, for reading, and how many were ever
// raised. Not safe for concurrent use: the registry guards it with amu.
//
// INVARIANT: the alert numbered k (counting from 0 over every alert ever
// kept, next in all) is at buf[(k-base)%size] while next-k <= len(buf).
// replay counts the IDs of the alerts the ring was seeded with that no
// alert raised since has matched: a replay after a restart raises them
// again, and each matches one (IDs may repeat within a run: two crossings
// of one vertex in one record; those are kept).
type alertRing struct {
	size   int
	buf    []Alert
	base   uint64
	next   uint64
	byName map[string]uint64
	replay map[string]int
}

func newAlertRing(size int) *alertRing {
	return &alertRing{size: size, byName: map[string]uint64{}, replay: map[string]int{}}
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
		g.buf[(g.next-g.base)%uint64(g.size)] = a
	}
	g.byName[a.Analytic]++
	g.next++
}

// newest returns up to limit of the newest alerts (of the named analytic
// when name is not empty), oldest first, and how many were ever raised
// (by that analytic).
func (g *alertRing) newest(name string, limit int) ([]Alert, uint64) {
	var out []Alert
	c := uint64(g.size)
	for i := uint64(0); i < uint64(len(g.buf)) && len(out) < limit; i++ {
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
