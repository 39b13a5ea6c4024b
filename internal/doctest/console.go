package doctest

import (
	"fmt"
	"strings"
)

// Command is one command of a console transcript.
type Command struct {
	Line       int      // 1-based line of the page where the command starts
	Text       string   // the command, its continuation lines joined by "\n"
	Expected   []string // the expected output lines
	Background bool     // the command ends with '&': its output is not checked
}

// ParseConsole splits the lines of a console block (whose first line is
// line first of the page) into commands: a line starting with "$ " is a
// command, continued onto the next line while it ends with a backslash;
// every other line is the expected output of the command above it. Output
// before the first command, and output under a background command (one
// ending in '&'), are errors.
func ParseConsole(lines []string, first int) ([]Command, error) {
	var cmds []Command
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "$ ") || l == "$" {
			c := Command{Line: first + i, Text: strings.TrimPrefix(strings.TrimPrefix(l, "$"), " ")}
			for strings.HasSuffix(strings.TrimRight(lines[i], " \t"), `\`) && i+1 < len(lines) {
				i++
				c.Text += "\n" + lines[i]
			}
			t := strings.TrimRight(c.Text, " \t")
			c.Background = strings.HasSuffix(t, "&") && !strings.HasSuffix(t, "&&")
			cmds = append(cmds, c)
			continue
		}
		if len(cmds) == 0 {
			if strings.TrimSpace(l) == "" {
				continue
			}
			return nil, fmt.Errorf("line %d: output before the first command of a console block (commands start with \"$ \")", first+i)
		}
		c := &cmds[len(cmds)-1]
		if c.Background {
			return nil, fmt.Errorf("line %d: output under a background command (line %d ends with &) cannot be checked", first+i, c.Line)
		}
		c.Expected = append(c.Expected, l)
	}
	// Trailing blank lines of a command's output are not part of it.
	for i := range cmds {
		e := cmds[i].Expected
		for len(e) > 0 && strings.TrimSpace(e[len(e)-1]) == "" {
			e = e[:len(e)-1]
		}
		cmds[i].Expected = e
	}
	return cmds, nil
}

// Ellipsis is the line of expected output that matches any number of
// lines; Wildcard, within a line, matches any text of that line.
const (
	Ellipsis = "..."
	Wildcard = "…"
)

// Match reports whether got (a command's output) matches the expected
// lines: line by line, trailing spaces ignored, where a line "..." matches
// any number of lines (none included) and "…" within a line any text of
// that line. A final newline of got is not a line of its own.
func Match(expected []string, got string) bool {
	g := outputLines(got)
	e := make([]string, len(expected))
	for i, l := range expected {
		e[i] = strings.TrimRight(l, " \t")
	}
	// memo[i][j]: whether e[i:] matches g[j:]; 0 unknown, 1 yes, 2 no.
	memo := make([][]byte, len(e)+1)
	for i := range memo {
		memo[i] = make([]byte, len(g)+1)
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(e) {
			return j == len(g)
		}
		if memo[i][j] != 0 {
			return memo[i][j] == 1
		}
		var ok bool
		if e[i] == Ellipsis {
			ok = match(i+1, j) || (j < len(g) && match(i, j+1))
		} else {
			ok = j < len(g) && MatchLine(e[i], g[j]) && match(i+1, j+1)
		}
		memo[i][j] = 2
		if ok {
			memo[i][j] = 1
		}
		return ok
	}
	return match(0, 0)
}

// outputLines splits a command's output into lines, trailing spaces
// removed, without the empty line after a final newline.
func outputLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if s == "" {
		return nil
	}
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRight(l, " \t")
	}
	return ls
}

// MatchLine reports whether the line got matches the pattern want, in
// which each "…" matches any text (of one line).
func MatchLine(want, got string) bool {
	parts := strings.Split(want, Wildcard)
	if len(parts) == 1 {
		return want == got
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(got) < len(first)+len(last) || !strings.HasPrefix(got, first) || !strings.HasSuffix(got, last) {
		return false
	}
	// The middle parts, leftmost first, in what is between the anchored
	// prefix and suffix: with only "match anything" wildcards, taking the
	// leftmost occurrence of each never loses a match.
	rest := got[len(first) : len(got)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		k := strings.Index(rest, p)
		if k < 0 {
			return false
		}
		rest = rest[k+len(p):]
	}
	return true
}
