package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/settings"
)

// addQueryFlags adds the flags every query subcommand takes.
func addQueryFlags(o *api.QueryOptions, fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.Dir, "dir", "graphtide-data", "data directory to read (serve must not be running on it; use --server then)")
	o.AddFlags(fs, "", "URL of a running graphtide serve, e.g. http://127.0.0.1:9464 (instead of --dir)")
	fs.BoolVar(&o.JSON, "json", false, "print the answer as one JSON object (the HTTP API's body)")
}

// queryCmds builds query's subcommands over the options they share (a
// subcommand's flags set some of them).
type queryCmds struct{ o *api.QueryOptions }

// queryRun answers one subcommand: the response (printed as is with
// --json) and how it reads as text.
type queryRun func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error)

func newQueryCmd() *cobra.Command {
	o := api.QueryOptions{Direction: "out", View: "fresh", Limit: 1000, Budget: api.DefaultPathBudget, K: 10, Damping: 0.85, Tolerance: 1e-9}
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Ask a store or a running server for neighbors, degrees, edges, paths, PageRank or components",
		Long: `query answers graph questions, either from a data directory (--dir, the
default ./graphtide-data, while serve is not running on it) or from a
running graphtide serve (--server URL, with --token-file when serve has a
bearer token).

  neighbors V      V's out- (or --direction in) neighbors with weights, paged
  degree V         V's out- or in-degree
  vertex V         whether V exists, and its record (label and props)
  edge A B         the edges from A to B (one per edge type), or none
  events A B       the events of the accumulate edge from A to B, one by one
  changes          the edges that differ between --from and --to seqs, or
                   with --follow the operations as they are applied (--server)
  path A B         a shortest path from A to B (by hops, or --weighted)
  top-pagerank     the -k highest PageRank vertices
  component V      V's weakly connected component and its size

Vertices are ids or string keys known to the key dictionary ("key:42" for
a key that looks like a number). With --dir, top-pagerank and component
are computed on the spot on a fresh view; with --server they are read from
a registered analytic (--analytic NAME; by default the one named like its
type, as serve --analytic type=pagerank names it).

Output is a table, or with --json the HTTP API's JSON body. Every flag can
be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_SERVER, or in the YAML file
given by --config, keyed by flag name.`,
		Example: `  graphtide query degree alice --dir ./graphtide-data
  graphtide query neighbors 42 --direction in --limit 100
  graphtide query path alice bob --weighted --server http://127.0.0.1:9464
  graphtide query top-pagerank -k 20 --server https://graph.internal:9464 --token-file token --server-ca ca.pem --json
  graphtide query component key:42 --server http://127.0.0.1:9464 --analytic components`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	addQueryFlags(&o, cmd.PersistentFlags())

	qc := queryCmds{&o}
	cmd.AddCommand(qc.neighbors(), qc.degree(), qc.vertex(), qc.edge(), qc.events(), qc.changes(), qc.path(), qc.topPageRank(), qc.component())
	return cmd
}

// sub builds a subcommand: its flags, then on a run the options checked,
// the store or server opened, run, and its answer printed.
func (qc queryCmds) sub(use, short, example string, args cobra.PositionalArgs, flags func(*pflag.FlagSet),
	run queryRun) *cobra.Command {
	o := qc.o
	long := short + `.

Vertices, as arguments or flag values, are ids or string keys ("key:42"
for a key that looks like a number); see 'graphtide query --help' for
--dir and --server. Every flag can be set with GRAPHTIDE_<FLAG> or in
the YAML file given by --config, keyed by flag name.`
	c := &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: args,
		RunE: func(c *cobra.Command, args []string) error {
			o.DirGiven = c.Flags().Changed("dir")
			if err := settings.ApplyChecked(c.Flags(), o); err != nil {
				return err
			}
			if o.Server != "" && c.Flags().Changed("budget") {
				return errors.New("--budget applies to --dir; a server's path budget is serve's --http-path-budget")
			}
			q, err := o.Open()
			if err != nil {
				return err
			}
			o.Out = c.OutOrStdout()
			r, text, err := run(c.Context(), q, args)
			if cerr := q.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return o.Hint(err)
			}
			if text == nil { // printed as it went (changes --follow)
				return nil
			}
			return printResult(c.OutOrStdout(), o.JSON, r, text)
		}}
	if flags != nil {
		flags(c.Flags())
	}
	return c
}

func (qc queryCmds) typesFlag(fs *pflag.FlagSet) {
	o := qc.o
	fs.StringVar(&o.Types, "types", "", "read only edges of these types: comma-separated names or numbers (default: every type)")
}

func (qc queryCmds) asOfFlag(fs *pflag.FlagSet) {
	o := qc.o
	fs.StringVar(&o.AsOfSeq, "as-of-seq", "", "read the store as it was at this sequence number (the store must keep it: serve --history-seqs or --history-retention)")
	fs.StringVar(&o.AsOfTime, "as-of-time", "", "read the store as it was at this RFC 3339 time, e.g. 2026-11-26T10:15:00Z (the seq that was newest then)")
}

func (qc queryCmds) windowFlag(fs *pflag.FlagSet) {
	o := qc.o
	fs.StringVar(&o.Window, "window", "", "add each accumulate edge's events of this last stretch of event time (1h, 90m): their count and sum, and the newest of them listed (--limit in all)")
}

func (qc queryCmds) dirFlags(fs *pflag.FlagSet) {
	o := qc.o
	fs.StringVar(&o.Direction, "direction", o.Direction, "out-edges or in-edges (in needs a store with in-edges)")
	fs.StringVar(&o.View, "view", o.View, "fresh (everything ingested) or stale (flushed data only)")
	qc.typesFlag(fs)
	qc.asOfFlag(fs)
}
