// Package server is graphtide serve as a library: Open builds, in order,
// the data directory (store and key dictionary), the embedded broker when
// no brokers are given, the views, the metrics, the analytics' alert sink,
// the writes producer, the HTTP API (only the probes answer until Open
// returns), the analytics (restored from their checkpoint, waiting for the
// brokers if need be), and the ingester; Run ingests until its context
// ends and then shuts down in the order that loses nothing; Close releases
// whatever Open acquired.
//
// What it promises: a damaged data directory is refused before anything
// else starts; Open either returns a running server or releases what it
// acquired; the analytics' state in a usable checkpoint is never dropped
// because the brokers do not answer (Open waits for them, and fails past
// Config.CheckpointRestoreWait); Run returns nil only after everything
// ingested is flushed and its offsets committed; requests in flight
// finish (each within its deadline) before the analytics, the views and
// the store go.
package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/alerts"
	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/export"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/ingest/bulk"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/metrics"
	"github.com/graphtide/graphtide/internal/ownership"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Config is a validated serve configuration (cmd/graphtide builds it from
// flags, the environment and the config file).
type Config struct {
	Dir     string
	InEdges *bool // nil: an existing store as it was created, a new one as newStoreInEdges says
	Plan    budget.Plan
	// HistorySeqs keeps the store readable as of each of the last this
	// many seqs, and HistoryRetention as of every seq that was newest
	// within that long (a seq is kept while either keeps it); both 0: no
	// history. With history, a time index (history.idx) maps times to
	// seqs for as_of_time.
	HistorySeqs      uint64
	HistoryRetention time.Duration

	// Kafka: with no Kafka.Brokers an embedded broker is started on
	// EmbeddedPort (0: any free port), keeping its data in the directory.
	Kafka        kafkaconn.Options
	EmbeddedPort int
	Topics       []string
	// Graph names the graph the store holds (package graphid), which its
	// replicas share: "" takes the one the store recorded, else derives
	// one from Topics. Derive says which of Group, WritesTopic,
	// AlertTopic and DeadLetterTopic default from it (the flags not
	// given); see graph.go.
	Graph             string
	Derive            DeriveNames
	Group             string
	GroupInstanceID   string // static group membership ("": dynamic)
	Format            decode.Format
	TopicFormats      map[string]decode.Format
	Mappings          map[string]decode.Mapping // topics read through a field mapping (JSON)
	DeadLetterTopic   string
	DeadLetterTimeout time.Duration
	ReadyGrace        time.Duration
	ReadyMaxLag       int64 // records behind the brokers before /readyz says so; 0: no limit
	FlushInterval     time.Duration
	// CheckpointInterval: how often the graph analytics are checkpointed
	// (and at shutdown), 0 never; see checkpoint.go.
	CheckpointInterval  time.Duration
	Reset               string
	ResetSourcePosition bool

	// AcceptLostRecords: a partition whose log lost records the store
	// needs starts at its log start (see ingest.Config.AcceptLostRecords).
	AcceptLostRecords bool
	// CheckpointRestoreWait bounds how long Open waits for the brokers to
	// check the analytics' checkpoint (0: DefaultCheckpointRestoreWait);
	// past it Open fails rather than drop the analytics' state.
	CheckpointRestoreWait time.Duration

	// WritesTopic is graphtide's own writes topic, which POST /v1/batches
	// produces to and ingestion consumes beside Topics ("": no writes);
	// ExportDir is where POST /v1/exports writes its parts, each in a
	// directory the request names ("": exports are off).
	ExportDir string
	// WritesRetention is how long an idempotency key is remembered
	// (default 24h).
	WritesTopic     string
	WritesRetention time.Duration

	Analytics  []analytics.Spec // registered at Open, before anything is ingested
	AlertTopic string           // "" = alerts are not produced to Kafka
	// Owners, when set, is partitioned mode (serve --owners,
	// --own-partitions): the instance ingests its own partitions of every
	// topic (Owners.Own) and no others, routes requests about other
	// vertices to their owners, and refuses graph-wide analytics and
	// queries. Adopt are owned partitions to take over from the start of
	// their log although the group committed offsets for them (the
	// hand-over; see ingest.Config.Adopt).
	Owners *ownership.Map
	Adopt  []int32
	// AlertHistory is how many of the newest alerts GET /v1/alerts keeps,
	// across restarts (<dir>/alerts.log; 0: alertlog.DefaultKeep).
	AlertHistory int
	// AlertSessionTimeout: how long a replica producing the alerts that
	// died silently holds production before another takes over (the
	// election group's session timeout; 0: 10s). See package alerts.
	AlertSessionTimeout time.Duration
	// AlertLeader is ignored (it named the one replica that produced the
	// alerts, before production failed over by itself): a WARN says so.
	AlertLeader string

	HTTP HTTPConfig

	Logger *slog.Logger // default: discard
	Out    io.Writer    // one-line notices for whoever started serve (default: discard)
	// Program is how serve was invoked (os.Args[0], e.g. bin/graphtide):
	// the commands the notices suggest start with it (default: graphtide).
	Program string
	// Registry, when set, is what /metrics serves (tests pass a pedantic
	// one); default: a new one. Registerer, when set, is where the metrics
	// are registered (tests wrap Registry to see every registration);
	// default: Registry.
	Registry   *prometheus.Registry
	Registerer prometheus.Registerer
}

// HTTPConfig is the HTTP API's part of Config.
type HTTPConfig struct {
	Addr             string
	Tokens           []api.Token // none: no bearer token needed (then Addr must be loopback; cmd checks)
	TLSCert, TLSKey  string      // PEM files; both or neither
	RequestTimeout   time.Duration
	PathBudget       int64
	DisableListening bool // tests that need no HTTP
}

// embeddedRetentionBytes is how much of each partition the embedded
// broker keeps.
const embeddedRetentionBytes = 32 << 20

// Server is a running graphtide serve.
type Server struct {
	cfg     Config
	log     *slog.Logger
	dir     *datadir.Dir
	broker  *kfake.Cluster
	brokers []string
	vm      *views.Manager
	reg     *prometheus.Registry
	metrics *metrics.Serve
	areg    *analytics.Registry
	stored  *registered // the analytics registered over the API
	sink    *alerts.KafkaSink
	in      *ingest.Ingester
	writer  *writer      // nil without a writes topic
	exports *export.Jobs // nil without --export-dir
	// checkpointFloor is the source position of the analytics'
	// checkpoint found at Open (nil: none).
	checkpointFloor []byte
	http            *http.Server
	addr            string
	// start says why Open has not finished (start.go).
	start startState

	stopBackground context.CancelFunc
	closers        []func() // in the order Open acquired them; Close runs them backwards
	closed         bool
}

// Open builds a server; it starts the embedded broker and the HTTP
// listener, and registers the analytics, but ingests nothing until Run.
// While it restores the analytics' checkpoint it may wait for the brokers
// (/readyz says so), at most Config.CheckpointRestoreWait.
func Open(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.start.set(errOpening)
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	bctx, cancel := context.WithCancel(context.Background())
	s.stopBackground = cancel
	s.closers = append(s.closers, cancel)

	p := cfg.Plan
	s.log.Info("memory budget", "total", budget.Format(p.Total), "memgraph", budget.Format(p.MemGraphBytes),
		"store", budget.Format(p.Store), "edge_log_ops", p.EdgeLogOps, "kafka_fetch", budget.Format(p.Fetch),
		"analytics", budget.Format(p.Analytics), "alerts", budget.Format(p.Alerts), "headroom", budget.Format(p.Headroom), "gomemlimit", budget.Format(p.GoLimit))
	// The alerts kept for reading: the plan's share (a Config without a
	// plan, as some tests make, keeps the registry's default).
	alertBytes := cmp.Or(p.Alerts, analytics.DefaultAlertRingBytes)
	// The data directory first: a damaged one is refused before anything
	// else starts.
	// History by seqs alone is the core's to keep (history_seqs); by time
	// the floor is set here, from the time index, every second.
	keep := cfg.HistorySeqs > 0 || cfg.HistoryRetention > 0
	coreSeqs := cfg.HistorySeqs
	if cfg.HistoryRetention > 0 {
		coreSeqs = 0
	}
	d, err := datadir.Open(cfg.Dir, datadir.Options{Store: engine.Options{MemGraphBytes: p.MemGraphBytes,
		KeepHistory: keep, HistorySeqs: coreSeqs, InEdges: newStoreInEdges(cfg)}, InEdges: cfg.InEdges, Create: true, Times: keep, Writes: wantsWrites(cfg), Registered: true,
		Alerts: true, AlertsKeep: cfg.AlertHistory, AlertsReading: alertBytes})
	if err != nil {
		return nil, err
	}
	s.dir = d
	s.closers = append(s.closers, func() { d.Close() })
	// The types' aggregates before anything is applied (aggregates.go).
	aggs, err := MappingAggregates(cfg.Mappings)
	if err != nil {
		return nil, err
	}
	typeAggs, err := bulk.ResolveAggregates(aggs, d.Types)
	if err != nil {
		return nil, err
	}
	accumulate, err := bulk.ConfigureAggregates(d.Store, typeAggs)
	if err != nil {
		return nil, err
	}
	if err := s.resolveGraph(); err != nil {
		return nil, err
	}
	cfg = s.cfg
	if keep {
		s.startHistory(bctx, cfg)
	}
	clientOpts, err := cfg.Kafka.ClientOpts()
	if err != nil {
		return nil, err
	}
	s.brokers = cfg.Kafka.Brokers
	if len(s.brokers) == 0 {
		if err := s.startEmbeddedBroker(bctx); err != nil {
			return nil, err
		}
	} else if err := checkKafkaAccess(ctx, s.brokers, clientOpts); err != nil {
		return nil, err
	}
	if s.vm, err = views.NewManager(d.Store, views.Config{LogCapacity: p.EdgeLogOps}); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, s.vm.Close)

	s.reg = cfg.Registry
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	regr := cfg.Registerer
	if regr == nil {
		regr = s.reg
	}
	s.metrics = metrics.NewServe(regr, d.Store, s.vm)
	// kprom registers its metrics for one client: the consumer's, which
	// produces only dead letters.
	s.metrics.Kafka.Topics(s.topics(), []string{cfg.DeadLetterTopic})
	sinkOpts := clientOpts
	clientOpts = append(clientOpts[:len(clientOpts):len(clientOpts)], kgo.WithHooks(s.metrics.Kafka))
	if cfg.GroupInstanceID != "" && cfg.Owners == nil { // partitioned mode joins no group
		clientOpts = append(clientOpts, kgo.InstanceID(cfg.GroupInstanceID))
	}

	topics := s.topics() // the ingester's, whose indexes the record references use
	// Roots resolve without assigning ids: an analytic of the API whose
	// root no edge has named is refused (404), and one it stored is not
	// registered again (a WARN says why). Only the configuration's roots,
	// the operator's, are assigned (api.AssignRoots, below).
	rcfg := analytics.RegistryConfig{Resolve: api.ResolveVertex(d.Keys), Types: typedict.Resolver(d.Types), Hooks: s.metrics.Analytics.Hooks(), Logger: s.log,
		History: d.Alerts, AlertRing: cfg.AlertHistory, AlertRingBytes: alertBytes, Graph: cfg.Graph,
		MemoryLimit: p.Analytics, Source: func(ref uint64) (analytics.AlertSource, bool) {
			r, ok := ingest.SourceOf(topics, ref)
			return analytics.AlertSource{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, ok
		}, Names: d.Keys.Name, TypeName: d.Types.Name, VertexLocal: cfg.Owners != nil}
	if cfg.AlertLeader != "" {
		s.log.Warn("--alert-leader is ignored: alert production fails over by itself (every replica takes part; Kafka's group of alert producers decides which one produces, see --alert-failover-timeout)",
			"alert_leader", cfg.AlertLeader)
	}
	if cfg.AlertTopic != "" {
		acfg := alerts.Config{Brokers: s.brokers, Topic: cfg.AlertTopic, Graph: cfg.Graph, Opts: sinkOpts, Logger: s.log,
			SessionTimeout: cfg.AlertSessionTimeout}
		if cfg.Owners != nil {
			acfg.Shard = ownership.FormatSet(cfg.Owners.Own())
		}
		sink, err := alerts.NewKafkaSink(ctx, acfg)
		if err != nil {
			return nil, err
		}
		sink.SetVertexIDs(d.Keys.SourceID)
		s.sink = sink
		registerSinkMetrics(regr, sink)
		s.closers = append(s.closers, func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			sink.Close(fctx)
		})
		rcfg.Sinks = append(rcfg.Sinks, sink)
	}
	s.areg = analytics.NewRegistry(s.vm, rcfg)
	s.closers = append(s.closers, s.areg.Close)
	s.metrics.Analytics.Attach(s.areg)
	if s.stored, err = loadRegistered(d); err != nil {
		return nil, err
	}
	if err := api.AssignRoots(d.Keys, cfg.Analytics); err != nil {
		return nil, err
	}
	specs := s.stored.startList(cfg.Analytics, s.log)
	floor, err := d.Store.SourcePosition()
	if err != nil {
		return nil, err
	}
	var wc *ingest.WritesConfig
	if cfg.WritesTopic != "" {
		if s.writer, err = s.newWriter(ctx, sinkOpts); err != nil {
			return nil, err
		}
		s.closers = append(s.closers, s.writer.close)
		wc = &ingest.WritesConfig{Topic: cfg.WritesTopic, Log: d.Writes, Waiters: s.writer.waiters, Retention: cfg.WritesRetention}
	}
	// The API listens before the restore, which may wait for the brokers:
	// until Open returns only the probes answer (start.go).
	if !cfg.HTTP.DisableListening {
		if err := s.listen(); err != nil {
			return nil, err
		}
	}
	restored, replay, err := s.restoreAnalytics(ctx, sinkOpts, specs)
	if err != nil {
		return nil, err
	}
	if len(restored) > 0 && len(s.checkpointFloor) > 0 {
		floor = s.checkpointFloor // the restored analytics raise again what follows it
	}
	if s.sink != nil {
		if err := s.sink.Start(floor); err != nil {
			return nil, err
		}
	}
	for i, sp := range specs {
		if err := sp.Validate(); err == nil && restored[sp.Name] {
			continue
		}
		if _, err := s.areg.Register(sp); err != nil {
			if i < len(cfg.Analytics) {
				// The configuration wins: analytics of the API restored from
				// the checkpoint before it may hold the memory it needs.
				if err = s.makeRoomFor(sp, specs[len(cfg.Analytics):], restored, err); err != nil {
					return nil, err
				}
				s.log.Info("analytic registered", "name", sp.Name, "type", sp.Type, "from", "configuration")
				continue
			}
			s.log.Warn("an analytic registered over the API could not be registered again (it stays stored; DELETE it to remove it)", "name", sp.Name, "err", err)
			continue
		}
		from := "configuration"
		if i >= len(cfg.Analytics) {
			from = "registered over the API"
		}
		s.log.Info("analytic registered", "name", sp.Name, "type", sp.Type, "from", from)
	}

	var own []int32
	var count int32
	if m := cfg.Owners; m != nil {
		own, count = m.Own(), m.Count
	}
	if s.in, err = ingest.New(d.Store, d.Keys, ingest.Config{Accumulate: accumulate,
		Brokers: s.brokers, Topics: s.topics(), Group: cfg.Group, Graph: cfg.Graph, Writes: wc, Format: cfg.Format, TopicFormats: cfg.TopicFormats, Mappings: cfg.Mappings, Types: d.Types,
		DeadLetterTopic: cfg.DeadLetterTopic, DeadLetterTimeout: cfg.DeadLetterTimeout, ReadyGrace: cfg.ReadyGrace, ReadyMaxLag: cfg.ReadyMaxLag,
		FlushInterval: cfg.FlushInterval, ResetPolicy: cfg.Reset,
		ResetSourcePosition: cfg.ResetSourcePosition, AcceptLostRecords: cfg.AcceptLostRecords, ClientOpts: clientOpts, Logger: s.log, Metrics: s.metrics.Ingest,
		FetchMaxBytes: p.FetchMaxBytes, MaxConcurrentFetches: p.MaxConcurrentFetches,
		ReplayFrom: replay, CheckpointFloor: s.checkpointFloor, CheckpointInterval: cfg.CheckpointInterval, Checkpoint: s.checkpoint,
		Own: own, Adopt: cfg.Adopt, Partitions: count,
	}); err != nil {
		return nil, err
	}
	ms := metrics.MemorySources{Plan: p, Store: d.Store, Views: s.vm,
		KafkaFetch: s.in.BufferedFetchBytes, Analytics: s.areg.MemoryBytes, Alerts: s.areg.AlertBytes, Keys: d.Keys.MemoryBytes}
	if d.Writes != nil {
		ms.WritesLog = d.Writes.MemoryBytes
	}
	regr.MustRegister(metrics.NewMemoryCollector(ms))
	s.start.set(nil) // after s.in is set: see Server.ready
	return s, nil
}

