package writes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
)

func entries(n int) []Entry {
	var es []Entry
	for i := range n {
		e := Entry{Topic: "w", Partition: int32(i % 3), Offset: int64(i), At: time.Unix(0, int64(1e9+i)),
			Outcome: Outcome{Applied: i%2 == 0, Seq: uint64(10 + i)}}
		if i%4 != 3 {
			e.Key = fmt.Sprintf("key-%d", i)
		}
		if !e.Applied {
			e.Index, e.Condition, e.Actual = i%5, "edge_absent src=1 dst=2", "it exists"
		}
		if i%7 == 6 {
			e.Retry, e.Mismatch, e.FirstPartition, e.FirstOffset = true, i%14 == 13, 2, int64(i/2)
		}
		e.Print[0], e.Print[15] = byte(i), byte(i>>8)
		e.TopicID[0], e.TopicID[15] = 7, byte(i)
		es = append(es, e)
	}
	return es
}

func appendAll(t *testing.T, path string, es []Entry) {
	t.Helper()
	l, err := OpenLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAll returns the entries of the log at path in order, read-only.
func readAll(t *testing.T, path string) []Entry {
	t.Helper()
	l, err := OpenLog(path, true)
	if err != nil {
		t.Fatal(err)
	}
	var out []Entry
	for _, e := range l.entries {
		out = append(out, *e)
	}
	return out
}

func TestLogRoundTripsAndIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	want := entries(50)
	appendAll(t, path, want)
	if got := readAll(t, path); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %d entries, not what was appended", len(got))
	}
	l, err := OpenLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range want {
		if got, ok := l.At(e.Topic, e.Partition, e.Offset); !ok || !reflect.DeepEqual(got, e) {
			t.Fatalf("At(%d, %d) = %v, %v", e.Partition, e.Offset, got, ok)
		}
		if e.Key != "" {
			if got, ok := l.ByKey(e.Key); !ok || got.Offset != e.Offset {
				t.Fatalf("ByKey(%s) = %v, %v", e.Key, got, ok)
			}
		}
	}
	if _, ok := l.At("other", 0, 0); ok {
		t.Fatal("an entry of another topic")
	}
	// A second entry with a key keeps the first as the key's.
	dup := want[0]
	dup.Offset = 999
	if err := l.Append(dup); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.ByKey(dup.Key); got.Offset != want[0].Offset {
		t.Fatalf("the key's entry moved to offset %d", got.Offset)
	}
}

