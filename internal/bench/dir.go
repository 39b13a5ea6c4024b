package bench

import (
	"fmt"
	"os"
)

// PrepareDir makes dir, which must not exist or be empty: a benchmark
// measures a fresh store.
func PrepareDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("a benchmark directory is required")
	}
	ents, err := os.ReadDir(dir)
	if err == nil && len(ents) > 0 {
		return fmt.Errorf("benchmark directory %s is not empty: the benchmark needs a fresh store", dir)
	}
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

// WorkDir returns the directory a benchmark works in: dir, prepared by
// PrepareDir, or when dir is "" a new temporary directory named after the
// benchmark. cleanup removes a temporary directory, never a given one.
func WorkDir(dir, name string) (path string, cleanup func(), err error) {
	if dir != "" {
		return dir, func() {}, PrepareDir(dir)
	}
	tmp, err := os.MkdirTemp("", "graphtide-bench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}
