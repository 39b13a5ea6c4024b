#!/usr/bin/env python3
"""A payments stream for graphtide's fraud monitors, deterministic by seed.

Writes one JSON object a line, in the shape a payments system produces
(the shape of issue 42):

  {"event_id":"e-91","from_account":"acct-123","to_account":"acct-9",
   "amount":12.5,"currency":"EUR","ts":"2026-12-06T05:00:00Z","type":"payment"}

in the order to produce them (one partition: the order the store applies
them). Two modes:

  planted (the default): random noise among --accounts accounts over 30
    days (no ring, no fan-in, no mule among them: the noise pays only from
    an account to one ranked after it) with patterns planted beside it, on
    accounts of their own:
      ring10m    a time-respecting ring of 4 accounts within 10 minutes,
                 each hop carrying on 93-99% of the amount, closed twice
                 (the second closing is the same episode: no new alert);
                 the same 4 accounts pay each other round the same cycle
                 again over the following weeks (no alert: days apart)
      ring30d    3 other accounts forming a ring over 30 days (no alert)
      backwards  a 3-ring within 10 minutes whose hops go back in time,
                 each before the one it passes money on from (no alert)
      ratio      a 3-ring within 10 minutes whose second hop carries on
                 half the amount (no alert at min_ratio 0.9)
      mule       6 senders pay one account within 35 minutes; it pays out
                 to 6 receivers within the next 15 (alert: mule)
      passthru   6 senders in, 2 receivers out (no alert)
      fanin      24 small senders (3 of them twice) into one account
                 within 45 minutes, and a late payment into it from one
                 more sender (alert: fan_in by senders)
      onesender  one account paying another 30 small payments (no alert
                 by senders or amount)
      bigsender  one sender paying one account 3 times about 30,000 EUR
                 within 25 minutes (alert: fan_in by amount)
      straggler  a 2-ring of 2 minutes whose closing payment arrives 66
                 minutes after its first, within the lateness (alert:
                 the first hop must still be held)
    and a few noise payments delivered late (older than the window less
    the lateness when they arrive) or a little out of order.
    --manifest FILE writes what was planted and the alerts each pattern
    must raise, by construction (event ids), for the monitors printed by
    --print-monitors (the settings it was planted for; with
    ring_search=any every ring pattern, the decoys too, is a cycle).
  random: --events payments among --accounts accounts over --days days,
    uniform, in time order, with millisecond times (the issue's 287,000
    among 20,000 over 30 days: --mode random --events 287000 --accounts 20000).

Usage: gen_payments.py [--mode planted|random] [--seed N] [--out FILE]
       [--manifest FILE] [--events N] [--accounts N] [--days N]
"""

import argparse
import json
import random
import sys

# The stream's 30 days end at 2026-12-06T00:00:00Z.
END_US = 1_796_515_200_000_000
DAY = 86_400_000_000
MIN = 60_000_000
SEC = 1_000_000

# The monitors the planted patterns are meant for (serve's --analytic
# form); the manifest's alerts are theirs.
FRAUD = ("type=fraud,name=fraud,measure=senders,threshold=20,window=1h,lateness=5m,evidence=16,"
         "ring_search=timed,max_span=1h,max_cycle=4,min_ratio=0.9,mule_senders=5,mule_receivers=5")
BIG = "type=fanin,name=big,measure=amount,threshold=50000,window=1h,lateness=5m"
# Rings without time: every ring pattern, the decoys too, is a cycle.
ANY = "type=fraud,name=anyrings,threshold=1000000,ring_search=any,max_cycle=4"
MONITORS = [FRAUD, BIG, ANY]
# The window and lateness above, which the late noise is late for.
WINDOW = 60 * MIN
LATENESS = 5 * MIN


