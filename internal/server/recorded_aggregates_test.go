package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
	"github.com/graphtide/graphtide/internal/writes"
)

// pay posts one payment from acct-1 to acct-2 of type payment through
// POST /v1/batches and returns the edge as read after it.
func pay(t *testing.T, srv *server.Server, amount float64, ts string) api.Neighbor {
	t.Helper()
	ctx := context.Background()
	c, err := api.NewClient("http://"+srv.HTTPAddr(), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op, err := json.Marshal([]map[string]any{{"op": "add", "src": "acct-1", "dst": "acct-2", "weight": amount, "type": "payment", "ts": ts}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.PostBatch(ctx, &writes.Request{Ops: op}); err != nil || !resp.Applied {
		t.Fatalf("post: %+v, %v", resp, err)
	}
	e, err := c.Edge(ctx, "acct-1", "acct-2", api.ReadOptions{Types: "payment"})
	if err != nil || len(e.Edges) != 1 {
		t.Fatalf("edge: %+v, %v", e, err)
	}
	return e.Edges[0]
}

// TestServeKeepsTheStoresAggregates: the mapping's types are recorded in
// the store, so serve started without the mapping keeps accumulating a
// type the mapping made accumulate (on a store that held them as
// configuration only, the next payment replaced the others); serve with a
// mapping that says replace for it fails at start, naming the type, and
// changes nothing.
func TestServeKeepsTheStoresAggregates(t *testing.T) {
	dir := t.TempDir()
	_, accumulate, err := decode.ParseMappingFlag("payments:src=/from,dst=/to,weight=/amount,types=payment:accumulate:24h")
	if err != nil {
		t.Fatal(err)
	}
	srv, stop := writestest.Serve(t, server.Config{Dir: dir, Topics: []string{"payments"},
		Mappings: map[string]decode.Mapping{"payments": accumulate}})
	if n := pay(t, srv, 12.5, "2026-12-06T05:00:00Z"); n.Aggregate == nil || n.Aggregate.Count != 1 {
		t.Fatalf("first payment: %+v", n)
	}
	stop()

	// Without the mapping: payment accumulates still.
	srv, stop = writestest.Serve(t, server.Config{Dir: dir})
	n := pay(t, srv, 50, "2026-12-06T05:10:00Z")
	if a := n.Aggregate; a == nil || a.Count != 2 || a.Sum != 62.5 || n.Weight != 62.5 {
		t.Fatalf("a payment served without the mapping: %+v (aggregate %+v), want 2 payments summing 62.5", n, a)
	}
	if a := srv.Store().Aggregates(); len(a) != 1 {
		t.Fatalf("the store's aggregates: %+v", a)
	}
	stop()

	// A mapping that makes payment replace: refused at start.
	_, replace, err := decode.ParseMappingFlag("payments:src=/from,dst=/to,weight=/amount,types=payment:replace|refund:accumulate")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := budget.Divide(512<<20, budget.Explicit{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Dir: dir, Plan: plan, Topics: []string{"payments"}, Group: "g", Format: decode.FormatBinary,
		DeadLetterTopic: "dlq", Reset: "earliest", Mappings: map[string]decode.Mapping{"payments": replace}}
	cfg.HTTP.Addr = "127.0.0.1:0"
	s, err := server.Open(context.Background(), cfg)
	if err == nil {
		s.Close()
		t.Fatal("serve with a mapping making payment replace started")
	}
	for _, want := range []string{"types: payment:", "records it as accumulate (retain 24h0m0s)", "new type name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	srv, stop = writestest.Serve(t, server.Config{Dir: dir})
	defer stop()
	if a := srv.Store().Aggregates(); len(a) != 1 {
		t.Fatalf("the refused start recorded something: %+v", a)
	}
	if n := pay(t, srv, 7.5, "2026-12-06T05:20:00Z"); n.Aggregate == nil || n.Aggregate.Count != 3 || n.Aggregate.Sum != 70 {
		t.Fatalf("after the refused start: %+v", fmt.Sprint(n.Aggregate))
	}
}
