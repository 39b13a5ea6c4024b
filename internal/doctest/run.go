package doctest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is what RunPage needs besides the page.
type Config struct {
	Root     string        // the repository: deploy/ and scripts/ are linked from it
	Binary   string        // the graphtide binary, bin/graphtide of every page
	Defaults []FlagDefault // FlagDefaults(Binary)
	// Fixed maps docs' ports to ports that exist already: the tour
	// broker's TourBrokerPort to the shared broker's port.
	Fixed   map[int]int
	Alloc   func() (int, error) // a free loopback port (P+1 free too, for a broker's controller)
	Timeout time.Duration       // how long a page may run (default 30 s)
	// KillAfter is how long what a page left running has, after SIGTERM,
	// before SIGKILL (default 15 s).
	KillAfter time.Duration
}

// Failure is why a page failed.
type Failure struct {
	Page     string
	Line     int    // the line of the block or command at fault (0: the page)
	Command  string // the command, if one is at fault
	Msg      string // what went wrong
	Expected string // a transcript's expected output ("" if none)
	Got      string // and what came, or the failed command's output
	Log      string // the end of the page's log (what it printed outside transcripts)
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: %s", f.Page, f.Line, f.Msg)
	if f.Command != "" {
		fmt.Fprintf(&b, "\ncommand:\n%s", indent(f.Command))
	}
	if f.Expected != "" || f.Got != "" {
		if f.Expected != "" {
			fmt.Fprintf(&b, "\nexpected:\n%s", indent(f.Expected))
		}
		fmt.Fprintf(&b, "\ngot:\n%s", indent(f.Got))
	}
	if strings.TrimSpace(f.Log) != "" {
		fmt.Fprintf(&b, "\nthe end of the page's log:\n%s", indent(f.Log))
	}
	return b.String()
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (nothing)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// Result is what RunPage did.
type Result struct {
	Blocks  int           // blocks run (sh, console and file blocks not skipped)
	Skipped int           // blocks skipped by a doctest comment
	Took    time.Duration // the page's script, cleanup excluded
	Ports   string        // the mapping of its ports
}

// step is a piece of the generated script and where it comes from.
type step struct {
	line  int // the page's line
	kind  Kind
	cmd   *Command
	lines []string // the script's lines for it
}

// RunPage runs the sh, console and file blocks of the Markdown page at
// root/page as one bash script, in a fresh directory dir (which must be
// empty) with bin/graphtide, deploy/ and scripts/, and stops everything
// it started. The error is a *Failure when the page is at fault.
func RunPage(ctx context.Context, cfg Config, page, dir string) (*Result, error) {
	src, err := os.ReadFile(filepath.Join(cfg.Root, page))
	if err != nil {
		return nil, err
	}
	blocks, err := ParseBlocks(string(src))
	if err != nil {
		return nil, &Failure{Page: page, Msg: err.Error()}
	}
	res := &Result{}
	var texts []string
	var run []Block
	for _, b := range blocks {
		if b.Kind == Shown {
			continue
		}
		if b.Skip != "" {
			res.Skipped++
			continue
		}
		run = append(run, b)
		texts = append(texts, strings.Join(b.Lines, "\n"))
	}
	res.Blocks = len(run)

	work, state, tmp := filepath.Join(dir, "page"), filepath.Join(dir, "state"), filepath.Join(dir, "tmp")
	for _, d := range []string{work, state, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	m, err := NewMapping(texts, cfg.Fixed, cfg.Alloc, tmp)
	if err != nil {
		return nil, err
	}
	res.Ports = m.Ports()

	steps, err := buildSteps(page, run, m)
	if err != nil {
		return nil, err
	}
	if err := setUp(cfg, m, work, state); err != nil {
		return nil, fmt.Errorf("setting up the page's directory: %w", err)
	}

	// The checker: after each transcript command, the script asks it
	// (over loopback TCP, bash's /dev/tcp) whether the output matches.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	chk := &checker{page: page, state: state, m: m, cmds: map[int]*Command{}}
	for _, s := range steps {
		if s.cmd != nil && !s.cmd.Background {
			chk.cmds[s.line] = s.cmd
		}
	}
	go chk.serve(ln)

	script, lineOf := assemble(steps, state, ln.Addr().(*net.TCPAddr).Port)
	scriptPath := filepath.Join(state, "page.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(state, "page.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()

	cmd := exec.Command("bash", scriptPath)
	cmd.Dir = work
	cmd.Env = pageEnv(tmp)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pgid := cmd.Process.Pid
	var waitErr error // written before done is closed
	done := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var exited, timedOut, canceled bool
	var running string
	select {
	case <-done:
		exited = true
	case <-timer.C:
		timedOut = true
		running = groupProcesses(pgid)
	case <-ctx.Done():
		canceled = true
	}
	res.Took = time.Since(t0)
	grace := cfg.KillAfter
	if grace <= 0 {
		grace = 15 * time.Second
	}
	stopErr := stopAll(pgid, exited, done, grace, work, state, cfg.Root)
	logTail := reverseTail(m, logPath, 30)

	if f := chk.failure(); f != nil {
		f.Log = logTail
		return res, f
	}
	switch {
	case canceled:
		return res, ctx.Err()
	case timedOut:
		at := readInt(filepath.Join(state, "at"))
		return res, &Failure{Page: page, Line: at, Log: logTail,
			Msg: fmt.Sprintf("the page ran longer than %v (it was in the block or command at line %d); still running then:\n%s", timeout, at, indent(m.Reverse(running)))}
	case waitErr != nil:
		return res, scriptFailure(page, state, m, strings.Split(script, "\n"), lineOf, steps, waitErr, logTail)
	}
	if stopErr != nil {
		return res, &Failure{Page: page, Msg: stopErr.Error(), Log: logTail}
	}
	if _, err := os.Stat(filepath.Join(work, MakeRunDir)); err == nil {
		return res, &Failure{Page: page, Log: logTail, Msg: "the page used ./" + MakeRunDir + ", the data directory of make run (a reader's store that the example would mix with or refuse): give its commands a --dir of their own"}
	}
	return res, nil
}

// MakeRunDir is the data directory make run uses (serve's default --dir):
// a page that leaves it in its working directory fails.
const MakeRunDir = "graphtide-data"

// buildSteps turns the page's blocks into script steps, mapped.
func buildSteps(page string, blocks []Block, m *Mapping) ([]step, error) {
	var steps []step
	for _, b := range blocks {
		switch b.Kind {
		case Script:
			var ls []string
			for _, l := range b.Lines {
				ls = append(ls, m.Apply(l))
			}
			steps = append(steps, step{line: b.Line, kind: Script, lines: ls})
		case File:
			eof := "__DOCTEST_EOF__"
			for _, l := range b.Lines {
				if strings.Contains(l, eof) {
					return nil, &Failure{Page: page, Line: b.Line, Msg: "the file block contains " + eof}
				}
			}
			ls := []string{
				fmt.Sprintf("mkdir -p -- %s", shQuote(filepath.Dir(b.File))),
				fmt.Sprintf("cat >%s <<'%s'", shQuote(b.File), eof),
			}
			for _, l := range b.Lines {
				ls = append(ls, m.Apply(l))
			}
			ls = append(ls, eof)
			steps = append(steps, step{line: b.Line, kind: File, lines: ls})
		case Console:
			cmds, err := ParseConsole(b.Lines[:len(b.Lines):len(b.Lines)], b.Line+1)
			if err != nil {
				return nil, &Failure{Page: page, Line: b.Line, Msg: err.Error()}
			}
			for i := range cmds {
				c := &cmds[i]
				text := m.Apply(c.Text)
				var ls []string
				if c.Background {
					ls = strings.Split(text, "\n")
				} else {
					ls = append(ls, "{")
					ls = append(ls, strings.Split(text, "\n")...)
					ls = append(ls, fmt.Sprintf("} >\"$__dt/out.%d\" 2>&1", c.Line), fmt.Sprintf("__dt_check %d", c.Line))
				}
				steps = append(steps, step{line: c.Line, kind: Console, cmd: c, lines: ls})
			}
		}
	}
	return steps, nil
}

// assemble writes the script; lineOf[i] is the step of the script's line
// i+1 (-1 for the runner's own lines).
func assemble(steps []step, state string, port int) (string, []int) {
	var b strings.Builder
	var lineOf []int
	emit := func(s string, st int) {
		b.WriteString(s)
		b.WriteByte('\n')
		lineOf = append(lineOf, st)
	}
	for _, l := range []string{
		"# generated by internal/doctest from a page of the docs",
		"set -euo pipefail",
		"__dt=" + shQuote(state),
		// The first failing command: its status, line and text.
		`trap '__dt_s=$?; [[ -e $__dt/err ]] || printf "%s %s\n%s\n" "$__dt_s" "$LINENO" "$BASH_COMMAND" >"$__dt/err"' ERR`,
		`__dt_at() { echo "$1" >"$__dt/at"; }`,
		`__dt_check() {`,
		`  local r=""`,
		fmt.Sprintf(`  exec 9<>/dev/tcp/127.0.0.1/%d`, port),
		`  echo "$1" >&9`,
		`  IFS= read -r r <&9 || true`,
		`  exec 9>&-`,
		`  [[ $r == ok ]] || exit 97`,
		`}`,
	} {
		emit(l, -1)
	}
	for i, s := range steps {
		emit(fmt.Sprintf("__dt_at %d", s.line), -1)
		for _, l := range s.lines {
			emit(l, i)
		}
	}
	return b.String(), lineOf
}

// checker compares the transcripts' output when the script asks.
type checker struct {
	page  string
	state string
	m     *Mapping
	cmds  map[int]*Command // by line

	mu   sync.Mutex
	fail *Failure // the first failure; protected by mu
}

func (c *checker) failure() *Failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fail
}

func (c *checker) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		func() {
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				return
			}
			n, _ := strconv.Atoi(strings.TrimSpace(line))
			reply := "ok\n"
			if f := c.check(n); f != nil {
				c.mu.Lock()
				if c.fail == nil {
					c.fail = f
				}
				c.mu.Unlock()
				reply = "fail\n"
			}
			_, _ = conn.Write([]byte(reply))
		}()
	}
}

