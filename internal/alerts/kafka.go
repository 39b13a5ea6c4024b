// Package alerts delivers the alerts of graphtide's monitors to a Kafka
// topic: one JSON record per alert (analytics.AlertRecord, the one JSON
// shape of an alert, with the graph; the same bytes as GET /v1/alerts),
// keyed by the vertex, with headers naming the analytic, the kind, the
// alert's ID and the graph.
//
// Every replica of a graph raises the same alerts (an alert's ID names its
// trigger the same way on every replica), and one of them produces them.
// Which one is decided by Kafka, not by graphtide: every sink of a graph
// and topic is a member of one consumer group (ElectionGroup) subscribed
// to the alert topic, and the member the group assigns partition 0 is the
// producer. When it dies, the group assigns the partition to another
// member once the dead one's session times out (Config.SessionTimeout); a
// clean stop hands it over at once. The producer writes in transactions
// under one transactional ID shared by the graph's replicas
// (TransactionalID), so that a new producer fences the old one: once the
// new one has its producer ID, nothing the old one still sends can commit.
//
// Each sink keeps, against the topic, the alerts it raised that the topic
// does not hold yet (pending) and the IDs the topic holds that it has not
// raised yet (ahead), reading the topic as a read_committed consumer (the
// watcher). A new producer first fences the old one, then reads the topic
// to its end, and produces what is still pending, in the order raised. So
// across a hand-over each alert that both replicas raise is on the topic
// once (read it with isolation.level=read_committed: a fenced producer's
// aborted records stay in the log).
//
// Publishing never blocks the analytic that raised the alerts; at most
// Config.MaxPending alerts wait (beyond, the oldest is dropped and
// counted, and no checkpoint is taken from then on, so that a restart
// raises it again), and at most as many IDs ahead.
//
// Exactly once across restarts, with the analytics' checkpoints: a
// checkpoint holds how far the topic was read, the pending alerts and
// the ahead IDs (Checkpoint); a restart from it (Resume) reads the topic
// from there, so that the alerts its replay raises again are matched to
// those already produced, by any replica.
package alerts

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/graphid"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Header names of alert records.
const (
	HeaderAnalytic = "graphtide-analytic"
	HeaderKind     = "graphtide-alert-kind"
	HeaderID       = "graphtide-alert-id"
	HeaderGraph    = graphid.HeaderGraph
	HeaderShard    = "graphtide-shard"
)