// makeRoomFor registers sp, a configured analytic whose registration
// failed with err, after stopping the analytics of the API that were
// restored from the checkpoint (the configuration wins: they stay stored,
// and a WARN says why they do not run) while it fails for want of memory.
// It returns err when that is not why, or when they are all stopped.
func (s *Server) makeRoomFor(sp analytics.Spec, stored []analytics.Spec, restored map[string]bool, err error) error {
	for _, x := range stored {
		if !errors.Is(err, analytics.ErrMemory) {
			return err
		}
		if !restored[x.Name] {
			continue
		}
		if uerr := s.areg.Unregister(x.Name); uerr != nil {
			return errors.Join(err, uerr)
		}
		restored[x.Name] = false
		s.log.Warn("an analytic registered over the API is not started: the configuration's analytic needs its memory (it stays stored; DELETE it, or raise --memory-budget)",
			"name", x.Name, "for", sp.Name)
		if _, err = s.areg.Register(sp); err == nil {
			return nil
		}
	}
	return err
}

// topics are the topics ingestion consumes: Config.Topics and the
// writes topic.
func (s *Server) topics() []string {
	return append(slices.Clone(s.cfg.Topics), s.writesTopics()...)
}

// writesTopics is the writes topic, if any, as a list.
func (s *Server) writesTopics() []string {
	if s.cfg.WritesTopic == "" {
		return nil
	}
	return []string{s.cfg.WritesTopic}
}

