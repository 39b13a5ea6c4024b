"""Tests of reference.py on tiny streams whose alerts were worked out by hand.

Run: python3 -m unittest discover -s scripts/payments (the Go test
scripts/payments/payments_test.go runs it in make test)."""

import datetime
import io
import json
import unittest

import reference as ref

BASE = 1_795_000_000_000_000  # µs; any time will do


def pay(pid, src, dst, amount=10, minute=0.0):
    """A payment `minute` minutes after BASE (amount in EUR)."""
    return ref.Payment(0, pid, src, dst, ref.cents(amount), BASE + int(minute * 60_000_000), "payment")


def run(monitor, *payments):
    ps = []
    for i, p in enumerate(payments):
        p.n = i
        ps.append(p)
    return ref.run(ps, [ref.Spec(monitor)])


def brief(alerts):
    """(kind, vertex, trigger) of each alert, in order."""
    return [(a["kind"], a["vertex"], a["trigger"]) for a in alerts]


class TimesAndAmounts(unittest.TestCase):
    def test_parse_and_format(self):
        for s in ["2026-12-06T05:00:00Z", "1970-01-01T00:00:00Z", "2024-02-29T23:59:59.5Z", "2026-11-06T00:00:00.123Z"]:
            want = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
            us = ref.parse_ts(s)
            self.assertEqual(us, round(want.timestamp() * 1_000_000), s)
            self.assertEqual(ref.fmt_ts(us), s)
        self.assertEqual(ref.parse_ts("2026-12-06T06:30:00+01:30"), ref.parse_ts("2026-12-06T05:00:00Z"))
        self.assertEqual(ref.parse_ts("2026-12-06T05:00:00.1234567Z") % 1_000_000, 123456)
        with self.assertRaises(ValueError):
            ref.parse_ts("last tuesday")

    def test_cents(self):
        self.assertEqual(ref.cents(12.5), 1250)
        self.assertEqual(ref.cents("0.07"), 7)
        self.assertEqual(ref.cents(9310.0), 931000)
        with self.assertRaises(ValueError):
            ref.cents(1.005)

    def test_durations(self):
        self.assertEqual(ref.parse_duration("1h30m"), 5400 * 10**6)
        self.assertEqual(ref.parse_duration("90s"), 90 * 10**6)
        self.assertEqual(ref.parse_duration("250ms"), 250_000)
        with self.assertRaises(ValueError):
            ref.parse_duration("1d")


