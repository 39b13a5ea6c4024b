package datadir

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/graphtide/graphtide/internal/alertlog"
	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/keydict"
)

// RepairPlan is what Repair would do to a data directory, computed without
// changing anything (PlanRepair) and done by Apply.
//
// What a repair can do, and nothing else:
//   - cut the MANIFEST at its first damaged record (or its torn tail): the
//     store goes back to the newest complete flush before it, and a Kafka
//     consumer replays from that flush's recorded position;
//   - move aside (into the backup directory) every segment file that is
//     neither live nor provably garbage, and every file that only the cut
//     records referred to;
//   - repair keys.dict (keydict.PlanRepair): retire damaged and lost ids so
//     that no id the store uses is ever given to another key;
//   - put a new, sealed time index in place of a lost or damaged
//     history.idx (moving the damaged one aside): one sample, the store's
//     durable seq at the time of the repair, so that reads as of earlier
//     times fail rather than answer wrong;
//   - put an empty list, at the generation the store claims, in place of a
//     lost or damaged registered-analytics.json (moving the damaged one
//     aside): the analytics registered over the API must be registered
//     again.
//
// What it cannot do is listed in Unrepairable: damaged data in a live
// segment file, a damaged MANIFEST header or create record, live files that
// are missing, a damaged or lost types.json (edge types would lose their
// names) or writes.log (applied writes would lose their outcomes). Those
// need a backup, or the store moved away and rebuilt from Kafka.
type RepairPlan struct {
	Dir string
	// Actions, one line each, in the order Apply takes them.
	Actions []string
	// Unrepairable problems: Apply refuses while there are any.
	Unrepairable []Problem
	// Before is the check the plan was made from.
	Before *Report

	manifestCut  int64 // -1: none
	manifestSum  [32]byte
	manifestSize int64
	moveAside    []string // file names in the store directory
	keys         *keydict.RepairPlan
	createKeys   uint64 // keys.dict is missing: create it with this many retired ids
	// newTimes: put a new time index (one sample, seq timesSeq) in place
	// of history.idx; newRegistered: an empty list at generation
	// registeredGen in place of registered-analytics.json.
	newTimes, newRegistered bool
	timesSeq, registeredGen uint64
	// newAlerts: an empty alert history whose first alert is alertsFirst
	// (the claim) in place of alerts.log.
	newAlerts   bool
	alertsFirst uint64
}

// Close releases what the plan holds (the key dictionary's lock, held from
// PlanRepair to Apply so that nothing changes it in between). Apply
// releases it too.
func (p *RepairPlan) Close() error {
	if p.keys == nil {
		return nil
	}
	return p.keys.Close()
}

// Empty reports whether there is nothing to repair.
func (p *RepairPlan) Empty() bool { return len(p.Actions) == 0 && len(p.Unrepairable) == 0 }

