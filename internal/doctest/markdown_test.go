package doctest

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseBlocks(t *testing.T) {
	src := strings.Join([]string{
		"# Title",                           // 1
		"",                                  // 2
		"```sh",                             // 3
		"echo one",                          // 4
		"```",                               // 5
		"- a list item:",                    // 6
		"  ```console",                      // 7
		"  $ echo two",                      // 8
		"  two",                             // 9
		"  ```",                             // 10
		"````text",                          // 11
		"```sh",                             // 12
		"not a fence inside a 4-fence",      // 13
		"```",                               // 14
		"````",                              // 15
		"<!-- doctest: skip -- systemd -->", // 16
		"~~~sh",                             // 17
		"systemctl start graphtide",         // 18
		"~~~",                               // 19
		"```yaml file=conf/serve.yaml",      // 20
		"brokers: [127.0.0.1:19092]",        // 21
		"```",                               // 22
		"```",                               // 23
		"no info string",                    // 24
		"```",                               // 25
		"```go",                             // 26
		"```",                               // 27
		"```sh title=x",                     // 28: sh with an unknown attribute
	}, "\n")
	if _, err := ParseBlocks(src + "\n```\n"); err == nil || !strings.Contains(err.Error(), "line 28") {
		t.Errorf("an unknown attribute on an sh block: %v", err)
	}
	src = strings.Join(strings.Split(src, "\n")[:27], "\n") + "\n"
	blocks, err := ParseBlocks(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Line: 3, Info: "sh", Lang: "sh", Kind: Script, Lines: []string{"echo one"}},
		{Line: 7, Info: "console", Lang: "console", Kind: Console, Lines: []string{"$ echo two", "two"}},
		{Line: 11, Info: "text", Lang: "text", Kind: Shown, Lines: []string{"```sh", "not a fence inside a 4-fence", "```"}},
		{Line: 17, Info: "sh", Lang: "sh", Kind: Script, Lines: []string{"systemctl start graphtide"}, Skip: "systemd"},
		{Line: 20, Info: "yaml file=conf/serve.yaml", Lang: "yaml", File: "conf/serve.yaml", Kind: File, Lines: []string{"brokers: [127.0.0.1:19092]"}},
		{Line: 23, Kind: Shown, Lines: []string{"no info string"}},
		{Line: 26, Info: "go", Lang: "go", Kind: Shown},
	}
	if !reflect.DeepEqual(blocks, want) {
		t.Errorf("got\n%#v\nwant\n%#v", blocks, want)
	}
}

func TestParseBlocksErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"```sh\necho\n", "line 1: the fenced block is never closed"},
		{"<!-- doctest: skip -->\n```sh\n```\n", "needs a reason"},
		{"<!-- doctest: skip -- why -->\n\n```sh\n```\n", "line 1: a doctest skip comment must be on the line right before"},
		{"<!-- doctest: skip -- why -->\n", "line 1: a doctest skip comment must be on the line right before"},
		{"<!-- doctest: run -->\n", "line 1: a doctest comment is"},
		{"```yaml file=/etc/x\n```\n", "want a plain path"},
		{"```yaml file=../x\n```\n", "want a plain path"},
		{"```yaml file=a/../../x\n```\n", "want a plain path"},
		{"```go file=x.go\n```\n", "only yaml, json and text"},
		{"```console extra\n```\n", "unknown attribute"},
	} {
		_, err := ParseBlocks(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.src, err, tc.want)
		}
	}
}

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Five-minute tour": "five-minute-tour",
		"Writes over HTTP: `POST /v1/batches` and `graphtide write`": "writes-over-http-post-v1batches-and-graphtide-write",
		"Kafka security: TLS, client certificates, SASL":             "kafka-security-tls-client-certificates-sasl",
		"Running `graphtide serve`":                                  "running-graphtide-serve",
		"Replicas: several instances of one graph":                   "replicas-several-instances-of-one-graph",
		"A [link](x.md) and <b>bold</b> **strong**":                  "a-link-and-bold-strong",
		"snake_case and 2^62 ids":                                    "snake_case-and-262-ids",
		"Über café":                                                  "über-café",
		"  trailing  ":                                               "trailing",
		"a  b":                                                       "a--b",
	} {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestHeadings(t *testing.T) {
	src := strings.Join([]string{
		"# Guide",
		"## Setup",
		"```sh",
		"# not a heading",
		"```",
		"## Setup",
		"### Setup ###",
		"Underlined",
		"==========",
		"Also underlined",
		"---",
		"",
		"---",
		"- item",
		"---",
		`<a name="custom"></a>`,
		"#not-a-heading",
	}, "\n")
	var got []string
	for _, h := range Headings(src) {
		got = append(got, h.Anchor)
	}
	want := []string{"guide", "setup", "setup-1", "setup-2", "underlined", "also-underlined", "custom"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
}
