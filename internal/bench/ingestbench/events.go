package ingestbench

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
)

// Edge events (issue 42): what an accumulate edge type and edge payloads
// cost against replace, on one payments stream in the same run.
//
// The stream: cfg.Events payments among cfg.Accounts accounts over 30 days
// of event time (ascending), amounts of 0.01..1,000.00. Each account has
// bench.PayeesPerAccount (8) regular payees; three payments in four go to one of the
// payer's regular payees, the rest to a random account, so pairs repeat
// (the result's events_per_pair says how much). The same stream is applied
// in batches of cfg.BatchSize into a fresh store (MemGraphs of
// cfg.MemGraphMiB, automatic flushes and compactions as in ingest) once per
// variant:
//   - replace: the newest payment of a pair is the edge (today's default);
//   - accumulate: edge type 0 accumulates (count, sum, first and last
//     time), retain 0;
//   - accumulate_props: the same, each payment with its event reference
//     ("e-<n>") and a property document ({"currency":"EUR","channel":...});
//   - accumulate_props_retain: the same with a retain of 24h, so the
//     events of the last day of the stream stay readable one by one.
//
// Per variant: the CPU time of Apply as the store counts it
// (Metrics.ApplyCPU: the calling thread's and the core's helper thread's),
// the process's CPU time over the whole ingest (Apply, the flushes and
// compactions that ran meanwhile, and the final flush), both per event, and
// the bytes on disk per distinct pair after CompactAll. The variants take
// turns eventsRounds times, each in a fresh store, and the median CPU of
// each counts (the machine is shared). After each accumulate store is
// compacted, a sample of pairs is read back and checked against the
// stream (count, sum, first and last time, newest reference): a mismatch
// is an error, not a figure.

// eventsRounds is how often the variants take turns.
const eventsRounds = 3

// EventsVariant is one variant's figures.
type EventsVariant struct {
	ApplyCPUNsPerEvent  float64 `json:"apply_cpu_ns_per_event"`
	IngestCPUNsPerEvent float64 `json:"ingest_cpu_ns_per_event"`
	EventsPerSec        float64 `json:"events_per_sec"`
	BytesPerEdge        float64 `json:"bytes_per_edge"`
	// The ratios against replace of the same run.
	ApplyCPUOverReplace  float64 `json:"apply_cpu_over_replace"`
	IngestCPUOverReplace float64 `json:"ingest_cpu_over_replace"`
	BytesOverReplace     float64 `json:"bytes_over_replace"`
}

// EventsResult is what the edge-events comparison reports.
type EventsResult struct {
	Events        int     `json:"events"`
	Accounts      int     `json:"accounts"`
	DistinctPairs int     `json:"distinct_pairs"`
	EventsPerPair float64 `json:"events_per_pair"`
	// RepeatShare is the share of the events whose pair was paid before.
	RepeatShare float64 `json:"repeat_share"`
	PropsBytes  float64 `json:"props_bytes_per_event"` // property document and reference
	Rounds      int     `json:"rounds"`

	Replace               EventsVariant `json:"replace"`
	Accumulate            EventsVariant `json:"accumulate"`
	AccumulateProps       EventsVariant `json:"accumulate_props"`
	AccumulatePropsRetain EventsVariant `json:"accumulate_props_retain"`
}

// channels are the property documents' channels.
var channels = [...]string{"card", "transfer", "wallet", "direct-debit"}

// eventsVariant is how one variant stores the stream.
type eventsVariant struct {
	name  string
	agg   *engine.Aggregate
	props bool
	out   *EventsVariant
}

// pairOracle is what the stream says a pair's accumulate edge reads as.
type pairOracle struct {
	count       uint64
	sum         float64
	first, last int64
	lastEvent   int
}

