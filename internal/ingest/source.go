package ingest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file holds the two rules that bind a store to its Kafka source, as
// pure functions over what the store recorded and what the brokers and the
// group report; ingester.go applies them.
//
//  1. The position belongs to its source (checkSource): recorded offsets
//     apply only to the cluster and the topics they were consumed from. A
//     topic deleted and re-created under the same name is another topic.
//  2. No silently split graph (checkAssignment): one store holds the whole
//     graph of its topics, so the member that ingests into it must hold
//     every partition of them and no partition whose history is in another
//     store.

// sourceInfo is what the brokers report about the source: their cluster ID
// and, for each configured topic that exists, its ID and partition count.
type sourceInfo struct {
	cluster    string
	ids        map[string]TopicID
	partitions map[string]int32
}

// TopicMismatch is a topic whose recorded offsets do not belong to the
// topic of that name on the brokers.
type TopicMismatch struct {
	Topic    string
	Recorded TopicID // the ID recorded with the offsets
	Found    TopicID // the ID the brokers report; zero if Missing
	Missing  bool    // the brokers have no topic of that name (deleted)
}

// SourceMismatchError is Run's error when the store's recorded position
// belongs to another source than the brokers': another cluster, or topics
// deleted (and perhaps re-created) since their offsets were recorded. Run
// returns it before consuming anything; Config.ResetSourcePosition (serve
// --reset-source-position) discards the mismatched offsets instead.
type SourceMismatchError struct {
	// RecordedCluster and Cluster are the recorded cluster ID and the
	// brokers'; they differ when the brokers are another cluster (Topics
	// is then empty: every recorded offset is another cluster's).
	RecordedCluster, Cluster string
	Topics                   []TopicMismatch // sorted by topic
	// WhileRunning: the source changed under a running ingester (the
	// brokers were replaced, or a topic was re-created); restarting applies
	// the rule above.
	WhileRunning bool
	// Dir is the store's data directory, when the caller knows it (serve
	// sets it): the error names it.
	Dir string
}

// OtherCluster reports whether the whole position belongs to another
// cluster.
func (e *SourceMismatchError) OtherCluster() bool { return e.RecordedCluster != e.Cluster }

// resetHint is the remedy a refused start names.
const resetHint = "--reset-source-position discards them and resumes from the group's committed offsets (then --reset)"

func (e *SourceMismatchError) Error() string {
	var b strings.Builder
	b.WriteString("ingest: ")
	store := "the store"
	if e.Dir != "" {
		store = "the store in " + e.Dir
	}
	recorded := "the store recorded its offsets with"
	if e.WhileRunning {
		b.WriteString("the Kafka source changed while ingesting: ")
		recorded = "it was ingested with"
	}
	if e.OtherCluster() {
		fmt.Fprintf(&b, "%s recorded offsets of another Kafka cluster: recorded cluster ID %q, the brokers' cluster ID %q", store, e.RecordedCluster, e.Cluster)
	} else {
		for i, t := range e.Topics {
			if i > 0 {
				b.WriteString("; ")
			}
			if t.Missing {
				fmt.Fprintf(&b, "topic %q was deleted: %s topic ID %s, the brokers have no topic %q", t.Topic, recorded, t.Recorded, t.Topic)
			} else {
				fmt.Fprintf(&b, "topic %q was deleted and re-created: %s topic ID %s, the brokers' topic ID is %s", t.Topic, recorded, t.Recorded, t.Found)
			}
		}
	}
	if e.WhileRunning {
		b.WriteString("; restart serve: on start the recorded offsets are checked again, and " + resetHint)
		return b.String()
	}
	b.WriteString("; they would skip or replay records of the wrong log, so serve does not start. To go on: ")
	if e.OtherCluster() {
		b.WriteString("point --brokers at the cluster this store was filled from; or, for a store of this cluster's topics, start a new one in another --dir; or ")
	} else {
		b.WriteString("for a store of the topics as they are now, start a new one in another --dir; or ")
	}
	b.WriteString(resetHint + ", on top of the edges the store holds")
	return b.String()
}

// checkSource compares what the store recorded with what the brokers
// report. Only topics in topics (the configured ones) with recorded
// offsets are checked; a recorded position without offsets binds nothing.
// It returns nil when every recorded offset of those topics belongs to the
// brokers' topic of that name.
func checkSource(rec Recorded, src sourceInfo, topics []string) *SourceMismatchError {
	if len(rec.Position) == 0 {
		return nil
	}
	if rec.ClusterID != src.cluster {
		return &SourceMismatchError{RecordedCluster: rec.ClusterID, Cluster: src.cluster}
	}
	e := &SourceMismatchError{RecordedCluster: rec.ClusterID, Cluster: src.cluster}
	seen := map[string]bool{}
	for _, t := range topics {
		if seen[t] || len(rec.Position[t]) == 0 {
			continue
		}
		seen[t] = true
		found, ok := src.ids[t]
		switch {
		case !ok:
			e.Topics = append(e.Topics, TopicMismatch{Topic: t, Recorded: rec.TopicIDs[t], Missing: true})
		case found != rec.TopicIDs[t]:
			e.Topics = append(e.Topics, TopicMismatch{Topic: t, Recorded: rec.TopicIDs[t], Found: found})
		}
	}
	if len(e.Topics) == 0 {
		return nil
	}
	sort.Slice(e.Topics, func(i, j int) bool { return e.Topics[i].Topic < e.Topics[j].Topic })
	return e
}

// partitionSet is a set of partitions per topic.
type partitionSet map[string]map[int32]bool

