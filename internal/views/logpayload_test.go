package views

import (
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
)

// TestEdgeLogBoundsPayloads: the log holds payloads within its capacity
// times PayloadBytesPerOp whatever the records carry; an operation past
// that bound is logged without its payload and counted, and the bytes of
// overwritten slots are given back.
func TestEdgeLogBoundsPayloads(t *testing.T) {
	l := newEdgeLog(4, 0)                              // 128 bytes of payloads
	props := `{"p":"` + strings.Repeat("x", 90) + `"}` // 98 bytes
	var b engine.Batch
	for i := uint64(0); i < 3; i++ {
		b.InsertWeighted(i, i+1, 1)
		b.SetPayload("r", []byte(props))
	}
	l.append(1, &b, 0)
	held, dropped := l.payloads()
	if held != 99 || dropped != 2 {
		t.Fatalf("after 3 ops of 99 payload bytes: held %d, dropped %d; want 99 and 2", held, dropped)
	}
	got, ok := l.read(0, 3, nil)
	if !ok || len(got) != 3 || got[0].Op.Props != props || got[1].Op.Props != "" || got[1].Op.EventRef != "" || got[2].Op.Props != "" {
		t.Fatalf("log holds %+v", got)
	}
	if got[1].Op.Src != 1 || got[1].Op.Dst != 2 {
		t.Fatalf("an op logged without its payload lost more: %+v", got[1].Op)
	}
	// Four more ops overwrite every slot: the first op's bytes are given
	// back, so the new ones fit one at a time again.
	b.Reset()
	for i := uint64(10); i < 14; i++ {
		b.InsertWeighted(i, i+1, 1)
		if i%2 == 0 {
			b.SetPayload("r", []byte(props))
		}
	}
	l.append(2, &b, 0)
	held, dropped = l.payloads()
	if held != 99 || dropped != 3 {
		t.Fatalf("after the ring turned over: held %d, dropped %d; want 99 and 3", held, dropped)
	}
}
