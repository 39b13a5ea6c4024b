package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// CreateTopic creates topic with partitions and waits until the leader of
// every partition serves it (a list-offsets request needs that): a
// producer that comes earlier gets NOT_LEADER_FOR_PARTITION and can stall
// for seconds in retries, which would land in a benchmark's figures.
func CreateTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	resp, err := adm.CreateTopics(ctx, int32(partitions), -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	// Wait until the leader of every partition serves it (a list-offsets
	// request needs that): a producer that comes earlier gets
	// NOT_LEADER_FOR_PARTITION and can stall for seconds in retries,
	// which would land in the visibility figures.
	deadline := time.Now().Add(30 * time.Second)
	for {
		offs, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			n := 0
			offs.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					n++
				} else {
					err = o.Err
				}
			})
			if n == partitions {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: partitions not served after 30 s (last error: %w)", topic, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
