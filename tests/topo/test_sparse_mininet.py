"""Sparse vectors through the switches of the emulated 3-site WAN with 2 % loss (two workers per site):
exact sums; the density leaving each level of the tree, read from the switches' counters, is the union
of the supports below it (the root's is the whole union); the WAN carries a fraction of what the dense
path must carry at least; and a declared density that lets the union fill the vector goes dense."""

from __future__ import annotations

import pytest

from topo.allreduce_run import AllreduceSpec, run_inc

pytestmark = [pytest.mark.mininet, pytest.mark.root]
BLOCKS = 512
ELEMENTS = 64 * BLOCKS


def _log(msg: str) -> None:
    print(msg)


def _run(running, density: float):  # type: ignore[no-untyped-def]
    spec = AllreduceSpec(elements=ELEMENTS, mode="sparse", nslots=256)
    spec.density = density
    [res] = run_inc(running, spec, _log)
    assert res.errors == [] and res.exact and res.max_abs_error == 0.0, (res.errors, res.max_abs_error)
    assert len(set(res.digests)) == 1 and len(res.digests) == 6
    return res


def test_sparse_is_exact_and_the_wan_carries_the_union_only(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    from edge.protocol import FRAME_LEN

    res = _run(wan3_lossy, 0.02)
    sparse, fill = res.extra["sparse"], res.extra["fill_in"]
    assert sparse["path"] == "sparse"
    union = sparse["union_density"]
    own = sparse["own_density"]
    assert len(own) == 6 and max(own) <= union <= sum(own)
    levels = fill["density_by_level"]
    assert levels["0"] == pytest.approx(union, abs=1e-6)  # the root sends the whole union down
    for name, sw in fill["switches"].items():
        if sw["level"] > 0:  # a site's union: at least its workers', at most everyone's
            assert min(own) <= sw["density"] <= union, (name, sw, own)
    # the dense path sends every chunk at least once over each of the tree's four WAN link directions
    dense_at_least = 4 * BLOCKS * FRAME_LEN
    assert res.extra["bytes"]["wan"] < 0.25 * dense_at_least, (res.extra["bytes"], dense_at_least)


def test_a_density_that_may_fill_the_vector_goes_dense(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    res = _run(wan3_lossy, 0.5)
    assert res.extra["sparse"]["path"] == "dense"
    assert res.extra["fill_in"]["density_by_level"]["0"] == 1.0  # every block went, with values
