package graphtide

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
)

// TestServerWrite writes through a serve with its embedded broker:
// applied, retried under a key, refused by a condition, with types,
// event times and a vertex delete; the store holds what was applied.
func TestServerWrite(t *testing.T) {
	srv, _ := writestest.Serve(t, server.Config{})
	ctx := context.Background()
	s, err := Dial("http://"+srv.HTTPAddr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	at := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC)
	var b Batch
	b.Insert(1, 2, 5)
	b.Insert(1, 3, 0.5)
	b.SetType(7)
	b.SetEventTime(at)
	b.Insert(4, 1, 1)
	r, err := s.Write(ctx, &b, WriteOptions{IdempotencyKey: "first", Conditions: []Condition{EdgeAbsent(1, 2), DegreeAtMost(1, 0)}})
	if err != nil || !r.Applied || r.Duplicate || r.Failed != nil {
		t.Fatalf("first write: %+v, %v", r, err)
	}
	again, err := s.Write(ctx, &b, WriteOptions{IdempotencyKey: "first", Conditions: []Condition{EdgeAbsent(1, 2), DegreeAtMost(1, 0)}})
	if err != nil || !again.Applied || !again.Duplicate || again.Seq != r.Seq || again.Offset != r.Offset {
		t.Fatalf("the retry: %+v, %v; first %+v", again, err, r)
	}
	b.Reset()
	b.Insert(1, 2, 6)
	refused, err := s.Write(ctx, &b, WriteOptions{Conditions: []Condition{WeightBelow(1, 2, 6), EdgeExists(1, 3).OfType(7), WeightIs(1, 2, 4)}})
	if err != nil || refused.Applied || refused.Failed == nil || refused.Failed.Index != 2 || refused.Failed.Actual != "its weight is 5" {
		t.Fatalf("a refused write: %+v, %v", refused, err)
	}
	b.Reset()
	b.DeleteVertex(4)
	b.Delete(1, 2)
	if r, err := s.Write(ctx, &b, WriteOptions{Conditions: []Condition{VertexExists(4)}}); err != nil || !r.Applied {
		t.Fatalf("deletes: %+v, %v", r, err)
	}
	sn, err := srv.Store().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	cols, err := sn.Edge(1, 3)
	if err != nil || len(cols.Types) != 1 || cols.Types[0] != 7 || cols.Weights[0] != 0.5 || cols.Times[0] != at.UnixMicro() {
		t.Fatalf("edge (1, 3): %+v, %v", cols, err)
	}
	for _, v := range []uint64{1, 4} {
		if d, err := sn.Degree(v, engine.Out); err != nil || d != map[uint64]uint64{1: 1, 4: 0}[v] {
			t.Fatalf("out-degree of %d: %d, %v", v, d, err)
		}
	}
	// Vertex records, in order among the batch's other operations: 6's
	// record dies with the vertex delete after it; 5's lives.
	b.Reset()
	b.PutVertex(6, "gone", nil)
	b.Insert(5, 6, 1)
	b.DeleteVertex(6)
	b.PutVertex(5, "account", []byte(`{"owner":"ann <a&b>"}`))
	if r, err := s.Write(ctx, &b, WriteOptions{Conditions: []Condition{VertexExists(1)}}); err != nil || !r.Applied {
		t.Fatalf("vertex records: %+v, %v", r, err)
	}
	sv, err := srv.Store().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Release()
	if rec, ok, err := sv.Vertex(5); err != nil || !ok || rec.Label != "account" || string(rec.Props) != `{"owner":"ann <a&b>"}` {
		t.Fatalf("vertex 5: %+v %s, %v, %v", rec, rec.Props, ok, err)
	}
	if rec, ok, err := sv.Vertex(6); err != nil || ok {
		t.Fatalf("vertex 6 after its delete: %+v, %v, %v", rec, ok, err)
	}
	b.Reset()
	b.PutVertex(7, strings.Repeat("x", MaxVertexLabel+1), nil) // refused before anything is sent
	if _, err := s.Write(ctx, &b, WriteOptions{}); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("a label over the limit: %v", err)
	}
	b.Reset()
	b.Insert(1, 1<<63, 1) // out of range: refused before anything is sent
	if _, err := s.Write(ctx, &b, WriteOptions{}); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("an id out of range: %v", err)
	}
	b.Reset()
	if _, err := s.Write(ctx, &b, WriteOptions{}); err == nil {
		t.Fatal("an empty batch was sent")
	}
}

// TestServerWriteCarriesPayloads: Server.Write sends an insert's event
// reference and properties (the JSON record format's ref and props), so
// that serve applies them.
func TestServerWriteCarriesPayloads(t *testing.T) {
	var b Batch
	b.Insert(1, 2, 5)
	b.b.SetPayload("e-1", []byte(`{"currency":"EUR"}`))
	b.Delete(1, 3)
	req, err := requestOf(&b, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"op":"add","src":1,"dst":2,"weight":5,"ref":"e-1","props":{"currency":"EUR"}},{"op":"delete","src":1,"dst":3}]`; string(req.Ops) != want {
		t.Fatalf("ops %s, want %s", req.Ops, want)
	}
	if !strings.Contains(string(req.Ops), `"ref":"e-1"`) {
		t.Fatal("no ref")
	}
}