func (s partitionSet) add(t string, p int32) {
	if s[t] == nil {
		s[t] = map[int32]bool{}
	}
	s[t][p] = true
}

func (s partitionSet) has(t string, p int32) bool { return s[t][p] }

// String lists the set as "topic[0,2,3] other[1]", sorted.
func (s partitionSet) String() string {
	return fmtPartitions(s, func(p int32, _ bool) string { return strconv.Itoa(int(p)) })
}

// fmtPartitions lists m as "topic[x,y] other[z]", topics and partitions
// sorted, each partition as item says; topics without partitions are left
// out.
func fmtPartitions[V any](m map[string]map[int32]V, item func(int32, V) string) string {
	topics := make([]string, 0, len(m))
	for t, ps := range m {
		if len(ps) > 0 {
			topics = append(topics, t)
		}
	}
	sort.Strings(topics)
	var b strings.Builder
	for i, t := range topics {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t + "[")
		for j, p := range slices.Sorted(maps.Keys(m[t])) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(item(p, m[t][p]))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// assignmentFacts is what the verdict on a member's assignment depends on.
type assignmentFacts struct {
	group  string
	topics []string // the configured topics: only they count
	// history: the partitions the store has history for (recorded, or
	// accepted into it by this run).
	history partitionSet
	// assigned: the partitions the group gave this member.
	assigned partitionSet
	// committed: assigned partitions without history here for which the
	// group had a committed offset when they were assigned.
	committed partitionSet
	// partitions: the number of partitions of each configured topic, as
	// the brokers last reported it (absent: the topic does not exist yet).
	partitions map[string]int32
}

// assignmentConflict is a verdict against an assignment: ingesting it
// would build a partial graph.
type assignmentConflict struct {
	group string
	// elsewhere: partitions of the store's topics not assigned to this
	// member (another member holds them), those with history here among
	// them.
	elsewhere, elsewhereHistory partitionSet
	// foreign: assigned partitions without history here whose group has a
	// committed offset: their history is in another store.
	foreign partitionSet
}

// checkAssignment returns nil if the member can ingest its assignment into
// the store, else what conflicts:
//
//   - a partition of a configured topic that is not assigned to it, while
//     the store has history for it or the topic exists (the store must
//     hold every partition of its topics; another member holds the rest);
//   - an assigned partition that the store has no history for but the
//     group has a committed offset for (its history is in another store).
//
// A partition new to both (no history, no committed offset: a new topic,
// or one that grew) is fine when the member holds the whole topic. A
// member that holds nothing and has no history ingests nothing: that is
// no conflict (a new member holds nothing until the group rebalances
// again; Ready says it has no partitions).
func checkAssignment(f assignmentFacts) *assignmentConflict {
	c := &assignmentConflict{group: f.group, elsewhere: partitionSet{}, elsewhereHistory: partitionSet{}, foreign: partitionSet{}}
	seen := map[string]bool{}
	idle := true
	for _, t := range f.topics {
		idle = idle && len(f.assigned[t]) == 0 && len(f.history[t]) == 0
	}
	if idle {
		return nil
	}
	for _, t := range f.topics {
		if seen[t] {
			continue
		}
		seen[t] = true
		for p := range f.history[t] {
			if !f.assigned.has(t, p) {
				c.elsewhere.add(t, p)
				c.elsewhereHistory.add(t, p)
			}
		}
		for p := int32(0); p < f.partitions[t]; p++ {
			if !f.assigned.has(t, p) {
				c.elsewhere.add(t, p)
			}
		}
		for p := range f.assigned[t] {
			if !f.history.has(t, p) && f.committed.has(t, p) {
				c.foreign.add(t, p)
			}
		}
	}
	if len(c.elsewhere) == 0 && len(c.foreign) == 0 {
		return nil
	}
	return c
}

// certain reports whether the conflict shows another store at once: the
// group committed offsets for partitions assigned here without history
// here, or this store holds the history of partitions assigned elsewhere.
// Otherwise it is partitions new to this store that are not assigned
// here, which is also what a group looks like for a moment when a topic
// appears: franz-go joins as soon as one of its topics has partitions, the
// leader assigns from the metadata it has, and a topic created meanwhile
// (or auto-created by that very metadata request) is assigned at the next
// rebalance, a few hundred milliseconds later (reportConflict waits).
func (c *assignmentConflict) certain() bool {
	return len(c.foreign) > 0 || len(c.elsewhereHistory) > 0
}

// Error says what conflicts, why that would split the graph, and what to
// do; it is the reason /readyz gives and the ERROR line serve logs.
func (c *assignmentConflict) Error() string {
	var parts []string
	if len(c.elsewhere) > 0 {
		s := fmt.Sprintf("partitions %s are assigned to another member of consumer group %q", c.elsewhere, c.group)
		if len(c.elsewhereHistory) > 0 {
			s += fmt.Sprintf(" (this store holds the history of %s)", c.elsewhereHistory)
		}
		parts = append(parts, s)
	}
	if len(c.foreign) > 0 {
		parts = append(parts, fmt.Sprintf("partitions %s were assigned here but their history is in another store (group %q committed offsets for them; this store has none)", c.foreign, c.group))
	}
	return "source conflict: " + strings.Join(parts, "; ") +
		": ingesting would split the graph between stores, so fetching is paused until the assignment no longer conflicts." +
		" Remedy: one data directory per consumer group (a second instance, or a new data directory to be built from the start of the topics, needs its own --group), or restart with --reset-source-position to start over from the group's committed offsets"
}
