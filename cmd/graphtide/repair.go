package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/settings"
)

// repairOptions are the flags of "graphtide repair".
type repairOptions struct {
	dir string
	yes bool
}

func (o *repairOptions) AddFlags(fs *pflag.FlagSet) {
	settings.AddConfigFlag(fs)
	fs.StringVar(&o.dir, "dir", "graphtide-data", "data directory (as serve's)")
	fs.BoolVar(&o.yes, "yes", false, "do the repair (without it, repair only says what it would do)")
}

func (o *repairOptions) Validate() error {
	if o.dir == "" {
		return errors.New("--dir must not be empty")
	}
	return nil
}

func newRepairCmd() *cobra.Command {
	var o repairOptions
	cmd := &cobra.Command{
		Use:   "repair [flags]",
		Short: "Say what can be repaired in a damaged data directory, and with --yes repair it",
		Long: `repair checks the data directory --dir as 'inspect --verify' does and prints
what it would change to make the store open again, losing as little as
possible. Without --yes it changes nothing. With --yes it first creates
the backup directory <dir>/repair-<UTC time>, copies or moves into it
everything it changes (the MANIFEST, keys.dict, files it moves aside),
records what it did in REPAIR.txt there, then repairs and checks again.
serve must not be running on --dir.

What it can repair:
  - a damaged MANIFEST record: the MANIFEST is cut there; the store goes
    back to the newest complete flush before it, and serve replays from
    that flush's recorded Kafka position (if Kafka still holds it);
  - segment files that no MANIFEST record keeps and that are not provably
    garbage (and those only the cut records kept): moved into the backup;
  - a damaged keys.dict record: its id is retired (never given to another
    key; its vertex keeps its edges but has no key), later keys keep
    their ids; a damaged record header cuts the dictionary there, and
    every id the store uses beyond what is left is retired.
What it cannot repair, it lists and leaves alone (exit status 1): damaged
data in a live segment file, a damaged MANIFEST header or create record,
live files that are missing. Restore those from a backup, or move the store
away and rebuild it from Kafka.

Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_DIR, or in the
YAML file given by --config, keyed by flag name.`,
		Example: `  graphtide repair --dir /var/lib/graphtide          # what would be done
  graphtide repair --dir /var/lib/graphtide --yes    # do it, with a backup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.ApplyChecked(cmd.Flags(), &o); err != nil {
				return err
			}
			return datadir.Repair(o.dir, o.yes, cmd.OutOrStdout())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
