// Command testreport runs `go test -json` (the command after --) and
// prints its result as plain `go test` does: a line per package, and the
// whole output of a failed test, of a failed package and of a failed
// build. It saves the JSON stream to a file (-save) and prints the
// slowest tests (-slowest), so that `make test` shows where its time
// goes. Given files instead of a command, it prints the slowest tests of
// those saved streams.
//
//	go run ./scripts/testreport -save go.json -slowest 10 -- go test -json ./...
//	go run ./scripts/testreport -slowest 10 go.json kafka.json
//
// It exits with status 1 when the command fails, or a test, a package or
// a build failed (or the stream holds no package result at all), and 2
// on bad usage or input.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

func main() {
	save := flag.String("save", "", "also write the command's JSON stream to this file")
	slowest := flag.Int("slowest", 0, "print the N slowest tests")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testreport [-save FILE] [-slowest N] -- go test -json ...\n       testreport -slowest N FILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	dash := len(os.Args) > len(args) && os.Args[len(os.Args)-len(args)-1] == "--"
	switch {
	case !dash && *slowest > 0 && len(args) > 0:
		if err := printSlowest(os.Stdout, *slowest, args); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	case dash && len(args) > 0:
		os.Exit(run(os.Stdout, args, *save, *slowest))
	default:
		flag.Usage()
		os.Exit(2)
	}
}

// run runs the command, renders its stream and returns the exit status.
func run(w io.Writer, args []string, save string, slowest int) int {
	if save == "" {
		f, err := os.CreateTemp("", "testreport-*.json")
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			return 2
		}
		save = f.Name()
		f.Close()
		defer os.Remove(save)
	}
	f, err := os.Create(save)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		return 2
	}
	ok, rerr := render(w, io.TeeReader(stdout, f))
	if rerr != nil {
		_, _ = io.Copy(io.Discard, stdout) // let the command finish
	}
	werr := cmd.Wait()
	if err := f.Close(); err != nil && rerr == nil {
		rerr = err
	}
	status := 0
	switch {
	case rerr != nil:
		fmt.Fprintln(os.Stderr, "testreport:", rerr)
		status = 2
	case werr != nil || !ok:
		status = 1
	}
	if werr != nil && ok && rerr == nil {
		fmt.Fprintf(os.Stderr, "testreport: %s: %v\n", strings.Join(args, " "), werr)
	}
	if slowest > 0 && rerr == nil {
		if err := printSlowest(w, slowest, []string{save}); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			status = 2
		}
	}
	return status
}

// event is one line of `go test -json` (cmd/test2json, plus the build
// events of go test).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64 // seconds
	Output     string
	ImportPath string // build-output, build-fail
}

// pkgState is what render keeps of a package until its result arrives.
type pkgState struct {
	out   []string            // package-level output (Test == "")
	tests map[string][]string // output of each top-level test, its subtests' included
	order []string            // top-level tests in the order they started
	done  map[string]string   // top-level test -> its final action (pass, fail, skip)
}

// topLevel is the top-level test a (sub)test belongs to.
func topLevel(test string) string {
	if i := strings.IndexByte(test, '/'); i >= 0 {
		return test[:i]
	}
	return test
}

// render reads a JSON stream and writes what plain `go test` would: for
// a passing package its "ok" line; for a failing one its output and that
// of every test that did not pass or skip; the output of builds that
// failed. Lines that are not JSON (go's own errors) are copied as they
// are. Last it names every test that failed or did not finish, so that
// the end of a long output (a timeout's goroutine dump) still says which
// tests to look at, and the first line of each of their last messages
// (what t.Error or t.Fatal said, among the logs). It reports whether
// everything passed.
func render(w io.Writer, r io.Reader) (bool, error) {
	pkgs := map[string]*pkgState{}
	builds := map[string][]string{}
	var notPassed []string // "pkg Test (failed)" and its messages' heads, in the order seen
	ok, results := true, 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return false, fmt.Errorf("a line of the JSON stream: %w: %.200s", err, line)
		}
		switch e.Action {
		case "build-output":
			builds[e.ImportPath] = append(builds[e.ImportPath], e.Output)
			continue
		case "build-fail":
			ok = false
			fmt.Fprint(w, strings.Join(builds[e.ImportPath], ""))
			delete(builds, e.ImportPath)
			continue
		}
		if e.Package == "" {
			continue
		}
		p := pkgs[e.Package]
		if p == nil {
			p = &pkgState{tests: map[string][]string{}, done: map[string]string{}}
			pkgs[e.Package] = p
		}
		if e.Test == "" {
			switch e.Action {
			case "output":
				p.out = append(p.out, e.Output)
			case "pass", "skip":
				results++
				fmt.Fprint(w, lastLine(p.out, e))
				delete(pkgs, e.Package)
			case "fail":
				results++
				ok = false
				for _, t := range p.order {
					if d := p.done[t]; d != "pass" && d != "skip" {
						fmt.Fprint(w, strings.Join(p.tests[t], ""))
					}
				}
				notPassed = append(notPassed, p.notPassed(e.Package)...)
				fmt.Fprint(w, strings.Join(p.out, ""))
				if len(p.out) == 0 {
					fmt.Fprintf(w, "FAIL\t%s\n", e.Package)
				}
				delete(pkgs, e.Package)
			}
			continue
		}
		top := topLevel(e.Test)
		if _, seen := p.tests[top]; !seen {
			p.order = append(p.order, top)
			p.tests[top] = nil
		}
		switch e.Action {
		case "output":
			p.tests[top] = append(p.tests[top], e.Output)
		case "pass", "fail", "skip":
			if e.Test == top {
				p.done[top] = e.Action
				if e.Action != "fail" {
					p.tests[top] = nil // not printed: drop it
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	// A package without a result: go test died (or was killed) first.
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range pkgs {
			if !yield(k) {
				return
			}
		}
	}) {
		p := pkgs[name]
		for _, t := range p.order {
			fmt.Fprint(w, strings.Join(p.tests[t], ""))
		}
		notPassed = append(notPassed, p.notPassed(name)...)
		fmt.Fprint(w, strings.Join(p.out, ""))
		fmt.Fprintf(w, "FAIL\t%s (no result: the test binary did not finish)\n", name)
		ok = false
	}
	for path, out := range builds {
		// Build output without a build-fail: warnings, printed as go does.
		fmt.Fprintf(w, "# %s\n%s", path, strings.Join(out, ""))
	}
	if len(notPassed) > 0 {
		fmt.Fprintf(w, "tests that did not pass:\n%s", strings.Join(notPassed, ""))
	}
	if results == 0 {
		return false, errors.New("no package result in the JSON stream")
	}
	return ok, nil
}

