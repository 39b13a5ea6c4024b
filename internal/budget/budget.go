// Package budget divides the one memory budget of graphtide serve
// (--memory-budget) among the parts that hold memory, so that the process
// stays within it whatever the graph and the analytics:
//
//	store      the C++ core: two MemGraphs (one takes writes, one flushes),
//	           the memory of flushed ones kept for the next (at most one
//	           MemGraph), the segment a flush or compaction builds (with
//	           in-edges, the out-edge one and its transposed in-edge one),
//	           allocator slack; about StoreFactor times one MemGraph for
//	           a store that keeps in-edges, as new stores do by default
//	           (one that keeps none holds less). Outside the Go heap.
//	edge log   the ring of applied operations stream views read:
//	           EdgeBytes per operation, allocated up front, and their
//	           payloads (event references, properties) within 32 bytes
//	           per operation on average (EdgeLogBytes in all).
//	fetch      the Kafka consumer's fetch buffers: at most
//	           MaxConcurrentFetches responses of FetchMaxBytes.
//	analytics  per-vertex state and what one pull carries.
//	alerts     the newest alerts, kept for reading (GET /v1/alerts): at
//	           most this many bytes of them (5% of the budget, within
//	           AlertsMin and AlertsMax).
//	rest       the Go runtime, HTTP, decoding, and the garbage collector's
//	           headroom.
//	headroom   a sixteenth of the budget, held by no part: what the Go
//	           runtime may pass its soft limit by (a burst of allocation
//	           while the collector is starved of CPU) and the store its
//	           modelled share by (StoreFactor is measured, not enforced).
//
// GOMEMLIMIT (runtime/debug.SetMemoryLimit) is everything but the store's
// share and the headroom: the Go runtime collects garbage harder as it
// nears that limit rather than growing past the budget.
//
// What it promises: Divide never returns a plan whose parts add up to more
// than the budget; a part given explicitly (a MemGraph size, an edge-log
// capacity) is taken as given, and a plan that cannot fit is an error that
// names the parts and what to change.
package budget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sizes of the parts, as this package models them.
const (
	// StoreFactor: the store's resident memory is about this many times one
	// MemGraph (measured: bench ingest and bench serve, docs/benchmarks.md). It was 4
	// before flushed MemGraphs' memory was kept for the next ones: serve
	// then peaked at 1.00-1.04 of its budget.
	//
	// It is measured on a store that keeps in-edges (bench
	// serve and TestServeStaysWithinItsBudget run serve with them), the
	// default of a new store: a MemGraph counts its in-index in its size,
	// but a flush holds the out-edge segment and its transposed in-edge
	// one at once, so such a store holds more than an out-only one (about
	// 3 to 5 MemGraphs against 2, measured with graphtide load at 16 MiB
	// MemGraphs; bench serve --scale 18 --memory-budget 256MiB peaked at
	// 0.96-0.98 of the budget with in-edges, 0.85-0.87 with
	// --out-edges-only). The plan does not know which kind the store is
	// (it is divided before the store opens), so it counts the larger.
	StoreFactor = 5
	// EdgeBytes is the size of one operation in the edge log (views.Edge).
	EdgeBytes = 96
	// EdgeLogBytes is what the plan counts per operation of the edge log:
	// its slot and the payload bytes the log allows per operation
	// (views.PayloadBytesPerOp; a test checks they agree).
	EdgeLogBytes = EdgeBytes + 32
	// MinBudget and MaxBudget bound --memory-budget.
	MinBudget = 256 << 20
	MaxBudget = 1 << 40
	// DefaultBudget is --memory-budget's default: 1 GiB.
	DefaultBudget = 1 << 30

	minMemGraph   = 4 << 20
	maxMemGraph   = 64 << 30
	minEdgeLogOps = 1 << 14
	maxEdgeLogOps = 1 << 30
	// AlertsMin and AlertsMax bound the alerts' share.
	AlertsMin = 4 << 20
	AlertsMax = 64 << 20

	minFetchBytes   = 1 << 20
	maxFetchBytes   = 64 << 20
	concurrentFetch = 4
)

// Shares of the budget, in percent, when no part is given explicitly.
const (
	storeShare     = 30
	edgeLogShare   = 10
	fetchShare     = 10
	analyticsShare = 30
	alertsShare    = 5
	// The rest (15%): a sixteenth of headroom (Plan.Headroom), the rest
	// to the Go runtime and the collector's room within GOMEMLIMIT.
)

// Explicit parts; zero fields are derived from the budget.
type Explicit struct {
	MemGraphBytes int64 // one MemGraph (serve --memgraph-mib)
	EdgeLogOps    int   // the edge log's capacity (serve --view-log-capacity)
}

