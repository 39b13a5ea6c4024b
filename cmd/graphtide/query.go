package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/settings"
)

// queryOptions are the flags of "graphtide query" and its subcommands.
type queryOptions struct {
	// Where: a data directory, or a running server.
	dir       string
	server    string
	tokenFile string
	serverCA  string
	timeout   time.Duration
	json      bool

	// What: each subcommand uses some of these.
	direction string
	view      string
	limit     int
	cursor    string
	after     string
	afterType string
	afterDst  string
	from, to  api.AsOf // of changes
	asOfSeq   string
	asOfTime  string
	types     string
	weighted  bool
	maxDepth  int
	budget    int64
	k         int
	analytic  string
	damping   float64
	tolerance float64
	window    string    // edge, neighbors, events: --window
	eventType string    // events: --type
	follow    bool      // changes: follow them (--follow)
	out       io.Writer // where a follow prints, a change at a time

	dirOnCommandLine bool
	token            string // read by Validate
}

// AddFlags adds the flags every query subcommand takes.
func (o *queryOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.dir, "dir", "graphtide-data", "data directory to read (serve must not be running on it; use --server then)")
	fs.StringVar(&o.server, "server", "", "URL of a running graphtide serve, e.g. http://127.0.0.1:9464 (instead of --dir)")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the server's bearer token (or GRAPHTIDE_HTTP_TOKEN)")
	fs.StringVar(&o.serverCA, "server-ca", "", "PEM file of the CA that signs an https --server's certificate (default: system roots)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up on the server after this long")
	fs.BoolVar(&o.json, "json", false, "print the answer as one JSON object (the HTTP API's body)")
}

func (o *queryOptions) Validate() error {
	if o.server != "" {
		if o.dirOnCommandLine {
			return errors.New("give --dir or --server, not both")
		}
		u, err := url.Parse(o.server)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--server must be an http:// or https:// URL such as http://127.0.0.1:9464, got %q", o.server)
		}
		o.server = strings.TrimRight(o.server, "/")
		if o.token, err = api.ClientToken(o.tokenFile); err != nil {
			return err
		}
	} else {
		if o.dir == "" {
			return errors.New("--dir must not be empty")
		}
		if o.tokenFile != "" || o.serverCA != "" {
			return errors.New("--token-file and --server-ca go with --server")
		}
		if o.analytic != "" {
			return errors.New("--analytic names a registered analytic of a server (--server); with --dir, the analytic is computed here")
		}
		if o.follow {
			return errors.New("--follow follows what a running serve applies: give --server (nothing ingests into a data directory that query reads)")
		}
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	}
	if _, err := api.ParseDir(o.direction); err != nil {
		return fmt.Errorf("--direction must be out or in, got %q", o.direction)
	}
	if _, err := api.ParseView(o.view); errors.Is(err, api.ErrPrivateView) {
		return errors.New("--view private is not offered by query: a private view is a copy of the graph that one program owns for a long computation, " +
			"and a query holds its view only while it reads; use --view fresh or --view stale, or embed the Go package github.com/graphtide/graphtide (docs/embedding.md)")
	} else if err != nil {
		return fmt.Errorf("--view must be fresh or stale, got %q", o.view)
	}
	if _, err := api.ParsePoint(o.view, api.AsOf{Seq: o.asOfSeq, Time: o.asOfTime}); err != nil {
		switch _, perr := strconv.ParseUint(o.asOfSeq, 10, 64); {
		case o.asOfSeq != "" && o.asOfTime != "":
			return errors.New("give --as-of-seq or --as-of-time, not both")
		case o.asOfSeq != "" && perr != nil:
			return fmt.Errorf("--as-of-seq must be a sequence number (an unsigned integer), got %q", o.asOfSeq)
		case o.asOfTime != "":
			if _, terr := time.Parse(time.RFC3339Nano, o.asOfTime); terr != nil {
				return fmt.Errorf("--as-of-time must be an RFC 3339 time such as 2026-11-26T10:15:00Z, got %q", o.asOfTime)
			}
		}
		return fmt.Errorf("--as-of-seq and --as-of-time read the store as it was then: they go with --view fresh, not --view %s", o.view)
	}
	if o.limit < 1 || o.limit > 10000 {
		return fmt.Errorf("--limit must be between 1 and 10000, got %d", o.limit)
	}
	if o.maxDepth < 0 {
		return fmt.Errorf("--max-depth must not be negative, got %d", o.maxDepth)
	}
	if o.budget < 1 {
		return fmt.Errorf("--budget must be positive, got %d", o.budget)
	}
	if o.k < 1 || o.k > 1000 {
		return fmt.Errorf("-k must be between 1 and 1000, got %d", o.k)
	}
	if o.damping <= 0 || o.damping >= 1 {
		return fmt.Errorf("--damping must be in (0, 1), got %v", o.damping)
	}
	if o.tolerance <= 0 {
		return fmt.Errorf("--tolerance must be positive, got %v", o.tolerance)
	}
	return nil
}

