#!/usr/bin/env python3
"""The reference of graphtide's fraud monitors over a payments file.

A plain, deliberately naive second implementation (Python, no shared code
with the Go monitors in internal/views/analytics) of the alerts that the
monitors fanin, fanout and fraud must raise over a stream of payments, by
the semantics written in docs/analytics.md (issue 42's design):

  * fan-in / fan-out by measure (events, senders: distinct counterparties,
    amount: the sum of the amounts) over a sliding window in event time
    (window, lateness) or of the last window_edges operations. An alert is
    raised by the payment that takes a vertex's measure above the
    threshold while it was not above; the vertex re-arms once its measure
    is back at or below the threshold.
  * mule (fraud, mule_senders=N, mule_receivers=M): a vertex whose window
    holds money in from at least N distinct senders and out to at least M
    distinct receivers, raised by the payment that makes both hold while
    they did not; re-armed when either falls below.
  * timed rings (fraud, ring_search=timed): payments e1..ek (2 <= k <=
    max_cycle), e_i.dst = e_{i+1}.src, e_k.dst = e_1.src, sources distinct,
    event times non-decreasing, t(ek) - t(e1) <= max_span, and with min_ratio
    r > 0 amount(e_{i+1}) >= r * amount(e_i). Raised by the payment whose
    arrival completes a ring of payments that arrived before it; a payment
    older than the newest time seen before it less max_span less lateness
    is late and in no ring. One alert per account cycle per episode: after
    an alert whose ring's last hop is at T, a ring over the same accounts
    alerts only if its first hop is after T; of several rings one payment
    completes over the same accounts, the one of the smallest span, then
    the earliest first hop, then the earliest payments.
  * rings without time (fraud, ring_search=any): every simple directed
    cycle of at most max_cycle accounts that the graph of payments (an
    edge from a to b once a paid b) holds once a payment adds an edge it
    did not hold, whatever when the other edges were paid; each cycle
    once, raised by that payment, listed from its payer; its evidence is,
    per hop, the newest payment of that edge so far. (The Go monitor
    searches per pull: of the edges new in one pull it credits a cycle to
    the one paid last in it, so its trigger may be a later payment of the
    cycle's edges within the pull.)

The fan and mule window is the one views.TimeWindow defines: the watermark is the newest
event time seen less lateness; a payment whose time is at or before
watermark - window on arrival is late (never held, never counted); a held
payment leaves once its time is at or before it.

Input: a file of JSON lines, one payment each: event_id, from_account,
to_account, amount, ts (RFC 3339), type (as gen_payments.py writes them,
the issue's shape); the file's order is the order the store applies them
(one partition). Monitors: one or more --monitor in the compact form of
serve's --analytic flag (type=fraud,name=f,threshold=20,measure=senders,...).

Output: one JSON line per alert, in the order they are raised, each
{"analytic", "kind", "vertex", "cycle" (rings), "trigger" (the event_id of
the payment that raised it), "value", "evidence" (event ids, oldest first),
"evidence_dropped", "totals"}; with --summary FILE, per analytic the alert
counts by kind, the late payments of each window and the comparisons of an
amount with the threshold (or of a hop with min_ratio times the one
before) closer than half a cent, where the Go monitors' float sums could
decide otherwise, and the rings that tie with the one alerted on span and
first hop, which the monitor tells apart by batch seqs, unknown here: a
stream meant to be compared exactly must have none of these knife edges.

Amounts are summed exactly, in integer cents.
"""

import argparse
import json
import re
import sys
from collections import defaultdict

# ---------------------------------------------------------------- input


_TS = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


def _days_from_civil(y, m, d):
    # Howard Hinnant's days_from_civil: days since 1970-01-01.
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_ts(s):
    """RFC 3339 to Unix microseconds (a fraction truncated to µs)."""
    m = _TS.match(s)
    if not m:
        raise ValueError("not an RFC 3339 time: %r" % s)
    y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "")[:6].ljust(6, "0")
    sec = _days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss
    if m.group(9):
        off = (int(m.group(10)) * 60 + int(m.group(11))) * 60
        sec -= off if m.group(9) == "+" else -off
    return sec * 1_000_000 + int(frac)


