package graphtide_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/graphtide/graphtide"
)

// graphtide embedded in a program: a store in a directory, a BFS from a
// key kept up to date as batches are applied, and its result read as a
// named type.
func Example_embedding() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)

	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	_, err = db.Register(graphtide.BFS{Name: "reach", RootKey: "alice"})
	check(err)
	alice, _ := db.VertexID("alice")
	bob, _ := db.VertexID("bob")
	var b graphtide.Batch
	b.Insert(alice, bob, 25) // alice pays bob 25
	seq, err := db.Apply(&b)
	check(err)
	r, err := db.Wait(context.Background(), "reach", seq)
	check(err)
	fmt.Println(r.Summary.(graphtide.BFSSummary).Reached, "accounts reachable from alice")
	// Output:
	// 2 accounts reachable from alice
}

// A built-in analytic by its spec, as serve's --analytic flag takes it:
// PageRank over payments between string keys.
func ExampleSpec() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()

	name, err := db.Register(graphtide.Spec("type=pagerank,name=rank,damping=0.85"))
	check(err)
	var b graphtide.Batch
	for _, e := range [][2]string{{"ann", "bob"}, {"bob", "cy"}, {"cy", "ann"}, {"dan", "cy"}} {
		src, err := db.VertexID(e[0])
		check(err)
		dst, err := db.VertexID(e[1])
		check(err)
		b.Insert(src, dst, 1)
	}
	seq, err := db.Apply(&b)
	check(err)

	r, err := db.Wait(context.Background(), name, seq)
	check(err)
	ranks := r.Summary.(graphtide.PageRankSummary)
	for _, v := range ranks.Top {
		fmt.Printf("%s %.2f\n", v.Key, v.Rank)
	}
	// Output:
	// cy 0.33
	// ann 0.32
	// bob 0.31
	// dan 0.04
}

// A fan-in monitor over a minute of event time: an account that receives
// from more than two others within a minute raises an alert, which names
// it by its key.
func ExampleFanIn() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	id := func(key string) uint64 {
		v, err := db.VertexID(key)
		check(err)
		return v
	}

	_, err = db.Register(graphtide.FanIn{Name: "mules", Threshold: 2, Window: time.Minute})
	check(err)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	var b graphtide.Batch
	for i, from := range []string{"ann", "bob", "cy"} {
		b.Insert(id(from), id("mule"), 100)
		b.SetEventTime(at.Add(time.Duration(i) * 20 * time.Second))
	}
	b.Insert(id("dan"), id("mule"), 100) // two minutes later: the others left the window
	b.SetEventTime(at.Add(2 * time.Minute))
	seq, err := db.Apply(&b)
	check(err)
	r, err := db.Wait(context.Background(), "mules", seq)
	check(err)

	for _, al := range db.Alerts("mules", 10) {
		fmt.Println(al.Kind, al.Key, al.Value, ">", al.Threshold, "at", al.EventTime.Format(time.TimeOnly))
	}
	now, _, err := db.VertexResult("mules", id("mule"))
	check(err)
	fmt.Println("in the window now:", now.(graphtide.VertexValue).Value)
	fmt.Println("above now:", r.Summary.(graphtide.MonitorSummary).Above)
	// Output:
	// fan_in mule 3 > 2 at 10:00:40
	// in the window now: 1
	// above now: 0
}

// The fraud monitor reports each ring of payments, in time order within
// MaxSpan, its accounts by their keys from its first payment's sender; a
// cycle paid over a month is no ring.
func ExampleFraud() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	id := func(key string) uint64 {
		v, err := db.VertexID(key)
		check(err)
		return v
	}

	_, err = db.Register(graphtide.Fraud{Name: "rings", Threshold: 1000, MaxCycle: 4, MaxSpan: time.Hour})
	check(err)
	var b graphtide.Batch
	pay := func(from, to string, amount float64, day, hour, minute int) {
		b.Insert(id(from), id(to), amount)
		b.SetEventTime(time.Date(2026, 11, day, hour, minute, 0, 0, time.UTC))
	}
	pay("dan", "eve", 500, 1, 9, 0) // a cycle paid over a month: no ring
	pay("eve", "dan", 480, 30, 9, 0)
	pay("ann", "bob", 900, 30, 10, 0)
	pay("bob", "cy", 880, 30, 10, 4)
	pay("cy", "ann", 860, 30, 10, 9) // closes the ring, nine minutes after its first payment
	seq, err := db.Apply(&b)
	check(err)
	r, err := db.Wait(context.Background(), "rings", seq)
	check(err)

	for _, al := range db.Alerts("rings", 10) {
		if al.Kind == graphtide.AlertCycle {
			fmt.Println("ring of", al.Value, "payments:", strings.Join(al.CycleKeys, " -> "), "closed at", al.EventTime.Format(time.TimeOnly))
		}
	}
	fmt.Println("rings so far:", r.Summary.(graphtide.FraudSummary).Cycles)
	// Output:
	// ring of 3 payments: ann -> bob -> cy closed at 10:09:00
	// rings so far: 1
}

