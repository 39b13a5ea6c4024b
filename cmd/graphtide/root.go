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
vertex ids and optional float64 edge weights.

This command generates benchmark workloads (Graph500 R-MAT edge streams in
text or binary edge files) and reports build information.`,
		// Errors are printed by cobra; do not follow a runtime failure with
		// the usage text, which only helps for syntax errors.
		SilenceUsage: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newGenCmd(),
		newBenchCmd(),
		newServeCmd(),
	)
	return root
}
