package genkafka

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/gen"
)

// Job is what `graphtide gen` does: generate an R-MAT stream, produce it
// to Kafka (Kafka.Brokers given) and write it to File (given), in that
// order. Kafka.Acked must be set when Kafka.Brokers is.
type Job struct {
	RMAT   gen.RMAT
	Kafka  Config
	File   string
	Format edgefile.Format
	// Follow, if set, is called with the count of records to produce
	// before producing them, and returns the function that stops the
	// progress it shows (of Kafka.Acked).
	Follow func(records int64) (stop func())
}

// Run runs the job, printing a line to out for each of its outputs. It
// checks that a broker answers before generating, which can take long.
func (j Job) Run(ctx context.Context, out io.Writer) error {
	toKafka := len(j.Kafka.Brokers) > 0
	if toKafka {
		if err := Check(ctx, j.Kafka); err != nil {
			return err
		}
	}
	start := time.Now()
	edges := j.RMAT.Generate()
	generated := time.Since(start)
	if toKafka {
		if err := j.produce(ctx, edges, out); err != nil || j.File == "" {
			return err
		}
	}
	start = time.Now()
	if err := edgefile.WriteFile(j.File, j.Format, edges); err != nil {
		return err
	}
	written := time.Since(start)
	info, err := os.Stat(j.File)
	if err != nil {
		return fmt.Errorf("stat written edge file: %w", err)
	}
	r := j.RMAT
	_, err = fmt.Fprintf(out,
		"wrote %d edges over %d vertices (scale %d, edge factor %d, seed %d) to %s: format %s, %d bytes; generated in %s, written in %s\n",
		len(edges), r.NumVertices(), r.Scale, r.EdgeFactor, r.Seed, j.File, j.Format, info.Size(),
		generated.Round(time.Millisecond), written.Round(time.Millisecond))
	return err
}

func (j Job) produce(ctx context.Context, edges []gen.Edge, out io.Writer) error {
	stop := func() {}
	if j.Follow != nil {
		stop = j.Follow(int64(len(edges)))
	}
	st, err := Produce(ctx, j.Kafka, edges)
	stop()
	if err != nil {
		return err
	}
	n := st.Upserts + st.Deletes
	_, err = fmt.Fprintf(out, "produced %d events (%d upserts, %d deletes) to topic %s as %s records in %s (%.0f events/s)\n",
		n, st.Upserts, st.Deletes, j.Kafka.Topic, j.Kafka.Format, st.Elapsed.Round(time.Millisecond), float64(n)/st.Elapsed.Seconds())
	return err
}
