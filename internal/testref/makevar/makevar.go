// Package makevar reads the Makefile's lists of tests and packages, for
// the tests that keep a list there equal to what the code says (the
// tests of volume, the Kafka tests that run apart). It imports nothing of
// graphtide, so that any package's tests may use it.
package makevar

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// List is the Makefile variable name (defined as "name := value" in
// root's Makefile) as a list: its words, split at spaces and at "|",
// without the anchors and groups of a go test -run pattern ("^(A|B)$$"
// is A and B). It fails t when the Makefile does not define name.
func List(t testing.TB, root, name string) []string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatalf("the Makefile defines no %s", name)
	}
	return strings.FieldsFunc(string(m[1]), func(r rune) bool { return strings.ContainsRune(" |^$()", r) })
}