// PlanRepair checks the data directory at path and says what Apply would
// do. It changes nothing.
func PlanRepair(path string) (*RepairPlan, error) {
	before, err := Check(path)
	if err != nil {
		return nil, err
	}
	p := &RepairPlan{Dir: path, Before: before, manifestCut: -1}
	sp := StorePath(path)
	mpath := filepath.Join(sp, "MANIFEST")
	data, err := os.ReadFile(mpath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	p.manifestSum, p.manifestSize = sha256.Sum256(data), int64(len(data))

	// The store: where to cut the MANIFEST, if anywhere.
	after := before.Store
	if before.Store == nil {
		p.Unrepairable = append(p.Unrepairable, before.Problems...)
	} else {
		cut := int64(-1)
		for _, q := range before.Store.Problems {
			if q.File == mpath && (cut < 0 || int64(q.Offset) < cut) {
				cut = int64(q.Offset)
			}
		}
		if cut < 0 {
			for _, q := range before.Store.Notes {
				if q.Kind == engine.TornTail {
					cut = int64(q.Offset)
				}
			}
		}
		if cut >= 0 {
			if after, err = engine.CheckCut(sp, cut); err != nil {
				return nil, err
			}
			if !after.ManifestOK {
				p.Unrepairable = append(p.Unrepairable, Problem{File: mpath, Offset: cut,
					What: "the MANIFEST's header or create record is damaged: nothing before the damage describes the store; restore the MANIFEST from a backup, or move " + sp + " away and rebuild the store from Kafka"})
			} else {
				p.manifestCut = cut
				p.Actions = append(p.Actions, fmt.Sprintf("cut %s at byte offset %d, dropping its last %d bytes: the store goes back to durable sequence number %d (the newest complete flush before the damage), and serve replays from that flush's recorded position (Kafka must still hold those records)",
					mpath, cut, int64(len(data))-cut, after.DurableSeq))
			}
		}
		if after.ManifestOK {
			for _, q := range after.Notes {
				// Leftovers the next open would delete: after a cut they
				// may be what the cut records referred to, so they go to
				// the backup instead.
				if q.Kind == engine.Leftover && p.manifestCut >= 0 {
					p.moveAside = append(p.moveAside, filepath.Base(q.File))
				}
			}
			for _, q := range after.Problems {
				if q.Kind == engine.UnexplainedFile {
					p.moveAside = append(p.moveAside, filepath.Base(q.File))
				} else {
					p.Unrepairable = append(p.Unrepairable, Problem{File: q.File, Offset: int64(q.Offset), What: q.What})
				}
			}
		}
		sort.Strings(p.moveAside)
		for _, f := range p.moveAside {
			p.Actions = append(p.Actions, fmt.Sprintf("move %s into the backup directory (no MANIFEST record keeps it; it may be data)", filepath.Join(sp, f)))
		}
	}

	// The key dictionary: retire damaged ids and every id the store uses
	// beyond what it holds.
	minIDs := uint64(0)
	for _, r := range []*engine.CheckReport{before.Store, after} {
		if r != nil && r.ManifestOK {
			minIDs = max(minIDs, keyIDs(r.HighBound))
		}
	}
	kp := KeysPath(path)
	if _, err := os.Stat(kp); err == nil {
		if p.keys, err = keydict.PlanRepair(kp, minIDs); err != nil {
			return nil, err
		}
		p.Actions = append(p.Actions, p.keys.Changes...)
	} else if minIDs > 0 {
		p.createKeys = minIDs
		p.Actions = append(p.Actions, fmt.Sprintf("create %s holding %d retired ids (the store uses that many string-key ids and their keys are lost: those vertices keep their edges but have no key)", kp, minIDs))
	}
	if before.Store != nil { // else every problem is unrepairable already
		p.planFiles(after)
	}
	return p, nil
}

// planFiles plans the repair of the files beside the store and the key
// dictionary (Entries), given the store as the repair leaves it (after).
func (p *RepairPlan) planFiles(after *engine.CheckReport) {
	sp := StorePath(p.Dir) + string(filepath.Separator)
	for _, q := range p.Before.Problems {
		if strings.HasPrefix(q.File, sp) || q.File == StorePath(p.Dir) || q.File == KeysPath(p.Dir) {
			continue // the store's and the dictionary's: planned above
		}
		switch {
		case q.File == filepath.Join(p.Dir, HistoryName) && after != nil && after.ManifestOK:
			if !p.newTimes {
				p.newTimes, p.timesSeq = true, after.DurableSeq
				p.Actions = append(p.Actions, fmt.Sprintf("put a new time index in place of %s (the damaged or lost one goes into the backup directory): one sample, now and the store's durable seq %d; reads as of a time before the repair fail, rather than answer an older seq", q.File, after.DurableSeq))
			}
		case q.File == AlertsPath(p.Dir):
			if !p.newAlerts {
				claims, _ := checkClaims(p.Dir, p.Before)
				p.newAlerts, p.alertsFirst = true, claims[AlertsName]
				p.Actions = append(p.Actions, fmt.Sprintf("put an empty alert history in place of %s (the damaged or lost one goes into the backup directory): GET /v1/alerts lists only the alerts raised from then on", q.File))
			}
		case q.File == RegisteredAnalyticsPath(p.Dir):
			if !p.newRegistered {
				claims, _ := checkClaims(p.Dir, p.Before)
				p.newRegistered, p.registeredGen = true, claims[RegisteredName]
				p.Actions = append(p.Actions, fmt.Sprintf("put an empty list in place of %s (the damaged or lost one goes into the backup directory): every analytic registered over the API is dropped; register them again", q.File))
			}
		default:
			p.Unrepairable = append(p.Unrepairable, q)
		}
	}
}

// applyFiles does what planFiles planned, moving what it replaces into
// backup first.
func (p *RepairPlan) applyFiles(backup string) error {
	replace := func(path string, write func() error) error {
		if err := os.Rename(path, filepath.Join(backup, filepath.Base(path))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("datadir: move aside: %w", err)
		}
		if err := durable.SyncDir(backup); err != nil {
			return err
		}
		return write()
	}
	if p.newTimes {
		path := filepath.Join(p.Dir, HistoryName)
		if err := replace(path, func() error {
			return history.WriteNew(path, []history.Sample{{Time: time.Now().Round(0), Seq: p.timesSeq}})
		}); err != nil {
			return err
		}
	}
	if p.newAlerts {
		path := AlertsPath(p.Dir)
		if err := replace(path, func() error { return alertlog.WriteEmpty(path, p.alertsFirst) }); err != nil {
			return err
		}
	}
	if p.newRegistered {
		path := RegisteredAnalyticsPath(p.Dir)
		if err := replace(path, func() error { return writeEmptyRegistered(path, p.registeredGen) }); err != nil {
			return err
		}
	}
	return nil
}

// Apply does what the plan says, after copying or moving everything it
// changes into a new backup directory <dir>/repair-<UTC time>, whose path
// it returns. It refuses while there are unrepairable problems, while the
// store is open elsewhere, or when the MANIFEST changed since the plan.
func (p *RepairPlan) Apply() (string, error) {
	if len(p.Unrepairable) > 0 {
		return "", fmt.Errorf("datadir: %d problem(s) cannot be repaired; nothing was changed", len(p.Unrepairable))
	}
	if len(p.Actions) == 0 {
		return "", nil
	}
	sp := StorePath(p.Dir)
	unlock, err := lockStore(sp)
	if err != nil {
		return "", err
	}
	defer unlock()
	mpath := filepath.Join(sp, "MANIFEST")
	data, err := os.ReadFile(mpath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("datadir: %w", err)
	}
	if sha256.Sum256(data) != p.manifestSum || int64(len(data)) != p.manifestSize {
		return "", errors.New("datadir: the MANIFEST changed since the repair was planned: plan again")
	}
	backup := filepath.Join(p.Dir, repairPrefix+time.Now().UTC().Format("20060102T150405.000Z"))
	if err := os.Mkdir(backup, 0o755); err != nil {
		return "", fmt.Errorf("datadir: backup directory: %w", err)
	}
	var log bytes.Buffer
	fmt.Fprintf(&log, "graphtide repair of %s at %s\n", p.Dir, time.Now().UTC().Format(time.RFC3339))
	if p.manifestCut >= 0 {
		if err := copyFile(mpath, filepath.Join(backup, "MANIFEST")); err != nil {
			return backup, err
		}
	}
	for _, f := range p.moveAside {
		if err := os.Rename(filepath.Join(sp, f), filepath.Join(backup, f)); err != nil {
			return backup, fmt.Errorf("datadir: move aside: %w", err)
		}
	}
	if err := durable.SyncDir(backup); err != nil {
		return backup, err
	}
	if p.manifestCut >= 0 {
		if err := truncateSync(mpath, p.manifestCut); err != nil {
			return backup, err
		}
	}
	if len(p.moveAside) > 0 {
		if err := durable.SyncDir(sp); err != nil {
			return backup, err
		}
	}
	if p.keys != nil {
		err := p.keys.Apply(backup)
		p.keys.Close()
		if err != nil {
			return backup, err
		}
	} else if p.createKeys > 0 {
		// A new, empty dictionary, then every id the store uses retired.
		d, err := keydict.Open(KeysPath(p.Dir))
		if err != nil {
			return backup, err
		}
		if err := d.Close(); err != nil {
			return backup, err
		}
		kp, err := keydict.PlanRepair(KeysPath(p.Dir), p.createKeys)
		if err != nil {
			return backup, err
		}
		defer kp.Close()
		if err := kp.Apply(backup); err != nil {
			return backup, err
		}
	}
	if err := p.applyFiles(backup); err != nil {
		return backup, err
	}
	for _, a := range p.Actions {
		fmt.Fprintln(&log, "-", a)
	}
	if err := os.WriteFile(filepath.Join(backup, "REPAIR.txt"), log.Bytes(), 0o644); err != nil {
		return backup, fmt.Errorf("datadir: %w", err)
	}
	return backup, durable.SyncDir(backup)
}

// lockStore takes the store directory's LOCK exclusively, as a writer's
// open does (the core's flock protocol, internal/core/recovery.h LockStoreDir), so
// that no store is open while a repair changes its files.
func lockStore(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("store %s is in use by another process (is graphtide serve running on it?): stop it before repairing", dir)
		}
		return nil, fmt.Errorf("datadir: lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("datadir: copy %s: %w", from, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("datadir: %w", err)
	}
	return out.Close()
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("datadir: cut %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	return nil
}

// Repair is 'graphtide repair': it plans the repair of the data directory
// dir (PlanRepair) and writes the plan to out, every problem found and
// every one it cannot repair; with yes it applies the plan (keeping what
// it changes in a backup directory) and checks the directory again.
// Without yes, or when any problem cannot be repaired, it changes nothing.
// The error says what remains wrong.
func Repair(dir string, yes bool, out io.Writer) error {
	plan, err := PlanRepair(dir)
	if err != nil {
		return err
	}
	defer plan.Close()
	if plan.Empty() {
		fmt.Fprintf(out, "nothing to repair: %s is sound\n", dir)
		return nil
	}
	for _, p := range plan.Before.Problems {
		fmt.Fprintf(out, "found: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
	}
	for _, p := range plan.Unrepairable {
		fmt.Fprintf(out, "CANNOT REPAIR: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
	}
	if len(plan.Unrepairable) > 0 {
		return fmt.Errorf("%d problem(s) in %s cannot be repaired; nothing was changed", len(plan.Unrepairable), dir)
	}
	verb := "would"
	if yes {
		verb = "will"
	}
	fmt.Fprintf(out, "repair %s:\n", verb)
	for _, a := range plan.Actions {
		fmt.Fprintf(out, "  - %s\n", a)
	}
	if !yes {
		fmt.Fprintf(out, "nothing was changed: run again with --yes to repair (everything it changes is first kept in %s/repair-<UTC time>)\n", dir)
		return nil
	}
	// The repaired store is not what the analytics' checkpoint followed.
	if err := DropCheckpoint(dir); err != nil {
		return err
	}
	backup, err := plan.Apply()
	if err != nil {
		if backup != "" {
			return fmt.Errorf("repair failed (what it changed so far is in %s): %w", backup, err)
		}
		return err
	}
	fmt.Fprintf(out, "repaired; what was changed is kept in %s\n", backup)
	chk, err := Check(dir)
	if err != nil {
		return err
	}
	if !chk.OK() {
		for _, p := range chk.Problems {
			fmt.Fprintf(out, "still: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
		}
		return fmt.Errorf("%d problem(s) remain in %s after the repair", len(chk.Problems), dir)
	}
	fmt.Fprintf(out, "check after the repair: ok\n")
	return nil
}
