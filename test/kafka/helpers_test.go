package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
)

// ---------------------------------------------------------------- model

// vid is a vertex as the producer names it: a numeric id, or a string key
// that the ingester maps to an id through the key dictionary. The store is
// read back into the same names, so keyed vertices compare by key whatever
// ids the dictionary happened to assign.
type vid struct {
	key string // non-empty: a string key
	id  uint64 // the numeric id when key is empty
}

func (v vid) String() string {
	if v.key != "" {
		return fmt.Sprintf("%q", v.key)
	}
	return fmt.Sprint(v.id)
}

type edgeKey struct{ src, dst vid }

// event is one edge operation as produced.
type event struct {
	op       decode.Op
	src, dst vid // dst unused for a vertex delete
	w        float64
	hasW     bool
}

// edge converts e to a decode.Edge with numeric ids (keys are written by
// the JSON encoder from the vids).
func (e event) edge() decode.Edge {
	return decode.Edge{Op: e.op, Src: e.src.id, Dst: e.dst.id, Weight: e.w, HasWeight: e.hasW}
}

// oracle is the expected graph: live edges and their weights.
type oracle map[edgeKey]float64

func (o oracle) apply(e event) {
	switch e.op {
	case decode.OpUpsert:
		w := 1.0
		if e.hasW {
			w = e.w
		}
		o[edgeKey{e.src, e.dst}] = w
	case decode.OpDeleteEdge:
		delete(o, edgeKey{e.src, e.dst})
	case decode.OpDeleteVertex:
		for k := range o {
			if k.src == e.src || k.dst == e.src {
				delete(o, k)
			}
		}
	}
}

// diff describes how got differs from want ("" if equal), with counts and
// the first few differences.
func diff(want, got oracle) string {
	var missing, wrong, extra []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%v->%v (weight %v)", k.src, k.dst, w))
		case g != w:
			wrong = append(wrong, fmt.Sprintf("%v->%v weight %v, want %v", k.src, k.dst, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, fmt.Sprintf("%v->%v (weight %v)", k.src, k.dst, g))
		}
	}
	if len(missing)+len(wrong)+len(extra) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d edges expected, %d in the store: %d missing, %d with a wrong weight, %d unexpected",
		len(want), len(got), len(missing), len(wrong), len(extra))
	for _, l := range []struct {
		name string
		s    []string
	}{{"missing", missing}, {"wrong weight", wrong}, {"unexpected", extra}} {
		sort.Strings(l.s)
		if len(l.s) > 6 {
			l.s = append(l.s[:6:6], "...")
		}
		if len(l.s) > 0 {
			fmt.Fprintf(&b, "\n  %s: %s", l.name, strings.Join(l.s, ", "))
		}
	}
	return b.String()
}

// split separates keyed edges (both ends string keys) from numeric ones, so
// that the two halves of a comparison are reported separately.
func split(o oracle) (numeric, keyed oracle) {
	numeric, keyed = oracle{}, oracle{}
	for k, w := range o {
		if k.src.key != "" || k.dst.key != "" {
			keyed[k] = w
		} else {
			numeric[k] = w
		}
	}
	return numeric, keyed
}

// readStore reads every out-edge of the store. Key ids are translated back
// to keys through dict (nil: no keys expected). An id in the key range that
// the dictionary does not know is reported in problems and kept as the
// pseudo-key "<unknown key id N>".
// storeOf reads the edges of the data directory dir (opened read-only:
// serve must have stopped) into an oracle; a store it cannot read whole
// fails the test.
func storeOf(t testing.TB, dir string) oracle {
	t.Helper()
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, problems, err := readStore(d.Store, d.Keys)
	if err != nil || len(problems) > 0 {
		t.Fatalf("reading the store of %s: %v %v", dir, err, problems)
	}
	return got
}

