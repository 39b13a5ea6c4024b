package bench

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestStageOf(t *testing.T) {
	for _, c := range []struct {
		funcs []string
		want  string
	}{
		{[]string{"runtime.cgocall", "github.com/graphtide/graphtide/internal/core.(*Store).Apply", "github.com/graphtide/graphtide/internal/engine.(*Store).Apply", "github.com/graphtide/graphtide/internal/ingest.(*liveEnv).apply"}, "store_apply"},
		{[]string{"runtime._ExternalCode"}, "core_background"},
		{[]string{"github.com/graphtide/graphtide/internal/engine.(*Batch).InsertWeighted", "github.com/graphtide/graphtide/internal/ingest/bulk.Add", "github.com/graphtide/graphtide/internal/ingest/decode.(*binary).Decode"}, "batch_building"},
		{[]string{"encoding/binary.LittleEndian.Uint64", "github.com/graphtide/graphtide/internal/ingest/decode.(*binary).Decode", "github.com/graphtide/graphtide/internal/ingest.(*pollState).handleFetches"}, "decode"},
		{[]string{"github.com/twmb/franz-go/pkg/kgo.(*cursor).readFetch"}, "kafka_client"},
		{[]string{"runtime.mallocgc", "github.com/graphtide/graphtide/internal/ingest.(*pollState).dispatch"}, "ingest_loop"},
		{[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, "go_gc"},
		{[]string{"runtime.futex", "runtime.notesleep"}, OtherStage},
		{nil, OtherStage},
	} {
		if got := StageOf(c.funcs); got != c.want {
			t.Errorf("StageOf(%v) = %q, want %q", c.funcs, got, c.want)
		}
	}
}

// threadCPU is the CPU time of the calling thread so far.
func threadCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestStageProfile profiles a busy loop: its CPU time is found, as
// "other", and adds up to about what the loop spent. The loop runs until
// its thread has had 0.3 s of CPU, not for 0.3 s: on a loaded machine a
// loop may get a tenth of a core.
func TestStageProfile(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := StartStageProfile("")
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for c0 := threadCPU(t); threadCPU(t)-c0 < 300*time.Millisecond; {
		for i := range 100000 {
			x ^= i * i
		}
	}
	got, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if got[OtherStage] < 0.05 || got[OtherStage] > 2 {
		t.Errorf("a 0.3 s busy loop profiled as %v (loop result %d)", got, x)
	}
}
