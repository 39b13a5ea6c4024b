package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestBenchKafkaEmbedded runs bench kafka against franz-go's in-process
// fake broker at a small scale and checks the JSON line's fields.
func TestBenchKafkaEmbedded(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, _, err := execute(t, "kafka", "--brokers", c.ListenAddrs()[0], "--scale", "10", "--edge-factor", "4", "--steady-for", "1s")
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	for _, k := range []string{"edges", "raw_consume_edges_per_sec", "ingest_edges_per_sec", "visibility_p99_ms"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, res[k])
		}
	}
	// The stages' CPU seconds add up to at most the ingest phase's, within
	// what a 100 Hz profile resolves (at this scale there may be no sample
	// at all: bench.TestStageProfile checks the attribution).
	stages, ok := res["ingest_stage_cpu_sec"].(map[string]any)
	sum := 0.0
	for _, v := range stages {
		sum += v.(float64)
	}
	if total := res["ingest_cpu_sec"].(float64); !ok || sum > total+0.2 {
		t.Errorf("ingest_stage_cpu_sec = %v (sum %.2f), ingest_cpu_sec %.2f: want stages adding up to at most the total", res["ingest_stage_cpu_sec"], sum, total)
	}
	if _, _, err := execute(t, "kafka"); err == nil || !strings.Contains(err.Error(), "--brokers is required") {
		t.Errorf("missing --brokers: %v", err)
	}
}
