package server

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// configDoc is the user's reference of serve's settings.
var configDoc = filepath.Join("..", "..", "docs", "configuration.md")

// docFlagRow is a row of one of the page's flag tables: | `--name` | default | what |.
var docFlagRow = regexp.MustCompile("^\\| `--([a-z0-9-]+)` \\| ([^|]*) \\|")

// serveFlags is serve's flag set, as the command line has it.
func serveFlags() *pflag.FlagSet {
	var o Options
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o.AddFlags(fs)
	return fs
}

// configDocProblems compares the flag tables of the page with fs: every
// flag of fs is a row, every row is a flag of fs, no flag is a row twice,
// and a default other than the type's zero value (which the page may put
// in words, "none: the embedded broker") starts its default column as
// --help prints it.
func configDocProblems(page string, fs *pflag.FlagSet) ([]string, error) {
	raw, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	var problems []string
	documented := map[string]string{}
	for i, line := range strings.Split(string(raw), "\n") {
		m := docFlagRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := documented[m[1]]; dup {
			problems = append(problems, fmt.Sprintf("line %d: --%s is listed twice", i+1, m[1]))
		}
		documented[m[1]] = strings.TrimSpace(m[2])
	}
	fs.VisitAll(func(f *pflag.Flag) {
		def, ok := documented[f.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("--%s is a flag of serve the page does not list", f.Name))
		case f.DefValue == "" || f.DefValue == "false" || f.DefValue == "0" || f.DefValue == "0s" || f.DefValue == "[]":
		case !strings.HasPrefix(def, "`"+f.DefValue+"`"):
			problems = append(problems, fmt.Sprintf("--%s: the default column says %q; serve's default is `%s`", f.Name, def, f.DefValue))
		}
	})
	var unknown []string
	for name := range documented {
		if fs.Lookup(name) == nil {
			unknown = append(unknown, fmt.Sprintf("--%s is listed but serve has no such flag", name))
		}
	}
	slices.Sort(unknown)
	return append(problems, unknown...), nil
}

// TestConfigurationDocumentsEveryFlag holds docs/configuration.md to
// serve's flag set (see configDocProblems).
func TestConfigurationDocumentsEveryFlag(t *testing.T) {
	problems, err := configDocProblems(configDoc, serveFlags())
	if err != nil {
		t.Fatalf("the configuration reference: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", configDoc, p)
	}
}

// TestConfigDocProblemsAreFound runs the same check on copies of the page
// with a row removed, a row of a flag serve lacks, a row twice and a
// wrong default: each is reported, naming the flag.
func TestConfigDocProblemsAreFound(t *testing.T) {
	raw, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	row := regexp.MustCompile("(?m)^\\| `--flush-interval` \\| `2s` \\|.*\n").FindString(page)
	if row == "" {
		t.Fatal("the page has no --flush-interval row with its default `2s`")
	}
	for _, c := range []struct{ name, page, want string }{
		{"row removed", strings.Replace(page, row, "", 1), "--flush-interval is a flag of serve the page does not list"},
		{"unknown flag", page + "\n| `--no-such-flag` | none | x |\n", "--no-such-flag is listed but serve has no such flag"},
		{"listed twice", page + "\n" + row, "--flush-interval is listed twice"},
		{"wrong default", strings.Replace(page, "| `--flush-interval` | `2s` |", "| `--flush-interval` | `3s` |", 1), "--flush-interval: the default column says \"`3s`\""},
	} {
		p := filepath.Join(t.TempDir(), "configuration.md")
		if err := os.WriteFile(p, []byte(c.page), 0o600); err != nil {
			t.Fatal(err)
		}
		problems, err := configDocProblems(p, serveFlags())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: want a problem containing %q, got %q", c.name, c.want, problems)
		}
	}
}