// startEmbeddedBroker starts franz-go's in-process broker. It keeps its
// topics, offsets, committed offsets and IDs in <dir>/embedded-broker, so
// that a restart on the same directory finds the cluster and topics its
// store recorded (a store refuses offsets of another cluster or topic). It
// starts once the store and the key dictionary are open: their locks keep
// a second serve away from the directory. Its cluster ID is random when
// the directory is new, then read back from it. It keeps the newest
// embeddedRetentionBytes of each partition (and an hour at most), so that
// its disk stays bounded however long it is fed.
func (s *Server) startEmbeddedBroker(ctx context.Context) error {
	cfg := s.cfg
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(cfg.EmbeddedPort), kfake.SeedTopics(4, cfg.Topics...), kfake.SeedTopics(1, s.writesTopics()...),
		kfake.DataDir(datadir.EmbeddedBrokerPath(cfg.Dir)), kfake.ClusterID(newClusterID()),
		kfake.BrokerConfigs(map[string]string{
			"log.retention.bytes": strconv.Itoa(embeddedRetentionBytes),
			// Retention drops whole segments: keep them small.
			"log.segment.bytes": strconv.Itoa(embeddedRetentionBytes / 8),
			"log.retention.ms":  strconv.Itoa(int(time.Hour / time.Millisecond)),
		}))
	if err != nil {
		return fmt.Errorf("starting the embedded broker: %w", err)
	}
	s.broker = c
	s.closers = append(s.closers, c.Close)
	for _, t := range s.topics() { // seeded only into a new directory
		if c.TopicInfo(t) == nil {
			parts := int32(4)
			if t == cfg.WritesTopic {
				parts = 1
			}
			if err := c.CreateTopic(t, parts, nil); err != nil {
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
	s.brokers = c.ListenAddrs()
	s.log.Warn("no --brokers given: started an EMBEDDED broker for trying graphtide out (data in "+datadir.EmbeddedBrokerPath(cfg.Dir)+", the newest 32 MiB per partition; not for production)", "address", s.brokers[0])
	fmt.Fprintf(cfg.Out, "embedded broker listening on %s; feed it with: %s\n", s.brokers[0], feedCommand(cfg.program(), s.brokers[0], cfg.Topics[0]))
	return nil
}

// listen starts the HTTP API.
func (s *Server) listen() error {
	h := s.cfg.HTTP
	var wr api.Writer
	if s.writer != nil {
		wr = s.writer
	}
	acfg := api.Config{
		Writes: wr, Store: s.dir.Store, Views: s.vm, Aggregates: true, Analytics: s.areg, Persist: s.stored, Dict: s.dir.Keys, Types: s.dir.Types, Times: s.dir.Times, Logger: s.log, Tokens: h.Tokens,
		Graph:   s.cfg.Graph,
		Metrics: promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}),
		Ready:   s.ready,
		Behind:  s.behind,
		Limits:  api.Limits{RequestTimeout: h.RequestTimeout, PathBudget: h.PathBudget},
	}
	if s.cfg.Owners != nil { // a nil *ownership.Map in Route would not be a nil Router
		acfg.Route = s.cfg.Owners
	}
	if s.cfg.ExportDir != "" {
		s.exports = export.NewJobs(s.cfg.ExportDir, s.cfg.Graph, s.exportSnapshot)
		s.closers = append(s.closers, s.exports.Close)
		acfg.Exports = s.exports
	}
	apiSrv, err := api.New(acfg)
	if err != nil {
		return err
	}
	srv := apiSrv.HTTPServer()
	srv.Handler = s.startGate(srv.Handler)
	if h.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(h.TLSCert, h.TLSKey)
		if err != nil {
			return fmt.Errorf("--http-tls-cert, --http-tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	} else if !api.IsLoopbackAddr(h.Addr) {
		s.log.Warn("serving the HTTP API beyond loopback without TLS: the bearer token crosses the network in clear (--http-tls-cert, --http-tls-key)")
	}
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		return fmt.Errorf("--http-addr: %w", err)
	}
	s.http, s.addr = srv, ln.Addr().String()
	s.closers = append(s.closers, func() { srv.Close() })
	useTLS := srv.TLSConfig != nil // Serve sets up the config: read it before
	go func() {
		var err error
		if useTLS {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
		}
	}()
	tlsNote := ""
	if useTLS {
		tlsNote = " (TLS)"
	}
	s.log.Info("serving", "http", s.addr, "tls", useTLS, "tokens", len(h.Tokens), "brokers", strings.Join(s.brokers, ","),
		"topics", strings.Join(s.cfg.Topics, ","), "dir", s.cfg.Dir)
	fmt.Fprintf(s.cfg.Out, "http listening on %s%s\n%s", s.addr, tlsNote, queryHint(s.cfg.program(), s.addr, useTLS, len(h.Tokens) > 0, s.broker != nil))
	return nil
}