class FanIn(unittest.TestCase):
    def test_event_time_window_with_lateness(self):
        # test/kafka's TestServeMonitorsPaymentsInEventTime: three payments
        # into acct-9 within the hour (one out of order) cross threshold 2;
        # the payment at 10:00 arrives after 12:40 - 1m - 1h: late.
        def at(h, m):
            return (h - 8) * 60 + m

        alerts, summary = run(
            "type=fanin,name=mules,threshold=2,window=1h,lateness=1m",
            pay("p0", "acct-1", "acct-5", minute=at(8, 0)),
            pay("p1", "acct-2", "acct-5", minute=at(10, 0)),
            pay("p2", "acct-1", "acct-9", minute=at(12, 10)),
            pay("p3", "acct-3", "acct-5", minute=at(12, 30)),
            pay("p4", "acct-2", "acct-9", minute=at(12, 5)),
            pay("p5", "acct-4", "acct-9", minute=at(12, 40)),
            pay("p6", "acct-6", "acct-9", minute=at(10, 0)),
        )
        self.assertEqual(brief(alerts), [("fan_in", "acct-9", "p5")])
        self.assertEqual(alerts[0]["value"], 3)
        self.assertEqual(alerts[0]["evidence"], ["p4", "p2", "p5"])  # oldest first, by event time
        self.assertEqual(alerts[0]["totals"]["first"], ref.fmt_ts(BASE + at(12, 5) * 60_000_000))
        self.assertEqual(summary["mules"]["late"]["fan_in"], 1)

    def test_senders_are_not_events(self):
        ps = [pay("a1", "a", "x", minute=0), pay("a2", "a", "x", minute=1), pay("a3", "a", "x", minute=2),
              pay("b1", "b", "x", minute=3), pay("c1", "c", "x", minute=4)]
        alerts, _ = run("type=fanin,threshold=2,window=1h,measure=senders", *ps)
        self.assertEqual(brief(alerts), [("fan_in", "x", "c1")])
        self.assertEqual(alerts[0]["value"], 3)
        self.assertEqual(alerts[0]["totals"], {"events": 5, "amount": 50.0, "counterparties": 3,
                                               "first": ref.fmt_ts(BASE), "last": ref.fmt_ts(BASE + 240_000_000)})
        ps = [pay("a1", "a", "x", minute=0), pay("a2", "a", "x", minute=1), pay("a3", "a", "x", minute=2),
              pay("b1", "b", "x", minute=3), pay("c1", "c", "x", minute=4)]
        alerts, _ = run("type=fanin,threshold=2,window=1h", *ps)
        self.assertEqual(brief(alerts), [("fan_in", "x", "a3")])

    def test_amount_crosses_rearms_and_crosses_again(self):
        alerts, _ = run(
            "type=fanin,threshold=100,window=1h,measure=amount",
            pay("p1", "a", "x", 60, 0), pay("p2", "b", "x", 30, 1), pay("p3", "c", "x", 20, 2),  # 110 > 100
            pay("p4", "d", "x", 5, 3),  # still above: nothing
            pay("p5", "e", "y", 1, 130),  # 2h10m: p1..p4 leave, x re-arms
            pay("p6", "a", "x", 70, 131), pay("p7", "f", "x", 30, 132),  # 100: not above
            pay("p8", "g", "x", 0.01, 133),  # 100.01 > 100
        )
        self.assertEqual(brief(alerts), [("fan_in", "x", "p3"), ("fan_in", "x", "p8")])
        self.assertEqual(alerts[0]["value"], 110.0)
        self.assertEqual(alerts[1]["value"], 100.01)
        self.assertEqual(alerts[1]["evidence"], ["p6", "p7", "p8"])

    def test_knife_edge_is_reported(self):
        _, summary = run("type=fanin,threshold=100,window=1h,measure=amount",
                         pay("p1", "a", "x", 60, 0), pay("p2", "b", "x", 40, 1))
        self.assertEqual(summary["knife_edges"], [["fanin", "p2", "x", 10000]])

    def test_rearm_at_the_threshold_and_the_window_edge(self):
        # window 10m, lateness 0: a payment leaves once its time is at or
        # before the newest time less 10m.
        alerts, _ = run(
            "type=fanin,threshold=2,window=10m",
            pay("x0", "a", "x", minute=0), pay("x1", "b", "x", minute=1), pay("x2", "c", "x", minute=2),  # 3 > 2
            pay("y1", "d", "y", minute=10.5),  # x0 leaves: x at 2, re-armed
            pay("x3", "e", "x", minute=11),  # x1 (at 1m, the cut exactly) leaves: x at 2 again
            pay("x4", "f", "x", minute=11 + 1 / 6),  # x2, x3, x4: 3 > 2
        )
        self.assertEqual(brief(alerts), [("fan_in", "x", "x2"), ("fan_in", "x", "x4")])
        self.assertEqual(alerts[1]["evidence"], ["x2", "x3", "x4"])

    def test_late_is_at_or_before_the_cut(self):
        alerts, summary = run(
            "type=fanin,threshold=1,window=10m,lateness=5m",
            pay("p1", "a", "x", minute=20),
            pay("p2", "b", "x", minute=5),  # 20 - 5 - 10 = 5: late
            pay("p3", "c", "y", minute=20),
            pay("p4", "d", "y", minute=5 + 1 / 60),  # one second after the cut: held
        )
        self.assertEqual(brief(alerts), [("fan_in", "y", "p4")])
        self.assertEqual(summary["fanin"]["late"]["fan_in"], 1)

    def test_evidence_keeps_the_newest(self):
        alerts, _ = run("type=fanin,threshold=2,window=1h,evidence=2",
                        pay("p1", "a", "x", minute=0), pay("p2", "b", "x", minute=1), pay("p3", "c", "x", minute=2))
        self.assertEqual(alerts[0]["evidence"], ["p2", "p3"])
        self.assertEqual(alerts[0]["evidence_dropped"], 1)
        self.assertEqual(alerts[0]["totals"]["events"], 3)

    def test_window_of_edges(self):
        # The last 3 payments: x holds 2 of them at most.
        alerts, _ = run("type=fanin,threshold=2,window_edges=3",
                        pay("p1", "a", "x"), pay("p2", "b", "x"), pay("p3", "c", "y"), pay("p4", "d", "x"),
                        pay("p5", "e", "x"), pay("p6", "f", "x"))
        self.assertEqual(brief(alerts), [("fan_in", "x", "p6")])

    def test_fanout(self):
        alerts, _ = run("type=fanout,threshold=1,window=1h,measure=senders",
                        pay("p1", "a", "x"), pay("p2", "a", "x"), pay("p3", "a", "y"))
        self.assertEqual(brief(alerts), [("fan_out", "a", "p3")])


