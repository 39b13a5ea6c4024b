package graphtide_test

import (
	"fmt"
	"os"
	"time"

	"github.com/graphtide/graphtide"
)

// ExampleDB_SetAggregate: payments as events. Each payment from acct-123
// to acct-9 adds to their payment edge; the edge answers how much and how
// often in all, and its events of the last hour one by one.
func ExampleDB_SetAggregate() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	pay, err := db.TypeID("payment")
	check(err)
	check(db.SetAggregate(pay, graphtide.Aggregate{Accumulate: true, Retain: 24 * time.Hour}))
	a, err := db.VertexID("acct-123")
	check(err)
	b9, err := db.VertexID("acct-9")
	check(err)

	var b graphtide.Batch
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	for i, amount := range []float64{12.5, 50, 7.5} {
		b.Insert(a, b9, amount)
		b.SetType(pay)
		b.SetEventTime(at.Add(time.Duration(i) * 45 * time.Minute))
		b.SetPayload(fmt.Sprintf("e-%d", 91+i), []byte(`{"currency":"EUR"}`))
	}
	_, err = db.Apply(&b)
	check(err)

	sn, err := db.Snapshot()
	check(err)
	defer sn.Release()
	edges, err := sn.OfTypes(pay).Edges(a, b9)
	check(err)
	e := edges[0]
	fmt.Printf("in all: %d payments, %v EUR, %s to %s, last %s %s\n", e.Count, e.Sum,
		e.FirstTime.Format(time.Kitchen), e.LastTime.Format(time.Kitchen), e.Ref, e.Props)
	hour, _, err := sn.Events(a, b9, pay, db.NewestEventTime().Add(-time.Hour), 10)
	check(err)
	for _, ev := range hour {
		fmt.Println("in the last hour:", ev.Ref, ev.Weight, ev.Time.Format(time.Kitchen))
	}
	// Output:
	// in all: 3 payments, 70 EUR, 5:00AM to 6:30AM, last e-93 {"currency":"EUR"}
	// in the last hour: e-93 7.5 6:30AM
	// in the last hour: e-92 50 5:45AM
}
