"""Admission on shared switches: a job that does not get the cells it asks for gets fewer slots (down to
its minimum), and one that cannot get even those is refused with nothing allocated."""

import pytest

from controller.inc.allocation import AllocationError, Allocator
from controller.inc.jobs import plan_job_with_fewer_slots
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
