#!/usr/bin/env python3
"""Independent check of the schedule optimiser's numbers (docs/schedule-model.md, section 9).

Takes the schedules the optimiser picked (best of every family, at several memory sizes) and recomputes
their times by another route, written from the document, not from controller/schedule:

* round rate: found by bisection on an event-by-event simulation of chunk arrivals at each member's
  edge stage (a slot is taken at the first byte of a chunk's first arrival and freed at the last byte of
  its last arrival; peak occupancy must stay within M), instead of the closed form (M - c) / skew;
* completion: the last byte of the last chunk from the farthest member, read off the simulated arrivals;
* schedule time: the ready-time recursion done with plain dicts over site names;
* consensus: exact-average check with rational arithmetic (fractions.Fraction), and the error
  ||P - J||_2 by power iteration on lists (no numpy.linalg), to find the rounds needed.

Latencies are read from topo/data/wan9_rtt_ms.csv directly. Exit status 0 when every time agrees
within the tolerance and the crossover is confirmed, 1 otherwise.

    .venv/bin/python scripts/schedule_crosscheck.py [--size 64MB] [--memories 1MB,4MB,256MB]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.schedule import EdgeParams, Network, Sync, optimise  # noqa: E402  (the optimiser under test)
from controller.schedule.sweep import run_sweep  # noqa: E402

CSV_PATH = ROOT / "topo" / "data" / "wan9_rtt_ms.csv"
CHUNK = 256
REL_TOL = 2e-3  # chunk granularity: the simulation rounds memory to whole chunks


def read_cities() -> tuple[list[str], dict[tuple[str, str], float], dict[str, str]]:
    """City names, one-way latency in seconds (RTT / 2) and continents, straight from the data file."""
    rows = [r for r in csv.reader(CSV_PATH.open()) if r and not r[0].startswith("#")]
    header, body = rows[0], rows[1:]
    names = header[4:]
    one_way = {}
    continent = {}
    for r in body:
        continent[r[0]] = r[1]
        for name, v in zip(names, r[4:], strict=True):
            one_way[(r[0], name)] = float(v) / 2000.0
    return names, one_way, continent


# ----------------------------------------------------------------------------- round by simulation


def peak_occupancy(delays: list[float], rate: float, size: float, chunk: float) -> float:
    """Peak bytes held by one edge stage, simulating each chunk's slot from alloc to free events.

    The pattern repeats every chunk, so a prefix long enough to fill the window (plus margin) has the
    same peak as the whole vector; simulate that prefix.
    """
    tau = chunk / rate
    spread = max(delays) - min(delays)
    n_chunks = math.ceil(size / chunk)
    prefix = min(n_chunks, int(spread / tau) + 64)
    q = np.arange(prefix, dtype=float)
    sizes = np.full(prefix, float(chunk))
    if prefix == n_chunks:
        sizes[-1] = size - chunk * (n_chunks - 1)
    first_bytes = np.array([q * tau + d for d in delays])  # stream x chunk: first byte arrives
    last_bytes = np.array([q * tau + sizes / rate + d for d in delays])  # last byte arrives
    alloc = first_bytes.min(axis=0)
    free = last_bytes.max(axis=0)
    times = np.concatenate([alloc, free])
    change = np.concatenate([sizes, -sizes])
    # frees before allocs at equal times: a slot released at t can be reused at t
    order = np.lexsort((change, times))
    level = np.cumsum(change[order])
    return float(level.max())


def simulate_clique(
    members: list[str], one_way: dict[tuple[str, str], float], link_Bps: float, memory: float, size: float
) -> dict[str, float]:
    """Per-member completion time of a clique round (seconds from its common start)."""
    if len(members) < 2:
        return dict.fromkeys(members, 0.0)
    delays = {j: [one_way[(i, j)] for i in members if i != j] for j in members}

    def feasible(rate: float) -> bool:
        return all(peak_occupancy(d, rate, size, CHUNK) <= memory for d in delays.values())

    if feasible(link_Bps):
        rate = link_Bps
    else:
        lo, hi = 0.0, link_Bps
        for _ in range(45):
            mid = (lo + hi) / 2
            if mid > 0 and feasible(mid):
                lo = mid
            else:
                hi = mid
        rate = lo
    # the last byte of the last chunk of each stream: (size / rate) after its start, plus the path delay
    return {j: max(size / rate + d for d in delays[j]) for j in members}


def schedule_time(
    rounds: list[list[list[str]]],
    n_rounds: int,
    sites: list[str],
    clique_finish: dict[frozenset, dict[str, float]],
    barrier: bool = False,
) -> float:
    ready = dict.fromkeys(sites, 0.0)
    for t in range(n_rounds):
        if barrier:  # every round waits for the slowest site of the previous one
            ready = dict.fromkeys(sites, max(ready.values()))
        for clique in rounds[t % len(rounds)]:
            if len(clique) < 2:
                continue
            start = max(ready[s] for s in clique)
            fin = clique_finish[frozenset(clique)]
            for s in clique:
                ready[s] = start + fin[s]
    return max(ready.values())


# ----------------------------------------------------------------------------- mixing, independently


def apply_round(vec: list, rnd: list[list[str]], pos: dict[str, int]) -> list:
    out = list(vec)
    for clique in rnd:
        idx = [pos[s] for s in clique]
        mean = sum((vec[i] for i in idx), start=vec[idx[0]] * 0) / len(idx)
        for i in idx:
            out[i] = mean
    return out


def is_exact_after(rounds: list[list[list[str]]], t: int, sites: list[str]) -> bool:
    """Every basis vector averaged to exactly 1/n after t rounds (rational arithmetic)."""
    pos = {s: i for i, s in enumerate(sites)}
    n = len(sites)
    for b in range(n):
        v = [Fraction(int(i == b)) for i in range(n)]
        for r in range(t):
            v = apply_round(v, rounds[r % len(rounds)], pos)
        if any(x != Fraction(1, n) for x in v):
            return False
    return True


def error_after(rounds: list[list[list[str]]], t: int, sites: list[str]) -> float:
    """||P_t - J||_2 by power iteration on x -> (P-J)^T (P-J) x, P applied round by round."""
    pos = {s: i for i, s in enumerate(sites)}
    n = len(sites)

    def p_minus_j(x: list[float]) -> list[float]:
        v = list(x)
        for r in range(t):
            v = apply_round(v, rounds[r % len(rounds)], pos)
        m = sum(x) / n
        return [a - m for a in v]

    def transpose_apply(y: list[float]) -> list[float]:
        # every round's W is symmetric, so P^T = W_1 ... W_t: apply the rounds in reverse order
        v = list(y)
        for r in reversed(range(t)):
            v = apply_round(v, rounds[r % len(rounds)], pos)
        m = sum(y) / n
        return [a - m for a in v]

    x = [math.sin(1.7 * i + 0.3) for i in range(n)]
    norm = 0.0
    for _ in range(400):
        y = transpose_apply(p_minus_j(x))
        norm = math.sqrt(sum(a * a for a in y))
        if norm == 0:
            return 0.0
        x = [a / norm for a in y]
    return math.sqrt(norm)


def rounds_needed(
    rounds: list[list[list[str]]], sites: list[str], eps: float, cap: int = 400
) -> tuple[int, bool]:
    for t in range(1, cap + 1):
        err = error_after(rounds, t, sites)
        if err <= 1e-6 and is_exact_after(rounds, t, sites):
            return t, True
        if err <= eps:
            return t, False
    return -1, False


# ----------------------------------------------------------------------------- driver


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=float, default=64e6, help="bytes per site per round (default 64e6)")
    ap.add_argument("--memories", default="1e6,4e6,16e6,64e6,256e6,1e9", help="memory sizes in bytes")
    ap.add_argument("--bandwidth", type=float, default=10e9, help="bit/s (default 1e10)")
    ap.add_argument("--eps", type=float, default=2.0**-23, help="consensus target (default 2^-23)")
    ap.add_argument("--sync", choices=("clique", "barrier"), default="clique", help="round start rule")
    ap.add_argument("--no-crossover", action="store_true", help="skip the crossover check (faster)")
    args = ap.parse_args()

    sites, one_way, continent = read_cities()
    link_Bps = args.bandwidth / 8
    net = Network(
        tuple(sites),
        np.array([[one_way[(a, b)] if a != b else 0.0 for b in sites] for a in sites]),
        args.bandwidth,
        tuple(continent[s] for s in sites),
    )
    worst = 0.0
    failures = 0
    mixing_memo: dict[str, tuple[int, bool]] = {}
    for mem in (float(x) for x in args.memories.split(",")):
        res = optimise(net, EdgeParams(mem, args.size, sync=Sync(args.sync)), args.eps)
        finish: dict[frozenset, dict[str, float]] = {}
        print(
            f"\nmemory {mem / 1e6:g} MB: optimiser's best = {res.best.strategy} {res.best.time_s * 1e3:.2f} ms"
        )
        print(
            f"  {'family':14s} {'strategy':28s} {'rounds':>6s} {'optimiser ms':>13s} {'check ms':>10s} {'rel diff':>9s}"
        )
        for cand in res.best_per_family():
            named = [[[net.names[i] for i in c] for c in rnd] for rnd in cand.rounds]
            key = repr(named)
            if key not in mixing_memo:
                mixing_memo[key] = rounds_needed(named, sites, args.eps)
            t_need, exact = mixing_memo[key]
            if t_need != cand.mixing.rounds or exact != cand.mixing.exact:
                print(
                    f"  MIXING MISMATCH {cand.strategy}: check {t_need} exact={exact}, optimiser {cand.mixing.rounds}"
                )
                failures += 1
            for rnd in named:
                for c in rnd:
                    if frozenset(c) not in finish:
                        finish[frozenset(c)] = simulate_clique(c, one_way, link_Bps, mem, args.size)
            t_check = schedule_time(named, t_need, sites, finish, args.sync == "barrier")
            rel = abs(t_check - cand.time_s) / t_check
            worst = max(worst, rel)
            flag = "" if rel <= REL_TOL else "  <-- DISAGREES"
            failures += bool(flag)
            print(
                f"  {cand.family:14s} {cand.strategy:28s} {t_need:6d} {cand.time_s * 1e3:13.3f} {t_check * 1e3:10.3f} {rel:9.1e}{flag}"
            )
    print(f"\nworst relative difference over all candidates: {worst:.2e} (tolerance {REL_TOL:g})")

    if not args.no_crossover:
        sweep = run_sweep(
            net,
            EdgeParams(4e6, args.size, sync=Sync(args.sync)),
            memories=[4e6, 16e6, 64e6, 256e6],
            eps=args.eps,
        )
        m_star = sweep.all_to_all_from
        print(f"optimiser's crossover to all-to-all: {m_star / 1e6 if m_star else float('nan'):.4g} MB")
        if m_star is not None:
            for factor, want in ((0.98, False), (1.02, True)):
                mem = m_star * factor
                res = optimise(net, EdgeParams(mem, args.size, sync=Sync(args.sync)), args.eps)
                a2a = next(c for c in res.candidates if c.family == "all-to-all")
                other = min((c for c in res.candidates if c.family != "all-to-all"), key=lambda c: c.time_s)
                times = {}
                for cand in (a2a, other):
                    named = [[[net.names[i] for i in c] for c in rnd] for rnd in cand.rounds]
                    fin = {
                        frozenset(c): simulate_clique(c, one_way, link_Bps, mem, args.size)
                        for rnd in named
                        for c in rnd
                    }
                    times[cand.family] = schedule_time(
                        named, cand.mixing.rounds, sites, fin, args.sync == "barrier"
                    )
                ok = (times["all-to-all"] < times[other.family]) == want
                failures += not ok
                print(
                    f"  at {mem / 1e6:.4g} MB: all-to-all {times['all-to-all'] * 1e3:.2f} ms vs "
                    f"{other.strategy} {times[other.family] * 1e3:.2f} ms -> "
                    f"{'all-to-all' if times['all-to-all'] < times[other.family] else other.strategy} "
                    f"({'as predicted' if ok else 'NOT as predicted'})"
                )
    print("AGREE" if failures == 0 else f"{failures} DISAGREEMENT(S)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
