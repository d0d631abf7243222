#!/usr/bin/env python3
"""The plain-Python reference clock: Clearhouse's ascending clock auction alone.

Reads an auction instance (docs/formats/auction.md) and writes its result, as
`clearhouse auction solve --no-final-round` does, so the two can be compared for
results (cmd/clearhouse's TestPythonClockAgreesWithTheEngine) and for speed
(BenchmarkAuctionSolveVersusPython, docs/benchmarks.md). Standard library only.

It is the same clock as auction/solve.go: pools in id order, prices on the
micro-dollar grid starting at each reserve rounded up, each round every
over-demanded pool raised by min(alpha z / Q, delta), at least min_step, and only
the bidders whose choice could change re-evaluated. It is written as a Python
programmer would write it for speed, not as a line-by-line port; the final round is
not part of it (params.final_round is read and ignored).

    python3 tools/pyclock/clock.py < instance.json > result.json
    python3 tools/pyclock/clock.py --in instance.json --out result.json

Exit status: 0 when the clock converged, 1 when it did not (the result is still
written), 2 when the instance is refused (nothing is written).
"""

import argparse
import json
import math
import sys
import time

MICROS = 1e6  # the grid: prices are whole micro-dollars per unit
MAX_MICROS = float(1 << 50)  # the ceiling: a price in dollars below it converts back to whole micro-dollars exactly
MAX_QUANTITY = 1e12
MAX_MONEY = 1e15
MAX_ROUNDS_CAP = 10_000_000
DEFAULTS = {"alpha": 1.0, "delta": 0.05, "min_step": 0.001, "max_rounds": 100000}
POOL_FIELDS = {"id", "supply", "reserve_price"}
BIDDER_FIELDS = {"id", "limit", "limits", "bundles"}


class Invalid(Exception):
    """An instance that breaks the format's rules; the message names the fault."""


def go_round(x):
    """Round half away from zero, as Go's math.Round (Python's round is to even)."""
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def ceil_micros(d):
    """d dollars rounded up to a whole number of micro-dollars."""
    m = go_round(d * MICROS)
    return m + 1 if m / MICROS < d else m


def floor_micros(d):
    """d dollars rounded down to a whole number of micro-dollars."""
    m = go_round(d * MICROS)
    return m - 1 if m / MICROS > d else m


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def is_whole(x, bound):
    return is_number(x) and x == math.trunc(x) and abs(x) <= bound


def params_of(inst):
    p = dict(DEFAULTS)
    for key, value in (inst.get("params") or {}).items():
        if key == "final_round":
            continue  # the reference is the clock alone
        if key not in DEFAULTS:
            raise Invalid(f"params: unknown field {key!r}")
        if value:  # zero takes the default, as in the engine
            p[key] = value
    if not is_number(p["alpha"]) or not 0 < p["alpha"] <= 1e6:
        raise Invalid(f"params.alpha: must be a positive number, got {p['alpha']}")
    if not is_number(p["delta"]) or not 0 < p["delta"] <= 1:
        raise Invalid(f"params.delta: must be in (0, 1], got {p['delta']}")
    if not is_number(p["min_step"]) or not 0 < p["min_step"] <= p["delta"]:
        raise Invalid(f"params.min_step: must be in (0, delta], got {p['min_step']}")
    if not isinstance(p["max_rounds"], int) or not 1 <= p["max_rounds"] <= MAX_ROUNDS_CAP:
        raise Invalid(f"params.max_rounds: must be between 1 and {MAX_ROUNDS_CAP}, got {p['max_rounds']}")
    return p


