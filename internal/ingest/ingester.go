package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
)

// Config of an Ingester. Zero fields take the documented defaults.
type Config struct {
	Brokers []string // required
	Topics  []string // required
	Group   string   // consumer group; default "graphtide"
	// Graph is the graph the store belongs to (package graphid), recorded
	// with every position; "" for a store that recorded none (it keeps
	// the names every store shared before graphs had names). New refuses
	// a store that recorded another graph. The writes topic's records
	// addressed to another graph (graphid.HeaderGraph) are skipped, never
	// applied.
	Graph string
	// Format of record values for topics not in TopicFormats; default binary.
	Format       decode.Format
	TopicFormats map[string]decode.Format
	// Types names the edge types records give by name (the data
	// directory's type dictionary); nil: records may give type numbers
	// only.
	Types *typedict.Dict
	// Mappings read the JSON records of their topics through a field
	// mapping (decode.Mapping); a mapped topic's format is json.
	Mappings map[string]decode.Mapping
	// Accumulate is the edge types whose upserts accumulate (serve: the
	// mappings' types, engine.Aggregate): an upsert of one whose record
	// gives no event reference (decode.Mapping.EventID, a write's ref)
	// gets its Kafka record's, "topic/partition/offset" (SourceRef): a
	// writes-topic batch's upserts share their write record's.
	Accumulate engine.TypeSet
	// DeadLetterTopic receives undecodable records; default "graphtide-dead-letters".
	DeadLetterTopic string
	// DeadLetterTimeout bounds one attempt to write a dead letter (serve
	// --dead-letter-timeout); default 10s. A dead letter the brokers
	// refuse for good (the topic missing and not creatable, no permission,
	// a value that cannot fit, any non-retriable error), or do not
	// acknowledge within it (a broker down), pauses only the partition of
	// its record, at that record, until a retry succeeds (see
	// deadletter.go); Ready says so meanwhile.
	DeadLetterTimeout time.Duration
	// ReadyGrace (serve --ready-grace) is how long no broker may answer,
	// or the store stall, before Ready says so; default 30s.
	ReadyGrace time.Duration
	// LagInterval is how often the lag of the assigned partitions is
	// computed from the brokers' end offsets; default 10s.
	LagInterval time.Duration
	// ReadyMaxLag (serve --ready-max-lag), when above 0, is how many
	// records the assigned partitions may be behind the brokers' end
	// offsets, together, before Ready says so (Behind: the position
	// applied to the store against the newest end offsets known), so that
	// a replica that fell behind leaves a load balancer's rotation; 0: no
	// limit.
	ReadyMaxLag int64
	// The consumer's fetch buffers (see FetchOptions): FetchMaxBytes per
	// fetch request (default 32 MiB, 1 KiB..100 MiB), FetchMaxPartitionBytes
	// per partition in one (default 1 MiB, 1 KiB..FetchMaxBytes; a larger
	// record still comes whole), MaxConcurrentFetches in flight or
	// buffered at once (default 4, 1..64). The client buffers at most
	// about MaxConcurrentFetches x FetchMaxBytes; BufferedFetchBytes
	// reports what it holds.
	FetchMaxBytes          int32
	FetchMaxPartitionBytes int32
	MaxConcurrentFetches   int
	// FlushInterval bounds how much is replayed after a crash; default 2s.
	FlushInterval time.Duration
	// MaxPollRecords is the most records handed to the store in one batch;
	// default 20000.
	MaxPollRecords int
	// ResetPolicy for partitions with neither a recorded nor a committed
	// offset: "earliest" (default) or "latest".
	ResetPolicy string
	// ResetSourcePosition (serve --reset-source-position) lets Run start
	// over from the group's offsets where the store's recorded position
	// does not fit the brokers. Without it, Run refuses to start when the
	// recorded offsets belong to another cluster or to a topic deleted or
	// re-created since (a *SourceMismatchError), New refuses a recorded
	// position it cannot read, and an assignment that would split the
	// graph between stores pauses ingestion (see Ready). With it, those
	// offsets (or the unreadable position) are discarded with a WARN, the
	// partitions they covered start at the group's committed offset and
	// then by ResetPolicy, and a conflicting assignment is ingested as
	// assigned, partitions the store has no data of starting at the
	// group's committed offset. Meant for one deliberate restart: while it
	// is set, nothing protects the store from a split group.
	ResetSourcePosition bool
	// AcceptLostRecords (serve --accept-lost-records) lets a partition
	// whose log no longer holds records the store needs (deleted by
	// retention or DeleteRecords: a new store on a log that does not start
	// at offset 0, or a store whose position fell behind the log start)
	// start at its log start, without them, with a WARN. Without it,
	// partitioned mode refuses to start (a *LostRecordsError) and group
	// mode pauses those partitions, Ready saying why (logstart.go).
	AcceptLostRecords bool
	// ClientOpts are extra franz-go options: TLS, SASL, hooks (kprom).
	ClientOpts []kgo.Opt
	Logger     *slog.Logger
	Metrics    *Metrics // default: unregistered metrics
	// OnVisible, if set, is called after each Apply with the produce
	// timestamps of the records it applied and the time they became
	// visible to new snapshots (used by bench kafka). It is called from
	// the goroutine that applies batches, in order, and must be quick:
	// the next batch waits for it. It must not keep produced.
	OnVisible func(produced []time.Time, visible time.Time)
	// Checkpoint, when set, is called every CheckpointInterval (and not
	// before the first interval has passed; not again while nothing new
	// was applied) between two batches or after a timed flush, once
	// everything applied is durable, with the source position after them
	// (the bytes the store records with its batches); no batch is applied
	// until it returns. serve checkpoints its analytics there. An error is
	// logged; ingestion goes on.
	Checkpoint         func(ctx context.Context, position []byte) error
	CheckpointInterval time.Duration
	// ReplayFrom, when set, is a source position Checkpoint was given,
	// behind the store's: every partition it records resumes from it
	// rather than from the store's position, so that the records after
	// it are applied again (changing nothing in the store: applying again
	// what follows a state brings back the same state) and reach the
	// views' stream. serve sets it to bring analytics restored from a
	// checkpoint forward. It must belong to the store's source (same
	// cluster and topics): New refuses it otherwise.
	ReplayFrom []byte
	// CheckpointFloor is the source position of the newest analytics
	// checkpoint on disk, used or not (serve replays from it at a later
	// start if it can): the writes outcome log keeps what a replay from
	// it needs. nil: none.
	CheckpointFloor []byte
	// Own, when not nil, is partitioned mode (serve --own-partitions): the
	// ingester consumes these partitions of every topic, assigned by
	// itself instead of by the group, which it does not join; it reads the
	// group's committed offsets and commits its own there. Every topic
	// must have exactly Partitions partitions. Run refuses (an
	// *OwnershipError) to start where the store holds the history of a
	// partition not in Own, or the group has committed offsets for a
	// partition of Own that the store has no history of (another store's)
	// and that is not in Adopt: an adopted partition new to the store
	// starts at the start of its log (see owned.go).
	Own, Adopt []int32
	Partitions int32
	// Writes, when set, makes one of Topics graphtide's own writes topic
	// (writes.go): its records are batches, with conditions and
	// idempotency keys, applied one by one.
	Writes *WritesConfig
}

