package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/api"
)

func (qc queryCmds) neighbors() *cobra.Command {
	o := qc.o
	return qc.sub("neighbors V", "List a vertex's neighbors with the edges' weights and types, numbers first, then keys",
		"  graphtide query neighbors alice --types payment\n  graphtide query neighbors 42 --limit 100 --cursor AW4BBQ... --server http://127.0.0.1:9464",
		cobra.ExactArgs(1), func(fs *pflag.FlagSet) {
			qc.dirFlags(fs)
			qc.windowFlag(fs)
			fs.IntVar(&o.Limit, "limit", o.Limit, "neighbors to list (at most 10000)")
			fs.StringVar(&o.Cursor, "cursor", "", "the next page: the cursor of the previous page's more: line (any replica continues it)")
			fs.StringVar(&o.After, "after", "", "list only edges past this neighbor (a number, or a key): the next page")
			fs.StringVar(&o.AfterType, "after-type", "", "with --after: the type of the last edge listed (the next page starts past it)")
		},
		func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
			switch {
			case o.AfterType != "" && o.After == "":
				return nil, nil, errors.New("--after-type needs --after")
			case o.Cursor != "" && o.After != "":
				return nil, nil, errors.New("give --cursor or --after, not both")
			}
			r, err := q.Neighbors(ctx, args[0], o.Read(), api.PageOptions{Cursor: o.Cursor, After: o.After, AfterType: o.AfterType, Limit: o.Limit})
			return r, r.WriteText, err
		})
}

func (qc queryCmds) degree() *cobra.Command {
	o := qc.o
	return qc.sub("degree V", "Print a vertex's out- or in-degree",
		"  graphtide query degree alice --direction in",
		cobra.ExactArgs(1), qc.dirFlags,
		func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
			r, err := q.Degree(ctx, args[0], o.Read())
			return r, r.WriteText, err
		})
}

func (qc queryCmds) vertex() *cobra.Command {
	o := qc.o
	return qc.sub("vertex V", "Print whether a vertex exists, and its record: its label and property document",
		"  graphtide query vertex alice\n  graphtide query vertex 42 --as-of-seq 1200 --server http://127.0.0.1:9464 --json",
		cobra.ExactArgs(1), func(fs *pflag.FlagSet) {
			fs.StringVar(&o.View, "view", o.View, "fresh (everything ingested) or stale (flushed data only)")
			qc.asOfFlag(fs)
		},
		func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
			r, err := q.Vertex(ctx, args[0], o.Read())
			return r, r.WriteText, err
		})
}

func (qc queryCmds) edge() *cobra.Command {
	o := qc.o
	return qc.sub("edge A B", "Look up the edges from A to B: their weights, types, event times, references, properties and aggregates",
		"  graphtide query edge alice bob\n  graphtide query edge 42 977 --types payment --server http://127.0.0.1:9464\n  graphtide query edge acct-123 acct-9 --types payment --window 1h",
		cobra.ExactArgs(2), func(fs *pflag.FlagSet) {
			fs.StringVar(&o.View, "view", o.View, "fresh (everything ingested) or stale (flushed data only)")
			qc.typesFlag(fs)
			qc.windowFlag(fs)
			fs.IntVar(&o.Limit, "limit", o.Limit, "with --window: the most events to list, in all (at most 10000)")
			qc.asOfFlag(fs)
		},
		func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
			if o.Window == "" && o.Limit != 1000 {
				return nil, nil, errors.New("--limit bounds the events a --window lists: give --window too")
			}
			ro := o.Read()
			ro.EventLimit = o.Limit
			r, err := q.Edge(ctx, args[0], args[1], ro)
			return r, r.WriteText, err
		})
}

func (qc queryCmds) events() *cobra.Command {
	o := qc.o
	return qc.sub("events A B", "List the events of the accumulate edge from A to B one by one (newest first), with their count and sum",
		"  graphtide query events acct-123 acct-9 --type payment\n  graphtide query events acct-123 acct-9 --type payment --window 1h --server http://127.0.0.1:9464",
		cobra.ExactArgs(2), func(fs *pflag.FlagSet) {
			fs.StringVar(&o.View, "view", o.View, "fresh (everything ingested) or stale (flushed data only)")
			fs.StringVar(&o.EventType, "type", "", "the edge's type, a name or number (default: the default type)")
			fs.StringVar(&o.Window, "window", "", "only the events of this last stretch of event time (1h, 90m), ending at the store's newest event time")
			fs.IntVar(&o.Limit, "limit", o.Limit, "the most events to list (at most 10000)")
			qc.asOfFlag(fs)
		},
		func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
			ro := o.Read()
			ro.EventLimit = o.Limit
			r, err := q.Events(ctx, args[0], args[1], o.EventType, ro)
			return r, r.WriteText, err
		})
}
