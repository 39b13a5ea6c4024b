package alerts

import (
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/views/analytics"
)

// stateVersion is the version of the sink's part of an analytics
// checkpoint (Checkpoint). Version 1, written before alert production
// failed over, is a JSON object of partition to end offset: read as the
// topic read that far, nothing pending, nothing ahead (its sink waited for
// every alert to be acknowledged before a checkpoint).
const stateVersion = 2

// savedState is the sink's state in a checkpoint: how far the topic was
// read, the alerts raised here the topic did not hold then, and the IDs
// the topic held that the analytics had not raised yet.
type savedState struct {
	Version int `json:"version"`
	// Shape is alertShape when the pending alerts' values are in the
	// alert JSON of today (analytics.AlertRecord, as the sink writes it);
	// absent (0) in a state written before, whose values Resume writes
	// again.
	Shape   int             `json:"shape,omitempty"`
	Graph   string          `json:"graph,omitempty"`
	Shard   string          `json:"shard,omitempty"`
	Watched map[int32]int64 `json:"watched"`
	Pending []savedItem     `json:"pending,omitempty"`
	Ahead   []aheadSaved    `json:"ahead,omitempty"`
}

// savedItem is a pending alert: enough to build its record again.
type savedItem struct {
	ID       string                 `json:"id"`
	Analytic string                 `json:"analytic"`
	Kind     string                 `json:"kind"`
	Key      string                 `json:"key"`
	Value    json.RawMessage        `json:"value"`
	Source   *analytics.AlertSource `json:"source,omitempty"`
}

// aheadSaved is an ahead entry.
type aheadSaved struct {
	ID     string                 `json:"id"`
	Source *analytics.AlertSource `json:"source,omitempty"`
}

// alertShape is savedState.Shape of the alert JSON of today.
const alertShape = 1

// decodeState reads a sink's checkpoint state, of either version.
func decodeState(b []byte) (savedState, error) {
	// One pass over what may be thousands of pending alerts: a version 1
	// state (a JSON object of partitions) reads as one without a version.
	var probe struct {
		savedState
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil && probe.Version != nil {
		return savedState{}, fmt.Errorf("alerts: the checkpoint's alert state: %w", err)
	}
	if probe.Version == nil { // version 1
		var ends map[int32]int64
		if err := json.Unmarshal(b, &ends); err != nil {
			return savedState{}, fmt.Errorf("alerts: the checkpoint's alert position: %w", err)
		}
		return savedState{Version: 1, Watched: ends}, nil
	}
	if *probe.Version != stateVersion {
		return savedState{}, fmt.Errorf("alerts: the checkpoint's alert state is of version %d; this version reads 1 and %d", *probe.Version, stateVersion)
	}
	s := probe.savedState
	s.Version = *probe.Version
	for _, it := range s.Pending {
		// Unmarshal checked the whole state's syntax: a value present is
		// JSON.
		if it.ID == "" || len(it.Value) == 0 {
			return savedState{}, fmt.Errorf("alerts: the checkpoint's alert state holds a pending alert without an ID or a JSON value")
		}
	}
	return s, nil
}

// saveItem is it as saved.
func saveItem(it *item) savedItem {
	s := savedItem{ID: it.id, Key: string(it.rec.Key), Value: it.rec.Value, Source: it.src}
	for _, h := range it.rec.Headers {
		switch h.Key {
		case HeaderAnalytic:
			s.Analytic = string(h.Value)
		case HeaderKind:
			s.Kind = string(h.Value)
		}
	}
	return s
}

// restoreItem is the pending item s saved, in a state of shape (see
// savedState.Shape). A value of a shape before today's is written again in
// the alert's JSON of today (which reads the older shape:
// analytics.Alert's); one of today's is as the sink wrote it.
func (k *KafkaSink) restoreItem(s savedItem, shape int) *item {
	v := s.Value
	var a analytics.Alert
	if shape == alertShape {
		return &item{id: s.ID, src: s.Source, rec: k.record(s.ID, s.Analytic, s.Kind, s.Key, v)}
	}
	if err := json.Unmarshal(s.Value, &a); err == nil {
		r := k.named(a)
		if b, err := encode(&r); err == nil {
			v = b
		}
	}
	return &item{id: s.ID, src: s.Source, rec: k.record(s.ID, s.Analytic, s.Kind, s.Key, v)}
}

// record builds an alert's record.
func (k *KafkaSink) record(id, analytic, kind, key string, value []byte) *kgo.Record {
	h := []kgo.RecordHeader{{Key: HeaderAnalytic, Value: []byte(analytic)}, {Key: HeaderKind, Value: []byte(kind)}, {Key: HeaderID, Value: []byte(id)}}
	if k.cfg.Graph != "" {
		h = append(h, kgo.RecordHeader{Key: HeaderGraph, Value: []byte(k.cfg.Graph)})
	}
	if k.cfg.Shard != "" {
		h = append(h, kgo.RecordHeader{Key: HeaderShard, Value: []byte(k.cfg.Shard)})
	}
	return &kgo.Record{Topic: k.cfg.Topic, Key: []byte(key), Value: value, Headers: h}
}