// Config of a KafkaSink.
type Config struct {
	Brokers []string
	Topic   string // required
	// Graph is the graph the alerts are of (package graphid; "": a store
	// that recorded none). Its records carry it, and records of another
	// graph on the topic are not this sink's.
	Graph string
	// Shard names the part of the graph the sink's replicas hold, in
	// partitioned mode (each owner raises the alerts of its own
	// partitions, and its replicas elect a producer among themselves):
	// the owned partitions, e.g. "0-1". "": the whole graph. Records carry
	// it (HeaderShard), and records of another shard are not this sink's.
	Shard string
	// Opts are the Kafka connection's options: TLS, SASL, hooks.
	Opts   []kgo.Opt
	Logger *slog.Logger
	// SessionTimeout is the election group's session timeout: how long a
	// producer that died silently holds production before another
	// replica takes over (default 10s; Kafka's brokers allow 6s to 30m).
	SessionTimeout time.Duration
	// MaxPending bounds the alerts waiting to be produced, and the IDs
	// ahead (default 100000 each).
	MaxPending int
	// Linger is how long alerts gather before they are produced in one
	// transaction (default 20ms).
	Linger time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.Topic == "" {
		return c, errors.New("alerts: the alert topic must not be empty")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.MaxPending == 0 {
		c.MaxPending = 100000
	}
	if c.Linger == 0 {
		c.Linger = 20 * time.Millisecond
	}
	return c, nil
}

// ElectionGroup is the consumer group whose holder of partition 0 of the
// alert topic produces the alerts of the graph's shard.
func ElectionGroup(c Config) string {
	return "graphtide-alert-producer|" + c.Graph + "|" + c.Shard + "|" + c.Topic
}

// TransactionalID is the transactional ID the producers of the graph's
// shard share.
func TransactionalID(c Config) string {
	return "graphtide-alerts|" + c.Graph + "|" + c.Shard + "|" + c.Topic
}

// KafkaSink is an analytics.AlertSink producing to a topic, one of the
// replicas of a graph at a time.
type KafkaSink struct {
	cfg   Config
	log   *slog.Logger
	admin *kgo.Client // metadata and offsets; Owned by the sink.
	// ext, when set, turns the store's vertex ids into the ids the sources
	// gave (a mapped number's id into the number; see keydict.NumID).
	// Set before the first Publish.
	ext func(uint64) uint64

	mu sync.Mutex
	// led is the pending alerts and the IDs ahead. Protected by mu.
	led *ledger
	// watched is the next offset the watcher reads, per partition; moved
	// is closed (and replaced) whenever it advances. Protected by mu.
	watched map[int32]int64
	moved   chan struct{}
	// watchCl is the watcher's client, once it has one. Protected by mu.
	watchCl *kgo.Client
	// floor: an alert seen on the topic from a record below it is not
	// ahead (the analytics are past that record: they will not raise it).
	// The store's position at the start, then each checkpoint's. nil: none.
	// Protected by mu.
	floor ingest.Position
	// resumed: Resume set the state from a checkpoint. Protected by mu.
	resumed bool

	leading  atomic.Bool
	gen      atomic.Uint64 // changes with every assignment or loss of partition 0
	wake     chan struct{} // the producer loop has something to do (cap 1)
	produced atomic.Uint64
	txErrs   atomic.Uint64

	stop     context.CancelFunc
	closing  chan struct{} // closed by Close: the producer's last delivery
	prodDone chan struct{} // closed when the producer loop has returned
	done     sync.WaitGroup
	started  bool
}

// NewKafkaSink connects to the brokers and creates the topic when missing
// (one partition; a failure is logged: producing retries). Start it once
// the analytics are restored (Resume), and Close it.
func NewKafkaSink(ctx context.Context, cfg Config) (*KafkaSink, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	admin, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.Opts...)...) // Owned by the sink; closed by Close.
	if err != nil {
		return nil, fmt.Errorf("alerts: kafka client: %w", err)
	}
	if err := kafkaconn.EnsureTopic(ctx, admin, cfg.Topic, 1); err != nil {
		cfg.Logger.Warn("could not create the alert topic (producing retries)", "topic", cfg.Topic, "err", err)
	}
	return &KafkaSink{cfg: cfg, log: cfg.Logger, admin: admin, led: newLedger(cfg.MaxPending), watched: map[int32]int64{},
		moved: make(chan struct{}), wake: make(chan struct{}, 1), closing: make(chan struct{})}, nil
}

// SetVertexIDs makes alerts carry the vertex ids the sources gave: ext
// maps a store id to it. Call it before the sink gets its first alert.
func (k *KafkaSink) SetVertexIDs(ext func(uint64) uint64) { k.ext = ext }

// Publish implements analytics.AlertSink without blocking: the alerts the
// topic does not hold yet wait for the producer. Each record's value is
// the alert's JSON of the sink's graph, written here (a registry hands
// the JSON it wrote to PublishJSON instead).
func (k *KafkaSink) Publish(al []analytics.Alert) {
	items := make([]*item, 0, len(al))
	for _, a := range al {
		r := k.named(a)
		v, err := encode(&r)
		if err != nil {
			k.log.Error("an alert cannot be written as JSON", "analytic", a.Analytic, "err", err)
			continue
		}
		// Keyed by the vertex: its string key, else its id.
		key := cmp.Or(r.VertexKey, r.VertexID)
		items = append(items, &item{id: a.ID, src: a.Source, rec: k.record(a.ID, a.Analytic, a.Kind, key, v)})
	}
	k.queue(items)
}

// PublishJSON implements analytics.JSONSink: Publish of alerts whose
// JSON (of the sink's graph, AlertGraph) the registry wrote, docs[i]
// al[i]'s: each record's value is those bytes, the same as alerts.log's
// record of the alert. The registry names every vertex (the ids its
// source gave): SetVertexIDs does not apply.
func (k *KafkaSink) PublishJSON(al []analytics.Alert, docs [][]byte) {
	items := make([]*item, 0, len(al))
	for i := range al {
		a := &al[i]
		if i >= len(docs) || docs[i] == nil {
			k.log.Error("an alert cannot be written as JSON", "analytic", a.Analytic)
			continue
		}
		// Keyed by the vertex: its string key, else its id.
		key := a.VertexKey
		if key == "" {
			_, key = analytics.NamedID(a.Vertex, a.VertexID)
		}
		items = append(items, &item{id: a.ID, src: a.Source, rec: k.record(a.ID, a.Analytic, a.Kind, key, docs[i])})
	}
	k.queue(items)
}

