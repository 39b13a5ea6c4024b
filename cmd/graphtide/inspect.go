package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/inspect"
	"github.com/graphtide/graphtide/internal/settings"
)

// inspectOptions are the flags of "graphtide inspect".
type inspectOptions struct {
	dir    string
	verify bool
	json   bool
}

func (o *inspectOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.dir, "dir", "graphtide-data", "data directory (as serve's); the store is <dir>/store")
	fs.BoolVar(&o.verify, "verify", false, "check everything without writing: every manifest record, every file and checksum, the key dictionary, and each against the others; any problem makes the exit status 1")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of text")
}

func (o *inspectOptions) Validate() error {
	if o.dir == "" {
		return errors.New("--dir must not be empty")
	}
	return nil
}

func newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect [flags]",
		Short: "Show the levels, files and manifest of a store; check its checksums",
		Long: `inspect opens the store in --dir/store (serve must not be running on it)
and prints:
  - the manifest summary: the durable sequence number, the recorded source
    position (as Kafka topic/partition/next offset when serve wrote it),
    the vertex bounds (numeric ids, and string-key ids from 2^62 up);
  - the key dictionary (--dir/keys.dict) size, when there is one;
  - per level: files, bytes, edge versions (tombstones included);
  - every live file: name, level, direction, source vertex range and
    count, largest dst, entries, bytes, sequence range, layout flags
    (dense or sparse index, dst32, versions, weights, multi-version,
    tombstones; see internal/core/segment.h).
inspect never writes: it opens the store read-only (beside other readers,
never beside serve) and the key dictionary read-only, so it creates,
changes and deletes nothing. Opening checks every manifest record and every
live file's header, footer and index, and refuses a damaged store.

--verify checks everything and reports EVERY problem with its file and
byte offset (exit status 1 if there is any): each manifest record, each
segment file present (header, footer, index and every data block), each
against the manifest (missing, mismatched, and files that are neither live
nor provably garbage), each key dictionary record, and that the store uses
no more string-key ids than the dictionary holds. It also lists, as notes,
what the next read-write open changes that holds no data (a torn tail cut
short by a crash, leftovers of an unfinished flush or compaction).
'graphtide repair' says what can be repaired.

Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_DIR, or in the
YAML file given by --config, keyed by flag name.`,
		Example: `  graphtide inspect --dir ./graphtide-data
  graphtide inspect --dir /var/lib/graphtide --verify
  graphtide inspect --json | jq '.levels'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.ApplyChecked(cmd.Flags(), &o); err != nil {
				return err
			}
			return inspect.Run(o.dir, o.verify, o.json, cmd.OutOrStdout())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
