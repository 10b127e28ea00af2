"""Mixing: how fast a cyclic sequence of clique averages reaches consensus.

Each round replaces the members' vectors by their mean: x <- W x with W block-diagonal, 1/k in each
k x k block. After t rounds x_t = P_t x_0, P_t = W_t ... W_1. Since every W is symmetric and doubly
stochastic, P_t J = J P_t = J (J = 11^T / n), so x_t - mean = (P_t - J)(x_0 - mean) and
||P_t - J||_2 is the worst-case relative disagreement left: the consensus error. It is 0 (to
rounding) for finite-time designs such as 3 x 3 grids, and decays geometrically otherwise.

The error depends only on the schedule's structure, not on which site sits where: relabelling the
sites conjugates every W by one permutation and leaves the norm unchanged. The searches use that to
count the rounds once per design and only re-time relabellings.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from controller.schedule.model import Round

EXACT_TOL = 1e-9  # below this the average is exact up to floating-point rounding
# An inexact schedule stands in for an exact one only when it delivers the average as precisely:
# the gradients are float32 (DESIGN.md section 4), so the default target is float32's unit roundoff.
# Looser targets (--eps 1e-3) trade accuracy for time and favour many cheap rounds (pairs).
DEFAULT_EPS = 2.0**-23
DEFAULT_MAX_ROUNDS = 5000
TIE_REL = 1e-9  # an error within this relative distance of eps counts as reaching it


@dataclass(frozen=True)
class Mixing:
    """Rounds until the consensus error is <= eps (or never), and whether the average is exact."""

    rounds: int  # 0 < rounds; -1 if the error never fell to eps within the budget
    error: float
    exact: bool

    @property
    def reaches(self) -> bool:
        return self.rounds > 0


def averaging_matrix(n: int, rnd: Round) -> np.ndarray:
    """W of one round: 1/k within each clique of size k, identity for sites outside every clique."""
    w = np.eye(n)
    for clique in rnd:
        if len(clique) < 2:
            continue
        idx = np.array(clique)
        w[np.ix_(idx, idx)] = 1.0 / len(clique)
    return w


def consensus(
    n: int, rounds: Sequence[Round], eps: float = DEFAULT_EPS, max_rounds: int = DEFAULT_MAX_ROUNDS
) -> Mixing:
    """First t with ||W_t ... W_1 - J||_2 <= eps, repeating `rounds` cyclically.

    Memoised: a sweep asks the same structural question at every memory size.
    """
    key = tuple(tuple(tuple(c) for c in r) for r in rounds)
    return _consensus(n, key, eps, max_rounds)


@functools.lru_cache(maxsize=4096)
def _consensus(n: int, rounds: tuple[Round, ...], eps: float, max_rounds: int) -> Mixing:
    if not rounds or not connected(n, rounds):
        return Mixing(-1, 1.0, False)
    j = np.full((n, n), 1.0 / n)
    mats = [averaging_matrix(n, r) for r in rounds]
    p = np.eye(n)
    err = 1.0
    gate = max(eps, EXACT_TOL) * np.sqrt(n)
    for t in range(1, max_rounds + 1):
        p = mats[(t - 1) % len(mats)] @ p
        d = p - j
        # ||d||_2 >= ||d||_F / sqrt(n): skip the SVD while the cheap bound says "not yet".
        if float(np.sqrt((d * d).sum())) > gate:
            continue
        err = float(np.linalg.norm(d, 2))
        if err <= EXACT_TOL:
            return Mixing(t, 0.0, True)
        # Pair schedules halve the error each round, so it lands on a power of two such as the default
        # eps itself; the tie must not be decided by rounding noise (which differs between relabellings).
        if err <= eps * (1.0 + TIE_REL):
            return Mixing(t, err, False)
    return Mixing(-1, err, False)


def connected(n: int, rounds: Sequence[Round]) -> bool:
    """Whether the union of all cliques links every site: the condition for consensus at all."""
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for rnd in rounds:
        for clique in rnd:
            for other in clique[1:]:
                parent[find(other)] = find(clique[0])
    return len({find(a) for a in range(n)}) == 1