// notPassed names the package's top-level tests that failed, or that
// started and never ended (running when the binary died: a timeout),
// each on a line of its own followed by the heads of its last messages.
func (p *pkgState) notPassed(pkg string) []string {
	var out []string
	for _, t := range p.order {
		var why string
		switch p.done[t] {
		case "pass", "skip":
			continue
		case "fail":
			why = "failed"
		default:
			why = "did not finish"
		}
		s := fmt.Sprintf("  %s %s (%s)\n", pkg, t, why)
		for _, h := range messageHeads(p.tests[t], maxHeads) {
			s += "      " + h + "\n"
		}
		out = append(out, s)
	}
	return out
}

// maxHeads and maxHeadLen bound what the summary repeats of a test's
// messages: the end of CI's output is short.
const maxHeads, maxHeadLen = 8, 240

// messageHead is the first line of a message of t.Log, t.Error or
// t.Fatal as go test prints it: indented, then file_test.go:line: (a
// message's further lines are indented deeper and have no file).
var messageHead = regexp.MustCompile(`^ +[A-Za-z0-9_.-]+_test\.go:[0-9]+: `)

// messageHeads is the first line of each of the last n messages in a
// test's output, each cut to maxHeadLen bytes. go test cannot tell a
// log from an error; a failing test's last messages hold its errors.
func messageHeads(out []string, n int) []string {
	var heads []string
	for _, chunk := range out {
		for _, line := range strings.Split(strings.TrimRight(chunk, "\n"), "\n") {
			if messageHead.MatchString(line) {
				line = strings.TrimSpace(line)
				if len(line) > maxHeadLen {
					line = strings.ToValidUTF8(line[:maxHeadLen], "") + "..."
				}
				heads = append(heads, line)
			}
		}
	}
	return heads[max(0, len(heads)-n):]
}

// lastLine is a passing package's "ok" line, as go test printed it.
func lastLine(out []string, e event) string {
	for i := len(out) - 1; i >= 0; i-- {
		if strings.HasPrefix(out[i], "ok ") || strings.HasPrefix(out[i], "?") {
			return out[i]
		}
	}
	return fmt.Sprintf("ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
}

// timing is the time a top-level test took.
type timing struct {
	Package, Test string
	Seconds       float64
}

// slowestTests returns the n slowest top-level tests of the streams
// (slowest first; ties by package and name). A subtest's time is in its
// parent's. A test that ran more than once (-count) appears once per run.
func slowestTests(streams []io.Reader, n int) ([]timing, error) {
	var all []timing
	for _, r := range streams {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 || line[0] != '{' {
				continue
			}
			var e event
			if err := json.Unmarshal(line, &e); err != nil {
				return nil, fmt.Errorf("a line of the JSON stream: %w: %.200s", err, line)
			}
			if e.Test == "" || strings.Contains(e.Test, "/") || (e.Action != "pass" && e.Action != "fail") {
				continue
			}
			all = append(all, timing{e.Package, e.Test, e.Elapsed})
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(a, b timing) int {
		switch {
		case a.Seconds > b.Seconds:
			return -1
		case a.Seconds < b.Seconds:
			return 1
		}
		if c := strings.Compare(a.Package, b.Package); c != 0 {
			return c
		}
		return strings.Compare(a.Test, b.Test)
	})
	return all[:min(n, len(all))], nil
}

func printSlowest(w io.Writer, n int, files []string) error {
	var rs []io.Reader
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		rs = append(rs, f)
	}
	ts, err := slowestTests(rs, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the %d slowest tests:\n", len(ts))
	for _, t := range ts {
		fmt.Fprintf(w, "%8.1f s  %s  %s\n", t.Seconds, t.Package, t.Test)
	}
	return nil
}
