package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/bench"
)

var update = flag.Bool("update", false, "rewrite testdata/page.golden from testdata/*.json")

// TestRenderFixture renders testdata/*.json (small runs of the real
// benchmarks; decode left out) and checks rows worked out by hand from those
// files, then the whole page against testdata/page.golden.
func TestRenderFixture(t *testing.T) {
	page, err := Render("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// machine.json
		"| CPU | AMD EPYC |",
		"| memory | 23.5 GiB |", // 25276182528 / 2^30 = 23.54
		"| load average when the latest run started (1, 5, 15 min) | 1.25, 1.50, 2.00 |",
		"| calibration when the latest run started | sort 88.5 ms, copy 12.8 GB/s, random read 175 ns |",
		// ingest.json: store 2804369 edges/s, Pebble 1154174, ratio 2.4298
		"| ingest, batches of 10,000, final flush included | 2.80M edges/s | Pebble: 1.15M edges/s | 2.43x |",
		// 4.6156 / 8.9421 = 0.516
		"| on disk after `CompactAll`, per distinct edge | 4.62 bytes | Pebble: 8.94 bytes | 0.52x |",
		"| the same, keeping in-edges | 18.9 ns | out-edges only: 37.2 ns | 0.51x |",
		// 255.661 / 185.562 = 1.378; 9.2311 / 4.6156 = 2.000
		"| the process's CPU time per edge of that ingest | 256 ns | out-edges only: 186 ns | 1.38x |",
		"| its bytes on disk after `CompactAll`, per distinct edge | 9.23 bytes | out-edges only: 4.62 bytes | 2.00x |",
		"It took 61.5 s; just before it: load average 1.50, calibration sort 90.1 ms, copy 12.5 GB/s, random read 180 ns.",
		"65,536 edges (53,518 distinct) over 4,096 vertex ids, MemGraphs of 64.0 MiB.",
		// edge_events: 100000 / 40804 = 2.4507; accumulate 66.64 / 54.06 = 1.2328,
		// 181.24 / 151.72 = 1.1946, 44.399 / 20.398 = 2.1767
		"distinct pairs (2.45 payments per pair; 59% of the payments repeat a pair), in",
		"| accumulate | 66.6 ns | 1.23x | 181 ns | 1.19x | 5.59M/s | 44.4 bytes | 2.18x |",
		// analytics.json: bfs view 156.623 µs, csr 166.868 µs, ratio 0.9386; fresh 177.033 µs, 1.1303
		"| bfs | 157 µs | 167 µs | 0.94x | 177 µs (1.13x) |",
		"| pagerank (10 iterations; 10 after the stream) | 739 µs | 728 µs | 1.01x | 758 µs (1.03x) |",
		// registered: bfs 2.0517 ms, p99 2.4669 ms, update 37.87 µs; all 2.6547 ms, p99 3.0005 ms
		"| bfs | 2.05 ms | 2.47 ms | 37.9 µs | 0 of 4 |",
		"| all five | 2.65 ms | 3.00 ms |  |  |",
		// analytics-stream.json: a batch every 5 ms; bfs fresh 2.1 ms, p99 3.4 ms, 3 updates for 3 batches
		"with a batch applied every 5.00 ms whatever the analytics do",
		"| bfs | 2.10 ms | 3.40 ms | 3 for 3 batches | 37.9 µs | 0 |",
		// driven alone: bfs 1.4342 ms, p99 1.6612 ms, update 40.597 µs: 1.4342113 / 0.0405973 = 35.33
		"| bfs | 1.43 ms | 1.66 ms | 40.6 µs | 35.33x |",
		"| all five, one after the other | 2.28 ms | 2.53 ms |  |  |",
		// 809.67 ops, apply 126.5 µs, advance 1.2210 ms (p99 1.4112), 1.508 µs/op, 1902.1 and 869.8 bytes/op
		"| 810 operations | 856 | 127 µs | 1.22 ms (1.41 ms) | 1.51 µs | 1.43 µs | 1,902, 870 |",
		"| bfs | 40.6 µs | 46.0 µs | 64.5 µs | 266 µs | 6.56x | 0 of 4 |",
		"then 3,429 operations streamed, drawn on by the graph's own generator (its permutation, so its hubs) in 4 batches",
		"On the compacted view, bfs, wcc, sssp equal reference kernels run on the loaded edges at every vertex.",
		// dd bfs: graphtide alone 1.4342 ms (p99 1.6612), registered 2.0517 ms (p99 2.4669), DD 0.953968 ms: 1.5034x and 2.1507x; peak 8,024,064 B = 7.65 MiB
		"| bfs | 1.43 ms (1.66 ms) | 2.05 ms (2.47 ms) | 954 µs (954 µs) | 1.50x | 2.15x | 8.46 ms | 7.65 MiB | the same 2937 vertices reached, levels summing to 5077 |",
		// counters over 3,429 operations: 3 compactions, 318,650 heads compacted, 147,447 written
		"per operation: 0.000875 compactions of the topology's blocks, 92.9 list heads copied by them, 43.0 heads written",
		// topology: 755824 B = 0.7208 MiB; 14.1228 bytes per edge, 13.8744 after the stream; 1.6088 ms per batch
		"| 6,144 vertex slots, 0.721 MiB | 1.02 ms | 129 ms | 14.1 | 13.9 | 1.61 ms |",
		// kafka.json: ingest 951471, raw 4778205, 0.1991
		"| ingest from Kafka into a store, final flush included | 951K edges/s | plain consumer: 4.78M records/s | 0.20x |",
		// 0.046422 / (0.016698 + 0.013303) = 1.547
		"| CPU time | 0.05 s | plain consumer 0.02 s + store alone 0.01 s | 1.55x |",
		// serve.json: 307060736 B = 292.8 MiB, over 256 MiB 1.1439; not within the budget
		"| peak anonymous memory (what the budget bounds) | 293 MiB | 1.14x |",
		"| within the budget | **no** |  |",
		"| `memgraphs` | 2.31 MiB |  |",
		"| `store` |  | 76.8 MiB |",
		// serve.json edge_events: 2650 / 2250 = 1.178; 256.52 / 71.43 = 3.591
		"| `types: {payment: {aggregate: accumulate}}` | 2,650 ns | 1.18x | 128K/s | 257 bytes | 3.59x |",
		// mixed.json: readers 2: p99 0.063425 over 0.054541 = 1.163
		"| 2 | 0.014 ms | 0.0634 ms (1.16x) | 10.6 ms | 16.0 ms | 1,001 (989/s) | 99.8 (5.55M edges/s) | 0, 0, 0 | 8.63 |",
		// dgs.json: searchedge 212207/s against 6724904/s: 0.0316
		"| SEARCHEDGE | 212K/s | 0.54 / 1.59 µs | static CSR: 6.72M/s, 0.07 / 0.45 µs | 0.03x |",
		// 122351 / 232144 = 0.527
		"| INSVTX, single puts of a vertex record | 122K/s | 2.09 / 11.1 µs | INSEDGE: 232K/s | 0.53x |",
		// monitors.json: fanin_senders 2524.65 / 1223.28 = 2.064; 4972.75 operations
		"20,000 payments among 2,000 accounts over 4 days, 20 batches of 1,000; fan and mule window 24h.",
		"| fan-in by distinct senders | 1.22 ms | 1.98 ms | 1,223 ns | 2.52 ms (4,973 operations) | 508 ns | 2.06x | 1,010 |",
		// decode.json is missing: not run, with its command
		"```text\nbin/graphtide bench decode\n```\n\nNot run in this report: `scripts/bench-report.sh --only decode` runs it.",
		"```text\nbin/graphtide bench kafka --brokers $BROKERS --scale 20 --edge-factor 16\n```",
		"· [`bench dgs`](#bench-dgs-the-dynamic-graph-storage-studys-operations)",
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page lacks\n%s", want)
		}
	}
	golden := filepath.Join("testdata", "page.golden")
	if *update {
		if err := os.WriteFile(golden, page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, want) {
		t.Errorf("the page differs from %s (go test -run TestRenderFixture ./internal/bench/report -update rewrites it; check the diff)", golden)
	}
}

