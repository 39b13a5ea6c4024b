package doctest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeBinary is a stand-in for graphtide: it prints its arguments and the
// GRAPHTIDE_ variables it was given.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "graphtide")
	err := os.WriteFile(p, []byte("#!/usr/bin/env bash\necho \"args: $*\"\nenv | grep '^GRAPHTIDE_' | sort || true\n"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var nextPort = 42000

func testAlloc() (int, error) {
	nextPort += 2
	return nextPort, nil
}

// runPage writes page as PAGE.md in a fake repository (deploy/ and
// scripts/ of the real one) and runs it.
func runPage(t *testing.T, page string, cfg Config) (*Result, string, error) {
	t.Helper()
	root := t.TempDir()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"deploy", "scripts"} {
		if err := os.Symlink(filepath.Join(repo, d), filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "PAGE.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Root = root
	if cfg.Binary == "" {
		cfg.Binary = fakeBinary(t)
	}
	if cfg.Alloc == nil {
		cfg.Alloc = testAlloc
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	dir := t.TempDir()
	res, err := RunPage(context.Background(), cfg, "PAGE.md", dir)
	return res, filepath.Join(dir, "page"), err
}

func mustFailure(t *testing.T, err error) *Failure {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("want a *Failure, got %v", err)
	}
	return f
}

func TestRunPagePasses(t *testing.T) {
	page := "# A page\n\n" +
		"```sh\necho hello >greeting\nx=1\n```\n\n" +
		"```console\n$ cat greeting\nhello\n$ printf 'a\\nb\\nc\\nd\\n'\na\n...\nd\n$ echo \"listening on 127.0.0.1:9464, pid $$\"   \nlistening on 127.0.0.1:9464, pid …\n$ echo one \\\n  two\none two\n```\n\n" +
		"```yaml file=conf/serve.yaml\nhttp-addr: 127.0.0.1:9464\ndir: /tmp/data\n```\n\n" +
		"```go\nthis is not run\n```\n\n" +
		"<!-- doctest: skip -- it would fail -->\n```sh\nexit 1\n```\n\n" +
		"```sh\necho 127.0.0.1:9464 >addr\ncp conf/serve.yaml served.yaml\n```\n"
	res, work, err := runPage(t, page, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Blocks != 4 || res.Skipped != 1 {
		t.Errorf("blocks %d skipped %d, want 4 and 1", res.Blocks, res.Skipped)
	}
	addr, err := os.ReadFile(filepath.Join(work, "addr"))
	if err != nil {
		t.Fatal(err)
	}
	if a := strings.TrimSpace(string(addr)); a == "127.0.0.1:9464" || !strings.HasPrefix(a, "127.0.0.1:42") {
		t.Errorf("the page's 127.0.0.1:9464 became %q, want a port of the allocator", a)
	}
	conf, err := os.ReadFile(filepath.Join(work, "served.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := "http-addr: " + strings.TrimSpace(string(addr)) + "\ndir: " + filepath.Join(filepath.Dir(work), "tmp") + "/data\n"
	if string(conf) != want {
		t.Errorf("the file block wrote %q, want %q", conf, want)
	}
}

func TestRunPageOutputDiffers(t *testing.T) {
	page := "```console\n$ echo a\na\n$ echo b\nc\n$ touch after\n```\n"
	_, work, err := runPage(t, page, Config{})
	f := mustFailure(t, err)
	if f.Line != 4 || f.Command != "echo b" || f.Expected != "c" || f.Got != "b\n" {
		t.Errorf("failure %+v, want line 4, command echo b, expected c, got b", f)
	}
	if _, err := os.Stat(filepath.Join(work, "after")); err == nil {
		t.Error("the page went on after a transcript's output differed")
	}
	if !strings.Contains(f.Error(), "PAGE.md:4: the output differs") {
		t.Errorf("message %q does not name the page and line", f.Error())
	}
}

func TestRunPageCommandFails(t *testing.T) {
	page := "text\n\n```sh\necho one\nfalse \\\n  --flag\necho three >three\n```\n"
	_, work, err := runPage(t, page, Config{})
	f := mustFailure(t, err)
	if f.Line != 5 || !strings.Contains(f.Command, "false") || f.Msg != "exit status 1" {
		t.Errorf("failure %+v, want line 5, command false, exit status 1", f)
	}
	if _, err := os.Stat(filepath.Join(work, "three")); err == nil {
		t.Error("the page went on after a command failed")
	}
	page = "```console\n$ sh -c 'echo out; echo err >&2; exit 3'\nout\n```\n"
	_, _, err = runPage(t, page, Config{})
	f = mustFailure(t, err)
	if f.Line != 2 || f.Msg != "exit status 3" || f.Got != "out\nerr\n" {
		t.Errorf("failure %+v, want line 2, exit status 3 and the output", f)
	}
}

// alive reports whether the process whose pid is in file runs (and is not
// a zombie).
func alive(t *testing.T, file string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(st)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && syscall.Kill(pid, 0) == nil
}

func TestRunPageStopsWhatItStarted(t *testing.T) {
	page := "```sh\nsleep 300 &\necho $! >bg.pid\nbash -c 'trap \"\" TERM; sleep 300' &\necho $! >stubborn.pid\nsleep 0.2\n```\n"
	_, work, err := runPage(t, page, Config{KillAfter: time.Second})
	f := mustFailure(t, err)
	if !strings.Contains(f.Msg, "did not stop within 1s of SIGTERM") {
		t.Errorf("a process that ignores SIGTERM: %v", f)
	}
	for _, p := range []string{"bg.pid", "stubborn.pid"} {
		if alive(t, filepath.Join(work, p)) {
			t.Errorf("the process of %s still runs after the page", p)
		}
	}
}

func TestRunPageTimeout(t *testing.T) {
	page := "```sh\necho started\n```\n\n```sh\nsleep 300 &\necho $! >bg.pid\nsleep 301\n```\n"
	t0 := time.Now()
	_, work, err := runPage(t, page, Config{Timeout: time.Second})
	f := mustFailure(t, err)
	if !strings.Contains(f.Msg, "ran longer than 1s") || f.Line != 5 || !strings.Contains(f.Msg, "sleep 301") {
		t.Errorf("failure %v, want the timeout at line 5 naming sleep 301", f)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("a page with a 1 s limit took %v", d)
	}
	if alive(t, filepath.Join(work, "bg.pid")) {
		t.Error("a background job of a page that timed out still runs")
	}
}

func TestRunPageWrappers(t *testing.T) {
	defaults := []FlagDefault{
		{Command: []string{"serve"}, Flag: "http-addr", Default: "127.0.0.1:9464"},
		{Command: []string{"serve"}, Flag: "embedded-port", Default: "9092"},
		{Command: []string{"bench", "serve"}, Flag: "brokers", Default: "127.0.0.1:9092"},
	}
	page := "```yaml file=c.yaml\nhttp-addr: 127.0.0.1:9999\n```\n\n```sh\n" +
		"bin/graphtide serve --topics edges >serve.out\n" +
		"bin/graphtide serve --http-addr=127.0.0.1:9464 >given.out\n" +
		"bin/graphtide serve --config c.yaml >config.out\n" +
		"bin/graphtide bench serve >bench.out\n" +
		"bin/graphtide query >query.out\n" +
		"deploy/kafka/kafka.sh start --port 19092 --dir /tmp/gt-kafka >kafka.out\n" +
		"deploy/kafka/kafka.sh stop --dir /tmp/gt-kafka\n" +
		"make build\n" +
		"test -L scripts && test -f deploy/kafka/README.md\n```\n\n" +
		"```console\n$ deploy/kafka/kafka.sh start --port 19092 --dir /tmp/gt-kafka\n...\n127.0.0.1:19092\n$ make run\n```\n"
	_, work, err := runPage(t, page, Config{Defaults: defaults, Fixed: map[int]int{TourBrokerPort: 41111}})
	f := mustFailure(t, err)
	if f.Line != 21 || !strings.Contains(f.Got, "make run: a page of the docs runs only 'make build'") {
		t.Errorf("make run: %v", f)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	serve := read("serve.out")
	if !strings.Contains(serve, "GRAPHTIDE_HTTP_ADDR=127.0.0.1:42") || !strings.Contains(serve, "GRAPHTIDE_EMBEDDED_PORT=42") {
		t.Errorf("serve without flags got\n%s\nwant the page's ports as GRAPHTIDE_HTTP_ADDR and GRAPHTIDE_EMBEDDED_PORT", serve)
	}
	if g := read("given.out"); strings.Contains(g, "GRAPHTIDE_HTTP_ADDR") || !strings.Contains(g, "--http-addr=127.0.0.1:42") {
		t.Errorf("serve --http-addr got\n%s\nwant the flag mapped and no variable", g)
	}
	if g := read("config.out"); strings.Contains(g, "GRAPHTIDE_HTTP_ADDR") || !strings.Contains(g, "GRAPHTIDE_EMBEDDED_PORT") {
		t.Errorf("serve --config with http-addr got\n%s\nwant no GRAPHTIDE_HTTP_ADDR", g)
	}
	if g := read("bench.out"); !strings.Contains(g, "GRAPHTIDE_BROKERS=127.0.0.1:42") || strings.Contains(g, "HTTP_ADDR") {
		t.Errorf("bench serve got\n%s\nwant GRAPHTIDE_BROKERS only", g)
	}
	if g := read("query.out"); strings.Contains(g, "GRAPHTIDE_") {
		t.Errorf("query got\n%s\nwant no variable", g)
	}
	if g := read("kafka.out"); g != "127.0.0.1:41111\n" {
		t.Errorf("kafka.sh start of the tour broker printed %q, want the shared broker's address", g)
	}
}

func TestRunPageRefusesBadPages(t *testing.T) {
	for _, page := range []string{
		"```console\nstray output\n$ echo\n```\n",
		"```console\n$ sleep 1 &\noutput\n```\n",
		"```sh\necho\n",
		"<!-- doctest: skip -->\n```sh\necho\n```\n",
		"```yaml file=../x\na: 1\n```\n",
	} {
		_, _, err := runPage(t, page, Config{})
		mustFailure(t, err)
	}
}

func TestRunPageRefusesMakeRunsDataDir(t *testing.T) {
	_, _, err := runPage(t, "```sh\nmkdir -p graphtide-data/store\n```\n", Config{})
	f := mustFailure(t, err)
	if !strings.Contains(f.Msg, "the page used ./graphtide-data") {
		t.Errorf("a page that used ./graphtide-data: %v", f)
	}
	if _, _, err := runPage(t, "```sh\nmkdir -p tour-data/store\n```\n", Config{}); err != nil {
		t.Errorf("a page on a data directory of its own: %v", err)
	}
}
