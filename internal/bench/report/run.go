package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/bench"
)

// BrokersArg stands for the Kafka bootstrap address in a stated command:
// the report's own broker (scripts/bench-report.sh starts one with
// deploy/kafka/kafka.sh) or the one given to it.
const BrokersArg = "$BROKERS"

// Benchmark is one benchmark of the report: the command it runs, exactly
// as the page states it.
type Benchmark struct {
	Name  string   // the file docs/bench/<Name>.json, and `graphtide bench <Name>` (a variant: <command>-<variant>)
	Title string   // the page's heading
	Args  []string // after bin/graphtide; BrokersArg where the broker goes
	// What says what the benchmark measures, for the page.
	What string
	// render writes the benchmark's tables from its JSON result.
	render func(w *page, result []byte) error
}

// NeedsBroker reports whether the command talks to Kafka.
func (b Benchmark) NeedsBroker() bool { return strings.Contains(strings.Join(b.Args, " "), BrokersArg) }

// NeedsDD reports whether the command runs the Differential Dataflow
// baseline (scripts/dd.sh builds it).
func (b Benchmark) NeedsDD() bool { return slices.Contains(b.Args, "--dd") }

// Command is the command as the page states it.
func (b Benchmark) Command() string { return "bin/graphtide " + strings.Join(b.Args, " ") }

