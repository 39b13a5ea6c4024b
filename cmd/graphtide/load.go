package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/bulk"
	"github.com/graphtide/graphtide/internal/settings"
)

// loadOptions are the flags of "graphtide load"; every flag can also be set
// by GRAPHTIDE_<FLAG> or in the --config file.
type loadOptions struct {
	dir         string
	format      string
	batch       int
	inEdges     bool
	memgraphMiB int
	historySeqs uint64
	mapping     string // a mapping file

	files        []string // the positional arguments
	inEdgesGiven bool     // --in-edges was set (flag, environment or file)
}

func (o *loadOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.dir, "dir", "graphtide-data", "data directory (as serve's); the store is <dir>/store, string keys go to <dir>/keys.dict")
	fs.StringVar(&o.format, "format", "auto", "format of the files: auto, text, bin or json (auto: GTEL0001 magic = bin, first character '{' or '[' = json, else text)")
	fs.IntVar(&o.batch, "batch", 10000, "edges per write batch")
	fs.BoolVar(&o.inEdges, "in-edges", true, "keep in-edges too (fixed when the store is created: a new store keeps them unless --in-edges=false is given; left out, an existing store keeps what it was created with)")
	fs.IntVar(&o.memgraphMiB, "memgraph-mib", 64, "size of one MemGraph in MiB (two alternate)")
	fs.Uint64Var(&o.historySeqs, "history-seqs", 0, "keep the store readable as of each of the last this many sequence numbers (as serve's; each batch is one); 0: only the newest")
	fs.StringVar(&o.mapping, "mapping", "", "YAML (or JSON) file of a field mapping: read each line as a JSON event through it (src, dst, weight, time, type, op: see 'graphtide serve --mapping'); implies --format json")
}

func (o *loadOptions) Validate() error {
	if len(o.files) == 0 {
		return errors.New("load needs at least one edge FILE to load")
	}
	if o.dir == "" {
		return errors.New("--dir must not be empty")
	}
	if _, ok := bulk.ParseFormat(o.format); !ok {
		return fmt.Errorf("--format must be one of: %s; got %q", bulk.FormatNames(), o.format)
	}
	if o.mapping != "" && o.format != "auto" && o.format != "json" {
		return fmt.Errorf("--mapping reads JSON lines: --format must be json (or auto), got %q", o.format)
	}
	if o.batch < 1 || o.batch > 10_000_000 {
		return fmt.Errorf("--batch must be between 1 and 10000000, got %d", o.batch)
	}
	if o.memgraphMiB < 1 || o.memgraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536, got %d", o.memgraphMiB)
	}
	for _, f := range o.files {
		info, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("edge file: %w", err)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("edge file %s is not a regular file", f)
		}
	}
	return nil
}

func newLoadCmd() *cobra.Command {
	var o loadOptions
	cmd := &cobra.Command{
		Use:   "load [flags] FILE...",
		Short: "Bulk-load edge files into the store of a data directory",
		Long: `load streams edge files into the store in --dir/store, in batches, in the
order given, and flushes at the end: when it exits 0 every edge is durable.
Memory stays bounded whatever the file size. serve must not be running on
the same --dir (the store is locked while it is open).

Formats (--format auto picks one per file from its first bytes):
  text  SNAP edge-list lines: "src dst [weight]" (insert or update),
        "d src dst" (delete the edge), "dv src" (delete the vertex and its
        edges), "v src [label]" (the vertex's record); blank lines and lines
        starting with # or % are skipped; a field that is not all digits is
        a string key (see json)
  bin   the GTEL0001 binary edge file that 'graphtide gen --format bin' writes
  json  one JSON value per line: {"op":"add"|"delete"|"delete_vertex",
        "src":..,"dst":..,"weight":..,"type":..,"ts":..} (type: the edge
        type's name or number; ts: the event time) or
        {"op":"add_vertex","src":..,"label":..,"props":{..}} (the vertex's
        record), or an array of them; src and dst may be strings, mapped to
        ids from 2^62 up by --dir/keys.dict
Numeric ids must be below 2^62 (the ids from there up belong to string keys).
With --mapping FILE each line is a JSON event of any shape, read through
the field mapping in FILE (YAML: src, dst, weight, time, op, ...; the
same as serve's mappings), e.g. src: /from_account, dst: /to_account.

Progress goes to stderr (a bar on a terminal, a line every 5 s otherwise);
the last line of stdout gives the edges, the seconds and the edges/s.

A malformed line stops the load with the file and line number (the byte
offset for bin): the edges before it are loaded and flushed, nothing from
that line on is loaded. So is an interrupt (SIGINT, SIGTERM): what was
applied is flushed, the rest is not loaded. Loading the same files again
from the start, after fixing the bad line, gives the same graph as one
complete load.

Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_DIR, or in the
YAML file given by --config, keyed by flag name.`,
		Example: `  graphtide load --dir ./graphtide-data g16.bin       # from 'graphtide gen --scale 16 --out g16.bin'
  graphtide load --dir /var/lib/graphtide --in-edges=false part-*.el   # a new store without in-edges
  graphtide load --format json --batch 50000 transfers.jsonl
  graphtide load --mapping payments.yaml payments.jsonl     # events of any shape: see serve --mapping`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := settings.Apply(cmd.Flags()); err != nil {
				return err
			}
			o.files = args
			o.inEdgesGiven = cmd.Flags().Changed("in-edges")
			if err := o.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runLoad(ctx, &o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runLoad(ctx context.Context, o *loadOptions, out, errOut io.Writer) error {
	l := bulk.DirLoad{Dir: o.dir, Files: o.files, Batch: o.batch, MappingFile: o.mapping,
		Store: engine.Options{MemGraphBytes: int64(o.memgraphMiB) << 20, KeepHistory: o.historySeqs > 0, HistorySeqs: o.historySeqs, InEdges: o.inEdges}}
	l.Format, _ = bulk.ParseFormat(o.format)
	if o.inEdgesGiven {
		l.InEdges = &o.inEdges
	}
	return bulk.RunDirLoad(ctx, l, out, errOut, progressEvery)
}
