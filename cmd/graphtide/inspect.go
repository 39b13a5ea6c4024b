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

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/keydict"
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
	fs.BoolVar(&o.verify, "verify", false, "read every file and check every checksum; a corrupt file makes the exit status 1")
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
Opening checks every file's header, footer and index and every manifest
record; --verify also reads every data block and checks its checksum, and
reports a corrupt file with its name and byte offset (exit status 1).
inspect does not compact or write the store.

Every flag can be set with GRAPHTIDE_<FLAG>, e.g. GRAPHTIDE_DIR, or in the
YAML file given by --config, keyed by flag name.`,
		Example: `  graphtide inspect --dir ./graphtide-data
  graphtide inspect --dir /var/lib/graphtide --verify
  graphtide inspect --json | jq '.levels'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySettings(cmd.Flags()); err != nil {
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
	Bytes int           `json:"bytes"`
	Kafka []kafkaOffset `json:"kafka,omitempty"`
	// Hex holds a position that is not an ingest (Kafka) position.
	Hex string `json:"hex,omitempty"`
}

type kafkaOffset struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	NextOffset int64  `json:"next_offset"`
}

type keyDictInfo struct {
	Keys  int   `json:"keys"`
	Bytes int64 `json:"bytes"`
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
	OK     bool   `json:"ok"`
	File   string `json:"file,omitempty"`
	Offset uint64 `json:"offset,omitempty"`
	Reason string `json:"reason,omitempty"`
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
	if err := requireStore(o.dir); err != nil {
		return err
	}
	// No auto-compaction: inspect shows the store as it is.
	store, err := openStore(o.dir, engine.Options{DisableAutoCompaction: true}, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	rep, err := collectInspect(o.dir, store)
	if err != nil {
		return err
	}
	var verifyErr error
	if o.verify {
		rep.Verify = &verifyReport{OK: true}
		if verifyErr = store.VerifyAll(); verifyErr != nil {
			var ce *engine.CorruptionError
			if !errors.As(verifyErr, &ce) {
				return verifyErr
			}
			rep.Verify = &verifyReport{File: ce.File, Offset: ce.Offset, Reason: ce.Reason}
		}
	}
	if o.json {
		line, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(out, string(line)); err != nil {
			return err
		}
	} else if err := rep.writeText(out); err != nil {
		return err
	}
	if verifyErr != nil {
		return fmt.Errorf("verify failed: %w", verifyErr)
	}
	return nil
}

func collectInspect(dir string, store *engine.Store) (*inspectReport, error) {
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
		Dir: dir, Store: storePath(dir), InEdges: store.InEdges(), DurableSeq: m.DurableSeq,
		VertexBounds: vertexBounds{Numeric: low, Keys: high},
		Levels:       []levelReport{}, Files: []fileReport{},
		metrics: m,
	}
	if info, err := os.Stat(filepath.Join(storePath(dir), "MANIFEST")); err == nil {
		rep.ManifestBytes = info.Size()
	}
	pos, err := store.SourcePosition()
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		sp := &sourcePosition{Bytes: len(pos)}
		if p, err := ingest.DecodePosition(pos); err == nil {
			for topic, parts := range p {
				for part, next := range parts {
					sp.Kafka = append(sp.Kafka, kafkaOffset{Topic: topic, Partition: part, NextOffset: next})
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
	if info, err := os.Stat(keysPath(dir)); err == nil {
		d, err := keydict.Open(keysPath(dir))
		if err != nil {
			return nil, err
		}
		rep.KeyDictionary = &keyDictInfo{Keys: d.Len(), Bytes: info.Size()}
		if err := d.Close(); err != nil {
			return nil, err
		}
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
	}
	if kd := r.KeyDictionary; kd != nil {
		fmt.Fprintf(w, "key dictionary: %d keys, %d bytes\n", kd.Keys, kd.Bytes)
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
		if v.OK {
			_, err := fmt.Fprintf(w, "\nverify: ok, every checksum matches (%d files)\n", len(r.Files))
			return err
		}
		_, err := fmt.Fprintf(w, "\nverify: CORRUPT: %s at byte offset %d: %s\n", v.File, v.Offset, v.Reason)
		return err
	}
	return nil
}
