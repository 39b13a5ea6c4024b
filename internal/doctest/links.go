package doctest

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Link is a link of a Markdown page.
type Link struct {
	Line   int
	Target string
}

var (
	// [text](target) and ![alt](target), with an optional "title".
	inlineRE = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// [ref]: target
	refDefRE = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// href="target" and src="target" of HTML.
	hrefRE = regexp.MustCompile(`\b(?:href|src)="([^"]*)"`)
)

// Links returns the links of a page: inline links and images, reference
// definitions and HTML href/src, outside fenced blocks and code spans.
func Links(src string) []Link {
	lines := prose(src)
	text := blankCodeSpans(strings.Join(lines, "\n"))
	lineAt := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	var ls []Link
	for _, m := range inlineRE.FindAllStringSubmatchIndex(text, -1) {
		ls = append(ls, Link{Line: lineAt(m[0]), Target: text[m[2]:m[3]]})
	}
	for _, m := range hrefRE.FindAllStringSubmatchIndex(text, -1) {
		ls = append(ls, Link{Line: lineAt(m[0]), Target: text[m[2]:m[3]]})
	}
	for i, l := range strings.Split(text, "\n") {
		if m := refDefRE.FindStringSubmatch(l); m != nil {
			ls = append(ls, Link{Line: i + 1, Target: m[1]})
		}
	}
	return ls
}

// blankCodeSpans replaces the content of code spans (a run of backticks up
// to the next run of as many) by spaces, keeping line ends.
func blankCodeSpans(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		// Find the closing run of exactly n backticks.
		j := i + n
		end := -1
		for j < len(b) {
			if b[j] != '`' {
				j++
				continue
			}
			k := 0
			for j+k < len(b) && b[j+k] == '`' {
				k++
			}
			if k == n {
				end = j
				break
			}
			j += k
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i + n; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end + n
	}
	return string(b)
}

// Repo is what CheckLinks knows of the repository: its files (paths
// relative to its root, with '/') and their contents when asked.
type Repo struct {
	Files map[string]bool
	Read  func(name string) (string, error)
}

// dirs returns whether name is a directory of the repository (a prefix of
// one of its files).
func (r Repo) isDir(name string) bool {
	if name == "." || name == "" {
		return true
	}
	for f := range r.Files {
		if strings.HasPrefix(f, name+"/") {
			return true
		}
	}
	return false
}

// outsideRE: a relative path going up, in the text.
var outsideRE = regexp.MustCompile("(?:^|[\\s`\"'])(\\.\\./[^\\s`)\"']*)")

var lineAnchorRE = regexp.MustCompile(`^L(\d+)(?:-L(\d+))?$`)

// CheckLinks checks the links of the Markdown file page (a path of the
// repository) and returns a problem per bad link, "page:line: ...": a
// relative link must resolve to a file or directory of the repository
// (not outside it, not an absolute path), an #anchor to a heading of the
// Markdown file it names (or of page itself), or to a line (#L12,
// #L12-L20) of another file. http(s) and mailto links are not fetched.
func CheckLinks(repo Repo, page string) ([]string, error) {
	src, err := repo.Read(page)
	if err != nil {
		return nil, err
	}
	var problems []string
	bad := func(l Link, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", page, l.Line, l.Target, fmt.Sprintf(format, args...)))
	}
	anchors := map[string]map[string]bool{}
	headingsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		s, err := repo.Read(file)
		if err != nil {
			return nil, err
		}
		a := map[string]bool{}
		for _, h := range Headings(s) {
			a[h.Anchor] = true
		}
		anchors[file] = a
		return a, nil
	}
	// A path outside the repository named in the text (a code span
	// included) is as broken in a clone as a link to it.
	for i, line := range prose(src) {
		for _, m := range outsideRE.FindAllStringSubmatch(line, -1) {
			if p := path.Clean(path.Join(path.Dir(page), m[1])); p == ".." || strings.HasPrefix(p, "../") {
				problems = append(problems, fmt.Sprintf("%s:%d: %q names a path outside the repository (a clone has only the repository)", page, i+1, m[1]))
			}
		}
	}
	for _, l := range Links(src) {
		t := l.Target
		low := strings.ToLower(t)
		if strings.HasPrefix(low, "http://") || strings.HasPrefix(low, "https://") || strings.HasPrefix(low, "mailto:") {
			continue
		}
		if t == "" {
			bad(l, "empty link")
			continue
		}
		if i := strings.Index(t, ":"); i > 0 && !strings.ContainsAny(t[:i], "/#?.") {
			bad(l, "a %s: link; links are relative paths within the repository, or http(s)", t[:i])
			continue
		}
		p, frag, _ := strings.Cut(t, "#")
		p, _, _ = strings.Cut(p, "?")
		p, err := url.PathUnescape(p)
		if err != nil {
			bad(l, "bad escape: %v", err)
			continue
		}
		target := page
		if p != "" {
			if strings.HasPrefix(p, "/") {
				bad(l, "an absolute path; use a path relative to %s", page)
				continue
			}
			target = path.Clean(path.Join(path.Dir(page), p))
			if target == ".." || strings.HasPrefix(target, "../") {
				bad(l, "points outside the repository (a clone has only the repository)")
				continue
			}
			if !repo.Files[target] {
				if repo.isDir(target) {
					if frag != "" {
						bad(l, "an anchor on a directory")
					}
					continue
				}
				bad(l, "no such file in the repository: %s", target)
				continue
			}
		}
		if frag == "" {
			continue
		}
		if strings.HasSuffix(strings.ToLower(target), ".md") {
			a, err := headingsOf(target)
			if err != nil {
				return nil, err
			}
			if !a[frag] {
				bad(l, "%s has no heading with the anchor #%s", target, frag)
			}
			continue
		}
		m := lineAnchorRE.FindStringSubmatch(frag)
		if m == nil {
			bad(l, "an anchor on %s, which is not a Markdown file (only #L12 or #L12-L20 line anchors are)", target)
			continue
		}
		s, err := repo.Read(target)
		if err != nil {
			return nil, err
		}
		n := len(splitLines(s))
		for _, g := range m[1:] {
			if g == "" {
				continue
			}
			if k, _ := strconv.Atoi(g); k < 1 || k > n {
				bad(l, "%s has %d lines, no line %d", target, n, k)
			}
		}
	}
	return problems, nil
}
