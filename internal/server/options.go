package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/alertlog"
	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/graphid"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/ownership"
	"github.com/graphtide/graphtide/internal/settings"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Options are the flags of "graphtide serve"; every flag can also be
// set by the environment variable GRAPHTIDE_<FLAG> (upper case, '-' -> '_').
type Options struct {
	Dir                 string
	Kafka               kafkaconn.Options // brokers (none: the embedded broker), TLS, SASL
	Topics              []string
	Graph               string      // --graph ("": the store's recorded graph, else derived from Topics)
	Derive              DeriveNames // the Kafka names not given, which default from the graph (set by ReadConfig)
	Group               string
	GroupInstanceID     string
	Format              string
	TopicFormats        []string
	MappingFlags        []string                  // from --mapping
	Mappings            map[string]decode.Mapping // per topic: the config file's mappings section, then --mapping (set by Validate)
	DeadLetterTopic     string
	DeadLetterTimeout   time.Duration
	ReadyGrace          time.Duration
	ReadyMaxLag         int64
	FlushInterval       time.Duration
	CheckpointInterval  time.Duration
	CheckpointWait      time.Duration // --checkpoint-restore-wait
	Reset               string
	ResetSourcePosition bool
	AcceptLostRecords   bool
	HTTPAddr            string
	MemGraphMiB         int // 0: sized from the memory budget
	MemoryBudget        string
	Plan                budget.Plan // the budget divided (set by Validate)
	InEdges             bool
	InEdgesGiven        bool          // --in-edges was set (flag, environment or file)
	HistorySeqs         uint64        // reads as of the last this many seqs stay possible (0: not by seqs)
	HistoryRetention    time.Duration // reads as of every seq newest within this long stay possible (0: not by time)
	EmbeddedPort        int
	AnalyticFlags       []string // compact specs from --analytic
	AlertTopic          string
	AlertLeader         string // deprecated, ignored
	AlertHistory        int
	AlertSessionTimeout time.Duration
	Owners              string         // --owners
	OwnPartitions       string         // --own-partitions
	AdoptPartitions     string         // --adopt-partitions
	Partitioning        *ownership.Map // from --owners and --own-partitions (set by Validate); nil: not partitioned
	Adopt               []int32        // from --adopt-partitions (set by Validate)
	WritesTopic         string
	WritesRetention     time.Duration
	ExportDir           string
	LogCapacity         int
	Specs               []analytics.Spec // from --analytic and the config file's analytics section

	HTTPTokenFile  string
	HTTPTLSCert    string
	HTTPTLSKey     string
	HTTPTimeout    time.Duration
	HTTPPathBudget int64
	HTTPTokens     []api.Token // from --http-token-file or GRAPHTIDE_HTTP_TOKEN (set by Validate)
}

