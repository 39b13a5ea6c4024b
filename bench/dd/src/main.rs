//! graphtide-dd: the Differential Dataflow baseline of `graphtide bench
//! analytics`.
//!
//! It reads a graph (edge list, `SRC DST [WEIGHT]` per line) and a stream
//! of operations (`+ SRC DST [WEIGHT]`, `- SRC DST`, `x V`; `#` starts a
//! comment line), loads the graph as round 0, then feeds one round per
//! batch of `--batch-size` operations to DD's own bfs
//! (`differential_dataflow::algorithms::graphs::bfs`) or weakly connected
//! components (`propagate_at`, or `propagate` with `--wcc-plain`, of the
//! smallest id over the edges taken both ways), and prints one JSON
//! document on stdout: each round's wall time (from the first change fed
//! to the probe passing the round's time: the arrangements and the
//! computation), the load's, a summary of the result after every round,
//! and the peak resident set from the load on (the harness's own peak,
//! while it reads the files and keeps the edge set, reported apart).
//!
//! graphtide's semantics decide what DD is fed: the graph is a set of
//! directed edges, so an insert of an edge already present and a delete of
//! an edge not present change nothing, and `x V` deletes V's current in-
//! and out-edges and V itself. The program keeps that set (before the
//! timed rounds) and feeds DD only the real changes, +1 and -1. The
//! vertices are those of the graph and of inserted edges, less those
//! deleted by `x` (an edge inserted later brings its endpoints back); a
//! vertex without edges is a component of its own (wcc), and the root is
//! always reached at level 0 (bfs).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Barrier, Mutex, RwLock};
use std::time::Instant;

use differential_dataflow::algorithms::graphs::{
    bfs::bfs,
    propagate::{propagate, propagate_at},
};
use differential_dataflow::input::Input;
use serde::Serialize;
use timely::dataflow::operators::probe::Handle;

type Node = u32;

struct Args {
    graph: String,
    stream: String,
    batch_size: usize,
    analytic: String,
    root: Node,
    workers: usize,
    park: bool,
    plain: bool,
}

const USAGE: &str = "usage: graphtide-dd --graph FILE --stream FILE --analytic bfs|wcc \
[--root V] [--batch-size N] [--workers N] [--park] [--wcc-plain]";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        graph: String::new(),
        stream: String::new(),
        batch_size: 10_000,
        analytic: String::new(),
        root: 0,
        workers: 2,
        park: false,
        plain: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--graph" => a.graph = value()?,
            "--stream" => a.stream = value()?,
            "--analytic" => a.analytic = value()?,
            "--batch-size" => {
                a.batch_size = value()?.parse().map_err(|e| format!("--batch-size: {e}"))?
            }
            "--root" => a.root = value()?.parse().map_err(|e| format!("--root: {e}"))?,
            "--workers" | "-w" => {
                a.workers = value()?.parse().map_err(|e| format!("--workers: {e}"))?
            }
            "--park" => a.park = true,
            "--wcc-plain" => a.plain = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    if a.graph.is_empty() || a.stream.is_empty() {
        return Err(format!("--graph and --stream are required\n{USAGE}"));
    }
    if a.analytic != "bfs" && a.analytic != "wcc" {
        return Err(format!(
            "--analytic must be bfs or wcc, not {:?}",
            a.analytic
        ));
    }
    if a.batch_size == 0 || a.workers == 0 {
        return Err("--batch-size and --workers must be at least 1".to_string());
    }
    Ok(a)
}

fn parse_id(s: &str, file: &str, line: usize) -> Result<Node, String> {
    s.parse::<Node>().map_err(|e| {
        format!("{file}:{line}: vertex id {s:?}: {e} (ids are integers 0..=4294967295)")
    })
}

/// One line of the stream.
enum Op {
    Insert(Node, Node),
    Delete(Node, Node),
    DeleteVertex(Node),
}

fn read_lines(
    path: &str,
    mut f: impl FnMut(usize, &str) -> Result<(), String>,
) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("open {path}: {e}"))?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut line = String::new();
    let mut n = 0;
    loop {
        line.clear();
        let got = r
            .read_line(&mut line)
            .map_err(|e| format!("read {path}: {e}"))?;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        let t = line.trim_end_matches(['\n', '\r']);
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        f(n, t)?;
    }
}