func runEvents(cfg Config, res *Result, logf func(string, ...any)) error {
	if cfg.Events == 0 {
		return nil
	}
	er := &res.EdgeEvents
	pays := bench.PaymentStream(cfg.Events, cfg.Accounts, cfg.Seed)
	oracle := make(map[[2]uint64]*pairOracle, len(pays)/2)
	repeats := 0
	for i, p := range pays {
		k := [2]uint64{p.Src, p.Dst}
		o := oracle[k]
		if o == nil {
			o = &pairOracle{first: p.Time}
			oracle[k] = o
		} else {
			repeats++
		}
		o.count++
		o.sum += p.Amount
		o.last = p.Time
		o.lastEvent = i
	}
	er.Events, er.Accounts, er.DistinctPairs, er.Rounds = len(pays), cfg.Accounts, len(oracle), eventsRounds
	er.EventsPerPair = float64(len(pays)) / float64(len(oracle))
	er.RepeatShare = float64(repeats) / float64(len(pays))
	logf("edge events: %d payments among %d accounts over 30 days, %d distinct pairs (%.2f payments per pair; %.0f%% of the payments repeat a pair)",
		len(pays), cfg.Accounts, len(oracle), er.EventsPerPair, 100*er.RepeatShare)

	variants := []eventsVariant{
		{"replace", nil, false, &er.Replace},
		{"accumulate", &engine.Aggregate{Accumulate: true}, false, &er.Accumulate},
		{"accumulate_props", &engine.Aggregate{Accumulate: true}, true, &er.AccumulateProps},
		{"accumulate_props_retain", &engine.Aggregate{Accumulate: true, Retain: 24 * time.Hour}, true, &er.AccumulatePropsRetain},
	}
	applyNs := make([][]float64, len(variants))
	ingestNs := make([][]float64, len(variants))
	rates := make([][]float64, len(variants))
	for round := range eventsRounds {
		for vi, v := range variants {
			a, in, rate, bytes, err := ingestEvents(cfg, v, round, pays, oracle)
			if err != nil {
				return fmt.Errorf("edge events, %s: %w", v.name, err)
			}
			applyNs[vi] = append(applyNs[vi], a)
			ingestNs[vi] = append(ingestNs[vi], in)
			rates[vi] = append(rates[vi], rate)
			v.out.BytesPerEdge = bytes
			if round == 0 && v.props {
				er.PropsBytes = propsBytes(len(pays))
			}
		}
	}
	base := variants[0].out
	for vi, v := range variants {
		o := v.out
		o.ApplyCPUNsPerEvent, o.IngestCPUNsPerEvent, o.EventsPerSec = median(applyNs[vi]), median(ingestNs[vi]), median(rates[vi])
		o.ApplyCPUOverReplace = o.ApplyCPUNsPerEvent / base.ApplyCPUNsPerEvent
		o.IngestCPUOverReplace = o.IngestCPUNsPerEvent / base.IngestCPUNsPerEvent
		o.BytesOverReplace = o.BytesPerEdge / base.BytesPerEdge
		logf("edge events, %s: %.1f ns CPU in Apply per payment (%.2fx replace; the median of %.1f), %.1f ns the whole ingest (%.2fx; the median of %.1f), %.0f payments/s, %.2f bytes per distinct pair after compact-all (%.2fx)",
			v.name, o.ApplyCPUNsPerEvent, o.ApplyCPUOverReplace, applyNs[vi], o.IngestCPUNsPerEvent, o.IngestCPUOverReplace, ingestNs[vi],
			o.EventsPerSec, o.BytesPerEdge, o.BytesOverReplace)
	}
	return nil
}

// propsBytes is the mean length of the reference and property document
// the props variants give a payment.
func propsBytes(n int) float64 {
	var total int
	for i := range n {
		total += len(eventRef(i)) + len(eventProps(i))
	}
	return float64(total) / float64(n)
}

func eventRef(i int) string { return "e-" + strconv.Itoa(i) }

func eventProps(i int) []byte {
	return []byte(`{"currency":"EUR","channel":"` + channels[i%len(channels)] + `"}`)
}

