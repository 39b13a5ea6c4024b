package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/metrics"
	"github.com/graphtide/graphtide/internal/views"
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

// embeddedRetentionBytes is how much of each partition the embedded
// broker keeps.
const embeddedRetentionBytes = 32 << 20

func runServe(ctx context.Context, o *serveOptions, log *slog.Logger, out interface{ Write([]byte) (int, error) }) error {
	p := o.plan
	// The Go heap's share of the budget: the runtime collects garbage
	// harder near it instead of growing past it. A GOMEMLIMIT set in the
	// environment wins (the runtime read it at start).
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		prev := debug.SetMemoryLimit(p.GoLimit)
		defer debug.SetMemoryLimit(prev)
	}
	log.Info("memory budget", "total", budget.Format(p.Total), "memgraph", budget.Format(p.MemGraphBytes),
		"store", budget.Format(p.Store), "edge_log_ops", p.EdgeLogOps, "kafka_fetch", budget.Format(p.Fetch),
		"analytics", budget.Format(p.Analytics), "gomemlimit", budget.Format(p.GoLimit))
	// The data directory first: a damaged one is refused before anything
	// else starts.
	var inEdges *bool // as stored unless given
	if o.inEdgesGiven {
		inEdges = &o.inEdges
	}
	d, err := datadir.Open(o.dir, datadir.Options{Store: engine.Options{MemGraphBytes: o.plan.MemGraphBytes}, InEdges: inEdges, Create: true})
	if err != nil {
		return err
	}
	defer d.Close()
	store, dict := d.Store, d.Keys
	clientOpts, err := o.kafka.ClientOpts()
	if err != nil {
		return err
	}
	brokers := o.kafka.Brokers
	if len(brokers) == 0 {
		// The embedded broker keeps its topics, offsets, committed offsets
		// and IDs in <dir>/embedded-broker, so that a restart on the same
		// --dir finds the cluster and topics its store recorded (a store
		// refuses offsets of another cluster or topic). It starts once the
		// store and the key dictionary are open: their locks keep a second
		// serve away from the directory. Its cluster ID is
		// random when the directory is new, then read back from it. It
		// keeps the newest embeddedRetentionBytes of each partition (and an
		// hour at most), so that its disk stays bounded however long it is
		// fed.
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(o.embeddedPort), kfake.SeedTopics(4, o.topics...),
			kfake.DataDir(datadir.EmbeddedBrokerPath(o.dir)), kfake.ClusterID(newClusterID()),
			kfake.BrokerConfigs(map[string]string{
				"log.retention.bytes": strconv.Itoa(embeddedRetentionBytes),
				// Retention drops whole segments: keep them small.
				"log.segment.bytes": strconv.Itoa(embeddedRetentionBytes / 8),
				"log.retention.ms":  strconv.Itoa(int(time.Hour / time.Millisecond)),
			}))
		if err != nil {
			return fmt.Errorf("starting the embedded broker: %w", err)
		}
		defer c.Close()
		for _, t := range o.topics { // seeded only into a new directory
			if c.TopicInfo(t) == nil {
				if err := c.CreateTopic(t, 4, nil); err != nil {
					return fmt.Errorf("creating topic %s on the embedded broker: %w", t, err)
				}
			}
		}
		go func() {
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					c.ApplyRetention()
				}
			}
		}()
		brokers = c.ListenAddrs()
		log.Warn("no --brokers given: started an EMBEDDED broker for trying graphtide out (data in "+datadir.EmbeddedBrokerPath(o.dir)+", the newest 32 MiB per partition; not for production)", "address", brokers[0])
		fmt.Fprintf(out, "embedded broker listening on %s; feed it with: graphtide gen --brokers %s --topic %s\n", brokers[0], brokers[0], o.topics[0])
	}
	vm, err := views.NewManager(store, views.Config{LogCapacity: o.plan.EdgeLogOps})
	if err != nil {
		return err
	}
	defer vm.Close()

	reg := prometheus.NewRegistry()
	sm := metrics.NewServe(reg, store, vm)
	// kprom registers its metrics for one client: the consumer's.
	sinkOpts := clientOpts
	clientOpts = append(clientOpts[:len(clientOpts):len(clientOpts)], kgo.WithHooks(sm.Kafka))

	rcfg := analytics.RegistryConfig{Resolve: api.ResolveVertex(dict), Hooks: sm.Analytics.Hooks(), Logger: log,
		MemoryLimit: p.Analytics}
	if o.alertTopic != "" {
		sink, err := alerts.NewKafkaSink(ctx, brokers, o.alertTopic, log, sinkOpts...)
		if err != nil {
			return err
		}
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			sink.Close(fctx)
		}()
		rcfg.Sinks = append(rcfg.Sinks, sink)
	}
	areg := analytics.NewRegistry(vm, rcfg)
	defer areg.Close()
	sm.Analytics.Attach(areg)
	for _, sp := range o.specs {
		if _, err := areg.Register(sp); err != nil {
			return err
		}
		log.Info("analytic registered", "name", sp.Name, "type", sp.Type)
	}

	format, _ := decode.ParseFormat(o.format)
	tf := map[string]decode.Format{}
	for _, s := range o.topicFormats {
		t, f, _ := strings.Cut(s, "=")
		tf[t], _ = decode.ParseFormat(f)
	}
	in, err := ingest.New(store, dict, ingest.Config{
		Brokers: brokers, Topics: o.topics, Group: o.group, Format: format, TopicFormats: tf,
		DeadLetterTopic: o.deadLetter, DeadLetterTimeout: o.dlTimeout, ReadyGrace: o.readyGrace,
		FlushInterval: o.flushInterval, ResetPolicy: o.reset,
		ResetSourcePosition: o.resetSource, ClientOpts: clientOpts, Logger: log, Metrics: sm.Ingest,
		FetchMaxBytes: o.plan.FetchMaxBytes, MaxConcurrentFetches: o.plan.MaxConcurrentFetches,
	})
	if err != nil {
		return err
	}
	reg.MustRegister(metrics.NewMemoryCollector(metrics.MemorySources{Plan: p, Store: store, Views: vm,
		KafkaFetch: in.BufferedFetchBytes, Analytics: areg.MemoryBytes}))

	apiSrv, err := api.New(api.Config{
		Store: store, Views: vm, Analytics: areg, Dict: dict, Logger: log, Token: o.httpToken,
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		Ready:   in.Ready,
		Limits:  api.Limits{RequestTimeout: o.httpTimeout, PathBudget: o.httpPathBudget},
	})
	if err != nil {
		return err
	}
	srv := apiSrv.HTTPServer()
	if o.httpTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.httpTLSCert, o.httpTLSKey)
		if err != nil {
			return fmt.Errorf("--http-tls-cert, --http-tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	} else if !api.IsLoopbackAddr(o.httpAddr) {
		log.Warn("serving the HTTP API beyond loopback without TLS: the bearer token crosses the network in clear (--http-tls-cert, --http-tls-key)")
	}
	ln, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return fmt.Errorf("--http-addr: %w", err)
	}
	useTLS := srv.TLSConfig != nil // Serve sets up the config: read it before
	go func() {
		var err error
		if useTLS {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	defer srv.Close()
	tlsNote := ""
	if useTLS {
		tlsNote = " (TLS)"
	}
	log.Info("serving", "http", ln.Addr().String(), "tls", useTLS, "token", o.httpToken != "", "brokers", strings.Join(brokers, ","), "topics", strings.Join(o.topics, ","), "dir", o.dir)
	fmt.Fprintf(out, "http listening on %s%s\n", ln.Addr(), tlsNote)

	if err := in.Run(ctx); err != nil {
		return err
	}
	// Requests in flight finish (each within its deadline) before the
	// analytics, the views and the store go.
	sctx, cancel := context.WithTimeout(context.Background(), o.httpTimeout+time.Second)
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("http requests still running at shutdown were cut off", "err", err)
	}
	cancel()
	areg.Close() // analytics stop before the views and the store go
	if err := store.Flush(); err != nil {
		return err
	}
	log.Info("stopped cleanly: everything ingested is flushed and committed")
	return nil
}

// newClusterID returns a random cluster ID in Kafka's form (16 random
// bytes, base64url without padding), for a new embedded broker.
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