fn read_graph(path: &str) -> Result<Vec<(Node, Node)>, String> {
    let mut edges = Vec::new();
    read_lines(path, |n, t| {
        let mut fs = t.split_ascii_whitespace();
        let (Some(s), Some(d)) = (fs.next(), fs.next()) else {
            return Err(format!("{path}:{n}: want SRC DST [WEIGHT], got {t:?}"));
        };
        edges.push((parse_id(s, path, n)?, parse_id(d, path, n)?));
        Ok(())
    })?;
    Ok(edges)
}

fn read_stream(path: &str) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    read_lines(path, |n, t| {
        let fs: Vec<&str> = t.split(' ').collect();
        let op = match (fs[0], fs.len()) {
            ("+", 3) | ("+", 4) => Op::Insert(parse_id(fs[1], path, n)?, parse_id(fs[2], path, n)?),
            ("-", 3) => Op::Delete(parse_id(fs[1], path, n)?, parse_id(fs[2], path, n)?),
            ("x", 2) => Op::DeleteVertex(parse_id(fs[1], path, n)?),
            _ => {
                return Err(format!(
                    "{path}:{n}: want `+ SRC DST [WEIGHT]`, `- SRC DST` or `x V`, got {t:?}"
                ))
            }
        };
        ops.push(op);
        Ok(())
    })?;
    Ok(ops)
}

/// The changes one round feeds DD. Their order within a round does not
/// matter (they share a time), so they are kept as lists of +1 and of -1:
/// 8 bytes an edge (the load's list is the harness's sorted edge list
/// itself).
#[derive(Default)]
struct Round {
    ops: usize,
    edges_in: Vec<(Node, Node)>,
    edges_out: Vec<(Node, Node)>,
    nodes_in: Vec<Node>,
    nodes_out: Vec<Node>,
}

type Set<T> = HashSet<T, foldhash::fast::FixedState>;
type Map<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// The graph as graphtide keeps it: a set of directed edges, and the
/// vertices. The loaded graph's edges are kept sorted (both ways, for
/// `x V`), with the stream's changes beside them in hash sets, so that
/// the harness holds 16 bytes an edge in two large arrays it drops before
/// the rounds (DD's memory is measured without them).
///
/// INVARIANTS: base_out is sorted and without duplicates, base_in the same
/// pairs reversed and sorted; an edge is present iff it is in base_out and
/// not in removed, or in added; removed is a subset of base_out, added
/// disjoint from it; added_out and added_in index added both ways; every
/// endpoint of a present edge is in vertices.
#[derive(Default)]
struct Graph {
    base_out: Vec<(Node, Node)>,
    base_in: Vec<(Node, Node)>,
    removed: Set<(Node, Node)>,
    added: Set<(Node, Node)>,
    added_out: Map<Node, Set<Node>>,
    added_in: Map<Node, Set<Node>>,
    vertices: Set<Node>,
    edges: usize,
}

/// The second elements of the pairs of a sorted slice whose first is v.
fn range(sorted: &[(Node, Node)], v: Node) -> impl Iterator<Item = Node> + '_ {
    let lo = sorted.partition_point(|&(a, _)| a < v);
    sorted[lo..]
        .iter()
        .take_while(move |&&(a, _)| a == v)
        .map(|&(_, b)| b)
}

