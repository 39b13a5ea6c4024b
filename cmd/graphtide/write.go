package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/settings"
	"github.com/graphtide/graphtide/internal/writes"
)

// exitRefused is the exit status of a write refused by a precondition.
const exitRefused = 3

// exitError ends the command with an exit status other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// writeOptions are the flags of "graphtide write".
type writeOptions struct {
	api.ServerFlags
	key  string
	json bool
}

func newWriteCmd() *cobra.Command {
	var o writeOptions
	cmd := &cobra.Command{
		Use:   "write [FILE]",
		Short: "Send a batch of edge operations, optionally with preconditions, to a running serve (durably, through its writes topic)",
		Long: `write sends one batch to a running graphtide serve (POST /v1/batches) and
waits until it is applied and visible. serve produces it to its writes
topic (--writes-topic) and applies it from there in log order, like any
record: once write says "applied", a crash loses nothing of it.

The batch is JSON, from FILE or stdin ("-" or no FILE): either a list of
edge operations in the JSON record format, or an object with "ops" and
"conditions":

  [{"op":"add","src":"alice","dst":"bob","weight":5,"type":"pay"}]

  {"ops": [{"op":"add","src":"alice","dst":"bob","weight":5}],
   "conditions": [{"kind":"edge_absent","src":"alice","dst":"bob"},
                  {"kind":"degree_at_most","vertex":"alice","value":10}]}

Condition kinds: edge_exists, edge_absent (src, dst, type), weight_equals,
weight_below (src, dst, type, value), vertex_exists (vertex),
degree_at_most (vertex, value). If one fails nothing is applied, write
says which and exits with status 3.

--idempotency-key makes a retry safe: a batch whose key serve has seen
(within serve --writes-key-retention) is not applied again; write prints
the first outcome. Without a key, a write that timed out may or may not
have been applied.`,
		Example: `  echo '[{"src":"alice","dst":"bob","weight":5}]' | graphtide write --server http://127.0.0.1:9464
  graphtide write transfer.json --server http://127.0.0.1:9464 --idempotency-key transfer-8812`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := settings.Apply(c.Flags()); err != nil {
				return err
			}
			return o.run(c, args)
		},
	}
	fs := cmd.Flags()
	settings.AddConfigFlag(fs)
	o.AddFlags(fs, "http://127.0.0.1:9464", "URL of the running graphtide serve")
	fs.StringVar(&o.key, "idempotency-key", "", "a key (at most 256 bytes) that makes a retry of this batch apply once")
	fs.BoolVar(&o.json, "json", false, "print the answer as one JSON object (the HTTP API's body)")
	return cmd
}

func (o *writeOptions) run(c *cobra.Command, args []string) error {
	if err := o.Check(); err != nil {
		return err
	}
	in, name := c.InOrStdin(), "stdin"
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, args[0]
	}
	req, err := writes.ReadBatch(in, name, o.key)
	if err != nil {
		return err
	}
	copts, err := o.ClientOptions()
	if err != nil {
		return err
	}
	cl, err := api.NewClient(o.Server, copts)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := cl.PostBatch(c.Context(), req)
	if err != nil {
		return err
	}
	if err := printResult(c.OutOrStdout(), o.json, resp, resp.WriteText); err != nil {
		return err
	}
	if !resp.Applied {
		return &exitError{exitRefused, errors.New("a precondition failed: nothing was applied")}
	}
	return nil
}
