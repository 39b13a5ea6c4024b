// Package exportcli is 'graphtide export' beside package export: the
// command's options and runs (of a stopped store's data directory, or of
// a running serve through its API), the Kafka position a store recorded
// as a part's, and the cut of everything produced to a graph's topics.
// Apart from package export so that what embeds graphtide without Kafka
// (the root package, the API's client) does not link a Kafka client.
package exportcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/export"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/progress"
	"github.com/graphtide/graphtide/internal/settings"
)

// Offsets is p as a list of offsets, sorted.
func Offsets(p ingest.Position) []export.Offset {
	out := []export.Offset{}
	for t, ps := range p {
		for part, o := range ps {
			out = append(out, export.Offset{Topic: t, Partition: part, Offset: o})
		}
	}
	return export.SortedOffsets(out)
}

// FromDir exports the data directory at dataDir, which no instance may
// be running on, into out: its durable state, as of the Kafka position
// its store recorded with it (none for a store that was loaded, not
// ingested). With o.Cut, the store's position must be the cut's in every
// partition it holds (else it is refused, naming both). o.Position and
// o.Graph are set from the store. Without o.Progress, progress is drawn
// on w (package progress) when w is not nil.
func FromDir(ctx context.Context, dataDir, out string, o export.Options, w io.Writer) (*export.Manifest, error) {
	d, err := datadir.OpenReadOnly(dataDir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	raw, err := d.Store.SourcePosition()
	if err != nil {
		return nil, err
	}
	o.Position = []export.Offset{}
	if len(raw) > 0 {
		rec, err := ingest.DecodeRecorded(raw)
		if err != nil {
			return nil, fmt.Errorf("export: the store's recorded position: %w", err)
		}
		o.Position, o.Graph = Offsets(rec.Position), rec.Graph
	}
	if o.Cut != nil {
		if err := export.PositionWithinCut(o.Position, o.Cut); err != nil {
			return nil, fmt.Errorf("%w (the store in %s is at %s; a stopped store cannot move: export a running instance at the cut, which waits for it)", err, dataDir, export.FormatOffsets(o.Position))
		}
	}
	sn, err := d.Store.Snapshot()
	if err != nil {
		return nil, err
	}
	defer sn.Release()
	if w != nil && o.Progress == nil {
		bar := progress.New(w, progress.IsTerminal(w), "export", "rows", "", 0, progress.Every, time.Now())
		o.Progress = func(p export.Progress) {
			if rows := p.Edges + p.Vertices; p.Done {
				bar.Finish(rows, rows)
			} else {
				bar.Update(rows, rows)
			}
		}
	}
	return export.Write(ctx, export.SourceOf(d, sn), out, o)
}

// CutOptions are the flags of "graphtide export cut".
type CutOptions struct {
	Kafka  kafkaconn.Options
	Topics []string
}

// AddFlags adds the flags: --topics, the Kafka connection's, --config.
func (o *CutOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	o.Kafka.AddFlags(fs, []string{"127.0.0.1:9092"}, "Kafka bootstrap brokers")
	fs.StringSliceVar(&o.Topics, "topics", nil, "the graph's topics (serve's --topics)")
}

// Validate reports the first flag that is wrong.
func (o *CutOptions) Validate() error {
	if len(o.Topics) == 0 {
		return errors.New("--topics needs at least one topic")
	}
	return o.Kafka.Validate()
}

// Run prints the cut of everything produced so far to the topics on out,
// as JSON (what --at-offsets reads).
func (o *CutOptions) Run(ctx context.Context, out io.Writer) error {
	opts, err := o.Kafka.ClientOpts()
	if err != nil {
		return err
	}
	cut, err := EndCut(ctx, o.Kafka.Brokers, opts, o.Topics)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(cut)
}

// EndCut is the cut of everything produced so far to topics: each
// partition's end offset (high watermark), as the brokers report it now.
// Every record produced before the call is below it; records produced
// after are not in an export at it.
func EndCut(ctx context.Context, brokers []string, opts []kgo.Opt, topics []string) ([]export.Offset, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("export: end offsets of %v: %w", topics, err)
	}
	var out []export.Offset
	for _, t := range topics {
		ps, ok := ends[t]
		if !ok || len(ps) == 0 {
			return nil, fmt.Errorf("export: topic %s: the brokers know no such topic", t)
		}
		for _, o := range ps {
			if o.Err != nil {
				return nil, fmt.Errorf("export: end offset of %s/%d: %w", t, o.Partition, o.Err)
			}
			out = append(out, export.Offset{Topic: t, Partition: o.Partition, Offset: o.Offset})
		}
	}
	return export.SortedOffsets(out), nil
}

