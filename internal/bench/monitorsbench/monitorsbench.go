// Package monitorsbench is `graphtide bench monitors`: the per-batch cost
// of the fraud monitors' options of money and time (fan-in and fan-out by
// measure, the mule, rings in time within max_span) on a payments stream,
// each against a recompute over the same window in the same run.
//
// The stream: --payments random payments (uniform payer and payee among
// --accounts accounts, amounts of 0.01..1,000.00, event times uniform over
// --days days, in time order) applied in batches of --batch-size to a
// fresh store (edge type 0 accumulates; in-edges kept) that a views
// Manager follows. Each monitor reads the store's log as serve's registry
// drives it (fanin and fanout: a plain stream view, Consume; fraud: the
// topology with Presence, UpdatePrior), and its update is timed after each
// batch. Every --recompute-every batches, a fresh instance of the same
// spec is given the operations its window holds then (the events of the
// last window, or of max_span for rings, lateness included) as one batch:
// the cost of computing that monitor's state from its window instead of
// following the stream. After each recompute every account's measure
// (Vertex) is compared between the two instances: a mismatch is an error,
// not a figure (the ring window's searches have no per-vertex state and
// are not compared).
package monitorsbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Config of one run.
type Config struct {
	Payments, Accounts, Days int
	Seed                     uint64
	BatchSize                int
	Window                   time.Duration // the fan monitors' and the mule's window
	RecomputeEvery           int           // a recompute every this many batches
	Dir                      string
	Log                      io.Writer // progress lines; nil = discard
}

// DefaultConfig is the command's defaults, without Dir: the stream
// (287,000 random payments among 20,000 accounts over 30 days).
func DefaultConfig() Config {
	return Config{Payments: 287_000, Accounts: 20_000, Days: 30, Seed: 1, BatchSize: 1000, Window: 24 * time.Hour, RecomputeEvery: 5}
}

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.Payments, "payments", c.Payments, "payments in the stream")
	fs.IntVar(&c.Accounts, "accounts", c.Accounts, "accounts the payments are among")
	fs.IntVar(&c.Days, "days", c.Days, "days of event time the payments cover")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed of the stream")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "payments per batch")
	fs.DurationVar(&c.Window, "window", c.Window, "window of the fan-in, fan-out and mule monitors (event time)")
	fs.IntVar(&c.RecomputeEvery, "recompute-every", c.RecomputeEvery, "time a recompute every this many batches")
	fs.StringVar(&c.Dir, "dir", c.Dir, "directory for the store; must not exist or be empty (default: a temporary directory, removed afterwards)")
}

// Validate checks the settings; its messages name the command's flags.
func (c Config) Validate() error {
	switch {
	case c.Payments < 1 || c.Payments > 100_000_000:
		return fmt.Errorf("--payments must be between 1 and 100000000, got %d", c.Payments)
	case c.Accounts < 2 || c.Accounts > 100_000_000:
		return fmt.Errorf("--accounts must be between 2 and 100000000, got %d", c.Accounts)
	case c.Days < 1 || c.Days > 3650:
		return fmt.Errorf("--days must be between 1 and 3650, got %d", c.Days)
	case c.BatchSize < 1 || c.BatchSize > 1_000_000:
		return fmt.Errorf("--batch-size must be between 1 and 1000000, got %d", c.BatchSize)
	case c.Window < time.Second || c.Window > analytics.MaxWindow:
		return fmt.Errorf("--window must be between 1s and %v, got %v", analytics.MaxWindow, c.Window)
	case c.RecomputeEvery < 1:
		return fmt.Errorf("--recompute-every must be at least 1, got %d", c.RecomputeEvery)
	}
	return nil
}

// Monitor is one monitor's figures.
type Monitor struct {
	Spec string `json:"spec"`
	// The update after each batch (the first batch's included: there is
	// no warm-up of note), in microseconds.
	UpdateMeanUs float64 `json:"update_mean_us"`
	UpdateP99Us  float64 `json:"update_p99_us"`
	UpdateMaxUs  float64 `json:"update_max_us"`
	// A fresh instance given the window's operations as one batch.
	RecomputeMeanUs float64 `json:"recompute_mean_us"`
	Recomputes      int     `json:"recomputes"`
	// WindowEvents is the mean count of the operations a recompute was
	// given.
	WindowEvents float64 `json:"window_events"`
	// RecomputeOverUpdate is how many times a batch's update the recompute
	// costs.
	RecomputeOverUpdate float64 `json:"recompute_over_update"`
	// Per operation: the update's per operation of a batch, the
	// recompute's per operation of the window (a ring window of max_span
	// may hold fewer operations than a batch).
	UpdateNsPerEvent    float64 `json:"update_ns_per_event"`
	RecomputeNsPerEvent float64 `json:"recompute_ns_per_event"`
	// The same in CPU time of the thread that ran them (the run's
	// goroutine keeps its thread): what a machine shared with other work
	// changes least.
	UpdateCPUNsPerEvent    float64 `json:"update_cpu_ns_per_event"`
	RecomputeCPUNsPerEvent float64 `json:"recompute_cpu_ns_per_event"`
	Alerts                 int     `json:"alerts"`
}

