package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestEndToEnd produces about 20k edge events (upserts with and without
// weights, weight updates, edge deletes, re-inserts, vertex deletes) to a
// 4-partition binary topic, a 2-partition JSON topic with string keys and a
// 2-partition text topic, runs an Ingester in process until its durable
// position covers every produced offset, and compares the store with the
// oracle; then again after reopening the store. See stream for how events
// are routed to partitions so that the oracle is exact.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	binT, jsonT, textT := uniq("e2e-bin"), uniq("e2e-json"), uniq("e2e-text")
	createTopic(t, binT, 4)
	createTopic(t, jsonT, 2)
	createTopic(t, textT, 2)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var recs []*record
	recs = append(recs, newStream(binT, 4, decode.FormatBinary, "", 0, 4000, 3, seed).records(7000)...)
	recs = append(recs, newStream(jsonT, 2, decode.FormatJSON, "user", 0, 1500, 3, seed+1).records(2000)...)
	recs = append(recs, newStream(textT, 2, decode.FormatText, "", 1_000_000, 1000, 3, seed+2).records(1500)...)
	events := 0
	for _, r := range recs {
		events += len(r.events)
	}
	t.Logf("%d records, %d events", len(recs), events)

	prod := newProducer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := produce(ctx, prod, recs); err != nil {
		t.Fatalf("produce: %v", err)
	}
	t.Logf("produced in %v", time.Since(t0).Round(time.Millisecond))
	end := endOffsets(t, adm, binT, jsonT, textT)

	dir := t.TempDir()
	s, dict := openStore(t, dir, 256<<10) // small MemGraphs: background flushes too
	log, _ := testLogger(t, "ingester")
	m := ingest.NewMetrics(nil)
	group := uniq("e2e-group")
	t0 = time.Now()
	r := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{binT, jsonT, textT}, Group: group,
		TopicFormats:    map[string]decode.Format{jsonT: decode.FormatJSON, textT: decode.FormatText},
		DeadLetterTopic: uniq("e2e-dead"), FlushInterval: 200 * time.Millisecond, MaxPollRecords: 2000,
		Logger: log, Metrics: m,
	})
	r.waitDurable(t, end, 90*time.Second)
	t.Logf("ingested and durable in %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("stopped in %v", time.Since(t0).Round(time.Millisecond))

	want := oracleOf(recs, nil)
	t.Logf("oracle: %d edges", len(want))
	checkStore(t, "after ingest", s, dict, want)
	if got := storePosition(t, s); !samePosition(restrict(got, end), end) {
		t.Errorf("store's recorded position %s, want %s", fmtPos(got), fmtPos(end))
	}

	// Metrics: every record counted, nothing rejected.
	for _, topic := range []string{binT, jsonT, textT} {
		n := 0
		for _, rec := range recs {
			if rec.topic == topic {
				n++
			}
		}
		if got := testutil.ToFloat64(m.Records.WithLabelValues(topic)); got != float64(n) {
			t.Errorf("records counter of %s: %v, want %d", topic, got, n)
		}
		if got := testutil.ToFloat64(m.DecodeErrs.WithLabelValues(topic)); got != 0 {
			t.Errorf("decode errors of %s: %v, want 0", topic, got)
		}
	}
	if got := testutil.ToFloat64(m.Edges); got != float64(events) {
		t.Errorf("edges counter %v, want %d", got, events)
	}

	// The group's committed offsets follow the durable position.
	if committed := committedOffsets(t, adm, group); !samePosition(committed, end) {
		t.Errorf("committed offsets %s, want %s", fmtPos(committed), fmtPos(end))
	}

	// Durable: the same after reopening.
	if err := dict.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, dict = openStore(t, dir, 256<<10)
	defer s.Close()
	defer dict.Close()
	checkStore(t, "after reopening", s, dict, want)
	if got := storePosition(t, s); !samePosition(restrict(got, end), end) {
		t.Errorf("after reopening, store's recorded position %s, want %s", fmtPos(got), fmtPos(end))
	}
}