class Mule(unittest.TestCase):
    SPEC = "type=fraud,threshold=100,window=1h,mule_senders=2,mule_receivers=2"

    def test_in_from_two_out_to_two(self):
        alerts, _ = run(
            self.SPEC,
            pay("i1", "s1", "m", 100, 0), pay("i2", "s2", "m", 200, 5),
            pay("o1", "m", "r1", 150, 10),
            pay("i3", "s1", "m", 50, 12),  # a sender again: still 2
            pay("o2", "m", "r2", 140, 15),  # both hold now
            pay("o3", "m", "r3", 1, 16),  # still: nothing
            pay("n1", "s3", "p", 1, 17), pay("n2", "s4", "p", 1, 18), pay("n3", "p", "r4", 1, 19),  # 1 receiver
        )
        self.assertEqual(brief(alerts), [("mule", "m", "o2")])
        a = alerts[0]
        self.assertEqual(a["evidence"], ["i1", "i2", "o1", "i3", "o2"])
        self.assertEqual(a["totals"], {"events": 5, "amount": 350.0, "counterparties": 2, "amount_out": 290.0,
                                       "receivers": 2, "first": ref.fmt_ts(BASE), "last": ref.fmt_ts(BASE + 15 * 60_000_000)})

    def test_rearms_when_either_falls_below(self):
        alerts, _ = run(
            self.SPEC,
            pay("i1", "s1", "m", 1, 0), pay("i2", "s2", "m", 1, 1), pay("o1", "m", "r1", 1, 2), pay("o2", "m", "r2", 1, 3),
            pay("i3", "s3", "m", 1, 59), pay("o3", "m", "r3", 1, 59.5),  # i1 still held: nothing new
            pay("x", "a", "b", 1, 61.5),  # i1, i2 leave: 1 sender (s3): re-armed
            pay("i4", "s1", "m", 1, 62),  # o1 leaves; s3, s1 in and r2, r3 out: a mule again
        )
        self.assertEqual(brief(alerts), [("mule", "m", "o2"), ("mule", "m", "i4")])
        self.assertEqual(alerts[1]["evidence"], ["o2", "i3", "o3", "i4"])

    def test_one_payment_makes_two_mules(self):
        alerts, _ = run(
            "type=fraud,threshold=100,window=1h,mule_senders=1,mule_receivers=1,max_cycle=2",
            pay("ab", "a", "b", 1, 0), pay("bc", "b", "c", 1, 1), pay("ca", "c", "a", 1, 2),
        )
        # bc: b has a in and c out. ca: a (c in, b out), then c (b in, a out).
        mules = [x for x in brief(alerts) if x[0] == "mule"]
        self.assertEqual(mules, [("mule", "b", "bc"), ("mule", "a", "ca"), ("mule", "c", "ca")])