// Result is the JSON line the command prints last.
type Result struct {
	Payments  int     `json:"payments"`
	Accounts  int     `json:"accounts"`
	Days      int     `json:"days"`
	BatchSize int     `json:"batch_size"`
	Batches   int     `json:"batches"`
	WindowSec float64 `json:"window_sec"`
	// Monitors, in the order of Specs.
	Monitors map[string]*Monitor `json:"monitors"`
}

// monitorSpecs are the monitors measured, by name: the window and the
// thresholds of the fan monitors and the mule come from the run's window;
// the rings use max_span=1h (the default).
func monitorSpecs(window time.Duration) [][2]string {
	w := window.String()
	return [][2]string{
		{"fanin_events", "type=fanin,measure=events,threshold=5,window=" + w},
		{"fanin_senders", "type=fanin,measure=senders,threshold=5,window=" + w},
		{"fanin_amount", "type=fanin,measure=amount,threshold=5000,window=" + w},
		{"fanout_senders", "type=fanout,measure=senders,threshold=5,window=" + w},
		{"fanout_amount", "type=fanout,measure=amount,threshold=5000,window=" + w},
		{"mule", "type=fraud,ring_search=timed,max_span=1s,threshold=1000000,mule_senders=3,mule_receivers=3,window=" + w},
		{"rings_timed", "type=fraud,ring_search=timed,max_span=1h,max_cycle=4,threshold=1000000,window=1h"},
	}
}

// payment is one event of the stream.
type payment struct {
	src, dst uint64
	amount   float64
	time     int64 // µs
}

// eventsStart is the stream's first event time: 2026-11-01T00:00:00Z.
const eventsStart = int64(1793491200) * 1e6

func stream(cfg Config) []payment {
	rng := rand.New(rand.NewPCG(cfg.Seed, 43))
	span := int64(cfg.Days) * 24 * time.Hour.Microseconds()
	out := make([]payment, cfg.Payments)
	for i := range out {
		out[i] = payment{src: rng.Uint64N(uint64(cfg.Accounts)), dst: rng.Uint64N(uint64(cfg.Accounts)),
			amount: float64(1+rng.IntN(100_000)) / 100, time: eventsStart + rng.Int64N(span)}
		for out[i].dst == out[i].src {
			out[i].dst = rng.Uint64N(uint64(cfg.Accounts))
		}
	}
	slices.SortStableFunc(out, func(a, b payment) int { return int(a.time - b.time) })
	return out
}

// follower is one monitor following the stream.
type follower struct {
	name    string
	spec    analytics.Spec
	a       analytics.Analytic
	s       *views.Stream     // fanin, fanout
	ts      *views.TopoStream // fraud
	hold    time.Duration     // what its window holds: window (or max_span) plus lateness
	updates []float64         // µs
	redo    []float64         // µs
	cpu     [2]time.Duration  // the thread's CPU time: updates, recomputes
	held    []int
	alerts  int
}

