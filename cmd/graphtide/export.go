package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/export"
	"github.com/graphtide/graphtide/internal/export/exportcli"
	"github.com/graphtide/graphtide/internal/settings"
)

func newExportCmd() *cobra.Command {
	var o exportcli.ExportOptions
	cmd := &cobra.Command{
		Use:   "export [flags]",
		Short: "Write a store's graph as Parquet files, as of a Kafka position, for Spark",
		Long: `export writes the graph of a stopped instance's data directory (--dir),
or of a running serve (--server: under its --export-dir), into --out as
a part: PART.edges.parquet (src, dst, type, weight, time, count,
first_time, ref, props), PART.vertices.parquet (id, label, props) and
PART.manifest.json (the store's seq, the Kafka position it is as of, each
file's rows, size and SHA-256). Vertices are named as the sources named
them, so parts of several instances join. With --at-offsets a stopped
store must be at the cut; a running partitioned owner waits until it has
applied up to it, holding ingestion there until its snapshot is taken.
The parts of every owner exported at one cut are the graph as of one
Kafka position ('export check' says whether a set is). docs/spark.md
runs GraphFrames on Apache Spark over a set.`,
		Example: `  graphtide export cut --brokers 127.0.0.1:19092 --topics edges > cut.json
  graphtide export --dir owner-a --out export --part a --at-offsets cut.json
  graphtide export --server http://127.0.0.1:9481 --out nightly --part a --at-offsets cut.json
  graphtide export check export`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.ApplyChecked(cmd.Flags(), &o); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM) // cancels an export on the server too
			defer stop()
			return o.Run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddFlags(cmd.Flags())
	var cut exportcli.CutOptions
	cutCmd := &cobra.Command{
		Use:   "cut --topics T[,T...] [flags]",
		Short: "Print the cut of everything produced so far: each partition's end offset, as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.ApplyChecked(cmd.Flags(), &cut); err != nil {
				return err
			}
			return cut.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cut.AddFlags(cutCmd.Flags())
	cmd.AddCommand(cutCmd, &cobra.Command{
		Use:   "check DIR...",
		Short: "Check that the parts in the directories are one graph as of one Kafka position, their files whole",
		Args:  cobra.MinimumNArgs(1),
		RunE:  func(cmd *cobra.Command, dirs []string) error { return export.CheckDirs(cmd.OutOrStdout(), dirs) },
	})
	return cmd
}
