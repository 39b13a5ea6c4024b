package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/settings"
)

// inspectOptions are the flags of "graphtide inspect".
type inspectOptions struct {
	dir    string
	verify bool
	json   bool
}

func (o *inspectOptions) AddFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML file of settings keyed by flag name (flags and GRAPHTIDE_* variables take precedence)")
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
    tombstones; see cgo/segment.h).
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
			if err := settings.Apply(cmd.Flags()); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return runInspect(&o, cmd.OutOrStdout())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// inspectReport is what inspect prints; --json prints it as is.
type inspectReport struct {
	Dir            string          `json:"dir"`
	Store          string          `json:"store"`
	InEdges        bool            `json:"in_edges"`
	DurableSeq     uint64          `json:"durable_seq"`
	ManifestBytes  int64           `json:"manifest_bytes"`
	VertexBounds   vertexBounds    `json:"vertex_bounds"`
	SourcePosition *sourcePosition `json:"source_position"` // null: none recorded
	KeyDictionary  *keyDictInfo    `json:"key_dictionary"`  // null: no keys.dict
	Levels         []levelReport   `json:"levels"`
	Total          sizeReport      `json:"total"`
	Files          []fileReport    `json:"files"`
	Verify         *verifyReport   `json:"verify,omitempty"`
	metrics        engine.Metrics  // for the text form
}

type vertexBounds struct {
	// Numeric is one past the largest id below 2^62 ever seen (0: none).
	Numeric uint64 `json:"numeric"`
	// Keys is one past the largest id from 2^62 up (0: none).
	Keys uint64 `json:"keys"`
}

type sourcePosition struct {
	Bytes int `json:"bytes"`
	// ClusterID is the Kafka cluster the offsets belong to ("" when the
	// position records none).
	ClusterID string        `json:"cluster_id,omitempty"`
	Kafka     []kafkaOffset `json:"kafka,omitempty"`
	// Hex holds a position that is not an ingest (Kafka) position.
	Hex string `json:"hex,omitempty"`
}

type kafkaOffset struct {
	Topic      string `json:"topic"`
	TopicID    string `json:"topic_id,omitempty"`
	Partition  int32  `json:"partition"`
	NextOffset int64  `json:"next_offset"`
}

type keyDictInfo struct {
	Keys    int   `json:"keys"`    // string keys
	Numbers int   `json:"numbers"` // numbers from 2^32 up mapped to dense ids
	Maps    bool  `json:"maps_numbers"`
	Retired int   `json:"retired"` // ids whose key was lost (graphtide repair retired them)
	Bytes   int64 `json:"bytes"`
}

type sizeReport struct {
	Files        int64 `json:"files"`
	Bytes        int64 `json:"bytes"`
	EdgeVersions int64 `json:"edge_versions"` // tombstones included
}

type levelReport struct {
	Level int `json:"level"`
	sizeReport
}