func (c *Config) withDefaults() (Config, error) {
	o := *c
	for _, check := range []func() error{o.sourceDefaults, o.timeDefaults, o.fetchDefaults, o.checkOwn} {
		if err := check(); err != nil {
			return o, err
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return o, nil
}

// sourceDefaults checks and completes what is read: brokers, topics,
// group, formats, the dead-letter and writes topics.
func (c *Config) sourceDefaults() error {
	if len(c.Brokers) == 0 {
		return errors.New("ingest: at least one broker address is required")
	}
	if len(c.Topics) == 0 {
		return errors.New("ingest: at least one topic is required")
	}
	if c.Group == "" {
		c.Group = "graphtide"
	}
	if c.Format == 0 {
		c.Format = decode.FormatBinary
	}
	for t, f := range c.TopicFormats {
		if f < decode.FormatBinary || f > decode.FormatText {
			return fmt.Errorf("ingest: topic %q has an unknown format %d", t, f)
		}
	}
	if c.DeadLetterTopic == "" {
		c.DeadLetterTopic = "graphtide-dead-letters"
	}
	for _, t := range c.Topics {
		if t == c.DeadLetterTopic {
			return fmt.Errorf("ingest: topic %q is also the dead-letter topic", t)
		}
	}
	if c.Writes != nil {
		w, err := c.Writes.withDefaults(c.Topics, c.Mappings)
		if err != nil {
			return err
		}
		c.Writes = w
	}
	return nil
}

// timeDefaults checks and completes the intervals and timeouts.
func (c *Config) timeDefaults() error {
	if c.FlushInterval == 0 {
		c.FlushInterval = 2 * time.Second
	}
	if c.FlushInterval < 10*time.Millisecond {
		return fmt.Errorf("ingest: flush interval must be at least 10ms, got %v", c.FlushInterval)
	}
	if c.DeadLetterTimeout == 0 {
		c.DeadLetterTimeout = 10 * time.Second
	}
	if c.DeadLetterTimeout < time.Second || c.DeadLetterTimeout > 10*time.Minute {
		return fmt.Errorf("ingest: dead-letter timeout must be between 1s and 10m, got %v", c.DeadLetterTimeout)
	}
	if c.ReadyGrace == 0 {
		c.ReadyGrace = 30 * time.Second
	}
	if c.ReadyGrace < 100*time.Millisecond || c.ReadyGrace > 24*time.Hour {
		return fmt.Errorf("ingest: ready grace must be between 100ms and 24h, got %v", c.ReadyGrace)
	}
	if c.LagInterval == 0 {
		c.LagInterval = 10 * time.Second
	}
	if c.LagInterval < 10*time.Millisecond || c.LagInterval > time.Hour {
		return fmt.Errorf("ingest: lag interval must be between 10ms and 1h, got %v", c.LagInterval)
	}
	if c.ReadyMaxLag < 0 {
		return fmt.Errorf("ingest: ready max lag must be 0 (no limit) or more records, got %d", c.ReadyMaxLag)
	}
	return nil
}

// fetchDefaults checks and completes the fetch buffers, the poll size
// and the reset policy.
func (c *Config) fetchDefaults() error {
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if c.FetchMaxBytes < 1<<10 || c.FetchMaxBytes > 100<<20 {
		return fmt.Errorf("ingest: fetch max bytes must be between 1 KiB and 100 MiB, got %d", c.FetchMaxBytes)
	}
	if c.FetchMaxPartitionBytes == 0 {
		c.FetchMaxPartitionBytes = min(DefaultFetchMaxPartitionBytes, c.FetchMaxBytes)
	}
	if c.FetchMaxPartitionBytes < 1<<10 || c.FetchMaxPartitionBytes > c.FetchMaxBytes {
		return fmt.Errorf("ingest: fetch max partition bytes must be between 1 KiB and the fetch max bytes (%d), got %d", c.FetchMaxBytes, c.FetchMaxPartitionBytes)
	}
	if c.MaxConcurrentFetches == 0 {
		c.MaxConcurrentFetches = DefaultMaxConcurrentFetches
	}
	if c.MaxConcurrentFetches < 1 || c.MaxConcurrentFetches > 64 {
		return fmt.Errorf("ingest: max concurrent fetches must be between 1 and 64, got %d", c.MaxConcurrentFetches)
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.MaxPollRecords < 1 {
		return fmt.Errorf("ingest: max poll records must be positive, got %d", c.MaxPollRecords)
	}
	switch c.ResetPolicy {
	case "":
		c.ResetPolicy = "earliest"
	case "earliest", "latest":
	default:
		return fmt.Errorf("ingest: reset policy must be earliest or latest, got %q", c.ResetPolicy)
	}
	return nil
}

// Ingester moves records from Kafka into a store. Create with New, then Run.
type Ingester struct {
	cfg   Config
	store *engine.Store
	dict  *keydict.Dict
	decs  map[string]decode.Decoder
	cl    *kgo.Client

	// pos is where ingestion stands: applied, durable, checkpointed
	// (positions.go).
	pos *positions

	// asg is the assignment: the partitions held, the store's history,
	// the verdict on them (assignment.go).
	asg *assignment

	// src is the source binding: what the store recorded, and the
	// cluster and topics this run records (binding.go).
	src *binding
	// pauses is why fetching is paused, and what is held (pauses.go).
	// Lock order: its lock, then the assignment's.
	pauses *pauses

	// dl is the dead letters (deadletters.go).
	dl *deadLetters

	// health is what Ready reports besides the assignment, and the lag
	// (health.go).
	health *health

	// wr is the writes topic (writes.go; nil: none).
	wr *writesTopic

	// holds is the hold of an export at a cut (cut.go).
	holds cutHolds
}

// New prepares an Ingester; dict may be nil if no format uses string keys.
func New(store *engine.Store, dict *keydict.Dict, cfg Config) (*Ingester, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c.Metrics.forTopics(c.Topics)
	rec, err := recordedPosition(store, &c)
	if err != nil {
		return nil, err
	}
	applied, err := replayStart(rec, &c)
	if err != nil {
		return nil, err
	}
	in := &Ingester{cfg: c, store: store, dict: dict,
		asg: newAssignment(&c), src: newBinding(rec, c.Graph, c.Logger),
		dl: newDeadLetters(&c), health: newHealth(&c)}
	in.pos = newPositions(applied, rec.Position, checkpointFloor(&c, applied))
	in.wr = newWritesTopic(c.Writes, in, dict, c.Types, c.Metrics, c.Logger)
	if err := in.wr.checkLog(rec.Position); err != nil {
		return nil, err
	}
	in.setLogInterval(logInterval)
	if in.decs, err = newDecoders(&c, dict); err != nil {
		return nil, err
	}
	if in.cl, err = kgo.NewClient(in.clientOptions()...); err != nil {
		return nil, fmt.Errorf("ingest: kafka client: %w", err)
	}
	in.pauses = newPauses(in.cl)
	return in, nil
}

// recordedPosition is the store's recorded position (discarded with a
// WARN if it cannot be read and c.ResetSourcePosition allows), refused if
// it belongs to another graph.
func recordedPosition(store *engine.Store, c *Config) (Recorded, error) {
	raw, err := store.SourcePosition()
	if err != nil {
		return Recorded{}, err
	}
	rec, err := DecodeRecorded(raw)
	if err != nil {
		if !c.ResetSourcePosition {
			return Recorded{}, fmt.Errorf("ingest: the store's recorded position: %w; --reset-source-position discards it and resumes from the group's committed offsets (then --reset)", err)
		}
		c.Logger.Warn("discarding the store's recorded position, which cannot be read (--reset-source-position)", "err", err, "bytes", len(raw))
		rec, _ = DecodeRecorded(nil)
	}
	if rec.Graph != "" && rec.Graph != c.Graph {
		return Recorded{}, &GraphMismatchError{Recorded: rec.Graph, Given: c.Graph}
	}
	return rec, nil
}

// replayStart is where ingestion starts: the store's position, behind it
// where c.ReplayFrom replays (see PlanReplay).
func replayStart(rec Recorded, c *Config) (Position, error) {
	applied := rec.Position.Clone()
	if len(c.ReplayFrom) == 0 {
		return applied, nil
	}
	behind, err := PlanReplay(rec, c.ReplayFrom)
	if err != nil {
		return nil, err
	}
	for t, ps := range behind {
		for p, o := range ps {
			cur, _ := applied.Get(t, p)
			applied.Set(t, p, o)
			c.Logger.Info("replaying records the store holds already, for the analytics' checkpoint", "topic", t, "partition", p, "from", o, "to", cur)
		}
	}
	return applied, nil
}

// checkpointFloor is the position of the newest analytics checkpoint a
// restart may replay from (nil: none; empty: unknown, so that nothing of
// the writes topic is pruned): c.CheckpointFloor, else the replay's start.
func checkpointFloor(c *Config, applied Position) Position {
	switch {
	case len(c.CheckpointFloor) > 0:
		if ck, err := DecodeRecorded(c.CheckpointFloor); err == nil {
			return ck.Position
		}
		return Position{}
	case len(c.ReplayFrom) > 0:
		return applied
	}
	return nil
}

// newDecoders is the decoder of each topic: its format or mapping, JSON
// ops for the writes topic.
func newDecoders(c *Config, dict *keydict.Dict) (map[string]decode.Decoder, error) {
	var keys decode.KeyResolver
	if dict != nil {
		keys = dict
	}
	if c.Types != nil {
		keys = decode.WithTypes(keys, c.Types)
	}
	decs := map[string]decode.Decoder{}
	for _, t := range c.Topics {
		f := c.Format
		if tf, ok := c.TopicFormats[t]; ok {
			f = tf
		}
		m, mapped := c.Mappings[t]
		switch {
		case c.Writes != nil && t == c.Writes.Topic:
			decs[t] = decode.New(decode.FormatJSON, keys) // the ops of a write
		case !mapped:
			decs[t] = decode.New(f, keys)
		default:
			d, err := decode.NewMapped(m, keys)
			if err != nil {
				return nil, fmt.Errorf("ingest: the mapping of topic %q: %w", t, err)
			}
			decs[t] = d
		}
	}
	return decs, nil
}

// clientOptions are the Kafka client's options: the group's callbacks
// (but partitioned), the dead letters' producer settings, then
// Config.ClientOpts.
func (in *Ingester) clientOptions() []kgo.Opt {
	c := &in.cfg
	reset := kgo.NewOffset().AtStart()
	if c.ResetPolicy == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	// The topics are added by Run once the source is checked: the client
	// joins the group only then (see bindSource).
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ConsumeResetOffset(reset),
	}, fetchOptions(c.FetchMaxBytes, c.FetchMaxPartitionBytes, c.MaxConcurrentFetches)...)
	if c.Own == nil {
		// Partitioned mode joins no group: it assigns itself its
		// partitions (assignOwned) and commits with kadm.
		opts = append(opts,
			kgo.ConsumerGroup(c.Group),
			kgo.DisableAutoCommit(),
			kgo.BlockRebalanceOnPoll(),
			kgo.AdjustFetchOffsetsFn(in.adjustOffsets),
			kgo.OnPartitionsAssigned(in.onAssigned),
			kgo.OnPartitionsRevoked(in.onRevoked),
			kgo.OnPartitionsLost(in.onLost),
			kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { in.asg.rebalanceWaiting.Store(true) }),
		)
	}
	opts = append(opts,
		// The client produces only dead letters (deadletters.go): batches
		// sized by the dead-letter topic's limit, uncompressed so that a
		// dead letter's size is what is counted, and failed rather than
		// retried forever (a dead letter may be written twice anyway).
		kgo.ProducerBatchMaxBytesFn(func(string) int32 { return in.dl.batchLimit() }),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordDeliveryTimeout(c.DeadLetterTimeout),
		kgo.WithHooks(in.health),
		kgo.AllowAutoTopicCreation(),
		// The poll loop recycles every record once it is decoded (and
		// dead-lettered if need be).
		kgo.WithPools(NewRecordPool()),
	)
	return append(opts, c.ClientOpts...)
}

