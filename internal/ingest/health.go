package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Health: what Ready reports besides the assignment (ingester_source.go).
//
//   - brokers: a franz-go hook notes every successful read from a broker
//     (fetches, heartbeats, metadata, the lag timer's requests: a working
//     consumer hears from a broker every few seconds). No answer for
//     longer than ReadyGrace: not ready, with the last connection error;
//     but while a JoinGroup request written since the last answer is
//     pending (the coordinator holds it until the group rebalances: up to
//     a dead member's session timeout), for up to joinWait, not ready as
//     waiting for the rebalance.
//   - lost partitions (onLost: the group moved on without this member)
//     until the next assignment.
//   - dead letters that cannot be written (deadletter.go).
//   - a store stall (Apply blocked, both MemGraphs full) longer than
//     ReadyGrace.
//   - with ReadyMaxLag, assigned partitions more records behind the
//     brokers' end offsets than it, together.
//
// Lag is computed from the brokers' end offsets (kadm ListEndOffsets) for
// the assigned partitions every LagInterval and after each assignment,
// against the position applied to the store; it is also refreshed from the
// high watermarks of the records fetched.

// health is the health part of the Ingester: what the broker hooks
// record, when the store's Apply began to stall, the newest end offset of
// each assigned partition, and the aggregated log lines of stalls and
// fetch errors. It says what is wrong besides the assignment (reasons);
// what it needs of the other parts (the partitions lost and assigned, the
// dead letters' reasons, where each partition's lag counts from) the
// Ingester hands it.
type health struct {
	group   string
	brokers []string
	grace   time.Duration
	maxLag  int64                // Config.ReadyMaxLag (0: none)
	lag     *prometheus.GaugeVec // Metrics.Lag

	lastAnswer atomic.Int64 // unix nanoseconds of the last successful read from a broker
	joinSent   atomic.Int64 // unix nanoseconds of the last JoinGroup request written
	errMu      sync.Mutex
	lastErr    error // the last connection or read error; Protected by errMu.
	// stallSince is when the Apply that stalls began (unix ns, 0: none).
	stallSince atomic.Int64
	// lagNow wakes the lag loop (an assignment).
	lagNow chan struct{}
	// The aggregated log lines (logsummary.go): the store's stalls, fetch
	// errors by topic and error.
	stalls   *stallLog
	fetchLog *repeats

	mu sync.Mutex
	// ends is the newest end offset known of each assigned partition, from
	// the lag loop or a fetch's high watermark. Protected by mu.
	// INVARIANT: a partition leaves ends, and its lag series goes, when it
	// goes to another member (forget); none is added for a partition not
	// assigned (the assigned function is asked under mu).
	ends map[tp]int64
}

func newHealth(c *Config) *health {
	h := &health{group: c.Group, brokers: c.Brokers, grace: c.ReadyGrace, maxLag: c.ReadyMaxLag, lag: c.Metrics.Lag,
		lagNow: make(chan struct{}, 1), ends: map[tp]int64{}}
	h.lastAnswer.Store(time.Now().UnixNano())
	return h
}

// OnBrokerRead implements kgo.HookBrokerRead.
func (h *health) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.lastAnswer.Store(time.Now().UnixNano())
		return
	}
	h.noteErr(err)
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (h *health) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == joinGroupKey {
		h.joinSent.Store(time.Now().UnixNano())
	}
}

// joinGroupKey is the JoinGroup request's API key.
var joinGroupKey = kmsg.NewPtrJoinGroupRequest().Key()

// joinWait is how long a pending JoinGroup may go unanswered before the
// silence counts against the brokers: franz-go's session timeout (how
// long a dead member may hold the group), its rebalance timeout beside.
const joinWait = 45*time.Second + 60*time.Second

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (h *health) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.noteErr(err)
	}
}

func (h *health) noteErr(err error) {
	h.errMu.Lock()
	h.lastErr = err
	h.errMu.Unlock()
}

// silence returns how long no broker has answered, and the last error.
func (h *health) silence(now time.Time) (time.Duration, error) {
	d := now.Sub(time.Unix(0, h.lastAnswer.Load()))
	h.errMu.Lock()
	defer h.errMu.Unlock()
	return d, h.lastErr
}

// readyError is Ready's error when more than one thing is wrong: the
// first is the assignment's (if any), then the others.
type readyError []error