def fmt_ts(us):
    """Unix microseconds to RFC 3339 in UTC (a fraction only when there is one)."""
    sec, frac = divmod(us, 1_000_000)
    days, rem = divmod(sec, 86400)
    # civil_from_days
    z = days + 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    mo = mp + (3 if mp < 10 else -9)
    y += mo <= 2
    out = "%04d-%02d-%02dT%02d:%02d:%02d" % (y, mo, d, rem // 3600, rem // 60 % 60, rem % 60)
    if frac:
        out += ("." + "%06d" % frac).rstrip("0")
    return out + "Z"


def cents(amount):
    """An amount (a JSON number or string of at most 2 decimals) in cents."""
    s = amount if isinstance(amount, str) else repr(float(amount))
    if "e" in s or "E" in s:
        raise ValueError("amount %r: write it without an exponent" % amount)
    neg = s.startswith("-")
    whole, _, frac = s.lstrip("+-").partition(".")
    frac = frac.rstrip("0")
    if len(frac) > 2:
        raise ValueError("amount %r has more than 2 decimals" % amount)
    c = int(whole or "0") * 100 + int(frac.ljust(2, "0") or "0")
    return -c if neg else c


class Payment:
    __slots__ = ("n", "id", "src", "dst", "cents", "t", "type")

    def __init__(self, n, id, src, dst, cents_, t, type_):
        self.n, self.id, self.src, self.dst, self.cents, self.t, self.type = n, id, src, dst, cents_, t, type_

    def __repr__(self):
        return "Payment(%s %s->%s %d at %d)" % (self.id, self.src, self.dst, self.cents, self.t)


def read_payments(lines):
    """The payments of a JSON-lines file, numbered in file order."""
    out = []
    for i, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        out.append(
            Payment(len(out), str(r["event_id"]), r["from_account"], r["to_account"], cents(r["amount"]),
                    parse_ts(r["ts"]), r.get("type", ""))
        )
    return out


# ---------------------------------------------------------------- specs

_DUR = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|m|s)")
_DUR_US = {"h": 3_600_000_000, "m": 60_000_000, "s": 1_000_000, "ms": 1000, "us": 1, "µs": 1}


def parse_duration(s):
    """A Go duration (1h, 10m, 90s, 1h30m) in microseconds."""
    pos, total = 0, 0.0
    if s in ("0", ""):
        return 0
    for m in _DUR.finditer(s):
        if m.start() != pos:
            raise ValueError("duration %r" % s)
        total += float(m.group(1)) * _DUR_US[m.group(2)]
        pos = m.end()
    if pos != len(s):
        raise ValueError("duration %r" % s)
    return int(total)


