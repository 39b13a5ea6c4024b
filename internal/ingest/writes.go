package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/writes"
)

// The writes topic (Config.Writes; package writes has the record and the
// outcome log). Its records are batches, each applied as a store batch of
// its own (with its conditions, atomically), in log order, after the
// other records of the same poll (which are of other partitions: any
// order between partitions is an order the log allows).
//
// How a write is applied (writesTopic.apply), first rule that fits:
//  1. The outcome log has an entry for its record, of this incarnation of
//     the topic (its topic ID): a replay after a crash, or from an
//     analytics checkpoint. The logged outcome is repeated, without
//     evaluating again (the state may differ: records of other partitions
//     can interleave differently on a replay). An entry for another batch
//     at that offset stops ingestion: the log is not this topic's.
//  2. Its idempotency key has an entry: a retry. An entry of its own says
//     so (logged and synced first, so that a replay of it applies
//     nothing even once its key's first entry is pruned); nothing is
//     applied; the first write's outcome is the answer.
//  3. No key and no conditions: applied as any record.
//  4. Otherwise the conditions are evaluated with the store's writer lock
//     held (engine.ApplyIfThen), the outcome is appended to the log and
//     synced, and only then is the batch applied (or not).
//
// A write that applies nothing still advances the position: an empty
// batch carries it, so every write ends in exactly one store batch.
//
// INVARIANT: a keyed or conditional write's outcome is in the log, synced,
// before its batch is in the store, hence before any flush can make the
// position after it durable; so a write whose record the store's position
// covers is never evaluated again.

// WritesConfig is graphtide's own writes topic (serve --writes-topic).
type WritesConfig struct {
	// Topic is one of Config.Topics.
	Topic string
	// Log holds the outcomes (required).
	Log *writes.Log
	// Waiters receive the results of the writes this process produced
	// (nil: nobody waits).
	Waiters *writes.Waiters
	// Retention: an entry is kept at least this long (default 24h), and
	// while a replay could reach its record (see writesTopic.prune); but of the
	// entries no replay needs, at most MaxEntries (default 1<<20) are
	// kept, however young: about 250 bytes of memory each.
	Retention  time.Duration
	MaxEntries int
}

// pendingWrite is a decoded write record, for the applier.
type pendingWrite struct {
	partition int32
	offset    int64
	request   string // HeaderRequest
	key       string // HeaderKey
	print     [16]byte
	conds     []writes.Condition
	batch     engine.Batch
}

// decodeWrite makes a pendingWrite of a writes-topic record: its ops
// decoded by dc (the JSON format, assigning key ids as any record does);
// an upsert of a type of accumulate without a ref of its own gets the
// record's "topic/partition/offset", as a record of --topics does. An
// error is the record's fault: it goes to the dead letters, and its
// waiter is told.
func decodeWrite(dc decode.Decoder, r *kgo.Record, ref uint64, accumulate *engine.TypeSet) (*pendingWrite, error) {
	w := &pendingWrite{partition: r.Partition, offset: r.Offset, print: writes.Fingerprint(r.Value), request: requestOf(r)}
	for _, h := range r.Headers {
		if h.Key == writes.HeaderKey {
			w.key = string(h.Value)
		}
	}
	if len(w.key) > writes.MaxKeyLen {
		return w, &decode.Error{Reason: fmt.Sprintf("writes: the idempotency key is %d bytes; at most %d", len(w.key), writes.MaxKeyLen)}
	}
	ops, conds, err := writes.Parse(r.Value)
	if err != nil {
		return w, &decode.Error{Reason: err.Error()}
	}
	w.conds = conds
	w.batch.Tag(ref)
	if err := dc.Decode(ops, func(e decode.Edge) { addEvent(&w.batch, e, r, accumulate) }); err != nil {
		return w, err
	}
	return w, nil
}

// requestOf is the request id a write record carries ("" none).
func requestOf(r *kgo.Record) string { return kafkaconn.Header(r, writes.HeaderRequest) }

// requestHeader is a copy of r's request id header, alone (nil: none):
// what a dead-letter block keeps of a write's headers, to answer it.
func requestHeader(r *kgo.Record) []kgo.RecordHeader {
	if id := requestOf(r); id != "" {
		return []kgo.RecordHeader{{Key: writes.HeaderRequest, Value: []byte(id)}}
	}
	return nil
}