// TestLogTornTailIsCutDamageIsRefused cuts the file at every length
// within its last record (a torn append: the earlier entries survive, the
// read-only open changes nothing and the read-write one cuts it) and flips
// every byte of the first record (refused naming the file and the
// record's offset, nothing changed).
func TestLogTornTailIsCutDamageIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LogFileName)
	want := entries(3)
	want[2].Actual = strings.Repeat("a long text so that the record spans a sector boundary ", 20)
	appendAll(t, path, want)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := len(full) - len(record(&want[2]))
	aligned := 0
	for cut := last; cut < len(full); cut++ {
		for _, zeros := range []bool{false, true} {
			// A cut leaves a prefix of the record; a sector tear zeros it
			// from a sector boundary (or from its start) on.
			if !zeros && cut == last || zeros && cut != last && cut%512 != 0 {
				continue
			}
			if zeros && cut != last {
				aligned++
			}
			b := append([]byte(nil), full[:cut]...)
			if zeros { // a sector tear: the rest of the record is zeros
				b = append(b, make([]byte, len(full)-cut)...)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, path); !reflect.DeepEqual(got, want[:2]) {
				t.Fatalf("cut at %d (zeros %v): read %d entries", cut, zeros, len(got))
			}
			if after, _ := os.ReadFile(path); string(after) != string(b) {
				t.Fatal("a read-only open changed the file")
			}
			l, err := OpenLog(path, false)
			if err != nil {
				t.Fatalf("cut at %d (zeros %v): %v", cut, zeros, err)
			}
			l.Close()
			if after, _ := os.ReadFile(path); string(after) != string(full[:last]) {
				t.Fatalf("cut at %d: the torn record was not cut", cut)
			}
		}
	}
	if aligned == 0 {
		t.Fatal("no sector boundary inside the last record: the test tears none")
	}
	first := len(record(&want[0]))
	for i := logHeader; i < logHeader+first; i++ {
		b := append([]byte(nil), full...)
		b[i] ^= 0x40
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, ro := range []bool{true, false} {
			_, err := OpenLog(path, ro)
			var ce *durable.CorruptError
			if !errors.As(err, &ce) || ce.File != path || ce.Offset != int64(logHeader) {
				t.Fatalf("byte %d flipped (read-only %v): got %v, want damage at offset %d", i, ro, err, logHeader)
			}
			if after, _ := os.ReadFile(path); string(after) != string(b) {
				t.Fatal("a refused open changed the file")
			}
		}
	}
	if err := os.WriteFile(path, []byte("GTWRIT03"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLog(path, false); err == nil || !strings.Contains(err.Error(), "bad magic") {
		t.Fatalf("a wrong magic: %v", err)
	}
}

func TestLogPruneKeepsWhatIsNotDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	es := entries(5000)
	appendAll(t, path, es)
	l, err := OpenLog(path, false)
	if err != nil {
		t.Fatal(err)
	}
	// Dropping too few rewrites nothing.
	if n, err := l.Prune(func(_ int, e *Entry) bool { return e.Offset < 100 }); err != nil || n != 0 || l.Len() != 5000 {
		t.Fatalf("a small prune: %d dropped, %v, %d left", n, err, l.Len())
	}
	before := l.MemoryBytes()
	if before < 5000*entryOverhead {
		t.Fatalf("5000 entries hold %d bytes, not even their overhead", before)
	}
	// Only a prefix goes: entry 4500 would go too, but 4000 stays.
	n, err := l.Prune(func(_ int, e *Entry) bool { return e.Offset < 4000 || e.Offset == 4500 })
	if err != nil || n != 4000 || l.Len() != 1000 {
		t.Fatalf("prune: %d dropped, %v, %d left", n, err, l.Len())
	}
	if _, ok := l.ByKey(es[10].Key); ok {
		t.Fatal("a dropped key is still known")
	}
	if after := l.MemoryBytes(); after*4 > before || after < 1000*entryOverhead {
		t.Fatalf("1000 of 5000 entries left hold %d of %d bytes", after, before)
	}
	if err := l.Append(es[0]); err != nil { // appends go to the new file
		t.Fatal(err)
	}
	l.Close()
	got := readAll(t, path)
	if want := append(append([]Entry(nil), es[4000:]...), es[0]); !reflect.DeepEqual(got, want) {
		t.Fatalf("after prune and append: %d entries, not the ones kept", len(got))
	}
}

// TestLogTornAtSectorBoundaryWithZerosBefore: an append torn at a sector
// boundary whose last bytes before it are zeros of the record itself
// (the high bytes of a little-endian length) is a torn tail too.
func TestLogTornAtSectorBoundaryWithZerosBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	// The first record (after the 20-byte file header) is 488 bytes: the
	// second starts at 508, its length field ends at 512.
	first := Entry{Topic: "w", Key: strings.Repeat("k", 508-logHeader-recordHeader-payloadFixed-1), At: time.Unix(1, 0)}
	appendAll(t, path, []Entry{first, {Topic: "w", Offset: 1, At: time.Unix(2, 0)}})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= 512 || data[511] != 0 {
		t.Fatalf("setup: %d bytes, byte 511 is %#x", len(data), data[511])
	}
	for i := 512; i < len(data); i++ {
		data[i] = 0
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(path, false)
	if err != nil {
		t.Fatalf("a tail torn at a sector boundary: %v", err)
	}
	defer l.Close()
	if l.Len() != 1 {
		t.Fatalf("%d entries after the torn one was cut", l.Len())
	}
}

