package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// version is the release version, set at build time with
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/graphtide
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the graphtide version and the Go version it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "graphtide version %s\nbuilt with %s %s/%s\n",
				version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
