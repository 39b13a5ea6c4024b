package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/gen"
)

// genOptions holds the flags of "graphtide gen". New sinks (for example a
// Kafka producer) add their fields here and their flags in AddFlags.
type genOptions struct {
	scale      int
	edgeFactor int
	seed       uint64
	out        string
	format     string // "el", "bin", or "" to infer from out
}

// AddFlags registers the gen flags on fs.
func (o *genOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.scale, "scale", 16, fmt.Sprintf(
		"log2 of the vertex count, %d..%d; memory needed is about 16 bytes x edge-factor x 2^scale", gen.MinScale, gen.MaxScale))
	fs.IntVar(&o.edgeFactor, "edge-factor", 16, "edges per vertex (Graph500 uses 16)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed; the same flags always produce the same file")
	fs.StringVar(&o.out, "out", "", "path of the edge file to write (required)")
	fs.StringVar(&o.format, "format", "", `output format, "el" (text "src dst" lines) or "bin" (GTEL0001 binary); default: bin if --out ends in .bin, else el`)
}

// Validate checks the flag values and resolves the output format.
func (o *genOptions) Validate() error {
	if o.scale < gen.MinScale || o.scale > gen.MaxScale {
		return fmt.Errorf("--scale must be between %d and %d, got %d", gen.MinScale, gen.MaxScale, o.scale)
	}
	if o.edgeFactor < 1 {
		return fmt.Errorf("--edge-factor must be at least 1, got %d", o.edgeFactor)
	}
	if o.edgeFactor > math.MaxInt>>o.scale {
		return fmt.Errorf("--edge-factor %d is too large for --scale %d: edge-factor x 2^scale must fit in a signed 64-bit integer", o.edgeFactor, o.scale)
	}
	if o.out == "" {
		return fmt.Errorf("--out is required: give the path of the edge file to write")
	}
	if o.format == "" {
		o.format = gen.FormatText.String()
		if strings.EqualFold(filepath.Ext(o.out), ".bin") {
			o.format = gen.FormatBinary.String()
		}
	}
	if _, err := gen.ParseFormat(o.format); err != nil {
		return fmt.Errorf("--format must be one of: %s, %s; got %q", gen.FormatText, gen.FormatBinary, o.format)
	}
	return nil
}

func (o *genOptions) rmat() gen.RMAT {
	return gen.RMAT{Scale: o.scale, EdgeFactor: o.edgeFactor, Seed: o.seed}
}

func newGenCmd() *cobra.Command {
	var o genOptions
	cmd := &cobra.Command{
		Use:   "gen --out FILE [flags]",
		Short: "Generate a Graph500 R-MAT edge stream into an edge file",
		Long: `Generate a Graph500 Kronecker (R-MAT) graph with edge-factor x 2^scale
directed edges over 2^scale vertices, using the Graph500 probabilities
a=0.57, b=0.19, c=0.19, d=0.05. Vertex ids are randomly permuted and the
edge list is shuffled; the output is deterministic for a seed. Self-loops
and duplicate edges are kept, as in Graph500.

The "el" format writes one "src dst" line per edge; the "bin" format writes
the GTEL0001 header and 16-byte little-endian records.`,
		Example: `  graphtide gen --scale 20 --edge-factor 16 --seed 1 --out g20.bin
  graphtide gen --scale 10 --out small.el --format el`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return runGen(cmd, o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runGen(cmd *cobra.Command, o genOptions) error {
	format, err := gen.ParseFormat(o.format)
	if err != nil {
		return err
	}
	r := o.rmat()

	start := time.Now()
	edges := r.Generate()
	generated := time.Since(start)

	start = time.Now()
	if err := gen.WriteFile(o.out, format, edges); err != nil {
		return err
	}
	written := time.Since(start)

	info, err := os.Stat(o.out)
	if err != nil {
		return fmt.Errorf("stat written edge file: %w", err)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(),
		"wrote %d edges over %d vertices (scale %d, edge factor %d, seed %d) to %s: format %s, %d bytes; generated in %s, written in %s\n",
		len(edges), r.NumVertices(), o.scale, o.edgeFactor, o.seed, o.out, format, info.Size(),
		generated.Round(time.Millisecond), written.Round(time.Millisecond))
	return err
}