class Spec:
    """A monitor's settings, from the compact form of --analytic."""

    def __init__(self, text):
        kv = {}
        for part in text.split(","):
            k, sep, v = part.strip().partition("=")
            if not sep:
                raise ValueError("monitor %r: want key=value pairs, got %r" % (text, part))
            kv[k] = v
        self.type = kv.pop("type")
        if self.type not in ("fanin", "fanout", "fraud"):
            raise ValueError("monitor type %r: the reference knows fanin, fanout and fraud" % self.type)
        self.name = kv.pop("name", self.type)
        self.threshold = float(kv.pop("threshold"))
        self.measure = kv.pop("measure", "events")
        if self.measure not in ("events", "senders", "amount"):
            raise ValueError("measure %r" % self.measure)
        self.window = parse_duration(kv.pop("window", "0"))
        self.lateness = parse_duration(kv.pop("lateness", "0"))
        self.window_edges = int(kv.pop("window_edges", "0"))
        if self.window == 0 and self.window_edges == 0:
            self.window_edges = 10000
        self.evidence = int(kv.pop("evidence", "0")) or 32
        self.max_cycle = int(kv.pop("max_cycle", "0")) or 4
        self.max_span = parse_duration(kv.pop("max_span", "0")) or 3_600_000_000
        self.ring_search = kv.pop("ring_search", "timed")
        if self.ring_search not in ("timed", "any"):
            raise ValueError("ring_search %r: timed or any" % self.ring_search)
        self.min_ratio = float(kv.pop("min_ratio", "0"))
        if self.ring_search == "any" and self.min_ratio:
            raise ValueError("monitor %r: min_ratio is ring_search=timed's" % text)
        self.mule_senders = int(kv.pop("mule_senders", "0"))
        self.mule_receivers = int(kv.pop("mule_receivers", "0"))
        if (self.mule_senders == 0) != (self.mule_receivers == 0):
            raise ValueError("monitor %r: give both mule_senders and mule_receivers, or neither" % self.name)
        types = kv.pop("types", "")
        self.types = set(t for t in types.split("|") if t) if types else None
        # Settings that change how the Go monitors work, not what they raise.
        for k in ("batch_size", "interval", "search_budget", "pull_timeout", "pull_memory_mib", "max_behind"):
            kv.pop(k, None)
        if kv:
            raise ValueError("monitor %r: settings the reference does not know: %s" % (self.name, ", ".join(sorted(kv))))
        if self.type != "fraud" and self.mule_senders:
            raise ValueError("mule settings are the fraud monitor's")


# ---------------------------------------------------------------- windows


class Window:
    """views.TimeWindow (a duration) or the last `edges` payments.

    add(p) returns (held, left): whether p is held (False: late) and the
    payments that left, oldest first. Held payments are kept in a list
    sorted by (time, arrival): the order in which they leave."""

    def __init__(self, dur, lateness, edges):
        self.dur, self.lateness, self.edges = dur, lateness, edges
        self.max_t = None
        self.held = []  # sorted by (t, n)
        self.late = 0

    def cut(self):
        return self.max_t - self.lateness - self.dur

    def add(self, p):
        if self.dur == 0:
            self.held.append(p)
            left = []
            if len(self.held) > self.edges:
                left = [self.held.pop(0)]
            return True, left
        if self.max_t is not None and p.t <= self.cut():
            self.late += 1
            return False, []
        self.max_t = p.t if self.max_t is None else max(self.max_t, p.t)
        # insert in (t, n) order; n grows, so after every equal time
        i = len(self.held)
        while i > 0 and self.held[i - 1].t > p.t:
            i -= 1
        self.held.insert(i, p)
        left = []
        c = self.cut()
        while self.held and self.held[0].t <= c:
            left.append(self.held.pop(0))
        return True, left


# ---------------------------------------------------------------- monitors


class Report:
    def __init__(self):
        self.alerts = []
        self.knife_edges = []  # (analytic, event id, vertex, cents)


def _evidence(events, cap):
    events = sorted(events, key=lambda p: (p.t, p.n))
    dropped = max(0, len(events) - cap)
    return [p.id for p in events[dropped:]], dropped


def _amount(c):
    return c / 100