// Benchmarks are the report's benchmarks, in the page's order. Their scales
// are chosen so that each finishes within a few minutes on a 2-core machine.
var Benchmarks = []Benchmark{
	{
		Name: "ingest", Title: "`bench ingest`: the store against Pebble and a static CSR",
		Args:   []string{"bench", "ingest", "--scale", "20", "--edge-factor", "16"},
		render: renderIngest,
		What: `An R-MAT stream goes into a fresh store through the Go API in batches of
10,000 edges, timed to the end of the final flush; the store is compacted
(` + "`CompactAll`" + `) and every vertex's out-neighbors are scanned, the edge count and
checksum checked against a static in-memory CSR. In the same process the
same batches go into Pebble (key: big-endian src|dst, WAL off, as the store
relies on Kafka as its log). Then the write path: the same ingest into a
store that keeps in-edges; the CPU time of ` + "`Apply`" + ` per edge and direction with
4M edges held in one MemGraph (the median of three passes into recycled
MemGraph memory; the first pass into fresh pages apart); a hub whose 2M
versions are still in the MemGraph; and a full scan after 1% of the
vertices were deleted and compacted away. Last, what edge events cost: 1M
payments among 20,000 accounts (each account pays 8 regular payees three
times in four, so pairs repeat) applied as a replace type, an accumulate
type, an accumulate type with an event reference and a property document
per payment, and that with a retain of 24h.`,
	},
	{
		Name: "analytics", Title: "`bench analytics`: kernels and what a user waits for after each batch",
		Args:   []string{"bench", "analytics", "--scale", "20", "--ids", "dense", "--registry", "--dd", "auto"},
		render: renderAnalytics,
		What: `An R-MAT graph (Graph500's draws and permutation of the vertex ids,
self-loops and repeats kept) is loaded into a store with in-edges and
compacted; the analytics' topology is built from the compacted view (what
serve's analytics read) and from a plain in-memory CSR, and the four
kernels run on both (best of 3; the results must agree, and bfs, wcc and
sssp must equal reference kernels run on the loaded edges, vertex for
vertex). Then new edges, 1% of the graph's edge count, drawn on by the
graph's own generator (the same permutation: they come to its hubs, as a
graph's own traffic does), stream in batches of 10,000 operations (5% of
them edge deletes, 0.01% vertex deletes). Per batch, what a user waits
for: from the store's Apply to each analytic's result at that batch,
the topology's advance and the analytic's pull included, with the five
analytics registered together in an analytics registry as serve runs
them (` + "`--registry`" + `: a store of their own), and each driven alone after
the batch; the advance alone; the heap bytes allocated per operation.
Then, as details, each analytic's update alone
against a recompute on the same topology every third batch (whose result
must equal the update's, vertex for vertex). The first batch is a
warm-up, reported apart. Last, with ` + "`--dd auto`" + `, Differential Dataflow's bfs
and wcc (the program bench/dd, built by ` + "`make dd`" + `; see below) run on the same
graph and the same batches, after graphtide's stream so that neither takes
the other's cores; their results after the last batch must equal
graphtide's.

` + "`--save-graph FILE`" + ` and ` + "`--save-stream FILE`" + ` write the graph loaded (el) and the
stream applied, so that another system replays the same graph in the same
batches (an R-MAT graph's file holds its self-loops and repeated edges, as
loaded: a replay that counts an edge's copies should take the Kronecker
graph, or each edge once); ` + "`--input FILE --stream FILE`" + ` replays them here. The stream file is
UTF-8 text, one operation per line, its fields separated by one space, a
line starting with ` + "`#`" + ` a comment:

` + "```text" + `
+ SRC DST [WEIGHT]   insert or replace the edge SRC->DST (weight 1 when left out)
- SRC DST            delete the edge SRC->DST (nothing when it is missing)
x V                  delete the vertex V and all its edges
` + "```" + `

Ids are the graph file's (integers in [0, 2^62)), a weight a finite
number; batches are consecutive runs of ` + "`--batch-size`" + ` operations. Any
other line is refused with its file and line number. Without ` + "`--stream`" + `,
the stream into an ` + "`--input`" + ` graph (loaded whole) is generated beside it:
new edges between endpoints drawn in proportion to the edges they have,
deletes of existing edges, vertex deletes, and with
` + "`--hub-vertex-deletes N`" + ` the N vertices with the most edges, spread over
the stream.`,
	},
	{
		Name: "analytics-kron", Title: "`bench analytics --graph kron`: the same on the Kronecker graph",
		Args:   []string{"bench", "analytics", "--graph", "kron", "--scale", "20", "--ids", "dense", "--registry", "--dd", "auto"},
		render: renderAnalytics,
		What: `The same measurements on the Kronecker graph of the same scale and seed:
the same draws as a simple graph (self-loops and repeats dropped, as
Graph500's kernels, GAPBS and Differential Dataflow's examples take it),
its stream drawn on by the same generator and permutation (new edges
only).`,
	},
	{
		Name: "analytics-stream", Title: "`bench analytics --registry-interval`: analytics beside a stream that does not wait",
		Args:   []string{"bench", "analytics", "--graph", "kron", "--scale", "20", "--ids", "dense", "--repeats", "1", "--stream-fraction", "0.03", "--registry", "--registry-interval", "50ms"},
		render: renderAnalytics,
		What: `The Kronecker graph again, its stream three times as long, and the
registry's store fed as serve is fed from Kafka: a batch every 50 ms
(200,000 operations a second), not waiting for the analytics. pagerank's
updates at these batches iterate (see its tolerance in
[analytics](analytics.md#pagerank-tolerance)); the other four must still
take every batch within milliseconds, while it iterates on a copy of what
it reads.`,
	},
	{
		Name: "kafka", Title: "`bench kafka`: ingest from Kafka against a plain consumer",
		Args:   []string{"bench", "kafka", "--brokers", BrokersArg, "--scale", "20", "--edge-factor", "16"},
		render: renderKafka,
		What: `The stream is produced once to the real broker (one binary record per edge,
4 partitions); then, in the same run: a plain franz-go consumer with the
ingester's fetch settings (the limit), serve's ingest path into a fresh
store (final flush included; the store must hold exactly the produced
edges), the same edges applied straight to a store, and, at a steady
produce rate of half the ingest rate, the time from a record's produce
timestamp to its visibility in a snapshot. Broker, producer and benchmark
share the machine.`,
	},
	{
		Name: "serve", Title: "`bench serve`: serve within its memory budget",
		Args:   []string{"bench", "serve", "--brokers", BrokersArg, "--scale", "20", "--memory-budget", "1GiB"},
		render: renderServe,
		What: `` + "`graphtide serve`" + ` runs as a process of its own with ` + "`--memory-budget`" + `,
` + "`--in-edges`" + ` and three analytics (bfs from the largest hub, wcc, a fraud
monitor with ` + "`max_cycle=4,threshold=50`" + `); a Kronecker stream with 5% deletes
is produced to the real broker, and the benchmark waits until serve has
ingested it all and its analytics have caught up, sampling serve's
` + "`/proc`" + ` status meanwhile. Anonymous memory (heaps, stacks, MemGraphs) is what
the budget bounds; file-backed pages (the mapped store files) are page
cache, reported apart. Then edge events end to end: 300,000 JSON payments
among 20,000 accounts (pairs repeat) through a field mapping into three
serve processes of their own: replace, an accumulate type, and an
accumulate type with ` + "`event_id`" + ` and ` + "`props`" + `.`,
	},
	{
		Name: "mixed", Title: "`bench mixed`: readers never stall the writer",
		Args:   []string{"bench", "mixed", "--scale", "20", "--duration", "20s"},
		render: renderMixed,
		What: `Half of a stream is preloaded; then, in one phase per reader count, a writer
applies batches of 100 operations (5% edge deletes, 0.01% vertex deletes
drawn by degree) at 1,000 batches/s, timing every ` + "`Apply`" + `, while that many
goroutines take fresh views without pause, scan each whole and gather the
largest hubs' neighborhoods.`,
	},
	{
		Name: "dgs", Title: "`bench dgs`: the dynamic-graph-storage study's operations",
		Args:   []string{"bench", "dgs", "--scale", "20"},
		render: renderDGS,
		What: `The operations and protocol of the dynamic-graph-storage study (see
[architecture](architecture.md#papers)): 80% of a shuffled R-MAT stream is
loaded, then single updates (one operation per ` + "`Apply`" + `), lookups of random
edges, full neighbor lists of vertices drawn by degree, single deletes,
conditional inserts, mixed read/write streams, readers beside a writer,
and single puts and reads of vertex records. Reads take a fresh snapshot
every 100 operations; the store is as ingest leaves it (not compacted).
Lookups run in batches (a snapshot's 100 in one ` + "`EdgeCounts`" + ` call) and one
at a time with every column (` + "`Edge`" + `). A static CSR of the same edges (and a
Go map of the vertex records) answers the same reads in the same process
and is the oracle every answer is checked against; a plain C++ CSR of the
same edges (the study's own: 8-byte offsets and neighbors,
` + "`std::lower_bound`" + `, a whole stream of reads per call) runs beside it, and the
store's reads are given against the faster of the two. The rates are
taken over chunks of 100 reads timed as a whole, the latencies over every
eighth read timed alone.`,
	},
	{
		Name: "monitors", Title: "`bench monitors`: fraud monitors by money and time against a recompute",
		Args:   []string{"bench", "monitors"},
		render: renderMonitors,
		What: `287,000 random payments among 20,000 accounts over 30 days of event time
(the stream of the issue that made rings time-bounded) go into a store in
batches of 1,000, an accumulate edge type, followed by fan-in and fan-out
monitors by events, distinct senders (receivers) and amount over a 24h
window, a mule monitor (3 senders in, 3 receivers out, 24h) and timed rings
(` + "`ring_search=timed,max_span=1h,max_cycle=4`" + `), each driven as serve drives it.
Each update per batch is timed; every fifth batch a fresh instance of the
same monitor is given the operations its window holds then as one batch
(a recompute), and every account's measure must be the same in both.`,
	},
	{
		Name: "decode", Title: "`bench decode`: JSON events through a field mapping",
		Args:   []string{"bench", "decode"},
		render: renderDecode,
		What: `1M payment events (an event id, account keys over 100,000 accounts, amounts
as strings and numbers, times in RFC 3339 and epoch milliseconds, one in
eight with nested metadata) are decoded on one core through the mapping
` + "`src=/from_account,dst=/to_account,weight=/amount,time=/ts`" + ` into a key
dictionary; in the same run the same operations in the native JSON format
and, with numeric ids, in the binary format. Best of 3 passes after a
first one in which every account is new.`,
	},
}

