// Package memdir gives tests a temporary directory on a memory-backed
// filesystem (tmpfs), where fsync returns as soon as the data is in the
// page cache instead of waiting for the disk.
//
// It is for tests that sync thousands of times to check something other
// than durability (every damage of a file, every entry of a dictionary):
// the code under test runs exactly as in production, every fsync
// included; only the filesystem below is a faster one. Tests of what a
// crash leaves use t.TempDir() (or their own crash model), not this.
//
// What it promises: TempDir returns a new, empty directory that is
// removed when the test ends. It is on tmpfs when one is there
// ($GRAPHTIDE_TEST_MEMDIR, else /dev/shm) with room to spare; otherwise it
// is t.TempDir(), so a test is never skipped for the want of tmpfs, only
// slower. Only tests import this package (internal/archtest checks).
package memdir

import (
	"os"
	"testing"
)

// Env names the tmpfs directory to make test directories in (default
// /dev/shm).
const Env = "GRAPHTIDE_TEST_MEMDIR"

// minFree is the room the tmpfs must have left for TempDir to use it.
const minFree = 512 << 20

// TempDir returns a new directory for the test, on tmpfs when there is
// one, removed (with what it holds) when the test and its subtests end.
func TempDir(tb testing.TB) string {
	tb.Helper()
	root := os.Getenv(Env)
	if root == "" {
		root = "/dev/shm"
	}
	if !isTmpfs(root, minFree) {
		return tb.TempDir()
	}
	dir, err := os.MkdirTemp(root, "graphtide-test-")
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			tb.Errorf("memdir: removing %s: %v", dir, err)
		}
	})
	return dir
}
