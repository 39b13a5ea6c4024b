// Package ddbase runs the Differential Dataflow baseline of `graphtide
// bench analytics`: the program bench/dd (DD 0.26.0 and timely 0.32.0,
// built by scripts/dd.sh, `make dd`) over a graph file and a stream file
// as the benchmark saves them, and reads what it reports.
//
// The program loads the graph as round 0, then feeds DD one round per
// batch of BatchSize operations of the stream and times each round whole
// (from the first change fed until DD's output has passed the round: the
// arrangements and the computation). It feeds DD graphtide's semantics: the
// graph is a set of directed edges, an insert of an edge already present
// and a delete of a missing one change nothing, `x V` deletes V's in- and
// out-edges and V. bfs is DD's algorithms::graphs::bfs from Root over the
// out-edges; wcc is DD's propagate_at (or propagate, Config.WCCPlain) of
// the smallest vertex id over the edges taken both ways, every vertex (of the graph or an inserted edge,
// until an `x` deletes it) starting with its own id.
//
// Run promises a Result whose rounds and summary come from the program's
// JSON, checked for shape: one round per batch, each with a non-negative
// time, and the summary fields of its analytic.
package ddbase

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/graphtide/graphtide/internal/bench"
)

// Defaults applied to zero Config fields.
const (
	DefaultBatchSize = 10_000
	DefaultWorkers   = 2
)

// Analytics the program runs.
const (
	BFS = "bfs"
	WCC = "wcc"
)

// Config is one run of the baseline.
type Config struct {
	// Binary is the built program (Find, or `scripts/dd.sh path`).
	Binary string
	// Graph is an edge list, `SRC DST [WEIGHT]` per line.
	Graph string
	// Stream holds the operations, `+ SRC DST [WEIGHT]`, `- SRC DST` or
	// `x V` per line (`#` starts a comment line).
	Stream string
	// BatchSize is the operations per round; 0 means DefaultBatchSize.
	BatchSize int
	// Workers is timely's worker threads; 0 means DefaultWorkers.
	Workers int
	// Analytic is BFS or WCC.
	Analytic string
	// Root is bfs's source vertex.
	Root uint32
	// Park makes idle workers sleep until a message arrives instead of
	// spinning (timely's step_or_park; DD's examples spin): for a machine
	// with fewer free cores than Workers, where spinning workers take the
	// cores the others need.
	Park bool
	// WCCPlain runs wcc on DD's plain propagate, every label at once,
	// instead of propagate_at, which brings labels in by magnitude (ids
	// below 2^k in round 256k) so small labels settle before large ones
	// flood: several times the work per round and the memory.
	WCCPlain bool
	// Stderr, when not nil, receives the program's standard error as it
	// runs; otherwise its tail is in the error of a failed run.
	Stderr io.Writer
}

// Round is one round of the program: the load (round 0) or a batch.
type Round struct {
	Ops     int     `json:"ops"`     // operations of the batch (edges of the graph file for the load)
	Changes int     `json:"changes"` // the +1/-1 changes fed to DD
	Sec     float64 `json:"sec"`     // wall time of the round
	// The result after the round: bfs's reached vertices and sum of their
	// levels, or wcc's number of components.
	Reached    int64 `json:"reached,omitempty"`
	LevelSum   int64 `json:"level_sum,omitempty"`
	Components int64 `json:"components,omitempty"`
}

// Summary is the result after the last round.
type Summary struct {
	Vertices   int   `json:"vertices"` // the vertex set's size (see the package doc)
	Edges      int   `json:"edges"`    // distinct directed edges
	Reached    int64 `json:"reached,omitempty"`
	LevelSum   int64 `json:"level_sum,omitempty"`
	Components int64 `json:"components,omitempty"`
	Largest    int64 `json:"largest,omitempty"` // vertices of the largest component
}

// Result is what one run reports.
type Result struct {
	Analytic string `json:"analytic"`
	Workers  int    `json:"workers"`
	Park     bool   `json:"park"`
	// WCC names the DD operator wcc ran on: "propagate_at" or "propagate".
	WCC       string  `json:"wcc,omitempty"`
	BatchSize int     `json:"batch_size"`
	Root      *uint32 `json:"root,omitempty"`
	// Versions of the libraries the program was built with.
	DifferentialDataflow string `json:"differential_dataflow"`
	Timely               string `json:"timely"`
	GraphEdges           int    `json:"graph_edges"` // lines of the graph file
	StreamOps            int    `json:"stream_ops"`
	// PrepareSec is the time to read both files and turn the operations
	// into changes (before any round; not part of a round's time).
	PrepareSec float64 `json:"prepare_sec"`
	// Load is round 0: the graph (LoadSec is Load.Sec).
	Load    Round   `json:"load"`
	LoadSec float64 `json:"-"`
	Rounds  []Round `json:"rounds"`
	// Of the rounds' Sec: the mean and the nearest-rank 99th percentile.
	MeanSec float64 `json:"-"`
	P99Sec  float64 `json:"-"`
	// PeakRSSBytes is the program's peak resident set from the load on
	// (VmHWM, reset once the harness has turned the files into changes
	// and dropped its edge set: DD's memory, and what of the harness's
	// the allocator kept), or the kernel's maxrss of the whole run when
	// the program could not read it.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PreparePeakRSSBytes is the peak before the load: the files read and
	// graphtide's edge set kept.
	PreparePeakRSSBytes int64   `json:"prepare_peak_rss_bytes"`
	Summary             Summary `json:"result"`
}