def fmt_ts(us, millis=False):
    import datetime

    dt = datetime.datetime.fromtimestamp(us // SEC, tz=datetime.timezone.utc)
    s = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if millis:
        s += ".%03d" % (us % SEC // 1000)
    return s + "Z"


class Stream:
    def __init__(self, rng):
        self.rng = rng
        self.items = []  # [emit_at, order, payment dict]

    def pay(self, src, dst, cents, t, emit_at=None, currency="EUR"):
        """A payment at t (µs), emitted at emit_at (default t); returns its handle."""
        assert src != dst and cents > 0
        p = {"from_account": src, "to_account": dst, "cents": cents, "t": t, "currency": currency}
        self.items.append([t if emit_at is None else emit_at, len(self.items), p])
        return p

    def finish(self, millis=False):
        """Orders the payments for emission, names them e-1.. in that order
        and returns the records."""
        self.items.sort(key=lambda x: (x[0], x[1]))
        out = []
        for i, (_, _, p) in enumerate(self.items):
            p["event_id"] = "e-%d" % (i + 1)
            out.append({"event_id": p["event_id"], "from_account": p["from_account"], "to_account": p["to_account"],
                        "amount": p["cents"] / 100, "currency": p["currency"], "ts": fmt_ts(p["t"], millis),
                        "type": "payment"})
        return out


def amount(rng, lo, hi):
    """Cents between lo and hi EUR."""
    return rng.randint(int(lo * 100), int(hi * 100))


def planted(seed, noise_events=4000, accounts=2500):
    rng = random.Random(seed)
    st = Stream(rng)
    start = END_US - 30 * DAY
    # Account numbers: all drawn from one shuffled range, so planted
    # accounts look like any other.
    pool = list(range(10000, 10000 + accounts + 200))
    rng.shuffle(pool)
    names = ["acct-%d" % n for n in pool]
    noise_accts, fresh = names[:accounts], iter(names[accounts:])

    def take(n):
        return [next(fresh) for _ in range(n)]

    patterns, alerts = [], []
    # Each pattern on a day of its own (days 2..27), at a random hour.
    days = rng.sample(range(2, 28), 9)

    def anchor(i):
        return start + days[i] * DAY + rng.randint(1, 20) * 3600 * SEC + rng.randint(0, 3599) * SEC

    # ring10m: hops at t0 and within 10 minutes, amounts falling 1-7% a hop.
    r = take(4)
    t0 = anchor(0)
    offs = [0] + sorted(rng.sample(range(60, 540), 3))
    c = amount(rng, 8000, 12000)
    hops = []
    for i in range(4):
        hops.append(st.pay(r[i], r[(i + 1) % 4], c, t0 + offs[i] * SEC))
        c = c * rng.randint(93, 99) // 100
    # The same last hop again 40 s later: a second ring over the same
    # accounts whose first hop is not after the first ring's last (the same
    # episode: no alert).
    reclose = st.pay(r[3], r[0], hops[3]["cents"] - 1, t0 + offs[3] * SEC + 40 * SEC)
    slow = []
    t = t0 + rng.randint(2, 3) * DAY
    for i in range(4):  # the same accounts, the same cycle, days apart
        if t >= END_US:
            t = start + rng.randint(0, 3600) * SEC
        slow.append(st.pay(r[i], r[(i + 1) % 4], amount(rng, 100, 900), t))
        t += rng.randint(1, 2) * DAY
    patterns.append({"name": "ring10m", "accounts": r, "events": hops + [reclose] + slow})
    alerts.append({"analytic": "fraud", "kind": "cycle", "vertex": r[0], "cycle": r, "trigger": hops[3],
                   "evidence": hops, "evidence_dropped": 0})

    # ring30d: time-respecting, across the whole 30 days.
    s = take(3)
    ts = sorted(rng.sample(range(1, 29), 3))
    ev = [st.pay(s[i], s[(i + 1) % 3], amount(rng, 500, 5000), start + ts[i] * DAY + rng.randint(0, 86399) * SEC)
          for i in range(3)]
    patterns.append({"name": "ring30d", "accounts": s, "events": ev})

    # backwards: a->b at 9m, b->c at 5m, c->a at 1m.
    b = take(3)
    t0 = anchor(1)
    ev = [st.pay(b[0], b[1], 5000, t0 + 9 * MIN), st.pay(b[1], b[2], 4900, t0 + 5 * MIN), st.pay(b[2], b[0], 4800, t0 + MIN)]
    patterns.append({"name": "backwards", "accounts": b, "events": ev})

    # ratio: time-respecting within 10 minutes, the second hop half.
    q = take(3)
    t0 = anchor(2)
    c = amount(rng, 4000, 6000)
    ev = [st.pay(q[0], q[1], c, t0), st.pay(q[1], q[2], c // 2, t0 + 3 * MIN), st.pay(q[2], q[0], c // 2 - 100, t0 + 7 * MIN)]
    patterns.append({"name": "ratio", "accounts": q, "events": ev})

    # mule: 6 in within 35 minutes, then 6 out within the next 15; the 5th
    # out makes it one (all 6 senders still in the hour's window).
    m = take(1)[0]
    senders, receivers = take(6), take(6)
    t0 = anchor(3)
    ins = [st.pay(x, m, amount(rng, 1500, 3000), t0 + o * SEC) for x, o in zip(senders, sorted(rng.sample(range(0, 2100), 6)))]
    outs = [st.pay(m, x, amount(rng, 1500, 2800), t0 + 38 * MIN + o * SEC)
            for x, o in zip(receivers, sorted(rng.sample(range(0, 900), 6)))]
    patterns.append({"name": "mule", "accounts": [m] + senders + receivers, "events": ins + outs})
    alerts.append({"analytic": "fraud", "kind": "mule", "vertex": m, "trigger": outs[4],
                   "evidence": ins + outs[:5], "evidence_dropped": 0})

    # passthru: 6 senders in, 2 receivers out.
    pm = take(1)[0]
    ps, pr = take(6), take(2)
    t0 = anchor(4)
    ev = [st.pay(x, pm, amount(rng, 1000, 2000), t0 + i * 4 * MIN) for i, x in enumerate(ps)]
    ev += [st.pay(pm, x, amount(rng, 2000, 4000), t0 + 30 * MIN + i * 5 * MIN) for i, x in enumerate(pr)]
    patterns.append({"name": "passthru", "accounts": [pm] + ps + pr, "events": ev})

    # fanin: 24 senders, 3 of them twice, within 45 minutes; the 21st
    # distinct sender crosses threshold 20. A payment from a 25th sender,
    # 2 hours older, arrives in the middle: late, never counted (counted,
    # it would cross one payment earlier).
    f = take(1)[0]
    fs = take(25)
    late_sender = fs.pop()
    seq = fs + rng.sample(fs, 3)
    rng.shuffle(seq)
    t0 = anchor(5)
    offs = sorted(rng.sample(range(0, 2700), len(seq)))
    fin = []
    seen, trigger = set(), None
    for x, o in zip(seq, offs):
        p = st.pay(x, f, amount(rng, 5, 50), t0 + o * SEC)
        fin.append(p)
        seen.add(x)
        if trigger is None and len(seen) == 21:
            trigger = p
    k = fin.index(trigger)
    mid = fin[k - 3]
    late = st.pay(late_sender, f, amount(rng, 5, 50), mid["t"] - 2 * 3600 * SEC, emit_at=mid["t"] + SEC)
    held = fin[: k + 1]
    patterns.append({"name": "fanin", "accounts": [f] + fs + [late_sender], "events": fin + [late]})
    alerts.append({"analytic": "fraud", "kind": "fan_in", "vertex": f, "trigger": trigger,
                   "evidence": held[-16:], "evidence_dropped": max(0, len(held) - 16)})

    # onesender: 30 payments of one sender into one account within 40 minutes.
    o1, o2 = take(2)
    t0 = anchor(6)
    ev = [st.pay(o1, o2, amount(rng, 5, 40), t0 + i * 80 * SEC) for i in range(30)]
    patterns.append({"name": "onesender", "accounts": [o1, o2], "events": ev})

    # bigsender: one sender, 3 payments of 26,000-34,000 within 25 minutes;
    # the second takes the hour's sum above 50,000.
    bs, bx = take(2)
    t0 = anchor(7)
    ev = [st.pay(bs, bx, amount(rng, 26000, 34000), t0 + o * MIN) for o in (0, 11, 24)]
    patterns.append({"name": "bigsender", "accounts": [bs, bx], "events": ev})
    alerts.append({"analytic": "big", "kind": "fan_in", "vertex": bx, "trigger": ev[1], "evidence": ev[:2],
                   "evidence_dropped": 0})

    # straggler: a 2-ring whose closing payment is delivered 66 minutes
    # after its first, just after a payment 66 minutes after the first
    # (the newest time then): not late (the ring window reaches back to the
    # newest time less max_span less lateness, 65 minutes), and its first
    # hop, 66 minutes before the newest time, must still be held: a ring
    # of 2 minutes (alert). Marked by a payment between 2 accounts of its
    # own.
    sa, sb, sc, sd = take(4)
    t0 = anchor(8)
    c = amount(rng, 3000, 6000)
    first = st.pay(sa, sb, c, t0)
    marker = st.pay(sc, sd, amount(rng, 10, 100), t0 + 66 * MIN)
    closing = st.pay(sb, sa, c * rng.randint(91, 99) // 100, t0 + 2 * MIN, emit_at=t0 + 66 * MIN)
    patterns.append({"name": "straggler", "accounts": [sa, sb, sc, sd], "events": [first, marker, closing]})
    alerts.append({"analytic": "fraud", "kind": "cycle", "vertex": sa, "cycle": [sa, sb], "trigger": closing,
                   "evidence": [first, closing], "evidence_dropped": 0})

    # Noise: from an account to one ranked after it (so no cycle), amounts
    # 5 to 5,000 EUR spread evenly over their logarithm; 5% emitted up to 4
    # minutes late (within the lateness), 0.5% 70 minutes to 3 hours after
    # their time (late for an hour's window, where payments came in between).
    rank = noise_accts[:]
    rng.shuffle(rank)
    for _ in range(noise_events):
        i, j = sorted(rng.sample(range(len(rank)), 2))
        t = start + rng.randrange(30 * DAY // SEC) * SEC
        c = max(500, int(round(10 ** rng.uniform(2.7, 5.7))))
        cur = rng.choices(["EUR", "USD", "GBP"], [80, 15, 5])[0]
        x = rng.random()
        emit = None
        if x < 0.005:
            emit = t + rng.randint(70 * 60, 3 * 3600) * SEC
        elif x < 0.055:
            emit = t + rng.randint(1, 240) * SEC
        st.pay(rank[i], rank[j], c, t, emit_at=emit, currency=cur)

    records = st.finish()
    ids = lambda ps: [p["event_id"] for p in ps]  # noqa: E731
    # anyrings: each ring pattern's cycle, raised by the payment that
    # first pays the last of its edges to be paid; its evidence each hop's
    # newest payment then, from the trigger's payer on.
    order = {p["event_id"]: i for i, p in enumerate(records)}
    pays = [x[2] for x in st.items]
    for p in patterns:
        if p["name"] not in ("ring10m", "ring30d", "backwards", "ratio", "straggler"):
            continue
        cyc = p["accounts"][:2] if p["name"] == "straggler" else p["accounts"]
        pairs = [(cyc[i], cyc[(i + 1) % len(cyc)]) for i in range(len(cyc))]
        of = {pr: sorted((q for q in pays if (q["from_account"], q["to_account"]) == pr), key=lambda q: order[q["event_id"]])
              for pr in pairs}
        trigger = max((of[pr][0] for pr in pairs), key=lambda q: order[q["event_id"]])
        k = cyc.index(trigger["from_account"])
        cyc = cyc[k:] + cyc[:k]
        ev = [[q for q in of[(cyc[i], cyc[(i + 1) % len(cyc)])] if order[q["event_id"]] <= order[trigger["event_id"]]][-1]
              for i in range(len(cyc))]
        alerts.append({"analytic": "anyrings", "kind": "cycle", "vertex": cyc[0], "cycle": cyc, "trigger": trigger,
                       "evidence": ev, "evidence_dropped": 0})
    manifest = {
        "seed": seed, "monitors": MONITORS,
        "patterns": [{"name": p["name"], "accounts": p["accounts"], "events": ids(p["events"])} for p in patterns],
        "alerts": [dict(a, trigger=a["trigger"]["event_id"], evidence=ids(a["evidence"])) for a in alerts],
        "late": [late["event_id"]],
    }
    return records, manifest


def uniform(seed, events, accounts, days):
    rng = random.Random(seed)
    st = Stream(rng)
    start = END_US - days * DAY
    span_ms = days * DAY // 1000
    names = ["acct-%d" % n for n in range(1, accounts + 1)]
    for _ in range(events):
        a, b = rng.sample(names, 2)
        t = start + rng.randrange(span_ms) * 1000
        c = max(100, int(round(10 ** rng.uniform(2, 6))))
        st.pay(a, b, c, t, currency=rng.choices(["EUR", "USD", "GBP"], [80, 15, 5])[0])
    return st.finish(millis=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["planted", "random"], default="planted")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", default="-", help="where to write the payments ('-': standard output)")
    ap.add_argument("--manifest", help="planted: write the planted patterns and their alerts here")
    ap.add_argument("--print-monitors", action="store_true",
                    help="planted: print the monitors (--analytic form) the patterns are planted for, and exit")
    ap.add_argument("--events", type=int, help="payments (planted: of the noise; default 4000; random: 287000)")
    ap.add_argument("--accounts", type=int, help="accounts (planted: of the noise; default 2500; random: 20000)")
    ap.add_argument("--days", type=int, default=30, help="random: the days the payments spread over")
    args = ap.parse_args(argv)
    if args.print_monitors:
        for m in MONITORS:
            print(m)
        return 0
    if args.mode == "planted":
        if args.days != 30:
            ap.error("--days is random mode's")
        records, manifest = planted(args.seed, args.events or 4000, args.accounts or 2500)
    else:
        if args.manifest:
            ap.error("--manifest is planted mode's")
        records, manifest = uniform(args.seed, args.events or 287000, args.accounts or 20000, args.days), None
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
    try:
        for r in records:
            out.write(json.dumps(r, separators=(",", ":")) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if args.manifest:
        with open(args.manifest, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
