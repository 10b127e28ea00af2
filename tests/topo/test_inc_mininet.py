"""Core-INC on the emulated WAN: a two-level tree over three sites with 2 % loss on every WAN link
(root switch plus one switch per site), two tenants at once, and a dead worker."""

from __future__ import annotations

import pytest

from topo.allreduce_run import AllreduceSpec, run_inc

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def _log(msg: str) -> None:
    print(msg)


def test_int32_allreduce_is_bit_exact_under_loss(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    [res] = run_inc(wan3_lossy, AllreduceSpec(elements=16384, mode="int32", nslots=256), _log)
    assert res.errors == []
    assert res.exact and res.max_abs_error == 0.0
    assert res.stats["results"] == 6 * 256  # every worker got every chunk once
    assert res.stats["retransmissions"] > 0  # 2 % loss on every link: the repair path was exercised


def test_float32_allreduce_within_quantisation_bound_under_loss(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    [res] = run_inc(wan3_lossy, AllreduceSpec(elements=8192, mode="float32", nslots=256), _log)
    assert res.errors == []
    assert res.exact, f"max error {res.max_abs_error} above the bound {res.bound}"
    assert 0 < res.bound < 1e-5  # normal(0, 1) inputs of 6 workers: the bound is tight


def test_two_tenants_share_the_switches(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    results = run_inc(wan3_lossy, AllreduceSpec(elements=8192, mode="int32", tenants=2, nslots=256), _log)
    assert [r.name for r in results] == ["inc-t1", "inc-t2"]
    for r in results:
        assert r.errors == [] and r.exact


def test_a_dead_worker_makes_the_others_fail_with_a_timeout(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    spec = AllreduceSpec(elements=4096, mode="int32", nslots=64, stall_timeout_s=4.0)
    [res] = run_inc(wan3_lossy, spec, _log, dead_workers=("LONw2",))
    assert not res.exact
    rank_of_dead = 5  # hosts in site order: TYOw1, TYOw2, NYCw1, NYCw2, LONw1, LONw2
    others = [e for e in res.errors if not e.startswith(f"rank {rank_of_dead}:")]
    assert len(others) == 5, res.errors
    assert all("IncTimeoutError" in e and "may be dead" in e for e in others), others
