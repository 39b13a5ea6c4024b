package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/genkafka"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/settings"
)

// produceOptions are the flags of "graphtide produce".
type produceOptions struct {
	kafka   kafkaconn.Options
	topic   string
	key     string
	parts   int
	timeout time.Duration
	files   []string
}

func (o *produceOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	o.kafka.AddFlags(fs, []string{"127.0.0.1:9092"}, "Kafka bootstrap brokers (the default is where serve's embedded broker listens)")
	fs.StringVar(&o.topic, "topic", "edges", "topic to produce to")
	fs.StringVar(&o.key, "key", "src", "record key: src (the line's first field, so an edge's events keep their order), a JSON pointer into each line (/from_account), or none")
	fs.IntVar(&o.parts, "partitions", 0, "create the topic with this many partitions if it is missing, and refuse one with another count (partitioned mode routes by it); 0: leave the topic as the brokers make it")
	fs.DurationVar(&o.timeout, "timeout", genkafka.DefaultTimeout, "give up when no broker answers, or acknowledges a record, within this long")
}

func (o *produceOptions) Validate() error {
	if len(o.kafka.Brokers) == 0 {
		return errors.New("--brokers needs at least one address")
	}
	if err := o.kafka.Validate(); err != nil {
		return err
	}
	if o.topic == "" {
		return errors.New("--topic must not be empty")
	}
	if o.key != "src" && o.key != "none" && !strings.HasPrefix(o.key, "/") {
		return fmt.Errorf("--key must be src, a JSON pointer such as /from_account, or none; got %q", o.key)
	}
	if o.parts < 0 || o.parts > 1<<20 {
		return fmt.Errorf("--partitions must be between 1 and %d (or 0: as the brokers make the topic), got %d", 1<<20, o.parts)
	}
	if o.timeout < time.Second || o.timeout > time.Hour {
		return fmt.Errorf("--timeout must be between 1s and 1h, got %v", o.timeout)
	}
	return nil
}

func newProduceCmd() *cobra.Command {
	var o produceOptions
	cmd := &cobra.Command{
		Use:   "produce [flags] [FILE...]",
		Short: "Produce edge events, one record per line, from files or stdin to a Kafka topic",
		Long: `produce sends every non-empty line of the files (or of stdin with no file
or "-") as one Kafka record, unchanged: lines of serve's json format
({"op":"add","src":..,"dst":..,"weight":..,"type":..}, src and dst ids or
string keys; {"op":"add_vertex",...} records), of its text format
("src dst [weight]", "d src dst", "dv src", "v src [label]"; see
'graphtide load --help' for both), or JSON events of any shape for a
topic serve reads through a --mapping. Records are keyed by the source vertex so that the events of one vertex
keep their order. produce first checks that a broker answers and gives up
after --timeout (default 30s) if none does, or if the brokers stop
acknowledging records. Progress goes to stderr (a bar on a terminal, a
line every 5 s otherwise). Every flag can be set with GRAPHTIDE_<FLAG> or
in the --config file.`,
		Example: `  printf '{"op":"add","src":"alice","dst":"bob","weight":12.5}\n' | graphtide produce --topic payments
  graphtide produce --brokers 127.0.0.1:19092 --topic edges edges.txt
  graphtide produce --brokers 127.0.0.1:19092 --topic edges --partitions 4 edges.txt   # partitioned mode`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.files = args
			if err := settings.ApplyChecked(cmd.Flags(), &o); err != nil {
				return err
			}
			return runProduce(cmd.Context(), &o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runProduce(ctx context.Context, o *produceOptions, stdin io.Reader, out, errOut io.Writer) error {
	conn, err := o.kafka.ClientOpts()
	if err != nil {
		return err
	}
	return genkafka.ProduceFiles(ctx, genkafka.LinesConfig{Brokers: o.kafka.Brokers, ClientOpts: conn, Topic: o.topic,
		KeyBySource: o.key == "src", KeyPointer: keyPointer(o.key), Partitions: o.parts, Timeout: o.timeout}, o.files, stdin, out, errOut, progressEvery)
}

// keyPointer is --key's JSON pointer ("" for src and none).
func keyPointer(key string) string {
	if strings.HasPrefix(key, "/") {
		return key
	}
	return ""
}
