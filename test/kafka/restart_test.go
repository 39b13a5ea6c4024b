package kafkatest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestBrokerRestart stops the broker (kafka.sh stop) while a stream is
// being produced and ingested, starts it again on the same ports and data
// directory a couple of seconds later, and checks that ingestion resumes,
// Run never fails, and the final store equals the oracle exactly. The
// ingester runs in process; the producer retries through the outage.
func TestBrokerRestart(t *testing.T) {
	addrs := needBroker(t)
	if !broker.own {
		t.Skipf("the broker comes from %s: not ours to restart", brokersEnv)
	}
	adm := newAdmin(t)
	binT, jsonT := uniq("restart-bin"), uniq("restart-json")
	createTopic(t, binT, 4)
	createTopic(t, jsonT, 2)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	bin := newStream(binT, 4, decode.FormatBinary, "", 0, 3000, 2, seed)
	js := newStream(jsonT, 2, decode.FormatJSON, "node", 0, 2000, 2, seed+1)
	var recs []*record
	for i := 0; i < 15000; i++ {
		if i%5 == 4 {
			recs = append(recs, js.next())
		} else {
			recs = append(recs, bin.next())
		}
	}

	// Whatever happens, leave a running broker for the other tests.
	restarted := true
	t.Cleanup(func() {
		if !restarted {
			if out, err := startBroker(broker.port); err != nil {
				t.Errorf("restarting the broker after the test: %v\n%s", err, out)
			}
		}
	})

	dir := t.TempDir()
	s, dict := openStore(t, dir, 256<<10)
	defer s.Close()
	defer dict.Close()
	log, lb := testLogger(t, "ingester")
	m := ingest.NewMetrics(nil)
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{binT, jsonT}, Group: uniq("restart-group"),
		TopicFormats:    map[string]decode.Format{jsonT: decode.FormatJSON},
		DeadLetterTopic: uniq("restart-dead"), FlushInterval: 200 * time.Millisecond, MaxPollRecords: 500,
		Logger: log, Metrics: m,
	})
	prod := startProducing(t, recs, 250, 60*time.Millisecond)
	t0 := time.Now()

	time.Sleep(1500 * time.Millisecond)
	before := run.in.Durable()
	restarted = false
	if out, err := stopBroker(); err != nil {
		t.Fatalf("stopping the broker: %v\n%s", err, out)
	}
	t.Logf("broker stopped at %v (%d records produced, durable %s)", time.Since(t0).Round(time.Millisecond), prod.produced.Load(), fmtPos(before))
	time.Sleep(2 * time.Second)
	if out, err := startBroker(broker.port); err != nil {
		t.Fatalf("restarting the broker: %v\n%s", err, out)
	}
	restarted = true
	t.Logf("broker restarted at %v", time.Since(t0).Round(time.Millisecond))

	if err := <-prod.done; err != nil {
		t.Fatal(err)
	}
	t.Logf("all produced at %v", time.Since(t0).Round(time.Millisecond))
	end := endOffsets(t, adm, binT, jsonT)
	run.waitDurable(t, end, 2*time.Minute)
	t.Logf("all durable at %v; fetch errors counted: %v", time.Since(t0).Round(time.Millisecond), testutil.ToFloat64(m.FetchErrs))
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if covers(before, end) {
		t.Errorf("everything was ingested before the broker stopped (durable %s): the restart tested nothing", fmtPos(before))
	}
	checkStore(t, "after the broker restart", s, dict, oracleOf(recs, nil))
	if got := storePosition(t, s); !samePosition(restrict(got, end), end) {
		t.Errorf("store's recorded position %s, want %s", fmtPos(got), fmtPos(end))
	}
	if !lb.contains("fetch error") && testutil.ToFloat64(m.FetchErrs) == 0 {
		t.Logf("note: the outage surfaced neither as a fetch error metric nor in the log")
	}
}
