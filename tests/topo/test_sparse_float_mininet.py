"""Sparse float32 through the switches of the emulated 3-site WAN with 2 % loss (two workers per site):
every element of every worker within its bound against a float64 sum (blocks at scales 2^-20 .. 2^20),
all workers the same bits, the union's blocks only on the WAN, fill-in read from the switches' counters,
and a declared density that lets the union fill the vector runs the float32 mode."""

from __future__ import annotations

import pytest

from topo.allreduce_run import AllreduceSpec, run_inc

pytestmark = [pytest.mark.mininet, pytest.mark.root]
BLOCKS = 512
ELEMENTS = 64 * BLOCKS


def _run(running, density: float):  # type: ignore[no-untyped-def]
    spec = AllreduceSpec(elements=ELEMENTS, mode="sparse-float32", nslots=256)
    spec.density = density
    [res] = run_inc(running, spec, print)
    assert res.errors == [] and res.exact, (res.errors, res.max_abs_error, res.bound)
    assert 0.0 < res.max_abs_error <= res.bound  # block fixed point: not exact, within the bound
    assert len(set(res.digests)) == 1 and len(res.digests) == 6
    return res


def test_sparse_float32_is_within_its_bound_and_the_wan_carries_the_union_only(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    res = _run(wan3_lossy, 0.02)
    sparse, fill = res.extra["sparse"], res.extra["fill_in"]
    assert sparse["path"] == "sparse"
    union, own = sparse["union_density"], sparse["own_density"]
    assert len(own) == 6 and max(own) <= union <= sum(own)
    assert fill["density_by_level"]["0"] == pytest.approx(union, abs=1e-6)  # the whole union goes down
    for name, sw in fill["switches"].items():
        if sw["level"] > 0:
            assert min(own) <= sw["density"] <= union, (name, sw, own)
    assert res.extra["bytes"]["wan"] < 0.25 * res.extra["dense_wan_floor_bytes"], res.extra["bytes"]


def test_a_density_that_may_fill_the_vector_runs_dense_float32(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    res = _run(wan3_lossy, 0.5)
    assert res.extra["sparse"]["path"] == "dense"
    assert res.extra["fill_in"]["density_by_level"]["0"] == 1.0  # every block, with values
