package testref

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestVolumePackagesRunWithoutRace: every package whose tests call Volume
// is in the Makefile's GO_TEST_VOLUME, which make test runs without the
// race detector, and GO_TEST_VOLUME lists no other package: a test of
// volume skipped under the race detector always runs somewhere.
func TestVolumePackagesRunWithoutRace(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GO_TEST_VOLUME := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile defines no GO_TEST_VOLUME")
	}
	var listed []string
	for _, p := range strings.Fields(string(m[1])) {
		listed = append(listed, strings.TrimPrefix(p, "./"))
	}
	var calling []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if dir = filepath.ToSlash(dir); dir == "internal/testref" {
			return nil // this test names Volume
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "testref.Volume(") {
			calling = append(calling, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(calling)
	calling = slices.Compact(calling)
	if len(calling) == 0 {
		t.Fatal("no test calls testref.Volume: the walk found no test files?")
	}
	if !slices.Equal(listed, calling) {
		t.Errorf("GO_TEST_VOLUME lists %v; the packages whose tests call testref.Volume are %v", listed, calling)
	}
}