type fileReport struct {
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

type verifyReport struct {
	OK           bool              `json:"ok"`
	FilesChecked int64             `json:"files_checked"`
	BytesChecked int64             `json:"bytes_checked"`
	Problems     []datadir.Problem `json:"problems"`
	Notes        []datadir.Problem `json:"notes"`
}

func direction(d engine.Direction) string {
	if d == engine.In {
		return "in"
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
	}{{f.Dst32, "dst32"}, {f.Versions, "versions"}, {f.Weights, "weights"}, {f.MultiVersion, "multiversion"}, {f.Tombstones, "tombstones"}} {
		if fl.on {
			flags = append(flags, fl.name)
		}
	}
	return flags
}

func runInspect(o *inspectOptions, out io.Writer) error {
	if !o.verify {
		rep, err := inspectDir(o.dir)
		if err != nil {
			return err
		}
		return rep.write(out, o.json)
	}
	chk, err := datadir.Check(o.dir)
	if err != nil {
		return err
	}
	v := &verifyReport{OK: chk.OK(), Problems: chk.Problems, Notes: chk.Notes}
	if chk.Store != nil {
		v.FilesChecked, v.BytesChecked = chk.Store.FilesChecked, chk.Store.BytesChecked
	}
	var rep *inspectReport
	if chk.OK() {
		// Sound: the listing too.
		if rep, err = inspectDir(o.dir); err != nil {
			return err
		}
	} else {
		rep = &inspectReport{Dir: o.dir, Store: datadir.StorePath(o.dir), Levels: []levelReport{}, Files: []fileReport{}}
	}
	rep.Verify = v
	if err := rep.write(out, o.json); err != nil {
		return err
	}
	if !chk.OK() {
		p := chk.Problems[0]
		return fmt.Errorf("verify: %d problem(s) in %s, the first: %s at byte offset %d: %s ('graphtide repair --dir %s' says what it can repair)",
			len(chk.Problems), o.dir, p.File, p.Offset, p.What, o.dir)
	}
	return nil
}

func (r *inspectReport) write(out io.Writer, asJSON bool) error {
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

// inspectDir reports on the data directory dir, opened read-only.
func inspectDir(dir string) (*inspectReport, error) {
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return collectInspect(d)
}

func collectInspect(d *datadir.Dir) (*inspectReport, error) {
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
	rep := &inspectReport{
		Dir: d.Path, Store: datadir.StorePath(d.Path), InEdges: store.InEdges(), DurableSeq: m.DurableSeq,
		VertexBounds: vertexBounds{Numeric: low, Keys: high},
		Levels:       []levelReport{}, Files: []fileReport{},
		metrics: m,
	}
	if info, err := os.Stat(filepath.Join(rep.Store, "MANIFEST")); err == nil {
		rep.ManifestBytes = info.Size()
	}
	pos, err := store.SourcePosition()
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		sp := &sourcePosition{Bytes: len(pos)}
		if r, err := ingest.DecodeRecorded(pos); err == nil {
			sp.ClusterID = r.ClusterID
			for topic, parts := range r.Position {
				id := ""
				if tid, ok := r.TopicIDs[topic]; ok {
					id = tid.String()
				}
				for part, next := range parts {
					sp.Kafka = append(sp.Kafka, kafkaOffset{Topic: topic, TopicID: id, Partition: part, NextOffset: next})
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
	if d.Keys != nil {
		info, err := os.Stat(datadir.KeysPath(d.Path))
		if err != nil {
			return nil, err
		}
		rep.KeyDictionary = &keyDictInfo{Keys: d.Keys.Len() - d.Keys.Retired() - d.Keys.Numbers(), Numbers: d.Keys.Numbers(),
			Maps: d.MapsNumbers(), Retired: d.Keys.Retired(), Bytes: info.Size()}
	}
	for i, l := range m.Levels {
		rep.Levels = append(rep.Levels, levelReport{Level: i, sizeReport: sizeReport{Files: l.Files, Bytes: l.Bytes, EdgeVersions: l.Entries}})
		rep.Total.Files += l.Files
		rep.Total.Bytes += l.Bytes
		rep.Total.EdgeVersions += l.Entries
	}
	for _, f := range files {
		rep.Files = append(rep.Files, fileReport{Name: f.Name, Level: f.Level, Direction: direction(f.Dir),
			MinSrc: f.MinSrc, MaxSrc: f.MaxSrc, Vertices: f.Vertices, MaxDst: f.MaxDst, Entries: f.Entries,
			Bytes: f.Bytes, MinSeq: f.MinSeq, MaxSeq: f.MaxSeq, Flags: fileFlags(f)})
	}
	return rep, nil
}

func (r *inspectReport) writeText(w io.Writer) error {
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
	fmt.Fprintf(w, "size: %d bytes in %d files\n\nlevels:\n", r.Total.Bytes, r.Total.Files)
	if err := writeLevels(w, r.metrics); err != nil {
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

func (v *verifyReport) writeText(w io.Writer, dir string) error {
	for _, n := range v.Notes {
		fmt.Fprintf(w, "note: %s at byte offset %d: %s\n", n.File, n.Offset, n.What)
	}
	if v.OK {
		_, err := fmt.Fprintf(w, "verify: ok, no problem found (%d segment files, %d bytes read; manifest and key dictionary checked)\n", v.FilesChecked, v.BytesChecked)
		return err
	}
	for _, p := range v.Problems {
		fmt.Fprintf(w, "PROBLEM: %s at byte offset %d: %s\n", p.File, p.Offset, p.What)
	}
	_, err := fmt.Fprintf(w, "verify: %d problem(s) in %s; nothing was changed ('graphtide repair --dir %s' says what it can repair)\n", len(v.Problems), dir, dir)
	return err
}
