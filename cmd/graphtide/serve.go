package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// serveOptions are the flags of "graphtide serve"; every flag can also be
// set by the environment variable GRAPHTIDE_<FLAG> (upper case, '-' -> '_').
type serveOptions struct {
	dir           string
	kafka         kafkaconn.Options // brokers (none: the embedded broker), TLS, SASL
	topics        []string
	group         string
	format        string
	topicFormats  []string
	deadLetter    string
	dlTimeout     time.Duration
	readyGrace    time.Duration
	flushInterval time.Duration
	reset         string
	resetSource   bool
	httpAddr      string
	memgraphMiB   int // 0: sized from the memory budget
	memoryBudget  string
	plan          budget.Plan // the budget divided (set by Validate)
	inEdges       bool
	inEdgesGiven  bool // --in-edges was set (flag, environment or file)
	embeddedPort  int
	analytics     []string // compact specs from --analytic
	alertTopic    string
	logCapacity   int
	specs         []analytics.Spec // from --analytic and the config file's analytics section

	httpTokenFile  string
	httpTLSCert    string
	httpTLSKey     string
	httpTimeout    time.Duration
	httpPathBudget int64
	httpToken      string // from --http-token-file or GRAPHTIDE_HTTP_TOKEN (set by Validate)
}

// minTokenLen is the shortest bearer token serve accepts.
const minTokenLen = 16

func (o *serveOptions) AddFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML file of settings keyed by flag name (flags and GRAPHTIDE_* variables take precedence)")
	fs.StringVar(&o.dir, "dir", "graphtide-data", "store directory (created if missing)")
	o.kafka.AddFlags(fs, nil, "Kafka bootstrap brokers, comma separated; without it an embedded broker is started (for trying graphtide out only)")
	fs.StringSliceVar(&o.topics, "topics", []string{"edges"}, "topics to consume")
	fs.StringVar(&o.group, "group", "graphtide", "consumer group")
	fs.StringVar(&o.format, "format", "binary", "record format of the topics: binary, json or text")
	fs.StringSliceVar(&o.topicFormats, "topic-format", nil, "per-topic format as topic=format (overrides --format)")
	fs.StringVar(&o.deadLetter, "dead-letter-topic", "graphtide-dead-letters", "topic that receives records that cannot be ingested")
	fs.DurationVar(&o.dlTimeout, "dead-letter-timeout", 10*time.Second, "how long one attempt to write a dead letter may take; past it (or refused for good) only that record's partition pauses until a retry succeeds, and /readyz says so")
	fs.DurationVar(&o.readyGrace, "ready-grace", 30*time.Second, "how long no Kafka broker may answer, or the store stall, before /readyz reports it")
	fs.DurationVar(&o.flushInterval, "flush-interval", 2*time.Second, "make ingested data durable at least this often (bounds replay after a crash)")
	fs.StringVar(&o.reset, "reset", "earliest", "where to start partitions with no recorded or committed offset: earliest or latest")
	fs.BoolVar(&o.resetSource, "reset-source-position", false, "discard the store's recorded Kafka offsets where they belong to another cluster or to a topic deleted and re-created since, and ingest partitions whose history is in another store or a partial assignment, starting them at the group's committed offsets (then --reset); for one deliberate restart")
	fs.StringVar(&o.httpAddr, "http-addr", "127.0.0.1:9464", "address of the HTTP API, /metrics, /healthz and /readyz (beyond loopback it needs a bearer token)")
	fs.StringVar(&o.httpTokenFile, "http-token-file", "", "file holding the bearer token that every /v1 request must carry (or GRAPHTIDE_HTTP_TOKEN); required when --http-addr is not loopback")
	fs.StringVar(&o.httpTLSCert, "http-tls-cert", "", "PEM certificate (chain) to serve HTTPS with (needs --http-tls-key)")
	fs.StringVar(&o.httpTLSKey, "http-tls-key", "", "PEM private key of --http-tls-cert")
	fs.DurationVar(&o.httpTimeout, "http-request-timeout", 10*time.Second, "deadline of one HTTP request")
	fs.Int64Var(&o.httpPathBudget, "http-path-budget", api.DefaultPathBudget, "edges one path query may read before it gives up (HTTP 422)")
	fs.StringVar(&o.memoryBudget, "memory-budget", "1GiB", "memory serve stays within: divided among the store's MemGraphs, the edge log, the Kafka fetch buffers, the analytics and the Go heap (GOMEMLIMIT); e.g. 512MiB, 4GiB")
	fs.IntVar(&o.memgraphMiB, "memgraph-mib", 0, "size of one MemGraph in MiB, two alternate (0: about 7.5% of --memory-budget)")
	fs.BoolVar(&o.inEdges, "in-edges", false, "also keep in-edges (fixed when the store is created; left out, an existing store keeps its setting)")
	fs.IntVar(&o.embeddedPort, "embedded-port", 9092, "port of the embedded broker when --brokers is not given (0 = any free port); it keeps its data in <dir>/embedded-broker")
	fs.StringArrayVar(&o.analytics, "analytic", nil, "register an analytic: type=bfs|wcc|pagerank|sssp|degree|fanin|fanout|fraud,name=..,root=..,... (repeatable; or the config file's analytics: list)")
	fs.StringVar(&o.alertTopic, "alert-topic", "graphtide-alerts", "Kafka topic that receives the monitors' alerts as JSON (empty: none)")
	fs.IntVar(&o.logCapacity, "view-log-capacity", 0, "operations the edge log keeps for stream views and analytics, 48 bytes each (a consumer further behind resyncs; 0: 10% of --memory-budget)")
}

