"""Whole allreduces (edge.formats.allreduce_with: every phase of a number format) through real p4kit
switches in the simulated network (tests/p4src/inc_sim.py), with loss, duplication and reordering:
mxint8 against a float64 sum on every element, with blocks whose scales differ from worker to worker,
all-zero blocks, tiny and huge blocks, inf and NaN; int8 and int4 sums that overflow the narrow types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge import formats, mx
from tests.p4src.inc_sim import LinkModel, SimNetwork, chain_fabric

SITES = {"S1": 2, "S2": 1, "S3": 0, "S4": 2}
HOSTS = ["S1h1", "S1h2", "S2h1", "S4h1", "S4h2"]


def through_switches(
    tmp_path: Path, inputs: list[np.ndarray], mode: str, slots: int = 8, seed: int = 3
) -> list:
    fabric = chain_fabric(SITES)
    net = SimNetwork(fabric, LinkModel(loss=0.1, duplicate=0.1, jitter_s=0.05), seed)
    net.start_switches()
    try:
        [plan] = net.install(tmp_path, [(1, HOSTS, slots)])
        workers = net.lockstep_workers(plan, HOSTS)
        groups = max(g for g in (8, 4, 1) if slots % g == 0)
        return net.lockstep(
            workers,
            lambda rank, reduce: formats.allreduce_with(
                reduce, inputs[rank], mode, len(HOSTS), max_groups=groups
            ),
        )
    finally:
        net.close()


def mixed_scale_inputs(seed: int, n: int = 4096) -> list[np.ndarray]:
    """Each worker's every 32-element block at its own scale, 2^-30 .. 2^30; block 3 all zero for all,
    block 5 zero at some workers only, block 7 near float32's extremes at one worker."""
    rng = np.random.default_rng(seed)
    out = []
    for w in range(len(HOSTS)):
        scales = np.ldexp(1.0, rng.integers(-30, 31, size=n // mx.BLOCK))
        x = (rng.standard_normal(n) * np.repeat(scales, mx.BLOCK)).astype(np.float32)
        x[3 * 32 : 4 * 32] = 0
        if w % 2:
            x[5 * 32 : 6 * 32] = 0
        if w == 1:
            x[7 * 32] = np.float32(3.0e38)
            x[7 * 32 + 1] = np.float32(1e-40)  # subnormal
        x[-7:] = 2.0  # a tail that is not a whole block
        out.append(x)
    return out


def check_mx(inputs: list[np.ndarray], results: list) -> None:
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    e = mx.agreed_scales(inputs)
    per_block = mx.error_bound(e, len(inputs))
    # plus the float32 result's own rounding: half an ulp, and half the smallest subnormal
    bound = np.repeat(per_block, mx.BLOCK)[: exact.size] + np.abs(exact) * 2.0**-24 + 2.0**-150
    for r in results:
        assert r.dtype == np.float32 and r.shape == inputs[0].shape
        np.testing.assert_array_equal(r, results[0])  # every worker holds the same bits
        err = np.abs(r.astype(np.float64) - exact)
        bad = np.flatnonzero(err > bound)
        assert bad.size == 0, (bad[:5], err[bad[:5]], bound[bad[:5]])


def test_mxint8_is_within_its_bound_on_every_element_with_mixed_scales(tmp_path: Path) -> None:
    inputs = mixed_scale_inputs(1)
    results = through_switches(tmp_path, inputs, "mxint8")
    check_mx(inputs, results)
    # the bound is tight where scales agree and loose where they differ: it is n units of the largest
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    assert np.all(results[0][3 * 32 : 4 * 32] == 0)
    assert np.max(np.abs(results[0] - exact)) > 0  # not exact: MXINT8 keeps 7 bits per element


def test_mxint8_carries_inf_and_nan_as_ieee_addition(tmp_path: Path) -> None:
    inputs = mixed_scale_inputs(2, n=1024)
    inputs[0][100] = np.inf
    inputs[2][100] = 1.0
    inputs[1][200] = np.inf
    inputs[3][200] = -np.inf
    inputs[4][300] = np.nan
    results = through_switches(tmp_path, inputs, "mxint8", slots=4, seed=4)
    r = results[0]
    assert r[100] == np.inf and np.isnan(r[200]) and np.isnan(r[300])
    finite = np.ones(r.size, dtype=bool)
    finite[[100, 200, 300]] = False
    clean = [np.where(finite, x, 0).astype(np.float32) for x in inputs]
    exact = np.sum([x.astype(np.float64) for x in clean], axis=0)
    e = mx.agreed_scales(clean)
    bound = np.repeat(mx.error_bound(e, 5), mx.BLOCK) + np.abs(exact) * 2.0**-24 + 2.0**-150
    assert np.all(np.abs(r[finite] - exact[finite]) <= bound[finite])


@pytest.mark.parametrize(("mode", "slots"), [("int8", 8), ("int4", 8), ("int4", 4), ("int8", 2)])
def test_narrow_sums_are_exact_whatever_the_packing(tmp_path: Path, mode: str, slots: int) -> None:
    """int4 with 4 slots travels packed as int8; int8 with 2 slots as int32 lanes: exact either way."""
    lim = 127 if mode == "int8" else 7
    rng = np.random.default_rng(slots)
    inputs = [rng.integers(-lim - 1, lim + 1, size=3000).astype(np.int8) for _ in HOSTS]
    inputs[0][:50] = -lim - 1
    results = through_switches(tmp_path, inputs, mode, slots=slots)
    want = np.sum([x.astype(np.int64) for x in inputs], axis=0)
    assert want.min() < -lim - 1
    for r in results:
        assert r.dtype == np.int32
        np.testing.assert_array_equal(r, want)
