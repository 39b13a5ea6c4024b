package bench

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

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

// Calibrate measures the machine now (about two to five seconds). Its
// buffers (about 640 MiB) are given back to the system afterwards and the
// process's peak resident set is reset, so that a benchmark that
// calibrates first reports its own peak, not the calibration's.
func Calibrate() (Calibration, error) { return calibrate(fullWork) }

// work is how much of each fixed workload a calibration does.
type work struct {
	sortN      int // keys sorted
	copyBytes  int // bytes of each copy buffer
	chaseN     int // entries of the chase table (4 bytes each)
	chaseSteps int // dependent reads timed
}

// fullWork is the calibration the benchmarks report: its figures are
// comparable only with figures of the same work.
var fullWork = work{sortN: 1 << 20, copyBytes: 256 << 20, chaseN: 1 << 25, chaseSteps: 1 << 22}

func calibrate(w work) (Calibration, error) {
	l, err := LoadAvg()
	if err != nil {
		return Calibration{}, err
	}
	c := Calibration{LoadAvg1m: l[0]}
	c.SortMs = seconds(best(5, func() time.Duration { return sortKeys(w.sortN) })) * 1e3
	c.CopyGBps = float64(w.copyBytes) / seconds(best(5, copier(w.copyBytes))) / 1e9
	c.RandomReadNs = seconds(best(3, chaser(w.chaseN, w.chaseSteps))) * 1e9 / float64(w.chaseSteps)
	debug.FreeOSMemory()
	if err := ResetPeakRSS(); err != nil {
		return c, fmt.Errorf("calibrate: %w", err)
	}
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

func sortKeys(sortN int) time.Duration {
	x := xorshift64(0x9E3779B97F4A7C15)
	keys := make([]uint64, sortN)
	for i := range keys {
		keys[i] = x.next()
	}
	start := time.Now()
	slices.Sort(keys)
	d := time.Since(start)
	if !slices.IsSorted(keys) {
		panic("bench: calibration sort did not sort")
	}
	return d
}

// copier returns one timed copy of a buffer into another, the buffers
// made (every page faulted in) before the first.
func copier(copyBytes int) func() time.Duration {
	src, dst := make([]byte, copyBytes), make([]byte, copyBytes)
	for i := 0; i < copyBytes; i += 4096 {
		src[i], dst[i] = byte(i>>12), 1
	}
	return func() time.Duration {
		start := time.Now()
		copy(dst, src)
		return time.Since(start)
	}
}

// chaser returns one timed walk of a single random cycle through a table
// (Sattolo's shuffle), each read's address the value of the read before
// it; the table is made before the first.
func chaser(chaseN, chaseSteps int) func() time.Duration {
	next := make([]uint32, chaseN)
	for i := range next {
		next[i] = uint32(i)
	}
	x := xorshift64(0xD1B54A32D192ED03)
	for i := chaseN - 1; i > 0; i-- {
		hi, _ := bits.Mul64(x.next(), uint64(i)) // uniform in [0, i)
		next[i], next[hi] = next[hi], next[i]
	}
	return func() time.Duration {
		p := uint32(0)
		start := time.Now()
		for range chaseSteps {
			p = next[p]
		}
		d := time.Since(start)
		if int(p) >= chaseN {
			panic("bench: calibration chase left the table")
		}
		return d
	}
}

// LoadAvg reads the load averages over 1, 5 and 15 minutes.
func LoadAvg() ([3]float64, error) {
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

// WithCalibration returns the JSON object result with c added as its
// first field, "calibration": a benchmark's result carries the state of
// the machine it ran on.
func WithCalibration(result []byte, c Calibration) ([]byte, error) {
	if len(result) < 2 || result[0] != '{' {
		return nil, fmt.Errorf("with calibration: the result is not a JSON object")
	}
	cj, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"calibration":`), cj...)
	if rest := result[1:]; len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, result[1:]...), nil
}