func (o *serveOptions) Validate() error {
	if o.dir == "" {
		return errors.New("--dir must not be empty")
	}
	if len(o.topics) == 0 {
		return errors.New("--topics needs at least one topic")
	}
	if _, err := decode.ParseFormat(o.format); err != nil {
		return fmt.Errorf("--format must be one of: binary, json, text; got %q", o.format)
	}
	for _, tf := range o.topicFormats {
		t, f, ok := strings.Cut(tf, "=")
		if !ok || t == "" {
			return fmt.Errorf("--topic-format must look like topic=format, got %q", tf)
		}
		if _, err := decode.ParseFormat(f); err != nil {
			return fmt.Errorf("--topic-format %s: format must be one of: binary, json, text; got %q", t, f)
		}
	}
	if o.reset != "earliest" && o.reset != "latest" {
		return fmt.Errorf("--reset must be earliest or latest, got %q", o.reset)
	}
	if o.flushInterval < 10*time.Millisecond {
		return fmt.Errorf("--flush-interval must be at least 10ms, got %v", o.flushInterval)
	}
	// Zero (options built in code, not from flags): the defaults.
	if o.dlTimeout == 0 {
		o.dlTimeout = 10 * time.Second
	}
	if o.readyGrace == 0 {
		o.readyGrace = 30 * time.Second
	}
	if o.dlTimeout < time.Second || o.dlTimeout > 10*time.Minute {
		return fmt.Errorf("--dead-letter-timeout must be between 1s and 10m, got %v", o.dlTimeout)
	}
	if o.readyGrace < 100*time.Millisecond || o.readyGrace > 24*time.Hour {
		return fmt.Errorf("--ready-grace must be between 100ms and 24h, got %v", o.readyGrace)
	}
	if o.memgraphMiB < 0 || o.memgraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536 (or 0: sized from --memory-budget), got %d", o.memgraphMiB)
	}
	if err := o.kafka.Validate(); err != nil {
		return err
	}
	if o.embeddedPort < 0 || o.embeddedPort > 65535 {
		return fmt.Errorf("--embedded-port must be between 0 and 65535, got %d", o.embeddedPort)
	}
	if o.logCapacity < 0 || o.logCapacity > 1<<30 {
		return fmt.Errorf("--view-log-capacity must be between 1 and %d (or 0: sized from --memory-budget), got %d", 1<<30, o.logCapacity)
	}
	if o.memoryBudget == "" {
		o.memoryBudget = "1GiB"
	}
	total, err := budget.Parse(o.memoryBudget)
	if err != nil {
		return fmt.Errorf("--memory-budget: %w", err)
	}
	if o.plan, err = budget.Divide(total, budget.Explicit{MemGraphBytes: int64(o.memgraphMiB) << 20, EdgeLogOps: o.logCapacity}); err != nil {
		return err
	}
	if err := o.validateHTTP(); err != nil {
		return err
	}
	for _, a := range o.analytics {
		sp, err := analytics.ParseSpec(a)
		if err != nil {
			return fmt.Errorf("--analytic: %w", err)
		}
		o.specs = append(o.specs, sp)
	}
	names := map[string]bool{}
	for i := range o.specs {
		sp := &o.specs[i]
		if err := sp.Validate(); err != nil {
			return err
		}
		if names[sp.Name] {
			return fmt.Errorf("two analytics are named %q: give each a distinct name", sp.Name)
		}
		names[sp.Name] = true
	}
	return nil
}

