// Package report runs the benchmarks of `graphtide bench` with the commands
// docs/benchmarks.md states, keeps each one's JSON result under docs/bench/
// with the command, how long it took and the state of the machine just
// before it (load average and a calibration measured in the same run), and
// renders docs/benchmarks.md from those files.
//
// It promises that the page is a pure function of the JSON files: Render
// reads nothing else (no clock, no machine), so the committed page can be
// checked against the committed data by a test, and figures measured on
// different days can be compared through the calibration each one carries.
package report

import (
	"bufio"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Machine is what docs/bench/machine.json records of the machine a report
// ran on.
type Machine struct {
	CPUModel    string      `json:"cpu_model"`
	Cores       int         `json:"cores"`
	MemoryBytes int64       `json:"memory_bytes"`
	Kernel      string      `json:"kernel"`
	GoVersion   string      `json:"go_version"`
	LoadAvg     [3]float64  `json:"load_avg"` // 1, 5 and 15 minutes, when the report started
	Start       Calibration `json:"calibration"`
	// When is the start of the run (UTC). It is kept with the data and not
	// rendered: the page states results, git keeps their history.
	When string `json:"when"`
}

// Calibration is a measurement of the machine taken just before a
// benchmark, so that results from different runs can be compared: the
// same fixed work, timed the same way.
type Calibration struct {
	LoadAvg1m float64 `json:"load_avg_1m"`
	// SortMs is the best of 5 sorts, on one goroutine, of the same 2^20
	// pseudo-random uint64 keys: a fixed single-threaded CPU workload.
	SortMs float64 `json:"sort_ms"`
	// CopyGBps is the best of 5 copies of a 256 MiB buffer into another,
	// in bytes copied per second (10^9): memory bandwidth.
	CopyGBps float64 `json:"copy_gb_per_sec"`
	// RandomReadNs is the time of one read in a chain of dependent reads at
	// random over 128 MiB, best of 3: memory latency, TLB misses included.
	RandomReadNs float64 `json:"random_read_ns"`
}

// ReadMachine describes this machine from /proc and the Go runtime, with a
// calibration measured now.
func ReadMachine() (Machine, error) {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), When: time.Now().UTC().Format(time.RFC3339)}
	var err error
	if m.CPUModel, err = procField("/proc/cpuinfo", "model name"); err != nil {
		return m, err
	}
	mem, err := procField("/proc/meminfo", "MemTotal")
	if err != nil {
		return m, err
	}
	kb, err := strconv.ParseInt(strings.TrimSuffix(mem, " kB"), 10, 64)
	if err != nil {
		return m, fmt.Errorf("read machine: MemTotal %q: %w", mem, err)
	}
	m.MemoryBytes = kb * 1024
	osrelease, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return m, fmt.Errorf("read machine: %w", err)
	}
	m.Kernel = strings.TrimSpace(string(osrelease))
	if m.LoadAvg, err = loadAvg(); err != nil {
		return m, err
	}
	m.Start, err = Calibrate()
	return m, err
}

// procField returns the value of the first "key: value" line of a /proc
// file whose key is key.
func procField(path, key string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read machine: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read machine: %s: %w", path, err)
	}
	return "", fmt.Errorf("read machine: %s has no %q", path, key)
}

func loadAvg() ([3]float64, error) {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l, fmt.Errorf("read load average: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return l, fmt.Errorf("read load average: %q", b)
	}
	for i := range l {
		if l[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return l, fmt.Errorf("read load average: %w", err)
		}
	}
	return l, nil
}

// Calibrate measures the machine now (about two to five seconds).
func Calibrate() (Calibration, error) {
	l, err := loadAvg()
	if err != nil {
		return Calibration{}, err
	}
	c := Calibration{LoadAvg1m: l[0]}
	c.SortMs = seconds(best(5, sortKeys)) * 1e3
	c.CopyGBps = float64(copyBytes) / seconds(best(5, copyBuffer)) / 1e9
	c.RandomReadNs = seconds(best(3, chase)) * 1e9 / chaseSteps
	return c, nil
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// best runs f n times and returns the shortest duration f reports.
func best(n int, f func() time.Duration) time.Duration {
	b := time.Duration(1<<63 - 1)
	for range n {
		b = min(b, f())
	}
	return b
}

// xorshift64 is a fixed pseudo-random sequence: the calibration's work is
// the same in every run.
type xorshift64 uint64

func (x *xorshift64) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift64(v)
	return v
}

const sortN = 1 << 20

var sortInput = func() []uint64 {
	x := xorshift64(0x9E3779B97F4A7C15)
	keys := make([]uint64, sortN)
	for i := range keys {
		keys[i] = x.next()
	}
	return keys
}()

func sortKeys() time.Duration {
	keys := slices.Clone(sortInput)
	start := time.Now()
	slices.Sort(keys)
	d := time.Since(start)
	if !slices.IsSorted(keys) {
		panic("report: calibration sort did not sort")
	}
	return d
}

const copyBytes = 256 << 20

var copySrc, copyDst []byte

func copyBuffer() time.Duration {
	if copySrc == nil {
		copySrc, copyDst = make([]byte, copyBytes), make([]byte, copyBytes)
		for i := 0; i < copyBytes; i += 4096 { // fault every page in before timing
			copySrc[i], copyDst[i] = byte(i>>12), 1
		}
	}
	start := time.Now()
	copy(copyDst, copySrc)
	return time.Since(start)
}

const (
	chaseN     = 1 << 25 // uint32 entries: 128 MiB
	chaseSteps = 1 << 22
)

var chaseNext []uint32

// chase follows a single random cycle through chaseNext (Sattolo's
// shuffle), each read's address the value of the read before it.
func chase() time.Duration {
	if chaseNext == nil {
		chaseNext = make([]uint32, chaseN)
		for i := range chaseNext {
			chaseNext[i] = uint32(i)
		}
		x := xorshift64(0xD1B54A32D192ED03)
		for i := chaseN - 1; i > 0; i-- {
			hi, _ := bits.Mul64(x.next(), uint64(i)) // uniform in [0, i)
			chaseNext[i], chaseNext[hi] = chaseNext[hi], chaseNext[i]
		}
	}
	p := uint32(0)
	start := time.Now()
	for range chaseSteps {
		p = chaseNext[p]
	}
	d := time.Since(start)
	if p >= chaseN {
		panic("report: calibration chase left the table")
	}
	return d
}
