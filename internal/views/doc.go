// Package views gives analytics and queries GraphOne-style access to a
// graphtide store (GraphOne, section 6) while ingestion, flushes and
// compactions keep running underneath.
//
// Static views are consistent snapshots for batch analytics and queries:
//
//   - Fresh sees everything applied so far (an engine snapshot at the newest
//     sequence number);
//   - Stale sees only flushed data (an engine snapshot at the durable
//     sequence number): its reads skip the MemGraphs, so a compacted range
//     is copied out in bulk;
//   - Private copies what it needs (the adjacency of the directions it is
//     asked for) into its own memory and releases the store snapshot at
//     once, so it holds back no flush or compaction however long it lives.
//
// Stream views follow a Manager's edge log, a bounded ring of the newest
// applied operations fed by the store's ApplyObserver:
//
//   - a Stream (stateless) hands out batches of new edges, each with its op
//     and sequence number, once at least BatchSize exist, plus the edges
//     leaving its optional sliding window (the last W edges or the last T of
//     ingestion time), so that aggregates can subtract them;
//   - a Stateful stream advances an attached static view to the newest
//     snapshot on every Pull and says which vertices changed since the
//     previous one, with the batch of new edges;
//   - a follower (LogPosition, ReadLog; the HTTP API's follow mode of
//     GET /v1/changes) holds only a position in the log, from any seq the
//     log still holds, and registers nothing.
//
// What it promises:
//
//   - A view's contents never change until Release; using a released view
//     returns ErrReleased.
//   - A stream delivers every applied edge operation exactly once, in
//     sequence order (so in partition order of the Kafka input), unless it
//     falls further behind the log than its bound: then Pull returns a
//     *LostError once, the stream skips to the head, and the consumer must
//     resync from a static view.
//   - Nothing here ever blocks ingestion, flush or compaction: the log never
//     waits for a consumer, and a view pins at most one store snapshot.
//     Memory is bounded by the log's capacity, the windows' bounds and the
//     private views a caller asks for.
//
// Vertex ids are any numbers 0..2^62-1 and string-key ids (from
// engine.HighIDBase), mixed. A Manager keeps one compact vertex index,
// shared by all its views and so by every analytic (index.go); a view's
// IDs is a snapshot of it, an IDSpace mapping the ids present onto dense
// indexes [0, n) so that per-vertex state lives in slices. Dense low
// numbers and keys map through identity regions (one bit per id, at least
// half of them present); every other id through a hash table that readers
// probe without a lock while the index grows (ids.go). Its memory follows
// the vertices that have had an edge since the Manager started, never the
// largest id: about 34 bytes per hashed vertex.
package views