// Run performs the benchmark.
func Run(ctx context.Context, cfg Config) (Result, error) {
	// The updates and recomputes run on this goroutine: on one thread, so
	// that its CPU time is theirs.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := Result{Payments: cfg.Payments, Accounts: cfg.Accounts, Days: cfg.Days, BatchSize: cfg.BatchSize,
		WindowSec: cfg.Window.Seconds(), Monitors: map[string]*Monitor{}}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	if err := bench.PrepareDir(cfg.Dir); err != nil {
		return res, err
	}
	pays := stream(cfg)
	logf("%d random payments among %d accounts over %d days, batches of %d", len(pays), cfg.Accounts, cfg.Days, cfg.BatchSize)

	s, err := engine.Open(filepath.Join(cfg.Dir, "store"), &engine.Options{InEdges: true,
		Aggregates: map[uint16]engine.Aggregate{0: {Accumulate: true}}})
	if err != nil {
		return res, err
	}
	defer s.Close()
	m, err := views.NewManager(s, views.Config{})
	if err != nil {
		return res, err
	}
	defer m.Close()

	var fs []*follower
	for _, ns := range monitorSpecs(cfg.Window) {
		f := &follower{name: ns[0]}
		if f.spec, err = analytics.ParseSpec("name=" + ns[0] + "," + ns[1]); err == nil {
			err = f.spec.Validate()
		}
		if err != nil {
			return res, fmt.Errorf("monitor %s: %w", ns[0], err)
		}
		if f.a, err = analytics.New(f.spec, 0, func(al []analytics.Alert) { f.alerts += len(al) }); err != nil {
			return res, err
		}
		f.hold = f.spec.WindowDuration + f.spec.Lateness
		if f.spec.Type == "fraud" && f.spec.MuleSenders == 0 {
			f.hold = f.spec.MaxSpan + f.spec.Lateness
		}
		if _, ok := f.a.(analytics.StreamAnalytic); ok {
			if f.s, err = m.Stream(views.StreamOptions{}); err != nil {
				return res, err
			}
			defer f.s.Close()
		} else {
			if f.ts, err = m.Topology().Stream(views.StreamOptions{Presence: analytics.NeedsPresence(f.spec)}); err != nil {
				return res, err
			}
			defer f.ts.Close()
			// The first pull is Lost (the analytic starts from the empty
			// graph), as serve's first is.
			u, err := f.ts.PullNow(ctx)
			if err != nil {
				return res, err
			}
			_, err = analytics.UpdateTopo(ctx, f.a.(analytics.TopoAnalytic), u)
			u.Done()
			if err != nil {
				return res, err
			}
		}
		fs = append(fs, f)
		res.Monitors[f.name] = &Monitor{Spec: ns[1]}
	}

	// hist is every operation the monitors were given, in order, with the
	// payment as logged (what a recompute is given again).
	var hist []views.Edge
	var b engine.Batch
	for i := 0; i < len(pays); i += cfg.BatchSize {
		b.Reset()
		for _, p := range pays[i:min(i+cfg.BatchSize, len(pays))] {
			b.InsertWeighted(p.src, p.dst, p.amount)
			b.SetEventTime(p.time)
		}
		if _, err := s.Apply(&b); err != nil {
			return res, err
		}
		res.Batches++
		recompute := res.Batches%cfg.RecomputeEvery == 0
		for fi, f := range fs {
			var edges []views.Edge
			if f.s != nil {
				sb, err := f.s.PullNow(ctx)
				if err != nil {
					return res, err
				}
				edges = sb.Edges
				t0, c0 := time.Now(), threadCPU()
				f.a.(analytics.StreamAnalytic).Consume(sb)
				f.updates = append(f.updates, us(time.Since(t0)))
				f.cpu[0] += threadCPU() - c0
			} else {
				u, err := f.ts.PullNow(ctx)
				if err != nil {
					return res, err
				}
				if u.Lost || u.Partial {
					u.Done()
					return res, fmt.Errorf("monitor %s: its topology stream lost operations or fell behind", f.name)
				}
				for k := range u.Edges {
					e := u.Edges[k]
					e.Op = u.LoggedOp(k)
					edges = append(edges, e)
				}
				t0, c0 := time.Now(), threadCPU()
				_, err = analytics.UpdateTopo(ctx, f.a.(analytics.TopoAnalytic), u)
				f.updates = append(f.updates, us(time.Since(t0)))
				f.cpu[0] += threadCPU() - c0
				if err == nil && recompute {
					err = f.recompute(ctx, hist, u.G, cfg.Accounts)
				}
				u.Done()
				if err != nil {
					return res, err
				}
			}
			if want := min(cfg.BatchSize, len(pays)-i); len(edges) != want {
				return res, fmt.Errorf("monitor %s: %d operations in the batch, want %d", f.name, len(edges), want)
			}
			if fi == 0 {
				hist = append(hist, edges...)
			}
			if recompute && f.s != nil {
				if err := f.recompute(ctx, hist, nil, cfg.Accounts); err != nil {
					return res, err
				}
			}
		}
	}
	for _, f := range fs {
		r := res.Monitors[f.name]
		r.UpdateMeanUs, r.UpdateP99Us, r.UpdateMaxUs = bench.Mean(f.updates), bench.Quantile(f.updates, 0.99), slices.Max(f.updates)
		r.Recomputes, r.RecomputeMeanUs, r.Alerts = len(f.redo), bench.Mean(f.redo), f.alerts
		if len(f.held) > 0 {
			n := 0
			for _, h := range f.held {
				n += h
			}
			r.WindowEvents = float64(n) / float64(len(f.held))
		}
		if r.UpdateMeanUs > 0 {
			r.RecomputeOverUpdate = r.RecomputeMeanUs / r.UpdateMeanUs
		}
		r.UpdateNsPerEvent = 1e3 * r.UpdateMeanUs * float64(res.Batches) / float64(len(pays))
		r.UpdateCPUNsPerEvent = float64(f.cpu[0].Nanoseconds()) / float64(len(pays))
		if r.WindowEvents > 0 {
			r.RecomputeNsPerEvent = 1e3 * r.RecomputeMeanUs / r.WindowEvents
			r.RecomputeCPUNsPerEvent = float64(f.cpu[1].Nanoseconds()) / (r.WindowEvents * float64(len(f.held)))
		}
		logf("%s (%s): update %.0f µs per batch (p99 %.0f, max %.0f), recompute from its window (%.0f operations) %.0f µs: %.1fx; per operation %.0f ns updating, %.0f ns recomputing (CPU: %.0f and %.0f ns); %d alerts",
			f.name, r.Spec, r.UpdateMeanUs, r.UpdateP99Us, r.UpdateMaxUs, r.WindowEvents, r.RecomputeMeanUs, r.RecomputeOverUpdate,
			r.UpdateNsPerEvent, r.RecomputeNsPerEvent, r.UpdateCPUNsPerEvent, r.RecomputeCPUNsPerEvent, r.Alerts)
	}
	return res, nil
}