// writeFailure is a write record that went to the dead letters.
type writeFailure struct {
	request, reason string
	partition       int32
	offset          int64
}

// errStaticRefusal stops ApplyIfThen once a refusal decided without the
// store is logged.
var errStaticRefusal = errors.New("refused by a condition on a vertex or type never seen")

// resolved is a write's conditions as the store evaluates them.
type resolved struct {
	conds []engine.Condition
	index []int // of each in the request
	// static is the first condition that fails whatever the store holds
	// (it names a vertex or type never seen), -1 if none; the conditions
	// before it are in conds, those after it are not evaluated.
	static       int
	staticActual string
}

// writesTopic is the writes topic's part of the Ingester: the outcome log,
// the waiters, the retention, and the lookups of conditions' vertices and
// types. It applies each write through a writesStore and answers its
// waiter; the Ingester gives it the values of other parts it needs (the
// topic's ID from the binding, the positions a replay could start from).
//
// It has no lock of its own: the applier's goroutine applies (apply,
// applyJob), the poll loop's prunes and answers dead-lettered writes, and
// the log and the waiters each hold their own lock.
type writesTopic struct {
	topic      string
	log        *writes.Log
	waiters    *writes.Waiters
	retention  time.Duration
	maxEntries int

	store writesStore
	keys  vertexLookup // nil: the store has no string keys
	types typeLookup   // nil: conditions give type numbers only

	outcomes *prometheus.CounterVec // Metrics.Writes
	logger   *slog.Logger
}

// writesStore is what the writes part asks of the store (the Ingester's
// apply and applyIfThen: the store's, watched for stalls).
type writesStore interface {
	apply(b *engine.Batch) (uint64, error)
	// applyIfThen is engine.Store.ApplyIfThen.
	applyIfThen(b *engine.Batch, conds []engine.Condition, before func(next uint64, perr *engine.PreconditionError) error) (uint64, error)
}

// vertexLookup finds a vertex's id without assigning one (keydict.Dict).
type vertexLookup interface {
	Lookup(key string) (uint64, bool)
	LookupNum(n uint64) (uint64, bool)
}

// typeLookup finds an edge type's number by name (typedict.Dict).
type typeLookup interface {
	Lookup(name string) (uint16, error)
}

// newWritesTopic is the part of c (nil: no writes topic, and a nil part).
// dict and types may be nil.
func newWritesTopic(c *WritesConfig, store writesStore, dict *keydict.Dict, types *typedict.Dict, m *Metrics, logger *slog.Logger) *writesTopic {
	if c == nil {
		return nil
	}
	w := &writesTopic{topic: c.Topic, log: c.Log, waiters: c.Waiters, retention: c.Retention, maxEntries: c.MaxEntries,
		store: store, outcomes: m.Writes, logger: logger}
	if dict != nil {
		w.keys = dict
	}
	if types != nil {
		w.types = types
	}
	return w
}

// withDefaults checks c against the topics and their mappings and fills
// in the retention's defaults.
func (c WritesConfig) withDefaults(topics []string, mappings map[string]decode.Mapping) (*WritesConfig, error) {
	if c.Log == nil {
		return nil, errors.New("ingest: the writes topic needs its outcome log")
	}
	if !slices.Contains(topics, c.Topic) {
		return nil, fmt.Errorf("ingest: the writes topic %q is not one of the topics", c.Topic)
	}
	if _, mapped := mappings[c.Topic]; mapped {
		return nil, fmt.Errorf("ingest: the writes topic %q cannot have a mapping: its records are batches", c.Topic)
	}
	if c.Retention == 0 {
		c.Retention = 24 * time.Hour
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = 1 << 20
	}
	return &c, nil
}

// checkLog refuses a log this start created where the store has consumed
// the writes topic (recorded): the log is missing. It removes the empty
// file this start made, so that the next start refuses too.
func (w *writesTopic) checkLog(recorded Position) error {
	if w == nil || !w.log.Created() {
		return nil
	}
	if _, had := recorded[w.topic]; !had {
		return nil
	}
	os.Remove(w.log.Path())
	return fmt.Errorf("ingest: the store has consumed the writes topic %q, but its outcome log %s is missing: replays could apply refused or retried batches; restore the file, or start with the store and the log of one backup", w.topic, w.log.Path())
}

