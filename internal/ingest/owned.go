package ingest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/ownership"
)

// Partitioned mode (Config.Own): the ingester assigns itself the
// partitions it owns, of every topic, instead of joining a consumer group.
// Kafka still records everything across instances: each store's position
// names the partitions it has the history of (bound to the cluster and
// the topics' IDs), and the group's committed offsets name the partitions
// whose history is in some store. assignOwned reads both before anything
// is fetched and refuses to start when ingesting would mix histories:
//
//   - the store holds the history of a partition that is not its own
//     (another instance owns it now: the store would answer for its
//     vertices with what it froze at);
//   - an owned partition has no history here but the group has a
//     committed offset for it (another store took it: its history is
//     there), unless the partition is adopted (Config.Adopt), which
//     replays it from the start of its log: the documented hand-over.
//
// Every topic must have exactly Config.Partitions partitions: routing
// computes a vertex's partition, as producers do, modulo that count.

// OwnershipError is Run's refusal in partitioned mode: what the store and
// the group hold does not fit the partitions given to own.
type OwnershipError struct {
	Group string
	// Gone: partitions this store has the history of that it does not
	// own. Foreign: owned partitions without history here that the group
	// has committed offsets for.
	Gone, Foreign partitionSet
	// Count: a topic whose partition count is not Config.Partitions
	// (empty: none); Has, Want: its count and the one expected.
	Count     string
	Has, Want int32
	// Grown: the count changed while Run ran (noticed by the lag loop).
	Grown bool
}

func (e *OwnershipError) Error() string {
	if e.Grown {
		return fmt.Sprintf("partitioned mode: topic %q has %d partitions now, but --owners maps %d: records keyed to a partition from %d up are ingested by no owner, and a vertex's events are split between partitions by two counts. Kafka cannot lower a count: produce the events again to topics of one count, and build the owners' stores from them",
			e.Count, e.Has, e.Want, e.Want)
	}
	if e.Count != "" {
		return fmt.Sprintf("partitioned mode: topic %q has %d partitions, but --owners maps %d: a vertex's partition is its key's hash modulo the count, so every topic must have exactly that many (create the topics with %d partitions, or give --owners for %d)",
			e.Count, e.Has, e.Want, e.Want, e.Has)
	}
	var parts []string
	if len(e.Gone) > 0 {
		parts = append(parts, fmt.Sprintf("this store holds the history of %s, which it does not own (--own-partitions): another instance owns them now", e.Gone))
	}
	if len(e.Foreign) > 0 {
		parts = append(parts, fmt.Sprintf("consumer group %q committed offsets for %s, of which this store has no history: their history is in another store", e.Group, e.Foreign))
	}
	return "partitioned mode: " + strings.Join(parts, "; ") +
		". Ownership moves only by hand-over (docs/partitioned.md, Hand-over): copy the data directory of the partitions' owner, or start on a new data directory with --adopt-partitions to replay them from the start of their log; or give --own-partitions as before"
}

// assignOwned starts partitioned mode: it waits until every topic exists,
// checks the partition counts and what the store and the group hold
// (OwnershipError), takes the owned partitions without history into
// history, and returns where each owned partition starts: the store's
// position; for one new to the store, the start of its log when adopted,
// else (ResetSourcePosition) the group's committed offset, else the reset
// policy. ResetSourcePosition logs a mismatch as a WARN and goes on. A
// log that lost records the store needs is refused (a *LostRecordsError),
// unless AcceptLostRecords starts it at its log start (logstart.go).
func (in *Ingester) assignOwned(ctx context.Context) (map[string]map[int32]kgo.Offset, error) {
	topics := in.cfg.Topics
	src, err := in.fetchSource(ctx, topics)
	if err != nil {
		return nil, err
	}
	if mm := in.src.learn(src, topics); mm != nil {
		return nil, mm
	}
	for _, t := range topics {
		if n := src.partitions[t]; n != in.cfg.Partitions {
			return nil, &OwnershipError{Count: t, Has: n, Want: in.cfg.Partitions}
		}
	}
	committed, err := in.groupOffsets(ctx)
	if err != nil {
		return nil, err
	}
	pl := in.planOwned(committed)
	if len(pl.oe.Gone) > 0 || len(pl.oe.Foreign) > 0 {
		if !in.cfg.ResetSourcePosition {
			return nil, pl.oe
		}
		in.cfg.Logger.Warn("ingesting as --reset-source-position asks: " + pl.oe.Error())
	}
	logStarts, err := in.logStartsFor(ctx, pl.needs)
	if err != nil {
		return nil, err
	}
	starts, err := in.ownedStarts(ctx, pl, logStarts)
	if err != nil {
		return nil, err
	}
	// Its assignment is fixed: a log that lost what the store needs is
	// refused before anything is fetched, unless --accept-lost-records.
	if lost := lostRecords(pl.needs, logStarts, pl.isNew.has); len(lost) > 0 {
		if !in.cfg.AcceptLostRecords {
			return nil, &LostRecordsError{Lost: lost}
		}
		for _, l := range lost {
			if _, ok := starts.Get(l.Topic, l.Partition); ok {
				starts.Set(l.Topic, l.Partition, l.LogStart)
			}
		}
		in.acceptLost(lost, pl.offs)
	}
	in.takeOwned(pl, starts)
	return pl.offs, nil
}