// AddFlags adds serve's flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.Dir, "dir", "graphtide-data", "store directory (created if missing)")
	o.Kafka.AddFlags(fs, nil, "Kafka bootstrap brokers, comma separated; without it an embedded broker is started (for trying graphtide out only)")
	fs.StringSliceVar(&o.Topics, "topics", []string{"edges"}, "topics to consume")
	fs.StringVar(&o.Graph, "graph", "", "the graph this store holds, shared by its replicas: the Kafka names below default from it (letters, digits, '.', '_' and '-'; default: the graph the store recorded, else the topic of --topics, or for several a name derived from all of them)")
	fs.StringVar(&o.Group, "group", "", "consumer group (default graphtide.<graph>)")
	fs.StringVar(&o.GroupInstanceID, "group-instance-id", "", "static membership of the consumer group (Kafka's group.instance.id; letters, digits, '.', '_' and '-'): a restart within the group's session timeout (45s) takes its partitions back at once instead of waiting it out; give each instance its own, for example the pod name (empty: dynamic membership)")
	fs.StringVar(&o.Format, "format", "binary", "record format of the topics: binary, json or text")
	fs.StringSliceVar(&o.TopicFormats, "topic-format", nil, "per-topic format as topic=format (overrides --format)")
	fs.StringArrayVar(&o.MappingFlags, "mapping", nil, "read a topic's JSON records through a field mapping: topic:src=SOURCE,dst=SOURCE[,weight=..,time=..,type=..,op=..,event_id=..,props=..|props.NAME=..,types=NAME:replace|accumulate[:RETAIN],tombstone=ignore|delete|dead-letter] where a SOURCE is /json/pointer, key, key:/pointer, key:N, header:NAME or const:TEXT (repeatable; or the config file's mappings: section)")
	fs.StringVar(&o.DeadLetterTopic, "dead-letter-topic", "", "topic that receives records that cannot be ingested (default graphtide.<graph>.dead-letters)")
	fs.DurationVar(&o.DeadLetterTimeout, "dead-letter-timeout", 10*time.Second, "how long one attempt to write a dead letter may take; past it (or refused for good) only that record's partition pauses until a retry succeeds, and /readyz says so")
	fs.DurationVar(&o.ReadyGrace, "ready-grace", 30*time.Second, "how long no Kafka broker may answer, or the store stall, before /readyz reports it")
	fs.Int64Var(&o.ReadyMaxLag, "ready-max-lag", 0, "records the assigned partitions may be behind the brokers' end offsets, together, before /readyz answers 503 (what is applied against the newest end offsets known: each fetch's, and the brokers' every 10s), so that a lagging replica leaves a load balancer's rotation; 0: no limit")
	fs.DurationVar(&o.FlushInterval, "flush-interval", 2*time.Second, "make ingested data durable at least this often (bounds replay after a crash)")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", 5*time.Minute, "checkpoint the analytics and monitors (every built-in one but those with types that read a topology) this often, and at shutdown, so that a restart resumes them, their windows and their alerts instead of recomputing (0: never); ingestion pauses while one is written")
	fs.DurationVar(&o.CheckpointWait, "checkpoint-restore-wait", DefaultCheckpointRestoreWait, "how long a start waits for the Kafka brokers to check the analytics' checkpoint (/readyz answers 503 meanwhile); past it serve exits 1 rather than drop the analytics' state")
	fs.StringVar(&o.Reset, "reset", "earliest", "where to start partitions with no recorded or committed offset: earliest or latest")
	fs.BoolVar(&o.ResetSourcePosition, "reset-source-position", false, "discard the store's recorded Kafka offsets where they belong to another cluster or to a topic deleted and re-created since, and ingest partitions whose history is in another store or a partial assignment, starting them at the group's committed offsets (then --reset); for one deliberate restart")
	fs.BoolVar(&o.AcceptLostRecords, "accept-lost-records", false, "ingest a partition whose log no longer holds records the store needs (deleted by retention or DeleteRecords: a new store on a log that does not start at offset 0, or a store whose position fell behind the log start) from its log start, without them (a WARN names them); without it serve refuses (partitioned mode) or pauses those partitions, /readyz saying why; for one deliberate start")
	fs.StringVar(&o.HTTPAddr, "http-addr", "127.0.0.1:9464", "address of the HTTP API, /metrics, /healthz and /readyz (beyond loopback it needs a bearer token)")
	fs.StringVar(&o.HTTPTokenFile, "http-token-file", "", "file of the bearer tokens /v1 requests must carry, one 'TOKEN SCOPES' a line with scopes read, write, admin (a file of one bare token: every scope); or GRAPHTIDE_HTTP_TOKEN; required when --http-addr is not loopback")
	fs.StringVar(&o.HTTPTLSCert, "http-tls-cert", "", "PEM certificate (chain) to serve HTTPS with (needs --http-tls-key)")
	fs.StringVar(&o.HTTPTLSKey, "http-tls-key", "", "PEM private key of --http-tls-cert")
	fs.DurationVar(&o.HTTPTimeout, "http-request-timeout", 10*time.Second, "deadline of one HTTP request")
	fs.Int64Var(&o.HTTPPathBudget, "http-path-budget", api.DefaultPathBudget, "edges one path query may read before it gives up (HTTP 422)")
	fs.StringVar(&o.MemoryBudget, "memory-budget", "1GiB", "memory serve stays within: divided among the store's MemGraphs, the edge log, the Kafka fetch buffers, the analytics, the alerts kept for reading, a sixteenth of headroom and the Go heap (GOMEMLIMIT); e.g. 512MiB, 4GiB")
	fs.IntVar(&o.MemGraphMiB, "memgraph-mib", 0, "size of one MemGraph in MiB, two alternate (0: about 6% of --memory-budget)")
	fs.BoolVar(&o.InEdges, "in-edges", true, "keep in-edges too: in-degrees, dir=in reads, bidirectional paths (fixed when the store is created: a new store keeps them unless --in-edges=false is given, or in partitioned mode, which keeps none; left out, an existing store keeps what it was created with)")
	fs.Uint64Var(&o.HistorySeqs, "history-seqs", 0, "keep the store readable as of each of the last this many sequence numbers (as_of_seq in queries; every version they need stays on disk until then); 0: not by seqs")
	fs.DurationVar(&o.HistoryRetention, "history-retention", 0, "keep the store readable as of every moment of the last this long, e.g. 24h (as_of_time and as_of_seq in queries; with --history-seqs a seq stays while either keeps it); 0: not by time")
	fs.IntVar(&o.EmbeddedPort, "embedded-port", 9092, "port of the embedded broker when --brokers is not given (0 = any free port); it keeps its data in <dir>/embedded-broker")
	fs.StringArrayVar(&o.AnalyticFlags, "analytic", nil, "register an analytic: type=bfs|wcc|pagerank|sssp|degree|fanin|fanout|fraud,name=..,root=..,... (repeatable; or the config file's analytics: list)")
	fs.StringVar(&o.AlertTopic, "alert-topic", "", "Kafka topic that receives the monitors' alerts as JSON (default graphtide.<graph>.alerts; '' given: none)")
	fs.StringVar(&o.AlertLeader, "alert-leader", "", "ignored: alert production fails over by itself (see --alert-failover-timeout)")
	_ = fs.MarkDeprecated("alert-leader", "alert production fails over by itself: every replica takes part, and Kafka's group decides which one produces")
	fs.IntVar(&o.AlertHistory, "alert-history", alertlog.DefaultKeep, "how many of the newest alerts GET /v1/alerts lists, kept across restarts and crashes in <dir>/alerts.log (1 to 1000000; the file holds at most twice as many)")
	fs.DurationVar(&o.AlertSessionTimeout, "alert-failover-timeout", 10*time.Second, "replicas: how long the replica producing the alerts may be silent (dead, or cut off) before another takes over production (the session timeout of the alert producers' consumer group, 6s to 5m)")
	fs.StringVar(&o.Owners, "owners", "", "partitioned mode: every owner of the topics' partitions as PARTITIONS=URL,... with each URL the owner's API (or a Service over its replicas), e.g. 0-1=http://graphtide-a:9464,2-3=http://graphtide-b:9464 ('+' joins ranges: 0+2); the same on every instance (empty: every instance holds every partition)")
	fs.StringVar(&o.OwnPartitions, "own-partitions", "", "partitioned mode: the partitions of every topic this instance ingests, one entry of --owners, e.g. 0-1")
	fs.StringVar(&o.AdoptPartitions, "adopt-partitions", "", "partitioned mode, hand-over: owned partitions new to this store that it replays from the start of their log although the consumer group committed offsets for them (another store held them), e.g. 2")
	fs.StringVar(&o.WritesTopic, "writes-topic", "", "graphtide's own topic for POST /v1/batches: a batch is produced to it and applied from it in log order, like any record (default graphtide.<graph>.writes, none in partitioned mode; '' given: no writes over HTTP)")
	fs.StringVar(&o.ExportDir, "export-dir", "", "directory under which POST /v1/exports writes Parquet exports of the graph, each in a directory the request names (docs/spark.md); empty: exports are off")
	fs.DurationVar(&o.WritesRetention, "writes-key-retention", 24*time.Hour, "how long an idempotency key of POST /v1/batches is remembered: a retry within it applies once and gets the first answer")
	fs.IntVar(&o.LogCapacity, "view-log-capacity", 0, "operations the edge log keeps for stream views and analytics, 128 bytes each with their payloads (a consumer further behind resyncs; 0: 10% of --memory-budget)")
}