// resolveConditions turns a write's conditions into the store's, looking
// keys and type names up without assigning anything: a vertex or type
// never seen has no edge, so its condition holds or fails without the
// store.
func (w *writesTopic) resolveConditions(cs []writes.Condition) resolved {
	r := resolved{static: -1}
	for i, c := range cs {
		ec, missing := w.resolve(c)
		if missing != "" {
			// Nothing of it is in the graph.
			holds := ec.Kind == engine.CondEdgeAbsent || ec.Kind == engine.CondDegreeAtMost && ec.Value >= 0
			if holds {
				continue
			}
			r.static, r.staticActual = i, missing
			return r
		}
		r.conds = append(r.conds, ec)
		r.index = append(r.index, i)
	}
	return r
}

// resolve is one condition as the store evaluates it, or why a vertex or
// type it names has never been in the graph ("": all have).
func (w *writesTopic) resolve(c writes.Condition) (engine.Condition, string) {
	ec := engine.Condition{Kind: writes.EngineKind(c.Kind)}
	missing := ""
	vertex := func(raw []byte) uint64 {
		v, why := w.lookupVertex(raw)
		if why != "" && missing == "" {
			missing = why
		}
		return v
	}
	if c.Type != nil {
		t, why := w.lookupType(c.Type)
		if why != "" {
			missing = why
		}
		ec.Type = t
	}
	if c.Vertex == nil { // an edge's condition (Parse checked the fields)
		ec.Src, ec.Dst = vertex(c.Src), vertex(c.Dst)
	} else {
		ec.Src = vertex(c.Vertex)
	}
	if c.Value != nil {
		ec.Value = *c.Value
	}
	return ec, missing
}

// lookupVertex is the id of a condition's vertex, or why it has none.
func (w *writesTopic) lookupVertex(raw []byte) (uint64, string) {
	n, key, err := writes.ParseVertex(raw)
	if err != nil {
		return 0, err.Error()
	}
	d := w.keys
	if key != "" {
		if d == nil {
			return 0, fmt.Sprintf("vertex %q: this store has no string keys", key)
		}
		id, ok := d.Lookup(key)
		if !ok {
			return 0, fmt.Sprintf("vertex %q has never been in the graph", key)
		}
		return id, ""
	}
	if n > engine.MaxVertex || d != nil && n >= keydict.KeyBase {
		return 0, fmt.Sprintf("vertex %d is out of range", n)
	}
	if d != nil {
		id, ok := d.LookupNum(n)
		if !ok {
			return 0, fmt.Sprintf("vertex %d has never been in the graph", n)
		}
		return id, ""
	}
	return n, ""
}

// lookupType is the number of a condition's type, or why it has none.
func (w *writesTopic) lookupType(raw []byte) (uint16, string) {
	n, name, err := writes.ParseType(raw)
	if err != nil {
		return 0, err.Error()
	}
	if name == "" {
		if int(n) >= engine.MaxEdgeTypes {
			return 0, fmt.Sprintf("edge type %d is out of range", n)
		}
		return n, ""
	}
	if w.types == nil {
		return 0, fmt.Sprintf("edge type %q is unknown", name)
	}
	t, err := w.types.Lookup(name)
	if err != nil {
		return 0, fmt.Sprintf("edge type %q is unknown", name)
	}
	return t, ""
}

// apply applies one write (the rules at the top of this file) bound to
// srcpos, the topic's ID being topicID, tells its waiter, and returns the
// seq of the store batch it ended in.
func (w *writesTopic) apply(pw *pendingWrite, srcpos []byte, topicID TopicID) (uint64, error) {
	pw.batch.SetSourcePosition(srcpos)
	res := writes.Result{Partition: pw.partition, Offset: pw.offset}
	var seq uint64
	var err error
	entry := writes.Entry{Topic: w.topic, TopicID: topicID, Partition: pw.partition, Offset: pw.offset, Key: pw.key, Print: pw.print}
	if e, ok := w.log.At(w.topic, pw.partition, pw.offset); ok && e.TopicID == topicID {
		seq, err = w.replay(pw, e, srcpos, &res)
	} else if e, ok := w.firstOfKey(pw.key); ok {
		seq, err = w.retry(pw, e, entry, srcpos, &res)
	} else if pw.key == "" && len(pw.conds) == 0 {
		// Rule 3: applied as any record.
		seq, err = w.store.apply(&pw.batch)
		res.Applied, res.Seq = true, seq
	} else {
		seq, err = w.evaluate(pw, entry, srcpos, &res)
	}
	if err != nil {
		return 0, err
	}
	w.answer(pw.request, res)
	return seq, nil
}