var _ analytics.JSONSink = (*KafkaSink)(nil)

// AlertGraph implements analytics.JSONSink: the graph of the sink's
// alerts (Config.Graph).
func (k *KafkaSink) AlertGraph() string { return k.cfg.Graph }

// queue makes items wait for the producer, in order.
func (k *KafkaSink) queue(items []*item) {
	queued := false
	k.mu.Lock()
	for _, it := range items {
		if it.id == "" {
			it.id = fmt.Sprintf("unnamed-%p", it) // matches nothing: produced by whoever holds it
		}
		before := k.led.droppedPending
		if k.led.raise(it) {
			queued = true
		}
		if k.led.droppedPending > before && k.led.droppedPending == 1 {
			k.log.Warn("too many alerts wait for the alert topic: the oldest are dropped (still readable over HTTP); no analytics checkpoint is taken from now on, so that a restart raises them again",
				"topic", k.cfg.Topic, "max_pending", k.cfg.MaxPending)
		}
	}
	k.mu.Unlock()
	if queued {
		k.poke()
	}
}

// named is a as its record's value holds it: the alert's JSON
// (analytics.AlertRecord) with the sink's graph. Ids the registry did not
// name are turned into the sources' (SetVertexIDs); a is not changed.
func (k *KafkaSink) named(a analytics.Alert) analytics.AlertRecord {
	r := a.Record(k.cfg.Graph)
	if k.ext != nil {
		if a.VertexID == "" {
			r.Vertex = k.ext(a.Vertex)
			r.VertexID = strconv.FormatUint(r.Vertex, 10)
		}
		if len(a.CycleIDs) != len(a.Cycle) {
			for i, v := range a.Cycle {
				r.Cycle[i] = k.ext(v)
				r.CycleIDs[i] = strconv.FormatUint(r.Cycle[i], 10)
			}
		}
		for i, e := range a.Evidence {
			if e.SrcID == "" {
				r.Evidence[i].SrcID = strconv.FormatUint(k.ext(e.Src), 10)
			}
			if e.DstID == "" {
				r.Evidence[i].DstID = strconv.FormatUint(k.ext(e.Dst), 10)
			}
		}
	}
	return r
}

