package history

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/memdir"
)

// seqAt is the reference: the newest sample at or before t, by a walk.
func seqAt(ss []Sample, t time.Time) (uint64, bool) {
	var seq uint64
	ok := false
	for _, s := range ss {
		if !s.Time.After(t) {
			seq, ok = s.Seq, true
		}
	}
	return seq, ok
}

func TestIndexFollowsTheReferenceAcrossReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	r := rand.New(rand.NewPCG(1, 2))
	x, err := Open(path, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []Sample
	now, seq := time.Unix(1_700_000_000, 0), uint64(0)
	for i := range 300 {
		now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
		seq += uint64(r.IntN(3)) // sometimes nothing new: not recorded
		if err := x.Record(now, seq); err != nil {
			t.Fatal(err)
		}
		if seq > 0 && (len(want) == 0 || seq > want[len(want)-1].Seq) {
			want = append(want, Sample{now, seq})
		}
		if i%50 == 49 { // reopen, the store's newest seq as recorded
			x.Close()
			if x, err = Open(path, seq, false); err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			q := now.Add(-time.Duration(r.IntN(400_000)) * time.Millisecond)
			gs, gok := x.SeqAt(q)
			ws, wok := seqAt(want, q)
			if gs != ws || gok != wok {
				t.Fatalf("seq at %v: %d %v, want %d %v", q, gs, gok, ws, wok)
			}
		}
	}
	if x.Len() != len(want) {
		t.Fatalf("%d samples, want %d", x.Len(), len(want))
	}
	// A crash lost the seqs above 100: their samples go at the next open.
	x.Close()
	if x, err = Open(path, 100, false); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var kept []Sample
	for _, s := range want {
		if s.Seq <= 100 {
			kept = append(kept, s)
		}
	}
	if x.Len() != len(kept) {
		t.Fatalf("after a reopen at seq 100: %d samples, want %d", x.Len(), len(kept))
	}
	if got, _ := x.SeqAt(now); got != kept[len(kept)-1].Seq {
		t.Fatalf("seq now after the reopen: %d, want %d", got, kept[len(kept)-1].Seq)
	}
	// The wall clock stepped back an hour: the sample takes the last
	// sample's time (in order, in memory and in the file).
	if err := x.Record(now.Add(-time.Hour), 1000); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.SeqAt(now); got != 1000 {
		t.Fatalf("after a clock step back, seq at the last sample's time: %d, want 1000", got)
	}
	x.Close()
	y, err := Open(path, 1000, false)
	if err != nil {
		t.Fatalf("reopen after a clock step back: %v", err)
	}
	if got, _ := y.SeqAt(now); got != 1000 {
		t.Fatalf("reopened after a clock step back, seq at the last sample's time: %d, want 1000", got)
	}
	y.Close()
}

// writeSamples makes an index of n samples as a crash leaves it (not
// sealed by a Close) and returns its bytes.
func writeSamples(t *testing.T, path string, n int) []byte {
	t.Helper()
	x, err := Open(path, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := x.Record(time.Unix(int64(1000+i), 0), uint64(10*i)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	if err := os.WriteFile(path, b, 0o644); err != nil { // the seal away
		t.Fatal(err)
	}
	return b
}

func TestTornTailsAreCutAndDamageRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	good := writeSamples(t, path, 5)
	for _, c := range []struct {
		name string
		data []byte
		want int // samples kept; -1: refused
	}{
		{"a partial last record", good[:len(good)-7], 4},
		{"a zero-filled last record", append(append([]byte{}, good[:len(good)-recordSize]...), make([]byte, recordSize)...), 4},
		{"a last record cut at a sector (its start, then zeros)", append(append([]byte{}, good[:len(good)-10]...), make([]byte, 10)...), 4},
		{"a zero-filled record before the last", append(append(append([]byte{}, good[:headerSize+recordSize]...), make([]byte, recordSize)...), good[headerSize+2*recordSize:]...), -1},
		{"the header only", good[:headerSize], 0},
	} {
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Read-only first: the same verdict, and nothing written.
		for _, ro := range []bool{true, false} {
			x, err := Open(path, 1000, ro)
			var ce *durable.CorruptError
			switch {
			case c.want < 0 && (!errors.As(err, &ce) || ce.File != path || ce.Offset != int64(headerSize+recordSize)):
				t.Errorf("%s (read-only %v): %v, want a corruption at byte offset %d", c.name, ro, err, headerSize+recordSize)
			case c.want >= 0 && err != nil:
				t.Errorf("%s (read-only %v): %v", c.name, ro, err)
			case c.want >= 0 && x.Len() != c.want:
				t.Errorf("%s (read-only %v): %d samples, want %d", c.name, ro, x.Len(), c.want)
			}
			if x != nil {
				x.Close()
			}
			if after, _ := os.ReadFile(path); ro && string(after) != string(c.data) {
				t.Errorf("%s: a read-only open changed the file", c.name)
			}
		}
	}
}

// TestEveryBitFlipIsRefusedOrHarmless flips each bit of an index in turn:
// the open refuses it (naming the file), or reads exactly the samples
// written (a flip in the last record reads as a torn append: that sample
// is lost, never wrong).
func TestEveryBitFlipIsRefusedOrHarmless(t *testing.T) {
	path := filepath.Join(memdir.TempDir(t), FileName) // a file rewritten per bit: on tmpfs, not the disk
	good := writeSamples(t, path, 4)
	for bit := 0; bit < 8*len(good); bit++ {
		bad := append([]byte{}, good...)
		bad[bit/8] ^= 1 << (bit % 8)
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := Open(path, 1000, true)
		if err != nil {
			var ce *durable.CorruptError
			if !errors.As(err, &ce) || ce.File != path {
				t.Fatalf("bit %d: %v, want a corruption error naming the file", bit, err)
			}
			continue
		}
		for i := 1; i <= x.Len(); i++ {
			if s, ok := x.SeqAt(time.Unix(int64(1000+i), 0)); !ok || s != uint64(10*i) {
				t.Fatalf("bit %d: seq at sample %d is %d, want %d", bit, i, s, 10*i)
			}
		}
		if x.Len() < 3 {
			t.Fatalf("bit %d read as %d samples", bit, x.Len())
		}
	}
}

func TestTrimKeepsWhatReadsUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	writeSamples(t, path, 10) // seqs 10..100 at times 1001..1010
	x, err := Open(path, 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.Trim(75); err != nil { // seqs 10..70 go but 70, which maps times up to 1008
		t.Fatal(err)
	}
	if o, _ := x.Oldest(); o.Seq != 70 || x.Len() != 4 {
		t.Fatalf("after a trim at 75: oldest %+v, %d samples", o, x.Len())
	}
	if s, ok := x.SeqAt(time.Unix(1007, 500)); !ok || s != 70 {
		t.Fatalf("seq at 1007.5 after the trim: %d %v", s, ok)
	}
	if err := x.Record(time.Unix(2000, 0), 200); err != nil {
		t.Fatal(err)
	}
	x.Close()
	y, err := Open(path, 1000, true)
	if err != nil || y.Len() != 5 {
		t.Fatalf("reopened after a trim and a record: %v, %d samples", err, y.Len())
	}
}