func readStore(s *engine.Store, dict *keydict.Dict) (got oracle, problems []string, err error) {
	sn, err := s.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	defer sn.Release()
	unknown := map[uint64]bool{}
	name := func(id uint64) vid {
		if !keydict.IsKeyID(id) {
			return vid{id: id}
		}
		if dict != nil {
			if k, ok := dict.Key(id); ok {
				return vid{key: k}
			}
			if n, ok := dict.Number(id); ok {
				return vid{id: n} // a mapped number (2^32 and up)
			}
		}
		unknown[id] = true
		return vid{key: fmt.Sprintf("<unknown key id %d>", id-keydict.KeyBase)}
	}
	got = oracle{}
	buf := engine.NewScanBuffer(1024, 1<<16, true)
	for lo := uint64(0); lo < sn.VertexBound(); {
		if lo, err = sn.Scan(lo, sn.VertexBound(), engine.Out, buf); err != nil {
			return nil, nil, err
		}
		for i := 0; i < buf.Len(); i++ {
			src := name(buf.Vertices[i])
			for j, d := range buf.Neighbors(i) {
				got[edgeKey{src, name(d)}] = buf.Weights[int(buf.Offsets[i])+j]
			}
		}
	}
	if len(unknown) > 0 {
		ids := make([]uint64, 0, len(unknown))
		for id := range unknown {
			ids = append(ids, id-keydict.KeyBase)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if len(ids) > 10 {
			ids = ids[:10]
		}
		dl := 0
		if dict != nil {
			dl = dict.Len()
		}
		problems = append(problems, fmt.Sprintf("the store holds %d vertex ids in the key range that the key dictionary (%d keys) does not know, e.g. KeyBase+%v",
			len(unknown), dl, ids))
	}
	return got, problems, nil
}

// ---------------------------------------------------------------- streams

// A stream is the events of one topic. Events are routed so that Kafka's
// per-partition order is all the ordering the result depends on:
//
//   - Vertex i (a numeric id base+i, or the key "<prefix>-i") has the home
//     partition i mod P. Every edge op goes to the home partition of its
//     source, so all ops on one edge are in one partition, in order.
//   - A vertex delete touches edges of other sources too (its in-edges). So
//     only the "deletable" vertices (i < V/4) are ever deleted, and an edge
//     may point to a deletable vertex only from a source with the same home
//     partition. Then every edge incident to a deletable vertex v lives in
//     v's home partition, where its delete is produced.
//   - Streams of different topics use disjoint vertices.
//
// Hence the partitions touch disjoint sets of edges, their events commute,
// and applying all events in generation order gives the same graph as any
// interleaving that keeps each partition's order; and the graph after
// the first n_p records of each partition p is the oracle over exactly
// those records.
//
// Weights are unique per event (the event's sequence number), and the
// stream deletes edges and vertices and re-inserts deleted edges with new
// weights, so a lost, duplicated-out-of-order or stale op shows in the
// result.
type stream struct {
	topic      string
	partitions int
	format     decode.Format
	keyPrefix  string // non-empty: vertices are string keys (JSON only)
	base       uint64 // numeric vertex ids are base+i
	vertices   int
	maxPerRec  int // events per record value: 1..maxPerRec

	// ids, when set, are the vertices' ids (vertex i is ids[i]).
	ids []uint64

	r       *rand.Rand
	seq     int
	live    [][][2]int // per partition: recently upserted edges (vertex indices)
	deleted [][][2]int // per partition: recently deleted edges
}

func newStream(topic string, partitions int, format decode.Format, keyPrefix string, base uint64, vertices, maxPerRec int, seed uint64) *stream {
	return &stream{topic: topic, partitions: partitions, format: format, keyPrefix: keyPrefix, base: base,
		vertices: vertices, maxPerRec: maxPerRec, r: rand.New(rand.NewPCG(seed, 0x6b61666b61)),
		live: make([][][2]int, partitions), deleted: make([][][2]int, partitions)}
}

func (s *stream) vertex(i int) vid {
	if s.ids != nil {
		return vid{id: s.ids[i]}
	}
	if s.keyPrefix != "" {
		return vid{key: fmt.Sprintf("%s-%d", s.keyPrefix, i)}
	}
	return vid{id: s.base + uint64(i)}
}

// inHome returns a random vertex index below n with home partition p.
func (s *stream) inHome(n, p int) int {
	k := (n - p + s.partitions - 1) / s.partitions // indices p, p+P, ... below n
	return s.r.IntN(k)*s.partitions + p
}

func (s *stream) deletable() int { return s.vertices / 4 }

func pick(r *rand.Rand, l *[][2]int) [2]int {
	i := r.IntN(len(*l))
	e := (*l)[i]
	(*l)[i] = (*l)[len(*l)-1]
	*l = (*l)[:len(*l)-1]
	return e
}

func remember(r *rand.Rand, l *[][2]int, e [2]int) {
	if len(*l) < 300 {
		*l = append(*l, e)
	} else {
		(*l)[r.IntN(len(*l))] = e
	}
}

// nextEvent generates an event for partition p.
func (s *stream) nextEvent(p int) event {
	s.seq++
	r := s.r
	upsert := func(e [2]int) event {
		remember(r, &s.live[p], e)
		ev := event{op: decode.OpUpsert, src: s.vertex(e[0]), dst: s.vertex(e[1])}
		if r.IntN(10) != 0 {
			ev.w, ev.hasW = float64(s.seq)+0.25, true
		}
		return ev
	}
	switch x := r.IntN(100); {
	case x < 3:
		v := s.inHome(s.deletable(), p)
		return event{op: decode.OpDeleteVertex, src: s.vertex(v)}
	case x < 18 && len(s.live[p]) > 0:
		e := pick(r, &s.live[p])
		remember(r, &s.deleted[p], e)
		return event{op: decode.OpDeleteEdge, src: s.vertex(e[0]), dst: s.vertex(e[1])}
	case x < 28 && len(s.deleted[p]) > 0:
		return upsert(pick(r, &s.deleted[p])) // re-insert with a new weight
	case x < 38 && len(s.live[p]) > 0:
		return upsert(s.live[p][r.IntN(len(s.live[p]))]) // update the weight
	}
	src := s.inHome(s.vertices, p)
	var dst int
	if r.IntN(2) == 0 {
		dst = s.inHome(s.deletable(), p) // deletable: same home as src
	} else {
		dst = s.deletable() + r.IntN(s.vertices-s.deletable()) // any home
	}
	return upsert([2]int{src, dst})
}

// next generates one record with 1..maxPerRec events for a random
// partition.
func (s *stream) next() *record {
	p := s.r.IntN(s.partitions)
	n := 1 + s.r.IntN(s.maxPerRec)
	rec := &record{topic: s.topic, part: int32(p), offset: -1, key: []byte(fmt.Sprint("p", p))}
	for i := 0; i < n; i++ {
		rec.events = append(rec.events, s.nextEvent(p))
	}
	rec.value = encode(s.format, rec.events)
	return rec
}

func (s *stream) records(n int) []*record {
	out := make([]*record, n)
	for i := range out {
		out[i] = s.next()
	}
	return out
}

// encode lays events out as one record value of format f.
func encode(f decode.Format, evs []event) []byte {
	var b []byte
	switch f {
	case decode.FormatBinary:
		for _, e := range evs {
			b = decode.AppendBinary(b, e.edge())
		}
	case decode.FormatText:
		for _, e := range evs {
			b = decode.AppendText(b, e.edge())
		}
	case decode.FormatJSON:
		if len(evs) > 1 {
			b = append(b, '[')
		}
		for i, e := range evs {
			if i > 0 {
				b = append(b, ',')
			}
			b = decode.AppendJSON(b, e.edge(), e.src.key, e.dst.key)
		}
		if len(evs) > 1 {
			b = append(b, ']')
		}
	}
	return b
}

// record is one Kafka record as produced.
type record struct {
	topic  string
	part   int32
	key    []byte
	value  []byte
	events []event // what it means when good
	poison string  // non-empty: the kind of poison, and the record must be dead-lettered
	offset int64   // set once produced; -1 before
}

// oracleOf applies the events of the records, in order, for which keep
// returns true.
func oracleOf(recs []*record, keep func(*record) bool) oracle {
	o := oracle{}
	for _, r := range recs {
		if r.poison == "" && (keep == nil || keep(r)) {
			for _, e := range r.events {
				o.apply(e)
			}
		}
	}
	return o
}

// below keeps the records below pos (produced, with an offset under the
// position's next offset of their partition).
func below(pos ingest.Position) func(*record) bool {
	return func(r *record) bool {
		o, ok := pos.Get(r.topic, r.part)
		return ok && r.offset >= 0 && r.offset < o
	}
}

// ---------------------------------------------------------------- kafka

func uniq(name string) string {
	return fmt.Sprintf("gt-%s-%d-%d", name, time.Now().UnixNano()%1e10, rand.IntN(1e6))
}

// newClient makes a client of the shared broker (started if it is not yet).
func newClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClientAt(t, needBroker(t), opts...)
}

