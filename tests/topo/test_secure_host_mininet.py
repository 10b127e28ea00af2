"""`--secure` on the host path, on the emulated 3-site WAN (2 % loss): a fifth tenant that admission sends to
the hierarchical host allreduce when four fill the switches masks as the four INC tenants do, and so do the
host baselines of a secure run; every result is exact (float32: within the INC formats' fixed-point bound)
and the report says of each tenant and baseline that it was masked."""

from __future__ import annotations

import pytest

from topo import bounds
from topo.allreduce_run import AllreduceSpec, run_baseline, run_inc, worker_hosts

pytestmark = [pytest.mark.mininet, pytest.mark.root]
BOUND_OF = {"hierarchical": bounds.hierarchical_bound_s, "ring": bounds.ring_bound_s, "ps": bounds.ps_bound_s}


def test_five_secure_tenants_the_fifth_on_the_host_path_all_exact(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    # one slot per chunk (1,024 for 65,536 values): four tenants fill every switch's 4,096 slots
    spec = AllreduceSpec(elements=65536, mode="int32", tenants=5, secure=True)
    results = run_inc(wan3_lossy, spec, print)
    assert [(r.name, r.extra["path"]) for r in results] == [
        *((f"inc-t{t}", "switch") for t in range(1, 5)),
        ("host-t5", "host"),
    ]
    for r in results:
        assert r.errors == [] and r.exact and r.max_abs_error == 0.0, (r.name, r.errors)
        assert len(r.digests) == 6 and len(set(r.digests)) == 1
        assert r.extra["masked"] is True
        assert 0 < r.stats["max_key_exchange_s"] < 60  # every worker agreed keys, the host path's too


@pytest.mark.parametrize("mode", ["int32", "float32"])
def test_the_host_baselines_of_a_secure_run_are_masked_and_exact(wan3_lossy, mode: str) -> None:  # type: ignore[no-untyped-def]
    spec = AllreduceSpec(elements=8192, mode=mode, secure=True)
    hosts = worker_hosts(wan3_lossy)
    for algo in ("hierarchical", "ring", "ps"):
        res = run_baseline(wan3_lossy, spec, algo, print)
        assert res.errors == [] and res.exact, (algo, res.errors)
        assert res.extra["masked"] is True
        assert 0 < res.stats["max_key_exchange_s"] < 60
        assert len(set(res.digests)) == 1
        plain_bound = BOUND_OF[algo](wan3_lossy.network.wan, wan3_lossy.network.fabric, hosts, 4 * 8192)
        if mode == "float32":  # the INC formats' block fixed point, judged by its stated bound
            assert 0 < res.max_abs_error <= res.bound
            # the time bound counts the exponent agreement, one more allreduce with its own latency
            assert res.bound_s > plain_bound + 0.1
        else:
            assert res.bound_s == plain_bound
