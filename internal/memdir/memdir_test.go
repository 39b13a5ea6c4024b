package memdir

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountFS is the filesystem type of the mount point mnt as
// /proc/self/mounts lists it ("" when it is not a mount point).
func mountFS(t *testing.T, mnt string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Skipf("no /proc/self/mounts: %v", err)
	}
	defer f.Close()
	fs := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 3 && fields[1] == mnt {
			fs = fields[2] // the last mount on mnt is the one seen
		}
	}
	return fs
}

func TestTempDirOnTmpfs(t *testing.T) {
	if mountFS(t, "/dev/shm") != "tmpfs" {
		t.Skip("/dev/shm is not a tmpfs here")
	}
	t.Setenv(Env, "")
	var dir string
	t.Run("use", func(t *testing.T) {
		dir = TempDir(t)
		if filepath.Dir(dir) != "/dev/shm" {
			t.Fatalf("TempDir = %s, want a directory in /dev/shm", dir)
		}
		f, err := os.Create(filepath.Join(dir, "f"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("x"); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if other := TempDir(t); other == dir {
			t.Error("two calls returned the same directory")
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is left after the test: %v", dir, err)
	}
}

func TestTempDirFallsBack(t *testing.T) {
	// A root that is no tmpfs (a directory on the disk, or one that is
	// not there): TempDir is t.TempDir().
	disk := t.TempDir()
	for _, root := range []string{disk, filepath.Join(disk, "missing")} {
		if root == disk && mountFS(t, "/tmp") == "tmpfs" && strings.HasPrefix(disk, "/tmp/") {
			continue // the test's own temporary directory is on tmpfs here
		}
		t.Setenv(Env, root)
		dir := TempDir(t)
		if strings.HasPrefix(dir, root+string(filepath.Separator)) {
			t.Errorf("root %s: TempDir = %s, inside the root that is no tmpfs", root, dir)
		}
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			t.Errorf("root %s: TempDir = %s: %v", root, dir, err)
		}
	}
}
