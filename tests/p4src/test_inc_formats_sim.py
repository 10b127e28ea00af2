"""Whole allreduces (edge.formats.allreduce_with: every phase of a number format) through real p4kit
switches in the simulated network (tests/p4src/inc_sim.py), with loss, duplication and reordering:
mxint8 against a float64 sum on every element, with blocks whose scales differ from worker to worker,
all-zero blocks, tiny and huge blocks, inf and NaN; int8 and int4 sums that overflow the narrow types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge import formats, mx
from edge.protocol import FMT_INT32, FMT_WIDE32
from tests.p4src.inc_sim import LinkModel, SimNetwork, chain_fabric

SITES = {"S1": 2, "S2": 1, "S3": 0, "S4": 2}
HOSTS = ["S1h1", "S1h2", "S2h1", "S4h1", "S4h2"]


def through_switches(
    tmp_path: Path,
    inputs: list[np.ndarray],
    mode: str,
    slots: int = 8,
    seed: int = 3,
    values_per_packet: int = 64,
    formats_seen: set[int] | None = None,
) -> list:
    """Every worker's allreduce_with through the switches; `formats_seen` collects the formats the
    workers' calls sent."""
    fabric = chain_fabric(SITES)
    net = SimNetwork(fabric, LinkModel(loss=0.1, duplicate=0.1, jitter_s=0.05), seed)
    net.start_switches()
    seen = formats_seen if formats_seen is not None else set()

    def recorded(reduce):  # type: ignore[no-untyped-def]
        def call(lanes: np.ndarray, kind: int, fmt: int = FMT_INT32) -> np.ndarray:
            seen.add(fmt)
            return reduce(lanes, kind, fmt)

        return call

    try:
        [plan] = net.install(tmp_path, [(1, HOSTS, slots)])
        workers = net.lockstep_workers(plan, HOSTS)
        groups = max(g for g in (8, 4, 1) if slots % g == 0)
        return net.lockstep(
            workers,
            lambda rank, reduce: formats.allreduce_with(
                recorded(reduce),
                inputs[rank],
                mode,
                len(HOSTS),
                max_groups=groups,
                values_per_packet=values_per_packet,
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


@pytest.mark.parametrize(("slots", "fmt"), [(8, FMT_WIDE32), (4, FMT_WIDE32), (2, FMT_INT32)])
def test_int32_sums_in_wide_packets_are_exact_under_loss(tmp_path: Path, slots: int, fmt: int) -> None:
    """256 values to a packet: four chunks' lanes in one wide32 packet from the worker on, through loss,
    duplication and reordering, exact (wrap-around included) for a length that is no whole number of
    packets; with 2 slots the four chunks cannot share a packet and the sums travel 64 to a packet."""
    rng = np.random.default_rng(slots)
    inputs = [rng.integers(-(2**31), 2**31, size=5000, dtype=np.int64).astype(np.int32) for _ in HOSTS]
    seen: set[int] = set()
    results = through_switches(tmp_path, inputs, "int32", slots, values_per_packet=256, formats_seen=seen)
    want = np.sum([x.astype(np.int64) for x in inputs], axis=0).astype(np.uint64).astype(np.uint32)
    assert seen == {fmt}
    for r in results:
        assert r.dtype == np.int32 and r.shape == (5000,)
        np.testing.assert_array_equal(r.view(np.uint32), want)


def test_float32_sums_in_wide_packets_are_the_same_bits_as_in_narrow_ones(tmp_path: Path) -> None:
    """float32: the exponent agreement (a max) travels 64 to a packet, the fixed-point sums 256. Those sums
    are exact mod 2^32 either way, so the result is bit for bit the one of 64-value packets (whose bound
    the float32 tests check), inf and NaN included."""
    rng = np.random.default_rng(7)
    inputs = [(rng.standard_normal(3000) * 10.0 ** rng.integers(-3, 4)).astype(np.float32) for _ in HOSTS]
    inputs[1][10] = np.inf
    inputs[3][20] = np.nan
    seen: set[int] = set()
    wide = through_switches(tmp_path / "wide", inputs, "float32", 8, values_per_packet=256, formats_seen=seen)
    assert seen == {FMT_INT32, FMT_WIDE32}  # the agreement, then the sums
    narrow = through_switches(tmp_path / "narrow", inputs, "float32", 8, seed=4)
    assert wide[0][10] == np.inf and np.isnan(wide[0][20])
    for r in wide:
        np.testing.assert_array_equal(r.view(np.uint32), narrow[0].view(np.uint32))
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    finite = np.isfinite(exact)
    np.testing.assert_allclose(wide[0][finite], exact[finite], rtol=1e-5, atol=1e-3)
