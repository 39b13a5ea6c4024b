package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/analyticsbench"
)

func newBenchAnalyticsCmd() *cobra.Command {
	c := analyticsbench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use: "analytics [flags]", Short: analyticsbench.Short, Long: analyticsbench.Long, Example: analyticsbench.Example,
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		c.Log = log
		return analyticsbench.Run(ctx, c)
	})
}
