// Command testreport reads the output of `go test -json` on stdin and
// prints it as plain `go test` does (a line per package; the whole output
// of a failed test, of a failed package and of a failed build), saves the
// JSON stream to a file (-save), and can print the slowest tests of one
// or more saved streams (-slowest), so that `make test` shows where its
// time goes.
//
//	go test -json ./... | go run ./scripts/testreport -save go.json
//	go run ./scripts/testreport -slowest 10 go.json kafka.json
//
// It exits with status 1 when a test, a package or a build failed (or
// the stream holds no package result at all), 2 on bad usage or input.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	save := flag.String("save", "", "also write the JSON stream read on stdin to this file")
	slowest := flag.Int("slowest", 0, "print the N slowest tests of the JSON files named as arguments, and exit")
	flag.Parse()
	if *slowest > 0 {
		if err := printSlowest(os.Stdout, *slowest, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		return
	}
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ... | testreport [-save FILE]; testreport -slowest N FILE...")
		os.Exit(2)
	}
	in := io.Reader(os.Stdin)
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	ok, err := render(os.Stdout, in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
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
// are. It reports whether everything passed.
func render(w io.Writer, r io.Reader) (bool, error) {
	pkgs := map[string]*pkgState{}
	builds := map[string][]string{}
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
		fmt.Fprint(w, strings.Join(p.out, ""))
		fmt.Fprintf(w, "FAIL\t%s (no result: the test binary did not finish)\n", name)
		ok = false
	}
	for path, out := range builds {
		// Build output without a build-fail: warnings, printed as go does.
		fmt.Fprintf(w, "# %s\n%s", path, strings.Join(out, ""))
	}
	if results == 0 {
		return false, errors.New("no package result in the JSON stream")
	}
	return ok, nil
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
