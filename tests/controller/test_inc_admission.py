"""Admission on shared switches: a job that does not get the cells it asks for gets fewer slots (down to
its minimum), and one that cannot get even those is refused with nothing allocated."""

import pytest

from controller.inc.allocation import AllocationError, Allocator
from controller.inc.jobs import admit, default_min_slots, host_port_base, plan_job, plan_job_with_fewer_slots
from controller.inc.trees import TreeError
from topo import addressing
from topo.wan import default_wan

HOSTS = ["TYOw1", "TYOw2", "NYCw1", "NYCw2", "LONw1", "LONw2"]


def test_a_fifth_tenant_on_full_switches_gets_fewer_slots_then_is_refused() -> None:
    fab = addressing.fabric(default_wan("TYO,NYC,LON"))
    alloc = Allocator([s.name for s in fab.switches], cells_per_switch=1000)
    # four tenants of 100 slots (200 cells each) leave 200 cells on every switch
    for t in range(1, 5):
        assert plan_job_with_fewer_slots(fab, alloc, t, [[HOSTS]], 100).nslots == 100
    fifth = plan_job_with_fewer_slots(fab, alloc, 5, [[HOSTS]], 512, min_slots=8)
    assert fifth.nslots == 64  # 512 -> 256 -> 128 -> 64 slots: 128 of the 200 cells left
    assert all(sr.cells.cells == 128 for sr in fifth.switches)
    sixth = plan_job_with_fewer_slots(fab, alloc, 6, [[HOSTS]], 64, min_slots=8)
    assert sixth.nslots == 32  # 64 cells of the 72 left
    with pytest.raises(AllocationError):  # 8 cells left on each switch: not even 8 slots (16 cells)
        plan_job_with_fewer_slots(fab, alloc, 7, [[HOSTS]], 64, min_slots=8)
    assert all(res.free_cells() == 8 for res in alloc.switches.values())  # the refusal left nothing
    # once tenant 1 leaves, a new job gets what it asks for again
    alloc.release((1, 0))
    assert plan_job_with_fewer_slots(fab, alloc, 7, [[HOSTS]], 100, min_slots=8).nslots == 100


def test_minimum_slots_must_be_sensible() -> None:
    fab = addressing.fabric(default_wan("TYO,NYC,LON"))
    with pytest.raises(TreeError, match="min_slots"):
        plan_job_with_fewer_slots(fab, Allocator(["TYO", "NYC", "LON"]), 1, [[HOSTS]], 8, min_slots=9)


def test_admit_gives_the_host_path_with_nothing_allocated_or_refuses() -> None:
    fab = addressing.fabric(default_wan("TYO,NYC,LON"))
    alloc = Allocator([s.name for s in fab.switches], cells_per_switch=512)

    def plan(t: int):  # type: ignore[no-untyped-def]
        return lambda slots: plan_job(fab, alloc, t, [[HOSTS]], slots)

    for t in range(1, 5):  # four tenants of 64 slots fill the 512 cells
        adm = admit(plan(t), 64)
        assert (adm.path, adm.granted_slots, adm.reason, adm.plan is not None) == ("switch", 64, "", True)
    fifth = admit(plan(5), 64)
    assert fifth.path == "host" and fifth.plan is None and fifth.granted_slots == 0
    assert fifth.requested_slots == 64 and fifth.min_slots == 16 and "16 slots" in fifth.reason
    assert all(res.free_cells() == 0 and len(res.used) == 4 for res in alloc.switches.values())
    with pytest.raises(AllocationError):
        admit(plan(6), 64, fallback="none")
    with pytest.raises(TreeError, match="fallback"):
        admit(plan(6), 64, fallback="ring")
    alloc.release((1, 0))  # one leaves: 128 cells, so a job asking for 256 slots gets 64
    sixth = admit(plan(6), 256)
    assert sixth.path == "switch" and sixth.granted_slots == 64 and "64 of the 256" in sixth.reason
    assert sixth.plan is not None and sixth.plan.nslots == 64


def test_defaults_and_host_ports() -> None:
    assert [default_min_slots(n) for n in (1, 4, 31, 64, 1024, 4096)] == [1, 1, 7, 16, 256, 1024]
    assert host_port_base([], 6) == 20000
    assert host_port_base([(20000, 6), (20010, 4)], 4) == 20006  # the gap between them fits 4
    assert host_port_base([(20000, 6), (20010, 4)], 5) == 20014
    with pytest.raises(AllocationError, match="TCP ports"):
        host_port_base([(20000, 12768)], 1)
