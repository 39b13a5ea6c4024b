package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
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
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/metrics"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// resolveVertex reads a vertex given on the command line or in a request:
// a decimal id, or a string key already known to the dictionary (prefix
// "key:" forces a key that looks like a number).
func resolveVertex(dict *keydict.Dict) func(string) (uint64, error) {
	return func(s string) (uint64, error) {
		if k, ok := strings.CutPrefix(s, "key:"); ok {
			s = k
		} else if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			if v > engine.MaxVertex {
				return 0, fmt.Errorf("vertex id %d is above the largest allowed, %d", v, engine.MaxVertex)
			}
			return v, nil
		}
		if dict != nil {
			if id, ok := dict.Lookup(s); ok {
				return id, nil
			}
		}
		return 0, fmt.Errorf("vertex %q is neither an id nor a known key", s)
	}
}

// serveOptions are the flags of "graphtide serve"; every flag can also be
// set by the environment variable GRAPHTIDE_<FLAG> (upper case, '-' -> '_').
type serveOptions struct {
	dir           string
	brokers       []string
	topics        []string
	group         string
	format        string
	topicFormats  []string
	deadLetter    string
	flushInterval time.Duration
	reset         string
	httpAddr      string
	memgraphMiB   int
	inEdges       bool
	embeddedPort  int
	tls           bool
	tlsCA         string
	saslMech      string
	saslUser      string
	saslPassword  string
	analytics     []string // compact specs from --analytic
	alertTopic    string
	logCapacity   int
	specs         []analytics.Spec // from --analytic and the config file's analytics section
}

func (o *serveOptions) AddFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML file of settings keyed by flag name (flags and GRAPHTIDE_* variables take precedence)")
	fs.StringVar(&o.dir, "dir", "graphtide-data", "store directory (created if missing)")
	fs.StringSliceVar(&o.brokers, "brokers", nil, "Kafka bootstrap brokers, comma separated; without it an embedded broker is started (for trying graphtide out only)")
	fs.StringSliceVar(&o.topics, "topics", []string{"edges"}, "topics to consume")
	fs.StringVar(&o.group, "group", "graphtide", "consumer group")
	fs.StringVar(&o.format, "format", "binary", "record format of the topics: binary, json or text")
	fs.StringSliceVar(&o.topicFormats, "topic-format", nil, "per-topic format as topic=format (overrides --format)")
	fs.StringVar(&o.deadLetter, "dead-letter-topic", "graphtide-dead-letters", "topic that receives records that cannot be ingested")
	fs.DurationVar(&o.flushInterval, "flush-interval", 2*time.Second, "make ingested data durable at least this often (bounds replay after a crash)")
	fs.StringVar(&o.reset, "reset", "earliest", "where to start partitions with no recorded or committed offset: earliest or latest")
	fs.StringVar(&o.httpAddr, "http-addr", "127.0.0.1:9464", "address of /metrics, /healthz and /readyz")
	fs.IntVar(&o.memgraphMiB, "memgraph-mib", 64, "size of one MemGraph in MiB (two alternate)")
	fs.BoolVar(&o.inEdges, "in-edges", false, "also keep in-edges (fixed when the store is created)")
	fs.IntVar(&o.embeddedPort, "embedded-port", 9092, "port of the embedded broker when --brokers is not given (0 = any free port)")
	fs.BoolVar(&o.tls, "tls", false, "connect to the brokers with TLS")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "PEM file of the CA that signs the brokers' certificates (default: system roots)")
	fs.StringVar(&o.saslMech, "sasl-mechanism", "", "SASL mechanism: plain, scram-sha-256 or scram-sha-512")
	fs.StringVar(&o.saslUser, "sasl-user", "", "SASL user")
	fs.StringVar(&o.saslPassword, "sasl-password", "", "SASL password (prefer GRAPHTIDE_SASL_PASSWORD)")
	fs.StringArrayVar(&o.analytics, "analytic", nil, "register an analytic: type=bfs|wcc|pagerank|sssp|degree|fanin|fanout|fraud,name=..,root=..,... (repeatable; or the config file's analytics: list)")
	fs.StringVar(&o.alertTopic, "alert-topic", "graphtide-alerts", "Kafka topic that receives the monitors' alerts as JSON (empty: none)")
	fs.IntVar(&o.logCapacity, "view-log-capacity", 1<<20, "operations the edge log keeps for stream views and analytics (a consumer further behind resyncs)")
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
	if o.memgraphMiB < 1 || o.memgraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536, got %d", o.memgraphMiB)
	}
	switch o.saslMech {
	case "", "plain", "scram-sha-256", "scram-sha-512":
	default:
		return fmt.Errorf("--sasl-mechanism must be one of: plain, scram-sha-256, scram-sha-512; got %q", o.saslMech)
	}
	if o.saslMech != "" && o.saslUser == "" {
		return errors.New("--sasl-user is required with --sasl-mechanism")
	}
	if o.embeddedPort < 0 || o.embeddedPort > 65535 {
		return fmt.Errorf("--embedded-port must be between 0 and 65535, got %d", o.embeddedPort)
	}
	if o.logCapacity < 1 || o.logCapacity > 1<<30 {
		return fmt.Errorf("--view-log-capacity must be between 1 and %d, got %d", 1<<30, o.logCapacity)
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

// clientOpts turns the TLS and SASL flags into franz-go options.
func (o *serveOptions) clientOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if o.tls {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.tlsCA != "" {
			pem, err := os.ReadFile(o.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca: %s holds no PEM certificate", o.tlsCA)
			}
			cfg.RootCAs = pool
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch o.saslMech {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: o.saslUser, Pass: o.saslPassword}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: o.saslUser, Pass: o.saslPassword}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: o.saslUser, Pass: o.saslPassword}.AsSha512Mechanism()))
	}
	return opts, nil
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
flush, and partitions resume from there after a restart or a crash.
Records that cannot be ingested go to the dead-letter topic.