// ownedPlan is where partitioned mode's owned partitions start, before
// the brokers are asked where their logs start.
type ownedPlan struct {
	// oe names the partitions that do not fit the ownership.
	oe *OwnershipError
	// offs holds the start of each owned partition the store has history
	// of; the others start from the group's committed offset (fromGroup,
	// ResetSourcePosition), from the start of their log (fromLog,
	// adopted) or by the reset policy (byPolicy).
	offs              map[string]map[int32]kgo.Offset
	fromGroup         Position
	fromLog, byPolicy map[string][]int32
	// needs is the first offset the store needs of each owned partition,
	// against where its log starts (logstart.go); isNew the partitions
	// new to the store.
	needs Position
	isNew partitionSet
}

// planOwned makes the ownedPlan of the owned partitions of every topic,
// given the group's committed offsets.
func (in *Ingester) planOwned(committed Position) ownedPlan {
	pl := ownedPlan{oe: &OwnershipError{Group: in.cfg.Group, Foreign: partitionSet{}},
		offs: map[string]map[int32]kgo.Offset{}, fromGroup: Position{}, fromLog: map[string][]int32{}, byPolicy: map[string][]int32{},
		needs: Position{}, isNew: partitionSet{}}
	// Only the configured topics count, as in group mode: a topic left out
	// of the configuration keeps its history unread.
	pl.oe.Gone = in.asg.historyNotOwned()
	for _, t := range in.cfg.Topics {
		pl.offs[t] = map[int32]kgo.Offset{}
		for _, p := range in.cfg.Own {
			if next, ok := in.resumeOffset(t, p); ok {
				pl.offs[t][p] = kgo.NewOffset().At(next)
				pl.needs.Set(t, p, next)
				continue
			}
			pl.isNew.add(t, p)
			c, ok := committed.Get(t, p)
			switch {
			case in.adopted(p):
				pl.fromLog[t] = append(pl.fromLog[t], p)
				pl.needs.Set(t, p, 0)
			case ok && in.cfg.ResetSourcePosition:
				pl.fromGroup.Set(t, p, c)
				pl.needs.Set(t, p, c)
			case ok:
				pl.oe.Foreign.add(t, p)
			default:
				pl.byPolicy[t] = append(pl.byPolicy[t], p)
				if in.cfg.ResetPolicy != "latest" {
					pl.needs.Set(t, p, 0)
				}
			}
		}
	}
	return pl
}

// adopted reports whether owned partition p is adopted (Config.Adopt).
func (in *Ingester) adopted(p int32) bool { return slices.Contains(in.cfg.Adopt, p) }

// ownedStarts returns where the owned partitions new to the store start:
// the group's committed offset, the start of their log (logStarts), or by
// the reset policy.
func (in *Ingester) ownedStarts(ctx context.Context, pl ownedPlan, logStarts Position) (Position, error) {
	starts := pl.fromGroup.Clone()
	for _, byLog := range []bool{true, false} {
		want := pl.byPolicy
		if byLog {
			want = pl.fromLog
		}
		if len(want) == 0 {
			continue
		}
		listed := logStarts
		if !byLog && in.cfg.ResetPolicy == "latest" {
			ts := make([]string, 0, len(want))
			for t := range want {
				ts = append(ts, t)
			}
			var err error
			if listed, err = in.listOffsets(ctx, ts, false); err != nil {
				return nil, err
			}
		}
		for t, ps := range want {
			for _, p := range ps {
				s, ok := listed.Get(t, p)
				if !ok {
					return nil, fmt.Errorf("ingest: the brokers listed no start offset for %s/%d", t, p)
				}
				starts.Set(t, p, s)
			}
		}
	}
	return starts, nil
}

// takeOwned makes the owned partitions the assignment, those new to the
// store taken into its history at starts.
func (in *Ingester) takeOwned(pl ownedPlan, starts Position) {
	in.pos.accept(starts)
	in.asg.ownPartitions(starts)
	for t, ps := range starts {
		for p, s := range ps {
			pl.offs[t][p] = kgo.NewOffset().At(s)
			how := "by --reset " + in.cfg.ResetPolicy
			switch {
			case in.adopted(p):
				how = "adopted (--adopt-partitions): from the start of its log"
			case pl.fromGroup.has(t, p):
				how = "at the group's committed offset (--reset-source-position)"
			}
			in.cfg.Logger.Info("partition new to this store", "topic", t, "partition", p, "offset", s, "start", how)
		}
	}
	in.cfg.Logger.Info("partitioned mode: consuming the owned partitions of every topic", "own", in.cfg.Own, "of", in.cfg.Partitions, "topics", in.cfg.Topics)
	in.asg.commitAssigned.Store(true)
	in.wakeLag()
}

