// Package datadir is the layout of a graphtide data directory and the one
// way to open, check and repair one. serve, load, query, inspect, compact
// and repair all go through it.
//
// Layout (Entries lists every kind of entry, with what protects it and
// what each kind of damage does; nothing else belongs in a data
// directory):
//
//	<dir>/store            the engine's store (segment files, MANIFEST, LOCK)
//	<dir>/keys.dict        the string-key dictionary (internal/keydict)
//	<dir>/types.json       the names of edge types (internal/typedict); absent
//	                       while no record has named one
//	<dir>/history.idx      the time index of a store that keeps history
//	                       (internal/history)
//	<dir>/alerts.log       the alert history behind GET /v1/alerts (internal/alertlog)
//	<dir>/writes.log       the outcomes of the writes topic's keyed and
//	                       conditional batches (internal/writes)
//	<dir>/registered-analytics.json
//	                       the analytics registered over the HTTP API
//	                       (Registered; what they mean is internal/server's)
//	<dir>/analytics.ckpt   the analytics' checkpoint (internal/checkpoint):
//	                       derived state, computed again when damaged
//	<dir>/embedded-broker  the embedded Kafka broker's data (serve without --brokers)
//	<dir>/repair-<time>    what graphtide repair changed, as it was before
//
// Every file is held to the core's rule: checksummed, read by Check
// (inspect --verify), and refused with file and byte offset when damaged,
// or provably harmless. What makes a missing or short file provable is
// the store's own record of the files beside it (Claims): with every
// flush, the MANIFEST records, as the store's annex (engine.SetAnnex), how
// much of each file the durable data depends on (the type names, the
// writes records, the newest time sample, the registered analytics'
// generation), as they were when the flush's last batch applied. The
// MANIFEST is the root of trust: its own loss or damage the store refuses,
// so a claim cannot vanish unnoticed; and the claim is taken at the moment
// the data that depends on the file is applied, so it never claims what a
// crash could still tear. A store written before claims opens unchanged,
// with nothing proven, and records them with its next flush. The claims
// ride in the MANIFEST's one opaque slot beside ingest's source position
// (the engine wraps both in an envelope), so the C++ core is unchanged
// and ingest never sees them; a file of claims of its own would need a
// proof of its own existence, and the key dictionary or the analytics'
// checkpoint can be missing legitimately (no string keys; derived state).
//
// What damage does, file by file (a flipped bit, a cut, a deletion; the
// same in Entries, and tested by cmd/graphtide's TestEveryFileKind):
//
//   - store/MANIFEST: a flip is refused; a cut is refused unless it
//     provably tears the last record (the store then opens at the flush
//     before it, and Kafka replays the rest); a deletion is refused.
//   - store/*.seg: a flip, a cut, a deletion of a live file are refused.
//   - keys.dict: a flip is refused; a cut or a deletion is refused when
//     it takes ids the store uses (else it drops only keys no edge uses).
//   - types.json: a flip, a cut, a deletion (once claimed) are refused.
//   - history.idx, writes.log: a flip or a cut is refused anywhere the
//     claims (and, for the time index, the seal a clean stop writes)
//     prove whole; past that it is a torn tail, cut (a sample or a write's
//     outcome that no durable data depends on); a deletion is refused.
//   - registered-analytics.json: a flip, a cut, a deletion (once claimed)
//     are refused.
//   - analytics.ckpt: any damage is noted, and serve computes the
//     analytics from the store instead.
//   - store/LOCK, leftovers of interrupted writes (*.tmp), repair-<time>:
//     never read as data, any damage is harmless; embedded-broker: the
//     broker's own (kfake checksums it), and a broker that lost it has a
//     new cluster ID, which serve refuses.
//
// What it promises:
//
//   - Open opens the store and the key dictionary together and refuses a
//     pair that disagrees: a store whose key-id bound exceeds the ids the
//     dictionary holds (the dictionary lost keys the graph uses, and its
//     next new key would take a used id and inherit that vertex's edges).
//   - Open and OpenReadOnly refuse, before they create or change anything,
//     a data directory missing a file its claims prove existed; each file
//     they read is refused when damaged, or when it holds less than its
//     claim (a type dictionary with fewer names, whose next new name would
//     take over a lost name's edges; a time index or an outcome log that
//     lost claimed records). A torn tail (what a crash leaves of the last
//     append) is cut only past what the claims, and a time index's seal,
//     prove whole. (A read-only open checks writes.log and
//     registered-analytics.json only for being there: it does not read
//     them. Check reads everything.)
//   - OpenReadOnly writes nothing, creates nothing and deletes nothing: the
//     store is opened read-only (engine.Options.ReadOnly) and the dictionary
//     read-only (keydict.OpenReadOnly); both share their locks with other
//     readers and exclude a writer.
//   - Check reports every problem of the store, of the dictionary, between
//     them and of every other file against its claim, with file and byte
//     offset, without writing a byte.
//   - Repair changes nothing until told to, and first moves or copies
//     everything it changes into a backup directory beside the store.
package datadir

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/graphtide/graphtide/internal/alertlog"
	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/writes"
)

