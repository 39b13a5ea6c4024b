// Package doctest checks the documentation against the repository: it runs
// the shell examples of README.md and docs/*.md, checks their transcripts'
// output, checks that every `go` block of a page is code of an example
// file (Example functions and what they use), and that every link of a Markdown file resolves to a file of
// the repository and every #anchor to a heading of it.
//
// The convention it implements is described for contributors in
// docs/doctest.md:
//
//   - a fenced block whose info string is `sh` is run by bash (set -euo
//     pipefail), the blocks of a page in order, as one script per page,
//     from a fresh working directory where bin/graphtide, deploy/ and
//     scripts/ are reachable;
//   - a `console` block is a transcript: "$ " lines are commands (a
//     trailing backslash continues one), the other lines the expected
//     output (stdout and stderr together), where a line "..." matches any
//     number of lines and "…" within a line any text of that line;
//   - a `yaml file=NAME` (json, text) block is written to NAME before the
//     page's later blocks run;
//   - `<!-- doctest: skip -- reason -->` on the line before a block skips
//     it;
//   - the fixed addresses of the docs (127.0.0.1:PORT, --port PORT) are
//     mapped to free ports, the tour broker's 127.0.0.1:19092 to a shared
//     broker, and /tmp/ to a directory of the page's own (Mapping).
//
// What it promises: a page fails with its path, the line of the block or
// command at fault, the command, and what was expected and what came; a
// page runs in its own directory and ports, and what it left running is
// stopped before RunPage returns.
//
// It is a test tool: production code must not import it (archtest).
package doctest
