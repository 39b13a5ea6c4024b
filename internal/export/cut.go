package export

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EndCut is the cut of everything produced so far to topics: each
// partition's end offset (high watermark), as the brokers report it now.
// Every record produced before the call is below it; records produced
// after are not in an export at it.
func EndCut(ctx context.Context, brokers []string, opts []kgo.Opt, topics []string) ([]Offset, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("export: end offsets of %v: %w", topics, err)
	}
	var out []Offset
	for _, t := range topics {
		ps, ok := ends[t]
		if !ok || len(ps) == 0 {
			return nil, fmt.Errorf("export: topic %s: the brokers know no such topic", t)
		}
		for _, o := range ps {
			if o.Err != nil {
				return nil, fmt.Errorf("export: end offset of %s/%d: %w", t, o.Partition, o.Err)
			}
			out = append(out, Offset{Topic: t, Partition: o.Partition, Offset: o.Offset})
		}
	}
	return sortedOffsets(out), nil
}
