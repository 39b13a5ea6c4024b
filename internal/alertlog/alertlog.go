// Package alertlog keeps the alerts graphtide's monitors raised, so that
// GET /v1/alerts answers the same across restarts and crashes: the data
// directory's alerts.log, the newest alerts (at most a bound, default
// 10,000) and how many each analytic ever raised.
//
// What it promises:
//
//   - Every alert Append took is in the file, in the order given; Sync
//     makes them durable and seals them: it rewrites the file whole
//     (atomically) with a header that vouches for every alert in it.
//     serve syncs before every analytics checkpoint and at a clean stop,
//     so an alert a crash (even power loss) takes from the file was raised
//     after the checkpoint, and the restart's replay raises it again (the
//     registry keeps an alert once by its ID).
//   - The store's durable state records, with every flush, how many
//     records the file held sealed then (a Claim; internal/datadir). A
//     torn tail (ScanRecords' rule) is cut only past both the seal and the
//     claim; any damage before them, a file that ends before them, or a
//     missing file the claim proves existed, is refused with file and byte
//     offset, and nothing changes.
//   - The file stays within twice the bound (plus one alert): once it
//     holds that many, it is rewritten atomically with the newest ones,
//     and the counts of those it drops go into its header.
//   - Open with readOnly writes nothing.
//   - Memory: a few words per alert in the file (where each record starts,
//     its analytic), never the alerts: Alerts reads them from the file,
//     AlertsWithin only the newest that fit a bound.
//
// The file (format 1): the 8-byte magic "GTALRT01", u64 first (records
// appended before the file's first), u64 sealed (records, counted as
// first is, that the header vouches for: every one the file held when it
// was last written whole), u32 n, n bytes of JSON: the count of alerts
// each analytic raised among those first records (an object of analytic
// name to count), u32 CRC-32C of everything before it; then the records
// (durable.AppendRecord), each the JSON of one analytics.Alert: the one
// JSON shape of an alert (analytics.AlertRecord). serve's records are the
// bytes its registry wrote once for the alert topic too (AppendJSON: with
// the graph); Append writes them without a graph. Records written before
// alerts carried evidence read back unchanged: that shape holds every
// field they have, and takes a vertex's id from its vertex_id (they held
// the store's id in vertex).
package alertlog

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// FileName is the log's file in the data directory.
const FileName = "alerts.log"

// DefaultKeep is how many alerts the log keeps by default.
const DefaultKeep = 10000

const (
	magic      = "GTALRT01"
	maxPayload = 1 << 20   // an alert: at most analytics.MaxAlertBytes
	minPayload = 2         // "{}"
	maxHeader  = 1 << 20   // the counts of every analytic ever
	chunk      = 256 << 10 // Append writes at least this much at a time
)

// INVARIANT: a record holds any alert the registry raises (a compile
// error otherwise).
const _ = uint(maxPayload - analytics.MaxAlertBytes)

var _ analytics.JSONHistory = (*Log)(nil)

// Claim is what the store's durable state recorded of the log: that the
// file existed, and how many records it held synced then.
type Claim struct {
	Records uint64
}

// Log is the alert log. Safe for concurrent use.
type Log struct {
	path string
	keep int
	mu   sync.Mutex
	// f is the file, appended to (nil when read-only). Protected by mu.
	f *os.File
	// first: records appended before recs[0]; base: by analytic, how many
	// of those first. recs: the records of the file, in order; end: the
	// file's size. Protected by mu.
	first uint64
	base  map[string]uint64
	recs  []rec
	end   int64
	// sealed is first+len(recs) when the file was last written whole
	// (Sync, Open): what a claim may say the file holds.
	sealed atomic.Uint64
	// broken: a rewrite failed after it replaced the file; Append fails
	// from then on. Protected by mu.
	broken error
	// json and out are Append's buffers, reused (a monitor may raise many
	// alerts a second: no garbage per alert). Protected by mu.
	json bytes.Buffer
	enc  *json.Encoder
	out  []byte
	// kept are the alerts of recs[keptFrom:], decoded by Open as it
	// checked them: the newest within keptBytes of the file, at most keep
	// (what AlertsWithin(keptBytes) reads). The first AlertsWithin of at
	// most keptBytes takes them instead of reading the file again; an
	// Append lets them go (they are no longer the newest). nil: none.
	// Protected by mu.
	kept      []analytics.Alert
	keptFrom  int
	keptBytes int64
	// decoded counts the records read back as alerts (Open's check and
	// AlertsWithin's reads; a test's measure of the work). Protected by
	// mu (or no sharing yet).
	decoded int
}

// Options of OpenWith.
type Options struct {
	Keep     int    // the alerts kept (0: DefaultKeep)
	ReadOnly bool   // write nothing (a missing file is an empty log)
	Claim    *Claim // what the store's durable state recorded (nil: nothing)
	// Reading, when positive, is the bound of the first AlertsWithin to
	// come (serve: its registry's, analytics.RegistryConfig.AlertRingBytes):
	// Open keeps the alerts that call reads as it decodes them to check
	// the file, and hands them over, so that a restart decodes each alert
	// once. They are held until then (records of at most Reading bytes),
	// or until an Append.
	Reading int64
}

// rec is where a record starts in the file and its alert's analytic (for
// the counts of the records a rewrite drops).
type rec struct {
	off      int64
	analytic string
}

// Open reads the log at path, keeping at most keep alerts (0:
// DefaultKeep), of which the store's durable state recorded c (nil:
// nothing). A read-write open creates a missing file (unless c proves one
// existed) and cuts a torn tail past c; a read-only one changes nothing
// (a missing file is an empty log).
func Open(path string, keep int, readOnly bool, c *Claim) (*Log, error) {
	return OpenWith(path, Options{Keep: keep, ReadOnly: readOnly, Claim: c})
}

// OpenWith is Open with the options o.
func OpenWith(path string, o Options) (*Log, error) {
	keep, readOnly, c := o.Keep, o.ReadOnly, o.Claim
	if keep <= 0 {
		keep = DefaultKeep
	}
	l := &Log{path: path, keep: keep, base: map[string]uint64{}}
	if !readOnly && o.Reading > 0 {
		l.keptBytes = o.Reading
	}
	created := false
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && c != nil:
		return nil, l.corrupt(0, fmt.Sprintf("missing: the store's durable state records this log with %d alerts (GET /v1/alerts would lose them); restore the file from a backup, or run 'graphtide repair' to start an empty one", c.Records))
	case errors.Is(err, os.ErrNotExist):
		if readOnly {
			return l, nil
		}
		data, created = l.header(), true // written below
	case err != nil:
		return nil, err
	}
	scan, err := l.read(data)
	if err != nil {
		return nil, err
	}
	have, vouched := l.first+uint64(len(l.recs)), l.sealed.Load()
	why := "its header vouches for"
	if c != nil && c.Records > vouched {
		vouched, why = c.Records, "the store's durable state records"
	}
	if have < vouched {
		if scan.Torn {
			return nil, l.corrupt(scan.TornAt, fmt.Sprintf("damaged alert %d (checksum mismatch, cut short or zeroed), of the %d alerts %s: a torn tail is only what lies past them; restore the file from a backup, or run 'graphtide repair' to start an empty one", have, vouched, why))
		}
		return nil, l.corrupt(len(data), fmt.Sprintf("the file ends after alert %d, but %s %d: alerts were lost (the file was cut or replaced); restore the file from a backup, or run 'graphtide repair' to start an empty one", have, why, vouched))
	}
	if readOnly {
		return l, nil
	}
	l.end = int64(len(data))
	if created || scan.Torn || have > l.sealed.Load() {
		if scan.Torn {
			l.end = int64(scan.TornAt)
		}
		// Creates a missing file, cuts a torn tail, seals the rest.
		if err := l.writeWhole(0); err != nil {
			return nil, err
		}
		return l, nil
	}
	if l.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, err
	}
	return l, nil
}

// read reads the header and the records of data, keeping where each
// record starts; it returns where the records stopped.
func (l *Log) read(data []byte) (durable.ScanResult, error) {
	off, err := l.readHeader(data)
	if err != nil {
		return durable.ScanResult{}, err
	}
	var derr error
	scan := durable.ScanRecords(data, off, minPayload, maxPayload, func(at int, payload []byte) bool {
		var a analytics.Alert // every record reads back as an alert (inspect --verify opens the log)
		l.decoded++
		if err := json.Unmarshal(payload, &a); err != nil {
			derr = l.corrupt(at, "an alert that does not read back: "+err.Error())
			return false
		}
		l.recs = append(l.recs, rec{off: int64(at), analytic: l.intern(a.Analytic)})
		if l.keptBytes > 0 {
			l.keep1(a, int64(at+durable.RecordHeader+len(payload)))
		}
		return true
	})
	switch {
	case derr != nil:
		return scan, derr
	case scan.Damage != "":
		return scan, l.corrupt(scan.DamagedAt, scan.Damage)
	}
	return scan, nil
}

// keep1 keeps a, the alert of the newest record read (ending at end), with
// the newest before it that AlertsWithin(keptBytes) would read were the
// file to end there: those within keptBytes of end, at most keep (the
// newest one whatever its size). Those it lets go would not be read at a
// later end either.
func (l *Log) keep1(a analytics.Alert, end int64) {
	if len(l.kept) == 0 {
		l.keptFrom = len(l.recs) - 1
	}
	l.kept = append(l.kept, a)
	drop := 0
	for len(l.kept)-drop > 1 && (len(l.kept)-drop > l.keep || end-l.recs[l.keptFrom+drop].off > l.keptBytes) {
		drop++
	}
	if drop > 0 {
		clear(l.kept[:drop]) // their evidence goes to the collector
		l.kept = l.kept[drop:]
		l.keptFrom += drop
	}
}

// intern returns the analytic's name, shared with the records before it.
func (l *Log) intern(name string) string {
	if n := len(l.recs); n > 0 && l.recs[n-1].analytic == name {
		return l.recs[n-1].analytic
	}
	return name
}

// readHeader reads the header of data and returns where the records
// begin.
func (l *Log) readHeader(data []byte) (int, error) {
	if len(data) < len(magic)+20 || string(data[:len(magic)]) != magic {
		return 0, l.corrupt(0, "not an alert log (bad magic)")
	}
	n := int(binary.LittleEndian.Uint32(data[24:]))
	if n > maxHeader || len(data) < 28+n+4 {
		return 0, l.corrupt(24, fmt.Sprintf("header length %d runs past the end of the file", n))
	}
	end := 28 + n
	if binary.LittleEndian.Uint32(data[end:]) != crc32.Checksum(data[:end], durable.Castagnoli) {
		return 0, l.corrupt(end, "header checksum mismatch")
	}
	l.first = binary.LittleEndian.Uint64(data[8:])
	l.sealed.Store(binary.LittleEndian.Uint64(data[16:]))
	if err := json.Unmarshal(data[28:end], &l.base); err != nil {
		return 0, l.corrupt(28, "header counts do not read back: "+err.Error())
	}
	return end + 4, nil
}

func (l *Log) corrupt(off int, what string) error {
	return &durable.CorruptError{Kind: "alerts", File: l.path, Offset: int64(off), What: what}
}

// header is the file's header for what the log holds, every record
// sealed. Requires mu held (or no sharing yet).
func (l *Log) header() []byte {
	counts, _ := json.Marshal(l.base) // a map of string to number: never fails
	b := []byte(magic)
	b = binary.LittleEndian.AppendUint64(b, l.first)
	b = binary.LittleEndian.AppendUint64(b, l.first+uint64(len(l.recs)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(counts)))
	b = append(b, counts...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, durable.Castagnoli))
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// Claim is the log's claim now: the records sealed.
func (l *Log) Claim() Claim { return Claim{Records: l.sealed.Load()} }

// Alerts returns the alerts the log keeps (at most its bound, the newest),
// oldest first, read from the file, and how many were ever appended, in
// all and by analytic.
func (l *Log) Alerts() (alerts []analytics.Alert, total uint64, byAnalytic map[string]uint64, err error) {
	return l.AlertsWithin(math.MaxInt64)
}

// AlertsWithin is Alerts, of the newest alerts kept only as many as hold
// at most maxBytes in the file (the newest one whatever its size): only
// they are read (a registry keeps that many bytes of alerts for reading).
func (l *Log) AlertsWithin(maxBytes int64) (alerts []analytics.Alert, total uint64, byAnalytic map[string]uint64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	byAnalytic = map[string]uint64{}
	for name, n := range l.base {
		byAnalytic[name] = n
	}
	for _, r := range l.recs {
		byAnalytic[r.analytic]++
	}
	total = l.first + uint64(len(l.recs))
	if len(l.recs) == 0 {
		return nil, total, byAnalytic, nil
	}
	kept, keptFrom := l.kept, l.keptFrom
	l.kept = nil // handed over once: a later call reads the file
	if kept != nil && maxBytes <= l.keptBytes && keptFrom+len(kept) == len(l.recs) {
		// Open's alerts: AlertsWithin(keptBytes), of which these are the
		// newest within maxBytes (at most keep, the newest one whatever
		// its size).
		from := len(l.recs) - 1
		for from > max(keptFrom, len(l.recs)-l.keep) && l.end-l.recs[from-1].off <= maxBytes {
			from--
		}
		return kept[from-keptFrom:], total, byAnalytic, nil
	}
	f, err := os.Open(l.path)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("alertlog: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, nil, fmt.Errorf("alertlog: %w", err)
	}
	end := info.Size()
	if l.end > 0 && l.end < end {
		end = l.end
	}
	// The newest records, at most keep of them, within maxBytes.
	from := len(l.recs) - 1
	for from > max(0, len(l.recs)-l.keep) && end-l.recs[from-1].off <= maxBytes {
		from--
	}
	at := l.recs[from].off
	if at > end {
		return nil, 0, nil, l.corrupt(int(end), "the alerts changed under the log")
	}
	data := make([]byte, end-at)
	if _, err := f.ReadAt(data, at); err != nil {
		return nil, 0, nil, l.corrupt(int(at), "the alerts changed under the log: "+err.Error())
	}
	res := durable.ScanRecords(data, 0, minPayload, maxPayload, func(off int, payload []byte) bool {
		var a analytics.Alert
		l.decoded++
		if err = json.Unmarshal(payload, &a); err != nil {
			err = l.corrupt(int(at)+off, "an alert that does not read back: "+err.Error())
			return false
		}
		alerts = append(alerts, a)
		return true
	})
	if err == nil && (res.Damage != "" || res.Torn || len(alerts) != len(l.recs)-from) {
		err = l.corrupt(int(at), "the alerts changed under the log")
	}
	if err != nil {
		return nil, 0, nil, err
	}
	return alerts, total, byAnalytic, nil
}

// Append writes al to the file (not synced: Sync), and rewrites it with
// the newest alerts once it holds twice the bound. Each record is the
// alert's JSON without a graph (AppendJSON takes the JSON the registry
// wrote for the alert topic too).
func (l *Log) Append(al []analytics.Alert) error {
	return l.append(al, func(i int) ([]byte, error) {
		if l.enc == nil {
			l.enc = json.NewEncoder(&l.json)
			l.enc.SetEscapeHTML(false) // the bytes GET /v1/alerts and the alert topic give: a property document reads back as it was
		}
		l.json.Reset()
		r := al[i].Record("") // as Alert.MarshalJSON, without its second pass
		if err := l.enc.Encode(&r); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(l.json.Bytes(), []byte("\n")), nil
	})
}

// AppendJSON is Append of alerts whose JSON is written already: docs[i]
// is al[i]'s (analytics.AlertJSON, as the registry wrote it once for the
// alert topic too; nil: one that could not be written, left out), each
// record those bytes as they are.
func (l *Log) AppendJSON(al []analytics.Alert, docs [][]byte) error {
	if len(docs) != len(al) {
		return fmt.Errorf("alertlog: %d alerts with %d documents", len(al), len(docs))
	}
	return l.append(al, func(i int) ([]byte, error) {
		if docs[i] == nil {
			return nil, errors.New("the alert could not be written as JSON")
		}
		return docs[i], nil
	})
}

// append writes al to the file, doc(i) the record of al[i] (valid until
// the next call of doc); see Append.
func (l *Log) append(al []analytics.Alert, doc func(i int) ([]byte, error)) error {
	if len(al) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.broken != nil:
		return l.broken
	case l.f == nil:
		return errors.New("alertlog: the log is not open for writing")
	}
	l.kept = nil // the alerts Open read are no longer the newest
	// Written a chunk at a time, so that a burst of alerts (a fraud pull
	// may raise hundreds of thousands) holds no more than a chunk.
	b := l.out[:0]
	write := func() error {
		if _, err := l.f.Write(b); err != nil {
			// Part of b may be in the file: nothing may follow it.
			l.broken = fmt.Errorf("alertlog: %s: %w (the log takes no more alerts until serve restarts, which cuts what was written of them)", l.path, err)
			return l.broken
		}
		l.end += int64(len(b))
		b = b[:0]
		return nil
	}
	var skipped error // an alert that cannot be written is left out; the others are kept
	for i := range al {
		p, err := doc(i)
		if err != nil {
			skipped = cmp.Or(skipped, fmt.Errorf("alertlog: an alert left out: %w", err))
			continue
		}
		if len(p) > maxPayload {
			skipped = cmp.Or(skipped, fmt.Errorf("alertlog: an alert of %d bytes left out, more than %d", len(p), maxPayload))
			continue
		}
		l.recs = append(l.recs, rec{off: l.end + int64(len(b)), analytic: l.intern(al[i].Analytic)})
		if b = durable.AppendRecord(b, p); len(b) >= chunk {
			if err := write(); err != nil {
				return err
			}
		}
	}
	if err := write(); err != nil {
		return err
	}
	if cap(b) <= 4*chunk {
		l.out = b // reused; one larger than that is left to the collector
	}
	if len(l.recs) >= 2*l.keep {
		drop := len(l.recs) - l.keep
		for _, r := range l.recs[:drop] {
			l.base[r.analytic]++
		}
		if err := l.writeWhole(drop); err != nil {
			return err
		}
	}
	return skipped
}

// writeWhole replaces the file with its records from drop on, under a new
// header (first moved past the dropped ones, every record sealed),
// durably, copying them from the file as it is; and appends to it from
// then on. Requires mu held (or no sharing yet).
func (l *Log) writeWhole(drop int) error {
	from := int64(-1)
	if drop < len(l.recs) {
		from = l.recs[drop].off
	}
	l.first += uint64(drop)
	l.recs = append(l.recs[:0:0], l.recs[drop:]...)
	hdr := l.header()
	err := durable.WriteFileFrom(l.path, 0o644, func(w io.Writer) error {
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		if from < 0 {
			return nil
		}
		src, err := os.Open(l.path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, io.NewSectionReader(src, from, l.end-from))
		return err
	})
	if err != nil {
		l.broken = fmt.Errorf("alertlog: writing %s failed (the log no longer says what it holds): %w", l.path, err)
		return l.broken
	}
	// The records moved by the change of header and what was dropped.
	if from < 0 {
		l.end = int64(len(hdr))
	} else {
		shift := int64(len(hdr)) - from
		for i := range l.recs {
			l.recs[i].off += shift
		}
		l.end += shift
	}
	if l.f != nil {
		l.f.Close()
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		l.broken = fmt.Errorf("alertlog: %s: %w", l.path, err)
		return l.broken
	}
	l.f = f
	l.sealed.Store(l.first + uint64(len(l.recs)))
	return nil
}

// Sync makes every alert appended so far durable, and seals them: the
// file is written whole, copied (a bounded cost: at most twice the bound
// of alerts, and nothing of them held in memory).
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.f == nil:
		return nil
	case l.broken != nil:
		return l.broken
	case l.sealed.Load() == l.first+uint64(len(l.recs)):
		return nil // nothing new
	}
	return l.writeWhole(0)
}

// Close syncs and closes the file.
func (l *Log) Close() error {
	err := l.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		err = errors.Join(err, l.f.Close())
		l.f = nil
	}
	return err
}

// WriteEmpty writes an empty log at path whose first alert would be
// number first (graphtide repair: in place of a damaged or lost one,
// whose claim, first, it must meet).
func WriteEmpty(path string, first uint64) error {
	l := &Log{path: path, first: first, base: map[string]uint64{}}
	return durable.WriteFile(path, l.header(), 0o644)
}
