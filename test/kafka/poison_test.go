package kafkatest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
)

// binEntry lays out one binary entry by hand (AppendBinary cannot write
// some of the bad ones).
func binEntry(op, flags byte, src, dst uint64, opt ...uint64) []byte {
	b := []byte{op, flags}
	b = binary.LittleEndian.AppendUint64(b, src)
	b = binary.LittleEndian.AppendUint64(b, dst)
	for _, o := range opt {
		b = binary.LittleEndian.AppendUint64(b, o)
	}
	return b
}

// poisonRecords returns one record per kind of poison for each format. The
// numeric vertices they name (900000+) appear in no good record, so a bad
// value that leaked half into the store would show.
func poisonRecords(binT, jsonT, textT string) []*record {
	good := decode.AppendBinary(nil, decode.Edge{Op: decode.OpUpsert, Src: 900001, Dst: 900002, Weight: 7, HasWeight: true})
	nan := math.Float64bits(math.NaN())
	inf := math.Float64bits(math.Inf(1))
	p := func(topic, kind string, value []byte) *record {
		return &record{topic: topic, poison: kind, value: value, offset: -1, key: []byte("poison " + kind)}
	}
	return []*record{
		// binary
		p(binT, "garbage", []byte{9, 9, 9}),
		p(binT, "empty value", nil),
		p(binT, "truncated entry", good[:len(good)-1]),
		p(binT, "unknown op", binEntry(7, 0, 900003, 900004)),
		p(binT, "unknown flag bits", binEntry(0, 0x84, 900003, 900004)),
		p(binT, "src out of range", binEntry(0, 0, 1<<63, 900004)),
		p(binT, "dst in the key id range", binEntry(0, 0, 900003, keydict.KeyBase+5)),
		p(binT, "NaN weight", binEntry(0, 1, 900003, 900004, nan)),
		p(binT, "Inf weight", binEntry(0, 1, 900003, 900004, inf)),
		p(binT, "vertex delete with a dst", binEntry(2, 0, 900003, 900004)),
		p(binT, "weight on a delete", binEntry(1, 1, 900003, 900004, math.Float64bits(1))),
		p(binT, "good entry then NaN", append(append([]byte(nil), good...), binEntry(0, 1, 900005, 900006, nan)...)),
		// JSON
		p(jsonT, "bad JSON", []byte(`{"op":"add","src":1,`)),
		p(jsonT, "not JSON", []byte(`hello`)),
		p(jsonT, "unknown op", []byte(`{"op":"frob","src":900003,"dst":900004}`)),
		p(jsonT, "src out of range", []byte(`{"src":9223372036854775808,"dst":900004}`)),
		p(jsonT, "numeric id in the key range", []byte(`{"src":4611686018427387904,"dst":900004}`)),
		p(jsonT, "NaN weight", []byte(`{"src":900003,"dst":900004,"weight":NaN}`)),
		p(jsonT, "weight overflows", []byte(`{"src":900003,"dst":900004,"weight":1e999}`)),
		p(jsonT, "unknown field", []byte(`{"src":900003,"dst":900004,"colour":"red"}`)),
		p(jsonT, "missing dst", []byte(`{"op":"add","src":900003}`)),
		p(jsonT, "empty key", []byte(`{"src":"","dst":"poison-key-b"}`)),
		p(jsonT, "invalid UTF-8 in a key", []byte("{\"src\":\"acct-\xff\",\"dst\":\"poison-key-b\"}")),
		p(jsonT, "another invalid UTF-8 key", []byte("{\"src\":\"acct-\xfe\",\"dst\":\"poison-key-b\"}")),
		p(jsonT, "escaped lone surrogate in a key", []byte(`{"src":"acct-\ud800","dst":"poison-key-b"}`)),
		p(jsonT, "empty array", []byte(`[]`)),
		p(jsonT, "good object then bad", []byte(`[{"src":"poison-key-a","dst":"poison-key-b","weight":1},{"op":"delete","src":"poison-key-c"}]`)),
		// text
		p(textT, "too many fields", []byte("900003 900004 1 2\n")),
		p(textT, "NaN weight", []byte("900003 900004 nan\n")),
		p(textT, "Inf weight", []byte("900003 900004 inf\n")),
		p(textT, "dv without src", []byte("dv\n")),
		p(textT, "src out of range", []byte("18446744073709551616 900004\n")),
		p(textT, "empty value", []byte("")),
		p(textT, "good line then bad", []byte("900007 900008 1\n900009\n")),
	}
}