// has reports whether p has an offset for partition q of topic t.
func (p Position) has(t string, q int32) bool {
	_, ok := p.Get(t, q)
	return ok
}

// groupOffsets reads the offsets the group has committed (partitioned
// mode: the group is not joined, only read and written), retried until it
// succeeds or ctx ends.
func (in *Ingester) groupOffsets(ctx context.Context) (Position, error) {
	adm := kadm.NewClient(in.cl)
	var p Position
	err := in.retry(ctx, fmt.Sprintf("reading the offsets consumer group %q committed", in.cfg.Group), func() error {
		os, err := adm.FetchOffsets(ctx, in.cfg.Group)
		if err == nil {
			err = os.Error()
		}
		if err != nil {
			return err
		}
		p = Position{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.At >= 0 {
				p.Set(o.Topic, o.Partition, o.At)
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	in.asg.setChecking(nil)
	return p, nil
}

// commitOwned commits offs to the group without joining it (partitioned
// mode), so that lag tools show the owned partitions.
func (in *Ingester) commitOwned(ctx context.Context, offs map[string]map[int32]kgo.EpochOffset) error {
	var os kadm.Offsets
	for t, ps := range offs {
		for p, o := range ps {
			os.Add(kadm.Offset{Topic: t, Partition: p, At: o.Offset, LeaderEpoch: -1})
		}
	}
	resp, err := kadm.NewClient(in.cl).CommitOffsets(ctx, in.cfg.Group, os)
	if err == nil {
		err = resp.Error()
	}
	return err
}

// checkOwn checks the partitioned mode's settings of a Config.
func (c *Config) checkOwn() error {
	if c.Own == nil {
		if len(c.Adopt) > 0 || c.Partitions != 0 {
			return fmt.Errorf("ingest: adopted partitions and a partition count need owned partitions (partitioned mode)")
		}
		return nil
	}
	if len(c.Own) == 0 {
		return fmt.Errorf("ingest: partitioned mode needs at least one owned partition")
	}
	if c.Writes != nil {
		return fmt.Errorf("ingest: partitioned mode takes no writes topic: a batch may name vertices of several owners")
	}
	for _, p := range c.Own {
		if p < 0 || p >= c.Partitions {
			return fmt.Errorf("ingest: owned partition %d is not one of the %d partitions", p, c.Partitions)
		}
	}
	for _, p := range c.Adopt {
		if !slices.Contains(c.Own, p) {
			return fmt.Errorf("ingest: adopted partition %d is not an owned one", p)
		}
	}
	return nil
}

// ownerCheck is partitioned mode's check of every record the poll loop
// decodes: each event's source vertex must belong to the record's
// partition (Kafka's partition of the vertex's key), else the record is a
// dead letter: ingested, its edges would sit in a store that no request
// about its vertex reaches. Events are held (buf) until the record passes.
// Owned by the poll loop.
type ownerCheck struct {
	count int32
	part  ownership.Partitioner
	name  func(id uint64) (ext uint64, key string) // nil: ids are numbers
	buf   []decode.Edge
}

func newOwnerCheck(count int32, dict *keydict.Dict) *ownerCheck {
	c := &ownerCheck{count: count, part: ownership.NewPartitioner()}
	if dict != nil {
		c.name = dict.Name
	}
	return c
}

// add holds e, with copies of what is valid only during the emit call.
func (c *ownerCheck) add(e decode.Edge) {
	if len(e.Label) > 0 || len(e.Props) > 0 || len(e.EventRef) > 0 {
		e.Label, e.Props, e.EventRef = bytes.Clone(e.Label), bytes.Clone(e.Props), bytes.Clone(e.EventRef)
	}
	c.buf = append(c.buf, e)
}

// misplaced returns why the held events cannot be a record of partition
// p, or nil.
func (c *ownerCheck) misplaced(p int32) error {
	for _, e := range c.buf {
		ext, key := e.Src, ""
		if c.name != nil {
			ext, key = c.name(e.Src)
		}
		if key == "" {
			key = strconv.FormatUint(ext, 10)
		}
		if q := c.part.Of(key, c.count); q != p {
			return &MisplacedError{Key: key, Partition: q, Record: p, Count: c.count}
		}
	}
	return nil
}

// MisplacedError is the dead-letter reason of a record, in partitioned
// mode, whose event's source vertex belongs to another partition.
type MisplacedError struct {
	Key               string
	Partition, Record int32
	Count             int32
}

func (e *MisplacedError) Error() string {
	return fmt.Sprintf("partitioned mode: source vertex %q belongs to partition %d of %d, not to this record's partition %d: its owner would never see the edge; key each record by its source vertex (docs/partitioned.md, Producers)",
		e.Key, e.Partition, e.Count, e.Record)
}
