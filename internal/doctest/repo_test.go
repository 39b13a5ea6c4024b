package doctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The tests of this file check the repository's own docs (no broker
// needed; TestDocs in test/kafka runs their examples).

// repoRoot is the repository's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// repoFiles are the files a commit of the working tree would hold: git's
// tracked files and the untracked ones it does not ignore.
func repoFiles(t *testing.T, root string) Repo {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files (the link check needs the repository's file list): %v", err)
	}
	files := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files[f] = true
		}
	}
	return Repo{Files: files, Read: func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		return string(b), err
	}}
}

func sortedFiles(r Repo, keep func(string) bool) []string {
	var fs []string
	for f := range r.Files {
		if keep(f) {
			fs = append(fs, f)
		}
	}
	sort.Strings(fs)
	return fs
}

// TestLinks checks every link of every Markdown file of the repository
// (README.md, docs/, deploy/ ...): relative links resolve to a file of the
// repository, anchors to a heading; nothing points outside it.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	repo := repoFiles(t, root)
	pages := sortedFiles(repo, func(f string) bool { return strings.HasSuffix(f, ".md") })
	if len(pages) == 0 {
		t.Fatal("no Markdown file in the repository")
	}
	for _, p := range pages {
		problems, err := CheckLinks(repo, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range problems {
			t.Error(pr)
		}
	}
}

// TestGoBlocksAreExamples checks that the go blocks of README.md and
// docs/ are code of example files (_test.go files with Example functions,
// which go test compiles and runs, checking their output), copied verbatim
// up to indentation, and that those files use no internal package.
func TestGoBlocksAreExamples(t *testing.T) {
	root := repoRoot(t)
	repo := repoFiles(t, root)
	var examples []Example
	for _, f := range sortedFiles(repo, func(f string) bool { return strings.HasSuffix(f, "_test.go") }) {
		src, err := repo.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		exs, err := Examples(f, src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		examples = append(examples, exs...)
	}
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		src, err := repo.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := ParseBlocks(src)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, b := range blocks {
			if b.Lang != "go" || b.Skip != "" {
				continue
			}
			if msg := CheckGoBlock(b.Lines, examples); msg != "" {
				t.Errorf("%s:%d: go block: %s", p, b.Line, msg)
			}
		}
	}
}

// TestPagesParse checks that the pages' blocks and transcripts are well
// formed (a mistake in a skip comment or a transcript shows here, without
// a broker).
func TestPagesParse(t *testing.T) {
	root := repoRoot(t)
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no page: README.md is missing")
	}
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := ParseBlocks(string(b))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, bl := range blocks {
			if bl.Kind == Console {
				if _, err := ParseConsole(bl.Lines, bl.Line+1); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
		}
	}
}