// PlanReplay compares a position to replay from (raw, as Config.Checkpoint
// was given it) with the store's recorded position and returns the
// partitions behind the store's, each with the offset to replay from. It
// refuses a position of another cluster or topic, one ahead of the store's
// on a partition or naming one the store has no record of, and a store
// that took up a partition the position does not know (where that
// partition's records began is not known, so they could not be replayed).
func PlanReplay(store Recorded, raw []byte) (Position, error) {
	rp, err := DecodeRecorded(raw)
	if err != nil {
		return nil, fmt.Errorf("ingest: the position to replay from: %w", err)
	}
	if rp.ClusterID != store.ClusterID {
		return nil, fmt.Errorf("ingest: the position to replay from belongs to Kafka cluster %q, the store's to %q", rp.ClusterID, store.ClusterID)
	}
	for t, ps := range store.Position {
		for p := range ps {
			if _, ok := rp.Position.Get(t, p); !ok {
				return nil, fmt.Errorf("ingest: the store ingested %s/%d, which the position to replay from does not know", t, p)
			}
		}
	}
	behind := Position{}
	for t, ps := range rp.Position {
		if id, ok := rp.TopicIDs[t]; ok && store.TopicIDs[t] != id {
			return nil, fmt.Errorf("ingest: the position to replay from belongs to another topic %q than the store's (topic IDs differ)", t)
		}
		for p, o := range ps {
			cur, ok := store.Position.Get(t, p)
			switch {
			case !ok:
				return nil, fmt.Errorf("ingest: the position to replay from has %s/%d, of which the store has no record", t, p)
			case o > cur:
				return nil, fmt.Errorf("ingest: the position to replay from is ahead of the store's in %s/%d (offset %d, the store's %d)", t, p, o, cur)
			case o < cur:
				behind.Set(t, p, o)
			}
		}
	}
	return behind, nil
}

