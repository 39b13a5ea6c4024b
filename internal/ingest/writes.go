package ingest

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/writes"
)

// The writes topic (Config.Writes; package writes has the record and the
// outcome log). Its records are batches, each applied as a store batch of
// its own (with its conditions, atomically), in log order, after the
// other records of the same poll (which are of other partitions: any
// order between partitions is an order the log allows).
//
// How a write is applied (applyWrite), first rule that fits:
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
	// while a replay could reach its record (see pruneWrites); but of the
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

// resolveConditions turns a write's conditions into the store's, looking
// keys and type names up without assigning anything: a vertex or type
// never seen has no edge, so its condition holds or fails without the
// store.
func (in *Ingester) resolveConditions(cs []writes.Condition) resolved {
	r := resolved{static: -1}
	for i, c := range cs {
		ec := engine.Condition{}
		missing := ""
		vertex := func(raw []byte) uint64 {
			v, why := in.lookupVertex(raw)
			if why != "" && missing == "" {
				missing = why
			}
			return v
		}
		if c.Type != nil {
			t, why := in.lookupType(c.Type)
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
		ec.Kind = writes.EngineKind(c.Kind)
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

// lookupVertex is the id of a condition's vertex, or why it has none.
func (in *Ingester) lookupVertex(raw []byte) (uint64, string) {
	n, key, err := writes.ParseVertex(raw)
	if err != nil {
		return 0, err.Error()
	}
	d := in.dict
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
func (in *Ingester) lookupType(raw []byte) (uint16, string) {
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
	if in.cfg.Types == nil {
		return 0, fmt.Sprintf("edge type %q is unknown", name)
	}
	t, err := in.cfg.Types.Lookup(name)
	if err != nil {
		return 0, fmt.Sprintf("edge type %q is unknown", name)
	}
	return t, ""
}

// applyWrite applies one write (the rules at the top of this file) bound
// to srcpos, tells its waiter, and returns the seq of the store batch it
// ended in.
func (in *Ingester) applyWrite(w *pendingWrite, srcpos []byte) (uint64, error) {
	wc := in.cfg.Writes
	w.batch.SetSourcePosition(srcpos)
	res := writes.Result{Partition: w.partition, Offset: w.offset}
	empty := func() (uint64, error) {
		var b engine.Batch
		b.SetSourcePosition(srcpos)
		return in.apply(&b)
	}
	topicID := in.src.topicID(wc.Topic)
	if e, ok := wc.Log.At(wc.Topic, w.partition, w.offset); ok && e.TopicID == topicID {
		// Rule 1: this record's outcome is logged.
		if e.Print != w.print {
			return 0, fmt.Errorf("ingest: %s holds the outcome of %s/%d@%d, but for another batch than that record holds: the log does not belong to this topic; refusing to guess (move the log aside only if the topic was re-created)",
				wc.Log.Path(), wc.Topic, w.partition, w.offset)
		}
		res.Outcome, res.Duplicate, res.Mismatch = e.Outcome, e.Retry, e.Mismatch
		if e.Retry {
			res.Partition, res.Offset = e.FirstPartition, e.FirstOffset
		}
		var seq uint64
		var err error
		if e.Applied && !e.Retry {
			seq, err = in.apply(&w.batch)
		} else {
			seq, err = empty()
		}
		if err == nil {
			in.countWrite(res)
			wc.Waiters.Deliver(w.request, res)
		}
		return seq, err
	}
	entry := writes.Entry{Topic: wc.Topic, TopicID: topicID, Partition: w.partition, Offset: w.offset, Key: w.key, Print: w.print}
	if w.key != "" {
		if e, ok := wc.Log.ByKey(w.key); ok {
			// Rule 2: a retry. Its own entry says so before the empty
			// batch can be durable: a replay of it must not apply it, even
			// once the first entry of its key is pruned.
			res.Outcome, res.Duplicate, res.Mismatch = e.Outcome, true, e.Print != w.print
			res.Partition, res.Offset = e.Partition, e.Offset
			if e.Retry {
				res.Partition, res.Offset = e.FirstPartition, e.FirstOffset
			}
			entry.At, entry.Outcome, entry.Retry, entry.Mismatch = time.Now(), res.Outcome, true, res.Mismatch
			entry.FirstPartition, entry.FirstOffset = res.Partition, res.Offset
			if err := wc.Log.Append(entry); err != nil {
				return 0, fmt.Errorf("ingest: the writes outcome log: %w", err)
			}
			seq, err := empty()
			if err == nil {
				in.countWrite(res)
				wc.Waiters.Deliver(w.request, res)
			}
			return seq, err
		}
	}
	if w.key == "" && len(w.conds) == 0 {
		seq, err := in.apply(&w.batch)
		if err == nil {
			res.Applied, res.Seq = true, seq
			in.countWrite(res)
			wc.Waiters.Deliver(w.request, res)
		}
		return seq, err
	}
	r := in.resolveConditions(w.conds)
	seq, err := in.applyWith(&w.batch, func() (uint64, error) {
		return in.store.ApplyIfThen(&w.batch, r.conds, func(next uint64, perr *engine.PreconditionError) error {
			entry.At = time.Now()
			switch {
			case perr != nil:
				entry.Outcome = writes.Outcome{Seq: perr.Seq, Index: r.index[perr.Index], Condition: conditionText(w.conds[r.index[perr.Index]]), Actual: perr.Actual}
			case r.static >= 0:
				entry.Outcome = writes.Outcome{Seq: next - 1, Index: r.static, Condition: conditionText(w.conds[r.static]), Actual: r.staticActual}
			default:
				entry.Outcome = writes.Outcome{Applied: true, Seq: next}
			}
			if err := wc.Log.Append(entry); err != nil {
				return fmt.Errorf("ingest: the writes outcome log: %w", err)
			}
			if r.static >= 0 {
				return errStaticRefusal
			}
			return nil
		})
	})
	var perr *engine.PreconditionError
	if errors.As(err, &perr) || errors.Is(err, errStaticRefusal) {
		seq, err = empty()
	}
	if err != nil {
		return 0, err
	}
	res.Outcome = entry.Outcome
	in.countWrite(res)
	wc.Waiters.Deliver(w.request, res)
	return seq, nil
}

// countWrite adds a write's outcome to the metrics.
func (in *Ingester) countWrite(r writes.Result) {
	o := "refused"
	switch {
	case r.Mismatch:
		o = "reused"
	case r.Duplicate:
		o = "duplicate"
	case r.Applied:
		o = "applied"
	}
	in.cfg.Metrics.Writes.WithLabelValues(o).Inc()
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

// applyJobWrites applies a job that holds writes: the other records'
// batch first (if it has operations), bound to the position with each
// writes partition before its first write; then each write, bound to the
// position after it (the last to the job's position). It returns the seq
// of the last store batch.
func (e liveEnv) applyJobWrites(j *applyJob) (uint64, error) {
	in := e.in
	topic := in.cfg.Writes.Topic
	cur := j.pos.Clone()
	for i := len(j.writes) - 1; i >= 0; i-- { // the first write of each partition wins
		cur.Set(topic, j.writes[i].partition, j.writes[i].offset)
	}
	var seq uint64
	var err error
	if !j.batch.Empty() {
		j.batch.SetSourcePosition(in.encodePosition(cur))
		if seq, err = in.apply(&j.batch); err != nil {
			return 0, err
		}
	}
	for i, w := range j.writes {
		pos := j.pos
		if i < len(j.writes)-1 {
			cur.Set(topic, w.partition, w.offset+1)
			pos = cur
		}
		if seq, err = in.applyWrite(w, in.encodePosition(pos)); err != nil {
			return 0, err
		}
	}
	return seq, nil
}

// pruneWrites drops the outcome log's oldest entries that no replay or
// retry needs: older than the retention (or beyond MaxEntries), and of a
// record that neither the store's durable position nor the newest
// analytics checkpoint's (from which serve replays after a restart)
// would reach again. Entries are in log order: it stops at the first it
// must keep.
func (in *Ingester) pruneWrites(now time.Time) {
	wc := in.cfg.Writes
	if wc == nil {
		return
	}
	durable, ck := in.pos.pruneFloor()
	covered := func(p Position, part int32, off int64) bool {
		if p == nil {
			return true // no checkpoint to replay from
		}
		next, ok := p.Get(wc.Topic, part)
		return ok && off < next
	}
	total := wc.Log.Len()
	n, err := wc.Log.Prune(func(i int, e *writes.Entry) bool {
		if e.Topic == wc.Topic && !(covered(durable, e.Partition, e.Offset) && covered(ck, e.Partition, e.Offset)) {
			return false // a replay would read its record again
		}
		// Another topic's entries (the writes topic was renamed) serve no
		// replay.
		return now.Sub(e.At) > wc.Retention || total-i > wc.MaxEntries
	})
	if err != nil {
		in.cfg.Logger.Warn("pruning the writes outcome log failed", "err", err)
	} else if n > 0 {
		in.cfg.Logger.Info("pruned the writes outcome log", "entries", n)
	}
}
