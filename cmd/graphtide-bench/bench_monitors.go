package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/monitorsbench"
)

func newBenchMonitorsCmd() *cobra.Command {
	c := monitorsbench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use:   "monitors [flags]",
		Short: "Per-batch cost of the fraud monitors' money and time options against a recompute from their window",
		Long: `Generates --payments random payments (uniform payer and payee among
--accounts accounts, amounts of 0.01..1,000.00, event times uniform over
--days days, in time order) and applies them in batches of --batch-size to
a fresh store (edge type 0 accumulates; in-edges kept) followed by these
monitors, each driven as serve drives it:
  fanin_events    fanin measure=events (the count), threshold=5
  fanin_senders   fanin measure=senders (distinct senders), threshold=5
  fanin_amount    fanin measure=amount (the sum), threshold=5000
  fanout_senders  fanout measure=senders (distinct receivers), threshold=5
  fanout_amount   fanout measure=amount, threshold=5000
  mule            fraud mule_senders=3,mule_receivers=3 (its rings: max_span=1s)
  rings_timed     fraud ring_search=timed,max_span=1h,max_cycle=4 (window=1h)
the fan monitors and the mule over --window of event time. Per monitor:
the mean, p99 and slowest update per batch (update_mean_us, ...), and,
every --recompute-every batches, a fresh instance given the operations its
window holds then as one batch (recompute_mean_us; window_events is their
mean count), with recompute_over_update = recompute / mean update. After
each recompute every account's measure must equal the update's.
The last line of stdout is one JSON object.`,
		Example: `  graphtide bench monitors
  graphtide bench monitors --payments 100000 --window 1h`,
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		c.Log = log
		return monitorsbench.Run(ctx, c)
	})
}