// A fan-in by senders tells one sender paying many times from many
// senders paying once; a fan-in by amount counts the money. Each alert
// carries the window's payments into the vertex and their totals.
func ExampleFanIn_measure() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	id := func(key string) uint64 {
		v, err := db.VertexID(key)
		check(err)
		return v
	}

	_, err = db.Register(graphtide.FanIn{Name: "senders", Measure: "senders", Threshold: 2, Window: time.Hour})
	check(err)
	_, err = db.Register(graphtide.FanIn{Name: "amount", Measure: "amount", Threshold: 50000, Window: time.Hour, Evidence: 2})
	check(err)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	var b graphtide.Batch
	pay := func(from, to string, amount float64) {
		b.Insert(id(from), id(to), amount)
		b.SetEventTime(at)
		at = at.Add(time.Minute)
	}
	for range 3 {
		pay("ann", "mule", 10) // one sender, three times: not a fan-in by senders
	}
	pay("bob", "mule", 10)
	pay("cy", "mule", 10) // the third sender
	pay("dan", "shell", 30000)
	pay("eve", "shell", 15000)
	pay("dan", "shell", 10000) // takes it to 55000
	seq, err := db.Apply(&b)
	check(err)
	for _, name := range []string{"senders", "amount"} {
		_, err = db.Wait(context.Background(), name, seq)
		check(err)
		for _, al := range db.Alerts(name, 10) {
			t := al.Totals
			fmt.Printf("%s: %s %s %v > %v: %d payments of %v from %d senders, %s to %s\n", name, al.Kind, al.Key, al.Value, al.Threshold,
				t.Events, t.Amount, t.Counterparties, t.First.Format(time.TimeOnly), t.Last.Format(time.TimeOnly))
			for _, e := range al.Evidence {
				fmt.Printf("  %s -> %s %v at %s\n", e.SrcKey, e.DstKey, e.Amount, e.EventTime.Format(time.TimeOnly))
			}
			if al.EvidenceDropped > 0 {
				fmt.Printf("  and %d more\n", al.EvidenceDropped)
			}
		}
	}
	// Output:
	// senders: fan_in mule 3 > 2: 5 payments of 50 from 3 senders, 10:00:00 to 10:04:00
	//   ann -> mule 10 at 10:00:00
	//   ann -> mule 10 at 10:01:00
	//   ann -> mule 10 at 10:02:00
	//   bob -> mule 10 at 10:03:00
	//   cy -> mule 10 at 10:04:00
	// amount: fan_in shell 55000 > 50000: 3 payments of 55000 from 2 senders, 10:05:00 to 10:07:00
	//   eve -> shell 15000 at 10:06:00
	//   dan -> shell 10000 at 10:07:00
	//   and 1 more
}

// The fraud monitor's mule pattern: an account that takes money in from
// at least MuleSenders senders and pays it out to at least MuleReceivers
// receivers within the window.
func ExampleFraud_mule() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	id := func(key string) uint64 {
		v, err := db.VertexID(key)
		check(err)
		return v
	}

	_, err = db.Register(graphtide.Fraud{Name: "mules", Threshold: 1000, Window: 24 * time.Hour, MuleSenders: 3, MuleReceivers: 2})
	check(err)
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	var b graphtide.Batch
	for i, p := range [][3]string{{"ann", "m"}, {"bob", "m"}, {"m", "xi"}, {"cy", "m"}, {"m", "yu"}, {"m", "yu"}} {
		b.Insert(id(p[0]), id(p[1]), float64(900-10*i))
		b.SetEventTime(at.Add(time.Duration(i) * time.Hour))
	}
	seq, err := db.Apply(&b)
	check(err)
	r, err := db.Wait(context.Background(), "mules", seq)
	check(err)

	for _, al := range db.Alerts("mules", 10) {
		t := al.Totals
		fmt.Printf("%s %s: in %v from %d senders, out %v to %d receivers, %d payments\n", al.Kind, al.Key, t.Amount, t.Counterparties,
			t.AmountOut, t.Receivers, t.Events)
		for _, e := range al.Evidence {
			fmt.Printf("  %s -> %s %v\n", e.SrcKey, e.DstKey, e.Amount)
		}
	}
	fmt.Println("mules now:", r.Summary.(graphtide.FraudSummary).Mules)
	// Output:
	// mule m: in 2660 from 3 senders, out 1740 to 2 receivers, 5 payments
	//   ann -> m 900
	//   bob -> m 890
	//   m -> xi 880
	//   cy -> m 870
	//   m -> yu 860
	// mules now: 1
}