// ReadConfig fills the options from the environment and the --config file
// (settings.Apply: flags beat the environment, which beats the file) and
// reads the file's analytics and mappings sections. Validate comes next.
func (o *Options) ReadConfig(fs *pflag.FlagSet) error {
	if err := settings.Apply(fs); err != nil {
		return err
	}
	// A name not given (by flag, environment or file) defaults from the
	// graph; '' given means none.
	o.Derive = DeriveNames{Group: !fs.Changed("group"), Writes: !fs.Changed("writes-topic"),
		Alerts: !fs.Changed("alert-topic"), DeadLetters: !fs.Changed("dead-letter-topic")}
	if err := settings.Section(fs, "analytics", &o.Specs); err != nil {
		return err
	}
	return settings.Section(fs, "mappings", &o.Mappings)
}

// Validate checks the options, fills the derived ones (Plan, Specs, the
// HTTP token) and names the flag and what is allowed when it refuses.
func (o *Options) Validate() error {
	if o.Dir == "" {
		return errors.New("--dir must not be empty")
	}
	if len(o.Topics) == 0 {
		return errors.New("--topics needs at least one topic")
	}
	if o.Graph != "" {
		if err := graphid.Validate(o.Graph); err != nil {
			return fmt.Errorf("--graph: %w", err)
		}
	}

	if o.HistoryRetention < 0 {
		return fmt.Errorf("--history-retention must not be negative, got %v", o.HistoryRetention)
	}
	if _, err := decode.ParseFormat(o.Format); err != nil {
		return fmt.Errorf("--format must be one of: binary, json, text; got %q", o.Format)
	}
	for _, tf := range o.TopicFormats {
		t, f, ok := strings.Cut(tf, "=")
		if !ok || t == "" {
			return fmt.Errorf("--topic-format must look like topic=format, got %q", tf)
		}
		if _, err := decode.ParseFormat(f); err != nil {
			return fmt.Errorf("--topic-format %s: format must be one of: binary, json, text; got %q", t, f)
		}
	}
	if err := o.validateMappings(); err != nil {
		return err
	}
	if err := o.validateWrites(); err != nil {
		return err
	}
	if o.Reset != "earliest" && o.Reset != "latest" {
		return fmt.Errorf("--reset must be earliest or latest, got %q", o.Reset)
	}
	if o.FlushInterval < 10*time.Millisecond {
		return fmt.Errorf("--flush-interval must be at least 10ms, got %v", o.FlushInterval)
	}
	if o.CheckpointInterval != 0 && (o.CheckpointInterval < time.Second || o.CheckpointInterval > 24*time.Hour) {
		return fmt.Errorf("--checkpoint-interval must be between 1s and 24h (or 0: never), got %v", o.CheckpointInterval)
	}
	// Zero (options built in code, not from flags): the defaults.
	if o.CheckpointWait == 0 {
		o.CheckpointWait = DefaultCheckpointRestoreWait
	}
	if o.CheckpointWait < time.Second || o.CheckpointWait > 24*time.Hour {
		return fmt.Errorf("--checkpoint-restore-wait must be between 1s and 24h, got %v", o.CheckpointWait)
	}
	if o.DeadLetterTimeout == 0 {
		o.DeadLetterTimeout = 10 * time.Second
	}
	if o.ReadyGrace == 0 {
		o.ReadyGrace = 30 * time.Second
	}
	if o.DeadLetterTimeout < time.Second || o.DeadLetterTimeout > 10*time.Minute {
		return fmt.Errorf("--dead-letter-timeout must be between 1s and 10m, got %v", o.DeadLetterTimeout)
	}
	if o.ReadyGrace < 100*time.Millisecond || o.ReadyGrace > 24*time.Hour {
		return fmt.Errorf("--ready-grace must be between 100ms and 24h, got %v", o.ReadyGrace)
	}
	if o.AlertHistory < 0 || o.AlertHistory > 1000000 {
		return fmt.Errorf("--alert-history must be between 1 and 1000000 (0: %d), got %d", alertlog.DefaultKeep, o.AlertHistory)
	}
	if err := checkInstanceID("--group-instance-id", o.GroupInstanceID); err != nil {
		return err
	}
	if o.AlertSessionTimeout != 0 && (o.AlertSessionTimeout < 6*time.Second || o.AlertSessionTimeout > 5*time.Minute) {
		return fmt.Errorf("--alert-failover-timeout must be between 6s and 5m (Kafka's brokers refuse a shorter session by default), got %v", o.AlertSessionTimeout)
	}
	if err := o.validatePartitioning(); err != nil {
		return err
	}
	if o.ReadyMaxLag < 0 {
		return fmt.Errorf("--ready-max-lag must be 0 (no limit) or a number of records, got %d", o.ReadyMaxLag)
	}
	if o.MemGraphMiB < 0 || o.MemGraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536 (or 0: sized from --memory-budget), got %d", o.MemGraphMiB)
	}
	if err := o.Kafka.Validate(); err != nil {
		return err
	}
	if o.EmbeddedPort < 0 || o.EmbeddedPort > 65535 {
		return fmt.Errorf("--embedded-port must be between 0 and 65535, got %d", o.EmbeddedPort)
	}
	if o.LogCapacity < 0 || o.LogCapacity > 1<<30 {
		return fmt.Errorf("--view-log-capacity must be between 1 and %d (or 0: sized from --memory-budget), got %d", 1<<30, o.LogCapacity)
	}
	if o.MemoryBudget == "" {
		o.MemoryBudget = "1GiB"
	}
	total, err := budget.Parse(o.MemoryBudget)
	if err != nil {
		return fmt.Errorf("--memory-budget: %w", err)
	}
	if o.Plan, err = budget.Divide(total, budget.Explicit{MemGraphBytes: int64(o.MemGraphMiB) << 20, EdgeLogOps: o.LogCapacity}); err != nil {
		return err
	}
	if err := o.validateHTTP(); err != nil {
		return err
	}
	for _, a := range o.AnalyticFlags {
		sp, err := analytics.ParseSpec(a)
		if err != nil {
			return fmt.Errorf("--analytic: %w", err)
		}
		o.Specs = append(o.Specs, sp)
	}
	names := map[string]bool{}
	for i := range o.Specs {
		sp := &o.Specs[i]
		if err := sp.Validate(); err != nil {
			return err
		}
		if o.Partitioning != nil {
			if err := analytics.VertexLocal(*sp); err != nil {
				return err
			}
		}
		if names[sp.Name] {
			return fmt.Errorf("two analytics are named %q: give each a distinct name", sp.Name)
		}
		names[sp.Name] = true
	}
	return nil
}