// firstOfKey is the entry of key's first write (none for no key).
func (w *writesTopic) firstOfKey(key string) (writes.Entry, bool) {
	if key == "" {
		return writes.Entry{}, false
	}
	return w.log.ByKey(key)
}

// replay is rule 1: pw's record has the logged outcome e, which is
// repeated without evaluating again.
func (w *writesTopic) replay(pw *pendingWrite, e writes.Entry, srcpos []byte, res *writes.Result) (uint64, error) {
	if e.Print != pw.print {
		return 0, fmt.Errorf("ingest: %s holds the outcome of %s/%d@%d, but for another batch than that record holds: the log does not belong to this topic; refusing to guess (move the log aside only if the topic was re-created)",
			w.log.Path(), w.topic, pw.partition, pw.offset)
	}
	res.Outcome, res.Duplicate, res.Mismatch = e.Outcome, e.Retry, e.Mismatch
	if e.Retry {
		res.Partition, res.Offset = e.FirstPartition, e.FirstOffset
	}
	if e.Applied && !e.Retry {
		return w.store.apply(&pw.batch)
	}
	return w.applyEmpty(srcpos)
}

// retry is rule 2: pw's key has the entry first. Its own entry says so
// before the empty batch can be durable: a replay of it must not apply
// it, even once the first entry of its key is pruned.
func (w *writesTopic) retry(pw *pendingWrite, first writes.Entry, entry writes.Entry, srcpos []byte, res *writes.Result) (uint64, error) {
	res.Outcome, res.Duplicate, res.Mismatch = first.Outcome, true, first.Print != pw.print
	res.Partition, res.Offset = first.Partition, first.Offset
	if first.Retry {
		res.Partition, res.Offset = first.FirstPartition, first.FirstOffset
	}
	entry.At, entry.Outcome, entry.Retry, entry.Mismatch = time.Now(), res.Outcome, true, res.Mismatch
	entry.FirstPartition, entry.FirstOffset = res.Partition, res.Offset
	if err := w.log.Append(entry); err != nil {
		return 0, fmt.Errorf("ingest: the writes outcome log: %w", err)
	}
	return w.applyEmpty(srcpos)
}

// evaluate is rule 4: pw's conditions are evaluated with the store's
// writer lock held, the outcome logged and synced, and only then is the
// batch applied (or an empty one in its place).
func (w *writesTopic) evaluate(pw *pendingWrite, entry writes.Entry, srcpos []byte, res *writes.Result) (uint64, error) {
	r := w.resolveConditions(pw.conds)
	seq, err := w.store.applyIfThen(&pw.batch, r.conds, func(next uint64, perr *engine.PreconditionError) error {
		entry.At = time.Now()
		entry.Outcome = r.outcome(pw.conds, next, perr)
		if err := w.log.Append(entry); err != nil {
			return fmt.Errorf("ingest: the writes outcome log: %w", err)
		}
		if r.static >= 0 {
			return errStaticRefusal
		}
		return nil
	})
	var perr *engine.PreconditionError
	if errors.As(err, &perr) || errors.Is(err, errStaticRefusal) {
		seq, err = w.applyEmpty(srcpos)
	}
	res.Outcome = entry.Outcome
	return seq, err
}

// outcome is the outcome of a write whose conditions cs resolved to r,
// evaluated before the store batch next: perr (nil: they held) or r's
// static refusal.
func (r *resolved) outcome(cs []writes.Condition, next uint64, perr *engine.PreconditionError) writes.Outcome {
	switch {
	case perr != nil:
		i := r.index[perr.Index]
		return writes.Outcome{Seq: perr.Seq, Index: i, Condition: conditionText(cs[i]), Actual: perr.Actual}
	case r.static >= 0:
		return writes.Outcome{Seq: next - 1, Index: r.static, Condition: conditionText(cs[r.static]), Actual: r.staticActual}
	}
	return writes.Outcome{Applied: true, Seq: next}
}

