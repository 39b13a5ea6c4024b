package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// lineLog is a slog.Handler that keeps "LEVEL message" lines, messages cut
// at 110 bytes (the scripts read the start of what is said).
type lineLog struct{ lines *[]string }

func (h lineLog) Enabled(context.Context, slog.Level) bool { return true }
func (h lineLog) Handle(_ context.Context, r slog.Record) error {
	*h.lines = append(*h.lines, r.Level.String()+" "+cut(r.Message, 110))
	return nil
}
func (h lineLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h lineLog) WithGroup(string) slog.Handler      { return h }

// cut is s cut to n bytes, "..." marking a cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// fakeTimers are the assignment's clock and timers: a timer fires when
// tick moves the clock to its time.
type fakeTimers struct {
	now time.Time
	due []fakeTimer
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func (c *fakeTimers) afterFunc(d time.Duration, f func()) {
	c.due = append(c.due, fakeTimer{c.now.Add(d), f})
}

// tick moves the clock on by d, firing the timers due by then in order.
func (c *fakeTimers) tick(d time.Duration) int {
	c.now = c.now.Add(d)
	sort.SliceStable(c.due, func(i, j int) bool { return c.due[i].at.Before(c.due[j].at) })
	n := 0
	for len(c.due) > 0 && !c.due[0].at.After(c.now) {
		f := c.due[0].f
		c.due = c.due[1:]
		f()
		n++
	}
	return n
}

// assignmentRun is the state of one script of TestAssignment.
type assignmentRun struct {
	a      *assignment
	clock  *fakeTimers
	logs   []string
	counts map[string]int32
}

// TestAssignment runs the scripts of testdata/assignment against the
// assignment part alone, with a fake clock and timers. Commands
// (partitions as partitionSet.String writes them, "+" between topics):
//
//	new topics=<t,t> [grace=<d>] [reset-source]   consumer group "g"
//	counts <topic>=<n> ...        the partition counts the brokers report
//	history partitions=<set>      the store's recorded partitions
//	assign partitions=<set>       the group adds partitions (onAssigned)
//	start partition=t/p offset=<n> [committed]   where one without history starts (adjustOffsets)
//	evaluate                      the assignment is judged
//	revoke partitions=<set> | lose partitions=<set>
//	tick d=<duration>             the clock moves on; due timers fire
//	checking [clear] | fatal
//	ready | show
//
// Every command but ready and show prints what it returned, the log
// lines it wrote, the source-conflict metrics, and the timers pending.
func TestAssignment(t *testing.T) {
	runScripts(t, "assignment", func() func(*testing.T, *datadriven.TestData) string {
		r := &assignmentRun{}
		return r.do
	})
}

func (r *assignmentRun) do(t *testing.T, d *datadriven.TestData) string {
	parts := func() map[string][]int32 { return parseAssignment(t, argString(t, d, "partitions")) }
	var out []string
	switch d.Cmd {
	case "new":
		r.start(t, d)
	case "counts":
		for _, a := range d.CmdArgs {
			r.counts[a.Key] = int32(atoi(t, a.Vals[0]))
		}
	case "history":
		p := Position{}
		for topic, ps := range parts() {
			for _, q := range ps {
				p.Set(topic, q, 0)
			}
		}
		r.a.takeHistory(p)
	case "assign":
		r.a.assign(parts())
	case "start":
		topic, p := argPartition(t, d, "partition")
		var off int64
		d.ScanArgs(t, "offset", &off)
		r.a.noteStart(topic, p, off, d.HasArg("committed"))
	case "evaluate":
		v := r.a.evaluate(r.counts)
		out = append(out, kv("accept", v.accept), kv("taken", show(v.taken)))
	case "revoke":
		r.a.revoke(parts())
	case "lose":
		r.a.noteLost(parts())
		r.a.revoke(parts())
	case "tick":
		var dur time.Duration
		d.ScanArgs(t, "d", &dur)
		out = append(out, kv("timers fired", r.clock.tick(dur)))
	case "checking":
		var err error
		if !d.HasArg("clear") {
			err = errors.New("reading the Kafka cluster ID and topic IDs: connection refused")
		}
		r.a.setChecking(err)
	case "fatal":
		out = append(out, kv("noted", r.a.setFatal(errors.New("the Kafka source changed while ingesting"), false)))
	case "ready":
		if err := r.a.ready(); err != nil {
			return cut(err.Error(), 150)
		}
		return "ready"
	case "show":
		return r.show()
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return r.report(out)
}

func (r *assignmentRun) start(t *testing.T, d *datadriven.TestData) {
	grace := 300 * time.Millisecond
	if d.HasArg("grace") {
		d.ScanArgs(t, "grace", &grace)
	}
	r.clock = &fakeTimers{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.counts, r.logs = map[string]int32{}, nil
	cfg := Config{Group: "g", Topics: strings.Split(argString(t, d, "topics"), ","), ReadyGrace: grace,
		ResetSourcePosition: d.HasArg("reset-source"), Logger: slog.New(lineLog{&r.logs}), Metrics: NewMetrics(nil)}
	r.a = newAssignment(&cfg)
	r.a.now = func() time.Time { return r.clock.now }
	r.a.afterFunc = r.clock.afterFunc
}

// report is out, then the log lines since the last, the metrics and the
// timers pending.
func (r *assignmentRun) report(out []string) string {
	for _, l := range r.logs {
		out = append(out, "log: "+l)
	}
	r.logs = nil
	m := r.a.metrics
	out = append(out, fmt.Sprintf("conflicts: %v, gauge %v, timers pending %d",
		testutil.ToFloat64(m.SourceConflicts), testutil.ToFloat64(m.SourceConflict), len(r.clock.due)))
	return lines(out...)
}

func (r *assignmentRun) show() string {
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	assigned := partitionSet{}
	for t, ps := range a.assigned {
		for _, p := range ps {
			assigned.add(t, p)
		}
	}
	return lines(kv("assigned", dash(assigned.String())), kv("history", dash(a.history.String())),
		kv("starts", show(a.starts)), kv("committed", dash(a.committed.String())), kv("lost", dash(a.lost.String())),
		kv("commit asked", a.commitAssigned.Load()))
}
