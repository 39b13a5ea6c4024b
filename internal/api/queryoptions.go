package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// QueryOptions are the settings of `graphtide query` and its subcommands
// (the command adds them as flags, with their help).
type QueryOptions struct {
	// Where: a data directory, or a running server.
	Dir string
	ServerFlags
	JSON bool

	// What: each subcommand uses some of these.
	Direction string
	View      string
	Limit     int
	Cursor    string
	After     string
	AfterType string
	AfterDst  string
	From, To  AsOf // of changes
	AsOfSeq   string
	AsOfTime  string
	Types     string
	Weighted  bool
	MaxDepth  int
	Budget    int64
	K         int
	Analytic  string
	Damping   float64
	Tolerance float64
	Window    string    // edge, neighbors, events: --window
	EventType string    // events: --type
	Follow    bool      // changes: follow them (--follow)
	Out       io.Writer // where a follow prints, a change at a time

	DirGiven bool          // --dir was on the command line
	client   ClientOptions // read by Validate
}

// Validate checks the settings together, with errors that name the flags,
// and reads the server's credentials (--token-file, --server-ca).
func (o *QueryOptions) Validate() error {
	if o.Server != "" {
		if o.DirGiven {
			return errors.New("give --dir or --server, not both")
		}
		if err := o.Check(); err != nil {
			return err
		}
		var err error
		if o.client, err = o.ClientOptions(); err != nil {
			return err
		}
	} else {
		if o.Dir == "" {
			return errors.New("--dir must not be empty")
		}
		if o.TokenFile != "" || o.ServerCA != "" {
			return errors.New("--token-file and --server-ca go with --server")
		}
		if o.Analytic != "" {
			return errors.New("--analytic names a registered analytic of a server (--server); with --dir, the analytic is computed here")
		}
		if o.Follow {
			return errors.New("--follow follows what a running serve applies: give --server (nothing ingests into a data directory that query reads)")
		}
		if o.Timeout <= 0 { // with --server, Check checks it
			return fmt.Errorf("--timeout must be positive, got %v", o.Timeout)
		}
	}
	if _, err := ParseDir(o.Direction); err != nil {
		return fmt.Errorf("--direction must be out or in, got %q", o.Direction)
	}
	if _, err := ParseView(o.View); errors.Is(err, ErrPrivateView) {
		return errors.New("--view private is not offered by query: a private view is a copy of the graph that one program owns for a long computation, " +
			"and a query holds its view only while it reads; use --view fresh or --view stale, or embed the Go package github.com/graphtide/graphtide (docs/embedding.md)")
	} else if err != nil {
		return fmt.Errorf("--view must be fresh or stale, got %q", o.View)
	}
	if _, err := ParsePoint(o.View, AsOf{Seq: o.AsOfSeq, Time: o.AsOfTime}); err != nil {
		switch _, perr := strconv.ParseUint(o.AsOfSeq, 10, 64); {
		case o.AsOfSeq != "" && o.AsOfTime != "":
			return errors.New("give --as-of-seq or --as-of-time, not both")
		case o.AsOfSeq != "" && perr != nil:
			return fmt.Errorf("--as-of-seq must be a sequence number (an unsigned integer), got %q", o.AsOfSeq)
		case o.AsOfTime != "":
			if _, terr := time.Parse(time.RFC3339Nano, o.AsOfTime); terr != nil {
				return fmt.Errorf("--as-of-time must be an RFC 3339 time such as 2026-11-26T10:15:00Z, got %q", o.AsOfTime)
			}
		}
		return fmt.Errorf("--as-of-seq and --as-of-time read the store as it was then: they go with --view fresh, not --view %s", o.View)
	}
	if o.Limit < 1 || o.Limit > 10000 {
		return fmt.Errorf("--limit must be between 1 and 10000, got %d", o.Limit)
	}
	if o.MaxDepth < 0 {
		return fmt.Errorf("--max-depth must not be negative, got %d", o.MaxDepth)
	}
	if o.Budget < 1 {
		return fmt.Errorf("--budget must be positive, got %d", o.Budget)
	}
	if o.K < 1 || o.K > 1000 {
		return fmt.Errorf("-k must be between 1 and 1000, got %d", o.K)
	}
	if o.Damping <= 0 || o.Damping >= 1 {
		return fmt.Errorf("--damping must be in (0, 1), got %v", o.Damping)
	}
	if o.Tolerance <= 0 {
		return fmt.Errorf("--tolerance must be positive, got %v", o.Tolerance)
	}
	return nil
}

// Open opens the data directory (read-only: nothing is written, nothing
// is started) or a client of the server.
func (o *QueryOptions) Open() (*Querier, error) {
	return OpenQuerier(Target{Dir: o.Dir, PathBudget: o.Budget, Server: o.Server, Client: o.client})
}

// Read is what a read subcommand reads: direction, view, types, point and
// window.
func (o *QueryOptions) Read() ReadOptions {
	return ReadOptions{Dir: o.Direction, View: o.View, Types: o.Types, AsOfSeq: o.AsOfSeq, AsOfTime: o.AsOfTime, Window: o.Window}
}

// AnalyticQuery is what top-pagerank and component read.
func (o *QueryOptions) AnalyticQuery() AnalyticQuery {
	return AnalyticQuery{Name: o.Analytic, Damping: o.Damping, Tolerance: o.Tolerance, Types: o.Types}
}

// Hint adds to an error of the server what to do about it on this
// command line.
func (o *QueryOptions) Hint(err error) error {
	var se *StatusError
	var nr *NotRegisteredError
	switch {
	case errors.As(err, &se) && se.Status == http.StatusUnauthorized && o.client.Token == "":
		return fmt.Errorf("%w (give the token with --token-file or GRAPHTIDE_HTTP_TOKEN)", err)
	case errors.As(err, &nr) && len(nr.OfType) == 0:
		return fmt.Errorf("%w, or query --dir", err)
	case errors.As(err, &nr):
		return fmt.Errorf("%w (choose with --analytic)", err)
	}
	return err
}

// FollowChanges prints the changes a server applies, a line (or with
// --json a JSON object) each, to Out until ctx ends.
func (o *QueryOptions) FollowChanges(ctx context.Context, q *Querier) error {
	switch {
	case o.To != (AsOf{}) || o.From.Time != "":
		return errors.New("--follow follows from --from (a seq) or --cursor; --to, --to-time and --from-time are for listing the changes between two points")
	case o.After != "" || o.AfterDst != "" || o.AfterType != "":
		return errors.New("--after, --after-dst and --after-type page a listing; --follow resumes with --cursor")
	case o.Cursor != "" && o.From.Seq != "":
		return errors.New("give --from or --cursor, not both")
	}
	enc := json.NewEncoder(o.Out)
	enc.SetEscapeHTML(false)
	return q.FollowChanges(ctx, o.From.Seq, o.Cursor, o.Types, func(c FollowChange) error {
		if o.JSON {
			return enc.Encode(c)
		}
		c.WriteText(o.Out)
		return nil
	})
}
