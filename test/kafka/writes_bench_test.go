package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/api"
	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/server"
	"github.com/graphtide/graphtide/internal/testkit/writestest"
	"github.com/graphtide/graphtide/internal/writes"
)

// BenchmarkWrites measures POST /v1/batches on the real broker, from the
// request to the answer (produced with acks from every in-sync replica,
// consumed, applied, visible): a plain batch of one insert, one with an
// idempotency key, and one with a condition (each keyed or conditional
// batch also syncs its outcome to writes.log), one client at a time and
// eight at once. By hand:
//
//	go test -run '^$' -bench Writes -benchtime 2000x ./test/kafka
func BenchmarkWrites(b *testing.B) {
	addrs := needBroker(b)
	edges := uniq("wb-edges")
	createTopic(b, edges, 1)
	srv, _ := writestest.Serve(b, server.Config{Kafka: kafkaconn.Options{Brokers: addrs}, Topics: []string{edges},
		Group: uniq("wb-group"), DeadLetterTopic: uniq("wb-dead"), FlushInterval: 2 * time.Second, WritesTopic: uniq("wb-writes")})
	ctx := context.Background()
	c, err := api.NewClient("http://"+srv.HTTPAddr(), api.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	n := 0
	request := func(kind string) *writes.Request {
		n++
		r := &writes.Request{Ops: json.RawMessage(fmt.Sprintf(`[{"src":%d,"dst":%d,"weight":1}]`, n%1000, n))}
		switch kind {
		case "keyed":
			r.IdempotencyKey = fmt.Sprintf("bench-%d", n)
		case "conditional":
			r.Conditions = []writes.Condition{{Kind: writes.KindEdgeAbsent, Src: json.RawMessage(fmt.Sprint(n % 1000)), Dst: json.RawMessage(fmt.Sprint(n))}}
		}
		return r
	}
	for _, kind := range []string{"plain", "keyed", "conditional"} {
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/clients=%d", kind, clients), func(b *testing.B) {
				reqs := make([]*writes.Request, b.N)
				for i := range reqs {
					reqs[i] = request(kind)
				}
				lat := make([]time.Duration, b.N)
				var next sync.Mutex
				i := 0
				var wg sync.WaitGroup
				b.ResetTimer()
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							next.Lock()
							k := i
							i++
							next.Unlock()
							if k >= len(reqs) {
								return
							}
							t0 := time.Now()
							r, err := c.PostBatch(ctx, reqs[k])
							lat[k] = time.Since(t0)
							if err != nil || !r.Applied {
								b.Errorf("write %d: %+v, %v", k, r, err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}