// TestPoisonRecords mixes records of every kind of poison, in each format,
// into good streams. Each must be dead-lettered exactly once with the
// reason, source topic, partition and offset of the original record in
// headers (and its key and value), the decode-error and dead-letter
// counters must rise by exactly the number of poison records per topic,
// nothing of a poison record may reach the store (not even the good half of
// a value), and every good record must be ingested. At the end a poll that
// holds nothing but a poison record must be handled too.
func TestPoisonRecords(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	adm := newAdmin(t)
	binT, jsonT, textT := uniq("poison-bin"), uniq("poison-json"), uniq("poison-text")
	createTopic(t, binT, 2)
	createTopic(t, jsonT, 1)
	createTopic(t, textT, 1)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	streams := map[string]*stream{
		binT:  newStream(binT, 2, decode.FormatBinary, "", 0, 400, 2, seed),
		jsonT: newStream(jsonT, 1, decode.FormatJSON, "name", 0, 200, 2, seed+1),
		textT: newStream(textT, 1, decode.FormatText, "", 100_000, 200, 2, seed+2),
	}
	poison := poisonRecords(binT, jsonT, textT)
	var recs []*record
	for i, pr := range poison {
		// Some good records of the same topic around each poison record.
		for j := 0; j < 40; j++ {
			recs = append(recs, streams[pr.topic].next())
		}
		pr.part = int32(i % streams[pr.topic].partitions)
		recs = append(recs, pr)
	}
	for _, s := range streams {
		for j := 0; j < 40; j++ {
			recs = append(recs, s.next())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod := newProducer(t)
	if err := produce(ctx, prod, recs); err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, adm, binT, jsonT, textT)

	dir := t.TempDir()
	s, dict := openStore(t, dir, 1<<20)
	defer s.Close()
	defer dict.Close()
	log, _ := testLogger(t, "ingester")
	m := ingest.NewMetrics(nil)
	dead := uniq("poison-dead")
	formats := map[string]decode.Format{binT: decode.FormatBinary, jsonT: decode.FormatJSON, textT: decode.FormatText}
	run := startIngester(t, s, dict, ingest.Config{
		Brokers: addrs, Topics: []string{binT, jsonT, textT}, Group: uniq("poison-group"),
		TopicFormats:    formats,
		DeadLetterTopic: dead, FlushInterval: 100 * time.Millisecond, MaxPollRecords: 100,
		Logger: log, Metrics: m,
	})
	run.waitDurable(t, end, 60*time.Second)

	// A poll with nothing but a poison record (the ingester is idle now).
	last := &record{topic: binT, part: 1, poison: "alone in its poll", value: []byte{1}, key: []byte("poison alone"), offset: -1}
	if err := produce(ctx, prod, []*record{last}); err != nil {
		t.Fatal(err)
	}
	poison = append(poison, last)
	recs = append(recs, last)
	end.Set(binT, 1, last.offset+1)
	run.waitDurable(t, end, 30*time.Second)
	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	checkStore(t, "after ingest", s, dict, oracleOf(recs, nil))
	for _, k := range []string{"poison-key-a", "poison-key-b", "poison-key-c"} {
		if _, ok := dict.Lookup(k); ok {
			t.Errorf("key %q of a rejected record was given an id", k)
		}
	}

	// The dead letters.
	byOrigin := map[string]*record{}
	for _, pr := range poison {
		byOrigin[fmt.Sprintf("%s/%d/%d", pr.topic, pr.part, pr.offset)] = pr
	}
	letters := consumeAll(t, dead, len(poison), time.Second, 30*time.Second)
	seen := map[*record]bool{}
	for _, l := range letters {
		h := map[string]string{}
		for _, x := range l.Headers {
			h[x.Key] = string(x.Value)
		}
		origin := fmt.Sprintf("%s/%s/%s", h[ingest.HeaderSourceTopic], h[ingest.HeaderSourcePartition], h[ingest.HeaderSourceOffset])
		pr := byOrigin[origin]
		switch {
		case pr == nil:
			t.Errorf("dead letter with headers %v names no poison record", h)
			continue
		case seen[pr]:
			t.Errorf("poison record %q (%s) dead-lettered twice", pr.poison, origin)
		}
		seen[pr] = true
		if want := "decode " + formats[pr.topic].String() + ": "; !strings.HasPrefix(h[ingest.HeaderReason], want) {
			t.Errorf("poison record %q: reason header %q, want a %q... reason", pr.poison, h[ingest.HeaderReason], want)
		}
		if string(l.Value) != string(pr.value) || string(l.Key) != string(pr.key) {
			t.Errorf("poison record %q: dead letter key/value %q/%q, want %q/%q", pr.poison, l.Key, l.Value, pr.key, pr.value)
		}
		t.Logf("%-5s %-28q -> %s", shortTopic(pr.topic), pr.poison, h[ingest.HeaderReason])
	}
	for _, pr := range poison {
		if !seen[pr] {
			t.Errorf("poison record %q (%s/%d/%d) was not dead-lettered", pr.poison, pr.topic, pr.part, pr.offset)
		}
	}

	// The counters.
	for _, topic := range []string{binT, jsonT, textT} {
		np, n := 0, 0
		for _, r := range recs {
			if r.topic == topic {
				n++
				if r.poison != "" {
					np++
				}
			}
		}
		if got := testutil.ToFloat64(m.DecodeErrs.WithLabelValues(topic)); got != float64(np) {
			t.Errorf("decode errors of %s: %v, want %d", topic, got, np)
		}
		if got := testutil.ToFloat64(m.DeadLetters.WithLabelValues(topic)); got != float64(np) {
			t.Errorf("dead letters of %s: %v, want %d", topic, got, np)
		}
		if got := testutil.ToFloat64(m.Records.WithLabelValues(topic)); got != float64(n) {
			t.Errorf("records of %s: %v, want %d", topic, got, n)
		}
	}
	if got := testutil.ToFloat64(m.DeadLetters.WithLabelValues(dead)); got != 0 {
		t.Errorf("dead letters counted under the dead-letter topic: %v", got)
	}
}

// shortTopic turns "gt-poison-bin-N-M" into "bin".
func shortTopic(t string) string {
	if parts := strings.Split(t, "-"); len(parts) == 5 {
		return parts[2]
	}
	return t
}