// newClientAt makes a client of the cluster of addrs.
func newClientAt(t testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB) *kadm.Client {
	return kadm.NewClient(newClient(t))
}

// newProducer makes a producer that sends each record to the partition set
// in it.
func newProducer(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2 * time.Millisecond)}, opts...)...)
}

func createTopic(t testing.TB, topic string, partitions int) {
	t.Helper()
	createTopicAt(t, needBroker(t), topic, partitions)
}

// createTopicAt creates topic on the cluster of addrs.
func createTopicAt(t testing.TB, addrs []string, topic string, partitions int) {
	t.Helper()
	cl := newClientAt(t, addrs)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	// Wait until every partition has a leader, so producing does not race
	// the topic's creation. (A direct request: kadm's Metadata is cached.)
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 && len(resp.Topics[0].Partitions) == partitions {
			ready := true
			for _, p := range resp.Topics[0].Partitions {
				ready = ready && p.ErrorCode == 0 && p.Leader >= 0
			}
			if ready {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s has no leaders after 30 s (%v)", topic, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// produce sends recs (in order within each partition) and records their
// offsets.
func produce(ctx context.Context, cl *kgo.Client, recs []*record) error {
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: r.topic, Partition: r.part, Key: r.key, Value: r.value}
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return err
	}
	for i, r := range recs {
		r.offset = krs[i].Offset
	}
	return nil
}

// endOffsets returns the next offset of every partition of the topics.
func endOffsets(t testing.TB, adm *kadm.Client, topics ...string) ingest.Position {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lo, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	p := ingest.Position{}
	lo.Each(func(o kadm.ListedOffset) { p.Set(o.Topic, o.Partition, o.Offset) })
	return p
}

// covers reports whether have is at or past want on every partition of
// want.
func covers(have, want ingest.Position) bool {
	for t, ps := range want {
		for p, o := range ps {
			if h, ok := have.Get(t, p); !ok && o > 0 || ok && h < o {
				return false
			}
		}
	}
	return true
}

func fmtPos(p ingest.Position) string {
	var parts []string
	for t, ps := range p {
		for q, o := range ps {
			parts = append(parts, fmt.Sprintf("%s/%d:%d", t, q, o))
		}
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(25 * time.Millisecond)
	}
	return true
}

// storePosition decodes the store's recorded source position.
func storePosition(t testing.TB, s *engine.Store) ingest.Position {
	t.Helper()
	raw, err := s.SourcePosition()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ingest.DecodePosition(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// restrict returns p limited to the topics of want.
func restrict(p, want ingest.Position) ingest.Position {
	out := ingest.Position{}
	for t, ps := range p {
		if _, ok := want[t]; ok {
			for q, o := range ps {
				out.Set(t, q, o)
			}
		}
	}
	return out
}

func samePosition(a, b ingest.Position) bool { return covers(a, b) && covers(b, a) }

// ---------------------------------------------------------------- in-process ingester

// logBuffer collects an ingester's log; dumped when the test fails.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(l.b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func (l *logBuffer) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func testLogger(t testing.TB, name string) (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, lb.tail(80))
		}
	})
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelInfo})), lb
}