class Rings(unittest.TestCase):
    SPEC = "type=fraud,threshold=100,window=1h,max_span=10m,max_cycle=4"

    def rings(self, spec, *ps):
        alerts, summary = run(spec, *ps)
        return [a for a in alerts if a["kind"] == "cycle"], summary

    def test_time_respecting_ring(self):
        got, _ = self.rings(self.SPEC, pay("ab", "a", "b", 100, 0), pay("bc", "b", "c", 95, 1), pay("ca", "c", "a", 90, 2))
        self.assertEqual(brief(got), [("cycle", "a", "ca")])
        self.assertEqual(got[0]["cycle"], ["a", "b", "c"])
        self.assertEqual(got[0]["evidence"], ["ab", "bc", "ca"])
        self.assertEqual(got[0]["totals"], {"events": 3, "amount": 285.0, "first": ref.fmt_ts(BASE),
                                            "last": ref.fmt_ts(BASE + 120_000_000)})

    def test_backwards_in_time_is_no_ring(self):
        # Each hop before the one it passes money on from: a->b at 2m, b->c
        # at 1m, c->a at 0 (they arrive in time order).
        got, _ = self.rings(self.SPEC, pay("ca", "c", "a", 1, 0), pay("bc", "b", "c", 1, 1), pay("ab", "a", "b", 1, 2))
        self.assertEqual(got, [])

    def test_arrival_out_of_time_order(self):
        # The middle hop arrives last and completes the ring; e1 is a->b.
        got, _ = self.rings(self.SPEC, pay("ab", "a", "b", 1, 0), pay("ca", "c", "a", 1, 2), pay("bc", "b", "c", 1, 1))
        self.assertEqual(brief(got), [("cycle", "a", "bc")])
        self.assertEqual(got[0]["evidence"], ["ab", "bc", "ca"])

    def test_rotation_starts_at_the_first_hop(self):
        got, _ = self.rings(self.SPEC, pay("ca", "c", "a", 1, 0), pay("ab", "a", "b", 1, 1), pay("bc", "b", "c", 1, 2))
        self.assertEqual(got[0]["vertex"], "c")
        self.assertEqual(got[0]["cycle"], ["c", "a", "b"])

    def test_max_span_is_inclusive(self):
        got, _ = self.rings(self.SPEC, pay("ab", "a", "b", 1, 0), pay("ba", "b", "a", 1, 10))
        self.assertEqual(brief(got), [("cycle", "a", "ba")])
        got, _ = self.rings(self.SPEC, pay("ab", "a", "b", 1, 0), pay("ba", "b", "a", 1, 10 + 1 / 60))
        self.assertEqual(got, [])

    def test_max_cycle(self):
        ps = [pay("ab", "a", "b", 1, 0), pay("bc", "b", "c", 1, 1), pay("cd", "c", "d", 1, 2), pay("da", "d", "a", 1, 3)]
        self.assertEqual(len(self.rings(self.SPEC, *ps)[0]), 1)
        ps = [pay("ab", "a", "b", 1, 0), pay("bc", "b", "c", 1, 1), pay("cd", "c", "d", 1, 2), pay("da", "d", "a", 1, 3)]
        self.assertEqual(self.rings(self.SPEC.replace("max_cycle=4", "max_cycle=3"), *ps)[0], [])

    def test_min_ratio(self):
        spec = self.SPEC + ",min_ratio=0.9"
        got, _ = self.rings(spec, pay("ab", "a", "b", 100, 0), pay("bc", "b", "c", 90, 1), pay("ca", "c", "a", 81, 2))
        self.assertEqual(len(got), 1)  # 0.9 and 0.9 exactly
        got, _ = self.rings(spec, pay("ab", "a", "b", 100, 0), pay("bc", "b", "c", 89.99, 1), pay("ca", "c", "a", 89, 2))
        self.assertEqual(got, [])
        # The ratio is along the ring from its first hop: a ring whose
        # last hop carries more than its first holds.
        got, _ = self.rings(spec, pay("ab", "a", "b", 10, 0), pay("ba", "b", "a", 1000, 1))
        self.assertEqual(len(got), 1)

    def test_sources_distinct(self):
        # a->b->a->c->a is a closed walk of 4 hops through a twice: not a
        # 4-ring; its 2-rings are.
        got, _ = self.rings(self.SPEC, pay("ab", "a", "b", 1, 0), pay("ac", "a", "c", 1, 1), pay("ca", "c", "a", 1, 2),
                            pay("ba", "b", "a", 1, 3))
        self.assertEqual(sorted(tuple(a["cycle"]) for a in got), [("a", "b"), ("a", "c")])

    def test_dedup_per_episode(self):
        got, _ = self.rings(
            self.SPEC,
            pay("ab1", "a", "b", 1, 0), pay("ba1", "b", "a", 1, 1),  # a ring, its last hop at 1m
            pay("ba2", "b", "a", 1, 2),  # ab1 + ba2: first hop at 0, not after 1m
            pay("ab2", "a", "b", 1, 3),  # ba1 + ab2 (first hop at 1m: not after); ba2 + ab2: first hop 2m
        )
        self.assertEqual(brief(got), [("cycle", "a", "ba1"), ("cycle", "b", "ab2")])
        self.assertEqual(got[1]["evidence"], ["ba2", "ab2"])
        self.assertEqual(got[1]["cycle"], ["b", "a"])

    def test_smallest_span_then_lowest_seqs(self):
        got, _ = self.rings(self.SPEC, pay("ab1", "a", "b", 1, 0), pay("ab2", "a", "b", 1, 5), pay("ba", "b", "a", 1, 6))
        self.assertEqual(got[0]["evidence"], ["ab2", "ba"])
        got, _ = self.rings(self.SPEC, pay("ab1", "a", "b", 1, 5), pay("ab2", "a", "b", 1, 5), pay("ba", "b", "a", 1, 6))
        self.assertEqual(got[0]["evidence"], ["ab1", "ba"])
        self.assertEqual(len(got), 1)

    def test_two_account_cycles_from_one_payment(self):
        got, _ = self.rings(self.SPEC, pay("ab", "a", "b", 1, 0), pay("bc", "b", "c", 1, 1), pay("ac", "a", "c", 1, 2),
                            pay("ca", "c", "a", 1, 3))
        self.assertEqual([(a["cycle"], a["trigger"]) for a in got], [(["a", "b", "c"], "ca"), (["a", "c"], "ca")])

    def test_late_payment_is_in_no_ring(self):
        # lateness 1m: after x (at 30m) a payment before 30m - 10m - 1m = 19m
        # is late: ba at 18m closes nothing.
        got, summary = self.rings(self.SPEC + ",lateness=1m", pay("ab", "a", "b", 1, 17), pay("x", "c", "d", 1, 30),
                                  pay("ba", "b", "a", 1, 18))
        self.assertEqual(got, [])
        self.assertEqual(summary["fraud"]["late"]["cycle"], 1)
        got, summary = self.rings(self.SPEC + ",lateness=1m", pay("ab", "a", "b", 1, 20), pay("x", "c", "d", 1, 30),
                                  pay("ba", "b", "a", 1, 19))
        self.assertEqual(brief(got), [("cycle", "b", "ba")])
        self.assertEqual(summary["fraud"]["late"]["cycle"], 0)

    def test_a_payment_older_than_the_cut_still_pairs_with_one_that_is_not_late(self):
        # lateness 5m, max_span 10m: after x at 30m the cut is 15m. ab (14m)
        # came before x, so it was not late; ba (16m) is not late either:
        # they make a ring of 2 minutes.
        got, summary = self.rings(self.SPEC + ",lateness=5m", pay("ab", "a", "b", 1, 14), pay("x", "c", "d", 1, 30),
                                  pay("ba", "b", "a", 1, 16))
        self.assertEqual(brief(got), [("cycle", "a", "ba")])
        self.assertEqual(summary["fraud"]["late"]["cycle"], 0)

    def test_a_tie_the_file_cannot_break_is_reported(self):
        _, summary = self.rings(self.SPEC, pay("ab1", "a", "b", 1, 5), pay("ab2", "a", "b", 1, 5), pay("ba", "b", "a", 1, 6))
        self.assertEqual(summary["knife_edges"], [["fraud", "ba", "a", "ring tie"]])

    def test_a_slow_ring_is_none(self):
        day = 24 * 60
        got, _ = self.rings(self.SPEC, pay("ab", "a", "b", 1, 0), pay("bc", "b", "c", 1, 10 * day), pay("ca", "c", "a", 1, 29 * day))
        self.assertEqual(got, [])


