package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/servebench"
	"github.com/graphtide/graphtide/internal/sibling"
)

func newBenchServeCmd() *cobra.Command {
	c := servebench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use:   "serve --brokers B [flags]",
		Short: "Measure graphtide serve's peak resident memory against its --memory-budget",
		Long: `Starts 'graphtide serve' (the graphtide executable beside this one, else
the first on PATH) in a process of its own with
--memory-budget and analytics (by default a BFS from the hub, components and
a fraud monitor), produces a Kronecker stream with deletes to a fresh topic
of the real broker, waits until serve holds every record and every
analytic has caught up, and reports serve's peak resident set (sampled
from /proc, its VmHWM included) against the budget, with the memory each
component held at the end (graphtide_memory_bytes).
The last line of stdout is one JSON object; within_budget says whether the
peak of anonymous memory (heaps, stacks, MemGraphs: what the kernel cannot
reclaim) stayed within the budget. File-backed resident pages (the mapped
store files and the executable) are page cache, reported apart.
Then, unless --edge-events is 0, what edge events cost end to end
(edge_events): --edge-events JSON payments among --edge-accounts accounts
(each account pays 8 regular payees three times in four, so pairs repeat),
in the shape {"event_id","from_account","to_account","amount","currency",
"channel","ts","type":"payment"}, produced to a fresh topic for each of
three serve processes that read it through a field mapping: replace,
types=payment:accumulate, and that with event_id and props.currency,
props.channel. Per run: serve's CPU time from readiness to every record
ingested per payment (cpu_ns_per_event), the rate, and the store's bytes
per distinct pair as serve left it (store_bytes_per_edge) and after
'graphtide compact' on its data directory (compacted_bytes_per_edge: a
full compaction, which folds events as serve would), each with its ratio
against replace.`,
		Example: `  deploy/kafka/kafka.sh start --port 19092 --dir /tmp/gt-kafka
  graphtide bench serve --brokers 127.0.0.1:19092 --scale 20 --memory-budget 1GiB`,
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		graphtide, err := sibling.Path("graphtide")
		if err != nil {
			return nil, err
		}
		c.Binary, c.Log = graphtide, log
		return servebench.Run(ctx, c)
	})
}
