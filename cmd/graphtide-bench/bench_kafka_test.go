package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestBenchKafkaEmbedded: bench kafka's flags reach its configuration, run
// against franz-go's in-process fake broker (its figures and checks are
// kafkabench's tests').
func TestBenchKafkaEmbedded(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, _, err := execute(t, "kafka", "--brokers", c.ListenAddrs()[0], "--scale", "10", "--edge-factor", "4", "--partitions", "3", "--steady-for", "1s")
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	if res["edges"] != 4096.0 || res["partitions"] != 3.0 {
		t.Errorf("edges %v, partitions %v; want 4096, 3", res["edges"], res["partitions"])
	}
	if v, ok := res["ingest_edges_per_sec"].(float64); !ok || v <= 0 {
		t.Errorf("ingest_edges_per_sec = %v, want a positive number", res["ingest_edges_per_sec"])
	}
	if _, _, err := execute(t, "kafka"); err == nil || !strings.Contains(err.Error(), "--brokers is required") {
		t.Errorf("missing --brokers: %v", err)
	}
}