class CommandLine(unittest.TestCase):
    def test_reads_json_lines_and_writes_alerts(self):
        lines = [
            {"event_id": "e-1", "from_account": "a", "to_account": "b", "amount": 12.5, "currency": "EUR",
             "ts": "2026-12-06T05:00:00Z", "type": "payment"},
            {"event_id": "e-2", "from_account": "b", "to_account": "a", "amount": "12.00", "currency": "EUR",
             "ts": "2026-12-06T05:03:00Z", "type": "payment"},
        ]
        import contextlib
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "events.jsonl")
            with open(path, "w") as f:
                for line in lines:
                    f.write(json.dumps(line) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                ref.main([path, "--monitor", "type=fraud,name=rings,threshold=9,window=1h,max_span=10m",
                          "--summary", os.path.join(d, "s.json")])
            got = [json.loads(x) for x in out.getvalue().splitlines()]
            with open(os.path.join(d, "s.json")) as f:
                summary = json.load(f)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0]["cycle"], ["a", "b"])
        self.assertEqual(got[0]["totals"]["amount"], 24.5)
        self.assertEqual(summary["rings"]["alerts"], {"fan_in": 0, "cycle": 1})

    def test_unknown_setting_is_refused(self):
        with self.assertRaises(ValueError):
            ref.Spec("type=fraud,threshold=1,ring_search=all")
        with self.assertRaises(ValueError):
            ref.Spec("type=fraud,threshold=1,ring_search=any,min_ratio=0.9")
        with self.assertRaises(ValueError):
            ref.Spec("type=fraud,threshold=1,mule_senders=3")
        with self.assertRaises(ValueError):
            ref.Spec("type=fanin,threshold=1,colour=red")