// FetchOptions are the franz-go fetch settings of the ingest consumer
// with the default buffers; bench kafka gives its plain consumer the same
// ones. Read-committed isolation keeps records of aborted transactions out
// of the store.
func FetchOptions() []kgo.Opt {
	return fetchOptions(DefaultFetchMaxBytes, DefaultFetchMaxPartitionBytes, DefaultMaxConcurrentFetches)
}

func fetchOptions(maxBytes, maxPartBytes int32, concurrent int) []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(maxBytes),
		kgo.FetchMaxPartitionBytes(maxPartBytes),
		kgo.MaxConcurrentFetches(concurrent),
	}
}

// The defaults of Config's fetch buffers.
const (
	DefaultFetchMaxBytes          = 32 << 20
	DefaultFetchMaxPartitionBytes = 1 << 20
	DefaultMaxConcurrentFetches   = 4
)

// BufferedFetchBytes reports the memory the ingester holds of records not
// yet decoded: what its Kafka client has fetched and buffered (keys,
// values and headers; franz-go's BufferedFetchBytes), plus the records
// held while their dead letters cannot be written. Decoded batches in
// flight to the store are not counted (see pipelineDepth).
func (in *Ingester) BufferedFetchBytes() int64 {
	return in.cl.BufferedFetchBytes() + in.dl.heldBytes()
}