// validateMappings adds --mapping to the config file's mappings and checks
// each: it compiles, its topic is consumed, and no --topic-format gives
// the topic a format other than json.
func (o *Options) validateMappings() error {
	if o.Mappings == nil {
		o.Mappings = map[string]decode.Mapping{}
	}
	for _, f := range o.MappingFlags {
		t, m, err := decode.ParseMappingFlag(f)
		if err != nil {
			return fmt.Errorf("--mapping %w", err)
		}
		o.Mappings[t] = m // beats the config file's
	}
	topics := map[string]bool{}
	for _, t := range o.Topics {
		topics[t] = true
	}
	formats := map[string]string{}
	for _, tf := range o.TopicFormats {
		t, f, _ := strings.Cut(tf, "=")
		formats[t] = f
	}
	for t, m := range o.Mappings {
		if !topics[t] {
			return fmt.Errorf("a mapping names topic %q, which --topics does not consume (%s)", t, strings.Join(o.Topics, ", "))
		}
		if _, err := decode.NewMapped(m, nil); err != nil {
			return fmt.Errorf("mapping of topic %s: %w", t, err)
		}
		// A mapping reads JSON whatever --format says; a --topic-format of
		// another format for the topic contradicts it.
		if f, ok := formats[t]; ok && f != "json" {
			return fmt.Errorf("topic %s has a mapping, which reads JSON records, but --topic-format gives it %s: drop that or make it json", t, f)
		}
	}
	_, err := MappingAggregates(o.Mappings)
	return err
}

