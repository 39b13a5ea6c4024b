package graphtide

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

func TestEdgePayloadLimitsAreTheStores(t *testing.T) {
	if MaxEventRef != engine.MaxEventRef || MaxEdgeProps != engine.MaxEdgeProps {
		t.Errorf("MaxEventRef %d, MaxEdgeProps %d; the store's: %d, %d", MaxEventRef, MaxEdgeProps, engine.MaxEventRef, engine.MaxEdgeProps)
	}
}

// TestAggregatesAgainstAnOracle: an accumulate type's edges, read through
// a snapshot, a view and neighbors both ways, are the fold of the events
// written (a map of them), through a flush and a reopen; deletes end an
// edge; a replace type's edge is its newest insert, with its payload.
func TestAggregatesAgainstAnOracle(t *testing.T) {
	dir := t.TempDir()
	open := func() (*DB, uint16, uint16) {
		db, err := Open(dir, &Options{InEdges: true})
		if err != nil {
			t.Fatal(err)
		}
		pay, _ := db.TypeID("payment")
		login, _ := db.TypeID("login")
		if err := db.SetAggregate(pay, Aggregate{Accumulate: true, Retain: time.Hour}); err != nil {
			t.Fatal(err)
		}
		return db, pay, login
	}
	db, pay, login := open()
	type key struct {
		src, dst uint64
		t        uint16
	}
	type event struct {
		seq        uint64
		w          float64
		tm         time.Time
		ref, props string
	}
	oracle := map[key][]event{}
	r := rand.New(rand.NewPCG(9, 9))
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	n := 0
	write := func(batches int) {
		for range batches {
			var b Batch
			var pending []func(uint64)
			for range 10 {
				n++
				src, dst := uint64(r.IntN(5)), uint64(r.IntN(5))
				tm := t0.Add(time.Duration(n) * time.Minute)
				switch x := r.IntN(10); {
				case x == 0:
					b.Delete(src, dst)
					b.SetType(pay)
					pending = append(pending, func(uint64) { delete(oracle, key{src, dst, pay}) })
				case x == 1:
					e := event{w: 1, tm: tm, ref: fmt.Sprintf("l-%d", n)}
					b.Insert(src, dst, 1)
					b.SetType(login)
					b.SetEventTime(tm)
					b.SetPayload(e.ref, nil)
					pending = append(pending, func(seq uint64) { e.seq = seq; oracle[key{src, dst, login}] = []event{e} })
				default:
					e := event{w: float64(r.IntN(100)) / 2, tm: tm, ref: fmt.Sprintf("e-%d", n), props: fmt.Sprintf(`{"n":%d}`, n)}
					b.Insert(src, dst, e.w)
					b.SetType(pay)
					b.SetEventTime(tm)
					b.SetPayload(e.ref, []byte(e.props))
					pending = append(pending, func(seq uint64) {
						e.seq = seq
						oracle[key{src, dst, pay}] = append(oracle[key{src, dst, pay}], e)
					})
				}
			}
			seq, err := db.Apply(&b)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range pending {
				f(seq)
			}
		}
	}
	want := func(k key, id uint64) (Neighbor, bool) {
		evs := oracle[k]
		if len(evs) == 0 {
			return Neighbor{}, false
		}
		last := evs[len(evs)-1]
		nb := Neighbor{ID: id, Type: k.t, Ref: last.ref, Props: last.props, Weight: last.w, Time: last.tm}
		if k.t != pay {
			return nb, true
		}
		nb.Count, nb.Weight, nb.FirstTime = uint64(len(evs)), 0, evs[0].tm
		for _, e := range evs {
			nb.Weight += e.w
			if e.tm.Before(nb.FirstTime) {
				nb.FirstTime = e.tm
			}
			if e.tm.After(nb.Time) {
				nb.Time = e.tm
			}
		}
		nb.Sum, nb.LastTime = nb.Weight, nb.Time
		return nb, true
	}
	check := func(stage string) {
		t.Helper()
		sn, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		v, err := db.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		for src := range uint64(5) {
			var out, in []Neighbor
			for dst := range uint64(5) {
				var es []Neighbor
				for _, typ := range []uint16{max(pay, login), min(pay, login)} {
					if nb, ok := want(key{src, dst, typ}, dst); ok {
						es = append(es, nb)
					}
				}
				got, err := sn.Edges(src, dst)
				if err != nil || fmt.Sprint(got) != fmt.Sprint(es) {
					t.Fatalf("%s: edges %d -> %d: %v, %v\nwant %v", stage, src, dst, got, err, es)
				}
				if got, err := v.Edges(src, dst); err != nil || fmt.Sprint(got) != fmt.Sprint(es) {
					t.Fatalf("%s: view edges %d -> %d: %v, %v\nwant %v", stage, src, dst, got, err, es)
				}
				out = append(out, es...)
				for _, typ := range []uint16{max(pay, login), min(pay, login)} {
					if nb, ok := want(key{dst, src, typ}, dst); ok {
						in = append(in, nb)
					}
				}
				// The events of the last half hour, newest first.
				since := t0.Add(time.Duration(n-30) * time.Minute)
				evs, _, err := sn.Events(src, dst, pay, since, 1000)
				if err != nil {
					t.Fatal(err)
				}
				var wantEvs []Event
				all := oracle[key{src, dst, pay}]
				for i := len(all) - 1; i >= 0; i-- {
					if e := all[i]; !e.tm.Before(since) {
						wantEvs = append(wantEvs, Event{Seq: e.seq, Weight: e.w, Time: e.tm, Ref: e.ref, Props: e.props})
					}
				}
				if fmt.Sprint(evs) != fmt.Sprint(wantEvs) {
					t.Fatalf("%s: events %d -> %d: %v\nwant %v", stage, src, dst, evs, wantEvs)
				}
				if vevs, _, err := v.Events(src, dst, pay, since, 1000); err != nil || fmt.Sprint(vevs) != fmt.Sprint(wantEvs) {
					t.Fatalf("%s: view events %d -> %d: %v, %v", stage, src, dst, vevs, err)
				}
			}
			if got, err := sn.Neighbors(src, Out); err != nil || fmt.Sprint(got) != fmt.Sprint(out) {
				t.Fatalf("%s: out-neighbors of %d: %v, %v\nwant %v", stage, src, got, err, out)
			}
			if got, err := v.Neighbors(src, In); err != nil || fmt.Sprint(got) != fmt.Sprint(in) {
				t.Fatalf("%s: in-neighbors of %d: %v, %v\nwant %v", stage, src, got, err, in)
			}
		}
	}
	write(20)
	check("applied")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	write(10)
	check("flushed")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, pay, login = open()
	defer db.Close()
	check("reopened")
	write(10)
	check("after the reopen")
	if got := db.NewestEventTime(); !got.Equal(t0.Add(time.Duration(n) * time.Minute)) {
		t.Errorf("newest event time %v, want %v", got, t0.Add(time.Duration(n)*time.Minute))
	}
	var b Batch
	b.Delete(1, 2)
	b.SetPayload("x", nil)
	if _, err := db.Apply(&b); err == nil {
		t.Error("a payload on a delete was applied")
	}
	if err := db.SetAggregate(login, Aggregate{Retain: time.Hour}); err == nil {
		t.Error("a retain on a replace type was taken")
	}
}

