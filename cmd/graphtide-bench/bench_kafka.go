package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/kafkabench"
)

func newBenchKafkaCmd() *cobra.Command {
	c := kafkabench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use:   "kafka --brokers B [flags]",
		Short: "Measure ingest from Kafka against a plain consumer, and visibility latency",
		Long: `Produces an RMAT stream (one binary record per edge) to a fresh topic once,
then measures in the same run:
  - raw_consume_edges_per_sec: a plain franz-go consumer reading the topic,
    with the ingester's fetch settings and poll size (the faster of a run
    without and a run with the ingester's record pool);
  - ingest_edges_per_sec: serve's ingest path reading it into a fresh store,
    final flush included; the store must then hold exactly the produced
    edges (count and checksum), or the run fails;
    both rates are timed from the first record batch the client reads, so
    neither includes connecting or the group join (raw_startup_ms and
    ingest_startup_ms report those);
  - visibility_p99_ms: at a steady produce rate of half the ingest rate,
    the 99th percentile from a record's produce timestamp to its edges
    being visible to new snapshots; producing starts once the ingester
    holds its partitions.
The last line of stdout is one JSON object. Topics are deleted afterwards.`,
		Example: `  deploy/kafka/kafka.sh start --port 19092 --dir /tmp/gt-kafka
  graphtide bench kafka --brokers 127.0.0.1:19092 --scale 20 --edge-factor 16`,
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		c.Log = log
		return kafkabench.Run(ctx, c)
	})
}
