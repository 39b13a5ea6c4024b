package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/testref/makevar"
)

// brokersEnv names a running cluster to use instead of starting one.
const brokersEnv = "GRAPHTIDE_KAFKA_BROKERS"

// broker is the Kafka cluster every test talks to, started on first use
// (needBroker), so a run whose -run selects no Kafka test starts none.
var broker struct {
	once     sync.Once // starts the broker (startSharedBroker)
	addrs    []string
	own      bool   // started by this process (so TestBrokerRestart may restart it)
	script   string // absolute path of deploy/kafka/kafka.sh
	dir      string // the broker's data dir, when started by this process
	port     int    // its client port, when own
	reaper   *exec.Cmd
	startErr error  // why the broker is not available
	startOut string // the script's output when it failed
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(runChild(cfg))
	}
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// go test runs the binary in the package directory.
	if wd, err := os.Getwd(); err == nil {
		broker.script = filepath.Join(wd, "..", "..", "deploy", "kafka", "kafka.sh")
	}
	code := m.Run()
	for i := len(afterAll) - 1; i >= 0; i-- {
		afterAll[i]()
	}
	stopSharedBroker(code == 0)
	if binDir.path != "" {
		os.RemoveAll(binDir.path)
	}
	return code
}

// needBroker returns the bootstrap addresses of the shared broker,
// starting it on the first call, or fails the test (skips it under
// -short) when no broker is available. Every test (and benchmark) that
// talks to the shared broker calls it before anything else that does.
func needBroker(tb testing.TB) []string {
	tb.Helper()
	broker.once.Do(startSharedBroker)
	if broker.startErr != nil {
		if testing.Short() {
			tb.Skipf("no Kafka broker (-short): %v", broker.startErr)
		}
		tb.Fatalf("no Kafka broker: %v\n%s(the script's whole output is printed on stderr)", broker.startErr, lastLines(broker.startOut, 6))
	}
	return broker.addrs
}

// startSharedBroker uses the cluster named by GRAPHTIDE_KAFKA_BROKERS or
// starts one with the project's script on free loopback ports; it sets
// broker.addrs or broker.startErr. It runs once (broker.once).
func startSharedBroker() {
	if v := strings.TrimSpace(os.Getenv(brokersEnv)); v != "" {
		broker.addrs = strings.Split(v, ",")
		if err := waitReady(broker.addrs, 60*time.Second); err != nil {
			broker.startErr = fmt.Errorf("the cluster in %s=%s is not usable: %w", brokersEnv, v, err)
		}
		return
	}
	dir, err := os.MkdirTemp("", "graphtide-kafka-test-")
	if err != nil {
		broker.startErr = err
		return
	}
	broker.dir = dir
	// A watchdog outside this process stops the broker if this process
	// dies without cleaning up (a panic, the test timeout, SIGKILL).
	broker.reaper = startReaper(dir)

	t0 := time.Now()
	for attempt := 0; ; attempt++ {
		port, err := freePortPair()
		if err != nil {
			broker.startErr = err
			break
		}
		out, err := startBroker(port)
		if err == nil {
			broker.own, broker.port = true, port
			broker.addrs = []string{fmt.Sprintf("127.0.0.1:%d", port)}
			if err := waitReady(broker.addrs, 60*time.Second); err != nil {
				broker.startErr = fmt.Errorf("broker on port %d started but is not usable: %w\n%s", port, err, logTail(dir))
			}
			break
		}
		// Another process may have taken the ports between our probe and
		// the broker's bind: try other ports, a few times.
		if attempt < 2 && strings.Contains(string(out), "already in use") {
			continue
		}
		broker.startErr = fmt.Errorf("%s start --port %d --dir %s: %w", broker.script, port, dir, err)
		broker.startOut = string(out)
		// The script may leave a broker running (one that did not open
		// its port in time): stop it.
		_, _ = stopBroker()
		break
	}
	if broker.startErr != nil {
		fmt.Fprintf(os.Stderr, "kafka test: no broker: %v\n%s\n", broker.startErr, broker.startOut)
	} else {
		fmt.Fprintf(os.Stderr, "kafka test: broker %s ready in %v (dir %s)\n", broker.addrs[0], time.Since(t0).Round(time.Millisecond), dir)
	}
}

