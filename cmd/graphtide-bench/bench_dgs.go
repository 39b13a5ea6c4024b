package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphtide/graphtide/internal/bench/dgsbench"
)

func newBenchDGSCmd() *cobra.Command {
	c := dgsbench.DefaultConfig()
	return newBenchmarkCmd(&cobra.Command{
		Use:   "dgs [flags]",
		Short: "The dynamic-graph-storage study's operations and protocols, against a static CSR",
		Long: `Runs the operations of the dynamic-graph-storage study (INSEDGE, INSVTX,
GETVTX, SEARCHEDGE, SCANNBR, DELEDGE) and its protocols on an RMAT stream,
in order:
  - load: the first --load share of the stream in batches of 10,000;
  - INSEDGE: the next --ops edges as single updates (--write-batch per
    Apply), each timed;
  - INSVTX: --ops vertex records (a label and a property document of about
    60 bytes) for vertices of the graph and, one in eight, new isolated
    ones, as single updates, each timed; GETVTX: --ops reads of random
    vertices' records, on the store and on a Go map of them (each answer
    checked against it);
  - SEARCHEDGE: --ops lookups of random edges of the graph, on the store
    in batches (a snapshot's 100 lookups in one call: searchedge) and one
    at a time with every column (searchedge_single), and SCANNBR: --ops/10
    full neighbor lists of vertices drawn by degree, on the store (a fresh
    snapshot every 100), on a static CSR of the same edges built in the
    same process (each answer checked against it) and on a plain C++ CSR
    of them (the study's: cpp_csr_searchedge_ops_per_sec,
    cpp_csr_scannbr_edges_per_sec); rates over chunks of 100 timed whole,
    latencies over every eighth read timed alone;
  - DELEDGE: --ops single deletes of random edges (then none is found),
    then the same edges inserted only while absent (ApplyIf, a read-write
    transaction each: all applied), and once more (all refused);
  - mixed streams of --ops operations: 50/50 and 80/20 reads (SEARCHEDGE)
    to writes (INSEDGE);
  - --readers goroutines doing SEARCHEDGE beside a writer doing INSEDGE
    for --duration.
It reports operations per second with p50 and p99 latency in µs for each,
neighbors per second for SCANNBR, the store's reads against the faster of
the two CSRs (and the CSR in Go against the C++ one), and GETVTX against
the map's, and the store's bytes on disk per edge against
the CSR's. The last line of stdout is one JSON object, with
searchedge_ops_per_sec, insedge_ops_per_sec, insvtx_ops_per_sec,
getvtx_ops_per_sec, deledge_ops_per_sec, scannbr_ops_per_sec,
searchedge_store_over_csr, getvtx_store_over_map and disk_bytes_per_edge
among its keys.`,
		Example: `  graphtide bench dgs --scale 20
  graphtide bench dgs --scale 18 --ops 50000 --readers 4 --duration 5s`,
	}, &c, &c.Dir, func(ctx context.Context, log io.Writer) (any, error) {
		c.Log = log
		return dgsbench.Run(ctx, c)
	})
}