// ingestEvents applies the stream into a fresh store as v says and returns
// Apply's and the process's CPU time per event, the rate (final flush
// included) and, after CompactAll, the bytes on disk per distinct pair.
func ingestEvents(cfg Config, v eventsVariant, round int, pays []bench.Payment, oracle map[[2]uint64]*pairOracle) (applyNs, ingestNs, rate, bytesPerEdge float64, err error) {
	// The batches are built first: the figures are the store's alone.
	batches := make([]engine.Batch, 0, len(pays)/cfg.BatchSize+1)
	for i := 0; i < len(pays); i += cfg.BatchSize {
		var b engine.Batch
		for j := i; j < min(i+cfg.BatchSize, len(pays)); j++ {
			p := pays[j]
			b.InsertWeighted(p.Src, p.Dst, p.Amount)
			b.SetEventTime(p.Time)
			if v.props {
				b.SetPayload(eventRef(j), eventProps(j))
			}
		}
		if err := b.Err(); err != nil {
			return 0, 0, 0, 0, err
		}
		batches = append(batches, b)
	}
	o := &engine.Options{MemGraphBytes: int64(cfg.MemGraphMiB) << 20}
	if v.agg != nil {
		o.Aggregates = map[uint16]engine.Aggregate{0: *v.agg}
	}
	s, err := engine.Open(filepath.Join(cfg.Dir, fmt.Sprintf("store-events-%s-%d", v.name, round)), o)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	runtime.GC() // no collection of the batch building's garbage runs while the ingest is timed
	m, err := s.Metrics()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	apply0 := m.ApplyCPU
	cpu0, t0 := bench.ProcessCPU(), time.Now()
	for i := range batches {
		if _, err := s.Apply(&batches[i]); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if err := s.Flush(); err != nil {
		return 0, 0, 0, 0, err
	}
	cpu, wall := bench.ProcessCPU()-cpu0, time.Since(t0)
	if m, err = s.Metrics(); err != nil {
		return 0, 0, 0, 0, err
	}
	n := float64(len(pays))
	applyNs = float64((m.ApplyCPU - apply0).Nanoseconds()) / n
	ingestNs = float64(cpu.Nanoseconds()) / n
	rate = n / wall.Seconds()
	if err := s.CompactAll(); err != nil {
		return 0, 0, 0, 0, err
	}
	if m, err = s.Metrics(); err != nil {
		return 0, 0, 0, 0, err
	}
	bytesPerEdge = float64(m.DiskBytes()) / float64(len(oracle))
	if round == 0 {
		err = checkEvents(s, v, pays, oracle)
	}
	return applyNs, ingestNs, rate, bytesPerEdge, err
}

// eventsChecked is how many pairs checkEvents reads back.
const eventsChecked = 2000

// checkEvents reads a sample of pairs back from the compacted store and
// compares each with the stream: a replace edge is the pair's newest
// payment; an accumulate edge is the count, sum, first and last time of
// all of them (and, with payloads, the newest one's reference and
// properties).
func checkEvents(s *engine.Store, v eventsVariant, pays []bench.Payment, oracle map[[2]uint64]*pairOracle) error {
	sn, err := s.Snapshot()
	if err != nil {
		return err
	}
	defer sn.Release()
	step := max(len(pays)/eventsChecked, 1)
	for i := 0; i < len(pays); i += step {
		p := pays[i]
		o := oracle[[2]uint64{p.Src, p.Dst}]
		last := pays[o.lastEvent]
		c, err := sn.Edge(p.Src, p.Dst)
		if err != nil {
			return err
		}
		if len(c.Weights) != 1 {
			return fmt.Errorf("edge %d -> %d: %d edges, want 1", p.Src, p.Dst, len(c.Weights))
		}
		wantW, wantCount, wantFirst := last.Amount, uint64(0), int64(0)
		if v.agg != nil {
			wantW, wantCount, wantFirst = o.sum, o.count, o.first
		}
		got := fmt.Sprintf("weight %.6f, time %d, count %d, first %d", c.Weights[0], c.Times[0], c.Counts[0], c.FirstTimes[0])
		want := fmt.Sprintf("weight %.6f, time %d, count %d, first %d", wantW, o.last, wantCount, wantFirst)
		if math.Abs(c.Weights[0]-wantW) > 1e-9*math.Max(1, wantW) || c.Times[0] != o.last || c.Counts[0] != wantCount ||
			(v.agg != nil && c.FirstTimes[0] != wantFirst) {
			return fmt.Errorf("edge %d -> %d after compact-all: %s, want %s", p.Src, p.Dst, got, want)
		}
		if v.props && (c.Refs[0] != eventRef(o.lastEvent) || c.Props[0] != string(eventProps(o.lastEvent))) {
			return fmt.Errorf("edge %d -> %d after compact-all: ref %q props %s, want %q %s", p.Src, p.Dst, c.Refs[0], c.Props[0], eventRef(o.lastEvent), eventProps(o.lastEvent))
		}
	}
	return nil
}