def compile_pools(raw):
    """Pools in id order: ids, supplies, reserves, and an index from id to position."""
    if not raw:
        raise Invalid("pools: at least one pool is required")
    pools = {}
    for i, pool in enumerate(raw):
        pid = pool.get("id")
        if not pid or not isinstance(pid, str):
            raise Invalid(f"pools[{i}]: id is required")
        if pool.keys() - POOL_FIELDS:
            raise Invalid(f"pool {pid!r}: unknown field {sorted(pool.keys() - POOL_FIELDS)[0]!r}")
        if pid in pools:
            raise Invalid(f"pool {pid!r}: listed twice")
        supply, reserve = pool.get("supply", 0), pool.get("reserve_price", 0)
        if not is_whole(supply, MAX_QUANTITY) or supply < 0:
            raise Invalid(f"pool {pid!r}: supply must be a whole number from 0 to {MAX_QUANTITY:g}, got {supply}")
        if not is_number(reserve) or not 0 <= reserve <= MAX_MONEY:
            raise Invalid(f"pool {pid!r}: reserve_price must be a number from 0 to {MAX_MONEY:g}, got {reserve}")
        pools[pid] = (float(supply), float(reserve))
    ids = sorted(pools)
    return ids, [pools[i][0] for i in ids], [pools[i][1] for i in ids], {pid: r for r, pid in enumerate(ids)}


def compile_bidder(b, i, index):
    """A bidder's bundles as tuples of (pool, quantity) sorted by pool, its limits in
    micro-dollars rounded down, and per pool the most any of its bundles sells there."""
    bid = b.get("id")
    if not bid or not isinstance(bid, str):
        raise Invalid(f"bidders[{i}]: id is required")
    if b.keys() - BIDDER_FIELDS:
        raise Invalid(f"bidder {bid!r}: unknown field {sorted(b.keys() - BIDDER_FIELDS)[0]!r}")
    raw_bundles = b.get("bundles")
    if not raw_bundles:
        raise Invalid(f"bidder {bid!r}: at least one bundle is required")
    if ("limit" in b) == ("limits" in b):
        raise Invalid(f"bidder {bid!r}: give exactly one of limit and limits")
    limits = b["limits"] if "limits" in b else [b["limit"]] * len(raw_bundles)
    if len(limits) != len(raw_bundles):
        raise Invalid(f"bidder {bid!r}: {len(limits)} limits for {len(raw_bundles)} bundles")
    bundles, lims, offered = [], [], {}
    for k, (bundle, limit) in enumerate(zip(raw_bundles, limits)):
        if not is_number(limit) or abs(limit) > MAX_MONEY:
            raise Invalid(f"bidder {bid!r}: limit of bundle {k} must be a number within ±{MAX_MONEY:g}, got {limit}")
        items = []
        for pid in sorted(bundle):
            q = bundle[pid]
            if pid not in index:
                raise Invalid(f"bidder {bid!r}: bundle {k} names unknown pool {pid!r}")
            if not is_whole(q, MAX_QUANTITY):
                raise Invalid(f"bidder {bid!r}: bundle {k}: quantity of {pid!r} must be a whole number within ±{MAX_QUANTITY:g}, got {q}")
            if q:
                r = index[pid]
                items.append((r, float(q)))
                if q < 0:
                    offered[r] = max(offered.get(r, 0.0), -float(q))
        if not items:
            raise Invalid(f"bidder {bid!r}: bundle {k} is empty or all zero")
        items.sort()
        bundles.append(tuple(items))
        lims.append(floor_micros(limit))
    return bid, bundles, lims, offered


def choose(bundles, lims, micro):
    """The bundle of largest surplus lim_k - q_k.p (ties: lowest index) if that
    surplus is not negative, else -1. All in whole micro-dollars, exact in floats."""
    best, best_surplus = -1, -math.inf
    for k, items in enumerate(bundles):
        s = lims[k]
        for r, q in items:
            s -= q * micro[r]
        if s > best_surplus:
            best, best_surplus = k, s
    return best if best_surplus >= 0 else -1