// running is an Ingester running in a goroutine.
type running struct {
	in     *ingest.Ingester
	cancel context.CancelFunc
	done   chan error
	exited atomic.Bool
}

func startIngester(t testing.TB, s *engine.Store, dict *keydict.Dict, cfg ingest.Config) *running {
	t.Helper()
	in, err := ingest.New(s, dict, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{in: in, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := in.Run(ctx)
		r.exited.Store(true)
		r.done <- err
	}()
	t.Cleanup(func() {
		if !r.exited.Load() {
			cancel()
			<-r.done
		}
	})
	return r
}

// stop cancels Run and returns its result.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60 s of cancel")
		return nil
	}
}

// waitDurable waits until the ingester's durable position covers want.
func (r *running) waitDurable(t testing.TB, want ingest.Position, timeout time.Duration) {
	t.Helper()
	ok := waitFor(timeout, func() bool { return r.exited.Load() || covers(r.in.Durable(), want) })
	if r.exited.Load() {
		err := <-r.done
		r.done <- err
		t.Fatalf("Run returned early: %v", err)
	}
	if !ok {
		t.Fatalf("after %v the durable position is %s, want %s", timeout, fmtPos(r.in.Durable()), fmtPos(want))
	}
}

// openStore opens a store and its key dictionary in dir: an existing store
// as it was created (serve creates stores with in-edges), a new one
// without in-edges.
func openStore(t testing.TB, dir string, memBytes int64) (*engine.Store, *keydict.Dict) {
	t.Helper()
	s, err := engine.Open(dir+"/store", &engine.Options{MemGraphBytes: memBytes, InEdgesAsStored: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := keydict.Open(dir + "/keys")
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s, d
}

// openStoreViews opens a store and its key dictionary in a new directory,
// and a views manager over them; all are closed when the test ends.
func openStoreViews(t testing.TB, memBytes int64) (*engine.Store, *keydict.Dict, *views.Manager) {
	t.Helper()
	s, dict := openStore(t, t.TempDir(), memBytes)
	vm, err := views.NewManager(s, views.Config{})
	if err != nil {
		s.Close()
		dict.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		vm.Close()
		dict.Close()
		s.Close()
	})
	return s, dict, vm
}

// checkStore compares the store with want, numeric and keyed edges
// separately (reported as separate errors), and reports key-dictionary
// problems with the keyed half.
func checkStore(t testing.TB, what string, s *engine.Store, dict *keydict.Dict, want oracle) (numericOK, keyedOK bool) {
	t.Helper()
	got, problems, err := readStore(s, dict)
	if err != nil {
		t.Errorf("%s: reading the store: %v", what, err)
		return false, false
	}
	numericOK, keyedOK = true, true
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
		keyedOK = false
	}
	wn, wk := split(want)
	gn, gk := split(got)
	if d := diff(wn, gn); d != "" {
		t.Errorf("%s: numeric edges differ from the oracle: %s", what, d)
		numericOK = false
	}
	if d := diff(wk, gk); d != "" {
		t.Errorf("%s: keyed edges differ from the oracle: %s", what, d)
		keyedOK = false
	}
	return numericOK, keyedOK
}