class Fan:
    """Fan-in (by_dst) or fan-out by a measure over the spec's window."""

    def __init__(self, spec, by_dst, kind, report):
        self.spec, self.by_dst, self.kind, self.report = spec, by_dst, kind, report
        self.win = Window(spec.window, spec.lateness, spec.window_edges)
        self.events = defaultdict(list)  # vertex -> held payments that count for it
        self.above = set()

    def key(self, p):
        return p.dst if self.by_dst else p.src

    def other(self, p):
        return p.src if self.by_dst else p.dst

    def measure(self, v):
        evs = self.events.get(v, [])
        m = self.spec.measure
        if m == "events":
            return len(evs)
        if m == "senders":
            return len(set(self.other(p) for p in evs))
        return sum(p.cents for p in evs)

    def over(self, v, p):
        """Whether v's measure is above the threshold (cents for amount)."""
        m = self.measure(v)
        if self.spec.measure != "amount":
            return m > self.spec.threshold
        thr = self.spec.threshold * 100
        if abs(m - thr) < 0.5:
            self.report.knife_edges.append((self.spec.name, p.id, v, m))
        return m > thr

    def add(self, p):
        held, left = self.win.add(p)
        touched = set()
        for q in left:
            k = self.key(q)
            self.events[k].remove(q)
            if not self.events[k]:
                del self.events[k]
            touched.add(k)
        if held:
            self.events[self.key(p)].append(p)
        for v in touched:
            if v in self.above and not self.over(v, p):
                self.above.discard(v)
        if not held:
            return
        v = self.key(p)
        if v not in self.above and self.over(v, p):
            self.above.add(v)
            evs = self.events[v]
            ids, dropped = _evidence(evs, self.spec.evidence)
            value = self.measure(v)
            if self.spec.measure == "amount":
                value = _amount(value)
            self.report.alerts.append({
                "analytic": self.spec.name, "kind": self.kind, "vertex": v, "trigger": p.id,
                "value": value, "evidence": ids, "evidence_dropped": dropped,
                "totals": {
                    "events": len(evs), "amount": _amount(sum(q.cents for q in evs)),
                    "counterparties": len(set(self.other(q) for q in evs)),
                    "first": fmt_ts(min(q.t for q in evs)), "last": fmt_ts(max(q.t for q in evs)),
                },
            })


class Mule:
    """Money in from >= N senders and out to >= M receivers in the window."""

    def __init__(self, spec, report):
        self.spec, self.report = spec, report
        self.win = Window(spec.window, spec.lateness, spec.window_edges)
        self.ins = defaultdict(list)  # vertex -> held payments into it
        self.outs = defaultdict(list)  # vertex -> held payments out of it
        self.on = set()

    def holds(self, v):
        senders = len(set(p.src for p in self.ins.get(v, [])))
        receivers = len(set(p.dst for p in self.outs.get(v, [])))
        return senders >= self.spec.mule_senders and receivers >= self.spec.mule_receivers

    def add(self, p):
        held, left = self.win.add(p)
        touched = set()
        for q in left:
            self.ins[q.dst].remove(q)
            self.outs[q.src].remove(q)
            touched.update((q.src, q.dst))
        if held:
            self.ins[p.dst].append(p)
            self.outs[p.src].append(p)
        for v in touched:
            if v in self.on and not self.holds(v):
                self.on.discard(v)
        if not held:
            return
        for v in dict.fromkeys((p.dst, p.src)):  # the receiver first, then the sender
            if v not in self.on and self.holds(v):
                self.on.add(v)
                ins, outs = self.ins[v], self.outs[v]
                evs = list(dict.fromkeys(ins + outs))  # a self-payment once
                ids, dropped = _evidence(evs, self.spec.evidence)
                self.report.alerts.append({
                    "analytic": self.spec.name, "kind": "mule", "vertex": v, "trigger": p.id,
                    "evidence": ids, "evidence_dropped": dropped,
                    "totals": {
                        "events": len(evs), "amount": _amount(sum(q.cents for q in ins)),
                        "counterparties": len(set(q.src for q in ins)),
                        "amount_out": _amount(sum(q.cents for q in outs)),
                        "receivers": len(set(q.dst for q in outs)),
                        "first": fmt_ts(min(q.t for q in evs)), "last": fmt_ts(max(q.t for q in evs)),
                    },
                })


def _rotation_key(vs):
    """An account cycle, rotation-normalized: starting at its least account."""
    i = min(range(len(vs)), key=lambda j: vs[j])
    return tuple(vs[i:] + vs[:i])


