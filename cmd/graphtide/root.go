package main

import "github.com/spf13/cobra"

// newRootCmd builds the complete command tree. Each subcommand lives in its
// own file as a newXCmd constructor; register new ones in the AddCommand
// call below.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "graphtide",
		Short: "Streaming graph store tools",
		Long: `graphtide is a streaming graph store for directed graphs with uint64
vertex ids and optional float64 edge weights: it consumes edge events from
Kafka into an LSM-tree of CSR files and serves consistent snapshots.

  serve   consume Kafka topics into a store (embedded broker without --brokers)
  load    bulk-load edge files (text, GTEL binary, JSON lines) into a store
  inspect show a store's levels, files and manifest; --verify checks checksums
  compact compact a store fully into its deepest level
  repair  say what can be repaired in a damaged data directory; --yes repairs
  query   neighbors, degree, paths, PageRank, components (a store or a server)
  write   send a batch, with preconditions, to a running serve (durably)
  gen     generate a Graph500 R-MAT stream into a file or a Kafka topic
  produce send edge events, one record per line, from files or stdin to Kafka
  bench   measure ingest, scans, the Kafka path and analytics against baselines

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
	)
	return root
}
