package datadir

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/writes"
)

// Entry is one kind of entry of a data directory: its name, what protects
// it (or why its damage is harmless), and how the data directory claims
// and checks it. Entries lists every kind; a data directory holds nothing
// else. A new kind of file is one more Entry (with its claim and verify
// when the store's state depends on it) and its corruption tests
// (cmd/graphtide's TestEveryFileKind lists a data directory serve filled
// and fails on an entry no Entry matches, or one its table does not damage).
type Entry struct {
	// Name is the entry's path in the data directory, '/'-separated; with
	// Pattern, a path.Match pattern.
	Name    string
	Pattern bool
	// Dir: the entry is a directory (its content is its own).
	Dir bool
	// Guard says what protects the entry, or why its damage is harmless.
	Guard string
	// Damage says what a flipped bit, a cut and a deletion each do.
	Damage string

	// Counts says what the entry's claim counts ("" when not claimed).
	Counts string

	// Claimed entries are in the Claims: claim is what an open Dir
	// claims of the file now (tracked false: this Dir does not follow
	// the file, and the claim recorded at open is carried on; exists
	// false: no file, no claim), missing what a missing claimed file
	// means and what to do.
	claim   func(d *Dir) (v uint64, exists, tracked bool)
	missing string
	// verify checks the entry of the data directory dir without writing
	// a byte, given the claim recorded of it (nil: none) and the store's
	// check, adding what it finds to r; nil when the entry is checked
	// with the store (engine.Check) or is never read.
	verify func(dir string, claim *uint64, r *Report)
}

// Claimed reports whether the Claims record the entry.
func (e *Entry) Claimed() bool { return e.claim != nil }

// Match reports whether rel (a path in the data directory,
// '/'-separated) is an entry of this kind.
func (e *Entry) Match(rel string) bool {
	if !e.Pattern {
		return rel == e.Name
	}
	ok, _ := path.Match(e.Name, rel)
	return ok
}

// Lookup is the entry kind of rel (a path in the data directory,
// '/'-separated), nil when it is none of them.
func Lookup(rel string) *Entry {
	for i := range Entries {
		if Entries[i].Match(rel) {
			return &Entries[i]
		}
	}
	return nil
}

// HistoryName is the time index's file (package history).
const HistoryName = history.FileName

// WritesName is the writes topic's outcome log (package writes).
const WritesName = writes.LogFileName

