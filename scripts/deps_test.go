package scripts_test

// Tests of scripts/deps.sh and of which of its groups the Makefile's
// targets install: `make run` only what building and running need, and
// the kafka group a Java runtime and Maven when they are missing. The
// script runs with GRAPHTIDE_DEPS_DRY_RUN=1 (it says what it would
// install, installing nothing) on a PATH of the tools it reads, with or
// without Java, Maven and the linters.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakePath makes a directory of symlinks to the real tools named (those
// missing on this machine are left out) and of fake commands (name ->
// shell script body), to be the whole PATH of a dry run.
func fakePath(t *testing.T, tools []string, fakes map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range tools {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// baseTools are what deps.sh itself runs.
var baseTools = []string{"bash", "sh", "dirname", "sed", "awk", "cut", "head", "tail", "sort", "id", "find", "grep", "cat", "apt-cache", "go"}

// dryRun runs deps.sh with groups on PATH dir and returns what it printed.
func dryRun(t *testing.T, dir string, groups ...string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command(bash, append([]string{"deps.sh"}, groups...)...)
	// Go's telemetry off in that HOME: else the go command deps.sh runs
	// leaves a child writing its counters there, racing the removal of
	// the temporary HOME when the test ends.
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "go", "telemetry"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "go", "telemetry", "mode"), []byte("off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Env = []string{"PATH=" + dir, "HOME=" + home, "GRAPHTIDE_DEPS_DRY_RUN=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deps.sh %s: %v\n%s", strings.Join(groups, " "), err, out)
	}
	return string(out)
}

// installed returns the packages a dry run says it would install with
// apt-get.
func installed(out string) []string {
	var pkgs []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "deps: installing "); ok {
			rest = strings.TrimSuffix(rest, " with apt-get")
			rest = strings.TrimSuffix(rest, " (for promtool)")
			pkgs = append(pkgs, strings.Fields(rest)...)
		}
	}
	return pkgs
}

func has(pkgs []string, want ...string) bool {
	for _, p := range pkgs {
		for _, w := range want {
			if p == w {
				return true
			}
		}
	}
	return false
}

var javaPackages = []string{"default-jre-headless", "openjdk-17-jre-headless"}

const fakeJava11 = `[ "$1" = -version ] && echo 'openjdk version "11.0.22" 2024-01-16' >&2`
const fakeJava17 = `[ "$1" = -version ] && echo 'openjdk version "17.0.15" 2025-04-15' >&2`

func TestDepsKafkaInstallsJavaAndMaven(t *testing.T) {
	// No Java and no Maven: both.
	pkgs := installed(dryRun(t, fakePath(t, baseTools, nil), "kafka"))
	if !has(pkgs, javaPackages...) || !has(pkgs, "maven") {
		t.Errorf("without java and mvn, deps.sh kafka installs %q; want a Java runtime (%q) and maven", pkgs, javaPackages)
	}
	// Java 11 is too old for Kafka 4.
	pkgs = installed(dryRun(t, fakePath(t, baseTools, map[string]string{"java": fakeJava11, "mvn": "true"}), "kafka"))
	if !has(pkgs, javaPackages...) || has(pkgs, "maven") {
		t.Errorf("with java 11 and mvn, deps.sh kafka installs %q; want a Java runtime (%q) only", pkgs, javaPackages)
	}
	// Java 17 and Maven: nothing.
	pkgs = installed(dryRun(t, fakePath(t, baseTools, map[string]string{"java": fakeJava17, "mvn": "true"}), "kafka"))
	if len(pkgs) != 0 {
		t.Errorf("with java 17 and mvn, deps.sh kafka installs %q; want nothing", pkgs)
	}
	// The whole set (make deps, make test) includes the kafka group.
	pkgs = installed(dryRun(t, fakePath(t, baseTools, nil)))
	if !has(pkgs, javaPackages...) || !has(pkgs, "maven") {
		t.Errorf("without java and mvn, deps.sh (all) installs %q; want a Java runtime and maven", pkgs)
	}
}

// TestDepsTestInstallsPython: the test group installs python3 (the
// payments scripts' tests run under make test); the build group does not.
func TestDepsTestInstallsPython(t *testing.T) {
	dir := fakePath(t, baseTools, map[string]string{"java": fakeJava17, "mvn": "true"})
	if pkgs := installed(dryRun(t, dir, "test")); !has(pkgs, "python3") {
		t.Errorf("deps.sh test on a PATH without python3 installs %q; want python3", pkgs)
	}
	if pkgs := installed(dryRun(t, dir, "build")); has(pkgs, "python3") {
		t.Errorf("deps.sh build installs %q; want no python3", pkgs)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		dir := fakePath(t, append(baseTools, "python3"), map[string]string{"java": fakeJava17, "mvn": "true"})
		if pkgs := installed(dryRun(t, dir, "test")); has(pkgs, "python3") {
			t.Errorf("deps.sh test with %s on PATH installs %q; want no python3", py, pkgs)
		}
	}
}

func TestDepsBuildInstallsNoLinters(t *testing.T) {
	// A PATH without g++, Java, Maven, the linters or promtool.
	dir := fakePath(t, baseTools, nil)
	out := dryRun(t, dir, "build")
	if pkgs := installed(out); has(pkgs, "clang-format", "clang-tidy", "shellcheck", "prometheus", "maven", "cmake") || has(pkgs, javaPackages...) {
		t.Errorf("deps.sh build installs %q; want only what building needs (g++)", pkgs)
	}
	if strings.Contains(out, "golangci-lint") {
		t.Errorf("deps.sh build builds golangci-lint:\n%s", out)
	}
	if _, err := exec.LookPath("g++"); err == nil {
		if pkgs := installed(out); !has(pkgs, "g++") {
			t.Errorf("deps.sh build on a PATH without g++ installs %q; want g++", pkgs)
		}
	}
	// The lint group installs the linters missing from the same PATH.
	if pkgs := installed(dryRun(t, dir, "lint")); !has(pkgs, "clang-format") || !has(pkgs, "shellcheck") {
		t.Errorf("deps.sh lint installs %q; want clang-format and shellcheck among them", pkgs)
	}
}

// TestMakeRunInstallsOnlyWhatRunningNeeds: `make run` runs deps.sh's build
// group only; `make deps` (which test and lint depend on) every group.
func TestMakeRunInstallsOnlyWhatRunningNeeds(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	deps := func(target string) []string {
		cmd := exec.Command(mk, "-n", "-C", "..", target)
		// What a user's make does: not what the make running these
		// tests passes down (make test's parts run with NO_DEPS=1,
		// which reaches a sub-make through MAKEFLAGS).
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "NO_DEPS" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "deps.sh") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		return lines
	}
	if got := deps("run"); len(got) != 1 || got[0] != "scripts/deps.sh build" {
		t.Errorf("make run runs %q; want only \"scripts/deps.sh build\"", got)
	}
	// groups: the groups the deps.sh lines install (no group: all).
	groups := func(lines []string) map[string]bool {
		g := map[string]bool{}
		for _, l := range lines {
			_, args, _ := strings.Cut(l, "deps.sh")
			if strings.TrimSpace(args) == "" {
				args = "all"
			}
			for _, a := range strings.Fields(args) {
				g[a] = true
			}
		}
		return g
	}
	if g := groups(deps("test")); !g["all"] && !(g["test"] && g["lint"]) {
		t.Errorf("make test installs the groups %v; want test and lint (or all)", g)
	}
	if g := groups(deps("lint")); !g["all"] && !g["lint"] {
		t.Errorf("make lint installs the groups %v; want lint (or all)", g)
	}
}