// validateWrites checks the writes topic's flags (names that default from
// the graph are checked once it is known: checkTopicNames).
func (o *Options) validateWrites() error {
	if err := checkTopicNames(o.Topics, o.WritesTopic, o.DeadLetterTopic, o.AlertTopic, o.Mappings); err != nil {
		return err
	}
	derived := o.Derive.Writes && o.Owners == "" && o.OwnPartitions == ""
	if (o.WritesTopic != "" || derived) && o.WritesRetention < time.Minute {
		return fmt.Errorf("--writes-key-retention must be at least 1m, got %v", o.WritesRetention)
	}
	return nil
}

// checkTopicNames checks that the writes topic, if any, is a topic of its
// own: not consumed, not the dead-letter or alert topic, not mapped.
func checkTopicNames(topics []string, writes, dead, alerts string, mappings map[string]decode.Mapping) error {
	if writes == "" {
		return nil
	}
	for _, t := range topics {
		if t == writes {
			return fmt.Errorf("--writes-topic %q is also in --topics: the writes topic holds batches of its own format, give it a topic of its own (or --writes-topic '' for none)", t)
		}
	}
	for flag, t := range map[string]string{"--dead-letter-topic": dead, "--alert-topic": alerts} {
		if t == writes {
			return fmt.Errorf("--writes-topic %q is also %s: give it a topic of its own", t, flag)
		}
	}
	if _, mapped := mappings[writes]; mapped {
		return fmt.Errorf("a mapping names the writes topic %q: its records are batches, not mapped JSON", writes)
	}
	return nil
}