// Entries are the kinds of entries of a data directory.
var Entries = []Entry{
	{
		Name:   StoreName + "/MANIFEST",
		Guard:  "the store's root of trust: an append-only log of checksummed records (CRC-32C, lengths authenticated by a checksum of their own); it records, with every flush, the durable seq, the source position and the data directory's claims of its files",
		Damage: "a flipped bit is refused with the byte offset; a cut is cut back only when it provably tears the last record (its authenticated length runs past the end, or a zero-filled tail), else refused; deletion is refused (segment files without a MANIFEST are never taken for a new store)",
	},
	{
		Name: StoreName + "/*.seg", Pattern: true,
		Guard:  "segment files: every header, index and data block checksummed; the MANIFEST names every live one",
		Damage: "a flipped bit or a cut is refused (a damaged data block when first read, never returned); a missing live file is refused; a file the MANIFEST neither keeps nor proves garbage is refused (it may be data)",
	},
	{
		Name:   StoreName + "/MANIFEST.tmp",
		Guard:  "the leftover of a MANIFEST rewrite a crash interrupted before its rename: the MANIFEST beside it is whole and current",
		Damage: "never read: any damage is harmless; the next read-write open deletes it",
	},
	{
		Name:   StoreName + "/LOCK",
		Guard:  "the store's lock: an empty file whose flock keeps a second writer out (readers share it)",
		Damage: "its content is never read: bytes in it are harmless; a deleted LOCK is created again by the next open (deleted while a process holds the store, it would let a second writer in: never delete it then)",
	},
	{
		Name:   KeysName,
		Guard:  "checksummed records (CRC-32C, lengths authenticated); the MANIFEST's key-id bound says how many ids the store uses",
		Damage: "a flipped bit is refused with the byte offset; a cut is cut back only when it provably tears the last append, else refused; a missing or short keys.dict is refused when the store uses more key ids than it holds",
	},
	{
		Name:   KeysName + ".tmp",
		Guard:  "the leftover of a keys.dict creation or repair a crash interrupted before its rename",
		Damage: "never read as the dictionary: any damage is harmless; the next creation replaces it",
	},
	{
		Name:   TypesName,
		Guard:  "a CRC-32C of the names, and every byte must be what graphtide writes for them; claimed: the number of named types",
		Damage: "a flipped bit or a cut is refused with the byte offset; deletion, or fewer names than claimed, is refused (the next new name would take a lost name's number and its edges)",
		Counts: "type names, type 0 included",
		claim: func(d *Dir) (uint64, bool, bool) {
			n := d.Types.Len()
			return uint64(n), n > 1, d.Types != nil
		},
		missing: "every edge type named so far would lose its name, and the next new name would take the number of the first lost one and its edges; restore the file from a backup (or rebuild the store from Kafka)",
		verify:  verifyTypes,
	},
	{
		Name:   HistoryName,
		Guard:  "a CRC-32C per sample and of the header, which seals every sample the file held when it was last written whole (a clean stop writes it whole); claimed: the seq of the newest sample when each flush's last batch applied (a torn tail is only what lies past both)",
		Damage: "a flipped bit or a cut in a sealed or claimed sample, or a cut at a sample boundary before one, is refused with the byte offset; past both (a sample recorded after the last clean stop and the last flush) it is a torn tail, cut (a sample lost makes reads as of a time coarser); deletion is refused",
		Counts: "seq of the newest sample",
		claim: func(d *Dir) (uint64, bool, bool) {
			if d.Times == nil {
				return 0, false, false
			}
			return d.Times.Claim().Newest, true, true
		},
		missing: "reads as of a time would answer older seqs, or nothing; restore the file from a backup, or run 'graphtide repair' to start a new index",
		verify:  verifyHistory,
	},
	{
		Name:   WritesName,
		Guard:  "a CRC-32C per record (lengths authenticated) and of the header; claimed: how many records were appended when each flush's last batch applied (a torn tail is only what lies past it)",
		Damage: "a flipped bit or a cut in a claimed record, or a cut at a record boundary before it, is refused with the byte offset; past the claim it is a torn tail, cut (that write is evaluated again when Kafka replays it); deletion is refused",
		Counts: "records appended",
		claim: func(d *Dir) (uint64, bool, bool) {
			if d.Writes == nil {
				return 0, false, false
			}
			return d.Writes.Claim().Records, true, true
		},
		missing: "keyed and conditional writes the store applied would lose their outcomes (a retry would be told another, a replay evaluated again); restore the file from a backup, or start with the store and the log of one backup",
		verify:  verifyWrites,
	},
	{
		Name:   RegisteredName,
		Guard:  "a CRC-32C per line, and every byte must be what graphtide writes; claimed: the file's generation (how many times it was saved)",
		Damage: "a flipped bit or a cut is refused with the byte offset; deletion, or an older generation than claimed, is refused (every analytic registered over the API would be dropped without a word)",
		Counts: "generation: saves of the file",
		claim: func(d *Dir) (uint64, bool, bool) {
			if d.Registered == nil {
				return 0, false, false
			}
			g, ok := d.Registered.Claim()
			return g, ok, true
		},
		missing: "every analytic registered over the API would be dropped without a word; restore the file from a backup, or run 'graphtide repair' to start without them (register them again)",
		verify:  verifyRegistered,
	},
	{
		Name:   CheckpointName,
		Guard:  "checksummed sections (CRC-32C); derived state: everything in it is computed again from the store",
		Damage: "a flipped bit, a cut or a deletion makes serve ignore it (verify notes it) and compute the analytics from the store",
		verify: verifyCheckpoint,
	},
	{
		Name:   CheckpointName + ".tmp",
		Guard:  "the leftover of a checkpoint a crash interrupted before its rename",
		Damage: "never read: any damage is harmless; the next checkpoint replaces it",
	},
	{
		Name: ".*.tmp-*", Pattern: true,
		Guard:  "the leftover of an atomic replace (package durable) of types.json, history.idx, writes.log or registered-analytics.json a crash interrupted before its rename: the file beside it is whole",
		Damage: "never read: any damage is harmless",
	},
	{
		Name: EmbeddedBrokerName, Dir: true,
		Guard:  "the embedded broker's own data (franz-go kfake; serve without --brokers, for trying graphtide out): kfake checksums its entries and record batches and drops a damaged tail, as a Kafka broker loses what it did not replicate",
		Damage: "not the store's: what the store holds is in the store; a broker whose data is lost or replaced gets a new cluster ID, and serve refuses it (the store records the cluster and topic IDs its offsets belong to)",
	},
	{
		Name: repairPrefix + "*", Pattern: true, Dir: true,
		Guard:  "what 'graphtide repair' changed, as it was before (with REPAIR.txt): backups for the operator",
		Damage: "never read by graphtide: any damage is harmless",
	},
}

