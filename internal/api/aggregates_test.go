package api

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The oracle of edge aggregates: every event written, per (src, dst,
// type), since the edge's last delete.

type aggKey struct {
	src, dst uint64
	t        uint16
}

type aggEvent struct {
	seq        uint64
	w          float64
	tm         int64
	ref, props string
}

// aggOracle folds events by the documented semantics: an accumulate
// type's upserts add up, a replace type's upsert is the edge, a delete
// ends it, a vertex delete ends every edge of the vertex.
type aggOracle struct {
	edges  map[aggKey][]aggEvent
	accum  map[uint16]bool
	newest int64 // the greatest event time applied
}

func (o *aggOracle) upsert(k aggKey, e aggEvent) {
	o.newest = max(o.newest, e.tm)
	if o.accum[k.t] {
		o.edges[k] = append(o.edges[k], e)
		return
	}
	o.edges[k] = []aggEvent{e}
}

func (o *aggOracle) deleteVertex(v uint64) {
	for k := range o.edges {
		if k.src == v || k.dst == v {
			delete(o.edges, k)
		}
	}
}

// want is the edge k as a read must return it (nil: none).
func (o *aggOracle) want(k aggKey, f func(uint64) Vertex, typeName string) *Neighbor {
	evs := o.edges[k]
	if len(evs) == 0 {
		return nil
	}
	last := evs[len(evs)-1]
	n := &Neighbor{Type: typeName, Ref: last.ref, Props: JSONObject(last.props)}
	if !o.accum[k.t] {
		n.Weight, n.Time = last.w, eventTime(last.tm)
		return n
	}
	a := &EdgeAggregate{Count: uint64(len(evs)), Ref: last.ref}
	var first, lastT int64
	for _, e := range evs {
		a.Sum += e.w
		if e.tm > 0 && (first == 0 || e.tm < first) {
			first = e.tm
		}
		lastT = max(lastT, e.tm)
	}
	a.FirstTime, a.LastTime = eventTime(first), eventTime(lastT)
	n.Weight, n.Time, n.Aggregate = a.Sum, eventTime(lastT), a
	return n
}

// window is k's events with time >= since, newest first: their count,
// sum, and the first room of them.
func (o *aggOracle) window(k aggKey, since int64, room int) (uint64, float64, []EdgeEvent) {
	evs := o.edges[k]
	var n uint64
	var sum float64
	list := []EdgeEvent{}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.tm < since {
			continue
		}
		n++
		sum += e.w
		if len(list) < room {
			list = append(list, EdgeEvent{Amount: e.w, Time: eventTime(e.tm), Ref: e.ref, Props: JSONObject(e.props), Seq: e.seq})
		}
	}
	return n, sum, list
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEdgeAggregatesAgainstAnOracle writes a payments stream (an
// accumulate type with a retain of an hour, a replace type, deletes and
// vertex deletes, references and properties) and checks every edge read
// over HTTP (validated against openapi.yaml) against the oracle: the
// edge lookup, neighbors pages both ways, windows and the events route,
// before and after flushes and a compaction fold the older events.
func TestEdgeAggregatesAgainstAnOracle(t *testing.T) {
	dir := t.TempDir()
	dict, err := keydict.Open(filepath.Join(dir, "keys.dict"))
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	types, err := typedict.Open(filepath.Join(dir, "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	payment, _ := types.ID("payment")
	login, _ := types.ID("login")
	st, err := engine.Open(filepath.Join(dir, "store"), &engine.Options{InEdges: true, MemGraphBytes: 4 << 20,
		Aggregates: map[uint16]engine.Aggregate{payment: {Accumulate: true, Retain: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	vm, err := views.NewManager(st, views.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	reg := analytics.NewRegistry(vm, analytics.RegistryConfig{Resolve: ResolveVertex(dict)})
	defer reg.Close()
	s, err := New(Config{Store: st, Views: vm, Analytics: reg, Dict: dict, Types: types, Aggregates: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	c := newClient(t, hs, "", &coverage{})

	accounts := make([]uint64, 8)
	for i := range accounts {
		if accounts[i], err = dict.ID(fmt.Sprintf("acct-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	o := &aggOracle{edges: map[aggKey][]aggEvent{}, accum: map[uint16]bool{payment: true}}
	r := rand.New(rand.NewPCG(42, 42))
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC).UnixMicro()
	var b engine.Batch
	var ops []func(seq uint64)
	apply := func() {
		seq, err := st.Apply(&b)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ops {
			f(seq)
		}
		ops, b = ops[:0], engine.Batch{}
	}
	n := 0
	write := func(events int) {
		for range events {
			src, dst := accounts[r.IntN(len(accounts))], accounts[r.IntN(len(accounts))]
			n++
			// Event times over about three hours, a little out of order.
			tm := t0 + int64(n)*int64(4*time.Second/time.Microsecond) - r.Int64N(int64(2*time.Minute/time.Microsecond))
			switch x := r.IntN(100); {
			case x < 4:
				k := aggKey{src, dst, payment}
				b.DeleteEdge(src, dst)
				b.SetType(payment)
				ops = append(ops, func(uint64) { delete(o.edges, k) })
			case x < 5:
				// Vertex deletes of one account: the core folds no event of
				// an edge whose vertex was deleted (its other edges fold).
				v := accounts[len(accounts)-1]
				b.DeleteVertex(v)
				ops = append(ops, func(uint64) { o.deleteVertex(v) })
			case x < 12:
				k := aggKey{src, dst, login}
				e := aggEvent{w: 1, tm: tm, props: fmt.Sprintf(`{"device":"d-%d"}`, r.IntN(5))}
				b.InsertWeighted(src, dst, 1)
				b.SetType(login)
				b.SetEventTime(tm)
				b.SetPayload("", []byte(e.props))
				ops = append(ops, func(seq uint64) { e.seq = seq; o.upsert(k, e) })
			default:
				k := aggKey{src, dst, payment}
				e := aggEvent{w: float64(r.IntN(400)) / 4, tm: tm}
				if r.IntN(3) > 0 {
					e.ref = fmt.Sprintf("e-%d", n)
				}
				if r.IntN(2) == 0 {
					e.props = fmt.Sprintf(`{"currency":%q}`, []string{"EUR", "NZD"}[r.IntN(2)])
				}
				b.InsertWeighted(src, dst, e.w)
				b.SetType(payment)
				b.SetEventTime(tm)
				b.SetPayload(e.ref, []byte(e.props))
				ops = append(ops, func(seq uint64) { e.seq = seq; o.upsert(k, e) })
			}
			if b.Len() >= 20 {
				apply()
			}
		}
		if b.Len() > 0 {
			apply()
		}
	}
	vp := func(v uint64) string { k, _ := dict.Key(v); return url.PathEscape(k) }
	name := func(t uint16) string { return map[uint16]string{payment: "payment", login: "login"}[t] }

	check := func(stage string) {
		t.Helper()
		if got := st.NewestEventTime(); got != o.newest {
			t.Fatalf("%s: newest event time %d, the oracle's %d", stage, got, o.newest)
		}
		const window = 30 * time.Minute
		since := o.newest - window.Microseconds()
		for _, src := range accounts {
			for _, dst := range accounts {
				var got EdgeResponse
				c.get(fmt.Sprintf("/v1/edges/%s/%s?window=30m&limit=3", vp(src), vp(dst)), &got)
				var want []Neighbor
				room := 3
				for _, typ := range []uint16{login, payment} { // the larger type first
					w := o.want(aggKey{src, dst, typ}, nil, name(typ))
					if w == nil {
						continue
					}
					w.ID, w.Key = got.Dst.ID, got.Dst.Key
					if o.accum[typ] {
						cnt, sum, list := o.window(aggKey{src, dst, typ}, since, room)
						room -= len(list)
						w.Window = &EdgeWindow{Since: eventTime(since), Count: cnt, Sum: sum, Events: list, More: cnt > uint64(len(list))}
					}
					want = append(want, *w)
				}
				if want == nil {
					want = []Neighbor{}
				}
				if g, w := jsonText(t, got.Edges), jsonText(t, want); g != w {
					t.Fatalf("%s: edge %d -> %d:\n got %s\nwant %s", stage, src, dst, g, w)
				}
				// The events route: the payment edge's events of the window.
				var ev EventsResponse
				c.get(fmt.Sprintf("/v1/edges/%s/%s/events?type=payment&window=30m&limit=4", vp(src), vp(dst)), &ev)
				cnt, sum, list := o.window(aggKey{src, dst, payment}, since, 4)
				if ev.Count != cnt || ev.Sum != sum || jsonText(t, ev.Events) != jsonText(t, list) || ev.More != (cnt > 4) || ev.Since != eventTime(since) {
					t.Fatalf("%s: events %d -> %d: got %d %v %s more %v since %s, want %d %v %s", stage, src, dst, ev.Count, ev.Sum, jsonText(t, ev.Events), ev.More, ev.Since,
						cnt, sum, jsonText(t, list))
				}
				// Without a type: the pair's one edge of events (payment, the
				// one accumulate type here), whatever the login edge.
				var untyped EventsResponse
				c.get(fmt.Sprintf("/v1/edges/%s/%s/events?window=30m&limit=4", vp(src), vp(dst)), &untyped)
				if cnt > 0 && (jsonText(t, untyped.Events) != jsonText(t, ev.Events) || untyped.Type != "payment") {
					t.Fatalf("%s: events %d -> %d without a type: %s of %q, want those of payment %s", stage, src, dst, jsonText(t, untyped.Events), untyped.Type, jsonText(t, ev.Events))
				}
			}
		}
		// Neighbors, both ways, of every account, in pages of 3.
		for _, dir := range []string{"out", "in"} {
			for _, v := range accounts {
				var all []Neighbor
				cursor := ""
				for {
					var p NeighborsResponse
					q := "dir=" + dir + "&limit=3&window=30m"
					if cursor != "" {
						q += "&cursor=" + url.QueryEscape(cursor)
					}
					c.get(fmt.Sprintf("/v1/vertices/%s/neighbors?%s", vp(v), q), &p)
					// Each page's windows list at most limit events in all.
					room := 3
					for i := range p.Neighbors {
						nb := p.Neighbors[i]
						if nb.Window != nil {
							room -= len(nb.Window.Events)
						}
					}
					if room < 0 {
						t.Fatalf("%s: a page lists %d events, more than its limit 3", stage, 3-room)
					}
					all = append(all, p.Neighbors...)
					if p.NextCursor == "" {
						break
					}
					cursor = p.NextCursor
				}
				var want []Neighbor
				for _, other := range accounts { // keys: the order the dictionary met them
					for _, typ := range []uint16{payment, login} { // by type name: login, payment... sorted below
						k := aggKey{v, other, typ}
						if dir == "in" {
							k = aggKey{other, v, typ}
						}
						w := o.want(k, nil, name(typ))
						if w == nil {
							continue
						}
						w.ID, w.Key = other, func() string { s, _ := dict.Key(other); return s }()
						want = append(want, *w)
					}
				}
				slices.SortStableFunc(want, func(a, b Neighbor) int {
					if a.Key != b.Key {
						return compareStrings(a.Key, b.Key)
					}
					return compareStrings(a.Type, b.Type)
				})
				if len(all) != len(want) {
					t.Fatalf("%s: %s-neighbors of %d: %d, want %d", stage, dir, v, len(all), len(want))
				}
				for i := range all {
					g := all[i]
					win := g.Window
					g.Window = nil
					if a, b := jsonText(t, g), jsonText(t, want[i]); a != b {
						t.Fatalf("%s: %s-neighbor %d of %d:\n got %s\nwant %s", stage, dir, i, v, a, b)
					}
					if (win != nil) != (want[i].Aggregate != nil) {
						t.Fatalf("%s: %s-neighbor %d of %d: window %v, aggregate %v", stage, dir, i, v, win, want[i].Aggregate)
					}
					if win != nil {
						k := aggKey{v, g.ID, payment}
						if dir == "in" {
							k = aggKey{g.ID, v, payment}
						}
						cnt, sum, list := o.window(k, since, len(win.Events))
						if win.Count != cnt || win.Sum != sum || jsonText(t, win.Events) != jsonText(t, list) || win.More != (cnt > uint64(len(win.Events))) {
							t.Fatalf("%s: window of %s-neighbor %d of %d: got %s, want %d %v %s", stage, dir, i, v, jsonText(t, win), cnt, sum, jsonText(t, list))
						}
					}
				}
			}
		}
		c.expect("GET", fmt.Sprintf("/v1/edges/%s/%s?window=2h", vp(accounts[0]), vp(accounts[1])), nil, 400, "window 2h0m0s is longer than the retain of type payment (1h0m0s)")
		c.expect("GET", fmt.Sprintf("/v1/edges/%s/%s/events?type=payment&window=61m", vp(accounts[0]), vp(accounts[1])), nil, 400, "longer than the retain of type payment")
		c.expect("GET", fmt.Sprintf("/v1/vertices/%s/neighbors?window=-1h", vp(accounts[0])), nil, 400, "window must be a positive duration")
		// A replace type's window is no refusal: it has no events.
		c.get(fmt.Sprintf("/v1/edges/%s/%s?window=2h&types=login", vp(accounts[0]), vp(accounts[1])), nil)
	}
	write(1500)
	check("in the write buffers")
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	write(1500)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := st.CompactAll(); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	// Folding happened: some edge has events older than the retain that
	// the events route no longer lists one by one.
	folded := false
	for k, evs := range o.edges {
		if k.t != payment || len(evs) == 0 || evs[0].tm >= o.newest-time.Hour.Microseconds() {
			continue
		}
		var ev EventsResponse
		c.get(fmt.Sprintf("/v1/edges/%s/%s/events?type=payment&limit=10000", vp(k.src), vp(k.dst)), &ev)
		if ev.Folded {
			folded = true
			break
		}
	}
	if !folded {
		t.Error("no edge reports events folded after a compaction past the retain")
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
