package kafkatest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/graphtide/graphtide"
)

// make test-spark runs it (CI does, after make test: .ci/run).
var sparkTest = flag.Bool("spark", false, "run TestSparkOverPartitionedExport: GraphFrames on Apache Spark (deploy/spark/setup.sh installs it) over an export of two partitioned owners")

// TestSparkOverPartitionedExport (issue 45): a graph of numbers and
// string keys, with re-weights and edge deletes, produced to 4
// partitions; two partitioned owners (0-1, 2-3) and one instance of the
// whole topic ingest it; the cut of everything produced is taken before
// they start; each owner, stopped once its group committed the cut, is
// exported at the cut, and the two parts are checked as one set.
// deploy/spark/graphframes_job.py then runs on the set, and its answers
// equal the single instance's own analytics on the same graph:
// components and BFS levels exactly, PageRank within 1e-5 in L1, and its
// ring motif's count equals the 3-cycles counted here from the events.
// A set with a part of another instance is refused by both readers.
func TestSparkOverPartitionedExport(t *testing.T) {
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

	// The graph: 300 numbered and 300 keyed vertices, a few hubs.
	edges, lines := sparkGraph(rand.New(rand.NewPCG(45, 7)))
	if err := os.WriteFile(filepath.Join(work, "events.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topic := uniq("spark-edges")
	brokers := strings.Join(addrs, ",")
	run("produce", "--brokers", brokers, "--topic", topic, "--partitions", "4", "events.txt")
	if err := os.WriteFile(filepath.Join(work, "cut.json"), []byte(run("export", "cut", "--brokers", brokers, "--topics", topic)), 0o644); err != nil {
		t.Fatal(err)
	}

	ports := [3]int{freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)}
	owners := fmt.Sprintf("0-1=http://127.0.0.1:%d,2-3=http://127.0.0.1:%d", ports[0], ports[1])
	type inst struct {
		dir, group string
		args       []string
		cmd        *exec.Cmd
	}
	ownerGroup := uniq("spark-owners")
	insts := []*inst{
		{dir: "owner-a", group: ownerGroup, args: []string{"--owners", owners, "--own-partitions", "0-1"}},
		{dir: "owner-b", group: ownerGroup, args: []string{"--owners", owners, "--own-partitions", "2-3"}},
		{dir: "single", group: uniq("spark-single")},
	}
	for i, in := range insts {
		args := append([]string{"serve", "--brokers", brokers, "--topics", topic, "--format", "text", "--writes-topic", "",
			"--group", in.group, "--dir", in.dir, "--http-addr", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--flush-interval", "200ms"}, in.args...)
		in.cmd = exec.Command(bin, args...)
		in.cmd.Dir = work
		logf, err := os.Create(filepath.Join(work, in.dir+".log"))
		if err != nil {
			t.Fatal(err)
		}
		in.cmd.Stdout, in.cmd.Stderr = logf, logf
		if err := in.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := in.cmd
		t.Cleanup(func() {
			if c.ProcessState == nil {
				c.Process.Kill()
				c.Wait()
			}
		})
	}
	adm := newAdmin(t)
	cut := endOffsets(t, adm, topic)
	committed := func(group string, parts ...int32) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		for _, p := range parts {
			want, _ := cut.Get(topic, p)
			got, ok := offs.Lookup(topic, p)
			if !ok || got.At != want {
				return false
			}
		}
		return true
	}
	if !waitFor(2*time.Minute, func() bool {
		return committed(ownerGroup, 0, 1, 2, 3) && committed(insts[2].group, 0, 1, 2, 3)
	}) {
		t.Fatalf("the instances did not commit the cut %v in time; logs in %s", cut, work)
	}
	for _, in := range insts {
		in.cmd.Process.Signal(syscall.SIGTERM)
		if err := in.cmd.Wait(); err != nil {
			log, _ := os.ReadFile(filepath.Join(work, in.dir+".log"))
			t.Fatalf("%s: %v\n%s", in.dir, err, log)
		}
	}

	run("export", "--dir", "owner-a", "--out", "export", "--part", "a", "--at-offsets", "cut.json")
	run("export", "--dir", "owner-b", "--out", "export", "--part", "b", "--at-offsets", "cut.json")
	if got := run("export", "check", "export"); !strings.Contains(got, "2 parts, one cut of 4 partitions") {
		t.Fatalf("export check: %s", got)
	}

	// A part of another instance holding the same partitions (the single
	// instance's, exported as a set of its own) does not join the set.
	run("export", "--dir", "single", "--out", "other", "--part", "c")
	for _, bad := range [][]string{{bin, "export", "check", "export", "other"},
		{env["GRAPHTIDE_SPARK_PYTHON"], filepath.Join(root, "deploy/spark/graphframes_job.py"), "--check-only", "--out", "x", "export", "other"}} {
		cmd := exec.Command(bad[0], bad[1:]...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "is in parts") {
			t.Fatalf("%s on parts of two sets: %v\n%s", filepath.Base(bad[0]), err, out)
		}
	}

	rootName := "acct-0" // a hub
	cmd := exec.Command(env["GRAPHTIDE_SPARK_PYTHON"], filepath.Join(root, "deploy/spark/graphframes_job.py"),
		"--root", rootName, "--out", "results", "--checkpoint-dir", filepath.Join(work, "checkpoints"), "export")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GRAPHFRAMES_JARS="+env["GRAPHFRAMES_JARS"])
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("graphframes_job.py: %v\n%s", err, out)
	}
	t.Logf("graphframes_job.py took %s", time.Since(start).Round(time.Second))

	compareWithSingle(t, filepath.Join(work, "single"), filepath.Join(work, "results"), edges, rootName)
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

// sparkGraph is a random graph of 300 numbered vertices and 300 keyed
// ones (acct-0..2 hubs), and twenty small components, as text lines, with re-weights and edge deletes
// of out-edges, no self-loops, no vertex deletes (a partitioned owner
// keeps the in-edges of other owners' vertices a vertex delete would
// remove: docs/partitioned.md), and the edges that remain.
func sparkGraph(r *rand.Rand) (map[[2]string]bool, []string) {
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
	edges := map[[2]string]bool{}
	var lines []string
	for len(lines) < 4000 {
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
	// Twenty small components of 2 to 5 keyed vertices each, apart from
	// the rest: chains c<k>-0 -> c<k>-1 -> ...
	for k := 0; k < 20; k++ {
		for j := 0; j < 1+k%4; j++ {
			s, d := fmt.Sprintf("c%d-%d", k, j), fmt.Sprintf("c%d-%d", k, j+1)
			edges[[2]string{s, d}] = true
			lines = append(lines, fmt.Sprintf("%s %s 1", s, d))
		}
	}
	return edges, lines
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
