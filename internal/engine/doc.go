// Package engine is the Go API of graphtide's storage core: a dynamic graph
// store built as an LSM-tree of CSR files (the LSMGraph design), implemented
// in C++ (internal/core/) and compiled into this package by cgo.
//
// What it promises:
//
//   - Apply writes a batch of edge upserts, edge deletes and vertex deletes
//     atomically and gives it a commit sequence number. Within a batch, ops
//     apply in order.
//   - A Snapshot pins the newest sequence number and keeps returning exactly
//     the graph as of that number, whatever flushes and compactions run
//     afterwards, until it is released. Reads never block on flush or
//     compaction, and Apply never waits for a read: the core's readers take
//     no lock that a write needs.
//   - DurableSnapshot pins the newest durable sequence number instead: it
//     sees only flushed data and reads no MemGraph (GraphOne's stale view).
//   - Reads come per vertex (Degree, Neighbors), per vertex range (Scan) or
//     per vertex list (Gather); Scan and Gather cross into the core once per
//     buffer, not once per vertex.
//   - Vertex ids lie in two bands, below HighIDBase (numbers) and from it up
//     (string keys from the key dictionary); a snapshot gives a bound per
//     band so per-vertex state can be kept densely.
//   - An ApplyObserver sees every applied batch in sequence order (the
//     views package builds its stream of changes on it).
//   - Durability is explicit: a batch survives a crash once a flush covering
//     it has completed (Flush, or the background flush of a full MemGraph).
//     The opaque source position given with the newest batch of that flush is
//     recorded with it and returned by SourcePosition after reopening, so a
//     Kafka consumer can replay exactly what was lost: Kafka is the write-ahead
//     log. An owner's annex (SetAnnex) is recorded beside it, at the same
//     point, and returned by Annex.
//   - Every file and manifest record is checksummed. Corruption is reported as
//     a *CorruptionError naming the file and byte offset; corrupt data is never
//     returned.
//   - Recovery never destroys what might be data: Open refuses (a
//     *CorruptionError) rather than cut or delete anything that is not
//     provably a torn manifest tail or the leftover of an unfinished flush or
//     compaction (see Open). Options.ReadOnly opens without writing a byte,
//     and Check reports every problem of a store directory without writing.
//   - All methods are safe for concurrent use. Apply may block while both
//     MemGraphs are full (a write stall, counted in Metrics). Flush and
//     CompactAll block until their work is durable. Close waits for in-flight
//     calls and background work.
//
// The engine knows nothing of Kafka or Prometheus: Metrics returns a plain
// struct, and callers export it.
package engine
