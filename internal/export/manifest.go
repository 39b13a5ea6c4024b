package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/graphtide/graphtide/internal/durable"
)

// Format is the manifest's format word; a reader refuses any other.
const Format = "graphtide-export-1"

// File names of a part: PART + suffix.
const (
	edgesSuffix    = ".edges.parquet"
	verticesSuffix = ".vertices.parquet"
	manifestSuffix = ".manifest.json"
)

// Offset is a Kafka position in one partition: the offset of the next
// record, every record below it applied.
type Offset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func (o Offset) String() string { return fmt.Sprintf("%s/%d@%d", o.Topic, o.Partition, o.Offset) }

// partition names a partition of a topic: the key of the maps of offsets.
type partition struct {
	topic string
	part  int32
}

func (o Offset) partition() partition { return partition{o.Topic, o.Partition} }

// File is one data file of a part.
type File struct {
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Manifest describes one part: what it holds and what it is as of.
type Manifest struct {
	Format string `json:"format"`
	Part   string `json:"part"`
	Graph  string `json:"graph,omitempty"`
	// Seq is the store's sequence number the snapshot saw (the store's
	// own: each instance numbers its batches).
	Seq uint64 `json:"seq"`
	// Position is where the part is as of, in each partition its store
	// holds; Cut is the whole set's (every part of a set has the same Cut,
	// and each part's Position is its share of it).
	Position []Offset `json:"position"`
	Cut      []Offset `json:"cut"`
	Edges    int64    `json:"edges"`
	Vertices int64    `json:"vertices"`
	Files    []File   `json:"files"`
	Created  string   `json:"created"`

	// dir is where it was read from ("" for one written).
	dir string
}

func (m *Manifest) fileName(suffix string) string { return m.Part + suffix }

// Dir is the directory the manifest was read from.
func (m *Manifest) Dir() string { return m.dir }

// write writes the manifest into dir atomically (package durable).
func (m *Manifest) write(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := durable.WriteFile(filepath.Join(dir, m.fileName(manifestSuffix)), b, 0o644); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// SortedOffsets is a copy of os sorted by topic and partition (never nil).
func SortedOffsets(os []Offset) []Offset {
	out := slices.Clone(os)
	if out == nil {
		out = []Offset{}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// PositionWithinCut checks that every partition of pos is in cut at the
// same offset.
func PositionWithinCut(pos, cut []Offset) error {
	at := map[partition]int64{}
	for _, o := range cut {
		at[o.partition()] = o.Offset
	}
	for _, o := range pos {
		c, ok := at[o.partition()]
		switch {
		case !ok:
			return fmt.Errorf("export: the cut names no offset for %s/%d, which this part holds", o.Topic, o.Partition)
		case c != o.Offset:
			return fmt.Errorf("export: this part is at %s, the cut at %s/%d@%d", o, o.Topic, o.Partition, c)
		}
	}
	return nil
}

// ReadManifests reads the manifests of every part in dirs (each
// *.manifest.json), in directory then name order. A manifest that cannot
// be decoded, of another format, or naming files of another part is
// refused with its path.
func ReadManifests(dirs ...string) ([]*Manifest, error) {
	var out []*Manifest
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*"+manifestSuffix))
		if err != nil {
			return nil, err
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("export: no part in %s (no *%s)", dir, manifestSuffix)
		}
		sort.Strings(paths)
		for _, p := range paths {
			m, err := readManifest(p)
			if err != nil {
				return nil, err
			}
			m.dir = dir
			out = append(out, m)
		}
	}
	return out, nil
}

func readManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("export: %s: %w", path, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("export: %s: format %q, want %q", path, m.Format, Format)
	}
	if err := CheckPart(m.Part); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if want := m.fileName(manifestSuffix); filepath.Base(path) != want {
		return nil, fmt.Errorf("export: %s: the manifest of part %q, named %s", path, m.Part, want)
	}
	kinds := []string{m.fileName(edgesSuffix), m.fileName(verticesSuffix)}
	if len(m.Files) != 2 || m.Files[0].Name != kinds[0] || m.Files[1].Name != kinds[1] {
		return nil, fmt.Errorf("export: %s: files must be %s and %s", path, kinds[0], kinds[1])
	}
	if m.Files[0].Rows != m.Edges || m.Files[1].Rows != m.Vertices {
		return nil, fmt.Errorf("export: %s: edges %d and vertices %d, its files hold %d and %d rows", path, m.Edges, m.Vertices, m.Files[0].Rows, m.Files[1].Rows)
	}
	return &m, nil
}

// Verify checks every file of the part against the manifest: present,
// of its size and SHA-256. A damaged file is a *durable.CorruptError
// naming it (at offset 0 for a checksum that differs, at its end for a
// short or long file).
func (m *Manifest) Verify() error {
	for _, f := range m.Files {
		path := filepath.Join(m.dir, f.Name)
		fh, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("export: part %q: %w", m.Part, err)
		}
		h := sha256.New()
		n, err := io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("export: part %q: %s: %w", m.Part, path, err)
		}
		if n != f.Bytes {
			return &durable.CorruptError{Kind: "export", File: path, Offset: min(n, f.Bytes), What: fmt.Sprintf("%d bytes, the manifest of part %q says %d", n, m.Part, f.Bytes)}
		}
		if hexSum(h) != f.SHA256 {
			return &durable.CorruptError{Kind: "export", File: path, Offset: 0, What: fmt.Sprintf("SHA-256 differs from the manifest of part %q", m.Part)}
		}
	}
	return nil
}

