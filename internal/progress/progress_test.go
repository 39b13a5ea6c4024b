package progress

import (
	"bytes"
	"testing"
	"time"
)

func TestBar(t *testing.T) {
	clock := time.Unix(1000, 0)
	var plain bytes.Buffer
	p := New(&plain, false, "load", "edges", "bytes", 1000, 5*time.Second, clock)
	p.now = func() time.Time { return clock }
	for i := int64(1); i <= 10; i++ {
		clock = clock.Add(time.Second)
		p.Update(100*i, 1000*i)
	}
	p.Finish(1000, 10000)
	want := "load:  50% (500 of 1000 bytes), 5000 edges, 1000 edges/s\nload: 100% (1000 of 1000 bytes), 10000 edges, 1000 edges/s\n"
	if plain.String() != want {
		t.Errorf("plain progress:\n%q\nwant\n%q", plain.String(), want)
	}

	var tty bytes.Buffer
	clock = time.Unix(1000, 0)
	p = New(&tty, true, "load", "edges", "bytes", 1000, 5*time.Second, clock)
	p.now = func() time.Time { return clock }
	clock = clock.Add(time.Second / 2)
	p.Update(500, 2_000_000)
	p.Finish(1000, 3_000_000)
	p.Finish(1000, 3_000_000) // a second call draws nothing
	want = "\r[###############...............]  50%  2000000 edges  4.00M edges/s " +
		"\r[##############################] 100%  3000000 edges  6.00M edges/s \n"
	if tty.String() != want {
		t.Errorf("terminal progress:\n%q\nwant\n%q", tty.String(), want)
	}
}
