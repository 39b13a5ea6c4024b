// Package sibling finds the project's other executables: graphtide runs
// graphtide-bench for `graphtide bench`, and the serve benchmark runs
// graphtide. It promises one rule for both: the executable of that name in
// the directory of the running one (where `make build` puts them side by
// side, in bin/), else the first on PATH, else an error that names both
// places and how to build it.
package sibling

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Path returns where the executable name is, by the package's rule.
func Path(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return find(self, name)
}

// find is Path for the running executable self.
func find(self, name string) (string, error) {
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	beside := filepath.Join(filepath.Dir(self), name)
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return beside, nil
	}
	onPath, err := exec.LookPath(name)
	if err == nil {
		return onPath, nil
	}
	if !errors.Is(err, exec.ErrNotFound) {
		return "", err
	}
	return "", fmt.Errorf("%s is neither beside this executable (%s) nor on PATH: `make build` builds it into bin/ with graphtide, or go build -o %s ./cmd/%s", name, beside, beside, name)
}