// Names of the parts of a data directory.
const (
	StoreName          = "store"
	KeysName           = "keys.dict"
	TypesName          = "types.json"
	EmbeddedBrokerName = "embedded-broker"
	CheckpointName     = "analytics.ckpt"
	RegisteredName     = "registered-analytics.json"
	repairPrefix       = "repair-"
)

// StorePath is the store's directory in the data directory dir.
func StorePath(dir string) string { return filepath.Join(dir, StoreName) }

// TypesPath is the type dictionary's file in the data directory dir.
func TypesPath(dir string) string { return filepath.Join(dir, TypesName) }

// KeysPath is the key dictionary's file in the data directory dir.
func KeysPath(dir string) string { return filepath.Join(dir, KeysName) }

// EmbeddedBrokerPath is where serve's embedded broker keeps its data.
func EmbeddedBrokerPath(dir string) string { return filepath.Join(dir, EmbeddedBrokerName) }

// CheckpointPath is the analytics' checkpoint in the data directory dir
// (package checkpoint; derived state: a damaged one is recomputed).
func CheckpointPath(dir string) string { return filepath.Join(dir, CheckpointName) }

// RegisteredAnalyticsPath is where serve keeps the analytics registered
// over the HTTP API (package server).
func RegisteredAnalyticsPath(dir string) string { return filepath.Join(dir, RegisteredName) }