// queryRun answers one subcommand: the response (printed as is with
// --json) and how it reads as text.
type queryRun func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error)

func newQueryCmd() *cobra.Command {
	o := queryOptions{direction: "out", view: "fresh", limit: 1000, budget: api.DefaultPathBudget, k: 10,
		analytic: "", damping: 0.85, tolerance: 1e-9}
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
	o.AddFlags(cmd.PersistentFlags())

	sub := func(use, short, example string, args cobra.PositionalArgs, flags func(*pflag.FlagSet),
		run queryRun) *cobra.Command {
		long := short + `.

Vertices, as arguments or flag values, are ids or string keys ("key:42"
for a key that looks like a number); see 'graphtide query --help' for
--dir and --server. Every flag can be set with GRAPHTIDE_<FLAG> or in
the YAML file given by --config, keyed by flag name.`
		c := &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: args,
			RunE: func(c *cobra.Command, args []string) error {
				o.dirOnCommandLine = c.Flags().Changed("dir")
				if err := settings.Apply(c.Flags()); err != nil {
					return err
				}
				if err := o.Validate(); err != nil {
					return err
				}
				if o.server != "" && c.Flags().Changed("budget") {
					return errors.New("--budget applies to --dir; a server's path budget is serve's --http-path-budget")
				}
				q, err := o.open()
				if err != nil {
					return err
				}
				o.out = c.OutOrStdout()
				r, text, err := run(c.Context(), q, args)
				if cerr := q.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return o.hint(err)
				}
				if text == nil { // printed as it went (changes --follow)
					return nil
				}
				return o.print(c.OutOrStdout(), r, text)
			}}
		if flags != nil {
			flags(c.Flags())
		}
		return c
	}
	typesFlag := func(fs *pflag.FlagSet) {
		fs.StringVar(&o.types, "types", "", "read only edges of these types: comma-separated names or numbers (default: every type)")
	}
	asOfFlag := func(fs *pflag.FlagSet) {
		fs.StringVar(&o.asOfSeq, "as-of-seq", "", "read the store as it was at this sequence number (the store must keep it: serve --history-seqs or --history-retention)")
		fs.StringVar(&o.asOfTime, "as-of-time", "", "read the store as it was at this RFC 3339 time, e.g. 2026-11-26T10:15:00Z (the seq that was newest then)")
	}
	windowFlag := func(fs *pflag.FlagSet) {
		fs.StringVar(&o.window, "window", "", "add each accumulate edge's events of this last stretch of event time (1h, 90m): their count and sum, and the newest of them listed (--limit in all)")
	}
	dirFlags := func(fs *pflag.FlagSet) {
		fs.StringVar(&o.direction, "direction", o.direction, "out-edges or in-edges (in needs a store with in-edges)")
		fs.StringVar(&o.view, "view", o.view, "fresh (everything ingested) or stale (flushed data only)")
		typesFlag(fs)
		asOfFlag(fs)
	}
	cmd.AddCommand(
		sub("neighbors V", "List a vertex's neighbors with the edges' weights and types, numbers first, then keys",
			"  graphtide query neighbors alice --types payment\n  graphtide query neighbors 42 --limit 100 --cursor AW4BBQ... --server http://127.0.0.1:9464",
			cobra.ExactArgs(1), func(fs *pflag.FlagSet) {
				dirFlags(fs)
				windowFlag(fs)
				fs.IntVar(&o.limit, "limit", o.limit, "neighbors to list (at most 10000)")
				fs.StringVar(&o.cursor, "cursor", "", "the next page: the cursor of the previous page's more: line (any replica continues it)")
				fs.StringVar(&o.after, "after", "", "list only edges past this neighbor (a number, or a key): the next page")
				fs.StringVar(&o.afterType, "after-type", "", "with --after: the type of the last edge listed (the next page starts past it)")
			},
			func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
				switch {
				case o.afterType != "" && o.after == "":
					return nil, nil, errors.New("--after-type needs --after")
				case o.cursor != "" && o.after != "":
					return nil, nil, errors.New("give --cursor or --after, not both")
				}
				r, err := q.Neighbors(ctx, args[0], o.read(), api.PageOptions{Cursor: o.cursor, After: o.after, AfterType: o.afterType, Limit: o.limit})
				return r, r.WriteText, err
			}),
		sub("degree V", "Print a vertex's out- or in-degree",
			"  graphtide query degree alice --direction in",
			cobra.ExactArgs(1), dirFlags,
			func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
				r, err := q.Degree(ctx, args[0], o.read())
				return r, r.WriteText, err
			}),
		sub("vertex V", "Print whether a vertex exists, and its record: its label and property document",
			"  graphtide query vertex alice\n  graphtide query vertex 42 --as-of-seq 1200 --server http://127.0.0.1:9464 --json",
			cobra.ExactArgs(1), func(fs *pflag.FlagSet) {
				fs.StringVar(&o.view, "view", o.view, "fresh (everything ingested) or stale (flushed data only)")
				asOfFlag(fs)
			},
			func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
				r, err := q.Vertex(ctx, args[0], o.read())
				return r, r.WriteText, err
			}),
		sub("edge A B", "Look up the edges from A to B: their weights, types, event times, references, properties and aggregates",
			"  graphtide query edge alice bob\n  graphtide query edge 42 977 --types payment --server http://127.0.0.1:9464\n  graphtide query edge acct-123 acct-9 --types payment --window 1h",
			cobra.ExactArgs(2), func(fs *pflag.FlagSet) {
				fs.StringVar(&o.view, "view", o.view, "fresh (everything ingested) or stale (flushed data only)")
				typesFlag(fs)
				windowFlag(fs)
				fs.IntVar(&o.limit, "limit", o.limit, "with --window: the most events to list, in all (at most 10000)")
				asOfFlag(fs)
			},
			func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
				if o.window == "" && o.limit != 1000 {
					return nil, nil, errors.New("--limit bounds the events a --window lists: give --window too")
				}
				ro := o.read()
				ro.EventLimit = o.limit
				r, err := q.Edge(ctx, args[0], args[1], ro)
				return r, r.WriteText, err
			}),
		sub("events A B", "List the events of the accumulate edge from A to B one by one (newest first), with their count and sum",
			"  graphtide query events acct-123 acct-9 --type payment\n  graphtide query events acct-123 acct-9 --type payment --window 1h --server http://127.0.0.1:9464",
			cobra.ExactArgs(2), func(fs *pflag.FlagSet) {
				fs.StringVar(&o.view, "view", o.view, "fresh (everything ingested) or stale (flushed data only)")
				fs.StringVar(&o.eventType, "type", "", "the edge's type, a name or number (default: the default type)")
				fs.StringVar(&o.window, "window", "", "only the events of this last stretch of event time (1h, 90m), ending at the store's newest event time")
				fs.IntVar(&o.limit, "limit", o.limit, "the most events to list (at most 10000)")
				asOfFlag(fs)
			},
			func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
				ro := o.read()
				ro.EventLimit = o.limit
				r, err := q.Events(ctx, args[0], args[1], o.eventType, ro)
				return r, r.WriteText, err
			}),
		sub("changes", "List the edges that differ between two sequence numbers (added, removed, re-weighted), or follow the operations as they are applied",
			"  graphtide query changes --from 1200 --to 1300\n  graphtide query changes --from 1200 --to 1300 --after 42 --after-dst 977 --server http://127.0.0.1:9464\n"+
				"  graphtide query changes --follow --server http://127.0.0.1:9464\n  graphtide query changes --follow --from 1200 --types payment --server http://127.0.0.1:9464 --json",
			cobra.NoArgs, func(fs *pflag.FlagSet) {
				fs.BoolVar(&o.follow, "follow", false, "print the operations applied after --from (default: the newest seq) as they come, a line each (with --json, a JSON object each), until interrupted; needs --server")
				fs.StringVar(&o.cursor, "cursor", "", "with --follow: resume right after the change whose cursor this is (the cursor= of its line), instead of --from")
				fs.StringVar(&o.from.Seq, "from", "", "the earlier sequence number (within the store's history: serve --history-seqs or --history-retention)")
				fs.StringVar(&o.from.Time, "from-time", "", "the earlier point as an RFC 3339 time (instead of --from)")
				fs.StringVar(&o.to.Seq, "to", "", "the later sequence number")
				fs.StringVar(&o.to.Time, "to-time", "", "the later point as an RFC 3339 time (instead of --to)")
				fs.IntVar(&o.limit, "limit", o.limit, "changes to list (at most 10000)")
				fs.StringVar(&o.after, "after", "", "list only changes past this source vertex (with --after-dst): the next page")
				fs.StringVar(&o.afterDst, "after-dst", "", "with --after: the destination of the last change listed")
				fs.StringVar(&o.afterType, "after-type", "", "with --after: the type of the last change listed")
				typesFlag(fs)
			},
			func(ctx context.Context, q *api.Querier, _ []string) (any, func(io.Writer), error) {
				if o.follow {
					return nil, nil, o.followChanges(ctx, q)
				}
				if o.cursor != "" {
					return nil, nil, errors.New("--cursor resumes a --follow; a listing's next page is --after and --after-dst")
				}
				if (o.after == "") != (o.afterDst == "") || o.afterType != "" && o.after == "" {
					return nil, nil, errors.New("--after and --after-dst go together (the previous page's more: line), with --after-type when it gave one")
				}
				for _, e := range []struct {
					name string
					at   api.AsOf
				}{{"from", o.from}, {"to", o.to}} {
					switch {
					case e.at.Seq == "" && e.at.Time == "":
						return nil, nil, fmt.Errorf("--%s (a sequence number) or --%s-time (an RFC 3339 time) is required", e.name, e.name)
					case e.at.Seq != "" && e.at.Time != "":
						return nil, nil, fmt.Errorf("give --%s or --%s-time, not both", e.name, e.name)
					}
				}
				r, err := q.Changes(ctx, o.from, o.to, o.types, api.PageOptions{After: o.after, AfterDst: o.afterDst, AfterType: o.afterType, Limit: o.limit})
				return r, r.WriteText, err
			}),
		sub("path A B", "Find a shortest directed path from A to B",
			"  graphtide query path alice bob\n  graphtide query path 1 99 --weighted --max-depth 6",
			cobra.ExactArgs(2), func(fs *pflag.FlagSet) {
				fs.BoolVar(&o.weighted, "weighted", false, "least total weight (weights must not be negative) instead of fewest hops")
				fs.IntVar(&o.maxDepth, "max-depth", 0, "the most hops of the path (0: no bound)")
				fs.Int64Var(&o.budget, "budget", o.budget, "edges the search may read before it gives up (--dir only)")
				typesFlag(fs)
				asOfFlag(fs)
			},
			func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
				r, err := q.Path(ctx, args[0], args[1], o.types, o.weighted, o.maxDepth, api.AsOf{Seq: o.asOfSeq, Time: o.asOfTime})
				return r, r.WriteText, err
			}),
		sub("top-pagerank", "List the vertices of highest PageRank",
			"  graphtide query top-pagerank -k 20\n  graphtide query top-pagerank --server http://127.0.0.1:9464 --analytic pagerank",
			cobra.NoArgs, func(fs *pflag.FlagSet) {
				fs.IntVarP(&o.k, "k", "k", o.k, "how many (at most 1000)")
				fs.StringVar(&o.analytic, "analytic", "", "--server: the registered pagerank analytic to read (default: the one named pagerank)")
				fs.Float64Var(&o.damping, "damping", o.damping, "--dir: damping factor")
				fs.Float64Var(&o.tolerance, "tolerance", o.tolerance, "--dir: iterate until the ranks change by at most this (L1)")
				fs.StringVar(&o.types, "types", "", "--dir: compute over the edges of these types only: comma-separated names or numbers (default: every type)")
			},
			func(ctx context.Context, q *api.Querier, _ []string) (any, func(io.Writer), error) {
				r, err := q.TopPageRank(ctx, o.k, o.analyticQuery())
				return r, r.WriteText, err
			}),
		sub("component V", "Print a vertex's weakly connected component and its size",
			"  graphtide query component alice\n  graphtide query component 42 --server http://127.0.0.1:9464 --analytic wcc",
			cobra.ExactArgs(1), func(fs *pflag.FlagSet) {
				fs.StringVar(&o.analytic, "analytic", "", "--server: the registered wcc analytic to read (default: the one named wcc)")
				fs.StringVar(&o.types, "types", "", "--dir: compute over the edges of these types only: comma-separated names or numbers (default: every type)")
			},
			func(ctx context.Context, q *api.Querier, args []string) (any, func(io.Writer), error) {
				r, err := q.Component(ctx, args[0], o.analyticQuery())
				if err != nil {
					return nil, nil, err
				}
				c, err := api.ResultAs[api.ComponentResult](r)
				return r, func(w io.Writer) { api.WriteComponentText(w, r, c) }, err
			}),
	)
	return cmd
}