// stopSharedBroker stops the broker this process started, if any, and
// removes its directory when every test passed (keeps it otherwise, for
// its logs).
func stopSharedBroker(passed bool) {
	if broker.dir == "" {
		return // never started, or not ours
	}
	if broker.own {
		if out, err := stopBroker(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the Kafka broker: %v\n%s", err, out)
		}
	}
	if broker.reaper != nil {
		_ = broker.reaper.Process.Kill()
		_, _ = broker.reaper.Process.Wait()
	}
	if passed {
		os.RemoveAll(broker.dir)
	} else {
		fmt.Fprintf(os.Stderr, "kafka test: broker data and logs kept in %s\n", broker.dir)
	}
}

// freePortPair finds P such that 127.0.0.1:P and :P+1 are both free (the
// client and the KRaft controller port).
func freePortPair() (int, error) {
	// Below the kernel's ephemeral range: TestBrokerRestart binds the
	// ports again minutes later, and a port of that range may meanwhile be
	// the local port of any outgoing connection (it was, once: the restart
	// failed with "Address already in use").
	low := ephemeralLow()
	for i := 0; i < 200; i++ {
		p := 10000 + rand.IntN(low-10001)
		l1, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1))
		l1.Close()
		if err != nil {
			continue
		}
		l2.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free pair of adjacent loopback ports found between 10000 and %d", low)
}

// ephemeralLow is the lowest port the kernel gives outgoing connections
// (net.ipv4.ip_local_port_range), 32768 when it cannot be read or leaves
// too little below it.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				return n
			}
		}
	}
	return 32768
}

// startTimeoutEnv is kafka.sh's wait for the port of a broker it starts.
const startTimeoutEnv = "GRAPHTIDE_KAFKA_START_TIMEOUT"

// script runs kafka.sh with args and returns its stdout and stderr.
func script(timeout time.Duration, args ...string) (stdout string, combined []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, broker.script, args...)
	// A start waits for the broker's port as long as the caller waits,
	// less a margin, not the script's default minute: beside make test's
	// other parts (load 20 on 2 cores) a broker took a minute to open it.
	if os.Getenv(startTimeoutEnv) == "" {
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", startTimeoutEnv, max(60, int(timeout.Seconds())-15)))
	}
	var so, all bytes.Buffer
	var mu sync.Mutex // Stdout and Stderr are copied by two goroutines
	cmd.Stdout = &multi{&mu, &so, &all}
	cmd.Stderr = &multi{&mu, nil, &all}
	// The broker JVM runs in the background with its output in files, so
	// the script's pipes close when the script exits.
	err = cmd.Run()
	return so.String(), all.Bytes(), err
}

// multi writes to a (if not nil) and to all, under mu.
type multi struct {
	mu     *sync.Mutex
	a, all *bytes.Buffer
}

func (m *multi) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.a != nil {
		m.a.Write(p)
	}
	return m.all.Write(p)
}

// startBroker starts (or restarts) the broker on port in broker.dir. The
// first start may install the jars (about 40 s from Maven Central).
func startBroker(port int) ([]byte, error) {
	so, out, err := script(5*time.Minute, "start", "--port", strconv.Itoa(port), "--dir", broker.dir)
	if err != nil {
		return out, err
	}
	if want := fmt.Sprintf("127.0.0.1:%d", port); strings.TrimSpace(so) != want {
		return out, fmt.Errorf("start printed %q, want %q", strings.TrimSpace(so), want)
	}
	return out, nil
}

func stopBroker() ([]byte, error) {
	_, out, err := script(time.Minute, "stop", "--dir", broker.dir)
	return out, err
}