// DefaultMaxPollRecords is Config.MaxPollRecords when it is zero.
const DefaultMaxPollRecords = 20000

// Ready returns nil when the ingester ingests its assignment, else why
// not (for /readyz). About the assignment: no partitions assigned yet; the
// assignment would split the graph between stores (see checkAssignment;
// fetching is paused until it no longer does); the assignment could not be
// checked against the brokers yet; the source changed under it (Run
// returns that error); or, partitioned, a topic's partition count changed.
// Assigned partitions whose log lost records the store needs (a
// *LostRecordsError; logstart.go). About health (health.go): no broker has answered
// for longer than ReadyGrace; assigned partitions were lost (until the
// next assignment); a partition is paused because its dead letter cannot
// be written; the store has stalled for longer than ReadyGrace. When more
// than one holds, the error names them all, the assignment's first (and
// unwraps to each).
func (in *Ingester) Ready() error {
	var errs []error
	if err := in.asg.ready(); err != nil {
		errs = append(errs, err)
	}
	if err := in.lostReady(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, in.healthReasons(time.Now())...)
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return readyError(errs)
}

// Durable returns the position covered by the newest completed flush.
func (in *Ingester) Durable() Position { return in.pos.durableNow().Clone() }

// Applied returns the position of everything applied to the store so far
// (visible to new snapshots, not necessarily durable).
func (in *Ingester) Applied() Position { return in.pos.appliedNow().Clone() }

