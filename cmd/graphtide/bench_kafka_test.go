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
	out, _, err := execute(t, "bench", "kafka", "--brokers", c.ListenAddrs()[0], "--scale", "10", "--edge-factor", "4", "--steady-for", "1s")
	if err != nil {
		t.Fatal(err)
	}
	res := lastJSONLine(t, out)
	for _, k := range []string{"edges", "raw_consume_edges_per_sec", "ingest_edges_per_sec", "visibility_p99_ms"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, res[k])
		}
	}
	if _, _, err := execute(t, "bench", "kafka"); err == nil || !strings.Contains(err.Error(), "--brokers is required") {
		t.Errorf("missing --brokers: %v", err)
	}
}
