package ingest

import (
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Log lines of events that repeat in normal operation (a store stall, a
// dead letter, a fetch error while a broker restarts) are aggregated: at
// most one line per interval says how many there were, so that a busy
// ingest, a producer sending the wrong format or a broker's restart does
// not flood the log (a 26-second ingest logged 52 stall lines).

// logInterval is how often aggregated log lines are written.
const logInterval = 10 * time.Second

// stallLog aggregates the store's stalls (Apply waiting for a flush, with
// fetching paused) into one INFO line per interval: how many ended in it,
// how long they took together, the longest, and how long the one in
// progress (if any) has lasted. Nothing is logged for an interval without
// a stall.
type stallLog struct {
	log      *slog.Logger
	interval time.Duration

	mu sync.Mutex
	// The interval's stalls that ended: their number, total and longest
	// time; began is when the one in progress began (zero: none); timer
	// ends the interval (nil: none running, no stall since the last
	// line). Protected by mu.
	n              int
	total, longest time.Duration
	began          time.Time
	timer          *time.Timer
	closed         bool
}

func newStallLog(log *slog.Logger, interval time.Duration) *stallLog {
	return &stallLog{log: log, interval: interval}
}

// begin notes a stall that began at t0.
func (s *stallLog) begin(t0 time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.began = t0
	s.startLocked()
}

// end notes that the stall in progress ended after d.
func (s *stallLog) end(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.began = time.Time{}
	s.n++
	s.total += d
	s.longest = max(s.longest, d)
	s.startLocked()
}

// startLocked starts the interval's timer unless it runs. s.mu held.
func (s *stallLog) startLocked() {
	if s.timer == nil && !s.closed {
		s.timer = time.AfterFunc(s.interval, s.tick)
	}
}

// tick ends an interval: it logs the line, and keeps the timer running
// while a stall is in progress.
func (s *stallLog) tick() {
	s.mu.Lock()
	s.timer = nil
	s.flushLocked()
	if !s.began.IsZero() {
		s.startLocked()
	}
	s.mu.Unlock()
}

// flushLocked logs the line of what was noted since the last one and
// starts anew. s.mu held.
func (s *stallLog) flushLocked() {
	if s.n == 0 && s.began.IsZero() {
		return
	}
	attrs := []any{"times", s.n, "stalled", s.total.Round(time.Millisecond), "longest", s.longest.Round(time.Millisecond)}
	if !s.began.IsZero() {
		attrs = append(attrs, "in_progress_for", time.Since(s.began).Round(time.Millisecond))
	}
	s.log.Info("store stalls: both MemGraphs were full, fetching paused until a flush made room", append(attrs, "in_the_last", s.interval)...)
	s.n, s.total, s.longest = 0, 0, 0
}

// close logs what was noted since the last line (Run ends).
func (s *stallLog) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.flushLocked()
	s.closed = true
}

// repeats aggregates a log line that repeats per event: in each interval
// the first event of each key is logged in full by the caller (note
// returns true), the others are only counted, and at the interval's end
// one line per key with such events says how many (summary).
type repeats struct {
	interval time.Duration
	// summary logs that n more events of key happened in the interval.
	summary func(key string, n int, interval time.Duration)

	mu sync.Mutex
	// seen: the keys with an event in the interval, with the events not
	// logged in full; timer ends the interval (nil: none). Protected by mu.
	seen   map[string]int
	timer  *time.Timer
	closed bool
}

func newRepeats(interval time.Duration, summary func(key string, n int, interval time.Duration)) *repeats {
	return &repeats{interval: interval, summary: summary, seen: map[string]int{}}
}

// note records an event of key, and reports whether it is the first of
// its key in the interval (the caller then logs it in full).
func (r *repeats) note(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer == nil && !r.closed {
		r.timer = time.AfterFunc(r.interval, r.tick)
	}
	n, ok := r.seen[key]
	if !ok {
		r.seen[key] = 0
		return true
	}
	r.seen[key] = n + 1
	return false
}

func (r *repeats) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	r.flushLocked()
}

// flushLocked writes the summaries of the interval, in key order, and
// starts anew. r.mu held.
func (r *repeats) flushLocked() {
	keys := make([]string, 0, len(r.seen))
	for k, n := range r.seen {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.summary(k, r.seen[k], r.interval)
	}
	clear(r.seen)
}

// close writes the summaries of what was noted since the last ones.
func (r *repeats) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.flushLocked()
	r.closed = true
}

// setLogInterval makes the aggregated log lines of in (New: logInterval).
func (in *Ingester) setLogInterval(d time.Duration) {
	in.health.setLogInterval(in.cfg.Logger, d)
	in.dl.setLogInterval(in.cfg.Logger, d)
}

// closeLogs writes what the aggregated log lines hold (Run ends).
func (in *Ingester) closeLogs() {
	in.health.closeLogs()
	in.dl.deadLog.close()
}

// setLogInterval makes health's aggregated log lines: the store's
// stalls, fetch errors by topic and error.
func (h *health) setLogInterval(log *slog.Logger, d time.Duration) {
	h.stalls = newStallLog(log, d)
	h.fetchLog = newRepeats(d, func(key string, n int, d time.Duration) {
		topic, err, _ := strings.Cut(key, "\x00")
		log.Warn("fetch error repeated (retrying)", "topic", topic, "err", err, "times", n, "in_the_last", d)
	})
}

func (h *health) closeLogs() {
	h.stalls.close()
	h.fetchLog.close()
}

// setLogInterval makes the dead letters' aggregated log line: records
// dead-lettered by topic.
func (d *deadLetters) setLogInterval(log *slog.Logger, interval time.Duration) {
	d.deadLog = newRepeats(interval, func(topic string, n int, d time.Duration) {
		log.Warn("more records dead-lettered (each is in the dead-letter topic, the reason in its graphtide-error header)",
			"topic", topic, "records", n, "in_the_last", d)
	})
}