def solve(inst):
    if not isinstance(inst, dict):
        raise Invalid("instance: must be a JSON object")
    for key in inst:
        if key not in ("pools", "bidders", "params"):
            raise Invalid(f"instance: unknown field {key!r}")
    p = params_of(inst)
    start = time.perf_counter()
    ids, supply, reserve, index = compile_pools(inst.get("pools"))
    n = len(ids)
    micro = [ceil_micros(rp) for rp in reserve]
    scale = list(supply)  # Q_r: supply plus the most each bidder offers in r
    sellers = [[] for _ in range(n)]  # pool -> bidders with a bundle that sells there
    buyers = [set() for _ in range(n)]  # pool -> bidders whose choice buys there
    names, all_bundles, all_lims = [], [], []
    seen = set()
    for i, b in enumerate(inst.get("bidders") or []):
        bid, bundles, lims, offered = compile_bidder(b, i, index)
        if bid in seen:
            raise Invalid(f"bidder {bid!r}: listed twice")
        seen.add(bid)
        for r, q in offered.items():
            scale[r] += q
            sellers[r].append(i)
        names.append(bid)
        all_bundles.append(bundles)
        all_lims.append(lims)

    net = [0.0] * n
    choice = [-1] * len(names)

    def move(bi, k):
        old = choice[bi]
        if old == k:
            return
        if old >= 0:
            for r, q in all_bundles[bi][old]:
                net[r] -= q
                if q > 0:
                    buyers[r].discard(bi)
        if k >= 0:
            for r, q in all_bundles[bi][k]:
                net[r] += q
                if q > 0:
                    buyers[r].add(bi)
        choice[bi] = k

    for bi in range(len(names)):
        move(bi, choose(all_bundles[bi], all_lims[bi], micro))

    alpha, delta, min_step, max_rounds = p["alpha"], p["delta"], p["min_step"], p["max_rounds"]
    rounds, converged = 0, False
    while True:
        raised = [r for r in range(n) if net[r] - supply[r] > 1e-9]
        if not raised:
            converged = True
            break
        if rounds == max_rounds or any(micro[r] >= MAX_MICROS for r in raised):
            break
        rounds += 1
        for r in raised:
            step = max(min(alpha * (net[r] - supply[r]) / max(scale[r], 1.0), delta), min_step)
            m = micro[r]
            if m == 0:
                micro[r] = ceil_micros(min_step)
            else:
                micro[r] = min(max(float(math.ceil(m * (1 + step))), m + 1), MAX_MICROS)
        # Prices only rise: a choice can change only if it buys in a raised pool or
        # one of the bidder's bundles sells there. Choices depend on prices alone,
        # so the order of re-evaluation does not matter.
        queue = set()
        for r in raised:
            queue.update(buyers[r])
            queue.update(sellers[r])
        for bi in queue:
            move(bi, choose(all_bundles[bi], all_lims[bi], micro))

    # Net demand afresh, as the engine's result does.
    net = [0.0] * n
    winners = []
    for bi, k in enumerate(choice):
        if k < 0:
            continue
        pay = 0.0
        for r, q in all_bundles[bi][k]:
            pay += q * micro[r]
            net[r] += q
        pay /= MICROS
        winners.append({"id": names[bi], "bundle_index": k, "payment": pay, "at_prices": pay})
    return {
        "converged": converged,
        "rounds": rounds,
        "prices": {pid: micro[r] / MICROS for r, pid in enumerate(ids)},
        "winners": winners,
        "operator_sold": {pid: min(max(net[r], 0.0), supply[r]) for r, pid in enumerate(ids)},
        "excess_demand": {pid: net[r] - supply[r] for r, pid in enumerate(ids)},
        "seconds": time.perf_counter() - start,
    }


def main():
    ap = argparse.ArgumentParser(description="The plain-Python reference clock (no final round).")
    ap.add_argument("--in", dest="inp", default="-", help="instance file, or - for standard input")
    ap.add_argument("--out", default="-", help="result file, or - for standard output")
    args = ap.parse_args()
    try:
        if args.inp == "-":
            inst = json.load(sys.stdin)
        else:
            with open(args.inp, encoding="utf-8") as f:
                inst = json.load(f)
        res = solve(inst)
    except (Invalid, ValueError, TypeError, AttributeError, OSError) as e:
        print(f"{args.inp}: {e}", file=sys.stderr)
        return 2
    out = json.dumps(res, indent=2) + "\n"
    if args.out == "-":
        sys.stdout.write(out)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(out)
    if not res["converged"]:
        print(f"the clock did not converge in {res['rounds']} rounds", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
