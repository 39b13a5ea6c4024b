// Package bench holds what the benchmark commands share: the RMAT graph's
// flags and their checks, work directories, Kafka topics, reading a
// process's resident set from /proc, and the calibration of the machine
// that every benchmark's result carries.
package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is a reading of /proc/self/status, in bytes.
type Memory struct {
	RSS     int64 // VmRSS
	PeakRSS int64 // VmHWM: peak since start or since ResetPeakRSS
	Anon    int64 // RssAnon: heap, stacks, MemGraphs
	File    int64 // RssFile: mapped file pages (page cache, reclaimable)
}

// ReadMemory reads the current process's memory counters.
func ReadMemory() (Memory, error) { return readMemory("/proc/self/status") }

// ReadMemoryOf reads the memory counters of process pid.
func ReadMemoryOf(pid int) (Memory, error) { return readMemory(fmt.Sprintf("/proc/%d/status", pid)) }

func readMemory(path string) (Memory, error) {
	f, err := os.Open(path)
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

// PeakSampler samples the resident set every interval until Stop, and
// keeps the peaks of its anonymous and file-mapped parts, which the kernel
// does not track separately.
type PeakSampler struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	peak Memory // Protected by mu.
}

// StartPeakSampler starts sampling.
func StartPeakSampler(interval time.Duration) *PeakSampler {
	p := &PeakSampler{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			p.sample()
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *PeakSampler) sample() {
	m, err := ReadMemory()
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak.RSS = max(p.peak.RSS, m.RSS)
	p.peak.PeakRSS = max(p.peak.PeakRSS, m.PeakRSS)
	p.peak.Anon = max(p.peak.Anon, m.Anon)
	p.peak.File = max(p.peak.File, m.File)
}

// Stop ends sampling and returns the peaks seen.
func (p *PeakSampler) Stop() Memory {
	close(p.stop)
	p.wg.Wait()
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
