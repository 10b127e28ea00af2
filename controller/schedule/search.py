"""Search tools: exhaustive grid enumeration, labelling local search, ILP partitions.

Every result says how it was found (`exact` search or `heuristic`), because an optimiser that
claims optimality it does not have misleads whoever chooses the network from its answer.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from controller.schedule.designs import equal_partitions, relabel, transversals
from controller.schedule.mixing import Mixing, consensus
from controller.schedule.model import Clique, Round, Sync, TimingCache, run_rounds

ENUMERATION_LIMIT = 60_000  # grid labellings evaluated one by one below this count
ILP_CANDIDATE_LIMIT = 40_000  # cliques offered to the ILP below this count


@dataclass(frozen=True)
class Found:
    """A schedule with its time and how it was found."""

    rounds: tuple[Round, ...]
    time_s: float
    search: str  # "exact" or "heuristic" (and why)


def schedule_time(cache: TimingCache, rounds: Sequence[Round], mixing: Mixing) -> float:
    """Wall-clock time until every site holds the average (to eps), or inf if it never does."""
    if not mixing.reaches:
        return math.inf
    return float(run_rounds(cache, rounds, mixing.rounds).max())


def grid_count(a: int, b: int) -> int:
    """Number of (round-1 partition into a-cliques, transversal round 2) pairs on a*b sites."""
    n = a * b
    return math.factorial(n) // (math.factorial(a) * math.factorial(b))


def exhaustive_grid(cache: TimingCache, a: int, b: int) -> Found:
    """Best two-round a x b grid schedule over every labelling and both round orders (exact).

    Round 1 partitions the sites into b cliques of a; round 2 into a cliques of b, each taking one site
    from every round-1 clique. These are exactly the two-round schedules of a- and b-cliques whose
    product is the averaging matrix J, so the minimum here is the optimum of that space.
    """
    n = cache.net.n
    assert a * b == n
    best_t, best = math.inf, None
    barrier = cache.edge.sync is Sync.BARRIER
    finish: dict[Clique, tuple[Clique, tuple[float, ...]]] = {}

    def timing(c: Clique) -> tuple[Clique, tuple[float, ...]]:
        hit = finish.get(c)
        if hit is None:
            t = cache.get(c)
            hit = finish[c] = (t.members, t.finish_s)
        return hit

    def two_rounds(r1: tuple[Clique, ...], r2: tuple[Clique, ...]) -> float:
        ready = [0.0] * n
        for c in r1:
            mem, fin = timing(c)
            for i, f in zip(mem, fin, strict=True):
                ready[i] = f
        if barrier:
            ready = [max(ready)] * n
        worst = 0.0
        for c in r2:
            mem, fin = timing(c)
            start = max(ready[i] for i in mem)
            worst = max(worst, start + max(fin))
        return worst

    for r1 in equal_partitions(list(range(n)), a):
        r1s = tuple(tuple(sorted(c)) for c in r1)
        for r2 in transversals(r1s):
            orders = [(r1s, r2)] if a == b else [(r1s, r2), (r2, r1s)]
            for x, y in orders:
                t = two_rounds(x, y)
                if t < best_t:
                    best_t, best = t, (x, y)
    assert best is not None
    return Found(best, best_t, "exact")


def local_search_labelling(
    cache: TimingCache,
    structure: Sequence[Round],
    mixing: Mixing,
    starts: Sequence[Sequence[int]],
    seed: int = 1,
    restarts: int = 3,
) -> Found:
    """Best site-to-position assignment by steepest-descent swaps from several starts (heuristic)."""
    n = cache.net.n
    rng = random.Random(seed)
    initial = [list(s) for s in starts]
    for _ in range(restarts):
        perm = list(range(n))
        rng.shuffle(perm)
        initial.append(perm)

    def cost(perm: Sequence[int]) -> float:
        return schedule_time(cache, relabel(structure, perm), mixing)

    best_t, best_perm = math.inf, list(range(n))
    for perm in initial:
        cur = cost(perm)
        improved = True
        while improved and math.isfinite(cur):
            improved = False
            move, move_t = None, cur
            for i, j in itertools.combinations(range(n), 2):
                perm[i], perm[j] = perm[j], perm[i]
                t = cost(perm)
                perm[i], perm[j] = perm[j], perm[i]
                if t < move_t - 1e-12:
                    move, move_t = (i, j), t
            if move is not None:
                i, j = move
                perm[i], perm[j] = perm[j], perm[i]
                cur, improved = move_t, True
        if cur < best_t:
            best_t, best_perm = cur, list(perm)
    return Found(
        relabel(structure, best_perm), best_t, f"heuristic (swap local search, {len(initial)} starts)"
    )


def ilp_partition(
    cache: TimingCache,
    sizes: Sequence[int],
    allowed: Callable[[Clique], bool] = lambda c: True,
) -> tuple[Clique, ...] | None:
    """Partition into cliques of the given sizes minimising the slowest clique's round time.

    Set-partitioning ILP over all admissible cliques (scipy.optimize.milp): x_C in {0, 1}, every site
    covered once, the count of each size fixed. The min-max objective is found by bisection over the
    distinct clique times T (keep only cliques no slower than T, ask for a feasible partition), then
    the total time is minimised at the smallest feasible T so the other cliques are not left needlessly
    slow. Pure set partitioning solves much faster than a min-max formulation with many tied costs.
    Exact for one round; None when infeasible or when the candidate set is too large to enumerate.
    """
    n = cache.net.n
    need: dict[int, int] = {}
    for s in sizes:
        need[s] = need.get(s, 0) + 1
    if sum(sizes) != n:
        raise ValueError(f"sizes {sizes} do not add up to {n}")
    if sum(math.comb(n, s) for s in need) > ILP_CANDIDATE_LIMIT:
        return None
    cands: list[Clique] = [c for s in need for c in itertools.combinations(range(n), s) if allowed(c)]
    if not cands:
        return None
    cost = np.array([cache.get(c).time_s for c in cands])
    cover = np.zeros((n, len(cands)))
    for col, cl in enumerate(cands):
        cover[list(cl), col] = 1.0
    size_rows = np.zeros((len(need), len(cands)))
    targets = np.array([need[s] for s in sorted(need)], dtype=float)
    for row, s in enumerate(sorted(need)):
        size_rows[row] = [len(cl) == s for cl in cands]

    def solve(limit: float) -> np.ndarray | None:
        keep = cost <= limit
        if not keep.any():
            return None
        m = int(keep.sum())
        res = milp(
            cost[keep] / max(float(cost.max()), 1e-9),
            constraints=[
                LinearConstraint(cover[:, keep], 1.0, 1.0),
                LinearConstraint(size_rows[:, keep], targets, targets),
            ],
            integrality=np.ones(m),
            bounds=Bounds(np.zeros(m), np.ones(m)),
        )
        if res.status != 0 or res.x is None:
            return None
        return np.flatnonzero(keep)[res.x > 0.5]

    levels = np.unique(cost)
    best = solve(float(levels[-1]))
    if best is None:
        return None
    lo, hi = -1, len(levels) - 1  # levels[hi] feasible; levels[lo] infeasible (or none)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = solve(float(levels[mid]))
        if got is None:
            lo = mid
        else:
            hi, best = mid, got
    return tuple(sorted(cands[i] for i in best))


def polish_sequence(
    cache: TimingCache,
    rounds: Sequence[Round],
    eps: float,
    rng: random.Random,
    budget: int = 800,
) -> tuple[tuple[Round, ...], Mixing, float]:
    """Improve a cyclic sequence by swapping two sites between cliques of one round (heuristic).

    The objective is the schedule's time to consensus, so a move may trade a slower round for faster
    mixing. First-improvement in a random move order, until a full scan finds nothing or `budget`
    evaluations are spent (a count, not a clock, so results do not depend on the machine).
    """
    n = cache.net.n

    def score(seq: tuple[Round, ...]) -> tuple[Mixing, float]:
        mix = consensus(n, seq, eps)
        return mix, schedule_time(cache, seq, mix)

    cur = tuple(tuple(sorted(tuple(sorted(c)) for c in r)) for r in rounds)
    cur_mix, cur_t = score(cur)
    spent = 0
    improved = True
    while improved and spent < budget:
        improved = False
        moves = [
            (r, a, b, x, y)
            for r, rnd in enumerate(cur)
            for a, b in itertools.combinations(range(len(rnd)), 2)
            for x in range(len(rnd[a]))
            for y in range(len(rnd[b]))
        ]
        rng.shuffle(moves)
        for r, a, b, x, y in moves:
            if spent >= budget:
                break
            rnd = [list(c) for c in cur[r]]
            rnd[a][x], rnd[b][y] = rnd[b][y], rnd[a][x]
            new_round = tuple(sorted(tuple(sorted(c)) for c in rnd))
            cand = (*cur[:r], new_round, *cur[r + 1 :])
            spent += 1
            mix, t = score(cand)
            if t < cur_t - 1e-12:
                cur, cur_mix, cur_t, improved = cand, mix, t, True
                break
    return cur, cur_mix, cur_t