// applyEmpty applies an empty batch bound to srcpos: a write that applies
// nothing still advances the position.
func (w *writesTopic) applyEmpty(srcpos []byte) (uint64, error) {
	var b engine.Batch
	b.SetSourcePosition(srcpos)
	return w.store.apply(&b)
}

// answer counts a write's outcome and tells its waiter.
func (w *writesTopic) answer(request string, r writes.Result) {
	o := "refused"
	switch {
	case r.Mismatch:
		o = "reused"
	case r.Duplicate:
		o = "duplicate"
	case r.Applied:
		o = "applied"
	}
	w.outcomes.WithLabelValues(o).Inc()
	w.waiters.Deliver(request, r)
}

// holds reports whether topic is the writes topic (false: there is none).
func (w *writesTopic) holds(topic string) bool { return w != nil && topic == w.topic }

// deadLettered counts a write that went to the dead letters and tells
// its waiter why.
func (w *writesTopic) deadLettered(f writeFailure) {
	w.outcomes.WithLabelValues("dead_letter").Inc()
	w.waiters.Deliver(f.request, writes.Result{Err: f.reason, Partition: f.partition, Offset: f.offset})
}

// conditionText is a condition as a request gave it, for the outcome.
func conditionText(c writes.Condition) string {
	s := c.Kind
	add := func(name string, v []byte) {
		if v != nil {
			s += " " + name + "=" + string(v)
		}
	}
	add("src", c.Src)
	add("dst", c.Dst)
	add("vertex", c.Vertex)
	add("type", c.Type)
	if c.Value != nil {
		s += fmt.Sprintf(" value=%v", *c.Value)
	}
	return s
}

// applyJob applies a job that holds writes: the other records' batch
// first (if it has operations), bound to the position with each writes
// partition before its first write; then each write, bound to the
// position after it (the last to the job's position). encode makes a
// position the bytes a batch records; topicID is the topic's ID. It
// returns the seq of the last store batch.
func (w *writesTopic) applyJob(j *applyJob, topicID TopicID, encode func(Position) []byte) (uint64, error) {
	cur := j.pos.Clone()
	for i := len(j.writes) - 1; i >= 0; i-- { // the first write of each partition wins
		cur.Set(w.topic, j.writes[i].partition, j.writes[i].offset)
	}
	var seq uint64
	var err error
	if !j.batch.Empty() {
		j.batch.SetSourcePosition(encode(cur))
		if seq, err = w.store.apply(&j.batch); err != nil {
			return 0, err
		}
	}
	for i, pw := range j.writes {
		pos := j.pos
		if i < len(j.writes)-1 {
			cur.Set(w.topic, pw.partition, pw.offset+1)
			pos = cur
		}
		if seq, err = w.apply(pw, encode(pos), topicID); err != nil {
			return 0, err
		}
	}
	return seq, nil
}

// prune drops the outcome log's oldest entries that no replay or retry
// needs: older than the retention (or beyond MaxEntries), and of a record
// that neither the store's durable position nor the newest analytics
// checkpoint's ck (from which serve replays after a restart; nil: none)
// would reach again. Entries are in log order: it stops at the first it
// must keep.
func (w *writesTopic) prune(now time.Time, durable, ck Position) {
	if w == nil {
		return
	}
	covered := func(p Position, part int32, off int64) bool {
		if p == nil {
			return true // no checkpoint to replay from
		}
		next, ok := p.Get(w.topic, part)
		return ok && off < next
	}
	total := w.log.Len()
	n, err := w.log.Prune(func(i int, e *writes.Entry) bool {
		if e.Topic == w.topic && !(covered(durable, e.Partition, e.Offset) && covered(ck, e.Partition, e.Offset)) {
			return false // a replay would read its record again
		}
		// Another topic's entries (the writes topic was renamed) serve no
		// replay.
		return now.Sub(e.At) > w.retention || total-i > w.maxEntries
	})
	if err != nil {
		w.logger.Warn("pruning the writes outcome log failed", "err", err)
	} else if n > 0 {
		w.logger.Info("pruned the writes outcome log", "entries", n)
	}
}
