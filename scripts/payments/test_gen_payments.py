"""Tests of gen_payments.py: deterministic by seed, the planted patterns
are in the stream as described (checked on the records themselves), and
the reference raises exactly the alerts the generator planted, no more
(so the noise, the 30-day ring and the decoys raise nothing).

Run: python3 -m unittest discover -s scripts/payments."""

import contextlib
import io
import json
import os
import tempfile
import unittest

import gen_payments as gen
import reference as ref

KEYS = ["event_id", "from_account", "to_account", "amount", "currency", "ts", "type"]


def lines(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        gen.main(argv)
    return out.getvalue()


def planted(seed):
    records, manifest = gen.planted(seed)
    return records, manifest


def payments(records):
    return ref.read_payments(json.dumps(r) for r in records)


class Deterministic(unittest.TestCase):
    def test_same_seed_same_bytes(self):
        self.assertEqual(lines(["--seed", "3"]), lines(["--seed", "3"]))
        self.assertNotEqual(lines(["--seed", "3"]), lines(["--seed", "4"]))
        a = lines(["--mode", "random", "--seed", "3", "--events", "2000", "--accounts", "300"])
        self.assertEqual(a, lines(["--mode", "random", "--seed", "3", "--events", "2000", "--accounts", "300"]))

    def test_shape(self):
        for line in lines(["--seed", "1"]).splitlines():
            r = json.loads(line)
            self.assertEqual(list(r), KEYS)
            self.assertEqual(r["type"], "payment")
            self.assertIn(r["currency"], ("EUR", "USD", "GBP"))
            self.assertGreater(r["amount"], 0)
            ref.parse_ts(r["ts"])
            self.assertEqual(ref.cents(r["amount"]) / 100, r["amount"])  # two decimals at most

    def test_manifest_file(self):
        with tempfile.TemporaryDirectory() as d:
            m = os.path.join(d, "m.json")
            out = os.path.join(d, "p.jsonl")
            gen.main(["--seed", "5", "--out", out, "--manifest", m])
            with open(m) as f:
                manifest = json.load(f)
            with open(out) as f:
                self.assertEqual(f.read(), lines(["--seed", "5"]))
        self.assertEqual(manifest["monitors"], gen.MONITORS)
        self.assertEqual(sorted(p["name"] for p in manifest["patterns"]),
                         ["backwards", "bigsender", "fanin", "mule", "onesender", "passthru", "ratio", "ring10m", "ring30d", "straggler"])


class Planted(unittest.TestCase):
    def setUp(self):
        self.records, self.manifest = planted(42)
        self.by_id = {r["event_id"]: r for r in self.records}
        self.pos = {r["event_id"]: i for i, r in enumerate(self.records)}
        self.pattern = {p["name"]: p for p in self.manifest["patterns"]}

    def evs(self, name):
        return [self.by_id[i] for i in self.pattern[name]["events"]]

    def t(self, r):
        return ref.parse_ts(r["ts"])

    def test_ring10m(self):
        acc = self.pattern["ring10m"]["accounts"]
        hops = self.evs("ring10m")[:4]
        for i, h in enumerate(hops):
            self.assertEqual((h["from_account"], h["to_account"]), (acc[i], acc[(i + 1) % 4]))
        times = [self.t(h) for h in hops]
        self.assertEqual(times, sorted(times))
        self.assertLessEqual(times[-1] - times[0], 10 * gen.MIN)
        for a, b in zip(hops, hops[1:]):
            self.assertGreaterEqual(b["amount"], 0.9 * a["amount"])
        # The same accounts round the same cycle again, days apart.
        slow = self.evs("ring10m")[5:]
        self.assertEqual([(s["from_account"], s["to_account"]) for s in slow],
                         [(acc[i], acc[(i + 1) % 4]) for i in range(4)])
        self.assertGreater(max(map(self.t, slow)) - min(map(self.t, slow)), 3 * gen.DAY)

    def test_ring30d(self):
        ev = self.evs("ring30d")
        acc = self.pattern["ring30d"]["accounts"]
        self.assertEqual([(e["from_account"], e["to_account"]) for e in ev], [(acc[i], acc[(i + 1) % 3]) for i in range(3)])
        ts = [self.t(e) for e in ev]
        self.assertEqual(ts, sorted(ts))
        self.assertGreater(ts[-1] - ts[0], gen.DAY)

    def test_backwards_and_ratio_rings(self):
        ev = self.evs("backwards")
        ts = [self.t(e) for e in ev]
        self.assertEqual(ts, sorted(ts, reverse=True))
        ev = self.evs("ratio")
        self.assertLess(ev[1]["amount"], 0.9 * ev[0]["amount"])

    def test_mule(self):
        acc = self.pattern["mule"]["accounts"]
        m = acc[0]
        ev = self.evs("mule")
        ins = [e for e in ev if e["to_account"] == m]
        outs = [e for e in ev if e["from_account"] == m]
        self.assertEqual(len({e["from_account"] for e in ins}), 6)
        self.assertEqual(len({e["to_account"] for e in outs}), 6)
        self.assertLess(max(map(self.t, ev)) - min(map(self.t, ev)), 55 * gen.MIN)

    def test_fanin(self):
        f = self.pattern["fanin"]["accounts"][0]
        ev = self.evs("fanin")
        late = ev[-1]
        self.assertEqual([late["event_id"]], self.manifest["late"])
        burst = ev[:-1]
        self.assertTrue(all(e["to_account"] == f for e in ev))
        self.assertEqual(len(burst), 27)
        self.assertEqual(len({e["from_account"] for e in burst}), 24)
        self.assertTrue(all(e["amount"] <= 50 for e in ev))
        self.assertLess(max(map(self.t, burst)) - min(map(self.t, burst)), 45 * gen.MIN)
        # The late one arrives before the crossing, from a 25th sender, and
        # is older than an hour and 5 minutes before the newest time seen.
        alert = [a for a in self.manifest["alerts"] if a["kind"] == "fan_in" and a["analytic"] == "fraud"][0]
        self.assertLess(self.pos[late["event_id"]], self.pos[alert["trigger"]])
        self.assertNotIn(late["from_account"], {e["from_account"] for e in burst})
        newest = max(self.t(r) for r in self.records[: self.pos[late["event_id"]]])
        self.assertLess(self.t(late), newest - gen.WINDOW - gen.LATENESS)

    def test_one_sender_and_big_sender(self):
        ev = self.evs("onesender")
        self.assertEqual(len(ev), 30)
        self.assertEqual(len({(e["from_account"], e["to_account"]) for e in ev}), 1)
        ev = self.evs("bigsender")
        self.assertEqual(len({(e["from_account"], e["to_account"]) for e in ev}), 1)
        self.assertGreater(ev[0]["amount"] + ev[1]["amount"], 50000)
        self.assertLess(ev[0]["amount"], 50000)

    def test_straggler(self):
        first, marker, closing = self.evs("straggler")
        # The closing hop comes right after the marker, the newest time then,
        # 66 minutes after the first hop: within max_span (1h) + lateness
        # (5m) of it, not late; the first hop is older than that.
        self.assertEqual(self.pos[closing["event_id"]], self.pos[marker["event_id"]] + 1)
        newest = max(self.t(r) for r in self.records[: self.pos[closing["event_id"]]])
        self.assertEqual(newest, self.t(marker))
        self.assertEqual(newest - self.t(first), 66 * gen.MIN)
        self.assertGreaterEqual(self.t(closing), newest - gen.WINDOW - gen.LATENESS)
        self.assertLess(self.t(first), newest - gen.WINDOW - gen.LATENESS)
        self.assertEqual((closing["from_account"], closing["to_account"]), (first["to_account"], first["from_account"]))
        self.assertGreaterEqual(closing["amount"], 0.9 * first["amount"])

    def test_planted_accounts_are_their_own(self):
        planted_accts = set()
        for p in self.manifest["patterns"]:
            self.assertFalse(planted_accts & set(p["accounts"]), p["name"])
            planted_accts |= set(p["accounts"])
        ids = {i for p in self.manifest["patterns"] for i in p["events"]}
        for r in self.records:
            if r["event_id"] in ids:
                continue
            self.assertNotIn(r["from_account"], planted_accts)
            self.assertNotIn(r["to_account"], planted_accts)
        self.assertGreater(len(self.records) - len(ids), 3000)

    def test_noise_has_stragglers(self):
        # Some noise arrives out of time order (within the lateness and
        # beyond it).
        newest, behind = 0, []
        for r in self.records:
            t = self.t(r)
            if t < newest:
                behind.append(newest - t)
            newest = max(newest, t)
        self.assertGreater(sum(1 for b in behind if b <= gen.LATENESS), 5)
        self.assertGreater(sum(1 for b in behind if b > gen.WINDOW + gen.LATENESS), 3)


def key(a):
    return (a["analytic"], a["kind"], a["vertex"], tuple(a.get("cycle", ())), a["trigger"], tuple(a["evidence"]),
            a["evidence_dropped"])


class ReferenceAgrees(unittest.TestCase):
    """The reference raises the planted alerts exactly, for several seeds."""

    def test_seeds(self):
        for seed in (42, 1, 2, 3):
            with self.subTest(seed=seed):
                records, manifest = planted(seed)
                alerts, summary = ref.run(payments(records), [ref.Spec(m) for m in manifest["monitors"]])
                self.assertEqual(sorted(map(key, alerts)), sorted(map(key, manifest["alerts"])))
                self.assertEqual(len(alerts), 10)
                # Without time, every ring pattern is a ring, the decoys
                # (a month long, backwards, losing half) too, each once.
                anyrings = {frozenset(a["cycle"]) for a in alerts if a["analytic"] == "anyrings"}
                rings = {frozenset(p["accounts"][:2] if p["name"] == "straggler" else p["accounts"])
                         for p in manifest["patterns"] if p["name"] in ("ring10m", "ring30d", "backwards", "ratio", "straggler")}
                self.assertEqual(anyrings, rings)
                self.assertEqual(summary["anyrings"]["alerts"]["cycle"], 5)
                self.assertEqual(summary["knife_edges"], [])
                self.assertGreaterEqual(summary["fraud"]["late"]["fan_in"], 1)
                # The second closing of ring10m is a ring the dedup rule
                # holds back: found, not alerted.
                self.assertEqual(summary["fraud"]["rings_found"], 3)

    def test_the_monitors_matter(self):
        # Without the late rule, the order rule or min_ratio the planted
        # decoys would raise alerts: the stream tells them apart.
        records, manifest = planted(42)
        ps = payments(records)
        fraud = manifest["monitors"][0]
        alerts, _ = ref.run(ps, [ref.Spec(fraud.replace("min_ratio=0.9", "min_ratio=0.4"))])
        self.assertEqual(sum(a["kind"] == "cycle" for a in alerts), 3)  # the ratio ring too
        alerts, _ = ref.run(ps, [ref.Spec(fraud.replace("measure=senders", "measure=events"))])
        self.assertEqual(sum(a["kind"] == "fan_in" for a in alerts), 2)  # the one sender's 30 too
        alerts, _ = ref.run(ps, [ref.Spec(fraud.replace("max_span=1h", "max_span=720h").replace("min_ratio=0.9", "min_ratio=0"))])
        cycles = [a for a in alerts if a["kind"] == "cycle"]
        # ring10m, then round its accounts again days later (its first hop
        # after the first ring's last), ring30d, the ratio ring and the
        # straggler; never the backwards one.
        self.assertEqual(len(cycles), 5)
        back = set(next(p for p in manifest["patterns"] if p["name"] == "backwards")["accounts"])
        self.assertFalse(any(set(a["cycle"]) == back for a in cycles))
        # Without the lateness the straggler's closing payment is late.
        alerts, summary = ref.run(ps, [ref.Spec(fraud.replace("lateness=5m", "lateness=0s"))])
        self.assertEqual(sum(a["kind"] == "cycle" for a in alerts), 1)


class Random(unittest.TestCase):
    def test_uniform(self):
        records = gen.uniform(9, 5000, 400, 30)
        self.assertEqual(len(records), 5000)
        self.assertEqual(len({r["event_id"] for r in records}), 5000)
        accts = {r["from_account"] for r in records} | {r["to_account"] for r in records}
        self.assertLessEqual(len(accts), 400)
        self.assertGreater(len(accts), 390)
        ts = [ref.parse_ts(r["ts"]) for r in records]
        self.assertEqual(ts, sorted(ts))
        self.assertGreaterEqual(ts[0], gen.END_US - 30 * gen.DAY)
        self.assertLess(ts[-1], gen.END_US)
        self.assertGreater(ts[-1] - ts[0], 29 * gen.DAY)
        self.assertTrue(all(r["from_account"] != r["to_account"] for r in records))


if __name__ == "__main__":
    unittest.main()
