package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/server"
)

func newServeCmd() *cobra.Command {
	var o server.Options
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Consume edge events from Kafka into a store; serve queries, analytics, alerts and metrics over HTTP",
		Long: `serve consumes edge events from Kafka topics into the store in --dir with
an exactly-once effect: the offsets each flush covers are recorded with the
flush, with the Kafka cluster ID and topic IDs they belong to, and
partitions resume from there after a restart or a crash.

The recorded offsets bind the store to its source: serve refuses to start
(exit 1) when the brokers are another cluster, or a topic was deleted and
re-created since, naming both IDs; --reset-source-position discards those
offsets instead. One data directory per consumer group: if the group
assigns this instance only some partitions of its topics, or partitions
whose history is in another store, serve pauses ingestion, /readyz says why,
and it resumes by itself once the assignment no longer conflicts.

Partitioned mode (--owners, --own-partitions): the instance ingests only
its own partitions of every topic (records keyed by source vertex), answers
a request about any vertex by asking its owner, and refuses what needs the
whole graph (in-edges, paths, graph-wide analytics). It refuses to start
when its store holds a partition it does not own, or lacks an owned one
whose history the group says is in another store (--adopt-partitions
replays such a partition from the start of its log: the hand-over).

Without --brokers, serve starts an embedded Kafka-compatible broker in the
process (franz-go's kfake), with its topics, offsets and IDs kept in
<dir>/embedded-broker across restarts, and prints its address and a
'graphtide gen --brokers ADDR' command that feeds it. The embedded broker
is for trying graphtide out only: use a real Kafka cluster in production.
Once the HTTP API listens, serve prints its address and the first queries
to try.

Analytics (--analytic, repeatable, or an analytics: list in the config
file) run beside ingestion on views of the store; monitors' alerts go to
--alert-topic and are readable over HTTP.

A record that cannot be ingested goes to --dead-letter-topic, cut to fit
its max.message.bytes if need be (headers give the original size and
SHA-256). If its dead letter cannot be written, only its partition pauses
at it until it can; the others go on.

HTTP on --http-addr (default loopback only): the JSON API under /v1
(stats, vertices and their records, degrees, neighbors, edges, changes,
paths, batches of writes, analytics and alerts; the OpenAPI document at
/v1/openapi.yaml), /metrics (Prometheus), /healthz, /readyz.
/readyz answers 503 with the reasons while partitions are not assigned
or would split the graph, no broker has answered for --ready-grace,
partitions were lost, a partition waits for its dead letter, the store
has stalled for --ready-grace, or the assigned partitions are more than
--ready-max-lag records behind the brokers' end offsets.
With bearer tokens (--http-token-file, or GRAPHTIDE_HTTP_TOKEN), every /v1
request needs "Authorization: Bearer <token>" of a token with the scope it
needs: read (GETs), write (POST /v1/batches) or admin (registering and
deleting analytics, /debug/pprof/); the file holds one "TOKEN SCOPES" a
line (read,write,admin), or one bare token that may do everything.
/metrics, /healthz and /readyz stay open. An address beyond loopback is
refused without a token; --http-tls-cert and --http-tls-key serve HTTPS.
Brokers that refuse serve's TLS or SASL settings stop it at start with
what to check (--tls-cert and --tls-key for client certificates,
--sasl-mechanism oauthbearer with --sasl-oauth-* for OAuth).
SIGINT or SIGTERM: stop fetching, flush, commit offsets, exit 0.
Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_BROKERS, or in
the YAML file given by --config, keyed by flag name (brokers: [a:9092]).
Command line beats environment beats config file.`,
		Example: `  graphtide serve                               # embedded broker, store in ./graphtide-data
  graphtide serve --brokers 127.0.0.1:9092 --topics payments --format json --dir /var/lib/graphtide
  graphtide serve --brokers 127.0.0.1:9092 --topics payments \
      --mapping 'payments:src=/from_account,dst=/to_account,weight=/amount,time=/ts'   # JSON events of any shape
  graphtide serve --brokers 10.0.0.1:9092 --http-addr 0.0.0.0:9464 --http-token-file /etc/graphtide/token \
      --http-tls-cert /etc/graphtide/tls.crt --http-tls-key /etc/graphtide/tls.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.ReadConfig(cmd.Flags()); err != nil {
				return err
			}
			o.InEdgesGiven = cmd.Flags().Changed("in-edges") // by flag, environment or file
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

// runServe runs graphtide serve with validated options until ctx ends.
// The commands its notices suggest start with the program as invoked.
func runServe(ctx context.Context, o *server.Options, log *slog.Logger, out io.Writer) error {
	cfg := o.Config(log, out)
	cfg.Program = os.Args[0]
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
