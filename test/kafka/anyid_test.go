package kafkatest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
)

// TestAnyIDInAnalytics (issue 10, item 2): graphtide serve, built from
// this tree and run in a process of its own against the real broker, with
// bfs, wcc, pagerank and sssp registered, is fed the text record
// "7 2000000000" (which once made each analytic allocate about 8 GB and
// serve die in a loop), numeric ids spread over the whole range
// 0..2^62-1 (text records) and string keys mixed with numbers (JSON records
// on a second topic). Serve must stay up with a small resident set, every
// analytic must stay healthy, and their answers over the HTTP API, vertex
// by vertex, must match references computed here from the edges sent: BFS
// levels (and SSSP distances, every weight being 1) from 7 and from a key,
// components, and PageRank.
func TestAnyIDInAnalytics(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	textT, jsonT := uniq("anyid-text"), uniq("anyid-json")
	createTopic(t, textT, 2)
	createTopic(t, jsonT, 2)

	// The graph, by vertex name: numbers in decimal, keys as "key:<key>"
	// (the API's names).
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 10))
	const maxID = engine.HighIDBase - 1 // 2^62-1, the largest numeric id
	nums := []uint64{7, 2000000000, 0, 1, 1<<31 - 1, 1 << 31, 1<<32 + 1, maxID, maxID - 1, 1 << 61}
	for len(nums) < 240 {
		if v := r.Uint64N(maxID + 1); !slices.Contains(nums, v) {
			nums = append(nums, v)
		}
	}
	var keys []string
	for i := 0; i < 80; i++ {
		keys = append(keys, fmt.Sprintf("acct-%d", i))
	}
	numName := func(v uint64) string { return strconv.FormatUint(v, 10) }
	keyName := func(k string) string { return "key:" + k }
	type edge struct{ src, dst string }
	seen := map[edge]bool{}
	var edges []edge
	var textRecs, jsonRecs []*record
	add := func(e edge) bool {
		if seen[e] {
			return false
		}
		seen[e] = true
		edges = append(edges, e)
		return true
	}
	// The record of the issue, first.
	add(edge{"7", "2000000000"})
	textRecs = append(textRecs, &record{topic: textT, value: []byte("7 2000000000\n")})
	// Numbers: a random forest over the first 160 (7's component holds
	// most), 80 more in small components, and some extra edges; a record
	// holds one to three lines.
	var lines []string
	flush := func() {
		if len(lines) > 0 {
			textRecs = append(textRecs, &record{topic: textT, part: int32(len(textRecs) % 2), value: []byte(strings.Join(lines, ""))})
			lines = nil
		}
	}
	numEdge := func(a, b uint64) {
		if add(edge{numName(a), numName(b)}) {
			lines = append(lines, fmt.Sprintf("%d %d\n", a, b))
			if len(lines) == 1+r.IntN(3) {
				flush()
			}
		}
	}
	for i := 1; i < 160; i++ {
		numEdge(nums[r.IntN(i)], nums[i])
	}
	for i := 160; i < len(nums); i += 4 {
		for j := i + 1; j < min(i+4, len(nums)); j++ {
			numEdge(nums[i], nums[j])
		}
	}
	for i := 0; i < 200; i++ {
		numEdge(nums[r.IntN(len(nums))], nums[r.IntN(len(nums))])
	}
	flush()
	// Keys, as JSON: among themselves, and with numbers both ways (some
	// keys join 7's component, some only other keys).
	jsonEdge := func(src, dst any, sn, dn string) {
		if add(edge{sn, dn}) {
			b, _ := json.Marshal(map[string]any{"src": src, "dst": dst})
			jsonRecs = append(jsonRecs, &record{topic: jsonT, part: int32(len(jsonRecs) % 2), value: b})
		}
	}
	for i := 1; i < 60; i++ {
		a, b := keys[r.IntN(i)], keys[i]
		jsonEdge(a, b, keyName(a), keyName(b))
	}
	for i := 61; i < len(keys); i++ { // keys 60..79: a chain of their own
		jsonEdge(keys[i-1], keys[i], keyName(keys[i-1]), keyName(keys[i]))
	}
	for i := 0; i < 30; i++ {
		k, n := keys[r.IntN(60)], nums[r.IntN(len(nums))]
		if i%2 == 0 {
			jsonEdge(k, n, keyName(k), numName(n))
		} else {
			jsonEdge(n, k, numName(n), keyName(k))
		}
	}
	jsonEdge(keys[5], uint64(7), keyName(keys[5]), "7")
	jsonEdge(uint64(maxID), keys[0], numName(maxID), keyName(keys[0]))

	// serve, with the four analytics, consuming both topics.
	dir := t.TempDir()
	port := freeTCPPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	log := &logBuffer{}
	srv := startServe(t, bin, log, "--brokers", strings.Join(addrs, ","), "--topics", textT+","+jsonT,
		"--topic-format", textT+"=text", "--topic-format", jsonT+"=json", "--group", uniq("anyid-group"),
		"--dir", filepath.Join(dir, "data"), "--memory-budget", "256MiB", "--in-edges",
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--alert-topic", "", "--dead-letter-topic", uniq("anyid-dead"),
		"--flush-interval", "200ms",
		"--analytic", "type=bfs,name=bfs,root=7", "--analytic", "type=wcc,name=wcc",
		"--analytic", "type=pagerank,name=pagerank,tolerance=1e-6", "--analytic", "type=sssp,name=sssp,root=7") // its ranks are checked vertex by vertex to 1e-5
	if !waitFor(2*time.Minute, func() bool { code, _ := httpGet(base + "/readyz"); return code == 200 || !srv.alive() }) || !srv.alive() {
		t.Fatalf("serve did not become ready:\n%s", log.tail(40))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod := newProducer(t)
	// The record alone first, then everything else.
	if err := produce(ctx, prod, textRecs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := produce(ctx, prod, append(textRecs[1:], jsonRecs...)); err != nil {
		t.Fatal(err)
	}
	nrec := len(textRecs) + len(jsonRecs)
	t.Logf("%d vertices (%d numbers, %d keys), %d edges in %d text and %d JSON records", len(nums)+len(keys), len(nums), len(keys),
		len(edges), len(textRecs), len(jsonRecs))

	// Caught up: every record ingested, every analytic at the store's
	// newest sequence number.
	caughtUp := func() bool {
		if n := scrapeSum(base, "graphtide_ingest_records_total"); n < float64(nrec) {
			return false
		}
		var stats api.StatsResponse
		if !getJSON(base+"/v1/stats", &stats) {
			return false
		}
		var list api.AnalyticsResponse
		if !getJSON(base+"/v1/analytics", &list) {
			return false
		}
		for _, a := range list.Analytics {
			if !a.Ready || a.Seq < stats.Store.LastSeq {
				return false
			}
		}
		return true
	}
	if !waitFor(3*time.Minute, func() bool { return caughtUp() || !srv.alive() }) || !srv.alive() {
		t.Fatalf("serve did not ingest %d records and catch its analytics up (alive %v):\n%s", nrec, srv.alive(), log.tail(40))
	}
	if n := scrapeSum(base, "graphtide_ingest_dead_letters_total"); n != 0 {
		t.Fatalf("%v records dead-lettered: every record was valid\n%s", n, log.tail(20))
	}

	// A bfs from a key, registered over the API once the key exists.
	body, _ := json.Marshal(api.Spec{Name: "bfs-key", Type: "bfs", Root: keys[0]})
	resp, err := http.Post(base+"/v1/analytics", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST /v1/analytics: %d %s", resp.StatusCode, msg)
	}
	if !waitFor(time.Minute, caughtUp) {
		t.Fatalf("bfs-key did not catch up:\n%s", log.tail(20))
	}

	// Every analytic healthy.
	var list api.AnalyticsResponse
	if !getJSON(base+"/v1/analytics", &list) || len(list.Analytics) != 5 {
		t.Fatalf("GET /v1/analytics: %+v", list)
	}
	for _, a := range list.Analytics {
		if a.Error != "" || !a.Ready {
			t.Errorf("analytic %s: ready %v, error %q", a.Spec.Name, a.Ready, a.Error)
		}
	}

	// The references.
	adj := map[string][]string{}
	und := map[string][]string{}
	names := map[string]bool{}
	for _, e := range edges {
		adj[e.src] = append(adj[e.src], e.dst)
		und[e.src] = append(und[e.src], e.dst)
		und[e.dst] = append(und[e.dst], e.src)
		names[e.src], names[e.dst] = true, true
	}
	levels := func(root string) map[string]int {
		l := map[string]int{root: 0}
		for q := []string{root}; len(q) > 0; q = q[1:] {
			for _, w := range adj[q[0]] {
				if _, ok := l[w]; !ok {
					l[w] = l[q[0]] + 1
					q = append(q, w)
				}
			}
		}
		return l
	}
	comp := map[string][]string{} // name -> the members of its component
	for n := range names {
		if comp[n] != nil {
			continue
		}
		members := []string{n}
		in := map[string]bool{n: true}
		for i := 0; i < len(members); i++ {
			for _, w := range und[members[i]] {
				if !in[w] {
					in[w] = true
					members = append(members, w)
				}
			}
		}
		for _, m := range members {
			comp[m] = members
		}
	}
	// PageRank over distinct stand-in ids (its values do not depend on them).
	standIn := map[string]uint64{}
	g := testref.Edges{}
	for _, e := range edges {
		for _, n := range []string{e.src, e.dst} {
			if _, ok := standIn[n]; !ok {
				standIn[n] = uint64(len(standIn))
			}
		}
		g.Apply(engine.Op{Src: standIn[e.src], Dst: standIn[e.dst], Weight: 1, Kind: engine.OpUpsert})
	}
	ranks := testref.PageRank(g, 0.85)

	// Vertex by vertex, over the API.
	fromSeven, fromKey := levels("7"), levels(keyName(keys[0]))
	reachedKeys, reachedBig := 0, 0
	compLabel := map[*string]string{} // by the component's member list
	for n := range names {
		var bfs, bfsKey struct{ Result api.LevelResult }
		var sssp struct{ Result api.DistanceResult }
		var wcc struct{ Result api.ComponentResult }
		var pr struct{ Result api.RankResult }
		for _, q := range []struct {
			analytic string
			into     any
		}{{"bfs", &bfs}, {"bfs-key", &bfsKey}, {"sssp", &sssp}, {"wcc", &wcc}, {"pagerank", &pr}} {
			if !getJSON(base+"/v1/analytics/"+q.analytic+"/vertices/"+url.PathEscape(n), q.into) {
				t.Fatalf("GET /v1/analytics/%s/vertices/%s failed", q.analytic, n)
			}
		}
		want, ok := fromSeven[n]
		if !ok {
			want = -1
		}
		if bfs.Result.Level != want {
			t.Errorf("bfs from 7: vertex %s at level %d, want %d", n, bfs.Result.Level, want)
		}
		if d := sssp.Result; d.Reachable != (want >= 0) || d.Reachable && d.Distance != float64(want) {
			t.Errorf("sssp from 7: vertex %s at %+v, want level %d", n, d, want)
		}
		if want > 0 && strings.HasPrefix(n, "key:") {
			reachedKeys++
		}
		if v, err := strconv.ParseUint(n, 10, 64); err == nil && want > 0 && v >= 1<<31 {
			reachedBig++
		}
		want, ok = fromKey[n]
		if !ok {
			want = -1
		}
		if bfsKey.Result.Level != want {
			t.Errorf("bfs from %s: vertex %s at level %d, want %d", keys[0], n, bfsKey.Result.Level, want)
		}
		// The component: its size, and its name, the member with the
		// smallest store id: the smallest number below 2^32 when it holds
		// one (such numbers are stored as they are, below every mapped
		// number and key), else a member; the same for every member.
		members := comp[n]
		if wcc.Result.Size != len(members) {
			t.Errorf("wcc: vertex %s in a component of %d, want %d", n, wcc.Result.Size, len(members))
		}
		label := strconv.FormatUint(wcc.Result.Component, 10)
		if wcc.Result.ComponentKey != "" {
			label = keyName(wcc.Result.ComponentKey)
		}
		var smallest uint64 = math.MaxUint64
		for _, m := range members {
			if v, err := strconv.ParseUint(m, 10, 64); err == nil && v < 1<<32 {
				smallest = min(smallest, v)
			}
		}
		if smallest != math.MaxUint64 && label != strconv.FormatUint(smallest, 10) || !slices.Contains(members, label) {
			t.Errorf("wcc: vertex %s in component %s, want the smallest number below 2^32 of %v, or else a member", n, label, members)
		}
		if first, ok := compLabel[&members[0]]; ok && first != label {
			t.Errorf("wcc: vertex %s in component %s, another member in %s", n, label, first)
		}
		compLabel[&members[0]] = label
		if got, want := pr.Result.Rank, ranks[standIn[n]]; math.Abs(got-want) > 1e-5 {
			t.Errorf("pagerank: vertex %s has rank %v, want %v", n, got, want)
		}
	}
	if reachedKeys < 10 || reachedBig < 50 {
		t.Fatalf("bfs from 7 reaches %d keys and %d numbers of 2^31 and more: the test checks too little", reachedKeys, reachedBig)
	}

	// Serve stayed up and small: dense per-vertex state up to the id
	// 2000000000 alone would take 8 GB per analytic.
	if !srv.alive() {
		t.Fatalf("serve exited:\n%s", log.tail(40))
	}
	if code, _ := httpGet(base + "/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	mem, err := bench.ReadMemoryOf(srv.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	goMem := scrapeLabeled(base, "graphtide_memory_bytes", "go_runtime")
	t.Logf("serve: peak resident set %d MiB, Go runtime %d MiB", mem.PeakRSS>>20, int64(goMem)>>20)
	if mem.PeakRSS > 512<<20 || goMem > 512<<20 {
		t.Errorf("serve's peak resident set is %d MiB and its Go memory %d MiB: want well under 512 MiB", mem.PeakRSS>>20, int64(goMem)>>20)
	}
	if err := srv.stop(); err != nil {
		t.Errorf("serve exited with %v:\n%s", err, log.tail(20))
	}
}

// buildGraphtide builds the graphtide command of this tree into a
// temporary directory.

// serveProc is a graphtide serve process.
type serveProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	once   sync.Once
}

func startServe(t *testing.T, bin string, log *logBuffer, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.Env = os.Environ()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { _ = p.stop() })
	return p
}

