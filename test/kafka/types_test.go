package kafkatest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/typedict"
)

// TestTypedEventsFromTwoTopics (issue 14): payments and logins between
// the same accounts, from two topics, through field mappings that give
// each its edge type (a field of the payment event; a constant for every
// login). A payment and a login between the same two accounts are two
// edges; a refund deletes the payment only. The store, read per type and
// for all types, must equal an oracle of (src, dst, type) edges, and a
// record naming a type that cannot be one is dead-lettered with a reason
// naming the field.
func TestTypedEventsFromTwoTopics(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	payments, logins := uniq("typed-payments"), uniq("typed-logins")
	createTopic(t, payments, 2)
	createTopic(t, logins, 2)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 41))
	acct := func() string { return fmt.Sprintf("acct-%d", r.IntN(25)) }

	type tkey struct{ src, dst, typ string }
	want := map[tkey]float64{}
	var recs []*record
	var bad []*record
	for i := range 1200 {
		a, b := acct(), acct()
		key := []byte(a + "|" + b)
		part := int32(len(a+b) % 2) // every record of one account pair in one partition
		switch x := r.IntN(100); {
		case x < 45: // a payment, or a wire (another type from the same field)
			kind := "payment"
			if x < 10 {
				kind = "wire"
			}
			w := float64(i) + 0.5
			recs = append(recs, &record{topic: payments, part: part, key: key, offset: -1,
				value: fmt.Appendf(nil, `{"from":%q,"to":%q,"amount":"%.1f","kind":%q,"note":{"x":[1,2]}}`, a, b, w, kind)})
			want[tkey{a, b, kind}] = w
		case x < 55: // a refund deletes that payment only
			recs = append(recs, &record{topic: payments, part: part, key: key, offset: -1,
				value: fmt.Appendf(nil, `{"from":%q,"to":%q,"kind":"payment","status":"refunded"}`, a, b)})
			delete(want, tkey{a, b, "payment"})
		case x < 95: // a login: the same accounts, another type
			recs = append(recs, &record{topic: logins, part: part, key: key, offset: -1,
				value: fmt.Appendf(nil, `{"user":%q,"device_owner":%q}`, a, b)})
			want[tkey{a, b, "login"}] = 1
		default: // a type that cannot be one
			rec := &record{topic: payments, part: part, key: key, offset: -1, poison: `type (/kind)`,
				value: fmt.Appendf(nil, `{"from":%q,"to":%q,"kind":"pay,ment"}`, a, b)}
			recs = append(recs, rec)
			bad = append(bad, rec)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := produce(ctx, newProducer(t), recs); err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, payments, logins)

	s, dict, _ := openStoreViews(t, 1<<20)
	types, err := typedict.Open(filepath.Join(t.TempDir(), "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	log, _ := testLogger(t, "ingester")
	dead := uniq("typed-dead")
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{payments, logins}, Group: uniq("typed-group"), Types: types,
		Mappings: map[string]decode.Mapping{
			payments: {Src: "/from", Dst: "/to", Weight: "/amount", Type: "/kind", Op: "/status",
				OpValues: map[string]string{"settled": "upsert", "refunded": "delete"}},
			logins: {Src: "/user", Dst: "/device_owner", Type: "const:login"},
		},
		DeadLetterTopic: dead, FlushInterval: 100 * time.Millisecond, MaxPollRecords: 100,
		Logger: log, Metrics: ingest.NewMetrics(nil),
	})
	run.waitDurable(t, end, 60*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	names := types.Names()
	if len(names) != 4 || !strings.Contains(strings.Join(names, " "), "payment") || !strings.Contains(strings.Join(names, " "), "login") {
		t.Fatalf("the type dictionary holds %v; want default, payment, wire and login", names)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	// read lists every edge of the view as (src, dst, type) -> weight.
	read := func(v *engine.Snapshot) map[tkey]float64 {
		got := map[tkey]float64{}
		buf := engine.NewScanBuffer(256, 4096, true)
		buf.Types = make([]uint16, 4096)
		eachKeyedEdge(t, v, dict, buf, func(sk, dk string, k uint64) {
			got[tkey{sk, dk, types.Name(buf.Types[k])}] = buf.Weights[k]
		})
		return got
	}
	check := func(what string, got, want map[tkey]float64) {
		for k, w := range want {
			if g, ok := got[k]; !ok || g != w {
				t.Errorf("%s: %v is %v (%v), want %v", what, k, g, ok, w)
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: unexpected %v (%v)", what, k, g)
			}
		}
	}
	check("all types", read(sn), want)
	for _, name := range []string{"payment", "login", "wire"} {
		id, err := types.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		of := map[tkey]float64{}
		for k, w := range want {
			if k.typ == name {
				of[k] = w
			}
		}
		check(name, read(sn.OfTypes(engine.TypesOf(id))), of)
	}
	letters := consumeAll(t, dead, len(bad), 2*time.Second, 30*time.Second)
	if len(letters) != len(bad) {
		t.Fatalf("%d dead letters, want %d", len(letters), len(bad))
	}
	for _, l := range letters {
		if h := letterHeaders(l); !strings.Contains(h[ingest.HeaderReason], "type (/kind)") || !strings.Contains(h[ingest.HeaderReason], "comma") {
			t.Errorf("dead letter reason %q", h[ingest.HeaderReason])
		}
	}
}
