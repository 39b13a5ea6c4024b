package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
)

func TestStoreCollectorValuesAndLint(t *testing.T) {
	s, err := engine.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b engine.Batch
	b.Insert(1, 2)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewStoreCollector(s))
	ingest.NewMetrics(reg)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP graphtide_store_flushes_total Completed flushes.
# TYPE graphtide_store_flushes_total counter
graphtide_store_flushes_total 1
# HELP graphtide_store_level_files Files per level.
# TYPE graphtide_store_level_files gauge
graphtide_store_level_files{level="0"} 1
graphtide_store_level_files{level="1"} 0
graphtide_store_level_files{level="2"} 0
graphtide_store_level_files{level="3"} 0
graphtide_store_level_files{level="4"} 0
graphtide_store_level_files{level="5"} 0
graphtide_store_level_files{level="6"} 0
`), "graphtide_store_flushes_total", "graphtide_store_level_files"); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
