package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/api"
)

func (qc queryCmds) changes() *cobra.Command {
	o := qc.o
	return qc.sub("changes", "List the edges that differ between two sequence numbers (added, removed, re-weighted), or follow the operations as they are applied",
		"  graphtide query changes --from 1200 --to 1300\n  graphtide query changes --from 1200 --to 1300 --after 42 --after-dst 977 --server http://127.0.0.1:9464\n"+
			"  graphtide query changes --follow --server http://127.0.0.1:9464\n  graphtide query changes --follow --from 1200 --types payment --server http://127.0.0.1:9464 --json",
		cobra.NoArgs, func(fs *pflag.FlagSet) {
			fs.BoolVar(&o.Follow, "follow", false, "print the operations applied after --from (default: the newest seq) as they come, a line each (with --json, a JSON object each), until interrupted; needs --server")
			fs.StringVar(&o.Cursor, "cursor", "", "with --follow: resume right after the change whose cursor this is (the cursor= of its line), instead of --from")
			fs.StringVar(&o.From.Seq, "from", "", "the earlier sequence number (within the store's history: serve --history-seqs or --history-retention)")
			fs.StringVar(&o.From.Time, "from-time", "", "the earlier point as an RFC 3339 time (instead of --from)")
			fs.StringVar(&o.To.Seq, "to", "", "the later sequence number")
			fs.StringVar(&o.To.Time, "to-time", "", "the later point as an RFC 3339 time (instead of --to)")
			fs.IntVar(&o.Limit, "limit", o.Limit, "changes to list (at most 10000)")
			fs.StringVar(&o.After, "after", "", "list only changes past this source vertex (with --after-dst): the next page")
			fs.StringVar(&o.AfterDst, "after-dst", "", "with --after: the destination of the last change listed")
			fs.StringVar(&o.AfterType, "after-type", "", "with --after: the type of the last change listed")
			qc.typesFlag(fs)
		},
		func(ctx context.Context, q *api.Querier, _ []string) (any, func(io.Writer), error) {
			if o.Follow {
				ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
				return nil, nil, o.FollowChanges(ctx, q)
			}
			if o.Cursor != "" {
				return nil, nil, errors.New("--cursor resumes a --follow; a listing's next page is --after and --after-dst")
			}
			if (o.After == "") != (o.AfterDst == "") || o.AfterType != "" && o.After == "" {
				return nil, nil, errors.New("--after and --after-dst go together (the previous page's more: line), with --after-type when it gave one")
			}
			for _, e := range []struct {
				name string
				at   api.AsOf
			}{{"from", o.From}, {"to", o.To}} {
				switch {
				case e.at.Seq == "" && e.at.Time == "":
					return nil, nil, fmt.Errorf("--%s (a sequence number) or --%s-time (an RFC 3339 time) is required", e.name, e.name)
				case e.at.Seq != "" && e.at.Time != "":
					return nil, nil, fmt.Errorf("give --%s or --%s-time, not both", e.name, e.name)
				}
			}
			r, err := q.Changes(ctx, o.From, o.To, o.Types, api.PageOptions{After: o.After, AfterDst: o.AfterDst, AfterType: o.AfterType, Limit: o.Limit})
			return r, r.WriteText, err
		})
}
