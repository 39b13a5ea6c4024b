package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// health is what the broker hooks record.
type health struct {
	lastAnswer atomic.Int64 // unix nanoseconds of the last successful read from a broker
	joinSent   atomic.Int64 // unix nanoseconds of the last JoinGroup request written
	errMu      sync.Mutex
	lastErr    error // the last connection or read error; Protected by errMu.
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

// healthReasons lists what is wrong besides the assignment.
func (in *Ingester) healthReasons(now time.Time) []error {
	var errs []error
	grace := in.cfg.ReadyGrace
	d, err := in.health.silence(now)
	join := time.Unix(0, in.health.joinSent.Load())
	if pending := now.Sub(join); d > grace && join.UnixNano() > in.health.lastAnswer.Load() && pending <= joinWait {
		errs = append(errs, fmt.Errorf("waiting %v for consumer group %q to rebalance (its coordinator holds the join until then: a member that died holds the group until its session times out, 45s, unless it restarts with the same --group-instance-id)", pending.Truncate(100*time.Millisecond), in.cfg.Group))
	} else if d > grace {
		msg := fmt.Sprintf("no Kafka broker has answered for %v (more than --ready-grace %v; brokers %s)", d.Truncate(100*time.Millisecond), grace, strings.Join(in.cfg.Brokers, ","))
		if err != nil {
			msg += ": last error: " + err.Error()
		}
		errs = append(errs, errors.New(msg))
	}
	lost := in.asg.lostNow()
	in.mu.Lock()
	behind, worst, worstLag, _ := in.lagSummary()
	in.mu.Unlock()
	if limit := in.cfg.ReadyMaxLag; limit > 0 && behind > limit {
		errs = append(errs, fmt.Errorf("%d records behind the brokers' end offsets (more than --ready-max-lag %d; the most behind: %s/%d by %d)", behind, limit, worst.topic, worst.partition, worstLag))
	}
	if len(lost) > 0 {
		errs = append(errs, fmt.Errorf("partitions %s were lost (the consumer group session ended: the group coordinator cannot be reached, or the group moved on without this member after a missed session timeout); waiting for a new assignment", lost))
	}
	for _, r := range in.dl.reasons() {
		errs = append(errs, errors.New(r))
	}
	if s := in.stallSince.Load(); s != 0 {
		if d := now.Sub(time.Unix(0, s)); d > grace {
			errs = append(errs, fmt.Errorf("the store has stalled for %v (more than --ready-grace %v): both MemGraphs are full and flushing does not keep up; fetching is paused", d.Truncate(100*time.Millisecond), grace))
		}
	}
	return errs
}

// lagLoop computes the lag of the assigned partitions from the brokers'
// end offsets every LagInterval and when lagNow is signalled (an
// assignment), until ctx ends.
func (in *Ingester) lagLoop(ctx context.Context) {
	tick := time.NewTicker(in.cfg.LagInterval)
	defer tick.Stop()
	adm := kadm.NewClient(in.cl)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-in.lagNow:
		}
		in.refreshLag(ctx, adm)
	}
}

// refreshLag sets the lag of every assigned partition: its end offset
// minus the position applied to the store (or, before anything of it is
// applied, the offset it starts at).
func (in *Ingester) refreshLag(ctx context.Context, adm *kadm.Client) {
	assigned := in.asg.assignedNow()
	var topics []string
	for t, ps := range assigned {
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
	in.mu.Lock()
	defer in.mu.Unlock()
	for t, ps := range in.asg.assignedNow() { // what is assigned now: some may have gone meanwhile
		for _, p := range ps {
			end, ok := ends.Lookup(t, p)
			if !ok || end.Err != nil || end.Offset < 0 {
				continue
			}
			pos, ok := in.lagFrom(t, p)
			if !ok {
				continue
			}
			in.noteEnd(tp{t, p}, end.Offset)
			in.cfg.Metrics.Lag.WithLabelValues(t, strconv.Itoa(int(p))).Set(float64(max(end.Offset-pos, 0)))
		}
	}
}

// Behind is how many records the assigned partitions are behind the
// brokers' end offsets, together: the newest end offset known of each
// (from the lag loop, or the high watermark of its last fetch) minus the
// position applied to the store; false before any end offset is known.
func (in *Ingester) Behind() (int64, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	n, _, _, ok := in.lagSummary()
	return n, ok
}

// noteEnds records the end offsets of a poll's fetches.
func (in *Ingester) noteEnds(lags []partitionLag) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, l := range lags {
		in.noteEnd(l.tp, l.end)
	}
}

// noteEnd records end as k's end offset unless a newer one is known, and
// only while k is assigned. in.mu must be held.
func (in *Ingester) noteEnd(k tp, end int64) {
	if !in.asg.isAssigned(k.topic, k.partition) {
		return // revoked meanwhile: another member reports it
	}
	if in.ends == nil {
		in.ends = map[tp]int64{}
	}
	if cur, ok := in.ends[k]; !ok || end > cur {
		in.ends[k] = end
	}
}

// lagFrom is the position a partition's lag counts from: after
// everything of it applied, or, with nothing applied yet, the offset it
// starts at; false when neither is known. in.mu must be held.
func (in *Ingester) lagFrom(t string, p int32) (int64, bool) {
	if pos, ok := in.pos.appliedNow().Get(t, p); ok {
		return pos, true
	}
	return in.asg.start(t, p)
}

// lagSummary is how far behind the assigned partitions with a known end
// offset are, together, the partition most behind (the first in order
// among equals) with its lag, and whether any end offset is known. A
// partition's lag is its end offset minus lagFrom. in.mu must be held.
func (in *Ingester) lagSummary() (total int64, worst tp, worstLag int64, known bool) {
	first := true
	for k, end := range in.ends {
		pos, ok := in.lagFrom(k.topic, k.partition)
		if !ok {
			continue
		}
		l := max(end-pos, 0)
		total += l
		if first || l > worstLag || l == worstLag && (k.topic < worst.topic || k.topic == worst.topic && k.partition < worst.partition) {
			worst, worstLag, first = k, l, false
		}
	}
	return total, worst, worstLag, len(in.ends) > 0
}

// wakeLag asks lagLoop for a refresh now.
func (in *Ingester) wakeLag() {
	select {
	case in.lagNow <- struct{}{}:
	default:
	}
}
