package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/servebench"
	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/gen"
)

func newBenchServeCmd() *cobra.Command {
	var (
		brokers           []string
		scale, edgeFactor int
		partitions        int
		deletes           float64
		seed              uint64
		memoryBudget      string
		analytics         []string
		wait              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve --brokers B [flags]",
		Short: "Measure graphtide serve's peak resident memory against its --memory-budget",
		Long: `Starts 'graphtide serve' (this executable) in a process of its own with
--memory-budget and analytics (by default a BFS from the hub, components and
a fraud monitor), produces a Kronecker stream with deletes to a fresh topic
of the real broker, waits until serve holds every record and every
analytic has caught up, and reports serve's peak resident set (sampled
from /proc, its VmHWM included) against the budget, with the memory each
component held at the end (graphtide_memory_bytes).
The last line of stdout is one JSON object; within_budget says whether the
peak of anonymous memory (heaps, stacks, MemGraphs: what the kernel cannot
reclaim) stayed within the budget. File-backed resident pages (the mapped
store files and the executable) are page cache, reported apart.`,
		Example: `  deploy/kafka/kafka.sh start --port 19092 --dir /tmp/gt-kafka
  graphtide bench serve --brokers 127.0.0.1:19092 --scale 20 --memory-budget 1GiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(brokers) == 0 {
				return errors.New("--brokers is required (start one with deploy/kafka/kafka.sh)")
			}
			if scale < gen.MinScale || scale > 24 {
				return fmt.Errorf("--scale must be between %d and 24, got %d", gen.MinScale, scale)
			}
			if edgeFactor < 1 || edgeFactor > 64 {
				return fmt.Errorf("--edge-factor must be between 1 and 64, got %d", edgeFactor)
			}
			if partitions < 1 || partitions > 1024 {
				return fmt.Errorf("--partitions must be between 1 and 1024, got %d", partitions)
			}
			if deletes < 0 || deletes > 0.5 {
				return fmt.Errorf("--deletes must be between 0 and 0.5, got %v", deletes)
			}
			if _, err := budget.Parse(memoryBudget); err != nil {
				return fmt.Errorf("--memory-budget: %w", err)
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "graphtide-bench-serve-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			res, err := servebench.Run(cmd.Context(), servebench.Config{Binary: self, Brokers: brokers, Scale: scale,
				EdgeFactor: edgeFactor, Partitions: partitions, Deletes: deletes, Seed: seed, Budget: memoryBudget,
				Analytics: analytics, Dir: dir, Log: cmd.ErrOrStderr(), CatchUpWait: wait})
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
	f.IntVar(&partitions, "partitions", 4, "partitions of the benchmark topic")
	f.Float64Var(&deletes, "deletes", 0.05, "share of events that delete an earlier edge")
	f.Uint64Var(&seed, "seed", 1, "generator seed")
	f.StringVar(&memoryBudget, "memory-budget", "1GiB", "serve's --memory-budget")
	f.StringArrayVar(&analytics, "analytic", servebench.DefaultAnalytics, "analytics serve runs ({hub}: the vertex with the most out-edges); repeatable")
	f.DurationVar(&wait, "catch-up-wait", 10*time.Minute, "how long serve may take to ingest everything and catch up")
	return cmd
}