func TestRequestCheckEncodeParse(t *testing.T) {
	v := 2.5
	r := &Request{Ops: json.RawMessage(`[ {"src": 1, "dst": "b"} ]`), IdempotencyKey: "k",
		Conditions: []Condition{{Kind: KindWeightBelow, Src: json.RawMessage(`1`), Dst: json.RawMessage(` "b" `), Value: &v}}}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ops":[{"src":1,"dst":"b"}],"conditions":[{"kind":"weight_below","src":1,"dst":"b","value":2.5}]}`; string(b) != want {
		t.Fatalf("encoded %s, want %s", b, want)
	}
	b2, _ := Encode(r)
	if Fingerprint(b) != Fingerprint(b2) {
		t.Fatal("the same request printed twice differently")
	}
	ops, conds, err := Parse(b)
	if err != nil || string(ops) != `[{"src":1,"dst":"b"}]` || len(conds) != 1 || *conds[0].Value != 2.5 {
		t.Fatalf("parse: %s %v %v", ops, conds, err)
	}
	bad := []struct {
		r    Request
		want string
	}{
		{Request{Ops: json.RawMessage(`[]`)}, "non-empty array"},
		{Request{Ops: json.RawMessage(`{"src":1,"dst":2}`)}, "non-empty array"},
		{Request{Ops: json.RawMessage(`[{}]`), IdempotencyKey: strings.Repeat("k", MaxKeyLen+1)}, "at most"},
		{Request{Ops: json.RawMessage(`[{}]`), Conditions: []Condition{{Kind: "edge_maybe"}}}, "unknown kind"},
		{Request{Ops: json.RawMessage(`[{}]`), Conditions: []Condition{{Kind: KindEdgeAbsent, Src: json.RawMessage(`1`)}}}, "takes src and dst"},
		{Request{Ops: json.RawMessage(`[{}]`), Conditions: []Condition{{Kind: KindVertexExists, Vertex: json.RawMessage(`1`), Value: &v}}}, "takes no value"},
		{Request{Ops: json.RawMessage(`[{}]`), Conditions: []Condition{{Kind: KindDegreeAtMost, Vertex: json.RawMessage(`1`)}}}, "takes a value"},
		{Request{Ops: json.RawMessage(`[{}]`), Conditions: []Condition{{Kind: KindEdgeExists, Src: json.RawMessage(`-1`), Dst: json.RawMessage(`2`)}}}, "neither"},
		{Request{Ops: json.RawMessage(`[{}]`), Conditions: []Condition{{Kind: KindEdgeExists, Src: json.RawMessage(`1`), Dst: json.RawMessage(`2`), Type: json.RawMessage(`70000`)}}}, "type"},
	}
	for _, c := range bad {
		if err := c.r.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error with %q", c.r, err, c.want)
		}
	}
	for _, v := range []string{`{"ops":[{"src":1,"dst":2}],"extra":1}`, `{"ops":[{"src":1,"dst":2}]} {}`, `[1]`} {
		if _, _, err := Parse([]byte(v)); err == nil {
			t.Errorf("Parse(%s) took it", v)
		}
	}
}

func TestWaitersDeliverOnce(t *testing.T) {
	w := NewWaiters()
	id, ch := w.Add()
	w.Deliver("nobody", Result{})
	w.Deliver(id, Result{Outcome: Outcome{Seq: 7}})
	w.Deliver(id, Result{Outcome: Outcome{Seq: 8}}) // gone: never blocks
	if r := <-ch; r.Seq != 7 {
		t.Fatalf("got %+v", r)
	}
	id2, ch2 := w.Add()
	w.Done(id2)
	w.Deliver(id2, Result{})
	select {
	case r := <-ch2:
		t.Fatalf("delivered after Done: %+v", r)
	default:
	}
}
