package analyticsbench

// Short, Long and Example are the command's help (cmd/graphtide shows
// them; they live here, beside what they describe).
const (
	Short = "Analytics kernels on the store's topology against a plain CSR, and what a user waits for after each batch of a stream"

	Long = `Loads a graph into a fresh store (with in-edges) and compacts it: a
generated one (--graph rmat: R-MAT draws, self-loops and repeats kept;
--graph kron: the same draws as a simple graph, Graph500's Kronecker
graph; both with the Graph500 permutation of the vertex ids), or the
whole of --input FILE (el or bin). Then, in the same run:
  - bfs (from --root, default the vertex with the most out-edges), wcc,
    pagerank (to its default tolerance, at most 20 iterations; their
    count is printed) and sssp on the topology of the compacted view
    (what serve's analytics read) and on the topology of a plain
    in-memory CSR of the same edges: the same kernels (best of
    --repeats; the results must agree, and bfs, wcc and sssp must equal
    reference kernels run on the loaded edges at every vertex);
  - a stream in batches of --batch-size operations: --stream FILE (an
    op-stream file: "+ SRC DST [WEIGHT]", "- SRC DST", "x V" lines;
    docs/benchmarks.md), or one generated beside the graph: new edges
    (--stream-fraction of the graph's edge count; a generated graph's
    sampler drawing on, so its hubs get them; for --input, endpoints
    drawn in proportion to their edges), --delete-fraction deletes of
    existing edges, --vertex-delete-fraction vertex deletes and
    --hub-vertex-deletes of the vertices with the most edges. Per batch
    (the first, a warm-up, reported apart): batch_sec, from the store's
    Apply to each analytic's result at the batch's seq (the topology's
    advance included), mean and p99, per analytic (bfs, wcc, pagerank,
    sssp, degree) and for all five one after the other; the advance
    alone (and per operation); heap bytes allocated per operation; and,
    as details, each analytic's update alone, a recompute on the same
    graph every third batch (whose result must equal the update's) and
    the fallbacks (updates that recomputed). With --registry, the same
    batches also go to a store of their own whose five analytics run
    registered together in an analytics registry, as serve runs them:
    each result's time after the Apply (its results must equal the
    others' after the stream); with --registry-interval D, that store
    gets a batch every D instead, after the others' stream, whatever its
    analytics do (as serve's stream from Kafka), and each analytic's
    freshness is measured: per update, from the Apply of the oldest
    operation it took to its result;
  - the kernels again on the topology the stream advanced;
  - all of it under each id layout of --ids, each in a store of its own:
    dense (the ids as generated), sparse (each id v mapped to (v*K+C) mod
    2^62 and through the key dictionary, as serve and load store them),
    unmapped (the same sparse ids stored as they are) and keys (ids of the
    string-key band in order of first appearance). Results must agree with
    dense ones vertex for vertex. With --input only dense is measured.
--save-graph and --save-stream write the graph loaded (el) and the stream
applied (op-stream), for another system to replay the same batches.
With --kernels-only it times only the bare kernels (bfs, wcc, pagerank to
its default tolerance, sssp) on a plain CSR topology of the whole graph,
--repeats times each, taking turns, with no store and no stream in the
process: the min and median of each, and pagerank's time per iteration
past the first (for a by-hand comparison with GAPBS, see
docs/benchmarks.md).
The last line of stdout is one JSON object.`

	Example = `  graphtide bench analytics --scale 20 --edge-factor 16
  graphtide bench analytics --graph kron --scale 20 --ids dense --registry --delete-fraction 0.5
  graphtide bench analytics --graph kron --scale 20 --ids dense --registry --registry-interval 50ms
  graphtide bench analytics --graph kron --scale 17 --ids dense --save-graph k17.el --save-stream k17.ops
  graphtide bench analytics --input k17.el --stream k17.ops
  graphtide bench analytics --input g20.el --root 872144 --kernels-only --repeats 8`
)
