package doctest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestLinksFound(t *testing.T) {
	src := strings.Join([]string{
		"See [the guide](docs/guide.md#setup) and ![a picture](img/a.png \"title\").", // 1
		"`[not a link](x.md)` and ``code with ` [x](y.md)``",                          // 2
		"```sh",                         // 3
		"echo [no](link.md)",            // 4
		"```",                           // 5
		"[ref]: deploy/README.md",       // 6
		`<a href="docs/x.md#top">x</a>`, // 7
		"[split",                        // 8
		"text](docs/split.md) [link (with parens)](a_(b).md)", // 9
	}, "\n")
	var got []string
	for _, l := range Links(src) {
		got = append(got, l.Target+"@"+string(rune('0'+l.Line)))
	}
	want := []string{"docs/guide.md#setup@1", "img/a.png@1", "docs/split.md@8", "a_(b).md@9", "docs/x.md#top@7", "deploy/README.md@6"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("links %q, want %q", got, want)
	}
}

func TestCheckLinks(t *testing.T) {
	files := map[string]string{
		"README.md": strings.Join([]string{
			"# Intro",
			"## Setup",
			"## Setup",
			"[ok](docs/guide.md) [ok](docs/guide.md#running-graphtide-serve) [ok](#setup-1) [ok](#intro)",
			"[ok](deploy) [ok](deploy/) [ok](https://example.com/x#y) [ok](deploy/run.sh#L2) [ok](docs/guide.md?plain=1)",
			"[bad](../shared/DESIGN.md) [bad](#setup-2) [bad](docs/missing.md) [bad](/docs/guide.md)",
			"[bad](docs/guide.md#nope) [bad](deploy/run.sh#L9) [bad](deploy/run.sh#main) [bad](file:///etc/passwd)",
			"the design is in `../shared/DESIGN.md`, and [ok](docs/My%20Page.md)",
		}, "\n"),
		"docs/guide.md":   "# Running `graphtide serve`\n[up](../README.md#setup) [bad](../../outside.md)\n",
		"docs/My Page.md": "x\n",
		"deploy/run.sh":   "#!/bin/sh\necho\n",
	}
	repo := Repo{Files: map[string]bool{}, Read: func(name string) (string, error) {
		if s, ok := files[name]; ok {
			return s, nil
		}
		return "", errors.New("no file " + name)
	}}
	for f := range files {
		repo.Files[f] = true
	}
	got, err := CheckLinks(repo, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`README.md:8: "../shared/DESIGN.md" names a path outside the repository`,
		`README.md:6: link "../shared/DESIGN.md": points outside the repository`,
		`README.md:6: link "#setup-2": README.md has no heading with the anchor #setup-2`,
		`README.md:6: link "docs/missing.md": no such file in the repository: docs/missing.md`,
		`README.md:6: link "/docs/guide.md": an absolute path`,
		`README.md:7: link "docs/guide.md#nope": docs/guide.md has no heading with the anchor #nope`,
		`README.md:7: link "deploy/run.sh#L9": deploy/run.sh has 2 lines, no line 9`,
		`README.md:7: link "deploy/run.sh#main": an anchor on deploy/run.sh, which is not a Markdown file`,
		`README.md:7: link "file:///etc/passwd": a file: link`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %q, want it to start with %q", i, got[i], want[i])
		}
	}
	got, err = CheckLinks(repo, "docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0], `"../../outside.md": points outside the repository`) {
		t.Errorf("docs/guide.md: %q, want the link outside the repository only", got)
	}
}
