package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release version, set at build time with
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/graphtide
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the graphtide version, the Go version and the modules linked in",
		Long: `Prints the graphtide version, the Go version and platform it was built
with, and every module linked into this binary with its version (what
'go version -m' reads from the binary): what a bug report needs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout())
		},
	}
}

func printVersion(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "graphtide version %s\nbuilt with %s %s/%s\n",
		version, runtime.Version(), runtime.GOOS, runtime.GOARCH); err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	if _, err := fmt.Fprintln(w, "modules:"); err != nil {
		return err
	}
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		if _, err := fmt.Fprintf(w, "  %s %s\n", m.Path, m.Version); err != nil {
			return err
		}
	}
	return nil
}