// CheckSet checks that parts are one graph as of one Kafka position: the
// same format, graph and cut; part names distinct; each part's position
// its share of the cut; no partition in two parts, and every partition of
// the cut in one. Then it verifies each part's files. The first thing
// wrong is the error, naming the parts.
func CheckSet(parts []*Manifest) error {
	if len(parts) == 0 {
		return errors.New("export: no parts")
	}
	first := parts[0]
	holder := map[partition]string{}
	names := map[string]string{}
	for _, m := range parts {
		if d, dup := names[m.Part]; dup {
			return fmt.Errorf("export: part %q is in %s and in %s", m.Part, d, m.dir)
		}
		names[m.Part] = m.dir
		if m.Graph != first.Graph {
			return fmt.Errorf("export: part %q is of graph %q, part %q of graph %q", m.Part, m.Graph, first.Part, first.Graph)
		}
		if !slices.Equal(m.Cut, first.Cut) {
			return fmt.Errorf("export: parts of different cuts: %q is as of %s, %q as of %s; export every part with the same --at-offsets", m.Part, FormatOffsets(m.Cut), first.Part, FormatOffsets(first.Cut))
		}
		if err := PositionWithinCut(m.Position, m.Cut); err != nil {
			return fmt.Errorf("part %q: %w", m.Part, err)
		}
		for _, o := range m.Position {
			k := o.partition()
			if other, dup := holder[k]; dup {
				return fmt.Errorf("export: %s/%d is in parts %q and %q: a partition must be in one part", o.Topic, o.Partition, other, m.Part)
			}
			holder[k] = m.Part
		}
	}
	var missing []string
	for _, o := range first.Cut {
		if _, ok := holder[o.partition()]; !ok {
			missing = append(missing, fmt.Sprintf("%s/%d", o.Topic, o.Partition))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("export: no part holds %s of the cut: the set is missing a part", strings.Join(missing, ", "))
	}
	for _, m := range parts {
		if err := m.Verify(); err != nil {
			return err
		}
	}
	return nil
}

// FormatOffsets is offs as "[topic/partition@offset ...]".
func FormatOffsets(os []Offset) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = o.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

// ReadCut reads a cut: a JSON array of offsets ({"topic","partition",
// "offset"}), or a manifest (its cut), as a file of either shape, checked
// by CheckCut.
func ReadCut(b []byte) ([]Offset, error) {
	var offs []Offset
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var m struct {
			Cut []Offset `json:"cut"`
		}
		if err := json.Unmarshal(trimmed, &m); err != nil {
			return nil, fmt.Errorf("export: cut: %w", err)
		}
		offs = m.Cut
	} else {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&offs); err != nil {
			return nil, fmt.Errorf("export: cut: %w (want a JSON array of {\"topic\",\"partition\",\"offset\"})", err)
		}
	}
	return CheckCut(offs)
}

// CheckCut checks a cut and returns it sorted: a partition named twice,
// a negative offset or partition, or an empty topic is refused.
func CheckCut(offs []Offset) ([]Offset, error) {
	if len(offs) == 0 {
		return nil, errors.New("export: cut: no offsets")
	}
	seen := map[partition]bool{}
	for _, o := range offs {
		k := o.partition()
		switch {
		case o.Topic == "":
			return nil, errors.New("export: cut: an offset without a topic")
		case o.Partition < 0 || o.Offset < 0:
			return nil, fmt.Errorf("export: cut: %s: negative", o)
		case seen[k]:
			return nil, fmt.Errorf("export: cut: %s/%d named twice", o.Topic, o.Partition)
		}
		seen[k] = true
	}
	return SortedOffsets(offs), nil
}