// TestAggregatesAreTheDataDirectorys: a type made accumulate stays so for
// every later Open, without being told (on a data directory that held it
// as configuration only, the next insert replaced the events); making it
// replace is refused, by SetAggregate and by Options.Aggregates.
func TestAggregatesAreTheDataDirectorys(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	pay := func(db *DB, typ uint16, amount float64, at time.Duration) Neighbor {
		t.Helper()
		var b Batch
		b.Insert(1, 2, amount)
		b.SetType(typ)
		b.SetEventTime(t0.Add(at))
		if _, err := db.Apply(&b); err != nil {
			t.Fatal(err)
		}
		sn, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		es, err := sn.Edges(1, 2)
		if err != nil || len(es) != 1 {
			t.Fatalf("edges: %v, %v", es, err)
		}
		return es[0]
	}
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	typ, err := db.TypeID("payment")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetAggregate(typ, Aggregate{Accumulate: true, Retain: time.Hour}); err != nil {
		t.Fatal(err)
	}
	pay(db, typ, 12.5, 0)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if nb := pay(db, typ, 50, time.Minute); nb.Count != 2 || nb.Sum != 62.5 {
		t.Fatalf("after a reopen without SetAggregate: %+v, want 2 events summing 62.5", nb)
	}
	if err := db.SetAggregate(typ, Aggregate{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cannot become replace") {
		t.Fatalf("SetAggregate(replace) = %v", err)
	}
	if got := db.NewestEventTime(); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NewestEventTime() = %v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, &Options{Aggregates: map[uint16]Aggregate{typ: {}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open making payment replace: %v", err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.NewestEventTime(); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("reopened: NewestEventTime() = %v, want %v", got, t0.Add(time.Minute))
	}
	if nb := pay(db, typ, 7.5, 2*time.Minute); nb.Count != 3 || nb.Sum != 70 {
		t.Fatalf("after the refused Open: %+v", nb)
	}
}