// Run consumes until ctx ends, then flushes, commits and returns nil.
//
// Before it consumes anything it checks that the store's recorded offsets
// belong to the brokers' cluster and topics, and returns a
// *SourceMismatchError if they do not (see Config.ResetSourcePosition).
// Later it returns an error only if the store or the key dictionary fails
// (a closed store, a background error, a failed dictionary write), without
// applying the poll at hand, so that a restart replays it, or if the
// source changes under it (a *SourceMismatchError: the brokers' cluster
// ID, or an assigned topic's ID, is not the one it started with). Kafka
// errors are retried and logged; an assignment that would split the graph
// between stores pauses fetching (see Ready).
//
// Two goroutines share the work (see pipeline.go): this one polls and
// decodes each poll into a batch; the applier applies the batches to the
// store in poll order and starts the timed flushes between them. Polling,
// decoding and the client's next fetch thus overlap the store's Apply.
func (in *Ingester) Run(ctx context.Context) error {
	defer in.cl.Close()
	defer in.closeLogs()
	if err := in.bindSource(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before anything was consumed
		}
		return err
	}
	// Only now does the client join the group (or, partitioned, assign
	// itself its partitions) and fetch.
	if in.cfg.Own != nil {
		offs, err := in.assignOwned(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		in.cl.AddConsumePartitions(offs)
	} else {
		in.cl.AddConsumeTopics(in.cfg.Topics...)
	}
	in.dl.prepare(ctx, kafkaDL{in.cl})
	wctx, wcancel := context.WithCancel(ctx)
	var workers sync.WaitGroup
	workers.Add(2)
	go func() { defer workers.Done(); in.dl.run(wctx, kafkaDL{in.cl}) }()
	go func() { defer workers.Done(); in.lagLoop(wctx) }()
	// The position applied so far is the store's newest seq's (nothing
	// is in flight yet): an export may pair them before the first batch.
	if m, err := in.store.Metrics(); err == nil {
		in.pos.setApplied(m.LastSeq, in.pos.appliedNow())
	}
	env := liveEnv{in}
	p := startApplier(env)
	ps := newPollState(env, p, in.pos.appliedNow(), &in.cfg, in.decs, in.wr)
	if in.cfg.Own != nil {
		ps.owner = newOwnerCheck(in.cfg.Partitions, in.dict)
	}
	err := ps.run(ctx)
	p.stop()
	wcancel()
	workers.Wait()
	in.cl.AllowRebalance() // else leaving the group waits for it
	if err != nil {
		return err
	}
	// Shutdown: make everything applied durable and commit it.
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := in.flushAndCommit(sctx); err != nil {
		return fmt.Errorf("ingest: final flush: %w", err)
	}
	if err := in.cl.LeaveGroupContext(sctx); err != nil {
		in.cfg.Logger.Warn("leaving the consumer group", "err", err)
	}
	return nil
}