// entryOf is the Entry named name (a claimed file), nil if none.
func entryOf(name string) *Entry {
	for i := range Entries {
		if !Entries[i].Pattern && Entries[i].Name == name {
			return &Entries[i]
		}
	}
	return nil
}

// missingClaimed is a problem for every file the claims record that is
// missing from the data directory dir.
func missingClaimed(dir string, c Claims) []Problem {
	var ps []Problem
	for _, name := range slices.Sorted(maps.Keys(c)) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		what := "graphtide does not know this file (a newer graphtide wrote the store); restore it from a backup"
		if e := entryOf(name); e != nil {
			what = e.missing
		}
		ps = append(ps, Problem{File: p, What: "missing: the store's durable state records this file (claim " + fmt.Sprint(c[name]) + "); " + what})
	}
	return ps
}

// problemOf is err as a Problem about file: its offset when it is a
// *durable.CorruptError.
func problemOf(file string, err error) Problem {
	p := Problem{File: file, What: err.Error()}
	var ce *durable.CorruptError
	if errors.As(err, &ce) {
		p.File, p.Offset, p.What = ce.File, ce.Offset, ce.What
	}
	return p
}

// typesShort is the error of a type dictionary holding fewer names than
// claimed.
func typesShort(dir string, have int, claim uint64) error {
	size := int64(0)
	if info, err := os.Stat(TypesPath(dir)); err == nil {
		size = info.Size()
	}
	return &durable.CorruptError{Kind: "typedict", File: TypesPath(dir), Offset: size,
		What: fmt.Sprintf("holds %d type names (type 0 included), but the store's durable state records %d: names were lost (an older copy of the file?), and the next new name would take the number of a lost one and its edges; restore the newest copy", have, claim)}
}

func verifyTypes(dir string, claim *uint64, r *Report) {
	d, err := typedict.OpenReadOnly(TypesPath(dir))
	if err != nil {
		r.Problems = append(r.Problems, problemOf(TypesPath(dir), err))
		return
	}
	if claim != nil && uint64(d.Len()) < *claim {
		if _, err := os.Stat(TypesPath(dir)); err == nil {
			r.Problems = append(r.Problems, problemOf(TypesPath(dir), typesShort(dir, d.Len(), *claim)))
		} // missing: missingClaimed says so
	}
}

func verifyHistory(dir string, claim *uint64, r *Report) {
	file := filepath.Join(dir, HistoryName)
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return // missingClaimed says so if claimed
	}
	var c *history.Claim
	if claim != nil {
		c = &history.Claim{Newest: *claim}
	}
	last := ^uint64(0)
	if r.Store != nil && r.Store.ManifestOK {
		last = r.Store.DurableSeq
	}
	if _, err := history.OpenClaimed(file, last, true, c); err != nil {
		r.Problems = append(r.Problems, problemOf(file, err))
	}
}

func verifyWrites(dir string, claim *uint64, r *Report) {
	file := WritesLogPath(dir)
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return
	}
	var c *writes.Claim
	if claim != nil {
		c = &writes.Claim{Records: *claim}
	}
	if _, err := writes.OpenLogClaimed(file, true, c); err != nil {
		r.Problems = append(r.Problems, problemOf(file, err))
	}
}

func verifyRegistered(dir string, claim *uint64, r *Report) {
	file := RegisteredAnalyticsPath(dir)
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return
	}
	if _, err := OpenRegistered(file, claim); err != nil {
		r.Problems = append(r.Problems, problemOf(file, err))
	}
}

// verifyCheckpoint: the analytics' checkpoint holds no data (everything
// in it is derived again from the store): damage is a note, since serve
// then ignores it and recomputes.
func verifyCheckpoint(dir string, _ *uint64, r *Report) {
	_, err := checkpoint.Verify(CheckpointPath(dir))
	if err == nil || errors.Is(err, checkpoint.ErrNotExist) {
		return
	}
	var ce *checkpoint.CorruptError
	if errors.As(err, &ce) {
		r.Notes = append(r.Notes, Problem{File: ce.File, Offset: ce.Offset,
			What: ce.What + "; serve ignores this checkpoint and computes the analytics from the store"})
	} else {
		r.Notes = append(r.Notes, Problem{File: CheckpointPath(dir), What: err.Error()})
	}
}