// consumeAll reads every record of topic from the start until n records
// arrived and then idle passes with nothing new (or timeout passes).
func consumeAll(t testing.TB, topic string, n int, idle, timeout time.Duration) []*kgo.Record {
	t.Helper()
	// read_committed: alert topics are written in transactions, and a
	// fenced producer's aborted records stay in the log.
	cl := newClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var out []*kgo.Record
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		wait := time.Until(deadline)
		if len(out) >= n {
			wait = idle
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		fs := cl.PollFetches(ctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); got++ })
		if got == 0 && len(out) >= n {
			break
		}
	}
	return out
}

// eachKeyedEdge calls f with every out-edge of a keyed vertex in v (both
// ends string keys): its keys and its position k in buf, which v.Scan
// filled (with the columns buf asks for).
func eachKeyedEdge(t testing.TB, v *engine.Snapshot, dict *keydict.Dict, buf *engine.ScanBuffer, f func(sk, dk string, k uint64)) {
	t.Helper()
	_, high := v.VertexBounds()
	for lo := engine.HighIDBase; lo < high; {
		next, err := v.Scan(lo, high, engine.Out, buf)
		if err != nil {
			t.Fatal(err)
		}
		for i, src := range buf.Vertices {
			sk, _ := dict.Key(src)
			for k := buf.Offsets[i]; k < buf.Offsets[i+1]; k++ {
				dk, _ := dict.Key(buf.Dsts[k])
				f(sk, dk, k)
			}
		}
		lo = next
	}
}

// committedOffsets is the offsets group has committed (a partition
// without one is left out).
func committedOffsets(t testing.TB, adm *kadm.Client, group string) ingest.Position {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("fetching the offsets of group %s: %v", group, err)
	}
	p := ingest.Position{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			p.Set(o.Topic, o.Partition, o.At)
		}
	})
	return p
}
