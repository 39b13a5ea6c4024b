package graphtide_test

import (
	"context"
	"os"
	"time"

	"github.com/graphtide/graphtide/internal/budget"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/server"
)

// startServe runs what `graphtide serve --writes-topic writes` runs, on a
// new data directory, with its embedded broker and HTTP API on free
// loopback ports, for ExampleDial; it returns serve's URL and a stop.
func startServe() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "graphtide-example-serve")
	check(err)
	plan, err := budget.Divide(512<<20, budget.Explicit{})
	check(err)
	cfg := server.Config{Dir: dir, Plan: plan, Topics: []string{"edges"}, Group: "g", Format: decode.FormatBinary,
		DeadLetterTopic: "dlq", FlushInterval: 50 * time.Millisecond, Reset: "earliest", WritesTopic: "writes",
		WritesRetention: time.Hour}
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.HTTP.RequestTimeout = 30 * time.Second
	cfg.HTTP.PathBudget = 1000
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, cfg)
	check(err)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	return "http://" + srv.HTTPAddr(), func() {
		cancel()
		check(<-done)
		srv.Close()
		os.RemoveAll(dir)
	}
}
