package api

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/graphtide/graphtide/internal/writes"
)

// fakeWriter answers Submit with what next says, and keeps the requests.
// The writes topic itself is tested in internal/server (the embedded
// broker) and test/kafka (a real one).
type fakeWriter struct {
	mu   sync.Mutex
	got  []writes.Request
	next func(*writes.Request) (writes.Result, error)
}

func (f *fakeWriter) Submit(_ context.Context, r *writes.Request) (writes.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, *r)
	return f.next(r)
}

func (f *fakeWriter) last() writes.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[len(f.got)-1]
}

// checkBatches checks how POST /v1/batches checks a request before it
// reaches the writer, and how it answers each outcome.
func checkBatches(t *testing.T, c *client, fw *fakeWriter) {
	fw.next = func(r *writes.Request) (writes.Result, error) {
		return writes.Result{Outcome: writes.Outcome{Applied: true, Seq: 42}, Partition: 0, Offset: 7}, nil
	}
	body := `{"ops":[{"op":"add","src":"alice","dst":17,"weight":2.5,"ref":"e-91","props":{"currency":"EUR"}},{"op":"delete_vertex","src":3}],` +
		`"conditions":[{"kind":"edge_absent","src":"alice","dst":17},{"kind":"degree_at_most","vertex":"alice","value":3}]}`
	r := c.do("POST", "/v1/batches", []byte(body), true)
	var got BatchResponse
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 || got != (BatchResponse{Applied: true, Seq: 42, Offset: 7}) {
		t.Fatalf("applied: %v (%+v, %v)", r, got, err)
	}
	if req := fw.last(); len(req.Conditions) != 2 || req.IdempotencyKey != "" || !strings.Contains(string(req.Ops), `"alice"`) ||
		!strings.Contains(string(req.Ops), `"ref":"e-91","props":{"currency":"EUR"}`) {
		t.Errorf("the writer got %+v", req)
	}

	// A duplicate's answer says so.
	fw.next = func(r *writes.Request) (writes.Result, error) {
		return writes.Result{Outcome: writes.Outcome{Applied: true, Seq: 40}, Duplicate: true, Offset: 3}, nil
	}
	r = c.do("POST", "/v1/batches", []byte(`{"ops":[{"src":1,"dst":2}],"idempotency_key":"k"}`), true)
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 || got != (BatchResponse{Applied: true, Seq: 40, Duplicate: true, Offset: 3}) {
		t.Errorf("duplicate: %v", r)
	}
	if k := fw.last().IdempotencyKey; k != "k" {
		t.Errorf("the writer got key %q", k)
	}

	refused := writes.Outcome{Seq: 41, Index: 1, Condition: `edge_exists src=1 dst=2`, Actual: "it is absent"}
	fw.next = func(r *writes.Request) (writes.Result, error) {
		return writes.Result{Outcome: refused, Offset: 9}, nil
	}
	rr := c.expect("POST", "/v1/batches", []byte(`{"ops":[{"src":1,"dst":2}],"conditions":[{"kind":"vertex_exists","vertex":1},{"kind":"edge_exists","src":1,"dst":2}]}`),
		409, "precondition 1 (edge_exists src=1 dst=2) failed as of seq 41: it is absent; nothing was applied")
	var br BatchResponse
	if err := json.Unmarshal(rr.body, &br); err != nil || br.Applied || br.Precondition == nil || *br.Precondition != (Precondition{1, refused.Condition, refused.Actual, 41}) {
		t.Errorf("409 body %s", rr.body)
	}

	fw.next = func(r *writes.Request) (writes.Result, error) {
		return writes.Result{Outcome: writes.Outcome{Applied: true, Seq: 40}, Duplicate: true, Mismatch: true, Offset: 3}, nil
	}
	c.expect("POST", "/v1/batches", []byte(`{"ops":[{"src":1,"dst":2}],"idempotency_key":"k"}`), 422, `the idempotency key "k" was used by another batch (partition 0, offset 3)`)
	fw.next = func(r *writes.Request) (writes.Result, error) {
		return writes.Result{Err: "vertex id out of range"}, nil
	}
	c.expect("POST", "/v1/batches", []byte(`{"ops":[{"src":1,"dst":2}]}`), 422, "could not be applied (it went to the dead letters): vertex id out of range")
	fw.next = func(r *writes.Request) (writes.Result, error) {
		return writes.Result{}, errors.New("the batch is in the writes topic (partition 0, offset 5) but was not applied within the deadline")
	}
	c.expect("POST", "/v1/batches", []byte(`{"ops":[{"src":1,"dst":2}]}`), 503, "not applied within the deadline")

	// Requests refused before the writer sees them.
	fw.next = func(r *writes.Request) (writes.Result, error) {
		t.Errorf("the writer got a request the API should have refused: %+v", r)
		return writes.Result{}, errors.New("unexpected")
	}
	for body, want := range map[string]string{
		`{"ops":[]}`: "non-empty array",
		`{"ops":[{"src":1,"dst":2}],"conditions":[{"kind":"edge_maybe"}]}`:                                 `unknown kind "edge_maybe"`,
		`{"ops":[{"src":1,"dst":2}],"conditions":[{"kind":"edge_exists","vertex":1}]}`:                     "edge_exists takes src and dst",
		`{"ops":[{"src":1,"dst":2}],"conditions":[{"kind":"weight_below","src":1,"dst":2}]}`:               "weight_below takes a value",
		`{"ops":[{"src":1,"dst":1.5}]}`:                                                                    "ops: decode json",
		`{"ops":[{"src":1,"dst":2,"weight":"heavy"}]}`:                                                     "ops: decode json",
		`{"ops":[{"src":1,"dst":2,"type":"a,b"}]}`:                                                         "comma",
		`{"ops":[{"op":"delete","src":1,"dst":2,"ref":"e-91"}]}`:                                           "ref not allowed for delete_edge",
		`{"ops":[{"src":1,"dst":2,"props":["EUR"]}]}`:                                                      "props must be a JSON object",
		`{"ops":[{"src":1,"dst":2}],"colour":"red"}`:                                                       `unknown field "colour"`,
		`{"ops":[{"src":1,"dst":2}]} {}`:                                                                   "nothing after it",
		`{"ops":[{"src":1,"dst":2}],"conditions":[{"kind":"vertex_exists","vertex":4611686018427387904}]}`: "in the range of string keys",
		`{"ops":[{"src":1,"dst":2}],"idempotency_key":"` + strings.Repeat("k", 257) + `"}`:                 "idempotency_key is 257 bytes; at most 256",
	} {
		c.expect("POST", "/v1/batches", []byte(body), 400, want)
	}
	big := []byte(`{"ops":[{"src":"` + strings.Repeat("x", 2<<20) + `","dst":1}]}`)
	c.expect("POST", "/v1/batches", big, 413, "request body is larger than 1048576 bytes")
}
