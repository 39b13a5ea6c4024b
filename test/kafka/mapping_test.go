package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/views"
)

// TestMappedPaymentStream (issue 14): a stream of payment events as a
// payments team produces them (extra fields, amounts as strings and as
// numbers, event times as RFC 3339 and epoch milliseconds, refunds as a
// "kind", tombstones keyed "from|to" on a compacted-style topic, and
// records that do not fit) ingests through nothing but a field mapping.
// The store must equal an oracle of the good events, and every record
// that does not fit must be dead-lettered with a reason naming its field.
func TestMappedPaymentStream(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	topic := uniq("payments")
	createTopic(t, topic, 3)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 14))

	acct := func() string { return fmt.Sprintf("acct-%d", r.IntN(60)) }
	part := func(key string) int32 { // every record of an edge in one partition
		h := int32(0)
		for _, c := range key {
			h = h*31 + c
		}
		return (h%3 + 3) % 3
	}
	var recs []*record
	live := map[edgeKey]bool{}
	var liveList []edgeKey
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	badReasons := map[int]string{}
	type upsertKey struct {
		src, dst string
		w        float64
	}
	eventTimes := map[upsertKey]int64{} // µs, of each payment
	for i := 0; i < 1500; i++ {
		ev := map[string]any{"event_id": fmt.Sprintf("e-%d", i), "currency": "EUR", "channel": map[string]any{"app": "ios", "v": []any{1, 2, "x"}}}
		var e event
		switch x := r.IntN(100); {
		case x < 12 && len(liveList) > 0: // a refund: the kind deletes the edge
			k := liveList[r.IntN(len(liveList))]
			e = event{op: decode.OpDeleteEdge, src: k.src, dst: k.dst}
			ev["kind"] = "refunded"
		case x < 20 && len(liveList) > 0: // a tombstone
			k := liveList[r.IntN(len(liveList))]
			e = event{op: decode.OpDeleteEdge, src: k.src, dst: k.dst}
			ev = nil
		case x < 26: // does not fit
			k := edgeKey{vid{key: acct()}, vid{key: acct()}}
			rec := &record{topic: topic, part: part(k.src.key + "|" + k.dst.key), key: []byte(k.src.key + "|" + k.dst.key), offset: -1}
			switch x % 3 {
			case 0:
				rec.value = fmt.Appendf(nil, `{"from_account":%q,"to_account":%q,"amount":"12,50"}`, k.src.key, k.dst.key)
				rec.poison = `weight (/amount) invalid weight "12,50"`
			case 1:
				rec.value = fmt.Appendf(nil, `{"from_account":%q,"amount":1}`, k.src.key)
				rec.poison = "dst (/to_account) is missing"
			case 2:
				rec.value = fmt.Appendf(nil, `{"from_account":%q,"to_account":%q,"ts":"last tuesday"}`, k.src.key, k.dst.key)
				rec.poison = `time (/ts) "last tuesday" is neither RFC 3339`
			}
			badReasons[len(recs)] = rec.poison
			recs = append(recs, rec)
			continue
		default: // a payment
			e = event{op: decode.OpUpsert, src: vid{key: acct()}, dst: vid{key: acct()}, w: float64(i*100+r.IntN(100)) / 100, hasW: true} // unique per event; one rounding, as "%.2f" parses back
			if r.IntN(2) == 0 {
				ev["amount"] = fmt.Sprintf("%.2f", e.w)
			} else {
				ev["amount"] = e.w
			}
			ts := base.Add(time.Duration(i) * time.Second)
			eventTimes[upsertKey{e.src.key, e.dst.key, e.w}] = ts.UnixMicro()
			if r.IntN(2) == 0 {
				ev["ts"] = ts.Format(time.RFC3339)
			} else {
				ev["ts"] = ts.UnixMilli()
			}
			ev["kind"] = "paid"
		}
		key := e.src.key + "|" + e.dst.key
		rec := &record{topic: topic, part: part(key), key: []byte(key), events: []event{e}, offset: -1}
		if ev != nil {
			ev["from_account"], ev["to_account"] = e.src.key, e.dst.key
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			rec.value = b
		}
		k := edgeKey{e.src, e.dst}
		if e.op == decode.OpUpsert && !live[k] {
			live[k] = true
			liveList = append(liveList, k)
		}
		recs = append(recs, rec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, topic)

	s, dict, vm := openStoreViews(t, 1<<20)
	// Every operation as the store applies it: its event time must be the
	// record's.
	applied, err := vm.Stream(views.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log, _ := testLogger(t, "ingester")
	dead := uniq("payments-dead")
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{topic}, Group: uniq("payments-group"),
		Mappings: map[string]decode.Mapping{topic: {
			Src: "/from_account", Dst: "/to_account", Weight: "/amount", Time: "/ts", Op: "/kind",
			OpValues:  map[string]string{"paid": "upsert", "refunded": "delete"},
			Tombstone: "delete", TombstoneSrc: "key:0", TombstoneDst: "key:1", KeySeparator: "|",
		}},
		DeadLetterTopic: dead, FlushInterval: 100 * time.Millisecond, MaxPollRecords: 200,
		Logger: log, Metrics: ingest.NewMetrics(nil),
	})
	run.waitDurable(t, end, 60*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := oracleOf(recs, nil)
	if len(want) < 100 {
		t.Fatalf("the stream left only %d edges", len(want))
	}
	checkStore(t, "after ingest", s, dict, want)
	// Every edge the store holds keeps its payment's event time, through
	// flushes and compaction, and reads return it.
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	buf := engine.NewScanBuffer(256, 4096, true)
	buf.Times = make([]int64, 4096)
	checked := 0
	eachKeyedEdge(t, sn, dict, buf, func(sk, dk string, k uint64) {
		if w, ok := eventTimes[upsertKey{sk, dk, buf.Weights[k]}]; !ok || buf.Times[k] != w {
			t.Errorf("the edge %s->%s (%v) reads with event time %d, its payment's is %d (%v)", sk, dk, buf.Weights[k], buf.Times[k], w, ok)
		}
		checked++
	})
	sn.Release()
	if checked != len(want) {
		t.Errorf("read the event times of %d edges, the store holds %d", checked, len(want))
	}
	timed := 0
	for timed < len(eventTimes) {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		b, err := applied.Pull(pctx)
		pcancel()
		if err != nil {
			t.Fatalf("after %d timed upserts of %d: %v", timed, len(eventTimes), err)
		}
		for _, e := range b.Edges {
			if e.Op.Kind != engine.OpUpsert {
				if e.Op.EventTime != 0 {
					t.Errorf("a delete carries the event time %d", e.Op.EventTime)
				}
				continue
			}
			sk, _ := dict.Key(e.Op.Src)
			dk, _ := dict.Key(e.Op.Dst)
			w, ok := eventTimes[upsertKey{sk, dk, e.Op.Weight}]
			if !ok || e.Op.EventTime != w {
				t.Fatalf("upsert %s->%s (%v) applied with event time %d, its record says %d (%v)", sk, dk, e.Op.Weight, e.Op.EventTime, w, ok)
			}
			timed++
		}
	}

	letters := consumeAll(t, dead, len(badReasons), 2*time.Second, 30*time.Second)
	if len(letters) != len(badReasons) {
		t.Fatalf("%d dead letters, want %d", len(letters), len(badReasons))
	}
	byOffset := map[string]string{}
	for i, why := range badReasons {
		byOffset[fmt.Sprintf("%d/%d", recs[i].part, recs[i].offset)] = why
	}
	for _, l := range letters {
		h := letterHeaders(l)
		want, ok := byOffset[h[ingest.HeaderSourcePartition]+"/"+h[ingest.HeaderSourceOffset]]
		if !ok || !strings.Contains(h[ingest.HeaderReason], want) {
			t.Errorf("dead letter %v: reason %q, want one containing %q", h, h[ingest.HeaderReason], want)
		}
	}
}
