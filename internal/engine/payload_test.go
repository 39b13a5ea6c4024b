package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestBatchPayloadsReachTheirOps(t *testing.T) {
	var b Batch
	b.InsertWeighted(1, 2, 12.5)
	b.SetPayload("e-91", []byte(` {"currency":"EUR"} `))
	b.InsertWeighted(1, 3, 1)
	b.DeleteEdge(1, 4)
	b.InsertWeighted(2, 3, 50)
	b.SetPayload("", []byte(`{"channel":"web"}`))
	b.SetPayload("e-93", []byte(`{"channel":"app"}`)) // the last call for an op wins
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	want := []struct{ ref, props string }{{"e-91", `{"currency":"EUR"}`}, {"", ""}, {"", ""}, {"e-93", `{"channel":"app"}`}}
	for i, w := range want {
		op := b.Op(i)
		if op.EventRef != w.ref || op.Props != w.props {
			t.Errorf("op %d: payload (%q, %s), want (%q, %s)", i, op.EventRef, op.Props, w.ref, w.props)
		}
	}
	kept := b.Op(0).Props
	b.Reset()
	b.InsertWeighted(5, 6, 1)
	b.SetPayload("x", []byte(`{"overwrite":"the old memory"}`))
	if kept != `{"currency":"EUR"}` {
		t.Errorf("an observer's copy changed after Reset: %s", kept)
	}
	if op := b.Op(0); op.EventRef != "x" {
		t.Errorf("after Reset op 0 has ref %q", op.EventRef)
	}
}

func TestBatchPayloadRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(b *Batch)
		want  string
	}{
		{"delete", func(b *Batch) { b.DeleteEdge(1, 2); b.SetPayload("e", nil) }, "not an upsert"},
		{"long ref", func(b *Batch) { b.Insert(1, 2); b.SetPayload(strings.Repeat("r", MaxEventRef+1), nil) }, "at most 255 bytes"},
		{"bad utf8", func(b *Batch) { b.Insert(1, 2); b.SetPayload("\xff", nil) }, "UTF-8"},
		{"array", func(b *Batch) { b.Insert(1, 2); b.SetPayload("", []byte(`[1]`)) }, "JSON object"},
		{"large", func(b *Batch) {
			b.Insert(1, 2)
			b.SetPayload("", []byte(`{"a":"`+strings.Repeat("x", MaxEdgeProps)+`"}`))
		}, "at most 4096 bytes"},
		{"surrogate", func(b *Batch) { b.Insert(1, 2); b.SetPayload("", []byte(`{"a":"\ud800"}`)) }, "surrogate"},
	} {
		var b Batch
		c.build(&b)
		if err := b.Err(); err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrInvalid naming %q", c.name, err, c.want)
		}
	}
}
