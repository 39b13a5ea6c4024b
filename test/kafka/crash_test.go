package kafkatest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// crashProducer produces recs in chunks, pausing between them, so that the
// stream keeps flowing while the consumer is killed and restarted.
type crashProducer struct {
	recs     []*record
	produced atomic.Int64 // recs[:produced] have their offsets set
	done     chan error
}

func startProducing(t *testing.T, recs []*record, chunk int, pause time.Duration) *crashProducer {
	p := &crashProducer{recs: recs, done: make(chan error, 1)}
	cl := newProducer(t)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		for i := 0; i < len(recs); i += chunk {
			j := min(i+chunk, len(recs))
			if err := produce(ctx, cl, recs[i:j]); err != nil {
				p.done <- fmt.Errorf("produce records %d..%d: %w", i, j, err)
				return
			}
			p.produced.Store(int64(j))
			time.Sleep(pause)
		}
		p.done <- nil
	}()
	return p
}

// settled returns the records whose produce has completed, once every
// produce call that was in flight when it was called has completed too:
// whatever a consumer could have seen by then has its offset set.
func (p *crashProducer) settled() []*record {
	n0 := p.produced.Load()
	waitFor(30*time.Second, func() bool {
		n := p.produced.Load()
		return n > n0 || n == int64(len(p.recs))
	})
	return p.recs[:p.produced.Load()]
}

// checkCovered checks that the produced records below pos are exactly the
// pos[t][p] first records of each partition (the topics are fresh, so the
// offsets start at 0), i.e. that the oracle over them is the graph at pos.
func checkCovered(t *testing.T, recs []*record, pos ingest.Position) {
	t.Helper()
	n := ingest.Position{}
	for _, r := range recs {
		if below(pos)(r) {
			o, _ := n.Get(r.topic, r.part)
			n.Set(r.topic, r.part, o+1)
		}
	}
	if !samePosition(n, restrict(pos, n)) || !covers(n, pos) {
		t.Fatalf("the store's position %s does not match the produced records below it %s", fmtPos(pos), fmtPos(n))
	}
}

// TestCrashMidStream runs the ingester in a child process on a store
// directory, SIGKILLs it at random moments four times while a producer keeps
// producing, and restarts it each time; at the end it lets it catch up and
// stop with SIGTERM. After every kill the store, reopened, must hold exactly
// the graph of the records below its recorded position (nothing lost,
// nothing from beyond it), and that position must cover what the child had
// reported durable; the final store must equal the oracle of the whole
// stream. Edges are deleted and re-inserted with new, unique weights, so a
// lost delete or a stale or replayed-out-of-order op shows. The stream has a
// binary topic and a JSON topic with string keys; the store's MemGraphs are
// small, so most data becomes durable through background flushes between
// the ingester's timed flushes.
func TestCrashMidStream(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	binT, jsonT := uniq("crash-bin"), uniq("crash-json")
	createTopic(t, binT, 4)
	createTopic(t, jsonT, 2)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	bin := newStream(binT, 4, decode.FormatBinary, "", 0, 3000, 2, seed)
	js := newStream(jsonT, 2, decode.FormatJSON, "acct", 0, 6000, 2, seed+1)
	var recs []*record
	for i := 0; i < 16000; i++ {
		if i%4 == 3 {
			recs = append(recs, js.next())
		} else {
			recs = append(recs, bin.next())
		}
	}

	dir := t.TempDir()
	_, log := testLogger(t, "the child processes")
	cfg := childConfig{
		Brokers: addrs, Topics: []string{binT, jsonT}, Formats: map[string]decode.Format{jsonT: decode.FormatJSON},
		Group: uniq("crash-group"), Instance: "crash-child", DeadLetter: uniq("crash-dead"), Dir: dir,
		MemBytes: 64 << 10, FlushEvery: 500 * time.Millisecond, MaxPoll: 500,
	}
	prod := startProducing(t, recs, 200, 80*time.Millisecond)
	t0 := time.Now()

	const kills = 4
	keyedBroken := false
	for k := 1; k <= kills; k++ {
		ch := startChild(t, cfg, log)
		time.Sleep(time.Duration(200+r.IntN(1600)) * time.Millisecond)
		if !ch.alive() {
			t.Fatalf("child exited before kill %d: %v", k, ch.err)
		}
		ch.kill(t)
		reported := ch.durable()
		produced := prod.settled()

		s, dict := openStore(t, dir, cfg.MemBytes)
		pos := storePosition(t, s)
		t.Logf("kill %d at %v: %d records produced; store position %s", k, time.Since(t0).Round(time.Millisecond), len(produced), fmtPos(pos))
		if !covers(pos, reported) {
			t.Errorf("kill %d: the child reported %s durable, but the store recorded only %s", k, fmtPos(reported), fmtPos(pos))
		}
		checkCovered(t, produced, pos)
		want := oracleOf(produced, below(pos))
		if keyedBroken {
			// Once keyed edges are wrong, later restarts build on the damage:
			// only the numeric half is still comparable.
			want, _ = split(want)
			got, _, err := readStore(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ = split(got)
			if d := diff(want, got); d != "" {
				t.Errorf("after kill %d: numeric edges differ from the oracle: %s", k, d)
			}
		} else {
			_, keyedOK := checkStore(t, fmt.Sprintf("after kill %d", k), s, dict, want)
			keyedBroken = !keyedOK
		}
		dict.Close()
		s.Close()
		if t.Failed() && !keyedBroken {
			t.FailNow()
		}
	}

	if err := <-prod.done; err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, binT, jsonT)
	ch := startChild(t, cfg, log)
	if !waitFor(90*time.Second, func() bool { return !ch.alive() || covers(ch.durable(), end) }) {
		t.Errorf("the last child did not catch up within 90 s: durable %s, want %s", fmtPos(ch.durable()), fmtPos(end))
	}
	if err := ch.term(t); err != nil {
		t.Fatalf("the last child: %v", err)
	}
	t.Logf("caught up and stopped at %v", time.Since(t0).Round(time.Millisecond))

	s, dict := openStore(t, dir, cfg.MemBytes)
	defer s.Close()
	defer dict.Close()
	if got := storePosition(t, s); !samePosition(restrict(got, end), end) {
		t.Errorf("final store position %s, want %s", fmtPos(got), fmtPos(end))
	}
	want := oracleOf(recs, nil)
	t.Logf("oracle: %d edges", len(want))
	if !keyedBroken {
		checkStore(t, "at the end", s, dict, want)
		return
	}
	want, _ = split(want)
	got, _, err := readStore(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = split(got)
	if d := diff(want, got); d != "" {
		t.Errorf("at the end: numeric edges differ from the oracle: %s", d)
	} else {
		t.Logf("at the end: numeric edges equal the oracle (keyed edges not comparable after the failure above)")
	}
}
