package doctest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Pages returns the pages whose examples run, relative to root: README.md
// and every docs/*.md, sorted (README.md first). All of them run: there is
// no list of pages left out, only blocks skipped with a reason.
func Pages(root string) ([]string, error) {
	var pages []string
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		pages = append(pages, "README.md")
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(docs)
	for _, d := range docs {
		pages = append(pages, filepath.ToSlash(filepath.Join("docs", filepath.Base(d))))
	}
	return pages, nil
}

// PageName is the name of a page's subtest: README for README.md,
// the file name without .md for docs/NAME.md (docs-README for
// docs/README.md).
func PageName(page string) string {
	if page == "README.md" {
		return "README"
	}
	name := strings.TrimSuffix(filepath.Base(page), ".md")
	if name == "README" {
		return "docs-README"
	}
	return name
}
