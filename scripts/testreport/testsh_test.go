package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testSh runs scripts/test.sh (make test) in a copy of the scripts
// directory beside a Makefile of stand-in parts, and returns its output
// and exit status.
func testSh(t *testing.T, makefile string) (string, int) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../test.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "scripts", "test.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "test.sh"))
	cmd.Env = append(os.Environ(), "TEST_OUT="+filepath.Join(root, "out"), "GT_TEST_PARTS=")
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// concurrent are the parts test.sh runs at the same time; test-alone
// runs after them.
var concurrent = []string{"lint", "vet", "test-go", "test-kafka", "test-cpp"}

// parts is a Makefile whose six parts print two lines each, a moment
// apart (so that concurrent parts would interleave if not buffered), the
// concurrent ones leaving a file done-PART as they end; test-alone fails
// (exit 4) unless every concurrent part has ended; fail names the part
// that exits 3. Without one, test-cpp keeps a core busy (awk counts to
// 1e8: 2-5 s of CPU here, however loaded the machine is); the others
// sleep.
func parts(fail string) string {
	var b strings.Builder
	for _, p := range append(slices.Clone(concurrent), "test-alone") {
		b.WriteString(p + ":\n\t@echo " + p + "-first; sleep 0.3; echo " + p + "-second\n")
		if p == "test-cpp" && fail == "" {
			b.WriteString("\t@awk 'BEGIN { for (i = 0; i < 1e8; i++) s += i; print s > \"/dev/null\" }'\n")
		}
		if p == "test-alone" {
			for _, q := range concurrent {
				b.WriteString("\t@test -e done-" + q + " || { echo " + q + " has not ended; exit 4; }\n")
			}
		} else {
			b.WriteString("\t@touch done-" + p + "\n")
		}
		if p == fail {
			b.WriteString("\t@exit 3\n")
		}
	}
	return b.String()
}

func TestTestShRunsEveryPart(t *testing.T) {
	out, code := testSh(t, parts(""))
	if code != 0 {
		t.Fatalf("every part passed, exit status %d:\n%s", code, out)
	}
	for _, p := range append(slices.Clone(concurrent), "test-alone") {
		// Each part's output whole, between its header and its end line.
		block := regexp.MustCompile(`(?m)^=+ ` + p + `: ok in \d+ s\n` + p + `-first\n` + p + `-second\n=+ end of ` + p + `: ok$`)
		if !block.MatchString(out) {
			t.Errorf("no whole block for %s in:\n%s", p, out)
		}
		m := regexp.MustCompile(`(?m)^  ` + p + ` +ok +\d+ s +(\d+) s CPU$`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no wall time and CPU for %s in:\n%s", p, out)
			continue
		}
		// The CPU of what the part ran: test-cpp's count, and nothing
		// much in the parts that sleep.
		if cpu, _ := strconv.Atoi(m[1]); (p == "test-cpp") != (cpu >= 1) || cpu > 20 {
			t.Errorf("%s took %d s of CPU:\n%s", p, cpu, out)
		}
	}
	if m := regexp.MustCompile(`(?m)^  total +\d+ s +(\d+) s CPU$`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Errorf("no total CPU in:\n%s", out)
	}
	if !strings.HasSuffix(out, "make test: ok\n") {
		t.Errorf("output does not end in make test: ok:\n%s", out)
	}
}

func TestTestShFailsWhenAnyPartFails(t *testing.T) {
	for _, p := range []string{"lint", "test-kafka", "test-cpp", "test-alone"} {
		out, code := testSh(t, parts(p))
		if code == 0 {
			t.Errorf("%s failed, make test passed:\n%s", p, out)
		}
		if !strings.Contains(out, p+": FAILED (exit 2)") || !regexp.MustCompile(`(?m)^  `+p+` +FAILED`).MatchString(out) || !strings.Contains(out, "make test: FAILED") {
			t.Errorf("%s failed: the output does not say so:\n%s", p, out)
		}
		// The other parts still ran to their end.
		for _, q := range append(slices.Clone(concurrent), "test-alone") {
			if !strings.Contains(out, q+"-second") {
				t.Errorf("%s failed, %s did not finish:\n%s", p, q, out)
			}
		}
	}
}
