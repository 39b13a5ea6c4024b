package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"
)

// newRootCmd builds the complete command tree. Each subcommand lives in its
// own file as a newXCmd constructor; register new ones in the AddCommand
// call below.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "graphtide",
		Short: "A streaming graph store fed by Kafka, with HTTP queries, analytics and monitors",
		Long: `graphtide is a streaming graph store: it consumes edge events from Kafka
topics into an LSM-tree of CSR files and answers queries on consistent
snapshots over HTTP, while analytics and fraud monitors run on the stream.

  - vertices are numeric ids or string keys (account numbers, e-mails);
    a vertex may hold a record: a label and a JSON property document
  - edges are directed, with an optional weight, an edge type (payment,
    login, ...) and an event time; updates and deletes keep versions, so
    a store can be read as it was at an earlier point (--history-*)
  - JSON events of any shape are read through field mappings (--mapping)
  - queries read views: fresh (everything ingested) or stale (flushed
    data) snapshots, and the changes between two points (query changes)
  - analytics (BFS, components, PageRank, shortest paths, degrees) are
    kept up to date as edges arrive; monitors (bursts of fan-in or
    fan-out, new short cycles) raise alerts to a Kafka topic and to the
    HTTP API

  serve   consume Kafka topics into a store (embedded broker without --brokers)
  load    bulk-load edge files (text, GTEL binary, JSON lines) into a store
  inspect show a store's levels, files and manifest; --verify checks checksums
  compact compact a store fully into its deepest level
  export  write the graph as Parquet files as of a Kafka position, for Spark
  repair  say what can be repaired in a damaged data directory; --yes repairs
  query   neighbors, degree, edges, paths, PageRank, components (a store or a server)
  write   send a batch, with preconditions, to a running serve (durably)
  gen     generate a Graph500 R-MAT stream into a file or a Kafka topic
  produce send edge events, one record per line, from files or stdin to Kafka
  bench   measure ingest, scans, the Kafka path and analytics against baselines

Start with docs/getting-started.md in the repository (the tour: a broker,
serve, a stream, the first queries); the manual is in docs/.

Exit codes: 0 success, 1 any error (the message says what went wrong and,
for a bad flag, what is allowed), 3 a write refused by a precondition.`,
		// Errors are printed by cobra; do not follow a runtime failure with
		// the usage text, which only helps for syntax errors.
		SilenceUsage: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newGenCmd(),
		newBenchCmd(),
		newServeCmd(),
		newProduceCmd(),
		newLoadCmd(),
		newInspectCmd(),
		newCompactCmd(),
		newRepairCmd(),
		newQueryCmd(),
		newWriteCmd(),
		newExportCmd(),
	)
	return root
}

// printResult writes v as one JSON object (the HTTP API's body) with
// --json, else as text.
func printResult(out io.Writer, asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	text(out)
	return nil
}