// Run ingests until ctx ends, then stops in order: ingestion flushes and
// commits; requests in flight finish; the analytics stop; the store
// flushes. It returns nil only when everything ingested is durable and
// committed. It closes the server.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	// The Go heap's share of the budget: the runtime collects garbage
	// harder near it instead of growing past it. A GOMEMLIMIT set in the
	// environment wins (the runtime read it at start).
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && s.cfg.Plan.GoLimit > 0 {
		prev := debug.SetMemoryLimit(s.cfg.Plan.GoLimit)
		defer debug.SetMemoryLimit(prev)
	}
	if err := s.in.Run(ctx); err != nil {
		if mm := (*ingest.SourceMismatchError)(nil); errors.As(err, &mm) {
			mm.Dir = s.cfg.Dir
		}
		return err
	}
	if s.http != nil {
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.HTTP.RequestTimeout+time.Second)
		if err := s.http.Shutdown(sctx); err != nil {
			s.log.Warn("http requests still running at shutdown were cut off", "err", err)
		}
		cancel()
	}
	if s.cfg.CheckpointInterval > 0 {
		// Nothing is applied any more: checkpoint where ingestion stopped,
		// so that the next start resumes the analytics. Not while the
		// replay for a restored checkpoint is unfinished: the store holds
		// records this process has not applied again, which the restored
		// analytics and topology never saw, and a checkpoint at the
		// store's position would stamp them as having seen them (they
		// would resume wrong). The checkpoint on disk, the one restored,
		// stays the newest, and the next start replays from it again.
		if raw, err := s.dir.Store.SourcePosition(); err == nil && len(raw) > 0 {
			if t, p, behind := s.replayUnfinished(raw); behind {
				s.log.Info("no shutdown checkpoint: the replay for the analytics' checkpoint had not reached the store's position; the next start replays from the checkpoint on disk again",
					"topic", t, "partition", p)
			} else if err := s.checkpoint(context.Background(), raw); err != nil {
				if de := (*analytics.DeferredError)(nil); errors.As(err, &de) {
					s.log.Warn("no shutdown checkpoint: the one on disk is kept; the next start replays from it", "err", err)
				} else {
					s.log.Warn("the shutdown checkpoint failed; the analytics recompute at the next start", "err", err)
				}
			}
		}
	}
	s.areg.Close() // analytics stop before the views and the store go
	if err := s.dir.Store.Flush(); err != nil {
		return err
	}
	s.log.Info("stopped cleanly: everything ingested is flushed and committed")
	return nil
}

