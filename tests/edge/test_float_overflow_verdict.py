"""Quantised float32 sums at float32's overflow threshold. A user's largest float32 plus 1e31 is finite
in IEEE (it rounds down to the largest value), but the fixed-point sum, known to n/2 units of 2^101,
lands on the rounding tie and comes back as inf; MX, whose largest code is below float32's largest
value, brings a sum just beyond the threshold back finite. Both are within the stated error bound of the
exact sum, and `formats.quantised_float_ok` takes them, where comparing with the IEEE-rounded exact
sum (the checker's rule for sums beyond float32's range) failed the run."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from edge import formats, mx
from edge.protocol import KIND_MAX
from tests.edge.test_formats import lockstep_allreduce

M = np.float32(np.finfo(np.float32).max)


def _inputs() -> list[np.ndarray]:
    rows = np.zeros((6, 64), dtype=np.float32)
    rows[0, 0], rows[1, 0] = M, 1e31  # IEEE: the largest value (1e31 is below half an ulp)
    rows[0, 1], rows[1, 1] = M, 1.5e31  # IEEE: inf
    rows[0, 2], rows[1, 2] = -M, -1e31  # IEEE: minus the largest value
    rows[:, 3] = M / 6 * np.float32(1.0000001)  # the sum is beyond the threshold: inf
    rows[0, 4] = 1.0  # an ordinary element of the same block
    return list(rows)


def _mx_int32_lanes(rows: list[np.ndarray]) -> np.ndarray:
    """MXINT8 for every worker at once, over a reduction that does what the switches do to int32 lanes
    (max_groups 1: the elements travel unpacked; the sums are the same as packed)."""
    barrier = threading.Barrier(len(rows))
    posted: dict[int, list] = {}
    results: list[np.ndarray | None] = [None] * len(rows)

    def run(rank: int) -> None:
        count = [0]

        def reduce(lanes: np.ndarray, kind: int) -> np.ndarray:
            call = count[0]
            count[0] += 1
            posted.setdefault(call, [None] * len(rows))[rank] = lanes
            barrier.wait()
            got = posted[call]
            out = np.max(got, axis=0) if kind == KIND_MAX else np.sum(got, axis=0, dtype=np.uint32)
            barrier.wait()
            return out

        results[rank] = mx.mx_allreduce(reduce, rows[rank], len(rows), 1)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(len(rows))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert all(r is not None for r in results)
    assert all(np.array_equal(r, results[0], equal_nan=True) for r in results)  # type: ignore[arg-type]
    return results[0]  # type: ignore[return-value]


def _float32_bound(rows: list[np.ndarray], exact: np.ndarray) -> np.ndarray:
    agreed = np.max([formats.block_exponents(formats.pad_to_lanes(r)) for r in rows], axis=0)
    unit = formats.quantisation_bound(formats.scale_exponents(agreed, len(rows)), len(rows))
    q = np.repeat(unit, 64)[: exact.size]
    return q + (np.abs(exact) + q) * 2.0**-24


def test_float32_at_the_threshold_is_within_its_bound_though_it_rounds_to_inf() -> None:
    rows = _inputs()
    exact = np.sum(np.array(rows, dtype=np.float64), axis=0)
    got = lockstep_allreduce(rows, "float32")[0]
    assert got[0] == np.inf  # the tie M + 2^103 rounds to even: inf, where IEEE on the exact sum gives M
    assert np.float32(exact[0]) == M  # what the old rule demanded
    ok = formats.quantised_float_ok(got, exact, _float32_bound(rows, exact))
    assert ok.all(), np.flatnonzero(~ok)


def test_mxint8_beyond_the_threshold_is_within_its_bound_though_finite() -> None:
    rows = _inputs()
    exact = np.sum(np.array(rows, dtype=np.float64), axis=0)
    got = _mx_int32_lanes(rows)
    assert np.isfinite(got[1]) and np.isfinite(got[3])  # IEEE gives inf for both sums
    bound = np.repeat(mx.error_bound(mx.agreed_scales(rows), 6), mx.BLOCK)[:64] + np.abs(exact) * 2.0**-24
    ok = formats.quantised_float_ok(got, exact, bound)
    assert ok.all(), np.flatnonzero(~ok)


@pytest.mark.parametrize(
    ("got", "exact", "bound"),
    [
        (np.inf, 1.0, 0.5),  # an infinity far from the threshold
        (-np.inf, 3.4e38, 1e37),  # the wrong sign
        (np.nan, 3.4e38, 1e37),  # NaN for a finite sum
        (np.inf, np.nan, 1.0),  # NaN must stay NaN
        (np.inf, -np.inf, 1.0),  # and an infinity its own sign
        (2.0, 1.0, 0.5),  # beyond the bound
        (3.3e38, 3.4e38, 1e36),  # finite and beyond the bound at the threshold
    ],
)
def test_what_is_wrong_stays_wrong(got: float, exact: float, bound: float) -> None:
    assert not formats.quantised_float_ok(np.array([got]), np.array([exact]), np.array([bound]))[0]


def test_specials_and_ordinary_values_that_are_right_are_taken() -> None:
    got = np.array([np.nan, np.inf, -np.inf, 1.25, np.inf])
    exact = np.array([np.nan, np.inf, -np.inf, 1.0, 3.4028236e38])
    bound = np.array([0.0, 0.0, 0.0, 0.5, 1e31])
    assert formats.quantised_float_ok(got, exact, bound).all()
