package main

import (
	"errors"
	"fmt"
	"io"

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
			if err := settings.Apply(cmd.Flags()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return runRepair(&o, cmd.OutOrStdout())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runRepair(o *repairOptions, out io.Writer) error {
	plan, err := datadir.PlanRepair(o.dir)
	if err != nil {
		return err
	}
	defer plan.Close()
	if plan.Empty() {
		fmt.Fprintf(out, "nothing to repair: %s is sound\n", o.dir)
		return nil
	}
	for _, p := range plan.Before.Problems {
		fmt.Fprintf(out, "found: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
	}
	for _, p := range plan.Unrepairable {
		fmt.Fprintf(out, "CANNOT REPAIR: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
	}
	if len(plan.Unrepairable) > 0 {
		return fmt.Errorf("%d problem(s) in %s cannot be repaired; nothing was changed", len(plan.Unrepairable), o.dir)
	}
	verb := "would"
	if o.yes {
		verb = "will"
	}
	fmt.Fprintf(out, "repair %s:\n", verb)
	for _, a := range plan.Actions {
		fmt.Fprintf(out, "  - %s\n", a)
	}
	if !o.yes {
		fmt.Fprintf(out, "nothing was changed: run again with --yes to repair (everything it changes is first kept in %s/repair-<UTC time>)\n", o.dir)
		return nil
	}
	backup, err := plan.Apply()
	if err != nil {
		if backup != "" {
			return fmt.Errorf("repair failed (what it changed so far is in %s): %w", backup, err)
		}
		return err
	}
	fmt.Fprintf(out, "repaired; what was changed is kept in %s\n", backup)
	chk, err := datadir.Check(o.dir)
	if err != nil {
		return err
	}
	if !chk.OK() {
		for _, p := range chk.Problems {
			fmt.Fprintf(out, "still: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
		}
		return fmt.Errorf("%d problem(s) remain in %s after the repair", len(chk.Problems), o.dir)
	}
	fmt.Fprintf(out, "check after the repair: ok\n")
	return nil
}