// validateHTTP checks the HTTP flags and reads the bearer token: serving
// beyond loopback without one is refused.
func (o *serveOptions) validateHTTP() error {
	if o.httpTimeout < time.Millisecond || o.httpTimeout > time.Hour {
		return fmt.Errorf("--http-request-timeout must be between 1ms and 1h, got %v", o.httpTimeout)
	}
	if o.httpPathBudget < 1 {
		return fmt.Errorf("--http-path-budget must be positive, got %d", o.httpPathBudget)
	}
	if (o.httpTLSCert == "") != (o.httpTLSKey == "") {
		return errors.New("--http-tls-cert and --http-tls-key go together: give both, or neither")
	}
	env, fromEnv := os.LookupEnv("GRAPHTIDE_HTTP_TOKEN")
	switch {
	case fromEnv && o.httpTokenFile != "":
		return errors.New("the HTTP token comes from --http-token-file or GRAPHTIDE_HTTP_TOKEN: give one, not both")
	case fromEnv:
		o.httpToken = strings.TrimSpace(env)
	case o.httpTokenFile != "":
		b, err := os.ReadFile(o.httpTokenFile)
		if err != nil {
			return fmt.Errorf("--http-token-file: %w", err)
		}
		o.httpToken = strings.TrimSpace(string(b))
	}
	if (fromEnv || o.httpTokenFile != "") && len(o.httpToken) < minTokenLen {
		return fmt.Errorf("the HTTP token must be at least %d characters (e.g. openssl rand -hex 32), got %d", minTokenLen, len(o.httpToken))
	}
	if o.httpToken == "" && !api.IsLoopbackAddr(o.httpAddr) {
		return fmt.Errorf("--http-addr %s is not a loopback address: serving the API beyond this machine needs a bearer token (--http-token-file FILE or GRAPHTIDE_HTTP_TOKEN)", o.httpAddr)
	}
	return nil
}