// ExportOptions are the flags of "graphtide export": of a stopped
// instance's data directory (--dir), or of a running one (--server,
// POST /v1/exports).
type ExportOptions struct {
	Dir, Out, Part, AtOffsets string
	RowGroupRows              int
	Wait                      time.Duration
	api.ServerFlags
}

// AddFlags adds the flags, --config among them.
func (o *ExportOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.Dir, "dir", "graphtide-data", "data directory of a stopped instance (as serve's; not with --server)")
	fs.StringVar(&o.Out, "out", "", "directory to write the part into (created if missing); with --server, a directory under serve's --export-dir, by name")
	fs.StringVar(&o.Part, "part", "part-0", "the part's name, its files' prefix: one per instance of a set")
	fs.StringVar(&o.AtOffsets, "at-offsets", "", "a cut (a file from 'export cut', or a manifest): a stopped store must be at it; a running instance waits for it")
	fs.IntVar(&o.RowGroupRows, "row-group-rows", export.DefaultRowGroupRows, "rows per Parquet row group: the rows held in memory at a time")
	fs.DurationVar(&o.Wait, "wait", export.DefaultWait, "with --server and --at-offsets: how long the instance may take to reach the cut")
	o.ServerFlags.AddFlags(fs, "", "export a running serve at this URL (POST /v1/exports) instead of --dir")
}

// Validate reports the first flag that is wrong.
func (o *ExportOptions) Validate() error {
	if o.Out == "" {
		return errors.New("--out must not be empty")
	}
	if o.RowGroupRows < 1 || o.RowGroupRows > 1<<24 {
		return fmt.Errorf("--row-group-rows must be between 1 and %d, got %d", 1<<24, o.RowGroupRows)
	}
	if o.Server == "" {
		if o.Dir == "" {
			return errors.New("--dir must not be empty")
		}
		return export.CheckPart(o.Part)
	}
	if err := o.Check(); err != nil {
		return err
	}
	if err := export.CheckPart(o.Out); err != nil {
		return fmt.Errorf("--out with --server names a directory under serve's --export-dir: %w", err)
	}
	if o.Wait <= 0 || o.Wait > 24*time.Hour {
		return fmt.Errorf("--wait must be above 0 and at most 24h, got %v", o.Wait)
	}
	return export.CheckPart(o.Part)
}

// Run exports, drawing progress on errOut, and prints the part's
// summary on out.
func (o *ExportOptions) Run(ctx context.Context, out, errOut io.Writer) error {
	var cut []export.Offset
	if o.AtOffsets != "" {
		b, err := os.ReadFile(o.AtOffsets)
		if err != nil {
			return err
		}
		if cut, err = export.ReadCut(b); err != nil {
			return err
		}
	}
	if o.Server == "" {
		m, err := FromDir(ctx, o.Dir, o.Out, export.Options{Part: o.Part, RowGroupRows: o.RowGroupRows, Cut: cut}, errOut)
		if err != nil {
			return err
		}
		m.Summary(out, o.Out)
		return nil
	}
	co, err := o.ClientOptions()
	if err != nil {
		return err
	}
	c, err := api.NewClient(o.Server, co)
	if err != nil {
		return err
	}
	defer c.Close()
	req := export.Request{Dir: o.Out, Part: o.Part, AtOffsets: cut, RowGroupRows: o.RowGroupRows}
	if cut != nil {
		req.Wait = o.Wait.String()
	}
	m, err := c.RunExport(ctx, req, errOut)
	if err != nil {
		return err
	}
	m.Summary(out, o.Out+" under "+o.Server+"'s --export-dir")
	return nil
}
