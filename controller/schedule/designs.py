"""Combinatorial schedule structures, on positions 0..n-1 (sites are assigned to positions later).

Why separate structure from labelling: the mixing of a design is fixed by its structure (see
mixing.py), while its round times depend on which sites share a clique. The searches pick a
structure here and then optimise the labelling against the WAN.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

from controller.schedule.model import Clique, Round


def factorisations(n: int, largest: int | None = None) -> list[tuple[int, ...]]:
    """All ways to write n as a non-increasing product of factors >= 2 (at least two factors).

    Each one is a product design: n = n1 x ... x nm sites on a mixed-radix grid, round l averages
    sites that differ only in digit l, and after the m rounds every site holds the exact average.
    """
    out: list[tuple[int, ...]] = []

    def rec(rest: int, cap: int, acc: tuple[int, ...]) -> None:
        if rest == 1:
            if len(acc) >= 2:
                out.append(acc)
            return
        for f in range(min(cap, rest), 1, -1):
            if rest % f == 0:
                rec(rest // f, f, (*acc, f))

    rec(n, largest or n, ())
    return out


def product_design(factors: Sequence[int]) -> tuple[Round, ...]:
    """Rounds of the mixed-radix grid with these factors, positions numbered row-major."""
    n = math.prod(factors)
    rounds: list[Round] = []
    strides = [math.prod(factors[d + 1 :]) for d in range(len(factors))]
    for digit, f in enumerate(factors):
        groups: dict[tuple[int, ...], list[int]] = {}
        for pos in range(n):
            digits = tuple((pos // strides[m]) % factors[m] for m in range(len(factors)))
            key = digits[:digit] + digits[digit + 1 :]
            groups.setdefault(key, []).append(pos)
        assert all(len(g) == f for g in groups.values())
        rounds.append(tuple(tuple(g) for g in groups.values()))
    return tuple(rounds)


def affine_plane(q: int) -> tuple[Round, ...]:
    """The q + 1 parallel classes of AG(2, q) for prime q: a resolvable design of q^2 points in lines of q.

    Any two classes form a q x q grid, so the average is exact after two rounds; cycling through all
    classes spreads the traffic over every pair of sites (each pair meets exactly once per cycle).
    """
    if q < 2 or any(q % p == 0 for p in range(2, math.isqrt(q) + 1)):
        raise ValueError(f"affine_plane needs a prime order, got {q}")
    pos = {(x, y): x * q + y for x in range(q) for y in range(q)}
    classes: list[Round] = [tuple(tuple(pos[(x, y)] for y in range(q)) for x in range(q))]
    for m in range(q):
        lines = []
        for c in range(q):
            lines.append(tuple(sorted(pos[(x, (m * x + c) % q)] for x in range(q))))
        classes.append(tuple(lines))
    return tuple(classes)


def round_robin_pairs(n: int) -> tuple[Round, ...]:
    """Circle method: a (near-)1-factorisation of K_n, every pair meets once per cycle.

    For even n, n - 1 rounds of n/2 pairs; for odd n, n rounds in which one site idles.
    """
    m = n if n % 2 == 0 else n + 1
    ghost = n if n % 2 else None
    rounds: list[Round] = []
    others = list(range(1, m))
    for r in range(m - 1):
        ring = [0, *others[r:], *others[:r]]
        rnd: list[Clique] = []
        for i in range(m // 2):
            a, b = ring[i], ring[m - 1 - i]
            if ghost is not None and ghost in (a, b):
                rnd.append(((b if a == ghost else a),))
            else:
                rnd.append(tuple(sorted((a, b))))
        rounds.append(tuple(rnd))
    return tuple(rounds)


def sizes_for(n: int, k: int) -> tuple[int, ...]:
    """Clique sizes of a round of k-cliques on n sites: as many k as fit, then the remainder."""
    sizes = [k] * (n // k)
    if n % k:
        sizes.append(n % k)
    return tuple(sizes)


def cyclic_resolvable(n: int, k: int) -> tuple[Round, ...]:
    """A resolvable-style rotation for any n, k: round t groups positions by a stride-(k^t) shuffle.

    Round 0 takes consecutive blocks; round t re-reads the positions with stride s_t coprime to n, so
    blocks of later rounds cut across earlier ones (the product-design idea when k^2 divides n,
    a heuristic otherwise). Rounds are added until the union connects everyone and no new pair meets.
    """
    sizes = sizes_for(n, k)
    strides = [s for s in range(1, n) if math.gcd(s, n) == 1]
    rounds: list[Round] = []
    met: set[tuple[int, int]] = set()
    for s in strides:
        order = [(i * s) % n for i in range(n)]
        rnd: list[Clique] = []
        at = 0
        for size in sizes:
            rnd.append(tuple(sorted(order[at : at + size])))
            at += size
        pairs = {p for c in rnd for p in itertools.combinations(c, 2)}
        if pairs <= met:
            continue
        met |= pairs
        rounds.append(tuple(rnd))
        if len(met) == n * (n - 1) // 2:
            break
    return tuple(rounds)


def equal_partitions(items: Sequence[int], size: int) -> Iterator[tuple[Clique, ...]]:
    """Every partition of `items` into blocks of `size` (the first item anchors the first block)."""
    if not items:
        yield ()
        return
    first, rest = items[0], items[1:]
    for comb in itertools.combinations(rest, size - 1):
        remaining = [x for x in rest if x not in comb]
        for tail in equal_partitions(remaining, size):
            yield ((first, *comb), *tail)


def transversals(blocks: Sequence[Clique]) -> Iterator[tuple[Clique, ...]]:
    """Every partition into len(blocks[0]) cliques that take exactly one site from each block."""
    head, tail = blocks[0], blocks[1:]
    for perms in itertools.product(*(itertools.permutations(b) for b in tail)):
        yield tuple(tuple(sorted((head[c], *(p[c] for p in perms)))) for c in range(len(head)))


def relabel(rounds: Sequence[Round], perm: Sequence[int]) -> tuple[Round, ...]:
    """Put site perm[p] at position p."""
    return tuple(tuple(tuple(sorted(perm[p] for p in clique)) for clique in rnd) for rnd in rounds)
