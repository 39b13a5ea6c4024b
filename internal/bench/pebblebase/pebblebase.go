// Package pebblebase is the Pebble (LSM key-value store) baseline for
// graphtide's ingest and scan benchmarks.
//
// Each edge is stored as one key with an empty value:
//
//	key = big-endian src (8 bytes) | big-endian dst (8 bytes)
//
// so Pebble's key order groups a vertex's out-edges together, sorted by dst,
// and duplicate edges collapse into one key. A full scan therefore visits the
// same deduplicated adjacency lists as a staticcsr.CSR.
package pebblebase

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/graphtide/graphtide/internal/gen"
)

// Defaults applied to zero Options fields.
const (
	DefaultBatchSize    = 10_000   // edges per committed batch
	DefaultMemTableSize = 64 << 20 // 64 MiB
)

// KeySize is the length of an edge key.
const KeySize = 16

// Options configures the baseline. The zero value uses the defaults.
type Options struct {
	// BatchSize is the number of edges per batch; 0 means DefaultBatchSize.
	BatchSize int
	// MemTableSize is Pebble's memtable size in bytes; 0 means
	// DefaultMemTableSize.
	MemTableSize uint64
	// Verbose passes Pebble's informational log lines (WAL recovery, and so
	// on) to the standard logger. Errors are always logged.
	Verbose bool
}

func (o Options) withDefaults() (Options, error) {
	if o.BatchSize < 0 {
		return o, fmt.Errorf("pebblebase: batch size must be positive, got %d", o.BatchSize)
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	return o, nil
}

// DB is a Pebble database holding edge keys.
type DB struct {
	db   *pebble.DB
	dir  string
	opts Options
}

// Open opens (creating if needed) the Pebble database in dir.
//
// Pebble runs with its default options except for the memtable size and a
// disabled write-ahead log. graphtide uses Kafka as its write-ahead log and
// does not write a WAL of its own, so charging Pebble for one would make the
// comparison unfair; with the WAL off both stores make ingested data durable
// only by flushing it to their own files, which Ingest includes in its time.
func Open(dir string, opts Options) (*DB, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	po := &pebble.Options{
		MemTableSize: opts.MemTableSize,
		DisableWAL:   true,
	}
	if !opts.Verbose {
		po.Logger = quietLogger{}
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("pebblebase: open %s: %w", dir, err)
	}
	return &DB{db: db, dir: dir, opts: opts}, nil
}

// Close closes the database.
func (d *DB) Close() error {
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("pebblebase: close %s: %w", d.dir, err)
	}
	return nil
}

// quietLogger drops Pebble's informational messages, which would otherwise
// interleave with benchmark output, and keeps errors and fatal errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Errorf(format string, args ...any) { pebble.DefaultLogger.Errorf(format, args...) }

func (quietLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }

// IngestResult describes one Ingest call.
type IngestResult struct {
	Edges     int           // edges written, duplicates included
	Batches   int           // batches committed
	Elapsed   time.Duration // from the first batch to the end of the flush
	DiskBytes int64         // bytes of all files under the directory after the flush
}

// EdgesPerSecond returns the ingest throughput.
func (r IngestResult) EdgesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Edges) / r.Elapsed.Seconds()
}

// Ingest writes edges in batches of Options.BatchSize, each committed with
// pebble.NoSync, then flushes the memtables so that everything written is
// in sstables. The elapsed time covers the batches and the flush; DiskBytes
// is measured right after the flush (background compactions may still be
// running and may change it later).
func (d *DB) Ingest(edges []gen.Edge) (IngestResult, error) {
	var res IngestResult
	start := time.Now()
	b := d.db.NewBatch()
	defer b.Close()
	var key [KeySize]byte
	for i, e := range edges {
		EncodeKey(key[:], e)
		if err := b.Set(key[:], nil, nil); err != nil {
			return res, fmt.Errorf("pebblebase: batch set edge %d: %w", i, err)
		}
		if int(b.Count()) == d.opts.BatchSize || i == len(edges)-1 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return res, fmt.Errorf("pebblebase: commit batch %d: %w", res.Batches, err)
			}
			res.Batches++
			b.Reset()
		}
	}
	if err := d.db.Flush(); err != nil {
		return res, fmt.Errorf("pebblebase: flush: %w", err)
	}
	res.Elapsed = time.Since(start)
	res.Edges = len(edges)

	bytes, err := DiskUsage(d.dir)
	if err != nil {
		return res, err
	}
	res.DiskBytes = bytes
	return res, nil
}

// ScanResult describes one full scan.
type ScanResult struct {
	Edges     uint64        // distinct edges (keys) visited
	Sources   uint64        // distinct src vertices, i.e. vertices with out-degree > 0
	DstSum    uint64        // sum of all dst ids, wrapping; a checksum of the scan
	MaxDegree uint64        // largest out-degree seen
	Elapsed   time.Duration // time for the scan
}

// Scan iterates over every key in order and, per src, counts and sums its
// dsts, like a CSR scan over all out-neighbors of every vertex.
func (d *DB) Scan() (res ScanResult, err error) {
	start := time.Now()
	it, err := d.db.NewIter(nil)
	if err != nil {
		return res, fmt.Errorf("pebblebase: new iterator: %w", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("pebblebase: close iterator: %w", cerr)
		}
	}()
	var cur, degree uint64
	for valid := it.First(); valid; valid = it.Next() {
		e, err := DecodeKey(it.Key())
		if err != nil {
			return res, err
		}
		if res.Edges == 0 || e.Src != cur {
			res.MaxDegree = max(res.MaxDegree, degree)
			cur, degree = e.Src, 0
			res.Sources++
		}
		degree++
		res.DstSum += e.Dst
		res.Edges++
	}
	if err := it.Error(); err != nil {
		return res, fmt.Errorf("pebblebase: scan: %w", err)
	}
	res.MaxDegree = max(res.MaxDegree, degree)
	res.Elapsed = time.Since(start)
	return res, nil
}

// EncodeKey writes e's key into dst, which must be at least KeySize bytes.
func EncodeKey(dst []byte, e gen.Edge) {
	binary.BigEndian.PutUint64(dst[:8], e.Src)
	binary.BigEndian.PutUint64(dst[8:KeySize], e.Dst)
}

// DecodeKey parses an edge key.
func DecodeKey(key []byte) (gen.Edge, error) {
	if len(key) != KeySize {
		return gen.Edge{}, fmt.Errorf("pebblebase: key %x has %d bytes, want %d", key, len(key), KeySize)
	}
	return gen.Edge{
		Src: binary.BigEndian.Uint64(key[:8]),
		Dst: binary.BigEndian.Uint64(key[8:]),
	}, nil
}

// DiskUsage returns the total size of the regular files under dir.
func DiskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			// A file deleted by a concurrent compaction is not an error.
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if !de.Type().IsRegular() {
			return nil
		}
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pebblebase: disk usage of %s: %w", dir, err)
	}
	return total, nil
}
