package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/genkafka"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/progress"
	"github.com/graphtide/graphtide/internal/settings"
)

// produceOptions are the flags of "graphtide produce".
type produceOptions struct {
	kafka   kafkaconn.Options
	topic   string
	key     string
	timeout time.Duration
	files   []string
}

func (o *produceOptions) AddFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML file of settings keyed by flag name (flags and GRAPHTIDE_* variables take precedence)")
	o.kafka.AddFlags(fs, []string{"127.0.0.1:9092"}, "Kafka bootstrap brokers (default: serve's embedded broker)")
	fs.StringVar(&o.topic, "topic", "edges", "topic to produce to")
	fs.StringVar(&o.key, "key", "src", "record key: src (the line's first field, so an edge's events keep their order) or none")
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
	if o.key != "src" && o.key != "none" {
		return fmt.Errorf("--key must be src or none, got %q", o.key)
	}
	if o.timeout < time.Second || o.timeout > time.Hour {
		return fmt.Errorf("--timeout must be between 1s and 1h, got %v", o.timeout)
	}
	return nil
}

// srcKey returns the key of a JSON or text record line: its "src" value or
// first field (a deletion's "dv"/"d" marker is skipped), so that every
// event of a vertex lands on one partition, in order.
func srcKey(line string) string {
	if strings.HasPrefix(line, "{") {
		i := strings.Index(line, `"src"`)
		if i < 0 {
			return ""
		}
		rest := strings.TrimLeft(line[i+5:], " :")
		end := strings.IndexAny(rest, ",}")
		if end < 0 {
			return ""
		}
		return strings.Trim(strings.TrimSpace(rest[:end]), `"`)
	}
	f := strings.Fields(line)
	if len(f) > 1 && (f[0] == "d" || f[0] == "dv") {
		return f[1]
	}
	if len(f) > 0 {
		return f[0]
	}
	return ""
}

func newProduceCmd() *cobra.Command {
	var o produceOptions
	cmd := &cobra.Command{
		Use:   "produce [flags] [FILE...]",
		Short: "Produce edge events, one record per line, from files or stdin to a Kafka topic",
		Long: `produce sends every non-empty line of the files (or of stdin with no file
or "-") as one Kafka record, as serve's json and text formats read them:
JSON objects {"op":"add","src":..,"dst":..,"weight":..} (src/dst may be
string keys), or text lines "src dst [weight]", "d src dst", "dv src".
Records are keyed by the source vertex so that the events of one vertex
keep their order. produce first checks that a broker answers and gives up
after --timeout (default 30s) if none does, or if the brokers stop
acknowledging records. Progress goes to stderr (a bar on a terminal, a
line every 5 s otherwise). Every flag can be set with GRAPHTIDE_<FLAG> or
in the --config file.`,
		Example: `  printf '{"op":"add","src":"alice","dst":"bob","weight":12.5}\n' | graphtide produce --topic payments
  graphtide produce --brokers 127.0.0.1:19092 --topic edges edges.txt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := settings.Apply(cmd.Flags()); err != nil {
				return err
			}
			o.files = args
			if err := o.Validate(); err != nil {
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
	opts := append([]kgo.Opt{kgo.SeedBrokers(o.kafka.Brokers...), kgo.DefaultProduceTopic(o.topic), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.ProducerLinger(5 * time.Millisecond)}, genkafka.ClientOpts(o.timeout)...)
	cl, err := kgo.NewClient(append(opts, conn...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := genkafka.WaitForBroker(ctx, cl, o.kafka.Brokers, o.timeout); err != nil {
		return err
	}
	files := o.files
	if len(files) == 0 {
		files = []string{"-"}
	}
	// Progress: bytes of the files read, when they are all files; else
	// records only.
	var total int64
	doneUnit := "bytes"
	for _, f := range files {
		info, err := os.Stat(f)
		if f == "-" || err != nil || !info.Mode().IsRegular() {
			total, doneUnit = 0, ""
			break
		}
		total += info.Size()
	}
	t0 := time.Now()
	n := 0
	var read, acked atomic.Int64
	errc := make(chan error, 1)
	prog := progress.New(errOut, progress.IsTerminal(errOut), "produce", "records", doneUnit, total, progressEvery, t0)
	done := acked.Load
	if doneUnit != "" {
		done = read.Load
	}
	stop := prog.Follow(done, acked.Load)
	defer stop()
	failed := func() error {
		select {
		case err := <-errc:
			return genkafka.ProduceError(o.topic, o.kafka.Brokers, o.timeout, err)
		default:
			return nil
		}
	}
	for _, f := range files {
		r := stdin
		if f != "-" {
			fh, err := os.Open(f)
			if err != nil {
				return err
			}
			defer fh.Close()
			r = fh
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), 1<<24)
		for line := 1; sc.Scan(); line++ {
			read.Add(int64(len(sc.Bytes())) + 1)
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			rec := &kgo.Record{Value: []byte(text)}
			if o.key == "src" {
				rec.Key = []byte(srcKey(text))
			}
			cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errc <- err:
					default:
					}
					return
				}
				acked.Add(1)
			})
			n++
			if err := failed(); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err := failed(); err != nil {
		return err
	}
	stop()
	fmt.Fprintf(out, "produced %d records to topic %s in %s\n", n, o.topic, time.Since(t0).Round(time.Millisecond))
	return nil
}