// validateHTTP checks the HTTP flags and reads the bearer token: serving
// beyond loopback without one is refused.
func (o *Options) validateHTTP() error {
	if o.HTTPTimeout < time.Millisecond || o.HTTPTimeout > time.Hour {
		return fmt.Errorf("--http-request-timeout must be between 1ms and 1h, got %v", o.HTTPTimeout)
	}
	if o.HTTPPathBudget < 1 {
		return fmt.Errorf("--http-path-budget must be positive, got %d", o.HTTPPathBudget)
	}
	if (o.HTTPTLSCert == "") != (o.HTTPTLSKey == "") {
		return errors.New("--http-tls-cert and --http-tls-key go together: give both, or neither")
	}
	env, fromEnv := os.LookupEnv("GRAPHTIDE_HTTP_TOKEN")
	var source string
	var tokens []byte
	switch {
	case fromEnv && o.HTTPTokenFile != "":
		return errors.New("the HTTP token comes from --http-token-file or GRAPHTIDE_HTTP_TOKEN: give one, not both")
	case fromEnv:
		source, tokens = "GRAPHTIDE_HTTP_TOKEN", []byte(env)
	case o.HTTPTokenFile != "":
		b, err := os.ReadFile(o.HTTPTokenFile)
		if err != nil {
			return fmt.Errorf("--http-token-file: %w", err)
		}
		source, tokens = "--http-token-file "+o.HTTPTokenFile, b
	}
	o.HTTPTokens = nil
	if source != "" {
		var err error
		if o.HTTPTokens, err = api.ParseTokens(source, tokens); err != nil {
			return err
		}
	}
	if len(o.HTTPTokens) == 0 && !api.IsLoopbackAddr(o.HTTPAddr) {
		return fmt.Errorf("--http-addr %s is not a loopback address: serving the API beyond this machine needs a bearer token (--http-token-file FILE or GRAPHTIDE_HTTP_TOKEN)", o.HTTPAddr)
	}
	return nil
}