// Plan is a budget divided.
type Plan struct {
	Total int64
	// The store: one MemGraph's size and the store's whole share.
	MemGraphBytes int64
	Store         int64
	// The edge log's capacity in operations, and its bytes.
	EdgeLogOps int
	EdgeLog    int64
	// The Kafka consumer's fetch settings and their bytes.
	FetchMaxBytes        int32
	MaxConcurrentFetches int
	Fetch                int64
	// What the analytics may hold together.
	Analytics int64
	// What the alerts kept for reading may hold.
	Alerts int64
	// Headroom is the budget's sixteenth that no part holds (see the
	// package documentation).
	Headroom int64
	// GoLimit is GOMEMLIMIT: the budget less the store's share and the
	// headroom.
	GoLimit int64
}

// Parts lists the plan's parts by the component names of the
// graphtide_memory_budget_bytes metric.
func (p Plan) Parts() map[string]int64 {
	return map[string]int64{"store": p.Store, "edge_log": p.EdgeLog, "kafka_fetch": p.Fetch,
		"analytics": p.Analytics, "alerts": p.Alerts, "go_runtime_rest": p.GoLimit - p.EdgeLog - p.Fetch - p.Analytics - p.Alerts,
		"headroom": p.Headroom, "total": p.Total}
}

// Divide divides total among the parts; see the package documentation.
func Divide(total int64, x Explicit) (Plan, error) {
	if total < MinBudget || total > MaxBudget {
		return Plan{}, fmt.Errorf("--memory-budget must be between %s and %s, got %s", Format(MinBudget), Format(MaxBudget), Format(total))
	}
	p := Plan{Total: total, MaxConcurrentFetches: concurrentFetch}

	p.MemGraphBytes = x.MemGraphBytes
	if p.MemGraphBytes == 0 {
		p.MemGraphBytes = clamp(total*storeShare/100/StoreFactor, minMemGraph, maxMemGraph)
	}
	p.Store = p.MemGraphBytes * StoreFactor

	p.EdgeLogOps = x.EdgeLogOps
	if p.EdgeLogOps == 0 {
		p.EdgeLogOps = int(clamp(total*edgeLogShare/100/EdgeLogBytes, minEdgeLogOps, maxEdgeLogOps))
	}
	p.EdgeLog = int64(p.EdgeLogOps) * EdgeLogBytes

	p.FetchMaxBytes = int32(clamp(total*fetchShare/100/concurrentFetch, minFetchBytes, maxFetchBytes))
	p.Fetch = int64(p.FetchMaxBytes) * concurrentFetch

	p.Analytics = total * analyticsShare / 100
	p.Alerts = clamp(total*alertsShare/100, AlertsMin, AlertsMax)
	// What is left for the Go runtime beyond its parts and the headroom:
	// at least a twentieth.
	p.Headroom = total / 16
	rest := total - p.Store - p.EdgeLog - p.Fetch - p.Analytics - p.Alerts - p.Headroom
	if rest < total/20 {
		var given []string
		if x.MemGraphBytes != 0 {
			given = append(given, fmt.Sprintf("--memgraph-mib %d takes %s for the store (%dx one MemGraph)", x.MemGraphBytes>>20, Format(p.Store), StoreFactor))
		}
		if x.EdgeLogOps != 0 {
			given = append(given, fmt.Sprintf("--view-log-capacity %d takes %s", x.EdgeLogOps, Format(p.EdgeLog)))
		}
		if len(given) == 0 {
			return Plan{}, errors.New("budget: the derived parts do not fit (a bug)")
		}
		return Plan{}, fmt.Errorf("%s: with the edge log (%s), the Kafka fetch buffers (%s), the analytics (%s) and the alerts (%s) that leaves %s of --memory-budget %s for the Go runtime beside the headroom of a sixteenth, less than a twentieth: raise --memory-budget or leave those flags out to size them from it",
			joinAnd(given), Format(p.EdgeLog), Format(p.Fetch), Format(p.Analytics), Format(p.Alerts), Format(max(rest, 0)), Format(total))
	}
	p.GoLimit = total - p.Store - p.Headroom
	return p, nil
}

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }

func joinAnd(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return s[0] + " and " + s[1]
}

// Format writes n bytes in the largest binary unit that keeps it exact to a
// tenth ("1 GiB", "76.8 MiB", "512 B").
func Format(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// Parse reads a size: a number of bytes, or a number with a binary unit
// (K, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB, any case; all powers of
// 1024), e.g. "1GiB", "512m", "1.5G".
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (KiB, MiB, GiB, TiB), e.g. 1GiB", s)
	}
	shift := 0
	switch strings.TrimSuffix(strings.TrimSuffix(unit, "b"), "i") {
	case "":
		if unit != "" && unit != "b" {
			return 0, fmt.Errorf("size %q: unknown unit %q (KiB, MiB, GiB, TiB)", s, t[i:])
		}
	case "k":
		shift = 10
	case "m":
		shift = 20
	case "g":
		shift = 30
	case "t":
		shift = 40
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (KiB, MiB, GiB, TiB)", s, t[i:])
	}
	b := v * float64(int64(1)<<shift)
	if b > float64(1<<62) {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(b), nil
}