class Rings:
    """Timed rings (ring_search=timed) with the dedup rule per account cycle.

    Late: a payment whose time is before the newest time seen before it
    less max_span less lateness; it neither completes nor joins a ring.
    Every other payment that arrived before may be in a ring: those held
    go back to the newest time less lateness less twice max_span (an older
    one is more than max_span before any payment that is not late)."""

    def __init__(self, spec, report):
        self.spec, self.report = spec, report
        self.max_t = None
        self.held = []  # by (t, n), for dropping the old ones
        self.late = 0
        self.out = defaultdict(list)  # account -> held payments out of it (arrival order)
        self.last = {}  # account cycle -> the event time of the last hop of its last alerted ring
        self.found = 0

    def carried(self, ring, p):
        """Whether each hop carries on at least min_ratio of the one before."""
        r = self.spec.min_ratio
        for a, b in zip(ring, ring[1:]):
            if abs(b.cents - r * a.cents) < 0.5:
                self.report.knife_edges.append((self.spec.name, p.id, b.src, b.cents))
            if b.cents < r * a.cents:
                return False
        return True

    def add(self, p):
        span, lateness = self.spec.max_span, self.spec.lateness
        if self.max_t is not None and p.t < self.max_t - span - lateness:
            self.late += 1
            return
        self.max_t = p.t if self.max_t is None else max(self.max_t, p.t)
        i = len(self.held)
        while i > 0 and self.held[i - 1].t > p.t:
            i -= 1
        self.held.insert(i, p)
        while self.held and self.held[0].t < self.max_t - lateness - 2 * span:
            q = self.held.pop(0)
            self.out[q.src].remove(q)
        k = self.spec.max_cycle
        # Every simple path of held payments (arrived before p) from p.dst back
        # to p.src, of at most k-1 payments, each within max_span of p.
        candidates = []

        def walk(at, path, seen):
            for q in self.out.get(at, []):
                if abs(q.t - p.t) > span:
                    continue
                if q.dst == p.src:
                    candidates.append([p] + path + [q])
                elif len(path) + 2 < k and q.dst not in seen:
                    seen.add(q.dst)
                    walk(q.dst, path + [q], seen)
                    seen.discard(q.dst)

        if p.src != p.dst:
            walk(p.dst, [], {p.src, p.dst})
        self.out[p.src].append(p)
        # Each candidate cycle of payments in every rotation that is a ring.
        by_cycle = defaultdict(list)
        for c in candidates:
            n = len(c)
            for r in range(n):
                ring = c[r:] + c[:r]
                if any(ring[i].t > ring[i + 1].t for i in range(n - 1)):
                    continue
                if ring[-1].t - ring[0].t > span:
                    continue
                if self.spec.min_ratio > 0 and not self.carried(ring, p):
                    continue
                by_cycle[_rotation_key([e.src for e in ring])].append(ring)
        for cyc in sorted(by_cycle):
            rings = by_cycle[cyc]
            self.found += len(rings)
            if cyc in self.last:
                rings = [r for r in rings if r[0].t > self.last[cyc]]
            if not rings:
                continue
            order = lambda r: (r[-1].t - r[0].t, r[0].t)  # noqa: E731
            best = min(rings, key=lambda r: (order(r), [e.n for e in r]))
            if sum(1 for r in rings if order(r) == order(best)) > 1:
                # The monitor breaks this tie by batch seqs first, which a
                # file does not hold: positions in it may decide otherwise.
                self.report.knife_edges.append((self.spec.name, p.id, best[0].src, "ring tie"))
            self.last[cyc] = best[-1].t
            self.report.alerts.append({
                "analytic": self.spec.name, "kind": "cycle", "vertex": best[0].src,
                "cycle": [e.src for e in best], "trigger": p.id, "value": len(best),
                "evidence": [e.id for e in best[-self.spec.evidence:]],
                "evidence_dropped": max(0, len(best) - self.spec.evidence),
                "totals": {
                    "events": len(best), "amount": _amount(sum(e.cents for e in best)),
                    "first": fmt_ts(best[0].t), "last": fmt_ts(best[-1].t),
                },
            })


