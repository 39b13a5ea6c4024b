package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// fakePauser is the client's fetch pauses: the partitions paused, and
// the calls of the last command.
type fakePauser struct {
	paused partitionSet
	calls  []string
}

func (f *fakePauser) PauseFetchPartitions(ps map[string][]int32) map[string][]int32 {
	if ps != nil {
		f.calls = append(f.calls, "pause "+dash(setOf(ps).String()))
	}
	for t, xs := range ps {
		for _, p := range xs {
			f.paused.add(t, p)
		}
	}
	all := map[string][]int32{}
	for t, xs := range f.paused {
		for p, on := range xs {
			if on {
				all[t] = append(all[t], p)
			}
		}
	}
	return all
}

func (f *fakePauser) ResumeFetchPartitions(ps map[string][]int32) {
	f.calls = append(f.calls, "resume "+dash(setOf(ps).String()))
	for t, xs := range ps {
		for _, p := range xs {
			delete(f.paused[t], p)
		}
	}
}

// setOf is ps as a set.
func setOf(ps map[string][]int32) partitionSet {
	s := partitionSet{}
	for t, xs := range ps {
		for _, p := range xs {
			s.add(t, p)
		}
	}
	return s
}

var pauseReasons = map[string]uint8{"stall": pauseStall, "conflict": pauseConflict, "fatal": pauseFatal}

// TestPauses runs the scripts of testdata/pauses against the pauses part
// and a fake client. Commands (partitions as partitionSet.String writes
// them, "+" between topics):
//
//	assign partitions=<set>            the assigned partitions (what set pauses)
//	pause reason=<r> [extra=<set>]     stall, conflict or fatal; extra: being assigned
//	resume reason=<r>
//	hold-dead-letter partitions=<set>  | release-dead-letter | drop-dead-letter
//	hold-lost [assigning=<set>]        input: "topic/partition need=<n> start=<n> [new]" lines
//	drop-lost partitions=<set>
//
// Each prints the client calls it made, what the client has paused, the
// reasons that hold and the partitions held on their own.
func TestPauses(t *testing.T) {
	runScripts(t, "pauses", pausesScript)
}

// pausesScript runs one script of TestPauses.
func pausesScript() func(t *testing.T, d *datadriven.TestData) string {
	var s *pauses
	var f *fakePauser
	var assigned map[string][]int32
	return func(t *testing.T, d *datadriven.TestData) string {
		if s == nil || d.Cmd == "reset" {
			f = &fakePauser{paused: partitionSet{}}
			s, assigned = newPauses(f), nil
		}
		f.calls = nil
		parts := func(key string) map[string][]int32 { return parseAssignment(t, argString(t, d, key)) }
		switch d.Cmd {
		case "reset":
		case "assign":
			assigned = parts("partitions")
		case "pause", "resume":
			r, ok := pauseReasons[argString(t, d, "reason")]
			if !ok {
				t.Fatalf("unknown reason %q", argString(t, d, "reason"))
			}
			extra := parts("extra")
			s.set(r, d.Cmd == "pause", func() map[string][]int32 {
				ps := map[string][]int32{}
				for _, m := range []map[string][]int32{assigned, extra} {
					for t, xs := range m {
						ps[t] = append(ps[t], xs...)
					}
				}
				return ps
			})
		case "hold-dead-letter":
			var held []tp
			for t, xs := range parts("partitions") {
				for _, p := range xs {
					held = append(held, tp{t, p})
				}
			}
			s.holdDeadLetters(held)
		case "release-dead-letter":
			s.releaseDeadLetters(parts("partitions"), false)
		case "drop-dead-letter":
			s.releaseDeadLetters(parts("partitions"), true)
		case "hold-lost":
			changed := s.holdLost(parseLost(t, d.Input), parts("assigning"))
			f.calls = append(f.calls, fmt.Sprintf("(changed: %v)", changed))
		case "drop-lost":
			s.dropLost(parts("partitions"))
		default:
			t.Fatalf("unknown command %q", d.Cmd)
		}
		return showPauses(s, f)
	}
}

// parseLost reads "topic/partition need=<n> start=<n> [new]" lines.
func parseLost(t *testing.T, input string) []LostRecords {
	t.Helper()
	var lost []LostRecords
	for _, line := range strings.Split(input, "\n") {
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		topic, p, _ := strings.Cut(fs[0], "/")
		l := LostRecords{Topic: topic, Partition: int32(atoi(t, p))}
		for _, f := range fs[1:] {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "need":
				l.Need = atoi(t, v)
			case "start":
				l.LogStart = atoi(t, v)
			case "new":
				l.New = true
			}
		}
		lost = append(lost, l)
	}
	return lost
}

func showPauses(s *pauses, f *fakePauser) string {
	calls := strings.Join(f.calls, "; ")
	if calls == "" {
		calls = "none"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var reasons []string
	for _, name := range []string{"stall", "conflict", "fatal"} {
		if s.reasons&pauseReasons[name] != 0 {
			reasons = append(reasons, name)
		}
	}
	lost := []string{}
	for _, l := range s.lostRecordsLocked() {
		lost = append(lost, fmt.Sprintf("%s/%d@%d..%d", l.Topic, l.Partition, l.Need, l.LogStart))
	}
	return lines(kv("client", calls), kv("paused", dash(f.paused.String())), kv("reasons", dash(strings.Join(reasons, ","))),
		kv("held for dead letters", dash(s.deadLetter.String())), kv("held for lost records", dash(strings.Join(lost, " "))))
}
