"""The schedule optimiser: search each family, score every candidate with the same model, pick the best.

Families (docs/schedule-model.md, section 6):
  all-to-all      one round, everyone in one clique.
  grid            product designs n = n1 x ... x nm (k = largest factor), exact average after m rounds;
                  the labelling is enumerated exhaustively for two factors when small (9 = 3 x 3:
                  10 080 ordered schedules), else found by local search.
  resolvable      fixed combinatorial rotations (round-robin pairs, affine planes, cyclic strides) with a
                  latency-aware labelling by local search; consensus to eps.
  latency-aware   rounds chosen one at a time by an ILP that minimises the slowest clique, never
                  repeating a pair, the best prefix kept; for pairs (k = 2), polished by local search
                  over the sequence (memoised across memory sizes: pairs need no edge memory).
  hierarchical    regions (continents) first, then cliques with at most one site per region chosen by
                  the same ILP, repeated to eps (exact when regions are equal and the second round is a
                  transversal).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from controller.schedule.designs import (
    affine_plane,
    cyclic_resolvable,
    factorisations,
    product_design,
    round_robin_pairs,
    sizes_for,
)
from controller.schedule.mixing import DEFAULT_EPS, Mixing, consensus
from controller.schedule.model import EdgeParams, Network, Round, TimingCache
from controller.schedule.search import (
    ENUMERATION_LIMIT,
    exhaustive_grid,
    grid_count,
    ilp_partition,
    local_search_labelling,
    polish_sequence,
    schedule_time,
)

FAMILIES = ("all-to-all", "grid", "resolvable", "latency-aware", "hierarchical")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Candidate:
    """One scored schedule: a cycle of rounds, how many rounds to consensus, and the wall-clock time."""

    family: str
    strategy: str
    k: int
    rounds: tuple[Round, ...]
    mixing: Mixing
    time_s: float
    search: str

    def named_rounds(self, net: Network) -> list[list[list[str]]]:
        """Rounds as lists of cliques of site names (idle singletons left out)."""
        return [[[net.names[i] for i in c] for c in rnd if len(c) > 1] for rnd in self.rounds]

    def to_json(self, net: Network) -> dict[str, object]:
        return {
            "strategy": self.strategy,
            "family": self.family,
            "k": self.k,
            "rounds": self.named_rounds(net),
            "time_s": self.time_s if math.isfinite(self.time_s) else None,
            "rounds_to_consensus": self.mixing.rounds if self.mixing.reaches else None,
            "exact_average": self.mixing.exact,
            "consensus_error": self.mixing.error,
            "search": self.search,
        }


@dataclass
class Result:
    """All candidates of one optimisation, with the best overall and per family."""

    net: Network
    edge: EdgeParams
    eps: float
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def best(self) -> Candidate:
        return min(self.candidates, key=_rank)

    def best_per_family(self) -> list[Candidate]:
        out = []
        for fam in FAMILIES:
            mine = [c for c in self.candidates if c.family == fam]
            if mine:
                out.append(min(mine, key=_rank))
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "best": self.best.to_json(self.net),
            "candidates": [c.to_json(self.net) for c in self.best_per_family()],
            "all_candidates": [c.to_json(self.net) for c in self.candidates],
            "model": {
                "memory_bytes": self.edge.memory_bytes,
                "size_bytes": self.edge.size_bytes,
                "chunk_bytes": self.edge.chunk_bytes,
                "bandwidth_bps": self.net.bandwidth_bps,
                "inbound": self.edge.inbound.value,
                "sync": self.edge.sync.value,
                "eps": self.eps,
            },
        }


def _rank(c: Candidate) -> tuple[float, int, int]:
    """Fastest first; among equals, fewer rounds, then the family listed first (simplest)."""
    return (c.time_s, c.mixing.rounds if c.mixing.reaches else 10**9, FAMILIES.index(c.family))


def _region_order(net: Network) -> list[int]:
    """Sites grouped by region, nearest-neighbour order inside: a sensible starting labelling."""
    regions = net.regions or ("",) * net.n
    order: list[int] = []
    for reg in dict.fromkeys(regions):
        members = [i for i in range(net.n) if regions[i] == reg]
        chain = [members.pop(0)]
        while members:
            nxt = min(members, key=lambda m: net.latency_s[chain[-1], m])
            members.remove(nxt)
            chain.append(nxt)
        order.extend(chain)
    return order


def all_to_all(cache: TimingCache, eps: float) -> list[Candidate]:
    n = cache.net.n
    rounds = ((tuple(range(n)),),)
    mix = Mixing(1, 0.0, True)
    return [Candidate("all-to-all", "all-to-all", n, rounds, mix, schedule_time(cache, rounds, mix), "exact")]


def grids(cache: TimingCache, eps: float) -> list[Candidate]:
    n = cache.net.n
    out = []
    starts = [_region_order(cache.net), list(range(n))]
    for factors in factorisations(n, largest=n - 1):
        structure = product_design(factors)
        mix = consensus(n, structure, eps)
        if len(factors) == 2 and grid_count(*factors) <= ENUMERATION_LIMIT:
            found = exhaustive_grid(cache, factors[0], factors[1])
        else:
            found = local_search_labelling(cache, structure, mix, starts)
        name = "grid " + "x".join(map(str, factors))
        out.append(Candidate("grid", name, max(factors), found.rounds, mix, found.time_s, found.search))
    return out


def resolvable(cache: TimingCache, eps: float) -> list[Candidate]:
    n = cache.net.n
    out = []
    starts = [_region_order(cache.net), list(range(n))]
    for k in range(2, n):
        q = math.isqrt(n)
        if k == 2:
            structure, name = round_robin_pairs(n), "round-robin pairs"
        elif q * q == n and k == q and all(q % p for p in range(2, math.isqrt(q) + 1)):
            structure, name = affine_plane(q), f"affine plane AG(2,{q})"
        else:
            structure, name = cyclic_resolvable(n, k), f"cyclic {k}-cliques"
        mix = consensus(n, structure, eps)
        if not mix.reaches:
            continue
        found = local_search_labelling(cache, structure, mix, starts, restarts=1)
        out.append(Candidate("resolvable", name, k, found.rounds, mix, found.time_s, found.search))
    return out


def _pairs(rnd: Sequence[Sequence[int]]) -> set[tuple[int, int]]:
    return {p for c in rnd for p in itertools.combinations(sorted(c), 2)}


def _best_prefix(
    cache: TimingCache, rounds: list[Round], eps: float
) -> tuple[tuple[Round, ...], Mixing, float] | None:
    """The prefix of `rounds` that, repeated, reaches consensus soonest."""
    best = None
    for length in range(1, len(rounds) + 1):
        cyc = tuple(rounds[:length])
        mix = consensus(cache.net.n, cyc, eps)
        t = schedule_time(cache, cyc, mix)
        if best is None or t < best[2]:
            best = (cyc, mix, t)
    return best if best is not None and math.isfinite(best[2]) else None


def _greedy_sequence(cache: TimingCache, k: int) -> list[Round]:
    """Rounds of k-cliques picked one at a time by the min-max ILP, spreading who meets whom."""
    n = cache.net.n
    sizes = sizes_for(n, k)
    met: set[tuple[int, int]] = set()
    rounds: list[Round] = []
    used: list[frozenset[int]] = []
    for _ in range(n):
        # Prefer cliques of strangers (no pair met before); when k^2 > n that runs out after one
        # round, so fall back to forbidding only cliques that sit inside an earlier clique.
        rnd = ilp_partition(cache, sizes, lambda c, met=met: not (_pairs([c]) & met))
        if rnd is None:
            rnd = ilp_partition(
                cache, sizes, lambda c, used=used: len(c) < 2 or not any(set(c) <= u for u in used)
            )
        if rnd is None or rnd in rounds:
            break
        used.extend(frozenset(c) for c in rnd if len(c) > 1)
        rounds.append(rnd)
        met |= _pairs(rnd)
        if len(met) == n * (n - 1) // 2:
            break
    return rounds


PAIR_POLISH_BUDGET = 800  # evaluations per start of the pair-sequence local search
PAIR_CYCLE_LENGTHS = (4, 5, 6)  # random starting cycles for pairs, besides the greedy ILP sequence
_PAIR_MEMO: dict[tuple[object, ...], tuple[tuple[Round, ...], Mixing, float]] = {}


def _random_round(n: int, sizes: Sequence[int], rng: random.Random) -> Round:
    perm = list(range(n))
    rng.shuffle(perm)
    out, at = [], 0
    for size in sizes:
        out.append(tuple(sorted(perm[at : at + size])))
        at += size
    return tuple(sorted(out))


def _best_pairs(
    cache: TimingCache, eps: float, greedy: tuple[Round, ...] | None
) -> tuple[tuple[Round, ...], Mixing, float] | None:
    """Local search over pair sequences, memoised across memory sizes.

    A pair's edge stage forwards one stream, so memory never limits it: the answer depends on the
    WAN, S, the rate and eps only, and a sweep over memory computes it once.
    """
    net, edge = cache.net, cache.edge
    key = (net.names, net.latency_s.tobytes(), net.bandwidth_bps, edge.size_bytes, edge.sync, eps, greedy)
    if key not in _PAIR_MEMO:
        rng = random.Random(20261130)
        sizes = sizes_for(net.n, 2)
        starts = [greedy] if greedy else []
        starts += [
            tuple(_random_round(net.n, sizes, rng) for _ in range(length)) for length in PAIR_CYCLE_LENGTHS
        ]
        best = None
        for start in starts:
            got = polish_sequence(cache, start, eps, rng, PAIR_POLISH_BUDGET)
            if best is None or got[2] < best[2]:
                best = got
        if len(_PAIR_MEMO) > 64:
            _PAIR_MEMO.clear()
        _PAIR_MEMO[key] = best  # type: ignore[assignment]
    got = _PAIR_MEMO[key]
    return got if got and math.isfinite(got[2]) else None


def latency_aware(cache: TimingCache, eps: float) -> list[Candidate]:
    n = cache.net.n
    out = []
    for k in range(2, n):
        picked = _best_prefix(cache, _greedy_sequence(cache, k), eps)
        search = "heuristic (greedy sequence of exact min-max ILP rounds)"
        if k == 2:
            polished = _best_pairs(cache, eps, picked[0] if picked else None)
            if polished is not None and (picked is None or polished[2] < picked[2]):
                picked = polished
                search = "heuristic (greedy ILP sequence and random cycles, polished by swap local search)"
        if picked is None:
            continue
        cyc, mix, t = picked
        out.append(Candidate("latency-aware", f"latency-aware {k}-cliques", k, cyc, mix, t, search))
    return out


def hierarchical(cache: TimingCache, eps: float) -> list[Candidate]:
    net = cache.net
    if not net.regions:
        return []
    groups = [tuple(i for i in range(net.n) if net.regions[i] == r) for r in dict.fromkeys(net.regions)]
    if len(groups) < 2 or all(len(g) == 1 for g in groups):
        return []
    region_of = {i: gi for gi, g in enumerate(groups) for i in g}
    first: Round = tuple(sorted(groups))
    width = len(groups)
    count = max(len(g) for g in groups)
    # Second round: `count` cliques with at most one site per region, as even as the regions allow.
    base, extra = divmod(net.n, count)
    sizes = [base + 1] * extra + [base] * (count - extra)
    if max(sizes) > width:
        return []
    second = ilp_partition(cache, sizes, lambda c: len({region_of[i] for i in c}) == len(c))
    if second is None:
        return []
    cyc = (first, second)
    mix = consensus(net.n, cyc, eps)
    t = schedule_time(cache, cyc, mix)
    if not math.isfinite(t):
        return []
    search = "heuristic (regions fixed; cross-region round by exact min-max ILP)"
    k = max(max(len(g) for g in groups), max(sizes))
    return [Candidate("hierarchical", "regions, then cross-region", k, cyc, mix, t, search)]


_BUILDERS: dict[str, Callable[[TimingCache, float], list[Candidate]]] = {
    "all-to-all": all_to_all,
    "grid": grids,
    "resolvable": resolvable,
    "latency-aware": latency_aware,
    "hierarchical": hierarchical,
}


def optimise(
    net: Network,
    edge: EdgeParams,
    eps: float = DEFAULT_EPS,
    families: Sequence[str] = FAMILIES,
    progress: Progress | None = None,
) -> Result:
    """Score every family's best candidates on this WAN and edge; the Result knows the winner."""
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    cache = TimingCache(net, edge)
    result = Result(net, edge, eps)
    for fam in families:
        if progress:
            progress(f"searching {fam} schedules")
        result.candidates.extend(_BUILDERS[fam](cache, eps))
    return result
