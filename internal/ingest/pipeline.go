package ingest

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/bulk"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// pipelineDepth is the most batches handed to the applier and not yet
// taken back by the poll loop (one being applied, the rest queued). The
// queue lets the poll loop take the client's whole buffered fetch (with
// 4 partitions of 1 MiB of one-edge records, about 200,000 records), and
// franz-go sends the next fetch only then: so it is on the wire while the
// store applies. Memory: pipelineDepth x MaxPollRecords decoded operations
// (32 bytes) and timestamps (24 bytes), about 18 MB at the default 20,000;
// the records themselves go back to the pool once decoded.
const pipelineDepth = 16

// applyJob is one poll's work for the applier: a batch, the position it
// completes, and optionally a checkpoint and the start of a timed flush
// after it.
type applyJob struct {
	batch   engine.Batch
	records int         // Kafka records the batch covers; 0: flush only
	pos     Position    // the position after this batch; never modified once set
	stamps  []time.Time // produce timestamps of the records, for visibility
	flush   bool        // start a background flush right after the batch
	// checkpoint: run Config.Checkpoint right after the batch (before the
	// flush), once everything applied is durable.
	checkpoint bool
	emit       func(decode.Edge)
	// src is the Kafka record being decoded into the batch (nil between
	// records), and accumulate the types whose upserts accumulate: an
	// upsert of one without an event reference is given its record's
	// (sourceRef). Set by the poll loop.
	src        *kgo.Record
	accumulate *engine.TypeSet
	// writes are the writes topic's records of the poll, in log order per
	// partition, applied after batch (writes.go).
	writes []*pendingWrite
	// taken are the poll's records and bytes per topic, added to the
	// metrics once the batch is applied (pollState.countTaken): a reader
	// who sees graphtide_ingest_records_total reach N finds the N records'
	// operations in every fresh read.
	taken []topicCount

	// Set by the applier.
	err         error  // the job failed; nothing after it is applied
	seq         uint64 // the batch's store sequence number
	flushed     bool   // the job started a background flush...
	flushTarget uint64 // ...which makes everything up to this seq durable
	ckOwed      bool   // the checkpoint asked for failed: ask again
}

func newApplyJob() *applyJob {
	j := &applyJob{}
	j.emit = j.add
	return j
}

// add appends one decoded edge operation to the batch, as load does; an
// upsert of an accumulate type without an event reference gets its
// record's "topic/partition/offset".
func (j *applyJob) add(e decode.Edge) { addEvent(&j.batch, e, j.src, j.accumulate) }

// addEvent appends one decoded edge operation of the Kafka record src to
// b, as load does; an upsert of a type of accumulate that gives no event
// reference gets src's "topic/partition/offset" (SourceRef), kept by the
// store as a source position (source "topic/partition", position the
// offset: engine.Batch.SetSourcePayload), which every read renders as that
// text. Every record ingest reads goes through it: those of --topics and
// the writes topic's batches alike (all the upserts of one record share
// its reference, as the elements of a JSON array record do).
func addEvent(b *engine.Batch, e decode.Edge, src *kgo.Record, accumulate *engine.TypeSet) {
	bulk.Add(b, e)
	if e.Op == decode.OpUpsert && len(e.EventRef) == 0 && src != nil && accumulate != nil && accumulate.Has(e.Type) {
		b.SetSourcePayload(sourceName(src.Topic, src.Partition), src.Offset, e.Props)
	}
}

// sourceName is the event source of a Kafka record: "topic/partition".
func sourceName(topic string, partition int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10)
}

// SourceRef is the event reference of a Kafka record's upsert that has
// none of its own: "topic/partition/offset".
func SourceRef(topic string, partition int32, offset int64) string {
	return sourceName(topic, partition) + "/" + strconv.FormatInt(offset, 10)
}

func (j *applyJob) reset() {
	j.batch.Reset()
	j.records, j.pos, j.stamps, j.flush, j.checkpoint = 0, nil, j.stamps[:0], false, false
	j.src = nil
	clear(j.writes)
	j.writes = j.writes[:0]
	j.taken = j.taken[:0]
	j.err, j.seq, j.flushed, j.flushTarget, j.ckOwed = nil, 0, false, 0, false
}

// pipeline connects the poll loop to the applier goroutine. Jobs go to
// the applier on jobs and come back on done in the same order.
//
// INVARIANT: the poll loop never has more than pipelineDepth jobs in
// flight (sent on jobs and not yet received from done), and both channels
// hold pipelineDepth, so neither side ever blocks on a send.
type pipeline struct {
	jobs   chan *applyJob
	done   chan *applyJob
	exited chan struct{}

	// Owned by the poll loop.
	free     []*applyJob // jobs to fill
	inflight int
}

// startApplier starts the applier goroutine; env applies the batches and
// starts the flushes.
func startApplier(env batchApplier) *pipeline {
	p := &pipeline{
		jobs:   make(chan *applyJob, pipelineDepth),
		done:   make(chan *applyJob, pipelineDepth),
		exited: make(chan struct{}),
	}
	for range pipelineDepth {
		p.free = append(p.free, newApplyJob())
	}
	go p.applier(env)
	return p
}

// stop ends the applier once it has finished the jobs sent so far.
func (p *pipeline) stop() {
	close(p.jobs)
	<-p.exited
}

// applier applies jobs in order.
//
// INVARIANT: after a job fails, no later job is applied (they come back
// with the same error): the applied position only ever advances batch by
// batch, so the position recorded with a flush never skips records.
func (p *pipeline) applier(env batchApplier) {
	defer close(p.exited)
	var failed error
	for j := range p.jobs {
		if failed == nil {
			failed = runJob(env, j)
		}
		j.err = failed
		p.done <- j
	}
}

// runJob applies j's batch (which publishes its position as applied),
// then starts a background flush if asked. The poll loop learns which
// positions are durable from the batches' sequence numbers (see
// commitDurable).
func runJob(env batchApplier, j *applyJob) error {
	if j.records > 0 {
		seq, err := env.apply(j)
		if err != nil {
			return err
		}
		j.seq = seq
	}
	if j.checkpoint {
		owed, err := env.checkpoint()
		if err != nil {
			return err
		}
		j.ckOwed = owed
	}
	if j.flush {
		target, err := env.flushAsync()
		if err != nil {
			return err
		}
		j.flushed, j.flushTarget = true, target
	}
	return nil
}
