package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/decodebench"
)

func newBenchDecodeCmd() *cobra.Command {
	c := decodebench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use:   "decode [flags]",
		Short: "Records per second of JSON payment events through a field mapping, against the native JSON and binary formats",
		Long: `Generates --records payment events of the shape payment teams produce
({"event_id":..,"from_account":"acct-17","to_account":"acct-4",
"amount":"12.50","currency":"EUR","ts":"2026-11-23T10:15:00Z"}, amounts
as strings or numbers, times in RFC 3339 or epoch milliseconds, some with
nested metadata) over --accounts account keys, and decodes them on one
core through the mapping src=/from_account, dst=/to_account,
weight=/amount, time=/ts into a key dictionary. In the same run it decodes
the same operations in the native JSON format (the baseline) and, with
numeric ids, in the binary format. The first pass sees every account for
the first time; the figures are the best of --repeats later passes.

The last line of stdout is one JSON object with records_per_sec of
Mapped, Native and Binary, and mapped_over_native.`,
		Example: `  graphtide bench decode
  graphtide bench decode --records 200000 --accounts 1000000`,
	}, &c, &c.Dir, func(_ context.Context, log io.Writer) (any, error) {
		c.Log = log
		return decodebench.Run(c)
	})
}
