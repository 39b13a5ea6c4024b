// Package payments_test runs the Python tests of scripts/payments (the
// payments generator, gen_payments.py, and the fraud monitors' reference,
// reference.py) as part of the Go suite, so that make test runs them.
package payments_test

import (
	"os"
	"os/exec"
	"testing"
)

// TestPaymentsScripts runs python3 -m unittest over this directory: the
// reference against streams whose alerts were worked out by hand, and the
// generator's planted patterns against their descriptions and the
// reference. scripts/deps.sh's test group installs python3.
func TestPaymentsScripts(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not installed: scripts/deps.sh test installs it")
	}
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", ".", "-p", "test_*.py")
	// No __pycache__ left in the source tree.
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