// Find returns the benchmark named name.
func Find(name string) (Benchmark, error) {
	var names []string
	for _, b := range Benchmarks {
		if b.Name == name {
			return b, nil
		}
		names = append(names, b.Name)
	}
	return Benchmark{}, fmt.Errorf("no benchmark %q (the report's: %s)", name, strings.Join(names, ", "))
}

// Run is what docs/bench/<name>.json holds: one run of a benchmark.
type Run struct {
	Name    string            `json:"name"`
	Command string            `json:"command"` // as stated, BrokersArg not replaced
	Seconds float64           `json:"seconds"` // wall time of the command
	Before  bench.Calibration `json:"before"`  // measured just before it, by the benchmark
	Result  json.RawMessage   `json:"result"`  // the benchmark's JSON line
}

// RunBenchmark runs b with binary in place of bin/graphtide and brokers in
// place of BrokersArg, its progress (stderr) to log, and returns the run.
// The result is the last line of the command's stdout, which must be a
// JSON object carrying the calibration the benchmark measured before it
// started (every `graphtide bench` command does).
func RunBenchmark(b Benchmark, binary, brokers string, log io.Writer) (Run, error) {
	if b.NeedsBroker() && brokers == "" {
		return Run{}, fmt.Errorf("benchmark %s: needs a Kafka broker (--brokers)", b.Name)
	}
	args := make([]string, len(b.Args))
	for i, a := range b.Args {
		args[i] = strings.ReplaceAll(a, BrokersArg, brokers)
	}
	cmd := exec.Command(binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, log
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		return Run{}, fmt.Errorf("benchmark %s: %s: %w", b.Name, b.Command(), err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := []byte(lines[len(lines)-1])
	var obj struct {
		Calibration *bench.Calibration `json:"calibration"`
	}
	if err := json.Unmarshal(last, &obj); err != nil {
		return Run{}, fmt.Errorf("benchmark %s: the last line of its output is not a JSON object: %w", b.Name, err)
	}
	if obj.Calibration == nil {
		return Run{}, fmt.Errorf("benchmark %s: its result carries no calibration", b.Name)
	}
	return Run{Name: b.Name, Command: b.Command(), Seconds: secs, Before: *obj.Calibration, Result: last}, nil
}

// WriteRun writes r to dir/<name>.json, replacing it atomically.
func WriteRun(dir string, r Run) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, r.Name+".json"), append(data, '\n'))
}

// WriteMachine writes m to dir/machine.json.
func WriteMachine(dir string, m Machine) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, machineFile), append(data, '\n'))
}

const machineFile = "machine.json"

func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp))
	}
	return nil
}
