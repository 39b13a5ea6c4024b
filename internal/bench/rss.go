// Package bench holds what the benchmark commands share: reading this
// process's resident set from /proc.
package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a reading of /proc/self/status, in bytes.
type Memory struct {
	RSS     int64 // VmRSS
	PeakRSS int64 // VmHWM: peak since start or since ResetPeakRSS
	Anon    int64 // RssAnon: heap, stacks, MemGraphs
	File    int64 // RssFile: mapped file pages (page cache, reclaimable)
}

// ReadMemory reads the current process's memory counters.
func ReadMemory() (Memory, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return Memory{}, fmt.Errorf("read memory: %w", err)
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		n *= 1024
		switch k {
		case "VmRSS":
			m.RSS = n
		case "VmHWM":
			m.PeakRSS = n
		case "RssAnon":
			m.Anon = n
		case "RssFile":
			m.File = n
		}
	}
	return m, sc.Err()
}

// ResetPeakRSS sets VmHWM back to the current RSS (Linux clear_refs 5), so
// that a later PeakRSS measures one phase of a benchmark.
func ResetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
