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
// MissingFields names the fields the page reads that a result lacks: each
// benchmark's tests check a real run's result with it, so a field renamed
// in a benchmark and not in the page (which would read it as zero) fails
// there.
package report

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/bench"
)

// Machine is what docs/bench/machine.json records of the machine a report
// ran on.
type Machine struct {
	CPUModel    string            `json:"cpu_model"`
	Cores       int               `json:"cores"`
	MemoryBytes int64             `json:"memory_bytes"`
	Kernel      string            `json:"kernel"`
	GoVersion   string            `json:"go_version"`
	LoadAvg     [3]float64        `json:"load_avg"` // 1, 5 and 15 minutes, when the report started
	Start       bench.Calibration `json:"calibration"`
	// When is the start of the run (UTC). It is kept with the data and not
	// rendered: the page states results, git keeps their history.
	When string `json:"when"`
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
	if m.LoadAvg, err = bench.LoadAvg(); err != nil {
		return m, err
	}
	m.Start, err = bench.Calibrate()
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