// An option out of its range is refused before anything runs, the same
// way for the typed options and for a spec, naming the option and its
// range.
func ExampleOptionError() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()

	_, err = db.Register(graphtide.FanIn{Threshold: 200, Window: 30 * 24 * time.Hour})
	fmt.Println(err)
	var bad *graphtide.OptionError
	if errors.As(err, &bad) {
		fmt.Println("fix FanIn."+bad.Field, "("+bad.Option+" in a spec)")
	}
	_, err = db.Register(graphtide.Spec("type=fanin,threshold=200,window=720h"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, graphtide.ErrInvalid))
	// Output:
	// analytic "fanin": window 720h0m0s is out of range: allowed 0s..168h0m0s
	// fix FanIn.Window (window in a spec)
	// analytic "fanin": window 720h0m0s is out of range: allowed 0s..168h0m0s
	// true
}

// Errors name vertices by their keys, say what to do, and match the
// package's sentinels (errors.Is) and types (errors.As).
func Example_errors() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	alice, err := db.VertexID("alice")
	check(err)
	bob, err := db.VertexID("bob")
	check(err)

	var b graphtide.Batch
	b.Insert(alice, bob, 50)
	_, err = db.ApplyIf(&b, graphtide.EdgeAbsent(alice, bob))
	check(err)
	_, err = db.ApplyIf(&b, graphtide.EdgeAbsent(alice, bob))
	var refused *graphtide.PreconditionError
	if errors.As(err, &refused) {
		fmt.Println(refused.Condition, "-", refused.Actual)
	}
	fmt.Println(err)

	_, err = db.Result("rings")
	fmt.Println(errors.Is(err, graphtide.ErrUnknownAnalytic))
	fmt.Println(err)

	_, err = graphtide.Open(dir, nil) // db holds it
	fmt.Println(errors.Is(err, graphtide.ErrLocked))
	// Output:
	// edge ("alice", "bob", type default) is absent - it exists
	// precondition 0 failed as of seq 1: edge ("alice", "bob", type default) is absent, but it exists; nothing of the batch was applied: read the graph again and retry with conditions that hold
	// true
	// no analytic of that name is registered: "rings": register it first (DB.Register, DB.RegisterAnalytic), or use the name Register returned
	// true
}

// Writing through a running serve (its writes topic): applied once, even
// when retried under the same idempotency key, and only while its
// conditions hold.
func ExampleDial() {
	url, stop := startServe() // `graphtide serve --writes-topic writes`, at http://127.0.0.1:9464 by default
	defer stop()

	s, err := graphtide.Dial(url, nil)
	check(err)
	defer s.Close()
	ctx := context.Background()
	var b graphtide.Batch
	b.Insert(1, 2, 10)
	o := graphtide.WriteOptions{IdempotencyKey: "transfer-1", Conditions: []graphtide.Condition{graphtide.EdgeAbsent(1, 2)}}
	r, err := s.Write(ctx, &b, o)
	check(err)
	fmt.Println("applied:", r.Applied, "duplicate:", r.Duplicate)
	r, err = s.Write(ctx, &b, o) // a retry, as after a timeout: not applied twice
	check(err)
	fmt.Println("applied:", r.Applied, "duplicate:", r.Duplicate)

	b.Reset()
	b.Insert(1, 2, 20)
	r, err = s.Write(ctx, &b, graphtide.WriteOptions{Conditions: []graphtide.Condition{graphtide.EdgeAbsent(1, 2)}})
	check(err)
	fmt.Println("applied:", r.Applied, "refused by:", r.Failed.Condition, "-", r.Failed.Actual)
	// Output:
	// applied: true duplicate: false
	// applied: true duplicate: true
	// applied: false refused by: edge_absent src=1 dst=2 - it exists
}
