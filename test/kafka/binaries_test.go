package kafkatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/graphtide/graphtide/internal/testref/volume"
)

// builtBinary is a binary the tests build once per test run, into binDir.
type builtBinary struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

var (
	binDir struct {
		once sync.Once
		path string // removed by run, after every test
		err  error
	}
	graphtideBin, benchBin, noRaceTestBin builtBinary
)

// build builds b once with the go command's arguments args, writing it to
// binDir/name (-o), and returns its path.
func (b *builtBinary) build(t testing.TB, name string, args ...string) string {
	t.Helper()
	binDir.once.Do(func() { binDir.path, binDir.err = os.MkdirTemp("", "graphtide-test-bin-") })
	if binDir.err != nil {
		t.Fatal(binDir.err)
	}
	b.once.Do(func() {
		b.path = filepath.Join(binDir.path, name)
		b.out, b.err = exec.Command("go", append([]string{args[0], "-o", b.path}, args[1:]...)...).CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go %v: %v\n%s", args, b.err, b.out)
	}
	return b.path
}

// graphtideBinary builds the graphtide command once per test run, for
// tests that run serve as its own process, with graphtide-bench beside it
// (what `graphtide bench` runs), as make build does.
func graphtideBinary(t testing.TB) string {
	benchBin.build(t, "graphtide-bench", "build", "github.com/graphtide/graphtide/cmd/graphtide-bench")
	return graphtideBin.build(t, "graphtide", "build", "github.com/graphtide/graphtide/cmd/graphtide")
}

// childBinary is the test binary a child process runs (startChild): this
// one, or with noRace, when this one runs under the race detector, this
// package's tests built once more without it. The two tests of volume
// among the crash tests (thousands of alerts, four analytics recomputed
// and checkpointed) set noRace: under the race detector their serve
// children took about 60 s of make test's CPU. The other tests keep their
// children under the race detector, on serve's and the ingester's paths
// against a real broker (crashes, restores, replicas, partitioned owners,
// alert failover, writes).
func childBinary(t testing.TB, noRace bool) string {
	if !noRace || !volume.Race {
		return os.Args[0]
	}
	return noRaceTestBin.build(t, "kafkatest.test", "test", "-c", "github.com/graphtide/graphtide/test/kafka")
}
