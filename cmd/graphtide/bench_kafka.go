package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/kafkabench"
	"github.com/graphtide/graphtide/internal/gen"
)

func newBenchKafkaCmd() *cobra.Command {
	var (
		brokers           []string
		scale, edgeFactor int
		partitions        int
		seed              uint64
		steady            time.Duration
		cpuProfile        string
		latencyDump       string
	)
	cmd := &cobra.Command{
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(brokers) == 0 {
				return errors.New("--brokers is required (start one with deploy/kafka/kafka.sh)")
			}
			if scale < gen.MinScale || scale > 26 {
				return fmt.Errorf("--scale must be between %d and 26, got %d", gen.MinScale, scale)
			}
			if edgeFactor < 1 || edgeFactor > 64 {
				return fmt.Errorf("--edge-factor must be between 1 and 64, got %d", edgeFactor)
			}
			if partitions < 1 || partitions > 1024 {
				return fmt.Errorf("--partitions must be between 1 and 1024, got %d", partitions)
			}
			if steady < time.Second {
				return fmt.Errorf("--steady-for must be at least 1s, got %v", steady)
			}
			dir, err := os.MkdirTemp("", "graphtide-bench-kafka-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			res, err := kafkabench.Run(cmd.Context(), kafkabench.Config{Brokers: brokers, Scale: scale, EdgeFactor: edgeFactor,
				Seed: seed, Partitions: partitions, Dir: dir, SteadyFor: steady, Log: cmd.ErrOrStderr(), CPUProfile: cpuProfile, LatencyDump: latencyDump})
			if err != nil {
				return err
			}
			return printJSONLine(cmd, res)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&brokers, "brokers", nil, "Kafka bootstrap brokers (required)")
	f.IntVar(&scale, "scale", 20, "log2 of the vertex count of the RMAT graph")
	f.IntVar(&edgeFactor, "edge-factor", 16, "edges per vertex")
	f.IntVar(&partitions, "partitions", 4, "partitions of the benchmark topics")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.DurationVar(&steady, "steady-for", 10*time.Second, "length of the steady-rate visibility phase")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the ingest phase to this file")
	f.StringVar(&latencyDump, "latency-dump", "", "write each visibility-phase record's produce time and latency (µs) to this file")
	_ = f.MarkHidden("cpuprofile")
	_ = f.MarkHidden("latency-dump")
	return cmd
}