// bindEnv sets every flag not given on the command line from
// GRAPHTIDE_<NAME> when that variable is set.
func bindEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		name := "GRAPHTIDE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Consume edge events from Kafka into a store and serve metrics",
		Long: `serve consumes edge events from Kafka topics into the store in --dir with
an exactly-once effect: the offsets each flush covers are recorded with the
flush, with the Kafka cluster ID and topic IDs they belong to, and
partitions resume from there after a restart or a crash.
Records that cannot be ingested go to the dead-letter topic.

The recorded offsets bind the store to its source: serve refuses to start
(exit 1) when the brokers are another cluster, or a topic was deleted and
re-created since, naming both IDs; --reset-source-position discards those
offsets instead. One data directory per consumer group: if the group
assigns this instance only some partitions of its topics, or partitions
whose history is in another store, serve pauses ingestion, /readyz says why,
and it resumes by itself once the assignment no longer conflicts.

Without --brokers, serve starts an embedded Kafka-compatible broker in the
process (franz-go's kfake), with its topics, offsets and IDs kept in
<dir>/embedded-broker across restarts, and prints its address, so that
'graphtide gen --brokers ADDR --topic edges' can feed it. The embedded broker
is for trying graphtide out only: use a real Kafka cluster in production.

Analytics (--analytic, repeatable, or an analytics: list in the config
file) run beside ingestion on views of the store; monitors' alerts go to
--alert-topic and are readable over HTTP.

A record that cannot be ingested goes to --dead-letter-topic, cut to fit
its max.message.bytes if need be (headers give the original size and
SHA-256). If its dead letter cannot be written, only its partition pauses
at it until it can; the others go on.

HTTP on --http-addr (default loopback only): the JSON API under /v1
(stats, degree, neighbors, paths, analytics and alerts; the OpenAPI
document at /v1/openapi.yaml), /metrics (Prometheus), /healthz, /readyz.
/readyz answers 503 with the reasons while partitions are not assigned
or would split the graph, no broker has answered for --ready-grace,
partitions were lost, a partition waits for its dead letter, or the store
has stalled for --ready-grace.
With a bearer token (--http-token-file, or GRAPHTIDE_HTTP_TOKEN), every /v1
request needs "Authorization: Bearer <token>"; /metrics, /healthz and
/readyz stay open. An address beyond loopback is refused without a token;
--http-tls-cert and --http-tls-key serve HTTPS.
SIGINT or SIGTERM: stop fetching, flush, commit offsets, exit 0.
Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_BROKERS, or in
the YAML file given by --config, keyed by flag name (brokers: [a:9092]).
Command line beats environment beats config file.`,
		Example: `  graphtide serve                               # embedded broker, store in ./graphtide-data
  graphtide serve --brokers 127.0.0.1:9092 --topics payments --format json --dir /var/lib/graphtide
  graphtide serve --brokers 10.0.0.1:9092 --http-addr 0.0.0.0:9464 --http-token-file /etc/graphtide/token \
      --http-tls-cert /etc/graphtide/tls.crt --http-tls-key /etc/graphtide/tls.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySettings(cmd.Flags()); err != nil {
				return err
			}
			if err := readConfigSection(cmd.Flags(), "analytics", &o.specs); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			o.inEdgesGiven = cmd.Flags().Changed("in-edges")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, &o, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)), cmd.OutOrStdout())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runServe runs graphtide serve with validated options until ctx ends.
func runServe(ctx context.Context, o *serveOptions, log *slog.Logger, out io.Writer) error {
	var inEdges *bool // as stored unless given
	if o.inEdgesGiven {
		inEdges = &o.inEdges
	}
	format, _ := decode.ParseFormat(o.format)
	tf := map[string]decode.Format{}
	for _, s := range o.topicFormats {
		t, f, _ := strings.Cut(s, "=")
		tf[t], _ = decode.ParseFormat(f)
	}
	srv, err := server.Open(ctx, server.Config{
		Dir: o.dir, InEdges: inEdges, Plan: o.plan,
		Kafka: o.kafka, EmbeddedPort: o.embeddedPort, Topics: o.topics, Group: o.group, Format: format, TopicFormats: tf,
		DeadLetterTopic: o.deadLetter, DeadLetterTimeout: o.dlTimeout, ReadyGrace: o.readyGrace,
		FlushInterval: o.flushInterval, Reset: o.reset, ResetSourcePosition: o.resetSource,
		Analytics: o.specs, AlertTopic: o.alertTopic,
		HTTP: server.HTTPConfig{Addr: o.httpAddr, Token: o.httpToken, TLSCert: o.httpTLSCert, TLSKey: o.httpTLSKey,
			RequestTimeout: o.httpTimeout, PathBudget: o.httpPathBudget},
		Logger: log, Out: out,
	})
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
