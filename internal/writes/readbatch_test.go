package writes

import (
	"strings"
	"testing"
)

// TestReadBatch: graphtide write's two shapes of a batch (a bare list of
// ops, an object with ops and conditions), the idempotency key from the
// flag or the batch (and refused when they differ), and each way a batch
// is refused, with the input's name in the message.
func TestReadBatch(t *testing.T) {
	ops := `[{"op":"add","src":1,"dst":2}]`
	r, err := ReadBatch(strings.NewReader("  "+ops+"\n"), "in.json", "k1")
	if err != nil || string(r.Ops) != ops || r.IdempotencyKey != "k1" || len(r.Conditions) != 0 {
		t.Fatalf("a list of ops: %+v, %v", r, err)
	}
	obj := `{"ops":` + ops + `,"conditions":[{"kind":"edge_absent","src":1,"dst":2}],"idempotency_key":"k2"}`
	r, err = ReadBatch(strings.NewReader(obj), "in.json", "")
	if err != nil || len(r.Conditions) != 1 || r.IdempotencyKey != "k2" {
		t.Fatalf("an object: %+v, %v", r, err)
	}
	if r, err = ReadBatch(strings.NewReader(obj), "in.json", "k2"); err != nil || r.IdempotencyKey != "k2" {
		t.Fatalf("the same key twice: %+v, %v", r, err)
	}
	for name, c := range map[string]struct{ in, key, want string }{
		"keys differ":   {obj, "k3", "--idempotency-key and the batch's idempotency_key differ"},
		"trailing data": {obj + `{}`, "", "in.json: data after the batch"},
		"not JSON":      {`{"ops":`, "", "in.json: a batch is a JSON list of operations or an object"},
		"no ops":        {`{"conditions":[]}`, "", `in.json: the batch has no "ops"`},
		"empty ops":     {`[]`, "", "in.json: "},
		"too large":     {`[` + strings.Repeat(" ", MaxBatchBytes) + `]`, "", "in.json: a batch is at most 1 MiB"},
	} {
		if _, err := ReadBatch(strings.NewReader(c.in), "in.json", c.key); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
}
