package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/genkafka"
	"github.com/graphtide/graphtide/internal/ingest/decode"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/progress"
)

// genOptions holds the flags of "graphtide gen". New sinks (for example a
// Kafka producer) add their fields here and their flags in AddFlags.
type genOptions struct {
	scale      int
	edgeFactor int
	seed       uint64
	out        string
	format     string // "el", "bin", or "" to infer from out

	// Kafka sink: with brokers set, the stream is produced to topic.
	kafka        kafkaconn.Options
	topic        string
	rate         int
	deleteShare  float64
	recordFormat string
	timeout      time.Duration
}

// AddFlags registers the gen flags on fs.
func (o *genOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.scale, "scale", 16, fmt.Sprintf(
		"log2 of the vertex count, %d..%d; memory needed is about 16 bytes x edge-factor x 2^scale", gen.MinScale, gen.MaxScale))
	fs.IntVar(&o.edgeFactor, "edge-factor", 16, "edges per vertex (Graph500 uses 16)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed; the same flags always produce the same file")
	fs.StringVar(&o.out, "out", "", "path of the edge file to write (give --out, --brokers, or both)")
	fs.StringVar(&o.format, "format", "", `output format, "el" (text "src dst" lines) or "bin" (GTEL0001 binary); default: bin if --out ends in .bin, else el`)
	o.kafka.AddFlags(fs, nil, "produce the stream to Kafka at these brokers instead of (or besides) writing --out")
	fs.StringVar(&o.topic, "topic", "edges", "topic to produce to (with --brokers)")
	fs.IntVar(&o.rate, "rate", 0, "edges per second to produce (0 = as fast as possible)")
	fs.Float64Var(&o.deleteShare, "deletes", 0, "share of events, in [0, 1), that delete an earlier edge (with --brokers)")
	fs.StringVar(&o.recordFormat, "record-format", "binary", "record format on Kafka: binary, json or text (with --brokers)")
	fs.DurationVar(&o.timeout, "timeout", genkafka.DefaultTimeout, "give up when no broker answers, or acknowledges a record, within this long (with --brokers)")
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
	if o.out == "" && len(o.kafka.Brokers) == 0 {
		return fmt.Errorf("give one of --out or --brokers (or both): the edge file to write, or the Kafka brokers to produce to")
	}
	if err := o.kafka.Validate(); err != nil {
		return err
	}
	if len(o.kafka.Brokers) > 0 {
		if o.topic == "" {
			return fmt.Errorf("--topic must not be empty")
		}
		if o.rate < 0 {
			return fmt.Errorf("--rate must be 0 (unlimited) or positive, got %d", o.rate)
		}
		if o.deleteShare < 0 || o.deleteShare >= 1 {
			return fmt.Errorf("--deletes must be in [0, 1), got %v", o.deleteShare)
		}
		if _, err := decode.ParseFormat(o.recordFormat); err != nil {
			return fmt.Errorf("--record-format must be one of: binary, json, text; got %q", o.recordFormat)
		}
		if o.timeout < time.Second || o.timeout > time.Hour {
			return fmt.Errorf("--timeout must be between 1s and 1h, got %v", o.timeout)
		}
		if o.out == "" {
			return nil
		}
	}
	if o.format == "" {
		o.format = edgefile.FormatText.String()
		if strings.EqualFold(filepath.Ext(o.out), ".bin") {
			o.format = edgefile.FormatBinary.String()
		}
	}
	if _, err := edgefile.ParseFormat(o.format); err != nil {
		return fmt.Errorf("--format must be one of: %s, %s; got %q", edgefile.FormatText, edgefile.FormatBinary, o.format)
	}
	return nil
}

func (o *genOptions) rmat() gen.RMAT {
	return gen.RMAT{Scale: o.scale, EdgeFactor: o.edgeFactor, Seed: o.seed}
}

func newGenCmd() *cobra.Command {
	var o genOptions
	cmd := &cobra.Command{
		Use:   "gen [--out FILE] [--brokers ADDR] [flags]",
		Short: "Generate a Graph500 R-MAT edge stream into an edge file or a Kafka topic",
		Long: `Generate a Graph500 Kronecker (R-MAT) graph with edge-factor x 2^scale
directed edges over 2^scale vertices, using the Graph500 probabilities
a=0.57, b=0.19, c=0.19, d=0.05. Vertex ids are randomly permuted and the
edge list is shuffled; the output is deterministic for a seed. Self-loops
and duplicate edges are kept, as in Graph500. gen writes the stream to
the edge file --out, produces it to Kafka (--brokers), or both: give at
least one.

The "el" format writes one "src dst" line per edge; the "bin" format writes
the GTEL0001 header and 16-byte little-endian records.

With --brokers the stream is produced to --topic, one record per event
(keyed by source vertex), at --rate events per second if given. gen first
checks that a broker answers and gives up after --timeout (default 30s)
if none does, or if the brokers stop acknowledging records; progress goes
to stderr (a bar on a terminal, a line every 5 s otherwise).`,
		Example: `  graphtide gen --scale 20 --edge-factor 16 --seed 1 --out g20.bin
  graphtide gen --scale 10 --out small.el --format el
  graphtide gen --scale 16 --brokers 127.0.0.1:9092 --topic edges --rate 50000 --deletes 0.05`,
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
	rf, _ := decode.ParseFormat(o.recordFormat)
	format, _ := edgefile.ParseFormat(o.format)
	conn, err := o.kafka.ClientOpts()
	if err != nil {
		return err
	}
	acked := &atomic.Int64{}
	errOut := cmd.ErrOrStderr()
	return genkafka.Job{RMAT: o.rmat(), File: o.out, Format: format,
		Kafka: genkafka.Config{Brokers: o.kafka.Brokers, ClientOpts: conn, Topic: o.topic, Format: rf, Rate: o.rate,
			DeleteShare: o.deleteShare, Seed: o.seed, Timeout: o.timeout, Acked: acked},
		Follow: func(records int64) func() {
			prog := progress.New(errOut, progress.IsTerminal(errOut), "gen", "records", "", records, progressEvery, time.Now())
			return prog.Follow(acked.Load, acked.Load)
		},
	}.Run(cmd.Context(), cmd.OutOrStdout())
}
