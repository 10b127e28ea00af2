"""float32 on the Edge-INC stages: block fixed point, as Core-INC's float32 mode (edge.formats).

The stages sum int32 lanes exactly. A float32 schedule runs every round of cliques twice in the data
plane: first a `max` round in which the members' streams carry their blocks' exponents (one per chunk of
64 values, 64 to a chunk) and the stage keeps the lane-wise maximum, then the `sum` round, in which each
member scales every block by the agreed power of two (with headroom for the clique's size, so the sum
cannot overflow) and rounds to int32. The sum scaled back is the site's next vector and what its workers
get, as float32. The max round is small (Q / 64 chunks for Q chunks of values) but costs a start
agreement and the clique's delay; the prediction includes it (controller.schedule.emulated).

`replay` gives what every site holds after the rounds with the same arithmetic, so a run's results can
be checked bit for bit; `error_bound` how far that may be from the exact float64 sum.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edge.edge_wire import LANES
from edge.formats import FormatError, block_exponents, fixed_to_float, float_to_fixed, scale_exponents


def exponent_chunks(chunks: int) -> int:
    """Chunks of a max round for a vector of `chunks` blocks."""
    return -(-chunks // LANES)


class FloatVector:
    """A float32 site's vector and its block fixed point (edge.formats, as Core-INC's float32 mode):
    before each sum the clique max-reduces the blocks' exponents, each member scales its blocks by the
    agreed power of two (with headroom for the clique's size) and rounds to int32, the stage sums them
    exactly, and the sum scaled back is the site's next vector. One block is one chunk of 64 values."""

    def __init__(self, values: np.ndarray) -> None:
        arr = np.asarray(values)
        if arr.ndim != 2 or arr.shape[1] != LANES:
            raise FormatError(f"a float32 site vector is chunks x {LANES} values, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise FormatError("the edge stages carry finite float32 values only (no inf or NaN)")
        self.values = arr.astype(np.float64)
        self.shifts: np.ndarray | None = None

    def exponents(self) -> np.ndarray:
        """This site's block exponents as lanes: one per block, 64 blocks to a chunk."""
        exps = block_exponents(self.values)
        out = np.zeros(-(-exps.size // LANES) * LANES, dtype=np.uint32)
        out[: exps.size] = exps
        return out.reshape(-1, LANES)

    def agree(self, agreed_lanes: np.ndarray, clique: int) -> None:
        self.shifts = scale_exponents(agreed_lanes.reshape(-1)[: self.values.shape[0]], clique)

    def fixed(self) -> np.ndarray:
        if self.shifts is None:
            raise RuntimeError("a float32 sum round needs its exponent round first")
        return float_to_fixed(self.values, self.shifts)

    def result_lanes(self, chunk: int, summed: np.ndarray) -> np.ndarray:
        """A summed chunk as float32 bit patterns (what the workers get)."""
        assert self.shifts is not None
        back = fixed_to_float(np.asarray(summed, dtype=np.uint32)[None, :], self.shifts[chunk : chunk + 1])
        return back.astype(np.float32).view(np.uint32).reshape(-1)

    def take_sum(self, summed: np.ndarray) -> None:
        assert self.shifts is not None
        self.values = fixed_to_float(summed, self.shifts)
        self.shifts = None

    def lanes(self) -> np.ndarray:
        return self.values.astype(np.float32).view(np.uint32)


def replay(
    vectors: dict[str, np.ndarray], rounds: Sequence[Sequence[Sequence[str]]]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """For float32 site vectors (chunks x 64) and a schedule's rounds: (what each site's workers get
    after the rounds, as float32, computed as the stages compute it; the exact float64 sums of the same
    rounds; a bound on the difference of the two, per element).

    The bound: a member rounds each value to half a unit of its block's scale, so a clique of k adds at
    most k / 2 units of error per block, on top of the errors its members' values already carry; the
    final cast to float32 adds half an ulp."""
    cur = {n: FloatVector(v) for n, v in vectors.items()}
    exact = {n: np.asarray(v, dtype=np.float64) for n, v in vectors.items()}
    err = {n: np.zeros(np.shape(v)) for n, v in vectors.items()}
    for cliques in rounds:
        nxt_exact, nxt_err = dict(exact), dict(err)
        for c in cliques:
            if len(c) < 2:
                continue
            agreed = np.maximum.reduce([cur[m].exponents() for m in c])
            fixed = []
            for m in c:
                cur[m].agree(agreed, len(c))
                fixed.append(cur[m].fixed())
            assert cur[c[0]].shifts is not None
            unit = np.ldexp(1.0, -cur[c[0]].shifts)[:, None]  # every member has the same shifts
            total = np.zeros_like(fixed[0])
            for f in fixed:
                total += f  # uint32 wrap-around, as the stages add
            for m in c:
                cur[m].take_sum(total)
            s = sum(exact[m] for m in c)
            e = sum(err[m] for m in c) + len(c) * 0.5 * unit
            for m in c:
                nxt_exact[m], nxt_err[m] = s, e
        exact, err = nxt_exact, nxt_err
    out = {n: fv.values.astype(np.float32) for n, fv in cur.items()}
    bound = {n: err[n] + np.abs(exact[n]) * 2.0**-24 + np.finfo(np.float32).tiny for n in out}
    return out, exact, bound