func (e readyError) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e readyError) Unwrap() []error { return e }

// healthView is what the reasons of health depend on that other parts
// hold.
type healthView struct {
	lost        partitionSet // partitions lost since the last assignment
	deadLetters []string     // why partitions are blocked on dead letters
	// lagFrom is the position a partition's lag counts from (false: none
	// known).
	lagFrom func(t string, p int32) (int64, bool)
}

// reasons lists what is wrong besides the assignment at now: brokers
// silent for longer than the grace (or a group rebalance pending), lag
// above the limit, lost partitions, dead letters, a stall longer than the
// grace.
func (h *health) reasons(now time.Time, v healthView) []error {
	var errs []error
	if err := h.brokersReason(now); err != nil {
		errs = append(errs, err)
	}
	behind, worst, worstLag, _ := h.summary(v.lagFrom)
	if limit := h.maxLag; limit > 0 && behind > limit {
		errs = append(errs, fmt.Errorf("%d records behind the brokers' end offsets (more than --ready-max-lag %d; the most behind: %s/%d by %d)", behind, limit, worst.topic, worst.partition, worstLag))
	}
	if len(v.lost) > 0 {
		errs = append(errs, fmt.Errorf("partitions %s were lost (the consumer group session ended: the group coordinator cannot be reached, or the group moved on without this member after a missed session timeout); waiting for a new assignment", v.lost))
	}
	for _, r := range v.deadLetters {
		errs = append(errs, errors.New(r))
	}
	if s := h.stallSince.Load(); s != 0 {
		if d := now.Sub(time.Unix(0, s)); d > h.grace {
			errs = append(errs, fmt.Errorf("the store has stalled for %v (more than --ready-grace %v): both MemGraphs are full and flushing does not keep up; fetching is paused", d.Truncate(100*time.Millisecond), h.grace))
		}
	}
	return errs
}

// brokersReason says why no broker has answered for longer than the
// grace (nil: one has): a JoinGroup pending since the last answer (for up
// to joinWait), else silence, with the last error.
func (h *health) brokersReason(now time.Time) error {
	d, err := h.silence(now)
	join := time.Unix(0, h.joinSent.Load())
	if pending := now.Sub(join); d > h.grace && join.UnixNano() > h.lastAnswer.Load() && pending <= joinWait {
		return fmt.Errorf("waiting %v for consumer group %q to rebalance (its coordinator holds the join until then: a member that died holds the group until its session times out, 45s, unless it restarts with the same --group-instance-id)", pending.Truncate(100*time.Millisecond), h.group)
	}
	if d <= h.grace {
		return nil
	}
	msg := fmt.Sprintf("no Kafka broker has answered for %v (more than --ready-grace %v; brokers %s)", d.Truncate(100*time.Millisecond), h.grace, strings.Join(h.brokers, ","))
	if err != nil {
		msg += ": last error: " + err.Error()
	}
	return errors.New(msg)
}

// stallBegan notes that the Apply begun at t0 stalls; stallEnded that it
// ended after d.
func (h *health) stallBegan(t0 time.Time) {
	h.stallSince.Store(t0.UnixNano())
	h.stalls.begin(t0)
}

func (h *health) stallEnded(d time.Duration) {
	h.stallSince.Store(0)
	h.stalls.end(d)
}

// noteEnds records the end offsets lags give of the partitions assigned
// says are assigned.
func (h *health) noteEnds(lags []partitionLag, assigned func(string, int32) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range lags {
		h.noteEndLocked(l.tp, l.end, assigned)
	}
}

// noteEndLocked records end as k's end offset unless a newer one is
// known, and only while k is assigned. h.mu held.
func (h *health) noteEndLocked(k tp, end int64, assigned func(string, int32) bool) {
	if !assigned(k.topic, k.partition) {
		return // revoked meanwhile: another member reports it
	}
	if cur, ok := h.ends[k]; !ok || end > cur {
		h.ends[k] = end
	}
}

