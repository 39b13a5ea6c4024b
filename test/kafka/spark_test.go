package kafkatest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide"
	"github.com/graphtide/graphtide/internal/export"
)

// make test-spark runs it (CI does, after make test: .ci/run).
var sparkTest = flag.Bool("spark", false, "run TestSparkOverPartitionedExport: GraphFrames on Apache Spark (deploy/spark/setup.sh installs it) over an export of two partitioned owners")

// TestSparkOverPartitionedExport (issue 45): a graph of numbers and
// string keys, with re-weights and edge deletes, produced to 4
// partitions and ingested by two running partitioned owners (0-1, 2-3).
// Each is asked (graphtide export --server, POST /v1/exports) for an
// export at a cut it has not reached, the end of a second stretch of
// events not produced yet; the second and third stretches are then
// produced, and each owner holds ingestion at the cut, exports, and goes
// on. The two parts are one set (export check). deploy/spark/
// graphframes_job.py runs on the set, and its answers equal the
// analytics of a single instance holding the events up to the cut
// (loaded): components and BFS levels exactly, PageRank within 1e-5 in
// L1, and its ring motif's count equals the 3-cycles counted here from
// the events. An export at a cut an owner passed is refused, and a set
// with a part of another cut by both readers.
func TestSparkOverPartitionedExport(t *testing.T) {
	t.Parallel()
	if !*sparkTest {
		t.Skip("needs Apache Spark: make test-spark (-spark) runs it")
	}
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	env := sparkEnv(t, root)
	work := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = work, &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("graphtide %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}

	write := func(name string, lines []string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The graph: 300 numbered and 300 keyed vertices, a few hubs, twenty
	// small components (first), then two more stretches of events.
	r := rand.New(rand.NewPCG(45, 7))
	edges := map[[2]string]bool{}
	first := sparkEvents(r, edges, 3000, true)
	second := sparkEvents(r, edges, 800, false)
	atCut := maps.Clone(edges)
	third := sparkEvents(r, edges, 800, false)
	write("first.txt", first)
	write("later.txt", append(slices.Clone(second), third...))
	write("single.txt", append(slices.Clone(first), second...))
	topic := uniq("spark-edges")
	brokers := strings.Join(addrs, ",")
	run("produce", "--brokers", brokers, "--topic", topic, "--partitions", "4", "first.txt")

	// Two owners, running.
	ports := [2]int{freeTCPPort(t), freeTCPPort(t)}
	owners := fmt.Sprintf("0-1=http://127.0.0.1:%d,2-3=http://127.0.0.1:%d", ports[0], ports[1])
	group := uniq("spark-owners")
	var cmds [2]*exec.Cmd
	for i, own := range []string{"0-1", "2-3"} {
		name := "owner-" + string(rune('a'+i))
		cmd := exec.Command(bin, "serve", "--brokers", brokers, "--topics", topic, "--format", "text", "--writes-topic", "",
			"--group", group, "--dir", name, "--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--flush-interval", "200ms",
			"--owners", owners, "--own-partitions", own, "--export-dir", name+"-exports")
		cmd.Dir = work
		logf, err := os.Create(filepath.Join(work, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
	}
	url := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", ports[i]) }
	httpGet := func(u string) string {
		resp, err := http.Get(u)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	caughtUp := func() bool {
		return strings.Contains(httpGet(url(0)+"/readyz"), `"behind":0}`) && strings.Contains(httpGet(url(1)+"/readyz"), `"behind":0}`)
	}
	if !waitFor(2*time.Minute, caughtUp) {
		t.Fatalf("the owners did not catch up; logs in %s", work)
	}

	// The cut: the first stretch and the second, which is not produced
	// yet: each partition's end now plus the second stretch's records
	// that will land on it (the producers' partitioner, by source).
	adm := newAdmin(t)
	ends := endOffsets(t, adm, topic)
	part := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	for _, l := range second {
		f := strings.Fields(l)
		key := f[0]
		if key == "d" {
			key = f[1]
		}
		p := int32(part.Partition(&kgo.Record{Key: []byte(key)}, 4))
		o, _ := ends.Get(topic, p)
		ends.Set(topic, p, o+1)
	}
	var cut []export.Offset
	for p := int32(0); p < 4; p++ {
		o, _ := ends.Get(topic, p)
		cut = append(cut, export.Offset{Topic: topic, Partition: p, Offset: o})
	}
	b, _ := json.Marshal(cut)
	if err := os.WriteFile(filepath.Join(work, "cut.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}

	// Each owner exports at the cut, which it has not reached: it waits,
	// holding ingestion there, while the second and third stretches are
	// produced.
	outs := make(chan string, 2)
	for i, name := range []string{"a", "b"} {
		go func() {
			cmd := exec.Command(bin, "export", "--server", url(i), "--out", "nightly", "--part", name, "--at-offsets", "cut.json")
			cmd.Dir = work
			out, err := cmd.CombinedOutput()
			if err != nil {
				out = append(out, []byte("\nexit: "+err.Error())...)
			}
			outs <- string(out)
		}()
	}
	if !waitFor(time.Minute, func() bool {
		return strings.Contains(httpGet(url(0)+"/v1/exports"), `"state":"waiting"`) && strings.Contains(httpGet(url(1)+"/v1/exports"), `"state":"waiting"`)
	}) {
		t.Fatalf("the exports do not wait for the cut: %s %s", httpGet(url(0)+"/v1/exports"), httpGet(url(1)+"/v1/exports"))
	}
	run("produce", "--brokers", brokers, "--topic", topic, "--partitions", "4", "later.txt")
	for range 2 {
		if out := <-outs; !strings.Contains(out, " in nightly under ") || strings.Contains(out, "exit:") {
			t.Fatalf("export at the cut: %s", out)
		}
	}
	sets := []string{"owner-a-exports/nightly", "owner-b-exports/nightly"}
	if got := run(append([]string{"export", "check"}, sets...)...); !strings.Contains(got, "2 parts, one cut of 4 partitions") {
		t.Fatalf("export check: %s", got)
	}
	// Released, the owners ingest the third stretch too.
	if !waitFor(2*time.Minute, caughtUp) {
		t.Fatalf("the owners did not go on past the cut; logs in %s", work)
	}
	// A cut they passed: the batch that ended there is not readable
	// without history, and the export says so.
	again := exec.Command(bin, "export", "--server", url(0), "--out", "again", "--part", "a", "--at-offsets", "cut.json")
	again.Dir = work
	if out, err := again.CombinedOutput(); err == nil || !strings.Contains(string(out), "past the cut") && !strings.Contains(string(out), "keep history (--history-seqs)") {
		t.Fatalf("an export at a cut the owner passed: %v\n%s", err, out)
	}

	// A part of another cut (owner b's newest batch) does not join the set.
	run("export", "--server", url(1), "--out", "other", "--part", "b-now")
	for _, bad := range [][]string{append([]string{bin, "export", "check", "owner-b-exports/other"}, sets...),
		append([]string{env["GRAPHTIDE_SPARK_PYTHON"], filepath.Join(root, "deploy/spark/graphframes_job.py"), "--check-only", "--out", "x", "owner-b-exports/other"}, sets...)} {
		cmd := exec.Command(bad[0], bad[1:]...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "parts of different cuts") {
			t.Fatalf("%s on parts of two cuts: %v\n%s", filepath.Base(bad[0]), err, out)
		}
	}
	for _, cmd := range cmds {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("an owner: %v; logs in %s", err, work)
		}
	}
	// The single instance: the same events up to the cut, loaded.
	run("load", "--dir", "single", "single.txt")

	rootName := "acct-0" // a hub
	cmd := exec.Command(env["GRAPHTIDE_SPARK_PYTHON"], filepath.Join(root, "deploy/spark/graphframes_job.py"),
		"--root", rootName, "--out", "results", "--checkpoint-dir", filepath.Join(work, "checkpoints"), sets[0], sets[1])
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GRAPHFRAMES_JARS="+env["GRAPHFRAMES_JARS"])
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("graphframes_job.py: %v\n%s", err, out)
	}
	t.Logf("graphframes_job.py took %s", time.Since(start).Round(time.Second))

	compareWithSingle(t, filepath.Join(work, "single"), filepath.Join(work, "results"), atCut, rootName)
}

// sparkEnv runs deploy/spark/setup.sh and returns the environment it
// prints.
func sparkEnv(t *testing.T, root string) map[string]string {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "deploy/spark/setup.sh")).Output()
	if err != nil {
		t.Fatalf("deploy/spark/setup.sh: %v", err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(strings.TrimPrefix(l, "export "), "=")
		env[k] = strings.Trim(v, "'")
	}
	if env["GRAPHTIDE_SPARK_PYTHON"] == "" || env["GRAPHFRAMES_JARS"] == "" {
		t.Fatalf("deploy/spark/setup.sh printed %q", out)
	}
	return env
}

// sparkEvents returns n text lines of random events over 300 numbered
// vertices and 300 keyed ones (acct-0..2 hubs), upserts and deletes of
// earlier edges, no self-loops, no vertex deletes (a partitioned owner
// keeps the in-edges of other owners' vertices a vertex delete would
// remove: docs/partitioned.md), applied to edges; with components,
// twenty small components of 2 to 5 keyed vertices too (chains
// c<k>-0 -> c<k>-1 -> ...), apart from the rest.
func sparkEvents(r *rand.Rand, edges map[[2]string]bool, n int, components bool) []string {
	name := func() string {
		i := r.IntN(600)
		if r.IntN(8) == 0 {
			i = 300 + r.IntN(3)
		}
		if i < 300 {
			return strconv.Itoa(i)
		}
		return fmt.Sprintf("acct-%d", i-300)
	}
	var lines []string
	for len(lines) < n {
		s, d := name(), name()
		if s == d {
			continue
		}
		if edges[[2]string{s, d}] && r.IntN(3) == 0 {
			delete(edges, [2]string{s, d})
			lines = append(lines, "d "+s+" "+d)
			continue
		}
		edges[[2]string{s, d}] = true
		lines = append(lines, fmt.Sprintf("%s %s %d", s, d, 1+r.IntN(9)))
	}
	for k := 0; components && k < 20; k++ {
		for j := 0; j < 1+k%4; j++ {
			s, d := fmt.Sprintf("c%d-%d", k, j), fmt.Sprintf("c%d-%d", k, j+1)
			edges[[2]string{s, d}] = true
			lines = append(lines, fmt.Sprintf("%s %s 1", s, d))
		}
	}
	return lines
}

// compareWithSingle checks Spark's results against the analytics of the
// single instance's store, opened with the root package.
func compareWithSingle(t *testing.T, single, results string, edges map[[2]string]bool, rootName string) {
	db, err := graphtide.Open(single, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := func(name string) uint64 {
		if n, err := strconv.ParseUint(name, 10, 64); err == nil {
			return n
		}
		v, ok := db.LookupKey(name)
		if !ok {
			t.Fatalf("vertex %s is not in the single instance", name)
		}
		return v
	}
	names := map[string]bool{}
	for e := range edges {
		names[e[0]], names[e[1]] = true, true
	}
	for _, a := range []graphtide.BuiltIn{graphtide.WCC{}, graphtide.BFS{RootKey: rootName},
		graphtide.PageRank{Tolerance: 1e-7, MaxIterations: 1000}} {
		n, err := db.Register(a)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err = db.Wait(ctx, n, 0)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	type comp struct {
		ID        string `parquet:"id"`
		Component int64  `parquet:"component"`
	}
	type dist struct {
		ID       string `parquet:"id"`
		Distance int32  `parquet:"distance"`
	}
	type rank struct {
		ID   string  `parquet:"id"`
		Rank float64 `parquet:"rank"`
	}
	comps := sparkRows[comp](t, filepath.Join(results, "components"))
	if len(comps) != len(names) {
		t.Fatalf("Spark's components name %d vertices, the graph has %d", len(comps), len(names))
	}
	sparkToOurs, oursToSpark := map[int64]uint64{}, map[uint64]int64{}
	for _, c := range comps {
		x, ok, err := db.VertexResult("wcc", id(c.ID))
		if err != nil || !ok {
			t.Fatalf("wcc of %s: %v %v", c.ID, ok, err)
		}
		ours := x.(graphtide.VertexComponent).Component
		if o, seen := sparkToOurs[c.Component]; seen && o != ours {
			t.Fatalf("%s: Spark's component %d is two of graphtide's (%d and %d)", c.ID, c.Component, o, ours)
		}
		if s, seen := oursToSpark[ours]; seen && s != c.Component {
			t.Fatalf("%s: graphtide's component %d is two of Spark's (%d and %d)", c.ID, ours, s, c.Component)
		}
		sparkToOurs[c.Component], oursToSpark[ours] = ours, c.Component
	}
	levels := map[string]int32{}
	for _, d := range sparkRows[dist](t, filepath.Join(results, "bfs")) {
		levels[d.ID] = d.Distance
	}
	reached := 0
	for n := range names {
		x, _, err := db.VertexResult("bfs", id(n))
		if err != nil {
			t.Fatal(err)
		}
		ours := x.(graphtide.VertexLevel).Level
		got, ok := levels[n]
		if !ok {
			got = -1
		} else {
			reached++
		}
		if int(got) != ours {
			t.Fatalf("BFS level of %s: Spark %d, graphtide %d", n, got, ours)
		}
	}
	if len(sparkToOurs) != 21 {
		t.Fatalf("%d components, want the random graph's one and the twenty small ones", len(sparkToOurs))
	}
	if reached < len(names)/2 {
		t.Fatalf("BFS from %s reached only %d of %d vertices: a weak check", rootName, reached, len(names))
	}
	var l1, sum float64
	ranks := sparkRows[rank](t, filepath.Join(results, "pagerank"))
	if len(ranks) != len(names) {
		t.Fatalf("Spark ranked %d vertices, the graph has %d", len(ranks), len(names))
	}
	for _, r := range ranks {
		x, _, err := db.VertexResult("pagerank", id(r.ID))
		if err != nil {
			t.Fatal(err)
		}
		l1 += math.Abs(x.(graphtide.VertexRank).Rank - r.Rank)
		sum += r.Rank
	}
	if l1 > 1e-5 || math.Abs(sum-1) > 1e-6 {
		t.Fatalf("PageRank: L1 distance %g from graphtide's (want at most 1e-5), Spark's ranks sum to %g", l1, sum)
	}
	var summary struct {
		Rings int `json:"rings"`
	}
	b, err := os.ReadFile(filepath.Join(results, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &summary); err != nil {
		t.Fatal(err)
	}
	if want := threeCycles(edges); summary.Rings != want || want == 0 {
		t.Fatalf("Spark found %d rings, the events hold %d directed 3-cycles", summary.Rings, want)
	}
	t.Logf("%d vertices, %d edges: %d components, %d reached from %s, PageRank L1 %.2g, %d rings", len(names), len(edges),
		len(sparkToOurs), reached, rootName, l1, summary.Rings)
}

// sparkRows reads every Parquet file Spark wrote into dir.
func sparkRows[T any](t *testing.T, dir string) []T {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(files) == 0 {
		t.Fatalf("no Parquet file in %s", dir)
	}
	sort.Strings(files)
	var out []T
	for _, f := range files {
		rows, err := parquet.ReadFile[T](f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, rows...)
	}
	return out
}

// threeCycles counts the directed 3-cycles a->b->c->a of edges, each once.
func threeCycles(edges map[[2]string]bool) int {
	out := map[string][]string{}
	for e := range edges {
		out[e[0]] = append(out[e[0]], e[1])
	}
	n := 0
	for a, bs := range out {
		for _, b := range bs {
			for _, c := range out[b] {
				if a < b && a < c && edges[[2]string{c, a}] {
					n++
				}
			}
		}
	}
	return n
}
