package ingest

// Record references. Every operation ingest applies is tagged
// (engine.Batch.Tag) with the Kafka record it was decoded from, so that
// what the views hand out (and the alerts the monitors raise) can name it.
// A reference packs the topic (its index in Config.Topics, plus one), the
// partition and the offset into 64 bits:
//
//	bits 56..63  topic index + 1 (1..255; 0: no reference)
//	bits 40..55  partition (0..65535)
//	bits  0..39  offset (0..2^40-1)
//
// A record outside those ranges is tagged 0 (no reference).

const (
	refOffsetBits = 40
	refPartBits   = 16
	maxRefTopics  = 255
)

// recordRef is the reference of the record at (topic index ti, partition,
// offset), 0 when one of them is out of range.
func recordRef(ti int, partition int32, offset int64) uint64 {
	if ti < 0 || ti >= maxRefTopics || partition < 0 || partition >= 1<<refPartBits || offset < 0 || offset >= 1<<refOffsetBits {
		return 0
	}
	return uint64(ti+1)<<(refOffsetBits+refPartBits) | uint64(partition)<<refOffsetBits | uint64(offset)
}

// SourceRecord names a Kafka record.
type SourceRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// SourceOf returns the record an operation came from, given the reference
// it was tagged with by an ingester of those topics (Config.Topics, in
// order); false for 0 or a topic index past them.
func SourceOf(topics []string, ref uint64) (SourceRecord, bool) {
	ti := int(ref>>(refOffsetBits+refPartBits)) - 1
	if ti < 0 || ti >= len(topics) {
		return SourceRecord{}, false
	}
	return SourceRecord{Topic: topics[ti], Partition: int32(ref >> refOffsetBits & (1<<refPartBits - 1)),
		Offset: int64(ref & (1<<refOffsetBits - 1))}, true
}