// RoundSecs returns the rounds' times.
func (r Result) RoundSecs() []float64 {
	s := make([]float64, len(r.Rounds))
	for i, x := range r.Rounds {
		s[i] = x.Sec
	}
	return s
}

// ErrNotBuilt is Find's error when the program has not been built.
var ErrNotBuilt = errors.New("ddbase: the Differential Dataflow baseline is not built (run make dd, or scripts/dd.sh build)")

// Find returns the built program's path from `scripts/dd.sh path` of the
// repository at root, or ErrNotBuilt.
func Find(ctx context.Context, root string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(root, "scripts", "dd.sh"), "path").Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return "", ErrNotBuilt
	}
	if err != nil {
		return "", fmt.Errorf("ddbase: scripts/dd.sh path: %w", err)
	}
	p := strings.TrimSpace(string(out))
	if p == "" {
		return "", ErrNotBuilt
	}
	return p, nil
}

// Args returns the program's command line for c (defaults applied).
func (c Config) Args() ([]string, error) {
	if c.Binary == "" || c.Graph == "" || c.Stream == "" {
		return nil, errors.New("ddbase: Binary, Graph and Stream are required")
	}
	if c.Analytic != BFS && c.Analytic != WCC {
		return nil, fmt.Errorf("ddbase: analytic %q: want %s or %s", c.Analytic, BFS, WCC)
	}
	if c.BatchSize < 0 || c.Workers < 0 {
		return nil, fmt.Errorf("ddbase: batch size %d and workers %d must not be negative", c.BatchSize, c.Workers)
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	a := []string{c.Binary, "--graph", c.Graph, "--stream", c.Stream, "--analytic", c.Analytic,
		"--batch-size", strconv.Itoa(c.BatchSize), "--workers", strconv.Itoa(c.Workers)}
	if c.Park {
		a = append(a, "--park")
	}
	if c.WCCPlain && c.Analytic == WCC {
		a = append(a, "--wcc-plain")
	}
	if c.Analytic == BFS {
		a = append(a, "--root", strconv.FormatUint(uint64(c.Root), 10))
	}
	return a, nil
}

// Run runs the program once and returns what it reported.
func Run(ctx context.Context, c Config) (Result, error) {
	args, err := c.Args()
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	if c.Stderr != nil {
		cmd.Stderr = io.MultiWriter(stderr, c.Stderr)
	}
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("ddbase: %s %s: %w: %s", filepath.Base(args[0]), c.Analytic, err, strings.TrimSpace(stderr.String()))
	}
	res, err := Parse(&stdout)
	if err != nil {
		return Result{}, err
	}
	if res.PeakRSSBytes == 0 {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.PeakRSSBytes = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	return res, nil
}

// Parse reads the program's JSON document and checks its shape.
func Parse(r io.Reader) (Result, error) {
	var doc struct {
		Program string `json:"program"`
		Result
	}
	d := json.NewDecoder(r)
	if err := d.Decode(&doc); err != nil {
		return Result{}, fmt.Errorf("ddbase: parse the program's output: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return Result{}, errors.New("ddbase: parse the program's output: more than one JSON document")
	}
	res := doc.Result
	if doc.Program != "graphtide-dd" {
		return Result{}, fmt.Errorf("ddbase: output of %q, not graphtide-dd", doc.Program)
	}
	if res.Analytic != BFS && res.Analytic != WCC {
		return Result{}, fmt.Errorf("ddbase: output names analytic %q", res.Analytic)
	}
	if res.Workers < 1 || res.BatchSize < 1 {
		return Result{}, fmt.Errorf("ddbase: output has %d workers, batch size %d", res.Workers, res.BatchSize)
	}
	if res.Analytic == WCC && res.WCC != "propagate_at" && res.WCC != "propagate" {
		return Result{}, fmt.Errorf("ddbase: wcc output names operator %q", res.WCC)
	}
	if (res.Analytic == BFS) != (res.Root != nil) {
		return Result{}, fmt.Errorf("ddbase: %s output with root %v", res.Analytic, res.Root)
	}
	if want := (res.StreamOps + res.BatchSize - 1) / res.BatchSize; len(res.Rounds) != want {
		return Result{}, fmt.Errorf("ddbase: output has %d rounds for %d operations in batches of %d (want %d)",
			len(res.Rounds), res.StreamOps, res.BatchSize, want)
	}
	ops := 0
	for i, x := range append([]Round{res.Load}, res.Rounds...) {
		if x.Sec < 0 || math.IsNaN(x.Sec) || x.Ops < 0 || x.Changes < 0 {
			return Result{}, fmt.Errorf("ddbase: output's round %d: %+v", i, x)
		}
		if i > 0 {
			ops += x.Ops
		}
	}
	if ops != res.StreamOps || res.Load.Ops != res.GraphEdges {
		return Result{}, fmt.Errorf("ddbase: output's rounds hold %d operations and a load of %d edges, want %d and %d",
			ops, res.Load.Ops, res.StreamOps, res.GraphEdges)
	}
	res.LoadSec = res.Load.Sec
	secs := res.RoundSecs()
	res.MeanSec = bench.Mean(secs)
	res.P99Sec = bench.Quantile(secs, 0.99)
	return res, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