func logTail(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "logs", "server.log"))
	lines := strings.Split(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// startReaper starts `sh` in its own process group: it waits for this
// process to exit, then stops the broker (a no-op if already stopped).
func startReaper(dir string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", `while kill -0 "$0" 2>/dev/null; do sleep 1; done; exec "$1" stop --dir "$2" >/dev/null 2>&1`,
		strconv.Itoa(os.Getpid()), broker.script, dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "kafka test: no reaper for the broker: %v\n", err)
		return nil
	}
	return cmd
}

// waitReady waits until the cluster answers metadata requests and has a
// controller (so topics can be created).
func waitReady(addrs []string, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := adm.Metadata(ctx)
		cancel()
		if err == nil && len(md.Brokers) > 0 && md.Controller >= 0 {
			return nil
		}
		if err == nil {
			err = errors.New("no brokers or controller in metadata yet")
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 || lines[0] == "" {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestNoKafkaTestStartsNoBroker runs this test binary again with a -run
// that selects no test and checks that it starts no broker (it used to
// start one in TestMain, about a minute for nothing).
func TestNoKafkaTestStartsNoBroker(t *testing.T) {
	t.Parallel()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, brokersEnv+"=") && !strings.HasPrefix(kv, childEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -test.run=^$: %v\n%s", os.Args[0], err, out)
	}
	if strings.Contains(string(out), "kafka test:") || strings.Contains(string(out), "broker") {
		t.Errorf("a run without Kafka tests touched a broker:\n%s", out)
	}
}

// serialTests are the tests that run alone, before the parallel ones (go
// test starts a package's parallel tests once its serial ones are done):
// they stop the shared broker, delete what was created on it while they
// ran, or measure serve's memory against its budget (the Makefile's
// TEST_ALONE, which make test runs after everything else). Every other
// test calls t.Parallel first: the package's tests mostly wait on the
// broker and on child processes, and waiting side by side takes the
// package from about 7.5 minutes to a few on 2 cores.
var serialTests = map[string]string{
	"TestDocs":                               "deletes the topics and groups created on the shared broker while a page ran",
	"TestDocsForgetsStaticMembers":           "deletes the topics and groups created on the shared broker while it ran",
	"TestReadyFollowsBrokers":                "stops the shared broker",
	"TestBrokerRestart":                      "stops the shared broker",
	"TestCheckpointRestoreWaitsForTheBroker": "stops the shared broker",
	// Beside other serve processes its serve, starved of CPU, lets the Go
	// heap pass its soft limit (docs/guarantees.md): 309 MiB of 256 once.
	"TestServeStaysWithinItsBudget": "measures serve's peak memory, which needs the CPU the budget's plan assumes",
}

// TestEveryTestIsParallelOrSerial reads this package's test files: each
// test's first statement is t.Parallel(), or the test is one of
// serialTests, which all exist and which hold the Makefile's TEST_ALONE.
func TestEveryTestIsParallelOrSerial(t *testing.T) {
	t.Parallel()
	for _, name := range makevar.List(t, "../..", "TEST_ALONE") {
		if _, ok := serialTests[name]; !ok {
			t.Errorf("the Makefile's TEST_ALONE names %s, which serialTests does not: go test would run it beside the parallel tests", name)
		}
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			seen[fn.Name.Name] = true
			_, serial := serialTests[fn.Name.Name]
			if parallel := startsParallel(fn); parallel == serial {
				t.Errorf("%s: %s calls t.Parallel first: %v; listed in serialTests: %v (exactly one must hold)", fset.Position(fn.Pos()), fn.Name.Name, parallel, serial)
			}
		}
	}
	for name := range serialTests {
		if !seen[name] {
			t.Errorf("serialTests lists %s, which is no test of this package", name)
		}
	}
}

// startsParallel reports whether fn's first statement is t.Parallel().
func startsParallel(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	es, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Parallel"
}