ANY = "type=fraud,name=any,threshold=1000,ring_search=any,max_cycle=4"


class RingsWithoutTime(unittest.TestCase):
    def test_a_ring_over_a_month(self):
        day = 24 * 60
        alerts, summary = run(ANY, pay("ab", "a", "b", 10, 0), pay("bc", "b", "c", 20, 10 * day),
                              pay("ca", "c", "a", 30, 29 * day))
        self.assertEqual(brief(alerts), [("cycle", "c", "ca")])
        self.assertEqual(alerts[0]["cycle"], ["c", "a", "b"])
        self.assertEqual(alerts[0]["evidence"], ["ca", "ab", "bc"])
        self.assertEqual(alerts[0]["totals"]["amount"], 60)
        self.assertEqual(summary["any"]["rings_found"], 1)

    def test_each_cycle_once_from_the_payment_of_its_new_edge(self):
        alerts, _ = run(ANY, pay("ab", "a", "b"), pay("ba", "b", "a"), pay("ba2", "b", "a"),  # the 2-cycle once
                        pay("ac", "a", "c"), pay("ca", "c", "a"), pay("ab2", "a", "b"),
                        pay("bc", "b", "c"),  # a -> b -> c -> a
                        pay("cb", "c", "b"))  # c -> b -> a -> c and c -> b -> c
        self.assertEqual(sorted((a["trigger"], tuple(a["cycle"])) for a in alerts), [
            ("ba", ("b", "a")), ("bc", ("b", "c", "a")), ("ca", ("c", "a")),
            ("cb", ("c", "b")), ("cb", ("c", "b", "a")),
        ])
        # The evidence is each hop's newest payment when the cycle closed.
        by = {a["trigger"] + "".join(a["cycle"]): a for a in alerts}
        self.assertEqual(by["bcbca"]["evidence"], ["bc", "ca", "ab2"])
        self.assertEqual(by["cbcba"]["evidence"], ["cb", "ba2", "ac"])

    def test_at_most_max_cycle_accounts(self):
        ps = [pay("p%d" % i, "v%d" % i, "v%d" % ((i + 1) % 5)) for i in range(5)]
        alerts, _ = run(ANY, *ps)
        self.assertEqual(alerts, [])
        alerts, _ = run(ANY.replace("max_cycle=4", "max_cycle=5"), *ps)
        self.assertEqual(brief(alerts), [("cycle", "v4", "p4")])
        alerts, _ = run(ANY.replace("max_cycle=4", "max_cycle=1"), pay("ab", "a", "b"), pay("ba", "b", "a"))
        self.assertEqual(alerts, [])

    def test_times_and_order_do_not_matter(self):
        # Backwards in time and out of order: still a ring without time.
        alerts, _ = run(ANY, pay("ab", "a", "b", 10, 9), pay("bc", "b", "c", 10, 5), pay("ca", "c", "a", 10, -500))
        self.assertEqual(brief(alerts), [("cycle", "c", "ca")])


if __name__ == "__main__":
    unittest.main()