impl Graph {
    /// The graph of the edge list edges (duplicates count once), and the
    /// load round's changes: its edges and vertices, each +1.
    fn load(mut edges: Vec<(Node, Node)>) -> (Graph, Round) {
        edges.sort_unstable();
        edges.dedup();
        let mut ends: Vec<Node> = edges.iter().flat_map(|&(s, d)| [s, d]).collect();
        ends.sort_unstable();
        ends.dedup();
        let mut base_in: Vec<(Node, Node)> = edges.iter().map(|&(s, d)| (d, s)).collect();
        base_in.sort_unstable();
        // edges_in is left empty: main moves base_out into it once the
        // stream's changes are made.
        let r = Round {
            nodes_in: ends.clone(),
            ..Default::default()
        };
        let g = Graph {
            edges: edges.len(),
            vertices: ends.into_iter().collect(),
            base_out: edges,
            base_in,
            ..Default::default()
        };
        (g, r)
    }
    fn in_base(&self, e: (Node, Node)) -> bool {
        self.base_out.binary_search(&e).is_ok()
    }
    fn present(&self, e: (Node, Node)) -> bool {
        self.added.contains(&e) || (self.in_base(e) && !self.removed.contains(&e))
    }
    fn add_vertex(&mut self, v: Node, r: &mut Round) {
        if self.vertices.insert(v) {
            r.nodes_in.push(v);
        }
    }
    fn insert(&mut self, s: Node, d: Node, r: &mut Round) {
        self.add_vertex(s, r);
        self.add_vertex(d, r);
        let e = (s, d);
        if self.present(e) {
            return;
        }
        if !self.removed.remove(&e) {
            self.added.insert(e);
            self.added_out.entry(s).or_default().insert(d);
            self.added_in.entry(d).or_default().insert(s);
        }
        self.edges += 1;
        r.edges_in.push(e);
    }
    fn delete(&mut self, s: Node, d: Node, r: &mut Round) {
        let e = (s, d);
        if self.added.remove(&e) {
            for (m, a, b) in [(&mut self.added_out, s, d), (&mut self.added_in, d, s)] {
                if let Entry::Occupied(mut o) = m.entry(a) {
                    o.get_mut().remove(&b);
                    if o.get().is_empty() {
                        o.remove();
                    }
                }
            }
        } else if self.in_base(e) && !self.removed.contains(&e) {
            self.removed.insert(e);
        } else {
            return;
        }
        self.edges -= 1;
        r.edges_out.push(e);
    }
    fn delete_vertex(&mut self, v: Node, r: &mut Round) {
        let mut outs: Vec<Node> = range(&self.base_out, v).collect();
        outs.extend(self.added_out.get(&v).into_iter().flatten().copied());
        for d in outs {
            self.delete(v, d, r);
        }
        let mut ins: Vec<Node> = range(&self.base_in, v).collect();
        ins.extend(self.added_in.get(&v).into_iter().flatten().copied());
        for s in ins {
            self.delete(s, v, r);
        }
        if self.vertices.remove(&v) {
            r.nodes_out.push(v);
        }
    }
}

/// The result so far, summed over the workers' shares of DD's output.
#[derive(Default)]
struct Tally {
    reached: i64,
    level_sum: i64,
    sizes: HashMap<Node, i64>, // component label -> vertices
    components: i64,           // labels with a non-zero count
}

impl Tally {
    fn add_level(&mut self, level: u32, diff: isize) {
        self.reached += diff as i64;
        self.level_sum += level as i64 * diff as i64;
    }
    fn add_label(&mut self, label: Node, diff: isize) {
        let c = self.sizes.entry(label).or_insert(0);
        let before = *c != 0;
        *c += diff as i64;
        let after = *c != 0;
        self.components += after as i64 - before as i64;
        if !after {
            self.sizes.remove(&label);
        }
    }
}

#[derive(Serialize, Clone, Default)]
struct RoundOut {
    ops: usize,
    changes: usize,
    sec: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    reached: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    level_sum: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    components: Option<i64>,
}

#[derive(Serialize)]
struct Output {
    program: &'static str,
    differential_dataflow: &'static str,
    timely: &'static str,
    analytic: String,
    workers: usize,
    park: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    wcc: Option<&'static str>,
    batch_size: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    root: Option<Node>,
    graph_edges: usize,
    stream_ops: usize,
    prepare_sec: f64,
    load: RoundOut,
    rounds: Vec<RoundOut>,
    round_sec_mean: f64,
    round_sec_p99: f64,
    result: ResultOut,
    /// The peak resident set while reading the files and keeping the
    /// edge set, before any round.
    prepare_peak_rss_bytes: u64,
    /// The peak resident set from the first round on (VmHWM reset after
    /// the harness dropped its edge set): DD's, and what of the harness's
    /// memory the allocator kept.
    peak_rss_bytes: u64,
}

