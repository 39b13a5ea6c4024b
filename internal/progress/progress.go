// Package progress draws the progress of the long-running commands (load,
// produce, gen) on stderr: a bar redrawn in place on a terminal, a plain
// line every interval otherwise. It never fails the command it reports on:
// write errors are ignored.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Every is how often produce and gen print a plain progress line (load
// prints one every 5 s too).
const Every = 5 * time.Second

// IsTerminal reports whether w is a character device (a terminal, most
// likely), where progress is drawn as a bar.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Bar reports a command's progress: done of total (in doneUnit, e.g.
// bytes of input; with no doneUnit done counts units too) and a count of
// units (edges, records) with its rate.
type Bar struct {
	w           io.Writer
	tty         bool
	label       string // the command: "load"
	unit        string // what count counts: "edges"
	doneUnit    string // what done and total count: "bytes"; "": units
	total       int64  // 0: unknown (with a doneUnit: nothing to read)
	every       time.Duration
	start, last time.Time
	now         func() time.Time // tests set it
	finished    bool
}

// New reports label's progress (see Bar) on w, drawn as a bar when tty is
// set, else as a plain line every interval.
func New(w io.Writer, tty bool, label, unit, doneUnit string, total int64, every time.Duration, start time.Time) *Bar {
	if tty && every > 200*time.Millisecond {
		every = 200 * time.Millisecond
	}
	return &Bar{w: w, tty: tty, label: label, unit: unit, doneUnit: doneUnit, total: total,
		every: every, start: start, last: start, now: time.Now}
}

// Update reports done and count, printing if an interval has passed.
func (p *Bar) Update(done, count int64) {
	if now := p.now(); now.Sub(p.last) >= p.every {
		p.last = now
		p.print(done, count)
	}
}

// Finish draws the final state and ends the bar's line, once.
func (p *Bar) Finish(done, count int64) {
	if p.tty && !p.finished {
		p.finished = true
		p.print(done, count)
		fmt.Fprintln(p.w)
	}
}

// Follow updates p from done and count every interval (p.every) on a
// goroutine of its own, for commands whose work does not pass by a
// place that could call Update (waiting for brokers, rate limiting).
// stop ends it and draws the final state.
func (p *Bar) Follow(done, count func() int64) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(min(p.every, 200*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				p.Update(done(), count())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
			p.Finish(done(), count())
		})
	}
}

func (p *Bar) print(done, count int64) {
	secs := p.now().Sub(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(count) / secs
	}
	known := p.doneUnit != "" || p.total > 0
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(done)/float64(p.total), 1)
	}
	if !p.tty {
		switch {
		case p.doneUnit != "":
			fmt.Fprintf(p.w, "%s: %3.0f%% (%d of %d %s), %d %s, %.0f %s/s\n", p.label, 100*frac, done, p.total, p.doneUnit, count, p.unit, rate, p.unit)
		case known:
			fmt.Fprintf(p.w, "%s: %3.0f%% (%d of %d %s), %.0f %s/s\n", p.label, 100*frac, count, p.total, p.unit, rate, p.unit)
		default:
			fmt.Fprintf(p.w, "%s: %d %s, %.0f %s/s\n", p.label, count, p.unit, rate, p.unit)
		}
		return
	}
	if !known {
		fmt.Fprintf(p.w, "\r%s: %d %s  %.2fM %s/s ", p.label, count, p.unit, rate/1e6, p.unit)
		return
	}
	const width = 30
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %d %s  %.2fM %s/s ", strings.Repeat("#", n), strings.Repeat(".", width-n), 100*frac, count, p.unit, rate/1e6, p.unit)
}
