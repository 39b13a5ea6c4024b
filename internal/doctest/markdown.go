package doctest

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
)

// Kind is what the doc test does with a fenced block.
type Kind int

const (
	// Shown blocks are not run (go, json, yaml, text, promql, none...).
	Shown Kind = iota
	// Script blocks (info string `sh`) are run by bash.
	Script
	// Console blocks are transcripts: commands and their expected output.
	Console
	// File blocks (`yaml file=NAME`, `json file=NAME`, `text file=NAME`)
	// are written to NAME in the page's working directory.
	File
)

func (k Kind) String() string {
	return [...]string{"shown", "sh", "console", "file"}[k]
}

// Block is one fenced code block of a Markdown page.
type Block struct {
	Line  int      // 1-based line of the opening fence
	Info  string   // the info string, trimmed
	Lang  string   // its first word
	File  string   // NAME of a file=NAME attribute, "" if none
	Kind  Kind     // what the doc test does with it
	Lines []string // the content, the fence's indentation removed
	// Skip is the reason of a `<!-- doctest: skip -- reason -->` on the
	// line before the fence; "" when the block is not skipped.
	Skip string
}

var (
	fenceRE = regexp.MustCompile("^( *)(`{3,}|~{3,})(.*)$")
	skipRE  = regexp.MustCompile(`^\s*<!--\s*doctest:\s*skip(?:\s+--\s*(.*?))?\s*-->\s*$`)
	anyDT   = regexp.MustCompile(`^\s*<!--\s*doctest`)
)

// fileLangs are the info strings whose blocks may carry file=NAME.
var fileLangs = map[string]bool{"yaml": true, "json": true, "text": true}

// ParseBlocks returns the fenced code blocks of a Markdown page, in order.
// A fence left open, a malformed doctest comment, one that is not on the
// line before a fence, and a file=NAME that is not a plain relative path
// (or on a block that cannot have one) are errors, with their line.
func ParseBlocks(src string) ([]Block, error) {
	lines := splitLines(src)
	var blocks []Block
	skip, skipLine := "", 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := fenceRE.FindStringSubmatch(l); m != nil && !(m[2][0] == '`' && strings.Contains(m[3], "`")) {
			indent, fence := len(m[1]), m[2]
			b := Block{Line: i + 1, Info: strings.TrimSpace(m[3]), Skip: skip}
			if skip != "" && skipLine != i {
				return nil, fmt.Errorf("line %d: a doctest skip comment must be on the line right before the block it skips", skipLine)
			}
			skip = ""
			if err := b.parseInfo(); err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			closed := false
			for i++; i < len(lines); i++ {
				c := lines[i]
				if closes(c, fence) {
					closed = true
					break
				}
				// Remove up to the fence's indentation.
				n := 0
				for n < indent && n < len(c) && c[n] == ' ' {
					n++
				}
				b.Lines = append(b.Lines, c[n:])
			}
			if !closed {
				return nil, fmt.Errorf("line %d: the fenced block is never closed", b.Line)
			}
			blocks = append(blocks, b)
			continue
		}
		if skip != "" {
			return nil, fmt.Errorf("line %d: a doctest skip comment must be on the line right before the block it skips", skipLine)
		}
		if m := skipRE.FindStringSubmatch(l); m != nil {
			if m[1] == "" {
				return nil, fmt.Errorf("line %d: a doctest skip comment needs a reason: <!-- doctest: skip -- reason -->", i+1)
			}
			skip, skipLine = m[1], i+1
			continue
		}
		if anyDT.MatchString(l) {
			return nil, fmt.Errorf("line %d: a doctest comment is <!-- doctest: skip -- reason --> on the line before a block; got %q", i+1, strings.TrimSpace(l))
		}
	}
	if skip != "" {
		return nil, fmt.Errorf("line %d: a doctest skip comment must be on the line right before the block it skips", skipLine)
	}
	return blocks, nil
}