// noteFetchErrors counts and logs the errors of a poll; franz-go retries.
// Fetches that fail with UNKNOWN_TOPIC_ID make it check whether the topic
// was re-created (checkRecreated).
func (in *Ingester) noteFetchErrors(ctx context.Context, fetches kgo.Fetches) {
	var unknownID []string
	fetches.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		in.cfg.Metrics.FetchErrs.Inc()
		if in.health.fetchLog.note(t + "\x00" + err.Error()) {
			in.cfg.Logger.Warn("fetch error (retrying)", "topic", t, "partition", p, "err", err)
		}
		if errors.Is(err, kerr.UnknownTopicID) && !slices.Contains(unknownID, t) {
			unknownID = append(unknownID, t)
		}
	})
	if len(unknownID) > 0 && in.src.idCheckDue(time.Now()) {
		in.checkRecreated(ctx, unknownID)
	}
}

// apply hands one batch to the store and returns its sequence number; if
// the store stalls, fetching of the assigned partitions pauses until it
// takes the batch.
func (in *Ingester) apply(b *engine.Batch) (uint64, error) {
	return in.applyWith(b, func() (uint64, error) { return in.store.Apply(b) })
}

// applyIfThen is the store's ApplyIfThen, watched as apply is.
func (in *Ingester) applyIfThen(b *engine.Batch, conds []engine.Condition, before func(next uint64, perr *engine.PreconditionError) error) (uint64, error) {
	return in.applyWith(b, func() (uint64, error) { return in.store.ApplyIfThen(b, conds, before) })
}

