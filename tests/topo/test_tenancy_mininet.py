"""Tenants admitted one after another on the emulated 3-site WAN (2 % loss), as `tributary allreduce
--tenants` admits them: the first ones get the slots they ask for, the next fewer, and once the switches
are full the rest run the hierarchical host allreduce on the same workers at the same time; every
tenant's result is exact and nothing stays on the switches afterwards."""

from __future__ import annotations

import pytest

from controller.p4rt import P4InfoIndex
from topo.allreduce_run import AllreduceSpec, run_inc

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def test_a_fifth_tenant_on_full_switches_runs_on_the_host_path(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    # 1536 slots (3072 of a switch's 8192 cells) each: two fit, the third gets 768 (the 2048 cells
    # left), the fourth and fifth find 512 cells, below their minimum of 384 slots: the host path
    spec = AllreduceSpec(elements=4096, mode="int32", tenants=5, nslots=1536)
    results = run_inc(wan3_lossy, spec, print)
    paths = [(r.name, r.extra["path"], r.extra["granted_slots"]) for r in results]
    assert paths == [
        ("inc-t1", "switch", 1536),
        ("inc-t2", "switch", 1536),
        ("inc-t3", "switch", 768),
        ("host-t4", "host", 0),
        ("host-t5", "host", 0),
    ]
    assert "768 of the 1536 slots" in str(results[2].extra["admission"])
    assert "not even the minimum of 384 slots" in str(results[4].extra["admission"])
    for r in results:
        assert r.errors == [] and r.exact and r.max_abs_error == 0.0, (r.name, r.errors)
        assert len(r.digests) == 6 and len(set(r.digests)) == 1  # every worker holds the same sum
    # both host-path tenants ran at the same time as the switch tenants (overlapping spans)
    assert all(r.seconds > 0 for r in results)
    index = P4InfoIndex(wan3_lossy.pipeline.p4info)
    for name, conn in wan3_lossy.conns.items():  # every tenant's entries were removed
        assert list(conn.read([index.table_entry("inc_tenants")])) == [], name
