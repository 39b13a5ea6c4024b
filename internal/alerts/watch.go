package alerts

import (
	"context"
	"encoding/json"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/kafkaconn"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// The watcher reads the alert topic as a read_committed consumer, with
// the control records (so that its position passes a transaction's
// marker at the end of the log), and matches what it reads against the
// ledger. It starts where Resume said the topic was read, else from the
// topic's start; partitions it does not know yet start at their start.

// watch reads the topic until ctx ends.
func (k *KafkaSink) watch(ctx context.Context) {
	var cl *kgo.Client
	for cl == nil {
		var err error
		if cl, err = k.watchClient(ctx); err != nil {
			k.log.Warn("cannot read the alert topic yet; retrying", "topic", k.cfg.Topic, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
	defer cl.Close()
	var lastErr time.Time
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil && time.Since(lastErr) > time.Minute {
				lastErr = time.Now()
				k.log.Warn("reading the alert topic failed; retrying (said once a minute)", "topic", k.cfg.Topic, "err", err)
			}
		})
		k.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) { k.seeLocked(r) })
		k.mu.Unlock()
	}
}

// watchClient is a consumer of every partition of the topic, each from
// where the topic was read (Resume), else from its start.
func (k *KafkaSink) watchClient(ctx context.Context) (*kgo.Client, error) {
	starts, err := k.listEnds(ctx, true)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	from := map[int32]kgo.Offset{}
	for p, o := range starts {
		if w, ok := k.watched[p]; ok && w > o {
			o = w
		}
		from[p] = kgo.NewOffset().At(o)
		if _, ok := k.watched[p]; !ok {
			k.watched[p] = o
		}
	}
	k.mu.Unlock()
	cl, err := kgo.NewClient(append(k.connOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{k.cfg.Topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err == nil {
		k.mu.Lock()
		k.watchCl = cl
		k.mu.Unlock()
	}
	return cl, err
}

// connOpts are the options of a new client: the brokers, then Config.Opts.
func (k *KafkaSink) connOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(k.cfg.Brokers...)}, k.cfg.Opts...)
}

// watchAlso makes the watcher read partitions new since it started (from
// their start, in ends), so that waitWatched can wait for them.
func (k *KafkaSink) watchAlso(starts, ends map[int32]int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watchCl == nil {
		return false
	}
	add := map[int32]kgo.Offset{}
	for p := range ends {
		if _, ok := k.watched[p]; !ok {
			k.watched[p] = starts[p]
			add[p] = kgo.NewOffset().At(starts[p])
		}
	}
	if len(add) > 0 {
		k.watchCl.AddConsumePartitions(map[string]map[int32]kgo.Offset{k.cfg.Topic: add})
	}
	return true
}

// seeLocked takes a record of the topic into the ledger. k.mu is held.
func (k *KafkaSink) seeLocked(r *kgo.Record) {
	if next := r.Offset + 1; next > k.watched[r.Partition] {
		k.watched[r.Partition] = next
		close(k.moved)
		k.moved = make(chan struct{})
	}
	if r.Attrs.IsControl() || kafkaconn.Header(r, HeaderGraph) != k.cfg.Graph || kafkaconn.Header(r, HeaderShard) != k.cfg.Shard {
		return
	}
	id := kafkaconn.Header(r, HeaderID)
	if id == "" {
		return
	}
	var v struct {
		Source *analytics.AlertSource `json:"source"`
	}
	_ = json.Unmarshal(r.Value, &v) // a value without a source is matched by its ID alone
	if its := k.led.byID[id]; len(its) == 0 && v.Source != nil && k.floor != nil && below(k.floor, v.Source) {
		return // raised from a record the analytics are past: never raised here again
	}
	k.led.see(id, v.Source)
}

// waitWatched waits until the watcher has read every partition of ends up
// to its offset there.
func (k *KafkaSink) waitWatched(ctx context.Context, ends map[int32]int64) error {
	for {
		k.mu.Lock()
		behind := false
		for p, o := range ends {
			if k.watched[p] < o {
				behind = true
			}
		}
		moved := k.moved
		k.mu.Unlock()
		if !behind {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}
