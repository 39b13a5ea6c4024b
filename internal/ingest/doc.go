// Package ingest consumes edge events from Kafka into a graphtide store with
// an exactly-once effect.
//
// How exactly-once works: every batch handed to the store carries the
// position (next offset per topic and partition) that it completes, and the
// store records the newest position durably with each flush. On start each
// assigned partition is seeked to the recorded position; a partition new
// to the store starts by the reset policy (one the group has a committed
// offset for belongs to another store, see below, unless
// ResetSourcePosition starts it there). A crash loses only
// the store's unflushed MemGraph, and exactly those records are consumed
// again; nothing is applied twice and nothing is skipped. After each durable
// flush the group offsets are committed too, only so that lag tools see the
// truth: they are never the source of truth for where to resume.
//
// The position belongs to its source: it is recorded with the Kafka
// cluster ID and the ID of each topic (Recorded, position.go documents the
// bytes; DecodeRecorded reads them). Before Run consumes anything it
// compares them with what the brokers report: offsets of another cluster,
// or of a topic deleted and re-created under the same name, would skip or
// replay records of another log, so Run refuses to start with a
// *SourceMismatchError naming both IDs, unless Config.ResetSourcePosition
// discards those offsets (their partitions then start at the group's
// committed offsets, then by the reset policy).
//
// No silently split graph: a store holds the whole graph of its topics,
// and its recorded position names every partition it ever took, with the
// offset it started at, from the first flush of applied records after it
// took it. After each assignment the ingester checks
// that it holds every partition of its topics and none whose history is in
// another store (the group has a committed offset for it, the store has
// no history of it); if not, it pauses fetching of every partition, Ready
// says why, one ERROR line and a metric tell, and it resumes by itself
// once an assignment no longer conflicts (source.go has the rules,
// assignment.go the verdict, ingester_source.go how they are applied).
// One data directory per consumer group.
//
// No silently partial graph either: before a partition is fetched, the
// offset the store needs it from (its recorded position; 0 for a
// partition new to the store read from the start of its log) is checked
// against where its log starts now (retention and DeleteRecords delete
// the oldest records), and so is every fetch that jumps past the position.
// Records lost that way pause that partition (group mode; Ready says why)
// or refuse the start (partitioned mode), unless
// Config.AcceptLostRecords starts it at its log start (logstart.go).
//
// Partitioned mode (Config.Own, owned.go) is the exception that proves the
// rule: a store holds the partitions it owns, of every topic, and no
// others. The ingester assigns them to itself instead of joining the
// group, and before it fetches anything refuses to start where the store
// holds the history of a partition it does not own, or the group has a
// committed offset for an owned partition the store has none of (another
// store's), but those it adopts, which replay from the start of their log.
//
// String keys: new key ids are synced to the dictionary file before the
// batch that uses them is handed to the store, since the store may make a
// batch durable (a background flush) as soon as it has it.
//
// Bad records never stop a partition: a record that cannot be decoded, or
// that names a vertex id out of range or a weight that is not finite, is
// produced to the dead-letter topic with the reason, source topic,
// partition, offset, the value's size and SHA-256 in headers (acknowledged
// before the position that covers it can become durable), cut to fit the
// topic's max.message.bytes if need be, and a counter rises. A dead
// letter that cannot be written stops its own partition only, at its
// record, until a retry succeeds (deadletter.go has the rules); a crash
// meanwhile resumes at the record, so a dead letter may be written twice,
// a record is never skipped or applied twice.
//
// Health (health.go): Ready also reports brokers that stopped answering,
// partitions lost, partitions blocked on dead letters and a store stall;
// the lag follows the brokers' end offsets on a timer; and the durable
// offsets are committed after each accepted assignment.
//
// Backpressure: the store's Apply blocks while both MemGraphs are full;
// while it does, fetching of every assigned partition is paused, and the
// client buffers at most a bounded number of records.
//
// The Ingester is made of parts, each owning its state under its own
// lock; no part reaches into another's, and the Ingester passes values
// between them:
//
//	positions   applied, durable, accepted, pending, the checkpoint's (positions.go)
//	assignment  the partitions held, the store's history, the verdict on
//	            them, lost partitions, the rebalance signals (assignment.go)
//	binding     what the store recorded, the cluster and topic IDs and
//	            partition counts this run records (binding.go)
//	pauses      why fetching is paused, the partitions held for dead
//	            letters or lost records (pauses.go)
//	deadLetters the blocked partitions, the attempts to write their dead
//	            letters (produce and wait, the worker's retries) and the
//	            dead-letter topic's limit (deadletters.go; deadletter.go
//	            builds a dead letter)
//	health      the brokers' answers, the stall, the end offsets and lag
//	            (health.go)
//	writesTopic the writes topic: the outcome log, the waiters, the
//	            conditions' lookups and the rules a write is applied by,
//	            through a writesStore (writes.go)
//
// Each is tested alone, against a fake of what it asks of the client or
// the store. The Ingester's own methods are the wiring: New and Run
// (ingester.go), the source check (ingester_source.go), the dead letters'
// answers passed to the pauses, the client and the writes topic
// (ingester_deadletter.go), the group's rebalance callbacks
// (rebalance.go), partitioned mode (owned.go), log starts (logstart.go).
//
// Lifecycle of Run: check the source, join the group; then two
// goroutines, so that polling, decoding and the client's next fetch
// overlap the store's Apply: the poll loop (pollloop.go: a pollState
// whose environment, the client, the store, the dictionary and the dead
// letters, is a pollEnv, so that it is tested without a broker) and the
// applier (pipeline.go).
//
//	poll loop: poll -> resume partitions whose dead letter is now
//	    acknowledged -> decode into a batch (+ the position after it)
//	    -> dead letters (a partition whose dead letter fails is cut at
//	    it and the poll decoded again), dict.Sync -> hand the batch to
//	    the applier (at most pipelineDepth in flight)
//	applier:   Apply -> the batch's position becomes "applied"
//	    -> if asked, right after a batch: FlushAsync
//	poll loop, between polls: the batches whose sequence numbers the
//	    store's durable seq covers (flushed by a full MemGraph or by a
//	    timed flush) are durable -> commit the newest one's position;
//	    a timed flush is asked for only when a batch has waited
//	    FlushInterval without becoming durable
//	revoke/lost partitions (allowed only with no batch in flight)
//	    -> flush (and commit on revoke)
//	assignment (onAssigned, adjustOffsets) -> check the source and the
//	    assignment -> pause, or take new partitions into the position
//	dead-letter worker, lag loop: goroutines of their own (see above)
//	ctx done -> finish the batches in flight -> flush -> commit -> return nil
package ingest
