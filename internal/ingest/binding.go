package ingest

import (
	"log/slog"
	"sort"
	"sync"
	"time"
)

// binding is the source binding part of the Ingester: what the store
// recorded at New, and the Kafka cluster and topics every position this
// run records is bound to (source.go has the rules, ingester_source.go
// how the Ingester asks the brokers). It judges what the brokers report
// (a sourceInfo the Ingester hands it) against them, and talks to no other
// part.
type binding struct {
	graph string // Config.Graph, recorded with every position
	log   *slog.Logger
	// recorded is what the store held at New; Run checks it against the
	// brokers before consuming (bindSource). Never changed.
	recorded Recorded

	mu sync.Mutex
	// clusterID and topicIDs are what every position this run records is
	// bound to: the brokers' cluster ID, and the ID of each topic with
	// offsets. topicIDs is copy-on-write. Protected by mu.
	// INVARIANT: every topic of the applied, durable and poll loop's
	// positions has its ID in topicIDs, and for a configured topic it is
	// the ID the brokers reported (checked at start, learnt at assignment
	// before any of its records is fetched).
	clusterID string
	topicIDs  map[string]TopicID
	// partitions is the partition count of each configured topic that
	// exists, from the newest metadata. Protected by mu.
	partitions map[string]int32

	// lastIDCheck is when fetch errors last made the poll loop check the
	// topics' IDs (checkRecreated). Owned by the poll loop.
	lastIDCheck time.Time
}

func newBinding(rec Recorded, graph string, log *slog.Logger) *binding {
	return &binding{graph: graph, log: log, recorded: rec, topicIDs: rec.TopicIDs, partitions: map[string]int32{}}
}

// check compares the store's recorded offsets of topics with what the
// brokers report (checkSource).
func (b *binding) check(src sourceInfo, topics []string) *SourceMismatchError {
	return checkSource(b.recorded, src, topics)
}

// bind makes src what this run records: its cluster ID, its topics' IDs
// and counts, and the recorded IDs of the other topics, but those of mm
// (the mismatch ResetSourcePosition discards; nil: none).
func (b *binding) bind(src sourceInfo, mm *SourceMismatchError) {
	ids := map[string]TopicID{}
	if mm == nil || !mm.OtherCluster() {
		for t, id := range b.recorded.TopicIDs {
			ids[t] = id
		}
	}
	if mm != nil {
		for _, tm := range mm.Topics {
			delete(ids, tm.Topic)
		}
	}
	for t, id := range src.ids {
		ids[t] = id
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clusterID, b.topicIDs, b.partitions = src.cluster, ids, src.partitions
}

// learn checks what the brokers report at an assignment against what
// this run is bound to: another cluster ID, or another ID for a topic of
// topics with a known ID, means the source changed under the running
// ingester (a *SourceMismatchError for Run to return). IDs of topics new
// to this run are learnt, so that positions can name them, and every
// partition count is taken.
func (b *binding) learn(src sourceInfo, topics []string) *SourceMismatchError {
	b.mu.Lock()
	defer b.mu.Unlock()
	mm := &SourceMismatchError{RecordedCluster: b.clusterID, Cluster: src.cluster, WhileRunning: true}
	if mm.OtherCluster() {
		return mm
	}
	var learn []string
	for _, t := range topics {
		known, ok := b.topicIDs[t]
		switch {
		case !ok:
			learn = append(learn, t)
		case known != src.ids[t]:
			mm.Topics = append(mm.Topics, TopicMismatch{Topic: t, Recorded: known, Found: src.ids[t]})
		}
	}
	if len(mm.Topics) > 0 {
		sortMismatches(mm)
		return mm
	}
	if len(learn) > 0 {
		ids := make(map[string]TopicID, len(b.topicIDs)+len(learn))
		for t, id := range b.topicIDs {
			ids[t] = id
		}
		for _, t := range learn {
			ids[t] = src.ids[t]
			b.log.Info("topic appeared", "topic", t, "topic_id", src.ids[t].String(), "partitions", src.partitions[t])
		}
		b.topicIDs = ids
	}
	for t, n := range src.partitions {
		b.partitions[t] = n
	}
	return nil
}

// recreated judges what the brokers report when fetches of topics fail
// with UNKNOWN_TOPIC_ID: another cluster ID, or another ID for one of
// topics that the brokers know (a topic gone is waited for), is a
// *SourceMismatchError; nil otherwise.
func (b *binding) recreated(src sourceInfo, topics []string) *SourceMismatchError {
	b.mu.Lock()
	defer b.mu.Unlock()
	mm := &SourceMismatchError{RecordedCluster: b.clusterID, Cluster: src.cluster, WhileRunning: true}
	if mm.OtherCluster() {
		return mm
	}
	for _, t := range topics {
		found, exists := src.ids[t]
		if known, ok := b.topicIDs[t]; ok && exists && found != known {
			mm.Topics = append(mm.Topics, TopicMismatch{Topic: t, Recorded: known, Found: found})
		}
	}
	if len(mm.Topics) == 0 {
		return nil
	}
	sortMismatches(mm)
	return mm
}

func sortMismatches(mm *SourceMismatchError) {
	sort.Slice(mm.Topics, func(i, j int) bool { return mm.Topics[i].Topic < mm.Topics[j].Topic })
}

// encode binds p to the source for the store to record.
func (b *binding) encode(p Position) []byte {
	b.mu.Lock()
	r := Recorded{Graph: b.graph, ClusterID: b.clusterID, TopicIDs: b.topicIDs, Position: p}
	b.mu.Unlock()
	return r.Encode() // topicIDs is copy-on-write
}

// topicID is the ID topic t is bound to (zero: none).
func (b *binding) topicID(t string) TopicID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topicIDs[t]
}

// partitionCounts returns a copy of the partition counts known.
func (b *binding) partitionCounts() map[string]int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := make(map[string]int32, len(b.partitions))
	for t, n := range b.partitions {
		c[t] = n
	}
	return c
}

// idCheckDue reports whether fetch errors may make the poll loop read the
// topics' IDs now (at most every idCheckEvery), and if so notes it.
func (b *binding) idCheckDue(now time.Time) bool {
	if now.Sub(b.lastIDCheck) < idCheckEvery {
		return false
	}
	b.lastIDCheck = now
	return true
}

// idCheckEvery bounds how often fetch errors make the poll loop read the
// topics' IDs from the brokers.
const idCheckEvery = 2 * time.Second
