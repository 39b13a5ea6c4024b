package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/api"
)

func (qc queryCmds) path() *cobra.Command {
	o := qc.o
	return qc.sub("path A B", "Find a shortest directed path from A to B",
		"  graphtide query path alice bob\n  graphtide query path 1 99 --weighted --max-depth 6",
		cobra.ExactArgs(2), func(fs *pflag.FlagSet) {
			fs.BoolVar(&o.Weighted, "weighted", false, "least total weight (weights must not be negative) instead of fewest hops")
			fs.IntVar(&o.MaxDepth, "max-depth", 0, "the most hops of the path (0: no bound)")
			fs.Int64Var(&o.Budget, "budget", o.Budget, "edges the search may read before it gives up (--dir only)")
			qc.typesFlag(fs)
			qc.asOfFlag(fs)
		},
		func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
			r, err := q.Path(ctx, args[0], args[1], o.Types, o.Weighted, o.MaxDepth, api.AsOf{Seq: o.AsOfSeq, Time: o.AsOfTime})
			return r, r.WriteText, err
		})
}

func (qc queryCmds) topPageRank() *cobra.Command {
	o := qc.o
	return qc.sub("top-pagerank", "List the vertices of highest PageRank",
		"  graphtide query top-pagerank -k 20\n  graphtide query top-pagerank --server http://127.0.0.1:9464 --analytic pagerank",
		cobra.NoArgs, func(fs *pflag.FlagSet) {
			fs.IntVarP(&o.K, "k", "k", o.K, "how many (at most 1000)")
			fs.StringVar(&o.Analytic, "analytic", "", "--server: the registered pagerank analytic to read (default: the one named pagerank)")
			fs.Float64Var(&o.Damping, "damping", o.Damping, "--dir: damping factor")
			fs.Float64Var(&o.Tolerance, "tolerance", o.Tolerance, "--dir: iterate until the ranks change by at most this (L1)")
			fs.StringVar(&o.Types, "types", "", "--dir: compute over the edges of these types only: comma-separated names or numbers (default: every type)")
		},
		func(ctx context.Context, q *api.Querier, _ []string) (any, func(io.Writer), error) {
			r, err := q.TopPageRank(ctx, o.K, o.AnalyticQuery())
			return r, r.WriteText, err
		})
}

func (qc queryCmds) component() *cobra.Command {
	o := qc.o
	return qc.sub("component V", "Print a vertex's weakly connected component and its size",
		"  graphtide query component alice\n  graphtide query component 42 --server http://127.0.0.1:9464 --analytic wcc",
		cobra.ExactArgs(1), func(fs *pflag.FlagSet) {
			fs.StringVar(&o.Analytic, "analytic", "", "--server: the registered wcc analytic to read (default: the one named wcc)")
			fs.StringVar(&o.Types, "types", "", "--dir: compute over the edges of these types only: comma-separated names or numbers (default: every type)")
		},
		func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
			r, err := q.Component(ctx, args[0], o.AnalyticQuery())
			if err != nil {
				return nil, nil, err
			}
			c, err := api.ResultAs[api.ComponentResult](r)
			return r, func(w io.Writer) { api.WriteComponentText(w, r, c) }, err
		})
}
