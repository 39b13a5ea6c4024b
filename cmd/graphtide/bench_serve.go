package main

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/servebench"
)

func newBenchServeCmd() *cobra.Command {
	c := servebench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
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
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		c.Binary, c.Log = self, log
		return servebench.Run(ctx, c)
	})
}