func (p *serveProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and returns the exit status (SIGKILL after a minute).
func (p *serveProc) stop() error {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(time.Minute):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.err = fmt.Errorf("no exit within a minute of SIGTERM")
		}
	})
	return p.err
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func httpGet(u string) (int, []byte) {
	return httpGetWithin(u, 10*time.Second)
}

// httpGetWithin GETs u, giving up after timeout; the code is 0 and the
// body the error when there is no answer.
func httpGetWithin(u string, timeout time.Duration) (int, []byte) {
	c := http.Client{Timeout: timeout}
	resp, err := c.Get(u)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// getJSON decodes a 200 answer of u into v.
func getJSON(u string, v any) bool {
	code, b := httpGet(u)
	return code == 200 && json.Unmarshal(b, v) == nil
}

// scrapeSum sums the samples of metric on /metrics.
func scrapeSum(base, metric string) float64 {
	sum := 0.0
	scrape(base, metric, func(_ string, v float64) { sum += v })
	return sum
}

// scrapeLabeled returns the sample of metric whose only label has value.
func scrapeLabeled(base, metric, value string) float64 {
	out := 0.0
	scrape(base, metric, func(labels string, v float64) {
		if strings.HasSuffix(labels, `="`+value+`"}`) {
			out = v
		}
	})
	return out
}

func scrape(base, metric string, f func(labels string, v float64)) {
	code, body := httpGet(base + "/metrics")
	if code != 200 {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metric)
		if !ok || rest == "" || rest[0] != '{' && rest[0] != ' ' {
			continue
		}
		labels, val := "", rest
		if rest[0] == '{' {
			end := strings.Index(rest, "}")
			if end < 0 {
				continue
			}
			labels, val = rest[:end+1], rest[end+1:]
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			f(labels, v)
		}
	}
}
