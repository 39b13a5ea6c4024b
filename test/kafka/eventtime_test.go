package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// TestServeMonitorsPaymentsInEventTime (issue 14): graphtide serve, run as
// a process of its own on the real broker with nothing but a field
// mapping and a fan-in monitor of a 1-hour window in event time with 1
// minute of lateness, gets payment events whose times are hours apart and
// out of order. Three payments into acct-9 within the hour raise one
// alert on the alert topic, naming acct-9 and carrying the event time
// and the record of the payment that crossed; payments spread over hours
// raise none; a payment older than the window less the lateness is late:
// counted in the monitor's summary, never in its window.
func TestServeMonitorsPaymentsInEventTime(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	topic, alertT := uniq("payments-et"), uniq("alerts-et")
	createTopic(t, topic, 1)
	port := freeTCPPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	log := &logBuffer{}
	srv := startServe(t, bin, log, "--brokers", strings.Join(addrs, ","), "--topics", topic, "--group", uniq("et-group"),
		"--mapping", topic+":src=/from_account,dst=/to_account,weight=/amount,time=/ts",
		"--dir", filepath.Join(t.TempDir(), "data"), "--memory-budget", "256MiB", "--http-addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--alert-topic", alertT, "--dead-letter-topic", uniq("et-dead"), "--flush-interval", "200ms",
		"--analytic", "type=fanin,name=mules,threshold=2,window=1h,lateness=1m")
	if !waitFor(2*time.Minute, func() bool { code, _ := httpGet(base + "/readyz"); return code == 200 || !srv.alive() }) || !srv.alive() {
		t.Fatalf("serve did not become ready:\n%s", log.tail(40))
	}
	at := func(h, m int) string { return time.Date(2026, 11, 23, h, m, 0, 0, time.UTC).Format(time.RFC3339) }
	pay := func(from, to, ts string) *record {
		v := fmt.Sprintf(`{"event_id":"e","from_account":%q,"to_account":%q,"amount":"10.00","currency":"EUR","ts":%q}`, from, to, ts)
		return &record{topic: topic, value: []byte(v), offset: -1}
	}
	recs := []*record{
		pay("acct-1", "acct-5", at(8, 0)), // into acct-5: hours apart, never 3 in an hour
		pay("acct-2", "acct-5", at(10, 0)),
		pay("acct-1", "acct-9", at(12, 10)),
		pay("acct-3", "acct-5", at(12, 30)),
		pay("acct-2", "acct-9", at(12, 5)),  // out of order, within the hour
		pay("acct-4", "acct-9", at(12, 40)), // the third into acct-9 within the hour: it crosses
		pay("acct-6", "acct-9", at(10, 0)),  // older than 12:40 - 1m - 1h: late
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}
	var summary analytics.MonitorSummary
	if !waitFor(time.Minute, func() bool {
		var res api.AnalyticResult
		if !getJSON(base+"/v1/analytics/mules", &res) {
			return false
		}
		b, _ := json.Marshal(res.Summary)
		return json.Unmarshal(b, &summary) == nil && scrapeSum(base, "graphtide_ingest_records_total") >= float64(len(recs)) &&
			summary.Seq > 0 && summary.Late == 1
	}) {
		t.Fatalf("the monitor did not take in the %d payments with 1 late: %+v\n%s", len(recs), summary, log.tail(20))
	}
	letters := consumeAll(t, alertT, 1, 3*time.Second, 30*time.Second)
	if len(letters) != 1 {
		t.Fatalf("%d alerts, want 1", len(letters))
	}
	var a analytics.Alert
	if err := json.Unmarshal(letters[0].Value, &a); err != nil {
		t.Fatal(err)
	}
	if a.Kind != "fan_in" || a.VertexKey != "acct-9" || string(letters[0].Key) != "acct-9" || a.Value != 3 ||
		a.EventTime.Format(time.RFC3339) != at(12, 40) || a.Source == nil || a.Source.Topic != topic || a.Source.Offset != recs[5].offset {
		t.Fatalf("the alert %s (key %s): want acct-9, 3 payments, at %s, raised by offset %d of %s", letters[0].Value, letters[0].Key, at(12, 40), recs[5].offset, topic)
	}
	if err := srv.stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log.tail(20))
	}
}
