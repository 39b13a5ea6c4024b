package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestPollFillsPayloads: through a mapping, an upsert carries its event
// reference and properties to the store's batch; one of an accumulate
// type without an event id gets its record's "topic/partition/offset";
// one of a replace type gets none; a record whose props break the limits
// is dead-lettered with the reason and nothing of it is applied.
func TestPollFillsPayloads(t *testing.T) {
	m := decode.Mapping{Src: "/from", Dst: "/to", Weight: "/amount", Type: "/type", Op: "/op", EventID: "/event_id",
		Props: decode.PropsMapping{Fields: map[string]string{"currency": "/currency"}}}
	dc, err := decode.NewMapped(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	vals := []string{
		`{"event_id":"e-91","from":1,"to":2,"amount":12.5,"currency":"EUR","type":1}`, // accumulate, its own id
		`{"from":1,"to":2,"amount":50,"type":1}`,                                      // accumulate, no id: the record's
		`{"from":1,"to":3,"currency":"NZD","type":2}`,                                 // replace: props, no reference
		`{"from":1,"to":4,"currency":"` + strings.Repeat("x", decode.MaxEdgeProps) + `","type":1}`,
		`{"op":"delete","event_id":"e-x","from":1,"to":3,"type":2}`, // a delete carries nothing
		`[{"from":5,"to":6,"type":1},{"event_id":7,"from":5,"to":7,"type":1}]`,
	}
	var rs []fakeRec
	for i, v := range vals {
		rs = append(rs, fakeRec{p: 1, off: int64(10 + i), val: v})
	}
	e, ctx := newLoopEnv(t, []fakeStep{{recs: rs}}, idle(3))
	e.autoDurable = true
	if _, err := runLoopDecoder(ctx, e, Config{Accumulate: engine.TypesOf(1)}, dc); err != nil {
		t.Fatal(err)
	}
	type payload struct {
		src, dst   uint64
		ref, props string
	}
	want := []payload{
		{1, 2, "e-91", `{"currency":"EUR"}`},
		{1, 2, "edges/1/11", ""},
		{1, 3, "", `{"currency":"NZD"}`},
		{1, 3, "", ""},
		{5, 6, "edges/1/15", ""},
		{5, 7, "7", ""},
	}
	var got []payload
	for _, a := range e.applies {
		for _, op := range a.ops {
			got = append(got, payload{op.Src, op.Dst, op.EventRef, op.Props})
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("payloads\n %v\nwant\n %v", got, want)
	}
	if len(e.dlWrites) != 1 || e.dlWrites[0] != 13 || !strings.Contains(e.dlReasons[0], "an edge's props have at most 4096 bytes") {
		t.Errorf("dead letters %v %q, want offset 13 for its props", e.dlWrites, e.dlReasons)
	}
}

func TestSourceRef(t *testing.T) {
	if got := SourceRef("payments", 3, 1234567890123); got != "payments/3/1234567890123" {
		t.Fatal(got)
	}
}