class AnyRings:
    """Rings without time (ring_search=any): the new cycles of the graph of
    payments, each raised once by the payment whose new edge closes it."""

    def __init__(self, spec, report):
        self.spec, self.report = spec, report
        self.out = defaultdict(set)  # account -> accounts it paid
        self.newest = {}  # (src, dst) -> its newest payment
        self.seen = set()  # rotation keys of the cycles raised
        self.late = 0  # nothing is late here
        self.found = 0

    def add(self, p):
        new = p.dst not in self.out[p.src]
        self.out[p.src].add(p.dst)
        self.newest[(p.src, p.dst)] = p
        if not new:
            return
        # Every simple path p.dst -> ... -> p.src of at most max_cycle-1
        # edges makes, with the new edge, a cycle through it.
        cycles = []

        def walk(path):
            for w in sorted(self.out.get(path[-1], ())):
                if w == p.src:
                    cycles.append(path)
                elif len(path) < self.spec.max_cycle and w not in path:
                    walk(path + [w])

        if p.src == p.dst:
            cycles.append([p.src])
        elif self.spec.max_cycle >= 2:
            walk([p.src, p.dst])
        for c in cycles:
            key = _rotation_key(c)
            if key in self.seen:
                continue
            self.seen.add(key)
            self.found += 1
            hops = [self.newest[(c[i], c[(i + 1) % len(c)])] for i in range(len(c))]
            ev = hops[-self.spec.evidence:]
            self.report.alerts.append({
                "analytic": self.spec.name, "kind": "cycle", "vertex": c[0], "cycle": c, "trigger": p.id,
                "value": len(c), "evidence": [e.id for e in ev], "evidence_dropped": len(hops) - len(ev),
                "totals": {
                    "events": len(hops), "amount": _amount(sum(e.cents for e in hops)),
                    "first": fmt_ts(min(e.t for e in hops)), "last": fmt_ts(max(e.t for e in hops)),
                },
            })


def run(payments, specs):
    """The alerts of every monitor of specs over payments, and a summary."""
    report = Report()
    summary = {}
    for spec in specs:
        parts = []
        if spec.type == "fanin":
            parts.append(("fan_in", Fan(spec, True, "fan_in", report)))
        elif spec.type == "fanout":
            parts.append(("fan_out", Fan(spec, False, "fan_out", report)))
        else:
            parts.append(("fan_in", Fan(spec, True, "fan_in", report)))
            if spec.mule_senders:
                parts.append(("mule", Mule(spec, report)))
            parts.append(("cycle", AnyRings(spec, report) if spec.ring_search == "any" else Rings(spec, report)))
        for p in payments:
            if spec.types is not None and p.type not in spec.types:
                continue
            for _, m in parts:
                m.add(p)
        s = {"alerts": {}, "late": {}}
        for kind, m in parts:
            s["alerts"][kind] = sum(1 for a in report.alerts if a["analytic"] == spec.name and a["kind"] == kind)
            s["late"][kind] = m.late if kind == "cycle" else m.win.late
            if kind == "cycle":
                s["rings_found"] = m.found
        summary[spec.name] = s
    summary["knife_edges"] = [list(x) for x in report.knife_edges]
    return report.alerts, summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("events", help="the payments, one JSON object a line ('-': standard input)")
    ap.add_argument("--monitor", action="append", required=True,
                    help="a monitor in --analytic's compact form (repeatable)")
    ap.add_argument("--summary", help="write the summary (alert counts, late payments, knife edges) here")
    args = ap.parse_args(argv)
    specs = [Spec(m) for m in args.monitor]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        ap.error("two monitors named alike: %s" % names)
    if args.events == "-":
        payments = read_payments(sys.stdin)
    else:
        with open(args.events, encoding="utf-8") as f:
            payments = read_payments(f)
    alerts, summary = run(payments, specs)
    out = sys.stdout
    for a in alerts:
        out.write(json.dumps(a, separators=(",", ":")) + "\n")
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