// TestCommittedPageMatchesItsData is what keeps docs/benchmarks.md from
// drifting from docs/bench/*.json: the committed page must be exactly the
// rendering of the committed data.
func TestCommittedPageMatchesItsData(t *testing.T) {
	docs := filepath.Join("..", "..", "..", "docs")
	page, err := Render(filepath.Join(docs, "bench"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(docs, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, committed) {
		t.Error("docs/benchmarks.md is not the rendering of docs/bench/*.json: run `scripts/bench-report.sh --render` (or the whole report) and commit both")
	}
}

// TestRenderRefusesAnotherCommand: a result run with another command than
// the one the page states is not shown under it.
func TestRenderRefusesAnotherCommand(t *testing.T) {
	dir := t.TempDir()
	copyFixture(t, dir, "machine.json")
	run := `{"name":"decode","command":"bin/graphtide bench decode --records 10","seconds":1,"before":{},"result":{"records":10}}`
	if err := os.WriteFile(filepath.Join(dir, "decode.json"), []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Render(dir)
	if err == nil || !strings.Contains(err.Error(), "--records 10") || !strings.Contains(err.Error(), "--only decode") {
		t.Fatalf("Render = %v, want a refusal naming the command and how to run it again", err)
	}
}

// TestRenderRefusesAResultWithoutItsFigures: a result that lacks a figure
// a table shows is an error, not a row of zeros.
func TestRenderRefusesAResultWithoutItsFigures(t *testing.T) {
	dir := t.TempDir()
	copyFixture(t, dir, "machine.json")
	run, err := json.Marshal(Run{Name: "decode", Command: "bin/graphtide bench decode", Result: json.RawMessage(`{"records":10,"mapped":{"records_per_sec":5}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "decode.json"), run, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Render(dir)
	if err == nil || !strings.Contains(err.Error(), "binary") || !strings.Contains(err.Error(), "native") {
		t.Fatalf("Render = %v, want an error naming the missing figures", err)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{sig(0), "0"}, {sig(0.0123456), "0.0123"}, {sig(1.234), "1.23"}, {sig(12.34), "12.3"}, {sig(1234.5), "1,234"}, {sig(1234567), "1,234,567"},
		{rate(950), "950"}, {rate(12345), "12.3K"}, {rate(698000), "698K"}, {rate(10870000), "10.9M"}, {rate(1.25e9), "1.25G"},
		{duration(0.000012), "12.0 µs"}, {duration(0.0167), "16.7 ms"}, {duration(19.4), "19.4 s"}, {duration(150), "2.5 min"},
		{ratio(0.8), "0.80x"}, {commas("-1234"), "-1,234"},
		{anchor("`bench ingest`: the store against Pebble and a static CSR"), "bench-ingest-the-store-against-pebble-and-a-static-csr"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestBenchmarksAreDistinct: every benchmark has its own name (its file)
// and its command runs `graphtide bench <name>` (a variant, named
// <command>-<variant>, runs `graphtide bench <command>`).
func TestBenchmarksAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range Benchmarks {
		if seen[b.Name] {
			t.Errorf("two benchmarks named %s", b.Name)
		}
		seen[b.Name] = true
		if len(b.Args) < 2 || b.Args[0] != "bench" || b.Args[1] != b.Name && !strings.HasPrefix(b.Name, b.Args[1]+"-") {
			t.Errorf("%s runs %q", b.Name, b.Command())
		}
		if b.NeedsBroker() != (b.Name == "kafka" || b.Name == "serve") {
			t.Errorf("%s: NeedsBroker %v", b.Name, b.NeedsBroker())
		}
	}
}

func copyFixture(t *testing.T, dir, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunBenchmarkTakesTheResultsCalibration: the run's Before is the
// calibration the benchmark's JSON carries; a result without one is
// refused (a benchmark run without it could not be compared with others).
func TestRunBenchmarkTakesTheResultsCalibration(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-graphtide")
	script := `#!/bin/sh
echo "progress" >&2
echo "not the result"
if [ "$2" = "calibrated" ]; then
  echo '{"calibration":{"load_avg_1m":0.25,"sort_ms":81,"copy_gb_per_sec":11,"random_read_ns":150},"edges":7}'
else
  echo '{"edges":7}'
fi
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := Benchmark{Name: "fake", Args: []string{"bench", "calibrated"}}
	r, err := RunBenchmark(b, bin, "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := bench.Calibration{LoadAvg1m: 0.25, SortMs: 81, CopyGBps: 11, RandomReadNs: 150}
	if r.Before != want || !strings.Contains(string(r.Result), `"edges":7`) {
		t.Errorf("run %+v, want Before %+v and the result line", r, want)
	}
	b.Args = []string{"bench", "plain"}
	if _, err := RunBenchmark(b, bin, "", io.Discard); err == nil || !strings.Contains(err.Error(), "carries no calibration") {
		t.Errorf("a result without a calibration: err %v", err)
	}
}
