#!/usr/bin/env python3
"""Graph-wide analytics over a graphtide export set, on Apache Spark with GraphFrames.

Reads the parts that `graphtide export` wrote into one or more
directories (one per instance, or all in one), refuses a set that is not
one graph as of one Kafka position (the checks of `graphtide export
check`), and runs, over the edges of every part:

  components  weakly connected components (GraphFrames connectedComponents)
  bfs         hop distance from --root along the edges' direction
              (GraphFrames shortestPaths over the reversed edges)
  pagerank    graphtide's PageRank: damping --damping, the rank of dangling
              vertices spread over all, iterated with GraphFrames
              aggregateMessages until the L1 change is below --tolerance
  rings       directed 3-cycles a->b->c->a (GraphFrames motif finding);
              with --ring-window, only those whose three edges' event
              times rise along the ring within the window

The analytics' vertices are those with an edge, as graphtide's are.
Results go to --out: components/, bfs/ and pagerank/ as Parquet (columns
id and component, distance or rank), rings/ (a, b, c) and summary.json.

    eval "$(deploy/spark/setup.sh)"
    "$GRAPHTIDE_SPARK_PYTHON" deploy/spark/graphframes_job.py --root alice --out results export/
"""

import argparse
import glob
import hashlib
import json
import os
import sys
import time

FORMAT = "graphtide-export-1"


class SetError(Exception):
    """A set of parts that is not one graph as of one Kafka position."""


def offsets_text(offs):
    return "[" + " ".join(f"{o['topic']}/{o['partition']}@{o['offset']}" for o in offs) + "]"


def read_set(dirs):
    """The manifests of every part in dirs, checked as one set."""
    parts = []
    for d in dirs:
        paths = sorted(glob.glob(os.path.join(d, "*.manifest.json")))
        if not paths:
            raise SetError(f"no part in {d} (no *.manifest.json)")
        for p in paths:
            with open(p, encoding="utf-8") as f:
                m = json.load(f)
            if m.get("format") != FORMAT:
                raise SetError(f"{p}: format {m.get('format')!r}, want {FORMAT!r}")
            m["_dir"] = d
            parts.append(m)
    check_set(parts)
    return parts


def check_set(parts):
    """Raise SetError unless parts share one cut, each holding its share."""
    first = parts[0]
    names, holder = {}, {}
    for m in parts:
        if m["part"] in names:
            raise SetError(f"part {m['part']!r} is in {names[m['part']]} and in {m['_dir']}")
        names[m["part"]] = m["_dir"]
        if m.get("graph", "") != first.get("graph", ""):
            raise SetError(f"part {m['part']!r} is of graph {m.get('graph', '')!r}, part {first['part']!r} of graph {first.get('graph', '')!r}")
        if m["cut"] != first["cut"]:
            raise SetError(f"parts of different cuts: {m['part']!r} is as of {offsets_text(m['cut'])}, "
                           f"{first['part']!r} as of {offsets_text(first['cut'])}; export every part with the same --at-offsets")
        cut = {(o["topic"], o["partition"]): o["offset"] for o in m["cut"]}
        for o in m["position"]:
            k = (o["topic"], o["partition"])
            if cut.get(k) != o["offset"]:
                raise SetError(f"part {m['part']!r} is at {o['topic']}/{o['partition']}@{o['offset']}, its cut at {cut.get(k)}")
            if k in holder:
                raise SetError(f"{k[0]}/{k[1]} is in parts {holder[k]!r} and {m['part']!r}: a partition must be in one part")
            holder[k] = m["part"]
    missing = [f"{o['topic']}/{o['partition']}" for o in first["cut"] if (o["topic"], o["partition"]) not in holder]
    if missing:
        raise SetError(f"no part holds {', '.join(missing)} of the cut: the set is missing a part")
    for m in parts:
        for f in m["files"]:
            path = os.path.join(m["_dir"], f["name"])
            h, n = hashlib.sha256(), 0
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
                    n += len(chunk)
            if n != f["bytes"] or h.hexdigest() != f["sha256"]:
                raise SetError(f"{path}: {n} bytes, SHA-256 {h.hexdigest()[:12]}…; the manifest of part {m['part']!r} "
                               f"says {f['bytes']} bytes, {f['sha256'][:12]}…: the file is damaged")


def files_of(parts, suffix):
    return [os.path.join(m["_dir"], f["name"]) for m in parts for f in m["files"] if f["name"].endswith(suffix)]


def spark_session(args):
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # local mode: no other interface
    b = (SparkSession.builder.master(args.master).appName("graphtide-graphframes")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
         .config("spark.driver.memory", args.driver_memory))
    jars = os.environ.get("GRAPHFRAMES_JARS", "")
    if jars:
        b = b.config("spark.jars", jars)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.setCheckpointDir(args.checkpoint_dir)
    return spark


