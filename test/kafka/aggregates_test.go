package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/ingest"
)

// TestServePaymentsAsEvents (issue 42): graphtide serve, a process of its
// own on the real broker, reads a payments stream through a field mapping
// whose payment type accumulates (retain 2h) and whose login type
// replaces, with event ids, a currency property, refunds that end an
// edge, and a record whose props break the limits. The HTTP API must
// answer "how much and how often did A pay B, in all and in the last
// hour" for every pair as an oracle of the events says: the edge's
// count, sum, first and last time, newest reference and props, and the
// window's count, sum and events; a payment without an event id takes its
// record's topic/partition/offset; the bad record is dead-lettered with
// the reason.
func TestServePaymentsAsEvents(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	topic, dead, writesTopic := uniq("payments-agg"), uniq("payments-agg-dead"), uniq("payments-agg-writes")
	createTopic(t, topic, 3)
	port := freeTCPPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	log := &logBuffer{}
	srv := startServe(t, bin, log, "--brokers", strings.Join(addrs, ","), "--topics", topic, "--group", uniq("agg-group"),
		"--mapping", topic+":src=/from_account,dst=/to_account,weight=/amount,time=/ts,type=/type,op=/kind,op_values=paid:upsert|refunded:delete|login:upsert,"+
			"event_id=/event_id,props.currency=/currency,types=payment:accumulate:2h|login:replace",
		"--dir", filepath.Join(t.TempDir(), "data"), "--memory-budget", "256MiB", "--http-addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--dead-letter-topic", dead, "--flush-interval", "200ms", "--writes-topic", writesTopic)
	if !waitFor(2*time.Minute, func() bool { code, _ := httpGet(base + "/readyz"); return code == 200 || !srv.alive() }) || !srv.alive() {
		t.Fatalf("serve did not become ready:\n%s", log.tail(40))
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 42))
	type key struct{ src, dst, typ string }
	type ev struct {
		amount     float64
		tm         time.Time
		ref, props string
	}
	oracle := map[key][]ev{}
	var newest time.Time
	part := func(k string) int32 {
		h := int32(0)
		for _, c := range k {
			h = h*31 + c
		}
		return (h%3 + 3) % 3
	}
	var recs []*record
	var applies []func(off int64) // per record: what it does to the oracle, once its offset is known
	var noID []int                // the records of payments without an event id
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for i := range 800 {
		from, to := fmt.Sprintf("acct-%d", r.IntN(8)), fmt.Sprintf("acct-%d", r.IntN(8))
		tm := t0.Add(time.Duration(i)*20*time.Second - time.Duration(r.IntN(120))*time.Second) // over 4.5 hours, a little out of order
		m := map[string]any{"from_account": from, "to_account": to}
		k := key{from, to, "payment"}
		var apply func(off int64)
		switch x := r.IntN(100); {
		case x < 5:
			m["kind"], m["type"] = "refunded", "payment"
			apply = func(int64) { delete(oracle, k) }
		case x < 15:
			k.typ = "login"
			m["kind"], m["type"], m["ts"], m["currency"] = "login", "login", tm.Format(time.RFC3339), "-"
			e := ev{amount: 1, tm: tm, props: `{"currency":"-"}`}
			apply = func(int64) { oracle[k] = []ev{e}; newest = maxTime(newest, tm) }
		default:
			amount := float64(r.IntN(20000)) / 100
			m["kind"], m["type"], m["ts"], m["amount"] = "paid", "payment", tm.Format(time.RFC3339), amount
			e := ev{amount: amount, tm: tm}
			if r.IntN(4) > 0 {
				e.ref = fmt.Sprintf("e-%d", i)
				m["event_id"] = e.ref
			}
			if r.IntN(3) > 0 {
				cur := []string{"EUR", "NZD", "USD"}[r.IntN(3)]
				m["currency"], e.props = cur, fmt.Sprintf(`{"currency":%q}`, cur)
			}
			apply = func(off int64) {
				if e.ref == "" {
					e.ref = fmt.Sprintf("%s/%d/%d", topic, part(from+"|"+to), off)
				}
				oracle[k] = append(oracle[k], e)
				newest = maxTime(newest, tm)
			}
			if e.ref == "" {
				noID = append(noID, len(recs))
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		rec := &record{topic: topic, part: part(from + "|" + to), key: []byte(from + "|" + to), value: b, offset: -1}
		recs = append(recs, rec)
		applies = append(applies, apply)
	}
	// A payment whose props break the limits: dead-lettered, not applied.
	big := &record{topic: topic, part: 0, key: []byte("acct-1|acct-2"), offset: -1,
		value: fmt.Appendf(nil, `{"kind":"paid","type":"payment","from_account":"acct-1","to_account":"acct-2","amount":1,"currency":%q}`, strings.Repeat("x", 5000))}
	recs = append(recs, big)
	applies = append(applies, func(int64) {})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs {
		applies[i](rec.offset)
	}
	if len(noID) == 0 {
		t.Fatal("no payment without an event id")
	}
	if !waitFor(time.Minute, func() bool { return scrapeSum(base, "graphtide_ingest_records_total") >= float64(len(recs)) }) {
		t.Fatalf("serve did not take in the %d records:\n%s", len(recs), log.tail(20))
	}
	letters := consumeAll(t, dead, 1, 2*time.Second, 30*time.Second)
	if len(letters) != 1 || !strings.Contains(letterHeaders(letters[0])[ingest.HeaderReason], "an edge's props have at most 4096 bytes") {
		t.Fatalf("dead letters %d (want the one whose props are too large)", len(letters))
	}

	since := newest.Add(-time.Hour)
	get := func(path string, v any) {
		t.Helper()
		if !waitFor(10*time.Second, func() bool { return getJSON(base+path, v) }) {
			code, b := httpGet(base + path)
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
	}
	checked, windows := 0, 0
	for a := range 8 {
		for b := range 8 {
			from, to := fmt.Sprintf("acct-%d", a), fmt.Sprintf("acct-%d", b)
			var resp api.EdgeResponse
			get(fmt.Sprintf("/v1/edges/%s/%s?window=1h&limit=10000", url.PathEscape(from), url.PathEscape(to)), &resp)
			got := map[string]api.Neighbor{}
			for _, e := range resp.Edges {
				got[e.Type] = e
			}
			for _, typ := range []string{"payment", "login"} {
				evs := oracle[key{from, to, typ}]
				e, ok := got[typ]
				if ok != (len(evs) > 0) {
					t.Fatalf("%s -> %s %s: found %v, the oracle has %d events", from, to, typ, ok, len(evs))
				}
				if !ok {
					continue
				}
				last := evs[len(evs)-1]
				if e.Ref != last.ref || string(e.Props) != last.props {
					t.Fatalf("%s -> %s %s: ref %q props %s, want the newest event's %q %s", from, to, typ, e.Ref, e.Props, last.ref, last.props)
				}
				if typ == "login" {
					if e.Aggregate != nil || e.Weight != 1 || e.Window != nil {
						t.Fatalf("%s -> %s login (replace): %+v", from, to, e)
					}
					continue
				}
				var sum, wsum float64
				var wn uint64
				first, lastT := evs[0].tm, evs[0].tm
				for _, x := range evs {
					sum += x.amount
					first, lastT = minTime(first, x.tm), maxTime(lastT, x.tm)
					if !x.tm.Before(since) {
						wn++
						wsum += x.amount
					}
				}
				want := api.EdgeAggregate{Count: uint64(len(evs)), Sum: sum, FirstTime: first.Format(time.RFC3339), LastTime: lastT.Format(time.RFC3339), Ref: last.ref}
				if e.Aggregate == nil || e.Aggregate.Count != want.Count || !near(e.Aggregate.Sum, want.Sum) || e.Aggregate.FirstTime != want.FirstTime ||
					e.Aggregate.LastTime != want.LastTime || e.Aggregate.Ref != want.Ref || !near(e.Weight, sum) {
					t.Fatalf("%s -> %s: how much and how often in all: %+v (weight %v), want %+v", from, to, e.Aggregate, e.Weight, want)
				}
				if e.Window == nil || e.Window.Count != wn || !near(e.Window.Sum, wsum) || len(e.Window.Events) != int(wn) || e.Window.Since != since.Format(time.RFC3339) {
					t.Fatalf("%s -> %s: in the last hour: %+v, want %d payments, %v", from, to, e.Window, wn, wsum)
				}
				checked++
				if wn > 0 {
					windows++
				}
			}
		}
	}
	if checked < 30 || windows < 10 {
		t.Fatalf("checked %d payment edges, %d with payments in the last hour: too few", checked, windows)
	}
	// A payment without an event id reads with its record's coordinates:
	// the events route lists it (the newest such payment that no refund
	// ended, within the retain).
	listed := 0
	for i := len(noID) - 1; i >= 0 && listed < 5; i-- {
		rec := recs[noID[i]]
		var raw struct {
			From string `json:"from_account"`
			To   string `json:"to_account"`
		}
		if err := json.Unmarshal(rec.value, &raw); err != nil {
			t.Fatal(err)
		}
		ref := fmt.Sprintf("%s/%d/%d", topic, rec.part, rec.offset)
		held := false
		for _, e := range oracle[key{raw.From, raw.To, "payment"}] {
			held = held || e.ref == ref && !e.tm.Before(newest.Add(-2*time.Hour))
		}
		if !held {
			continue
		}
		var evs api.EventsResponse
		get(fmt.Sprintf("/v1/edges/%s/%s/events?type=payment&limit=10000", raw.From, raw.To), &evs)
		found := false
		for _, e := range evs.Events {
			found = found || e.Ref == ref
		}
		if !found {
			t.Fatalf("the events of %s -> %s do not list %s: %+v", raw.From, raw.To, ref, evs.Events)
		}
		listed++
	}
	if listed == 0 {
		t.Fatal("no payment without an event id left to look up")
	}
	if code, b := httpGet(base + "/v1/edges/acct-1/acct-2?window=3h"); code != 400 || !strings.Contains(string(b), "longer than the retain of type payment (2h0m0s)") {
		t.Fatalf("a window past the retain: %d %s", code, b)
	}
	// A payment written through POST /v1/batches (the writes topic)
	// without a ref of its own reads with its write record's
	// coordinates, as one of the payments topic does (the answer names
	// them); one with a ref keeps it, and a login (replace) gets none.
	ts := newest.Format(time.RFC3339)
	var wr struct {
		Applied   bool  `json:"applied"`
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	}
	body := `{"ops":[{"src":"acct-w1","dst":"acct-w2","weight":7.5,"type":"payment","ts":"` + ts + `"},` +
		`{"src":"acct-w1","dst":"acct-w2","weight":2.5,"type":"payment","ts":"` + ts + `","ref":"w-2"},` +
		`{"src":"acct-w1","dst":"acct-w3","type":"login","ts":"` + ts + `"}]}`
	resp, err := http.Post(base+"/v1/batches", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || json.Unmarshal(b, &wr) != nil || !wr.Applied {
		t.Fatalf("POST /v1/batches: %d %s %v", resp.StatusCode, b, err)
	}
	var wevs api.EventsResponse
	get("/v1/edges/acct-w1/acct-w2/events?type=payment", &wevs)
	var wrefs []string
	for _, e := range wevs.Events {
		wrefs = append(wrefs, e.Ref)
	}
	slices.Sort(wrefs)
	if want := []string{fmt.Sprintf("%s/%d/%d", writesTopic, wr.Partition, wr.Offset), "w-2"}; !slices.Equal(wrefs, want) {
		t.Fatalf("the written payments' refs %q, want %q", wrefs, want)
	}
	var login api.EdgeResponse
	get("/v1/edges/acct-w1/acct-w3", &login)
	if len(login.Edges) != 1 || login.Edges[0].Ref != "" || login.Edges[0].Aggregate != nil {
		t.Fatalf("the written login (replace): %+v", login.Edges)
	}
	if err := srv.stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log.tail(20))
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// near compares sums of amounts in cents, whatever order added them.
func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }
