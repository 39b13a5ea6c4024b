// Package inspect reports on a data directory without writing a byte:
// the manifest summary, the recorded source position, the key dictionary,
// the levels and every live file, and with verify every problem that
// datadir.Check finds, each with its file and byte offset. It is the
// library behind 'graphtide inspect'; its Report is also its JSON output.
package inspect

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/keydict"
)

// maxSourcesShown is how many event sources the text report names.
const maxSourcesShown = 8

// Report is what inspect prints; --json prints it as is (field names and
// JSON keys are a stable interface).
type Report struct {
	Dir            string          `json:"dir"`
	Store          string          `json:"store"`
	InEdges        bool            `json:"in_edges"`
	DurableSeq     uint64          `json:"durable_seq"`
	ManifestBytes  int64           `json:"manifest_bytes"`
	VertexBounds   VertexBounds    `json:"vertex_bounds"`
	SourcePosition *SourcePosition `json:"source_position"` // null: none recorded
	KeyDictionary  *KeyDictionary  `json:"key_dictionary"`  // null: no keys.dict
	// TypeAggregates are the edge types the store records as accumulate,
	// by type (every other type is replace).
	TypeAggregates []TypeAggregate `json:"type_aggregates"`
	// EventSources are the sources the store numbered for the positions
	// of events from Kafka without a reference of their own
	// ("topic/partition"), in their numbers' order (1, 2, ...).
	EventSources []string `json:"event_sources"`
	// NewestEventTime is the store's newest event time (Unix µs) as its
	// manifest records it: retention's watermark (0: none recorded).
	NewestEventTime int64 `json:"newest_event_time_us"`
	// Claims: what the store's durable state records of the files beside
	// it (datadir.Claims), by file name; null: none recorded (a store
	// written before claims, until its next flush).
	Claims  map[string]uint64 `json:"claims"`
	Levels  []Level           `json:"levels"`
	Total   Size              `json:"total"`
	Files   []File            `json:"files"`
	Verify  *Verify           `json:"verify,omitempty"`
	metrics engine.Metrics    // for the text form
}

// VertexBounds are the store's id bounds in its two bands.
type VertexBounds struct {
	// Numeric is one past the largest id below 2^62 ever seen (0: none).
	Numeric uint64 `json:"numeric"`
	// Keys is one past the largest id from 2^62 up (0: none).
	Keys uint64 `json:"keys"`
}

// SourcePosition is the source position recorded with the durable data.
type SourcePosition struct {
	Bytes int `json:"bytes"`
	// Graph is the graph the store belongs to ("" when the position
	// records none: a store from before graphs had names).
	Graph string `json:"graph,omitempty"`
	// ClusterID is the Kafka cluster the offsets belong to ("" when the
	// position records none).
	ClusterID string        `json:"cluster_id,omitempty"`
	Kafka     []KafkaOffset `json:"kafka,omitempty"`
	// Hex holds a position that is not an ingest (Kafka) position.
	Hex string `json:"hex,omitempty"`
}

// KafkaOffset is the next offset of one partition in a SourcePosition.
type KafkaOffset struct {
	Topic      string `json:"topic"`
	TopicID    string `json:"topic_id,omitempty"`
	Partition  int32  `json:"partition"`
	NextOffset int64  `json:"next_offset"`
}

// TypeAggregate is an edge type the store records as accumulate.
type TypeAggregate struct {
	Type uint16 `json:"type"`
	Name string `json:"name"`
	// RetainUs is its retain in µs (Retain as text): its events within it
	// of the newest event time stay readable one by one.
	RetainUs int64  `json:"retain_us"`
	Retain   string `json:"retain"`
}

// KeyDictionary describes the key dictionary (keys.dict).
type KeyDictionary struct {
	Keys    int   `json:"keys"`    // string keys
	Numbers int   `json:"numbers"` // numbers from 2^32 up mapped to dense ids
	Maps    bool  `json:"maps_numbers"`
	Retired int   `json:"retired"` // ids whose key was lost (graphtide repair retired them)
	Bytes   int64 `json:"bytes"`
}

// Size sums files, bytes and edge versions.
type Size struct {
	Files        int64 `json:"files"`
	Bytes        int64 `json:"bytes"`
	EdgeVersions int64 `json:"edge_versions"` // tombstones included
}

// Level is the Size of one level.
type Level struct {
	Level int `json:"level"`
	Size
}

// File describes one live segment file.
type File struct {
	Name      string   `json:"name"`
	Level     int      `json:"level"`
	Direction string   `json:"direction"`
	MinSrc    uint64   `json:"min_src"`
	MaxSrc    uint64   `json:"max_src"`
	Vertices  uint64   `json:"vertices"`
	MaxDst    uint64   `json:"max_dst"`
	Entries   uint64   `json:"entries"`
	Bytes     uint64   `json:"bytes"`
	MinSeq    uint64   `json:"min_seq"`
	MaxSeq    uint64   `json:"max_seq"`
	Flags     []string `json:"flags"`
}

// Verify is the outcome of a check of everything (inspect --verify).
type Verify struct {
	OK           bool              `json:"ok"`
	FilesChecked int64             `json:"files_checked"`
	BytesChecked int64             `json:"bytes_checked"`
	Problems     []datadir.Problem `json:"problems"`
	Notes        []datadir.Problem `json:"notes"`
}

func direction(d engine.Direction) string {
	switch d {
	case engine.In:
		return "in"
	case engine.VertexRecords:
		return "vertex"
	}
	return "out"
}

func fileFlags(f engine.FileInfo) []string {
	flags := []string{"sparse"}
	if f.Dense {
		flags[0] = "dense"
	}
	for _, fl := range []struct {
		on   bool
		name string
	}{{f.Dst32, "dst32"}, {f.Versions, "versions"}, {f.Weights, "weights"}, {f.MultiVersion, "multiversion"}, {f.Tombstones, "tombstones"}, {f.Types, "types"}, {f.Times, "times"}, {f.Bloom, "bloom"},
		{f.Counts, "counts"}, {f.Payloads, "payloads"}} {
		if fl.on {
			flags = append(flags, fl.name)
		}
	}
	return flags
}

// Run reports on the data directory dir, opened read-only, and writes
// the report to out as text or, with asJSON, as one JSON line. With
// verify it checks everything first (datadir.Check) and returns an error
// naming the first problem if there is any; the report then lists every
// problem.
func Run(dir string, verify, asJSON bool, out io.Writer) error {
	if !verify {
		rep, err := Dir(dir)
		if err != nil {
			return err
		}
		return rep.Write(out, asJSON)
	}
	chk, err := datadir.Check(dir)
	if err != nil {
		return err
	}
	v := &Verify{OK: chk.OK(), Problems: chk.Problems, Notes: chk.Notes}
	if chk.Store != nil {
		v.FilesChecked, v.BytesChecked = chk.Store.FilesChecked, chk.Store.BytesChecked
	}
	var rep *Report
	if chk.OK() {
		// Sound: the listing too.
		if rep, err = Dir(dir); err != nil {
			return err
		}
	} else {
		rep = &Report{Dir: dir, Store: datadir.StorePath(dir), Levels: []Level{}, Files: []File{}, TypeAggregates: []TypeAggregate{}, EventSources: []string{}}
	}
	rep.Verify = v
	if err := rep.Write(out, asJSON); err != nil {
		return err
	}
	if !chk.OK() {
		p := chk.Problems[0]
		return fmt.Errorf("verify: %d problem(s) in %s, the first: %s at byte offset %d: %s ('graphtide repair --dir %s' says what it can repair)",
			len(chk.Problems), dir, p.File, p.Offset, p.What, dir)
	}
	return nil
}

// Write writes the report as text, or as one JSON line.
func (r *Report) Write(out io.Writer, asJSON bool) error {
	if !asJSON {
		return r.writeText(out)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(line))
	return err
}

// Dir reports on the data directory dir, opened read-only.
func Dir(dir string) (*Report, error) {
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return Collect(d)
}

// Collect reports on an open data directory.
func Collect(d *datadir.Dir) (*Report, error) {
	store := d.Store
	m, err := store.Metrics()
	if err != nil {
		return nil, err
	}
	files, err := store.Files()
	if err != nil {
		return nil, err
	}
	sn, err := store.Snapshot()
	if err != nil {
		return nil, err
	}
	low, high := sn.VertexBounds()
	sn.Release()
	rep := &Report{
		Dir: d.Path, Store: datadir.StorePath(d.Path), InEdges: store.InEdges(), DurableSeq: m.DurableSeq,
		VertexBounds: VertexBounds{Numeric: low, Keys: high},
		Levels:       []Level{}, Files: []File{}, TypeAggregates: []TypeAggregate{},
		EventSources: append([]string{}, store.EventSources()...), NewestEventTime: store.NewestEventTime(),
		metrics: m,
	}
	aggs := store.Aggregates()
	for _, t := range slices.Sorted(maps.Keys(aggs)) {
		a := aggs[t]
		rep.TypeAggregates = append(rep.TypeAggregates, TypeAggregate{Type: t, Name: d.Types.Name(t),
			RetainUs: a.Retain.Microseconds(), Retain: a.Retain.String()})
	}
	if info, err := os.Stat(filepath.Join(rep.Store, "MANIFEST")); err == nil {
		rep.ManifestBytes = info.Size()
	}
	pos, err := store.SourcePosition()
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		sp := &SourcePosition{Bytes: len(pos)}
		if r, err := ingest.DecodeRecorded(pos); err == nil {
			sp.ClusterID, sp.Graph = r.ClusterID, r.Graph
			for topic, parts := range r.Position {
				id := ""
				if tid, ok := r.TopicIDs[topic]; ok {
					id = tid.String()
				}
				for part, next := range parts {
					sp.Kafka = append(sp.Kafka, KafkaOffset{Topic: topic, TopicID: id, Partition: part, NextOffset: next})
				}
			}
			sort.Slice(sp.Kafka, func(i, j int) bool {
				a, b := sp.Kafka[i], sp.Kafka[j]
				return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
			})
		} else {
			sp.Hex = hex.EncodeToString(pos)
		}
		rep.SourcePosition = sp
	}
	if c := d.Claims(); c != nil {
		rep.Claims = c
	}
	if d.Keys != nil {
		info, err := os.Stat(datadir.KeysPath(d.Path))
		if err != nil {
			return nil, err
		}
		rep.KeyDictionary = &KeyDictionary{Keys: d.Keys.Len() - d.Keys.Retired() - d.Keys.Numbers(), Numbers: d.Keys.Numbers(),
			Maps: d.MapsNumbers(), Retired: d.Keys.Retired(), Bytes: info.Size()}
	}
	for i, l := range m.Levels {
		rep.Levels = append(rep.Levels, Level{Level: i, Size: Size{Files: l.Files, Bytes: l.Bytes, EdgeVersions: l.Entries}})
		rep.Total.Files += l.Files
		rep.Total.Bytes += l.Bytes
		rep.Total.EdgeVersions += l.Entries
	}
	for _, f := range files {
		rep.Files = append(rep.Files, File{Name: f.Name, Level: f.Level, Direction: direction(f.Dir),
			MinSrc: f.MinSrc, MaxSrc: f.MaxSrc, Vertices: f.Vertices, MaxDst: f.MaxDst, Entries: f.Entries,
			Bytes: f.Bytes, MinSeq: f.MinSeq, MaxSeq: f.MaxSeq, Flags: fileFlags(f)})
	}
	return rep, nil
}

func (r *Report) writeText(w io.Writer) error {
	if v := r.Verify; v != nil && !v.OK {
		return v.writeText(w, r.Dir)
	}
	edges := "out-edges"
	if r.InEdges {
		edges = "out-edges and in-edges"
	}
	fmt.Fprintf(w, "store %s (%s)\n", r.Store, edges)
	fmt.Fprintf(w, "manifest: durable sequence number %d, %d bytes\n", r.DurableSeq, r.ManifestBytes)
	bounds := fmt.Sprintf("numeric ids below %d", r.VertexBounds.Numeric)
	if r.VertexBounds.Numeric == 0 {
		bounds = "no numeric ids"
	}
	if r.VertexBounds.Keys > 0 {
		bounds += fmt.Sprintf(", key ids in [%d, %d)", keydict.KeyBase, r.VertexBounds.Keys)
	}
	fmt.Fprintf(w, "vertex bounds: %s\n", bounds)
	if len(r.TypeAggregates) == 0 {
		fmt.Fprintln(w, "edge types: every type replace (none recorded as accumulate)")
	} else {
		parts := make([]string, len(r.TypeAggregates))
		for i, a := range r.TypeAggregates {
			parts[i] = fmt.Sprintf("%s (type %d) accumulate, retain %s", a.Name, a.Type, a.Retain)
		}
		fmt.Fprintf(w, "edge types: %s; every other type replace\n", strings.Join(parts, ", "))
	}
	if n := len(r.EventSources); n > 0 {
		shown := r.EventSources[:min(n, maxSourcesShown)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(", and %d more", n-len(shown))
		}
		fmt.Fprintf(w, "event sources: %d numbered (%s%s)\n", n, strings.Join(shown, ", "), more)
	}
	if r.NewestEventTime != 0 {
		fmt.Fprintf(w, "newest event time: %s (retention folds by it)\n", time.UnixMicro(r.NewestEventTime).UTC().Format(time.RFC3339Nano))
	}
	switch sp := r.SourcePosition; {
	case sp == nil:
		fmt.Fprintln(w, "source position: none recorded")
	case sp.Hex != "":
		fmt.Fprintf(w, "source position: %d bytes, not a Kafka position: %s\n", sp.Bytes, sp.Hex)
	default:
		parts := make([]string, len(sp.Kafka))
		for i, k := range sp.Kafka {
			parts[i] = fmt.Sprintf("%s/%d next offset %d", k.Topic, k.Partition, k.NextOffset)
		}
		fmt.Fprintf(w, "source position: Kafka %s\n", strings.Join(parts, ", "))
		if sp.Graph != "" {
			fmt.Fprintf(w, "graph: %s\n", sp.Graph)
		} else {
			fmt.Fprintln(w, "graph: none recorded (the store keeps the Kafka names every graph shared before graphs had names)")
		}
		if sp.ClusterID != "" {
			ids := []string{}
			seen := map[string]bool{}
			for _, k := range sp.Kafka {
				if k.TopicID != "" && !seen[k.Topic] {
					seen[k.Topic] = true
					ids = append(ids, k.Topic+" "+k.TopicID)
				}
			}
			fmt.Fprintf(w, "source: Kafka cluster %s; topic ids: %s\n", sp.ClusterID, strings.Join(ids, ", "))
		}
	}
	if kd := r.KeyDictionary; kd != nil {
		retired := ""
		if kd.Retired > 0 {
			retired = fmt.Sprintf(" (and %d retired ids whose keys were lost)", kd.Retired)
		}
		numbers := ", numbers from 2^32 up stored as they are (the store held such numbers before graphtide mapped them)"
		if kd.Maps {
			numbers = fmt.Sprintf(", %d numbers from 2^32 up mapped to dense ids", kd.Numbers)
		}
		fmt.Fprintf(w, "key dictionary: %d keys%s%s, %d bytes\n", kd.Keys, numbers, retired, kd.Bytes)
	} else {
		fmt.Fprintln(w, "key dictionary: none")
	}
	if r.Claims == nil {
		fmt.Fprintln(w, "files recorded with the store: none yet (a store written before graphtide recorded them: its next flush does)")
	} else {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(r.Claims)) {
			what := "claim"
			if e := datadir.Lookup(name); e != nil && e.Counts != "" {
				what = e.Counts
			}
			parts = append(parts, fmt.Sprintf("%s %d (%s)", name, r.Claims[name], what))
		}
		if len(parts) == 0 {
			parts = []string{"no file beside the store that it depends on"}
		}
		fmt.Fprintf(w, "files recorded with the store: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "size: %d bytes in %d files\n\nlevels:\n", r.Total.Bytes, r.Total.Files)
	if err := datadir.WriteLevels(w, r.metrics); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nfiles:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tlevel\tdir\tsrc range\tvertices\tmax dst\tentries\tbytes\tseq range\tflags")
	for _, f := range r.Files {
		fmt.Fprintf(tw, "%s\tL%d\t%s\t%d..%d\t%d\t%d\t%d\t%d\t%d..%d\t%s\n", f.Name, f.Level, f.Direction,
			f.MinSrc, f.MaxSrc, f.Vertices, f.MaxDst, f.Entries, f.Bytes, f.MinSeq, f.MaxSeq, strings.Join(f.Flags, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if v := r.Verify; v != nil {
		fmt.Fprintln(w)
		return v.writeText(w, r.Dir)
	}
	return nil
}

func (v *Verify) writeText(w io.Writer, dir string) error {
	for _, n := range v.Notes {
		fmt.Fprintf(w, "note: %s at byte offset %d: %s\n", n.File, n.Offset, n.What)
	}
	if v.OK {
		_, err := fmt.Fprintf(w, "verify: ok, no problem found (%d segment files, %d bytes read; the manifest, the key dictionary and every file beside the store checked)\n", v.FilesChecked, v.BytesChecked)
		return err
	}
	for _, p := range v.Problems {
		fmt.Fprintf(w, "PROBLEM: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
	}
	_, err := fmt.Fprintf(w, "verify: %d problem(s) in %s; nothing was changed ('graphtide repair --dir %s' says what it can repair)\n", len(v.Problems), dir, dir)
	return err
}