// print writes v as JSON with --json, else as text.
func (o *queryOptions) print(out io.Writer, v any, text func(io.Writer)) error {
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	text(out)
	return nil
}

// open opens the data directory (read-only: nothing is written, nothing
// is started) or a client of the server.
func (o *queryOptions) open() (*api.Querier, error) {
	t := api.Target{Dir: o.dir, PathBudget: o.budget, Server: o.server, Client: api.ClientOptions{Token: o.token, Timeout: o.timeout}}
	var err error
	if t.Client.RootCAs, err = api.ServerCA(o.serverCA); err != nil {
		return nil, err
	}
	return api.OpenQuerier(t)
}

func (o *queryOptions) read() api.ReadOptions {
	return api.ReadOptions{Dir: o.direction, View: o.view, Types: o.types, AsOfSeq: o.asOfSeq, AsOfTime: o.asOfTime, Window: o.window}
}

func (o *queryOptions) analyticQuery() api.AnalyticQuery {
	return api.AnalyticQuery{Name: o.analytic, Damping: o.damping, Tolerance: o.tolerance, Types: o.types}
}

// hint adds to an error of the server what to do about it on this
// command line.
func (o *queryOptions) hint(err error) error {
	var se *api.StatusError
	var nr *api.NotRegisteredError
	switch {
	case errors.As(err, &se) && se.Status == http.StatusUnauthorized && o.token == "":
		return fmt.Errorf("%w (give the token with --token-file or GRAPHTIDE_HTTP_TOKEN)", err)
	case errors.As(err, &nr) && len(nr.OfType) == 0:
		return fmt.Errorf("%w, or query --dir", err)
	case errors.As(err, &nr):
		return fmt.Errorf("%w (choose with --analytic)", err)
	}
	return err
}

// followChanges prints the changes a server applies, a line (or with
// --json a JSON object) each, until interrupted.
func (o *queryOptions) followChanges(ctx context.Context, q *api.Querier) error {
	switch {
	case o.to != (api.AsOf{}) || o.from.Time != "":
		return errors.New("--follow follows from --from (a seq) or --cursor; --to, --to-time and --from-time are for listing the changes between two points")
	case o.after != "" || o.afterDst != "" || o.afterType != "":
		return errors.New("--after, --after-dst and --after-type page a listing; --follow resumes with --cursor")
	case o.cursor != "" && o.from.Seq != "":
		return errors.New("give --from or --cursor, not both")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(o.out)
	enc.SetEscapeHTML(false)
	return q.FollowChanges(ctx, o.from.Seq, o.cursor, o.types, func(c api.FollowChange) error {
		if o.json {
			return enc.Encode(c)
		}
		c.WriteText(o.out)
		return nil
	})
}