Without --brokers, serve starts an embedded Kafka-compatible broker in the
process (franz-go's kfake, data in memory) and prints its address, so that
'graphtide gen --brokers ADDR --topic edges' can feed it. The embedded broker
is for trying graphtide out only: use a real Kafka cluster in production.

Analytics (--analytic, repeatable, or an analytics: list in the config
file) run beside ingestion on views of the store; monitors' alerts go to
--alert-topic and are readable over HTTP.

HTTP on --http-addr: /metrics (Prometheus), /healthz, /readyz.
SIGINT or SIGTERM: stop fetching, flush, commit offsets, exit 0.
Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_BROKERS, or in
the YAML file given by --config, keyed by flag name (brokers: [a:9092]).
Command line beats environment beats config file.`,
		Example: `  graphtide serve                               # embedded broker, store in ./graphtide-data
  graphtide serve --brokers 127.0.0.1:9092 --topics payments --format json --dir /var/lib/graphtide`,
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
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, &o, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)), cmd.OutOrStdout())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runServe(ctx context.Context, o *serveOptions, log *slog.Logger, out interface{ Write([]byte) (int, error) }) error {
	brokers := o.brokers
	if len(brokers) == 0 {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(o.embeddedPort), kfake.SeedTopics(4, o.topics...))
		if err != nil {
			return fmt.Errorf("starting the embedded broker: %w", err)
		}
		defer c.Close()
		brokers = c.ListenAddrs()
		log.Warn("no --brokers given: started an EMBEDDED broker for trying graphtide out (in memory, not for production)", "address", brokers[0])
		fmt.Fprintf(out, "embedded broker listening on %s; feed it with: graphtide gen --brokers %s --topic %s\n", brokers[0], brokers[0], o.topics[0])
	}
	clientOpts, err := o.clientOpts()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	store, err := engine.Open(filepath.Join(o.dir, "store"), &engine.Options{MemGraphBytes: int64(o.memgraphMiB) << 20, InEdges: o.inEdges})
	if err != nil {
		return err
	}
	defer store.Close()
	dict, err := keydict.Open(filepath.Join(o.dir, "keys.dict"))
	if err != nil {
		return err
	}
	defer dict.Close()
	vm, err := views.NewManager(store, views.Config{LogCapacity: o.logCapacity})
	if err != nil {
		return err
	}
	defer vm.Close()

	reg := prometheus.NewRegistry()
	sm := metrics.NewServe(reg, store, vm)
	// kprom registers its metrics for one client: the consumer's.
	sinkOpts := clientOpts
	clientOpts = append(clientOpts[:len(clientOpts):len(clientOpts)], kgo.WithHooks(sm.Kafka))

	rcfg := analytics.RegistryConfig{Resolve: resolveVertex(dict), Hooks: sm.Analytics.Hooks(), Logger: log}
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
		DeadLetterTopic: o.deadLetter, FlushInterval: o.flushInterval, ResetPolicy: o.reset,
		ClientOpts: clientOpts, Logger: log, Metrics: sm.Ingest,
	})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if m, err := store.Metrics(); err != nil || m.BackgroundErrors > 0 {
			http.Error(w, "store failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !in.Ready() {
			http.Error(w, "not ready: no partitions assigned yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return fmt.Errorf("--http-addr: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	log.Info("serving", "http", ln.Addr().String(), "brokers", strings.Join(brokers, ","), "topics", strings.Join(o.topics, ","), "dir", o.dir)
	fmt.Fprintf(out, "http listening on %s\n", ln.Addr())

	if err := in.Run(ctx); err != nil {
		return err
	}
	areg.Close() // analytics stop before the views and the store go
	if err := store.Flush(); err != nil {
		return err
	}
	log.Info("stopped cleanly: everything ingested is flushed and committed")
	return nil
}