// encode is an alert record's value: its JSON as GET /v1/alerts writes
// it, byte for byte (HTML characters not escaped).
func encode(r *analytics.AlertRecord) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// poke wakes the producer loop.
func (k *KafkaSink) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// Resume sets the sink's state from what Checkpoint returned: the topic is
// read from where it was then, the pending alerts wait again, the IDs
// ahead are matched. Call it before Start.
func (k *KafkaSink) Resume(_ context.Context, pos []byte) error {
	s, err := decodeState(pos)
	if err != nil {
		return err
	}
	if s.Version >= stateVersion && (s.Graph != k.cfg.Graph || s.Shard != k.cfg.Shard) {
		return fmt.Errorf("alerts: the checkpoint's alert state is of graph %q shard %q, this sink's of graph %q shard %q", s.Graph, s.Shard, k.cfg.Graph, k.cfg.Shard)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.led = newLedger(k.cfg.MaxPending)
	for _, it := range s.Pending {
		k.led.raise(k.restoreItem(it, s.Shape))
	}
	for _, a := range s.Ahead {
		k.led.see(a.ID, a.Source)
	}
	k.watched = map[int32]int64{}
	for p, o := range s.Watched {
		k.watched[p] = o
	}
	k.resumed = true
	k.log.Info("alert state restored from the checkpoint", "topic", k.cfg.Topic, "pending", k.led.n, "ahead", k.led.aheadN)
	return nil
}

// Start starts reading the topic and takes part in the election of its
// producer. floor is the source position the analytics are at (an
// ingest.Recorded encoding: the store's, or the checkpoint's they were
// restored to): without Resume, the topic is read from its start, and an
// alert there from a record below floor is not ahead (no analytic raises
// it again).
func (k *KafkaSink) Start(floor []byte) error {
	if k.started {
		return errors.New("alerts: the sink is started already")
	}
	fp, err := ingest.DecodePosition(floor)
	if err != nil {
		return fmt.Errorf("alerts: %w", err)
	}
	k.mu.Lock()
	k.floor = fp
	k.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	k.stop = cancel
	k.started = true
	elect, err := k.electionClient()
	if err != nil {
		cancel()
		return err
	}
	k.prodDone = make(chan struct{})
	k.done.Add(2)
	go func() {
		defer k.done.Done()
		k.watch(ctx)
	}()
	go func() {
		defer k.done.Done()
		defer close(k.prodDone)
		defer elect.Close() // leaves the group: the next member takes over at once
		k.produceLoop(ctx)
	}()
	return nil
}

// Checkpoint returns the sink's state at the source position position
// (an ingest.Recorded encoding) that the analytics have reached: how far
// the topic was read, the pending alerts, the IDs ahead (those from
// records below position are forgotten: no analytic raises them again).
// It fails once an alert was dropped (MaxPending): a restart must go back
// to a checkpoint before it and raise it again.
func (k *KafkaSink) Checkpoint(_ context.Context, position []byte) ([]byte, error) {
	fp, err := ingest.DecodePosition(position)
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := k.led.droppedPending; n > 0 {
		return nil, fmt.Errorf("alerts: %d alert(s) were dropped (more than %d waited for the alert topic): no checkpoint is taken after them, so that a restart raises them again", n, k.cfg.MaxPending)
	}
	k.floor = fp
	k.led.forget(func(src *analytics.AlertSource) bool { return below(fp, src) })
	s := savedState{Version: stateVersion, Shape: alertShape, Graph: k.cfg.Graph, Shard: k.cfg.Shard, Watched: map[int32]int64{}, Ahead: k.led.aheadList()}
	for p, o := range k.watched {
		s.Watched[p] = o
	}
	for _, it := range k.led.pending() {
		s.Pending = append(s.Pending, saveItem(it))
	}
	return json.Marshal(s)
}

// below reports whether src is a record below the position p.
func below(p ingest.Position, src *analytics.AlertSource) bool {
	next, ok := p.Get(src.Topic, src.Partition)
	return ok && src.Offset < next
}

// Stats is what a sink has done.
type Stats struct {
	Leading  bool   // this sink produces the graph's alerts
	Produced uint64 // alerts this sink produced (committed, and read back from the topic)
	Pending  int    // alerts raised here the topic does not hold yet
	Ahead    int    // IDs the topic holds that were not raised here yet
	Dropped  uint64 // pending alerts dropped at MaxPending
	TxErrors uint64 // transactions that failed (their alerts are produced again)
}

// Stats returns the sink's counts.
func (k *KafkaSink) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return Stats{Leading: k.leading.Load(), Produced: k.produced.Load(), Pending: k.led.n, Ahead: k.led.aheadN,
		Dropped: k.led.droppedPending, TxErrors: k.txErrs.Load()}
}

// Close produces what is pending while this sink is the producer (until
// ctx ends), leaves the election (another replica takes over at once)
// and closes the clients.
func (k *KafkaSink) Close(ctx context.Context) {
	if k.started {
		close(k.closing)
		select {
		case <-k.prodDone:
		case <-ctx.Done():
			k.log.Warn("alerts not delivered before shutdown: another replica, or the next start, produces them", "topic", k.cfg.Topic)
		}
		k.stop()
		k.done.Wait()
	}
	k.admin.Close()
}

// listEnds lists the topic's end offsets (high watermarks).
func (k *KafkaSink) listEnds(ctx context.Context, start bool) (map[int32]int64, error) {
	adm := kadm.NewClient(k.admin)
	var ends kadm.ListedOffsets
	var err error
	if start {
		ends, err = adm.ListStartOffsets(ctx, k.cfg.Topic)
	} else {
		ends, err = adm.ListEndOffsets(ctx, k.cfg.Topic)
	}
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("alerts: the alert topic's offsets: %w", err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// sortedPartitions lists m's partitions in order.
func sortedPartitions(m map[int32]int64) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
