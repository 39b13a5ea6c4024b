package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/export"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/settings"
)

// exportOptions are the flags of "graphtide export".
type exportOptions struct {
	dir, out, part, atOffsets string
	rowGroup                  int
}

func (o *exportOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.dir, "dir", "graphtide-data", "data directory of a stopped instance (as serve's)")
	fs.StringVar(&o.out, "out", "", "directory to write the part into (created if missing)")
	fs.StringVar(&o.part, "part", "part-0", "the part's name, its files' prefix: one per instance of a set")
	fs.StringVar(&o.atOffsets, "at-offsets", "", "a cut (a file from 'export cut', or a manifest): refuse unless the store is at it in every partition it holds")
	fs.IntVar(&o.rowGroup, "row-group-rows", export.DefaultRowGroupRows, "rows per Parquet row group: the rows held in memory at a time")
}

func (o *exportOptions) Validate() error {
	if o.dir == "" || o.out == "" {
		return errors.New("--dir and --out must not be empty")
	}
	if o.rowGroup < 1 || o.rowGroup > 1<<24 {
		return fmt.Errorf("--row-group-rows must be between 1 and %d, got %d", 1<<24, o.rowGroup)
	}
	return export.CheckPart(o.part)
}

func newExportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export [flags]",
		Short: "Write a store's graph as Parquet files, as of a Kafka position, for Spark",
		Long: `export writes the graph of the data directory --dir (no instance running on
it) into --out as a part: PART.edges.parquet (src, dst, type, weight,
time, count, first_time, ref, props), PART.vertices.parquet (id, label,
props) and PART.manifest.json (the store's seq, the Kafka position it is
as of, each file's rows, size and SHA-256). Vertices are named as the
sources named them, so parts of several instances join. With
--at-offsets, the store's position must be the cut's: the parts of
partitioned owners exported at one cut are one graph as of one Kafka
position ('export check' says whether a set is). docs/spark.md runs
GraphFrames on Apache Spark over a set.`,
		Example: `  graphtide export cut --brokers 127.0.0.1:19092 --topics edges > cut.json
  graphtide export --dir owner-a --out export --part a --at-offsets cut.json
  graphtide export check export`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.Apply(cmd.Flags()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			eo := export.Options{Part: o.part, RowGroupRows: o.rowGroup}
			if o.atOffsets != "" {
				b, err := os.ReadFile(o.atOffsets)
				if err != nil {
					return err
				}
				if eo.Cut, err = export.ReadCut(b); err != nil {
					return err
				}
			}
			m, err := export.FromDir(cmd.Context(), o.dir, o.out, eo, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			m.Summary(cmd.OutOrStdout(), o.out)
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(newExportCutCmd(), newExportCheckCmd())
	return cmd
}

func newExportCutCmd() *cobra.Command {
	var kafka kafkaconn.Options
	var topics []string
	cmd := &cobra.Command{
		Use:   "cut --topics T[,T...] [flags]",
		Short: "Print the cut of everything produced so far: each partition's end offset, as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.Apply(cmd.Flags()); err != nil {
				return err
			}
			if len(topics) == 0 {
				return errors.New("--topics needs at least one topic")
			}
			if err := kafka.Validate(); err != nil {
				return err
			}
			opts, err := kafka.ClientOpts()
			if err != nil {
				return err
			}
			cut, err := export.EndCut(cmd.Context(), kafka.Brokers, opts, topics)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(cut)
		},
	}
	settings.AddConfigFlag(cmd.Flags())
	kafka.AddFlags(cmd.Flags(), []string{"127.0.0.1:9092"}, "Kafka bootstrap brokers")
	cmd.Flags().StringSliceVar(&topics, "topics", nil, "the graph's topics (serve's --topics)")
	return cmd
}

func newExportCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check DIR...",
		Short: "Check that the parts in the directories are one graph as of one Kafka position, their files whole",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			ms, err := export.ReadManifests(dirs...)
			if err != nil {
				return err
			}
			if err := export.CheckSet(ms); err != nil {
				return err
			}
			var edges, recs int64
			for _, m := range ms {
				edges, recs = edges+m.Edges, recs+m.Vertices
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d parts, one cut of %d partitions: %d edges, %d vertex records\n", len(ms), len(ms[0].Cut), edges, recs)
			return nil
		},
	}
}