// applyWith is apply with f in place of the store's Apply of b.
func (in *Ingester) applyWith(b *engine.Batch, f func() (uint64, error)) (uint64, error) {
	m := in.cfg.Metrics
	t0 := time.Now()
	done := make(chan struct{})
	paused := make(chan bool, 1)
	go func() {
		select {
		case <-done:
			paused <- false
		case <-time.After(50 * time.Millisecond):
			in.health.stallBegan(t0)
			in.setPaused(pauseStall, true, nil)
			m.Paused.Inc()
			paused <- true
		}
	}()
	seq, err := f()
	close(done)
	if <-paused {
		in.setPaused(pauseStall, false, nil) // unless the assignment conflicts
		in.health.stallEnded(time.Since(t0))
	}
	if err != nil {
		return 0, fmt.Errorf("ingest: apply: %w", err)
	}
	m.ApplySecs.Observe(time.Since(t0).Seconds())
	m.BatchEdges.Observe(float64(b.Len()))
	m.Edges.Add(float64(b.Len()))
	m.Vertices.Add(float64(b.Vertices()))
	return seq, nil
}

// flush makes everything applied so far durable: new dictionary keys first,
// then the store (which records the position of its newest batch).
func (in *Ingester) flush() error {
	pos := in.pos.appliedNow()
	if in.dict != nil {
		if err := in.dict.Sync(); err != nil {
			return fmt.Errorf("ingest: key dictionary: %w", err)
		}
	}
	if err := in.store.Flush(); err != nil {
		return fmt.Errorf("ingest: flush: %w", err)
	}
	durableSeq, err := in.store.DurableSeq()
	if err != nil {
		return fmt.Errorf("ingest: flush: %w", err)
	}
	in.pos.flushed(pos, durableSeq)
	return nil
}

// flushAndCommit flushes and waits, then commits (see commit).
func (in *Ingester) flushAndCommit(ctx context.Context) error {
	in.pos.lockFlush()
	defer in.pos.unlockFlush()
	t0 := time.Now()
	if err := in.flush(); err != nil {
		return err
	}
	in.commit(ctx)
	in.cfg.Metrics.FlushSecs.Observe(time.Since(t0).Seconds())
	return nil
}

// commit commits the durable offsets of the assigned partitions so that
// lag tools see them. A failed commit is logged, not fatal: the store's
// position, not the group's, decides where to resume.
func (in *Ingester) commit(ctx context.Context) {
	durable := in.pos.durableNow()
	offs := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range in.asg.assignedNow() {
		for _, p := range ps {
			if o, ok := durable.Get(t, p); ok {
				if offs[t] == nil {
					offs[t] = map[int32]kgo.EpochOffset{}
				}
				offs[t][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
			}
		}
	}
	if len(offs) > 0 && in.cfg.Own != nil {
		if err := in.commitOwned(ctx, offs); err != nil && ctx.Err() == nil {
			in.cfg.Logger.Warn("committing group offsets failed (the store's position stays authoritative)", "err", err)
		}
		return
	}
	if len(offs) > 0 {
		in.cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				in.cfg.Logger.Warn("committing group offsets failed (the store's position stays authoritative)", "err", err)
			}
		})
	}
}