#[derive(Serialize, Default)]
struct ResultOut {
    vertices: usize,
    edges: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    reached: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    level_sum: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    components: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    largest: Option<i64>,
}

/// The nearest-rank p-quantile (0 < p <= 1) of xs.
fn quantile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut s = xs.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let k = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[k - 1]
}

/// The process's peak resident set (VmHWM), 0 where /proc is missing.
fn peak_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for l in s.lines() {
        if let Some(v) = l.strip_prefix("VmHWM:") {
            let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            return kb * 1024;
        }
    }
    0
}

/// Sets VmHWM back to the current resident set (Linux clear_refs 5), so
/// that peak_rss measures from here; does nothing where that fails.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    if let Err(e) = run() {
        eprintln!("graphtide-dd: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let prep = Instant::now();
    let graph_edges = read_graph(&args.graph)?;
    let ops = read_stream(&args.stream)?;

    // Rounds of changes under graphtide's semantics: round 0 the graph,
    // then one per batch of operations.
    let graph_lines = graph_edges.len();
    let (mut g, mut load) = Graph::load(graph_edges);
    load.ops = graph_lines;
    let mut rounds: Vec<Round> = vec![load];
    for chunk in ops.chunks(args.batch_size) {
        let mut r = Round {
            ops: chunk.len(),
            ..Default::default()
        };
        for op in chunk {
            match *op {
                Op::Insert(s, d) => g.insert(s, d, &mut r),
                Op::Delete(s, d) => g.delete(s, d, &mut r),
                Op::DeleteVertex(v) => g.delete_vertex(v, &mut r),
            }
        }
        rounds.push(r);
    }
    let final_vertices = g.vertices.len();
    let final_edges = g.edges;
    rounds[0].edges_in = std::mem::take(&mut g.base_out);
    drop(g);
    // The peak so far is the harness's (the files and the edge set); DD's
    // is measured from here.
    let prepare_peak = peak_rss();
    reset_peak_rss();
    let prepare_sec = prep.elapsed().as_secs_f64();

    // Each round's changes, dropped once every worker has fed them (the
    // load's are 8 bytes an edge).
    let rounds: Arc<Vec<RwLock<Round>>> = Arc::new(rounds.into_iter().map(RwLock::new).collect());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let times: Arc<Mutex<Vec<RoundOut>>> = Arc::new(Mutex::new(Vec::new()));
    let barrier = Arc::new(Barrier::new(args.workers));
    let bfs_mode = args.analytic == "bfs";
    let root = args.root;
    let park = args.park;
    let plain = args.plain;

    {
        let (rounds, tally, times, barrier) = (
            rounds.clone(),
            tally.clone(),
            times.clone(),
            barrier.clone(),
        );
        timely::execute(timely::Config::process(args.workers), move |worker| {
            let (index, peers) = (worker.index(), worker.peers());
            let probe = Handle::new();
            let t = tally.clone();
            let (mut edges_in, mut nodes_in) = worker.dataflow::<u64, _, _>(|scope| {
                let (edges_in, edges) = scope.new_collection::<(Node, Node), isize>();
                let (nodes_in, nodes) = scope.new_collection::<Node, isize>();
                if bfs_mode {
                    // The roots: the root alone (nodes_in carries it).
                    bfs(edges, nodes)
                        .inspect_batch(move |_, xs| {
                            let mut t = t.lock().unwrap();
                            for ((_, l), _, d) in xs {
                                t.add_level(*l, *d);
                            }
                        })
                        .probe_with(&probe);
                } else {
                    // Each vertex starts with its own id; the smallest id
                    // of a component reaches all of it over the edges
                    // taken both ways. propagate_at brings the labels in
                    // by magnitude (ids below 2^k in round 256k), so small
                    // labels settle before large ones flood: DD's own
                    // advice, and 5-15x less work per round than plain
                    // propagate (--wcc-plain) on R-MAT.
                    let both = edges.clone().concat(edges.map(|(s, d)| (d, s)));
                    let labels = nodes.map(|v| (v, v));
                    if plain {
                        propagate(both, labels)
                    } else {
                        propagate_at(both, labels, |l: &Node| *l as u64)
                    }
                    .inspect_batch(move |_, xs| {
                        let mut t = t.lock().unwrap();
                        for ((_, l), _, d) in xs {
                            t.add_label(*l, *d);
                        }
                    })
                    .probe_with(&probe);
                }
                (edges_in, nodes_in)
            });

            if bfs_mode && index == 0 {
                nodes_in.insert(root);
            }
            for r in 0..rounds.len() {
                barrier.wait();
                if r > 0 && index == 0 {
                    // Every worker fed round r-1 before the barrier.
                    let mut prev = rounds[r - 1].write().unwrap();
                    *prev = Round::default();
                }
                let round = rounds[r].read().unwrap();
                let start = Instant::now();
                for &e in round.edges_in.iter().skip(index).step_by(peers) {
                    edges_in.update(e, 1);
                }
                for &e in round.edges_out.iter().skip(index).step_by(peers) {
                    edges_in.update(e, -1);
                }
                if !bfs_mode {
                    for &v in round.nodes_in.iter().skip(index).step_by(peers) {
                        nodes_in.update(v, 1);
                    }
                    for &v in round.nodes_out.iter().skip(index).step_by(peers) {
                        nodes_in.update(v, -1);
                    }
                }
                let ops = round.ops;
                let mut changes = round.edges_in.len() + round.edges_out.len();
                if !bfs_mode {
                    changes += round.nodes_in.len() + round.nodes_out.len();
                }
                drop(round);
                let next = r as u64 + 1;
                edges_in.advance_to(next);
                nodes_in.advance_to(next);
                edges_in.flush();
                nodes_in.flush();
                if park {
                    // Idle workers sleep until a message arrives (for a
                    // machine with fewer free cores than workers).
                    worker.step_or_park_while(None, || probe.less_than(&next));
                } else {
                    // Spin, as DD's examples do.
                    worker.step_while(|| probe.less_than(&next));
                }
                let sec = start.elapsed().as_secs_f64();
                if index == 0 {
                    // The probe passed next on every worker's output, so
                    // the tally holds the result at round r.
                    let t = tally.lock().unwrap();
                    let mut out = RoundOut {
                        ops,
                        changes,
                        sec,
                        ..Default::default()
                    };
                    if bfs_mode {
                        out.reached = Some(t.reached);
                        out.level_sum = Some(t.level_sum);
                    } else {
                        out.components = Some(t.components);
                    }
                    times.lock().unwrap().push(out);
                }
            }
        })
        .map_err(|e| format!("timely: {e}"))?;
    }

    let mut all = Arc::try_unwrap(times)
        .map_err(|_| "round times still shared")?
        .into_inner()
        .unwrap();
    let t = tally.lock().unwrap();
    let load = all.remove(0);
    let secs: Vec<f64> = all.iter().map(|r| r.sec).collect();
    let mean = if secs.is_empty() {
        0.0
    } else {
        secs.iter().sum::<f64>() / secs.len() as f64
    };
    let mut result = ResultOut {
        vertices: final_vertices,
        edges: final_edges,
        ..Default::default()
    };
    if bfs_mode {
        result.reached = Some(t.reached);
        result.level_sum = Some(t.level_sum);
    } else {
        result.components = Some(t.components);
        result.largest = Some(t.sizes.values().copied().max().unwrap_or(0));
    }
    let out = Output {
        program: "graphtide-dd",
        differential_dataflow: "0.26.0",
        timely: "0.32.0",
        analytic: args.analytic.clone(),
        workers: args.workers,
        park: args.park,
        wcc: match (bfs_mode, args.plain) {
            (true, _) => None,
            (false, true) => Some("propagate"),
            (false, false) => Some("propagate_at"),
        },
        batch_size: args.batch_size,
        root: if bfs_mode { Some(root) } else { None },
        graph_edges: graph_lines,
        stream_ops: ops.len(),
        prepare_sec,
        load,
        rounds: all,
        round_sec_mean: mean,
        round_sec_p99: quantile(&secs, 0.99),
        result,
        prepare_peak_rss_bytes: prepare_peak,
        peak_rss_bytes: peak_rss(),
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, &out).map_err(|e| format!("write json: {e}"))?;
    writeln!(stdout).map_err(|e| format!("write: {e}"))?;
    Ok(())
}