// DropCheckpoint removes the analytics' checkpoint of dir, if any: what
// changes the store other than serve's ingestion (load, repair) must call
// it before, since a restart could not replay that change into the
// checkpoint's analytics. The checkpoint holds no data (serve computes
// the analytics from the store without it).
func DropCheckpoint(dir string) error {
	if err := os.Remove(CheckpointPath(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("datadir: dropping the analytics' checkpoint: %w", err)
	}
	return nil
}

// ErrNoStore is returned (wrapped, with what to do) by Open without Create
// and by OpenReadOnly when the data directory holds no store.
var ErrNoStore = errors.New("no store")

// KeyBoundError reports a store that uses more key ids than the key
// dictionary holds.
type KeyBoundError struct {
	Dir string
	// StoreKeyIDs is how many key ids the store's data may use (its key-id
	// bound minus keydict.KeyBase); DictIDs how many the dictionary holds.
	StoreKeyIDs, DictIDs uint64
}

func (e *KeyBoundError) Error() string {
	if e.DictIDs == 0 {
		return fmt.Sprintf("datadir: the store in %s uses %d string-key ids but %s holds none (missing or emptied): new keys would take ids the graph already uses; restore %s from a backup, or run 'graphtide repair --dir %s' to retire the lost ids",
			e.Dir, e.StoreKeyIDs, KeysPath(e.Dir), KeysName, e.Dir)
	}
	return fmt.Sprintf("datadir: the store in %s uses %d string-key ids but %s holds only %d: the dictionary lost keys the graph uses, and new keys would take their ids; restore %s from a backup, or run 'graphtide repair --dir %s' to retire the lost ids",
		e.Dir, e.StoreKeyIDs, KeysPath(e.Dir), e.DictIDs, KeysName, e.Dir)
}

// InUseError reports a data directory whose store another process has open
// (errors.Is(err, engine.ErrLocked) holds).
type InUseError struct {
	Dir string
	err error
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("store %s is in use by another process (is graphtide serve running on --dir %s?): stop serve first, or use its HTTP API while it runs", StorePath(e.Dir), e.Dir)
}

func (e *InUseError) Unwrap() error { return e.err }

// InEdgesMismatchError reports --in-edges given against a store created
// with the other setting: whether a store keeps in-edges is fixed when it
// is created.
type InEdgesMismatchError struct {
	Dir   string
	Given bool // what --in-edges asked for; the store has the other
}

func (e *InEdgesMismatchError) Error() string {
	if e.Given {
		// The common case since new stores keep in-edges by default: a
		// store made before, or with --in-edges=false.
		return fmt.Sprintf("--in-edges=true does not match the store in %s, which was created without in-edges (by --in-edges=false, or by a version that did not keep them by default; fixed at creation): to use this store as it is, leave out --in-edges (reads of in-edges, dir=in, stay refused); for a store with in-edges, give another --dir (a new store there keeps them) and ingest the data into it again",
			e.Dir)
	}
	return fmt.Sprintf("--in-edges=false does not match the store in %s, which was created with in-edges (fixed at creation): to use this store as it is, leave out --in-edges; for a store without in-edges, give another --dir with --in-edges=false (a new store there is created without them) and ingest the data into it again",
		e.Dir)
}

// Options of Open.
type Options struct {
	// Store configures the engine. InEdgesAsStored is set, and InEdges
	// from InEdges below when given.
	Store engine.Options
	// InEdges nil: an existing store keeps the in-edge setting it was
	// created with, and a new store takes Store.InEdges (serve and load set
	// it: new stores keep in-edges by default); given, it must match an
	// existing store's (InEdgesMismatchError).
	InEdges *bool
	// Create makes a new data directory when there is none (serve, load);
	// without it a missing store is ErrNoStore.
	Create bool
	// Times keeps the time index open for writing (Dir.Times), creating it
	// when missing: serve keeping history.
	Times bool
	// Writes opens the writes topic's outcome log (Dir.Writes), creating
	// it when missing: serve with a writes topic.
	Writes bool
	// Registered opens the file of the analytics registered over the
	// HTTP API (Dir.Registered): serve.
	Registered bool
	// Alerts opens the alert history (Dir.Alerts), keeping at most
	// AlertsKeep alerts (0: alertlog.DefaultKeep), creating it when
	// missing: serve. AlertsReading is the bound in bytes of the first
	// read of its newest alerts to come (alertlog.Options.Reading: serve's
	// registry's), which takes the alerts opening it decoded.
	Alerts        bool
	AlertsKeep    int
	AlertsReading int64
}

// Dir is an open data directory.
type Dir struct {
	Path  string
	Store *engine.Store
	// Keys is the key dictionary. A read-only Dir without keys.dict has
	// none (nil); a read-write Dir always has one (created if missing).
	Keys *keydict.Dict
	// Times is the time index of a store that kept history (history.idx):
	// open for writing with Options.Times, read-only in a read-only Dir
	// that has one; else nil.
	Times *history.Index
	// Writes is the outcome log of the writes topic (writes.log): open
	// with Options.Writes, else nil. A damaged one refuses the open.
	Writes *writes.Log
	// Types names the edge types; always there (empty when types.json is
	// missing). Read-only in a read-only Dir. Written under the store's
	// LOCK, which keeps other writers out.
	Types *typedict.Dict
	// Registered is registered-analytics.json: open with
	// Options.Registered, else nil.
	Registered *Registered
	// Alerts is the alert history (alerts.log): open with Options.Alerts,
	// else nil. A damaged one refuses the open.
	Alerts *alertlog.Log

	// claims is what the store's durable state recorded of the files at
	// Open (nil: nothing, a store written before claims); the claims of
	// files this Dir does not follow are carried into every new record.
	claims Claims
}

// Open opens the data directory at path for reading and writing: the store,
// then the key dictionary, then checks that they agree (see KeyBoundError).
func Open(path string, o Options) (*Dir, error) {
	if path == "" {
		return nil, errors.New("datadir: the data directory must not be empty")
	}
	if !o.Create {
		if err := requireStore(path); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	// The store opens as it was created (a new one as asked), and the
	// setting asked for is then compared with it.
	so := o.Store
	so.ReadOnly = false
	if o.InEdges != nil {
		so.InEdges = *o.InEdges
	}
	so.InEdgesAsStored = true
	s, err := engine.Open(StorePath(path), &so)
	if err != nil {
		return nil, storeOpenError(path, err)
	}
	if o.InEdges != nil && *o.InEdges != s.InEdges() {
		s.Close()
		return nil, &InEdgesMismatchError{Dir: path, Given: *o.InEdges}
	}
	claims, err := claimsAtOpen(path, s)
	if err != nil {
		s.Close()
		return nil, err
	}
	// The time index: its samples of seqs the store no longer has (a
	// crash's replay will give them to other batches) go at the open,
	// whoever opens the store next (load, or serve without history, would
	// otherwise apply new batches under them).
	times, err := openTimes(path, s, claims, o.Times, false)
	if err != nil {
		s.Close()
		return nil, err
	}
	if !o.Times && times != nil {
		times.Close()
		times = nil
	}
	d := &Dir{Path: path, Store: s, Times: times, claims: claims}
	if _, err := os.Stat(KeysPath(path)); errors.Is(err, os.ErrNotExist) {
		// A new dictionary only where the store uses no key id.
		if err := d.checkKeyBound(); err != nil {
			d.Close() // no dictionary yet: the store and the time index
			return nil, err
		}
	}
	if d.Keys, err = keydict.Open(KeysPath(path)); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.checkKeyBound(); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.decideMapping(); err != nil {
		d.Close()
		return nil, err
	}
	if d.Types, err = typedict.Open(TypesPath(path)); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.checkClaims(); err != nil {
		d.Close()
		return nil, err
	}
	if o.Writes {
		if d.Writes, err = writes.OpenLogClaimed(WritesLogPath(path), false, writesClaim(claims)); err != nil {
			d.Close()
			return nil, err
		}
	}
	if o.Registered {
		if d.Registered, err = OpenRegistered(RegisteredAnalyticsPath(path), claims.ptr(RegisteredName)); err != nil {
			d.Close()
			return nil, err
		}
	}
	if o.Alerts {
		if d.Alerts, err = alertlog.OpenWith(AlertsPath(path), alertlog.Options{Keep: o.AlertsKeep,
			Claim: alertsClaim(claims.ptr(AlertsName)), Reading: o.AlertsReading}); err != nil {
			d.Close()
			return nil, err
		}
	}
	// INVARIANT: every batch applied from here on records the claims of
	// the files as they are when it applies (see Claims).
	s.SetAnnex(d.annex)
	return d, nil
}

// Claims is what the store's durable state recorded of the files beside
// it when the Dir was opened (nil: nothing, a store written before
// claims).
func (d *Dir) Claims() Claims { return maps.Clone(d.claims) }

// claimsAtOpen is what the store s of the data directory path recorded of
// its files, refused when a file it records is missing (checked before
// anything is created).
func claimsAtOpen(path string, s *engine.Store) (Claims, error) {
	claims, err := storeClaims(path, s)
	if err != nil {
		return nil, err
	}
	if ps := missingClaimed(path, claims); len(ps) > 0 {
		return nil, &durable.CorruptError{Kind: "datadir", File: ps[0].File, What: ps[0].What}
	}
	return claims, nil
}

// storeClaims is what the store s of the data directory path recorded of
// its files.
func storeClaims(path string, s *engine.Store) (Claims, error) {
	raw, err := s.Annex()
	if err != nil {
		return nil, err
	}
	c, err := decodeClaims(raw)
	if err != nil {
		return nil, &durable.CorruptError{Kind: "datadir", File: filepath.Join(StorePath(path), "MANIFEST"), What: err.Error()}
	}
	return c, nil
}

// checkClaims refuses a type dictionary with fewer names than claimed.
// (A missing claimed file is refused first thing; the time index, the
// outcome log and the registered analytics check their own claims as
// they open.)
func (d *Dir) checkClaims() error {
	if n, ok := d.claims.get(TypesName); ok && uint64(d.Types.Len()) < n {
		return typesShort(d.Path, d.Types.Len(), n)
	}
	return nil
}

// annex is the claims of the files now: those this Dir follows as they
// are, the others as recorded at Open.
func (d *Dir) annex() []byte {
	c := maps.Clone(d.claims)
	if c == nil {
		c = Claims{}
	}
	for i := range Entries {
		e := &Entries[i]
		if e.claim == nil {
			continue
		}
		v, exists, tracked := e.claim(d)
		switch {
		case !tracked:
		case exists:
			c[e.Name] = v
		default:
			delete(c, e.Name)
		}
	}
	return c.encode()
}

func writesClaim(c Claims) *writes.Claim {
	if v, ok := c.get(WritesName); ok {
		return &writes.Claim{Records: v}
	}
	return nil
}

// AlertsPath is the alert history in the data directory dir.
func AlertsPath(dir string) string { return filepath.Join(dir, AlertsName) }

// alertsClaim is the alert history's claim of c (nil: none).
func alertsClaim(c *uint64) *alertlog.Claim {
	if c == nil {
		return nil
	}
	return &alertlog.Claim{Records: *c}
}

// WritesLogPath is the writes topic's outcome log in the data directory.
func WritesLogPath(dir string) string { return filepath.Join(dir, writes.LogFileName) }

// OpenReadOnly opens the data directory at path without writing a byte:
// the store read-only, the key dictionary read-only when there is one.
func OpenReadOnly(path string) (*Dir, error) {
	if err := requireStore(path); err != nil {
		return nil, err
	}
	s, err := engine.Open(StorePath(path), &engine.Options{ReadOnly: true})
	if err != nil {
		return nil, storeOpenError(path, err)
	}
	claims, err := claimsAtOpen(path, s)
	if err != nil {
		s.Close()
		return nil, err
	}
	times, err := openTimes(path, s, claims, false, true)
	if err != nil {
		s.Close()
		return nil, err
	}
	d := &Dir{Path: path, Store: s, Times: times, claims: claims}
	if _, err := os.Stat(KeysPath(path)); err == nil {
		if d.Keys, err = keydict.OpenReadOnly(KeysPath(path)); err != nil {
			d.Close()
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		d.Close()
		return nil, fmt.Errorf("datadir: %w", err)
	}
	if err := d.checkKeyBound(); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.decideMapping(); err != nil {
		d.Close()
		return nil, err
	}
	if d.Types, err = typedict.OpenReadOnly(TypesPath(path)); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.checkClaims(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// MixedIDsError reports a data directory in which numbers from
// keydict.MapFrom up are both mapped by the dictionary and stored as they
// are: one number may then be two vertices.
type MixedIDsError struct {
	Dir     string
	Low     uint64 // one past the largest numeric id the store holds as is
	Numbers int    // numbers the dictionary maps
}

func (e *MixedIDsError) Error() string {
	return fmt.Sprintf("datadir: the store in %s holds numeric ids up to %d as they are, but %s maps %d numbers from %d up to ids of its own: a number may be two vertices; the store and the dictionary come from different data directories, or the store was written around graphtide (restore both from one backup)",
		e.Dir, e.Low-1, KeysPath(e.Dir), e.Numbers, keydict.MapFrom)
}

// MapsNumbers reports whether the data directory maps numeric ids from
// keydict.MapFrom up to dense ids of the key range (see keydict.NumID).
func (d *Dir) MapsNumbers() bool { return d.Keys != nil && d.Keys.MapsNumbers() }

// decideMapping turns on the dictionary's mapping of large numeric ids
// unless the store already holds such ids as they are (a store written
// before graphtide mapped them): then those ids stay as they are, and the
// analytics index them through a hash table (internal/views), correct but
// slower.
//
// INVARIANT: in a data directory that maps numbers, no numeric id from
// keydict.MapFrom up is ever stored as is (every writer decodes through
// the dictionary: ingest, load), so the decision is the same at every
// open; one that does not map holds no mapped number (else MixedIDsError).
func (d *Dir) decideMapping() error {
	if d.Keys == nil {
		return nil
	}
	sn, err := d.Store.Snapshot()
	if err != nil {
		return err
	}
	low, _ := sn.VertexBounds()
	sn.Release()
	asIs := low > keydict.MapFrom
	if asIs && d.Keys.Numbers() > 0 {
		return &MixedIDsError{Dir: d.Path, Low: low, Numbers: d.Keys.Numbers()}
	}
	d.Keys.SetMapNumbers(!asIs)
	return nil
}

// Close closes the key dictionary (syncing new keys) and the store. It does
// not flush the store: call Store.Flush first to keep what is unflushed.
func (d *Dir) Close() error {
	var errs []error
	if d.Keys != nil {
		errs = append(errs, d.Keys.Close())
	}
	if d.Times != nil {
		errs = append(errs, d.Times.Close())
	}
	if d.Writes != nil {
		errs = append(errs, d.Writes.Close())
	}
	if d.Alerts != nil {
		errs = append(errs, d.Alerts.Close())
	}
	errs = append(errs, d.Store.Close())
	return errors.Join(errs...)
}

// openTimes opens the time index of the store s in path: created when
// missing with create, nil when missing without it (or read-only and
// empty); read-only with readOnly.
func openTimes(path string, s *engine.Store, claims Claims, create, readOnly bool) (*history.Index, error) {
	file := filepath.Join(path, history.FileName)
	var c *history.Claim
	if v, ok := claims.get(HistoryName); ok {
		c = &history.Claim{Newest: v}
	}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) && !create && c == nil {
		return nil, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	m, err := s.Metrics()
	if err != nil {
		return nil, err
	}
	x, err := history.OpenClaimed(file, m.LastSeq, readOnly, c)
	if err != nil || !readOnly || x.Len() > 0 {
		return x, err
	}
	return nil, nil
}

// KeyIDs is how many key ids the store's data may use: its key-id bound
// (engine.Snapshot.VertexBounds' high) minus keydict.KeyBase, 0 when none.
func keyIDs(high uint64) uint64 {
	if high <= keydict.KeyBase {
		return 0
	}
	return high - keydict.KeyBase
}

func (d *Dir) checkKeyBound() error {
	sn, err := d.Store.DurableSnapshot()
	if err != nil {
		return err
	}
	_, high := sn.VertexBounds()
	sn.Release()
	have := uint64(0)
	if d.Keys != nil {
		have = uint64(d.Keys.Len())
	}
	if used := keyIDs(high); used > have {
		return &KeyBoundError{Dir: d.Path, StoreKeyIDs: used, DictIDs: have}
	}
	return nil
}

// requireStore says what to do when path holds no store.
func requireStore(path string) error {
	if _, err := os.Stat(filepath.Join(StorePath(path), "MANIFEST")); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("datadir: %w", err)
	}
	// A store directory with segment files but no MANIFEST is the engine's
	// to refuse, with the files named: let it.
	if segs, _ := filepath.Glob(filepath.Join(StorePath(path), "*.seg")); len(segs) > 0 {
		return nil
	}
	return fmt.Errorf("%w in --dir %s (%s has no MANIFEST): create one with 'graphtide load --dir %s FILE...' or 'graphtide serve --dir %s'",
		ErrNoStore, path, StorePath(path), path, path)
}

// storeOpenError turns the engine's open errors into what an operator can
// act on.
func storeOpenError(dir string, err error) error {
	if errors.Is(err, engine.ErrLocked) {
		return &InUseError{Dir: dir, err: err}
	}
	var ce *engine.CorruptionError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w\n'graphtide inspect --dir %s --verify' lists every problem; 'graphtide repair --dir %s' says what it can repair", err, dir, dir)
	}
	return err
}
