package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// sample is a module of three packages: one passes (a test that sleeps,
// one that skips, a quick one), one fails (a failing subtest beside a
// passing test), one does not build.
var sample = map[string]string{
	"go.mod": "module example.com/sample\n\ngo 1.22\n",
	"good/good_test.go": `package good

import (
	"testing"
	"time"
)

func TestSleeps(t *testing.T) { t.Log("GOOD-LOG"); time.Sleep(400 * time.Millisecond) }
func TestQuick(t *testing.T)  {}
func TestSkips(t *testing.T)  { t.Skip("SKIPPED-WHY") }
`,
	"bad/bad_test.go": `package bad

import (
	"testing"
	"time"
)

func TestPasses(t *testing.T) { t.Log("PASSING-LOG"); time.Sleep(200 * time.Millisecond) }
func TestParent(t *testing.T) {
	t.Run("child", func(t *testing.T) { t.Log("CHILD-LOG"); t.Error("CHILD-FAILED") })
}
`,
	"broken/broken_test.go": `package broken

import "testing"

func TestX(t *testing.T) { undefinedThing() }
`,
}

// writeSample writes the sample module into a new directory.
func writeSample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range sample {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var sampleEnv = []string{"GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local"}

// goTestJSON runs go test -json over the sample module.
func goTestJSON(t *testing.T, pkgs ...string) []byte {
	t.Helper()
	dir := writeSample(t)
	cmd := exec.Command("go", append([]string{"test", "-json", "-count=1"}, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), sampleEnv...)
	out, err := cmd.Output()
	if err == nil && len(pkgs) > 1 {
		t.Fatalf("go test passed over a failing module:\n%s", out)
	}
	return out
}

func TestRenderPrintsFailuresOnly(t *testing.T) {
	stream := goTestJSON(t, "./good", "./bad", "./broken")
	var out bytes.Buffer
	ok, err := render(&out, bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("render reported success for a failing run")
	}
	s := out.String()
	for _, want := range []string{
		"ok  \texample.com/sample/good\t",                   // a passing package: its line
		"CHILD-LOG", "CHILD-FAILED", "--- FAIL: TestParent", // the failing test, whole
		"FAIL\texample.com/sample/bad", // the failing package's result
		"undefinedThing",               // the compiler's message
		"FAIL\texample.com/sample/broken",
		// Named last, with the heads of its messages.
		"tests that did not pass:\n  example.com/sample/bad TestParent (failed)\n      bad_test.go:10: CHILD-LOG\n      bad_test.go:10: CHILD-FAILED\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"GOOD-LOG", "PASSING-LOG", "SKIPPED-WHY", "=== RUN   TestQuick"} {
		if strings.Contains(s, not) {
			t.Errorf("output has %q (a test that passed or skipped):\n%s", not, s)
		}
	}
}

func TestRenderPassingRun(t *testing.T) {
	stream := goTestJSON(t, "./good")
	var out bytes.Buffer
	ok, err := render(&out, bytes.NewReader(stream))
	if err != nil || !ok {
		t.Fatalf("render: %v, %v:\n%s", ok, err, out.String())
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "ok  \texample.com/sample/good\t") {
		t.Errorf("a passing package printed %q, want its ok line alone", out.String())
	}
}

func TestRenderUnfinishedPackageFails(t *testing.T) {
	// A stream cut off in the middle of a test (the binary was killed).
	stream := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestHangs"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"    hangs_test.go:9: WAITING\n"}
{"Action":"start","Package":"q"}
{"Action":"output","Package":"q","Output":"ok  \tq\t0.1s\n"}
{"Action":"pass","Package":"q","Elapsed":0.1}
`
	var out bytes.Buffer
	ok, err := render(&out, strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("a package without a result passed")
	}
	if s := out.String(); !strings.Contains(s, "WAITING") || !strings.Contains(s, "FAIL\tp (no result") || !strings.Contains(s, "ok  \tq\t0.1s") ||
		!strings.HasSuffix(s, "tests that did not pass:\n  p TestHangs (did not finish)\n      hangs_test.go:9: WAITING\n") {
		t.Errorf("output:\n%s", s)
	}
	if _, err := render(&out, strings.NewReader("")); err == nil {
		t.Error("an empty stream passed")
	}
	if _, err := render(&out, strings.NewReader("{not json\n")); err == nil {
		t.Error("a broken JSON line was accepted")
	}
}

func TestSlowestTests(t *testing.T) {
	stream := goTestJSON(t, "./good", "./bad")
	extra := `{"Action":"pass","Package":"z","Test":"TestZ","Elapsed":0.3}
{"Action":"pass","Package":"z","Test":"TestZ/sub","Elapsed":9}
{"Action":"pass","Package":"z","Elapsed":9}
`
	got, err := slowestTests(readers(stream, []byte(extra)), 3)
	if err != nil {
		t.Fatal(err)
	}
	// The sleeps order them: TestSleeps 0.4 s, TestZ 0.3 s, TestPasses
	// 0.2 s; a subtest and a package are never listed.
	want := []struct {
		pkg, test string
		min       float64
	}{{"example.com/sample/good", "TestSleeps", 0.4}, {"z", "TestZ", 0.3}, {"example.com/sample/bad", "TestPasses", 0.2}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %d tests", got, len(want))
	}
	for i, w := range want {
		if got[i].Package != w.pkg || got[i].Test != w.test || got[i].Seconds < w.min {
			t.Errorf("slowest %d: %+v, want %s %s >= %.1f s", i, got[i], w.pkg, w.test, w.min)
		}
	}
	got, err = slowestTests(readers(stream), 100)
	if err != nil {
		t.Fatal(err)
	}
	// good: TestSleeps, TestQuick (TestSkips skipped); bad: TestPasses,
	// TestParent (failed: listed too).
	if len(got) != 4 {
		t.Errorf("all tests: %v, want 4", got)
	}
}

func readers(bs ...[]byte) []io.Reader {
	var rs []io.Reader
	for _, b := range bs {
		rs = append(rs, bytes.NewReader(b))
	}
	return rs
}

func TestRunHonoursTheCommand(t *testing.T) {
	dir := writeSample(t)
	for _, kv := range sampleEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	save := filepath.Join(t.TempDir(), "good.json")
	var out bytes.Buffer
	if st := run(&out, []string{"go", "test", "-C", dir, "-json", "-count=1", "./good"}, save, 2); st != 0 {
		t.Fatalf("a passing run: status %d:\n%s", st, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "ok  \texample.com/sample/good") || !strings.Contains(s, "the 2 slowest tests:") || !strings.Contains(s, "example.com/sample/good  TestSleeps") {
		t.Errorf("output:\n%s", s)
	}
	saved, err := os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := render(io.Discard, bytes.NewReader(saved)); err != nil || !ok {
		t.Errorf("the saved stream does not render as a passing run: %v, %v", ok, err)
	}
	out.Reset()
	if st := run(&out, []string{"go", "test", "-C", dir, "-json", "-count=1", "./bad"}, "", 0); st != 1 {
		t.Errorf("a failing run: status %d, want 1:\n%s", st, out.String())
	}
	// A command that fails without a test failing in its stream.
	out.Reset()
	if st := run(&out, []string{"sh", "-c", `echo '{"Action":"pass","Package":"p","Elapsed":1}'; exit 3`}, "", 0); st != 1 {
		t.Errorf("a command exiting 3 after a passing stream: status %d, want 1", st)
	}
	if st := run(&out, []string{"/nonexistent/command"}, "", 0); st != 2 {
		t.Errorf("a missing command: status %d, want 2", st)
	}
}

func TestMessageHeadsAreTheLastFirstLines(t *testing.T) {
	var out []string
	for i := range 12 {
		out = append(out, fmt.Sprintf("    x_test.go:%d: message %d\n        its second line\n", i+1, i))
	}
	out = append(out, "=== RUN   TestX\n", "    x_test.go:99: "+strings.Repeat("é", 200)+"\n", "--- FAIL: TestX (0.00s)\n")
	heads := messageHeads(out, maxHeads)
	if len(heads) != maxHeads {
		t.Fatalf("%d heads, want %d: %q", len(heads), maxHeads, heads)
	}
	// The newest: messages 5 to 11, then the long one.
	for i, h := range heads[:maxHeads-1] {
		if want := fmt.Sprintf("x_test.go:%d: message %d", i+6, i+5); h != want {
			t.Errorf("head %d is %q, want %q", i, h, want)
		}
	}
	last := heads[maxHeads-1]
	if !strings.HasPrefix(last, "x_test.go:99: é") || !strings.HasSuffix(last, "...") || len(last) > maxHeadLen+3 || !utf8.ValidString(last) {
		t.Errorf("the long message's head is %q", last)
	}
}
