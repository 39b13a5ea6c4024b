package makevar

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestList(t *testing.T) {
	dir := t.TempDir()
	mk := "A := ./x ./y\nRUN := ^(TestA|TestB)$$\nONE := ^TestC$$\nNOT_A := z\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"A": {"./x", "./y"}, "RUN": {"TestA", "TestB"}, "ONE": {"TestC"}} {
		if got := List(t, dir, name); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