// Close releases everything Open acquired, in reverse order. Safe to call
// more than once; Run calls it.
func (s *Server) Close() {
	if s.closed {
		return
	}
	s.closed = true
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// Brokers are the Kafka brokers the server consumes from (the embedded
// broker's address when it runs one).
func (s *Server) Brokers() []string { return s.brokers }

// HTTPAddr is the address the HTTP API listens on ("" when not listening).
func (s *Server) HTTPAddr() string { return s.addr }

// Registry is the metrics registry /metrics serves.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Metrics are serve's metrics.
func (s *Server) Metrics() *metrics.Serve { return s.metrics }

// Store is the server's store.
func (s *Server) Store() *engine.Store { return s.dir.Store }

// Keys is the server's key dictionary.
func (s *Server) Keys() *keydict.Dict { return s.dir.Keys }

// Views is the server's views manager.
func (s *Server) Views() *views.Manager { return s.vm }

// Analytics is the server's analytics registry.
func (s *Server) Analytics() *analytics.Registry { return s.areg }

// newClusterID returns a random cluster ID in Kafka's form (16 random
// bytes, base64url without padding), for a new embedded broker.
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// registerSinkMetrics exports what the alert sink does.
func registerSinkMetrics(reg prometheus.Registerer, sink *alerts.KafkaSink) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "graphtide_alerts_producing",
			Help: "1 while this replica produces the graph's alerts to the alert topic (the member of the alert producers' group that holds its partition 0), else 0; summed over the replicas of a graph, 1 (0 for longer than --alert-failover-timeout: nobody produces)."},
			func() float64 {
				if sink.Stats().Leading {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "graphtide_alerts_pending",
			Help: "Alerts this replica raised that the alert topic does not hold yet (the producer, this replica or another, has not produced them)."},
			func() float64 { return float64(sink.Stats().Pending) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "graphtide_alerts_produced_total",
			Help: "Alerts this replica produced to the alert topic (committed, and read back from it)."},
			func() float64 { return float64(sink.Stats().Produced) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "graphtide_alerts_dropped_total",
			Help: "Alerts dropped because too many waited for the alert topic (100000); no analytics checkpoint is taken after one, so that a restart raises it again."},
			func() float64 { return float64(sink.Stats().Dropped) }),
	)
}
