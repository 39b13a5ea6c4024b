package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

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
	server    string
	tokenFile string
	serverCA  string
	timeout   time.Duration
	key       string
	json      bool
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
	fs.StringVar(&o.server, "server", "http://127.0.0.1:9464", "URL of the running graphtide serve")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the server's bearer token (or GRAPHTIDE_HTTP_TOKEN)")
	fs.StringVar(&o.serverCA, "server-ca", "", "PEM file of the CA that signs an https --server's certificate (default: system roots)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up on the server after this long")
	fs.StringVar(&o.key, "idempotency-key", "", "a key (at most 256 bytes) that makes a retry of this batch apply once")
	fs.BoolVar(&o.json, "json", false, "print the answer as one JSON object (the HTTP API's body)")
	return cmd
}

func (o *writeOptions) run(c *cobra.Command, args []string) error {
	u, err := url.Parse(o.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server must be an http:// or https:// URL such as http://127.0.0.1:9464, got %q", o.server)
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	}
	in := c.InOrStdin()
	name := "stdin"
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, args[0]
	}
	raw, err := io.ReadAll(io.LimitReader(in, 1<<20+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if len(raw) > 1<<20 {
		return fmt.Errorf("%s: a batch is at most 1 MiB (serve's request limit)", name)
	}
	req, err := parseBatch(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if o.key != "" {
		if req.IdempotencyKey != "" && req.IdempotencyKey != o.key {
			return errors.New("--idempotency-key and the batch's idempotency_key differ: give one")
		}
		req.IdempotencyKey = o.key
	}
	if err := req.Check(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	token, err := api.ClientToken(o.tokenFile)
	if err != nil {
		return err
	}
	cas, err := api.ServerCA(o.serverCA)
	if err != nil {
		return err
	}
	cl, err := api.NewClient(o.server, api.ClientOptions{Token: token, RootCAs: cas, Timeout: o.timeout})
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := cl.PostBatch(c.Context(), req)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(resp); err != nil {
			return err
		}
	} else {
		dup := ""
		if resp.Duplicate {
			dup = " (a retry: the first batch with this key)"
		}
		if resp.Applied {
			fmt.Fprintf(w, "applied at seq %d%s; writes topic partition %d, offset %d\n", resp.Seq, dup, resp.Partition, resp.Offset)
		} else {
			fmt.Fprintf(w, "refused%s: %s\n", dup, resp.Error)
		}
	}
	if !resp.Applied {
		return &exitError{exitRefused, errors.New("a precondition failed: nothing was applied")}
	}
	return nil
}

// parseBatch reads a batch: a request object, or a bare list of ops.
func parseBatch(raw []byte) (*writes.Request, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		return &writes.Request{Ops: raw}, nil
	}
	req, err := writes.DecodeRequest(raw)
	switch {
	case errors.Is(err, writes.ErrTrailingData):
		return nil, errors.New("data after the batch")
	case err != nil:
		return nil, fmt.Errorf(`a batch is a JSON list of operations or an object {"ops": [...], "conditions": [...]}: %w`, err)
	case strings.TrimSpace(string(req.Ops)) == "":
		return nil, errors.New(`the batch has no "ops"`)
	}
	return req, nil
}
