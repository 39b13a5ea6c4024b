package kafkatest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/export"
)

// TestExportAtACutOfOneInstance: a single instance (a consumer group's,
// with its writes topic and history) exported through its API at the cut
// of what was produced: the part holds the events' edges and names the
// writes topic's empty partition; after more events, an export at the
// same cut reads the batch that ended there from history and writes the
// same edges file, byte for byte; a cut never reached fails after its
// wait.
func TestExportAtACutOfOneInstance(t *testing.T) {
	t.Parallel()
	addrs := needBroker(t)
	bin := graphtideBinary(t)
	work := t.TempDir()
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = work, &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("graphtide %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	topic := uniq("export-edges")
	brokers := strings.Join(addrs, ",")
	// 40 edges a -> b, a hub of 10, 5 of them deleted: 35 edges.
	var first strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&first, "v%d v%d %d\n", i, (i+1)%30, i)
	}
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&first, "hub v%d\n", i)
	}
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&first, "d hub v%d\n", i)
	}
	write("first.txt", first.String())
	must("produce", "--brokers", brokers, "--topic", topic, "--partitions", "2", "first.txt")

	port := freeTCPPort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "serve", "--brokers", brokers, "--topics", topic, "--format", "text", "--dir", "data",
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--history-seqs", "1000", "--export-dir", "exports", "--flush-interval", "200ms")
	cmd.Dir = work
	logf, err := os.Create(filepath.Join(work, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	caughtUp := func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"behind":0}`)
	}
	if !waitFor(time.Minute, caughtUp) {
		t.Fatalf("serve did not catch up; log in %s", work)
	}
	writes := "graphtide." + topic + ".writes"
	write("cut.json", must("export", "cut", "--brokers", brokers, "--topics", topic+","+writes))
	must("export", "--server", url, "--out", "one", "--part", "p", "--at-offsets", "cut.json")
	ms, err := export.ReadManifests(filepath.Join(work, "exports", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if err := export.CheckSet(ms); err != nil || ms[0].Edges != 35 {
		t.Fatalf("the part at the cut: %d edges (want 35), %v", ms[0].Edges, err)
	}
	if got := export.FormatOffsets(ms[0].Position); !strings.Contains(got, writes+"/0@0") {
		t.Fatalf("the part is as of %s: it must name the writes topic's empty partition", got)
	}

	write("later.txt", "x y\nhub v9 7\n")
	must("produce", "--brokers", brokers, "--topic", topic, "--partitions", "2", "later.txt")
	if !waitFor(time.Minute, caughtUp) {
		t.Fatalf("serve did not catch up; log in %s", work)
	}
	must("export", "--server", url, "--out", "again", "--part", "p", "--at-offsets", "cut.json")
	a, errA := os.ReadFile(filepath.Join(work, "exports", "one", "p.edges.parquet"))
	b, errB := os.ReadFile(filepath.Join(work, "exports", "again", "p.edges.parquet"))
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("the export of a passed cut, from history, differs from the one at the cut (%v %v)", errA, errB)
	}
	now := must("export", "--server", url, "--out", "now", "--part", "p")
	if !strings.Contains(now, ": 36 edges") {
		t.Fatalf("the newest batch's export: %s", now)
	}

	// Where it is now, with partition 0 a thousand records further.
	cut, err := export.ReadCut([]byte(must("export", "cut", "--brokers", brokers, "--topics", topic+","+writes)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cut {
		if cut[i].Topic == topic && cut[i].Partition == 0 {
			cut[i].Offset += 1000
		}
	}
	far, _ := json.Marshal(cut)
	write("far.json", string(far))
	if out, err := run("export", "--server", url, "--out", "far", "--part", "p", "--at-offsets", "far.json", "--wait", "1s"); err == nil || !strings.Contains(out, "did not reach the cut in time") {
		t.Fatalf("an export at a cut never reached: %v\n%s", err, out)
	}
}
