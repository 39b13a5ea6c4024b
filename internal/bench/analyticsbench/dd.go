package analyticsbench

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/graphtide/graphtide/internal/bench/ddbase"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// DDFigures are --dd's: Differential Dataflow (bench/dd, built by
// scripts/dd.sh) run after graphtide's stream, on the same graph and the
// same batches (the files --save-graph and --save-stream write), bfs and
// wcc each in a run of its own, so that neither shares the cores with
// graphtide or the other.
type DDFigures struct {
	DifferentialDataflow string `json:"differential_dataflow"` // its version, and timely's
	Timely               string `json:"timely"`
	Workers              int    `json:"workers"`
	// Analytics: bfs and wcc, each against graphtide's batch of the same
	// analytic.
	Analytics map[string]*DDAnalytic `json:"analytics"`
}

// DDAnalytic is one analytic's figures under --dd. Rounds after the
// first are counted, as graphtide's batches after the warm-up.
type DDAnalytic struct {
	RoundSec     float64 `json:"round_sec"`
	RoundP99Sec  float64 `json:"round_p99_sec"`
	Rounds       int     `json:"rounds"`
	LoadSec      float64 `json:"load_sec"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// GraphtideBatchSec is graphtide's batch, from the Apply to the
	// analytic's result (the topology's advance included), the analytic
	// driven alone, as the baseline runs it; Ratio is it over RoundSec.
	// With --registry (not paced), RegistrySec is the same registered
	// with the four others, as serve runs them (sharing the topology's
	// advance and the cores), and RegistryRatio it over RoundSec.
	GraphtideBatchSec    float64 `json:"graphtide_batch_sec"`
	GraphtideBatchP99Sec float64 `json:"graphtide_batch_p99_sec"`
	Ratio                float64 `json:"graphtide_over_dd"`
	RegistrySec          float64 `json:"registry_batch_sec,omitempty"`
	RegistryP99Sec       float64 `json:"registry_batch_p99_sec,omitempty"`
	RegistryRatio        float64 `json:"registry_over_dd,omitempty"`
	// Checked: the result after the last round equals graphtide's (bfs:
	// vertices reached and the sum of their levels; wcc: the largest
	// component's size).
	Checked string `json:"checked"`
}

// DDAuto is --dd's value that finds the baseline with scripts/dd.sh path.
const DDAuto = "auto"

// differentialDataflow runs the baseline (--dd) on the graph and stream
// saved to the scratch directory and compares its results and times with
// graphtide's final analytics (finals: bfs and wcc, dense ids).
func (r *run) differentialDataflow(finals map[string]analytics.Analytic) error {
	bin := r.cfg.DD
	if bin == DDAuto {
		var err error
		if bin, err = ddbase.Find(r.ctx, "."); err != nil {
			return fmt.Errorf("--dd auto: %w", err)
		}
	}
	graph, stream := filepath.Join(r.cfg.Dir, "dd-graph.el"), filepath.Join(r.cfg.Dir, "dd-stream.ops")
	if err := writeGraph(graph, r.src.edges); err != nil {
		return fmt.Errorf("--dd: %w", err)
	}
	if err := writeOps(stream, r.src.ops, r.cfg.BatchSize); err != nil {
		return fmt.Errorf("--dd: %w", err)
	}
	rootDeleted := false
	for _, b := range r.src.ops {
		for _, o := range b {
			rootDeleted = rootDeleted || o.Kind == engine.OpDeleteVertex && o.Src == r.res.Root
		}
	}
	if r.res.Root > 1<<32-1 {
		return fmt.Errorf("--dd: the root %d does not fit the baseline's 32-bit ids", r.res.Root)
	}
	figs := &DDFigures{Analytics: map[string]*DDAnalytic{}}
	for _, name := range []string{ddbase.BFS, ddbase.WCC} {
		out, err := ddbase.Run(r.ctx, ddbase.Config{Binary: bin, Graph: graph, Stream: stream, BatchSize: r.cfg.BatchSize,
			Analytic: name, Root: uint32(r.res.Root), Stderr: r.cfg.Log})
		if err != nil {
			return fmt.Errorf("--dd %s: %w", name, err)
		}
		figs.DifferentialDataflow, figs.Timely, figs.Workers = out.DifferentialDataflow, out.Timely, out.Workers
		secs := out.RoundSecs()
		if len(secs) > 1 {
			secs = secs[1:] // as graphtide's warm-up batch
		}
		a := &DDAnalytic{Rounds: len(secs), LoadSec: out.LoadSec, PeakRSSBytes: out.PeakRSSBytes}
		a.RoundSec, a.RoundP99Sec = meanP99Of(secs)
		in := r.res.Incremental[name]
		a.GraphtideBatchSec, a.GraphtideBatchP99Sec = in.BatchSec, in.BatchP99Sec
		if f := r.res.Registry; f != nil && f.IntervalSec == 0 && f.Analytics[name] != nil {
			a.RegistrySec, a.RegistryP99Sec = f.Analytics[name].BatchSec, f.Analytics[name].BatchP99Sec
		}
		if a.RoundSec > 0 {
			a.Ratio = a.GraphtideBatchSec / a.RoundSec
			a.RegistryRatio = a.RegistrySec / a.RoundSec
		}
		if a.Checked, err = sameAsDD(name, finals[name], out.Summary, rootDeleted); err != nil {
			return fmt.Errorf("--dd: %w", err)
		}
		figs.Analytics[name] = a
		r.logf("dd %s: round %.5fs (p99 %.5fs) over %d rounds, load %.2fs, peak RSS %d MiB; graphtide's batch %.5fs driven alone: %.3fx, registered %.5fs: %.3fx; %s",
			name, a.RoundSec, a.RoundP99Sec, a.Rounds, a.LoadSec, a.PeakRSSBytes>>20, a.GraphtideBatchSec, a.Ratio, a.RegistrySec, a.RegistryRatio, a.Checked)
	}
	r.res.DD = figs
	return nil
}

// sameAsDD checks graphtide's final result of an analytic against the
// baseline's summary after its last round, and says what it compared.
func sameAsDD(name string, a analytics.Analytic, dd ddbase.Summary, rootDeleted bool) (string, error) {
	if a == nil {
		return "", errors.New("no final " + name + " to compare")
	}
	switch s := a.Summary().(type) {
	case analytics.BFSSummary:
		if rootDeleted { // the baseline keeps a deleted root at level 0
			return "not compared: the stream deleted the root", nil
		}
		var sum int64
		for l, n := range s.Levels {
			sum += int64(l) * int64(n)
		}
		if int64(s.Reached) != dd.Reached || sum != dd.LevelSum {
			return "", fmt.Errorf("bfs: graphtide reached %d vertices, levels summing to %d; Differential Dataflow %d, %d", s.Reached, sum, dd.Reached, dd.LevelSum)
		}
		return fmt.Sprintf("the same %d vertices reached, levels summing to %d", s.Reached, sum), nil
	case analytics.WCCSummary:
		if int64(s.Largest) != dd.Largest {
			return "", fmt.Errorf("wcc: graphtide's largest component has %d vertices, Differential Dataflow's %d", s.Largest, dd.Largest)
		}
		return fmt.Sprintf("the same largest component, %d vertices", s.Largest), nil
	}
	return "", fmt.Errorf("%s: no summary to compare", name)
}