// setLags records the end offsets listed of the partitions assigned
// returns (asked under h.mu) and sets their lag, from where lagFrom says
// their lag counts.
func (h *health) setLags(ends kadm.ListedOffsets, assigned func() map[string][]int32, lagFrom func(string, int32) (int64, bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	as := assigned()
	isAssigned := func(t string, p int32) bool { return slices.Contains(as[t], p) }
	for t, ps := range as {
		for _, p := range ps {
			end, ok := ends.Lookup(t, p)
			if !ok || end.Err != nil || end.Offset < 0 {
				continue
			}
			pos, ok := lagFrom(t, p)
			if !ok {
				continue
			}
			h.noteEndLocked(tp{t, p}, end.Offset, isAssigned)
			h.lag.WithLabelValues(t, strconv.Itoa(int(p))).Set(float64(max(end.Offset-pos, 0)))
		}
	}
}

// forget drops the end offsets and lag series of partitions that went to
// another member: it reports their lag now.
func (h *health) forget(gone map[string][]int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for t, ps := range gone {
		for _, p := range ps {
			delete(h.ends, tp{t, p})
			h.lag.DeleteLabelValues(t, strconv.Itoa(int(p)))
		}
	}
}

// summary is how far behind the assigned partitions with a known end
// offset are, together, the partition most behind (the first in order
// among equals) with its lag, and whether any end offset is known. A
// partition's lag is its end offset minus lagFrom.
func (h *health) summary(lagFrom func(string, int32) (int64, bool)) (total int64, worst tp, worstLag int64, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := true
	for k, end := range h.ends {
		pos, ok := lagFrom(k.topic, k.partition)
		if !ok {
			continue
		}
		l := max(end-pos, 0)
		total += l
		if first || l > worstLag || l == worstLag && (k.topic < worst.topic || k.topic == worst.topic && k.partition < worst.partition) {
			worst, worstLag, first = k, l, false
		}
	}
	return total, worst, worstLag, len(h.ends) > 0
}

// wakeLag asks the lag loop for a refresh now.
func (h *health) wakeLag() {
	select {
	case h.lagNow <- struct{}{}:
	default:
	}
}

// healthReasons lists what is wrong besides the assignment.
func (in *Ingester) healthReasons(now time.Time) []error {
	return in.health.reasons(now, healthView{lost: in.asg.lostNow(), deadLetters: in.dl.reasons(), lagFrom: in.lagFrom})
}

// lagLoop computes the lag of the assigned partitions from the brokers'
// end offsets every LagInterval and when woken (an assignment), until ctx
// ends.
func (in *Ingester) lagLoop(ctx context.Context) {
	tick := time.NewTicker(in.cfg.LagInterval)
	defer tick.Stop()
	adm := kadm.NewClient(in.cl)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-in.health.lagNow:
		}
		in.refreshLag(ctx, adm)
	}
}

// refreshLag sets the lag of every assigned partition: its end offset
// minus the position applied to the store (or, before anything of it is
// applied, the offset it starts at).
func (in *Ingester) refreshLag(ctx context.Context, adm *kadm.Client) {
	var topics []string
	for t, ps := range in.asg.assignedNow() {
		if len(ps) > 0 {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(lctx, topics...)
	if err != nil {
		if ctx.Err() == nil {
			in.cfg.Logger.Debug("listing end offsets for lag failed", "err", err)
		}
		return
	}
	in.asg.checkCount(ends)
	// What is assigned now: some may have gone meanwhile.
	in.health.setLags(ends, in.asg.assignedNow, in.lagFrom)
}

// Behind is how many records the assigned partitions are behind the
// brokers' end offsets, together: the newest end offset known of each
// (from the lag loop, or the high watermark of its last fetch) minus the
// position applied to the store; false before any end offset is known.
func (in *Ingester) Behind() (int64, bool) {
	n, _, _, ok := in.health.summary(in.lagFrom)
	return n, ok
}

// noteEnds records the end offsets of a poll's fetches.
func (in *Ingester) noteEnds(lags []partitionLag) { in.health.noteEnds(lags, in.asg.isAssigned) }

// lagFrom is the position a partition's lag counts from: after
// everything of it applied, or, with nothing applied yet, the offset it
// starts at; false when neither is known.
func (in *Ingester) lagFrom(t string, p int32) (int64, bool) {
	if pos, ok := in.pos.appliedNow().Get(t, p); ok {
		return pos, true
	}
	return in.asg.start(t, p)
}

// wakeLag asks the lag loop for a refresh now.
func (in *Ingester) wakeLag() { in.health.wakeLag() }