// recompute gives a fresh instance of f's spec the operations f's window
// holds now (those of hist within f.hold of the newest event time), as
// one batch, times it and compares every account's measure with f's.
//
// The first follower is a stream follower, so hist holds the batch's
// operations when a topology follower (g: its pull's graph) recomputes.
func (f *follower) recompute(ctx context.Context, hist []views.Edge, g *views.Topo, accounts int) error {
	newest := hist[len(hist)-1].Op.EventTime // the stream is in time order
	from := newest - f.hold.Microseconds()
	k := len(hist)
	for k > 0 && hist[k-1].Op.EventTime > from {
		k--
	}
	win := hist[k:]
	fresh, err := analytics.New(f.spec, 0, nil)
	if err != nil {
		return err
	}
	seq := hist[len(hist)-1].Seq
	var sec float64
	c0 := threadCPU()
	if sa, ok := fresh.(analytics.StreamAnalytic); ok {
		t0 := time.Now()
		sa.Consume(&views.StreamBatch{Edges: win, Seq: seq})
		sec = time.Since(t0).Seconds()
	} else {
		ta := fresh.(analytics.TopoAnalytic)
		// The fresh instance starts from the graph as it is (its Lost
		// pull) and is then given the window's operations; what was there
		// before them does not matter to the timed rings or the windows.
		prior := make([]views.Prior, len(win))
		for i := range prior {
			prior[i] = views.WasPresent
		}
		t0 := time.Now()
		if err := ta.Recompute(ctx, g); err != nil {
			return err
		}
		if _, err := analytics.UpdateTopo(ctx, ta, &views.TopoUpdate{G: g, Edges: win, Prior: prior, Seq: seq}); err != nil {
			return err
		}
		sec = time.Since(t0).Seconds()
		if c, ok := fresh.(interface{ PullsCutShort() uint64 }); ok && c.PullsCutShort() > 0 {
			return fmt.Errorf("monitor %s: a recompute from its window (%d operations) was cut short by pull_timeout or pull_memory_mib", f.name, len(win))
		}
	}
	f.cpu[1] += threadCPU() - c0
	f.redo = append(f.redo, sec*1e6)
	f.held = append(f.held, len(win))
	for v := range uint64(accounts) {
		a, aok := f.a.Vertex(v)
		b, bok := fresh.Vertex(v)
		if aok != bok {
			return fmt.Errorf("monitor %s: account %d: the update has a measure %v (%v), a recompute from its window %v (%v)", f.name, v, aok, a, bok, b)
		}
		if !aok {
			continue
		}
		x, y := a.(analytics.VertexValue), b.(analytics.VertexValue)
		if math.Abs(x.Value-y.Value) > 1e-6*math.Max(1, math.Abs(x.Value)) {
			return fmt.Errorf("monitor %s: account %d: measure %v after the update, %v recomputed from its window", f.name, v, x.Value, y.Value)
		}
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