func (c *checker) check(line int) *Failure {
	cmd := c.cmds[line]
	if cmd == nil {
		return &Failure{Page: c.page, Line: line, Msg: "the runner asked to check a command it does not know (a bug of internal/doctest)"}
	}
	b, err := os.ReadFile(filepath.Join(c.state, "out."+strconv.Itoa(line)))
	if err != nil {
		return &Failure{Page: c.page, Line: line, Command: cmd.Text, Msg: "its output is missing: " + err.Error()}
	}
	got := c.m.Reverse(string(b))
	if Match(cmd.Expected, got) {
		return nil
	}
	return &Failure{Page: c.page, Line: line, Command: cmd.Text, Msg: "the output differs from the transcript",
		Expected: strings.Join(cmd.Expected, "\n"), Got: got}
}

// scriptFailure explains a script that exited with an error.
func scriptFailure(page, state string, m *Mapping, scriptLines []string, lineOf []int, steps []step, waitErr error, logTail string) error {
	b, err := os.ReadFile(filepath.Join(state, "err"))
	if err != nil {
		// No failing command recorded: the script exited (exit N).
		at := readInt(filepath.Join(state, "at"))
		f := &Failure{Page: page, Line: at, Log: logTail, Msg: fmt.Sprintf("the page's script exited (%v) in the block or command at line %d", waitErr, at)}
		for _, st := range steps {
			if st.line == at && st.cmd != nil {
				f.Command = st.cmd.Text
				if out, err := os.ReadFile(filepath.Join(state, "out."+strconv.Itoa(at))); err == nil {
					f.Got = m.Reverse(string(out))
				}
			}
		}
		return f
	}
	first, command, _ := strings.Cut(strings.TrimRight(string(b), "\n"), "\n")
	var status, sline int
	_, _ = fmt.Sscan(first, &status, &sline)
	f := &Failure{Page: page, Log: logTail, Command: m.Reverse(command)}
	if sline >= 1 && sline <= len(lineOf) && lineOf[sline-1] >= 0 {
		st := steps[lineOf[sline-1]]
		f.Line = st.line
		if st.kind == Script {
			// The line of the page: the block's line, its fence and the
			// offset in the block of the script's line where the command
			// starts (bash gives the last line of a continued one).
			first := sline - 1
			for first > 0 && lineOf[first-1] == lineOf[sline-1] {
				first--
			}
			at := sline - 1
			for at > first && strings.HasSuffix(strings.TrimRight(scriptLines[at-1], " \t"), `\`) {
				at--
			}
			f.Line = st.line + 1 + (at - first)
		}
		if st.cmd != nil {
			f.Command = st.cmd.Text
			if out, err := os.ReadFile(filepath.Join(state, "out."+strconv.Itoa(st.line))); err == nil {
				f.Got = m.Reverse(string(out))
			}
		}
	}
	f.Msg = fmt.Sprintf("exit status %d", status)
	return f
}

// setUp fills the page's working directory: bin/graphtide (a wrapper of
// the binary), deploy/ (the repository's, with kafka.sh and
// prometheus/run.sh wrapped), scripts/ and a Makefile whose build target
// does nothing.
func setUp(cfg Config, m *Mapping, work, state string) error {
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "bin", "graphtide"), []byte(graphtideWrapper(cfg, m)), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(cfg.Root, "scripts"), filepath.Join(work, "scripts")); err != nil {
		return err
	}
	wrapped := map[string]string{
		filepath.Join("kafka", "kafka.sh"):    kafkaWrapper(cfg, m, state),
		filepath.Join("prometheus", "run.sh"): prometheusWrapper(cfg, m, state),
	}
	if err := linkTree(filepath.Join(cfg.Root, "deploy"), filepath.Join(work, "deploy"), "", wrapped); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, "Makefile"), []byte(makefile), 0o644)
}

// linkTree makes dst a directory of symlinks to src's entries, except the
// files named in wrapped (relative to the top), written with that content,
// and the directories on their way, made the same way.
func linkTree(src, dst, rel string, wrapped map[string]string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		r := filepath.Join(rel, e.Name())
		if content, ok := wrapped[r]; ok {
			if err := os.WriteFile(filepath.Join(dst, e.Name()), []byte(content), 0o755); err != nil {
				return err
			}
			continue
		}
		inside := false
		for w := range wrapped {
			if strings.HasPrefix(w, r+string(filepath.Separator)) {
				inside = true
			}
		}
		if inside && e.IsDir() {
			if err := linkTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), r, wrapped); err != nil {
				return err
			}
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

const makefile = `# The doc test's Makefile: bin/graphtide is built by the test.
build:
	@test -x bin/graphtide
.DEFAULT:
	@echo "make $@: a page of the docs runs only 'make build' here (the doc test builds bin/graphtide); mark the block <!-- doctest: skip -- reason --> if it cannot run" >&2; exit 2
`

// graphtideWrapper is bin/graphtide: the binary, with the defaults that
// name fixed addresses moved to the page's ports through their
// GRAPHTIDE_<FLAG> variables, unless the command line gives the flag, the
// environment sets the variable, or the --config file has the key.
func graphtideWrapper(cfg Config, m *Mapping) string {
	var b strings.Builder
	b.WriteString(`#!/usr/bin/env bash
# The doc test's bin/graphtide: the graphtide it built, with the defaults
# that name the docs' fixed addresses moved to this page's ports.
set -euo pipefail
__given() { # FLAG ARGS...: the flag is on the command line or in its --config file
	local f=$1 a cfg="" next=0
	shift
	for a in "$@"; do
		if ((next)); then cfg=$a; next=0; fi
		case $a in --"$f" | --"$f"=*) return 0 ;; --config) next=1 ;; --config=*) cfg=${a#*=} ;; esac
	done
	[[ -n $cfg && -f $cfg ]] && grep -q "^$f:" -- "$cfg"
}
`)
	for _, d := range cfg.Defaults {
		var val string
		if p, err := strconv.Atoi(d.Default); err == nil {
			val = strconv.Itoa(m.Port(p))
		} else {
			val = m.Apply(d.Default)
		}
		var conds []string
		for i, w := range d.Command {
			conds = append(conds, fmt.Sprintf(`${%d-} == %s`, i+1, w))
		}
		if len(conds) == 0 {
			conds = append(conds, "1 == 1")
		}
		fmt.Fprintf(&b, "if [[ %s && -z ${%s+x} ]] && ! __given %s \"$@\"; then export %s=%s; fi\n",
			strings.Join(conds, " && "), d.Env(), d.Flag, d.Env(), shQuote(val))
	}
	fmt.Fprintf(&b, "exec %s \"$@\"\n", shQuote(cfg.Binary))
	return b.String()
}

// kafkaWrapper is deploy/kafka/kafka.sh: start and stop of a broker on the
// tour broker's port (mapped to the shared broker's) with no other option
// are the shared broker, which runs already; anything else is the real
// script, and the test stops what it started after the page.
func kafkaWrapper(cfg Config, m *Mapping, state string) string {
	return fmt.Sprintf(`#!/usr/bin/env bash
# The doc test's deploy/kafka/kafka.sh: the tour's broker is the test's
# shared broker; anything else runs the real script.
set -euo pipefail
real=%s
shared=%d
state=%s
args=("$@")
sub=${1-}
shift || true
port=9092 dir=./.kafka-data other=0
while (($#)); do
	case $1 in
	--port) port=${2-}; shift $(($# > 1 ? 2 : 1)) ;;
	--port=*) port=${1#*=}; shift ;;
	--dir) dir=${2-}; shift $(($# > 1 ? 2 : 1)) ;;
	--dir=*) dir=${1#*=}; shift ;;
	*) other=1; shift ;;
	esac
done
abs=$(realpath -m -- "$dir")
case $sub in
start)
	if [[ $port == "$shared" && $other == 0 ]]; then
		echo "$abs" >>"$state/kafka-shared"
		echo "kafka.sh: ready on 127.0.0.1:$shared (the doc test's shared broker)" >&2
		echo "127.0.0.1:$shared"
		exit 0
	fi
	echo "$abs" >>"$state/kafka-started"
	;;
stop | status)
	if grep -qxF -- "$abs" "$state/kafka-shared" 2>/dev/null; then
		if [[ $sub == stop ]]; then
			echo "kafka.sh: stopped (the doc test's shared broker keeps running)" >&2
		else
			echo "running (the doc test's shared broker on 127.0.0.1:$shared)"
		fi
		exit 0
	fi
	;;
esac
exec "$real" "${args[@]}"
`, shQuote(filepath.Join(cfg.Root, "deploy", "kafka", "kafka.sh")), m.Port(TourBrokerPort), shQuote(state))
}

// prometheusWrapper is deploy/prometheus/run.sh with the page's ports as
// the defaults of --port and --target; the test stops what it started
// after the page.
func prometheusWrapper(cfg Config, m *Mapping, state string) string {
	return fmt.Sprintf(`#!/usr/bin/env bash
# The doc test's deploy/prometheus/run.sh: the page's ports are the
# defaults of --port and --target.
set -euo pipefail
real=%s
args=("$@")
sub=${1-}
dir=./.prometheus-data hasport=0 hastarget=0
shift || true
while (($#)); do
	case $1 in
	--port | --port=*) hasport=1 ;;
	--target | --target=*) hastarget=1 ;;
	--dir) dir=${2-} ;;
	--dir=*) dir=${1#*=} ;;
	esac
	shift
done
if [[ $sub == start || $sub == config ]]; then
	((hasport)) || args+=(--port %d)
	((hastarget)) || args+=(--target 127.0.0.1:%d)
	[[ $sub == config ]] || realpath -m -- "$dir" >>%s
fi
exec "$real" "${args[@]}"
`, shQuote(filepath.Join(cfg.Root, "deploy", "prometheus", "run.sh")), m.Port(PrometheusPort), m.Port(HTTPPort),
		shQuote(filepath.Join(state, "prometheus-started")))
}

// pageEnv is the page's environment: the test's, without the GRAPHTIDE_
// variables that set flags (the scripts' own GRAPHTIDE_KAFKA_ and
// GRAPHTIDE_PROMETHEUS_ settings stay, except the test's broker list),
// with TMPDIR the page's.
func pageEnv(tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TMPDIR" || k == "GRAPHTIDE_KAFKA_BROKERS" {
			continue
		}
		if strings.HasPrefix(k, "GRAPHTIDE_") && !strings.HasPrefix(k, "GRAPHTIDE_KAFKA_") && !strings.HasPrefix(k, "GRAPHTIDE_PROMETHEUS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TMPDIR="+tmp)
}

// stopAll stops what the page left running: its process group (SIGTERM,
// then SIGKILL after grace), then the brokers and Prometheus servers it
// started through the deploy scripts (which detach from the group).
// exited says whether the script has exited (done is closed then).
func stopAll(pgid int, exited bool, done <-chan struct{}, grace time.Duration, work, state, root string) error {
	if !exited {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
	}
	var errs []error
	if groupProcesses(pgid) != "" {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for groupProcesses(pgid) != "" && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if left := groupProcesses(pgid); left != "" {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			// SIGKILL is delivered asynchronously: wait until they are gone.
			for end := time.Now().Add(10 * time.Second); groupProcesses(pgid) != "" && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
			errs = append(errs, fmt.Errorf("the page left processes that did not stop within %v of SIGTERM (killed):\n%s", grace, indent(left)))
		}
	}
	for _, s := range []struct{ file, script string }{
		{"kafka-started", "deploy/kafka/kafka.sh"},
		{"prometheus-started", "deploy/prometheus/run.sh"},
	} {
		b, err := os.ReadFile(filepath.Join(state, s.file))
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, d := range strings.Fields(string(b)) {
			if seen[d] {
				continue
			}
			seen[d] = true
			c := exec.Command(filepath.Join(root, s.script), "stop", "--dir", d)
			c.Dir = work
			if out, err := c.CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s stop --dir %s: %w\n%s", s.script, d, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

// groupProcesses lists the live (not zombie) processes of process group
// pgid, one "pid command line" a line; "" if none.
func groupProcesses(pgid int) string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
		s := string(b)
		k := strings.LastIndexByte(s, ')')
		if k < 0 {
			continue
		}
		f := strings.Fields(s[k+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g != pgid {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func readInt(path string) int {
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// reverseTail is the last n lines of the file, mapped back to the docs'
// addresses.
func reverseTail(m *Mapping, path string, n int) string {
	b, _ := os.ReadFile(path)
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return m.Reverse(strings.Join(ls, "\n"))
}

// shQuote quotes s for bash.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