// Config is the server configuration of validated options.
func (o *Options) Config(log *slog.Logger, out io.Writer) Config {
	var inEdges *bool // as stored unless given (a new store: Config.InEdges's default)
	if o.InEdgesGiven {
		inEdges = &o.InEdges
	}
	format, _ := decode.ParseFormat(o.Format)
	tf := map[string]decode.Format{}
	for _, s := range o.TopicFormats {
		t, f, _ := strings.Cut(s, "=")
		tf[t], _ = decode.ParseFormat(f)
	}
	return Config{
		Dir: o.Dir, InEdges: inEdges, Plan: o.Plan, HistorySeqs: o.HistorySeqs, HistoryRetention: o.HistoryRetention,
		Kafka: o.Kafka, EmbeddedPort: o.EmbeddedPort, Topics: o.Topics, Graph: o.Graph, Derive: o.Derive, Group: o.Group, GroupInstanceID: o.GroupInstanceID, Format: format, TopicFormats: tf, Mappings: o.Mappings,
		DeadLetterTopic: o.DeadLetterTopic, DeadLetterTimeout: o.DeadLetterTimeout, ReadyGrace: o.ReadyGrace, ReadyMaxLag: o.ReadyMaxLag,
		FlushInterval: o.FlushInterval, CheckpointInterval: o.CheckpointInterval, CheckpointRestoreWait: o.CheckpointWait, Reset: o.Reset, ResetSourcePosition: o.ResetSourcePosition, AcceptLostRecords: o.AcceptLostRecords,
		Analytics: o.Specs, AlertTopic: o.AlertTopic, AlertHistory: o.AlertHistory, AlertSessionTimeout: o.AlertSessionTimeout, AlertLeader: o.AlertLeader, Owners: o.Partitioning, Adopt: o.Adopt, WritesTopic: o.WritesTopic, WritesRetention: o.WritesRetention, ExportDir: o.ExportDir,
		HTTP: HTTPConfig{Addr: o.HTTPAddr, Tokens: o.HTTPTokens, TLSCert: o.HTTPTLSCert, TLSKey: o.HTTPTLSKey,
			RequestTimeout: o.HTTPTimeout, PathBudget: o.HTTPPathBudget},
		Logger: log, Out: out,
	}
}

// checkInstanceID checks a group instance id given to flag: empty, or at
// most 249 of the characters Kafka allows in names.
func checkInstanceID(flag, id string) error {
	if len(id) > 249 {
		return fmt.Errorf("%s must be at most 249 characters, got %d", flag, len(id))
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%s %q: only letters, digits, '.', '_' and '-' are allowed", flag, id)
		}
	}
	return nil
}

// validatePartitioning reads --owners, --own-partitions and
// --adopt-partitions: partitioned mode needs the first two, and takes no
// writes topic (a batch may name vertices of several owners).
func (o *Options) validatePartitioning() error {
	o.Partitioning, o.Adopt = nil, nil
	if o.Owners == "" && o.OwnPartitions == "" {
		if o.AdoptPartitions != "" {
			return errors.New("--adopt-partitions is a hand-over of partitioned mode: it needs --owners and --own-partitions")
		}
		return nil
	}
	m, err := ownership.Parse(o.Owners, o.OwnPartitions)
	if err != nil {
		return err
	}
	if o.InEdgesGiven && o.InEdges {
		return fmt.Errorf("partitioned mode (--owners) keeps no in-edges: an owner would hold only those from its own vertices (dir=in is refused there); leave --in-edges out")
	}
	if o.WritesTopic != "" {
		return fmt.Errorf("partitioned mode (--owners) takes no writes topic: a batch of POST /v1/batches may name vertices of several owners; leave --writes-topic out (producers write to the topics, keyed by source vertex)")
	}
	if o.AdoptPartitions != "" {
		if o.Adopt, err = ownership.ParseSet(o.AdoptPartitions); err != nil {
			return fmt.Errorf("--adopt-partitions: %w", err)
		}
		for _, p := range o.Adopt {
			if !slices.Contains(m.Own(), p) {
				return fmt.Errorf("--adopt-partitions: partition %d is not one of --own-partitions %s: an instance adopts partitions it owns", p, ownership.FormatSet(m.Own()))
			}
		}
	}
	o.Partitioning = m
	return nil
}