def pagerank(spark, g, n, damping, tolerance, max_iterations):
    """graphtide's PageRank over GraphFrame g of n vertices: each round,
    rank = (1-d)/n + d*dangling/n + d*(sum of in-neighbors' rank/out-degree)."""
    from graphframes import GraphFrame
    from graphframes.lib import AggregateMessages as AM
    from pyspark.sql import functions as F

    deg = g.outDegrees
    ranks = g.vertices.select("id").join(deg, "id", "left").withColumn("rank", F.lit(1.0 / n)).localCheckpoint()
    iterations, delta = 0, float("inf")
    while iterations < max_iterations and delta >= tolerance:
        dangling = ranks.filter(F.col("outDegree").isNull()).agg(F.sum("rank")).first()[0] or 0.0
        contrib = GraphFrame(ranks, g.edges).aggregateMessages(
            F.sum(AM.msg).alias("s"), sendToDst=AM.src["rank"] / AM.src["outDegree"])
        base = (1 - damping) / n + damping * dangling / n
        new = (ranks.join(contrib, "id", "left")
               .select("id", "outDegree", F.col("rank").alias("old"),
                       (F.lit(base) + F.lit(damping) * F.coalesce(F.col("s"), F.lit(0.0))).alias("rank"))
               .localCheckpoint())
        delta = new.agg(F.sum(F.abs(F.col("rank") - F.col("old")))).first()[0]
        ranks = new.drop("old")
        iterations += 1
    return ranks.select("id", "rank"), iterations, delta


def rings(g, window_us):
    """Directed 3-cycles a->b->c->a, each once (a the least name); with
    window_us, only those whose edges' times rise along it within it."""
    from pyspark.sql import functions as F

    r = g.find("(a)-[e1]->(b); (b)-[e2]->(c); (c)-[e3]->(a)").filter(
        (F.col("a.id") < F.col("b.id")) & (F.col("a.id") < F.col("c.id")))
    if window_us:
        t1, t2, t3 = (F.unix_micros(F.col(f"e{i}.time")) for i in (1, 2, 3))
        r = r.filter((t1 <= t2) & (t2 <= t3) & (t3 - t1 <= window_us))
    return r.select(F.col("a.id").alias("a"), F.col("b.id").alias("b"), F.col("c.id").alias("c")).distinct()


def run(args):
    parts = read_set(args.dirs)
    t0 = time.time()
    spark = spark_session(args)
    from graphframes import GraphFrame
    from pyspark.sql import functions as F

    edges = spark.read.parquet(*files_of(parts, ".edges.parquet"))
    if args.types:
        edges = edges.filter(F.col("type").isin(args.types.split(",")))
    edges = edges.cache()
    vertices = (edges.select(F.col("src").alias("id")).union(edges.select(F.col("dst").alias("id")))
                .distinct().cache())
    g = GraphFrame(vertices, edges)
    n, m = vertices.count(), edges.count()
    timings = {"load": time.time() - t0}
    os.makedirs(args.out, exist_ok=True)
    summary = {"parts": [p["part"] for p in parts], "cut": parts[0]["cut"], "vertices": n, "edges": m}

    t = time.time()
    cc = g.connectedComponents()
    cc.select("id", "component").coalesce(1).write.mode("overwrite").parquet(os.path.join(args.out, "components"))
    summary["components"] = cc.select("component").distinct().count()
    timings["components"] = time.time() - t

    if args.root:
        t = time.time()
        rev = GraphFrame(vertices, edges.select(F.col("dst").alias("src"), F.col("src").alias("dst")))
        sp = rev.shortestPaths(landmarks=[args.root])
        dist = sp.select("id", F.col("distances")[args.root].alias("distance")).filter(F.col("distance").isNotNull())
        dist.coalesce(1).write.mode("overwrite").parquet(os.path.join(args.out, "bfs"))
        summary["bfs_reached"] = dist.count()
        timings["bfs"] = time.time() - t

    t = time.time()
    pr, its, delta = pagerank(spark, g, n, args.damping, args.tolerance, args.max_iterations)
    pr.coalesce(1).write.mode("overwrite").parquet(os.path.join(args.out, "pagerank"))
    summary["pagerank"] = {"iterations": its, "l1_change": delta,
                           "top": [[r["id"], r["rank"]] for r in pr.orderBy(F.desc("rank"), "id").limit(10).collect()]}
    timings["pagerank"] = time.time() - t

    t = time.time()
    rg = rings(g, args.ring_window * 1_000_000 if args.ring_window else 0).cache()
    rg.coalesce(1).write.mode("overwrite").parquet(os.path.join(args.out, "rings"))
    summary["rings"] = rg.count()
    summary["ring_sample"] = [[r["a"], r["b"], r["c"]] for r in rg.orderBy("a", "b", "c").limit(5).collect()]
    timings["rings"] = time.time() - t

    summary["seconds"] = {k: round(v, 2) for k, v in timings.items()}
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(json.dumps({k: summary[k] for k in ("vertices", "edges", "components", "rings")} |
                     {"bfs_reached": summary.get("bfs_reached"), "pagerank_iterations": its}))
    spark.stop()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", help="directories holding the parts of one export set")
    p.add_argument("--out", required=True, help="directory for the results")
    p.add_argument("--root", help="the BFS root, named as in the export (a number, a key, or key:42)")
    p.add_argument("--types", help="only edges of these types (comma-separated names)")
    p.add_argument("--damping", type=float, default=0.85)
    p.add_argument("--tolerance", type=float, default=1e-7, help="stop PageRank when the L1 change is below this")
    p.add_argument("--max-iterations", type=int, default=100)
    p.add_argument("--ring-window", type=int, default=0, metavar="SECONDS",
                   help="only rings whose edges' event times rise within this many seconds")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="2g")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--checkpoint-dir", default="/tmp/graphtide-spark-checkpoints")
    p.add_argument("--check-only", action="store_true", help="check the set and exit")
    args = p.parse_args(argv)
    try:
        if args.check_only:
            parts = read_set(args.dirs)
            print(f"{len(parts)} parts, one cut of {len(parts[0]['cut'])} partitions")
            return 0
        run(args)
    except SetError as e:
        print(f"graphframes_job: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
