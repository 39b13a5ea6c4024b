package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// A CPU profile of a phase, with its samples attributed to the stages of
// the ingest path by the functions on their stacks: where every CPU
// second of a benchmark went.
//
// The Go runtime profiles every thread of the process: Go code, C++ code
// called through cgo (the sample's stack is the Go stack that called it,
// so Apply's C++ time counts as the store's Apply), and threads the C++
// core started itself (flushes and compactions), whose samples carry no
// Go stack and are recorded as runtime._ExternalCode.

// Stages name the parts of the ingest path, in the order a sample is
// matched: the first stage any of whose prefixes starts a function on the
// sample's stack takes the sample.
var Stages = []struct {
	Name     string
	Prefixes []string
}{
	{"store_apply", []string{"github.com/graphtide/graphtide/internal/engine.(*Store).Apply"}},
	{"store_flush_wait", []string{"github.com/graphtide/graphtide/internal/engine.(*Store).Flush"}},
	{"core_background", []string{"runtime._ExternalCode"}},
	{"batch_building", []string{"github.com/graphtide/graphtide/internal/ingest/bulk.", "github.com/graphtide/graphtide/internal/engine.(*Batch)."}},
	{"decode", []string{"github.com/graphtide/graphtide/internal/ingest/decode."}},
	{"kafka_client", []string{"github.com/twmb/franz-go/"}},
	{"ingest_loop", []string{"github.com/graphtide/graphtide/internal/ingest."}},
	{"go_gc", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcDrain", "runtime.gcAssistAlloc"}},
}

// OtherStage takes the samples no stage matches.
const OtherStage = "other"

// StageOf returns the stage of a sample whose stack holds funcs (leaf
// first).
func StageOf(funcs []string) string {
	for _, st := range Stages {
		for _, f := range funcs {
			for _, p := range st.Prefixes {
				if strings.HasPrefix(f, p) {
					return st.Name
				}
			}
		}
	}
	return OtherStage
}

// StageProfile is a running CPU profile (see StartStageProfile).
type StageProfile struct {
	buf  bytes.Buffer
	copy string
}

// StartStageProfile starts the process's CPU profile; copyTo, if not
// empty, also receives the raw profile when it stops. Only one profile
// runs at a time in a process.
func StartStageProfile(copyTo string) (*StageProfile, error) {
	p := &StageProfile{copy: copyTo}
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		return nil, err
	}
	return p, nil
}

// Stop ends the profile and returns the CPU seconds of each stage that has
// samples.
func (p *StageProfile) Stop() (map[string]float64, error) {
	pprof.StopCPUProfile()
	if p.copy != "" {
		if err := os.WriteFile(p.copy, p.buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	prof, err := profile.Parse(&p.buf)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	idx := -1
	for i, st := range prof.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("cpu profile: no cpu/nanoseconds sample type in %v", prof.SampleType)
	}
	out := map[string]float64{}
	var funcs []string
	for _, s := range prof.Sample {
		funcs = funcs[:0]
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil {
					funcs = append(funcs, l.Function.Name)
				}
			}
		}
		out[StageOf(funcs)] += float64(s.Value[idx]) / 1e9
	}
	return out, nil
}

// FormatStages lists the stages' CPU seconds, largest first.
func FormatStages(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return m[names[i]] > m[names[j]] })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, m[n])
	}
	return strings.Join(parts, ", ")
}