// parseInfo sets Lang, File and Kind from Info.
func (b *Block) parseInfo() error {
	f := strings.Fields(b.Info)
	if len(f) == 0 {
		return nil
	}
	b.Lang = f[0]
	for _, a := range f[1:] {
		name, ok := strings.CutPrefix(a, "file=")
		if !ok {
			if b.Lang == "sh" || b.Lang == "console" || fileLangs[b.Lang] {
				return fmt.Errorf("unknown attribute %q in the info string %q (only yaml, json and text blocks take file=NAME)", a, b.Info)
			}
			continue
		}
		if !fileLangs[b.Lang] {
			return fmt.Errorf("file=NAME on a %q block: only yaml, json and text blocks are written to files", b.Lang)
		}
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || strings.HasPrefix(name, "../") || name == ".." || strings.ContainsAny(name, "\\'\"$`") {
			return fmt.Errorf("file=%s: want a plain path relative to the page's working directory", name)
		}
		b.File = name
	}
	switch {
	case b.File != "":
		b.Kind = File
	case b.Lang == "sh" && len(f) == 1:
		b.Kind = Script
	case b.Lang == "console" && len(f) == 1:
		b.Kind = Console
	}
	return nil
}

// closes reports whether line closes a block opened by fence: the same
// character, at least as many, and nothing else.
func closes(line, fence string) bool {
	t := strings.TrimRight(strings.TrimLeft(line, " "), " \t")
	return len(t) >= len(fence) && t == strings.Repeat(fence[:1], len(t))
}

// splitLines splits src into lines without their line ends.
func splitLines(src string) []string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	if src == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(src, "\n"), "\n")
}

// prose returns the lines of src with fenced blocks (fences included)
// blanked, so that links and headings are looked for in the text only.
func prose(src string) []string {
	lines := splitLines(src)
	out := make([]string, len(lines))
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil || (m[2][0] == '`' && strings.Contains(m[3], "`")) {
			out[i] = lines[i]
			continue
		}
		fence := m[2]
		for i++; i < len(lines); i++ {
			if closes(lines[i], fence) {
				break
			}
		}
	}
	return out
}

// Heading is a heading of a page and its GitHub anchor.
type Heading struct {
	Line   int
	Text   string
	Anchor string
}

var (
	atxRE    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextRE = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	anchorRE = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Headings returns the headings of a page (ATX and setext, outside fenced
// blocks) with their anchors as GitHub makes them: Slug of the text, and
// -1, -2, ... appended to the second, third, ... heading of one slug.
// Explicit anchors (<a name="x"> or <a id="x">) are returned as headings
// of that anchor.
func Headings(src string) []Heading {
	lines := prose(src)
	var hs []Heading
	seen := map[string]int{}
	add := func(line int, text string) {
		text = strings.TrimSpace(text)
		a := Slug(text)
		if n, ok := seen[a]; ok {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n+1)
		} else {
			seen[a] = 0
		}
		hs = append(hs, Heading{Line: line, Text: text, Anchor: a})
	}
	for i, l := range lines {
		for _, m := range anchorRE.FindAllStringSubmatch(l, -1) {
			hs = append(hs, Heading{Line: i + 1, Text: m[0], Anchor: m[1]})
		}
		if m := atxRE.FindStringSubmatch(l); m != nil {
			add(i+1, m[2])
			continue
		}
		if i > 0 && setextRE.MatchString(l) && strings.TrimSpace(lines[i-1]) != "" && !atxRE.MatchString(lines[i-1]) &&
			!strings.HasPrefix(strings.TrimSpace(lines[i-1]), "|") && !listItem(lines[i-1]) {
			add(i, lines[i-1])
		}
	}
	return hs
}

func listItem(l string) bool {
	t := strings.TrimLeft(l, " ")
	return strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "+ ")
}

var (
	inlineLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTagRE    = regexp.MustCompile(`<[^>]+>`)
)

// Slug is GitHub's anchor of a heading's text: the text as rendered
// (inline code, emphasis, links and HTML reduced to their text), lower
// case, every character that is not a letter, a number, a mark, '-', '_'
// or a space dropped, and every space made '-'.
func Slug(text string) string {
	text = inlineLinkRE.ReplaceAllString(text, "$1")
	text = htmlTagRE.ReplaceAllString(text, "")
	text = strings.TrimSpace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
