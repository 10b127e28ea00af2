"""INC job planning: roots, trees, allocation limits and isolation between tenants."""

from pathlib import Path

import pytest

from controller.inc.allocation import (
    LAST_GROUP,
    REPAIR_GROUP_OFFSET,
    AllocationError,
    Allocator,
    repair_group,
)
from controller.inc.install import repair_group_of, repair_replicas
from controller.inc.jobs import plan_job
from controller.inc.trees import TreeError, plan_tree
from topo import addressing
from topo.wan import default_wan, load_topology


def test_root_minimises_the_slowest_path() -> None:
    fab = addressing.fabric(default_wan("TYO,NYC,LON"))
    tree = plan_tree(fab, ["TYOw1", "TYOw2", "NYCw1", "NYCw2", "LONw1", "LONw2"])
    # from NYC the farthest site is TYO at 162 ms; from TYO it is LON at 230, from LON TYO at 230
    assert tree.root == "NYC" and tree.max_rtt_ms == 162
    nyc = tree.node("NYC")
    assert nyc.is_root and nyc.fan_in == 4  # two local workers + TYO + LON
    tyo = tree.node("TYO")
    assert tyo.parent == "NYC" and tyo.fan_in == 2
    assert tyo.parent_port == fab.switch("TYO").neighbour_ports["NYC"]


def test_transit_switch_joins_the_tree(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(
        'sites = ["TYO", "NYC", "LON"]\nmesh = "none"\n[[link]]\na = "TYO"\nb = "NYC"\n[[link]]\na = "NYC"\nb = "LON"\n'
    )
    fab = addressing.fabric(load_topology(f))
    tree = plan_tree(fab, ["TYOw1", "LONw1"])
    assert tree.root == "NYC"
    assert tree.node("NYC").fan_in == 2 and all(c.is_switch for c in tree.node("NYC").children)


@pytest.mark.parametrize(
    ("workers", "message"),
    [([], "at least one worker"), (["TYOw1", "TYOw1"], "listed twice"), (["TYOw9"], "unknown host")],
)
def test_bad_worker_lists(workers: list[str], message: str) -> None:
    fab = addressing.fabric(default_wan("TYO,NYC"))
    with pytest.raises(TreeError, match=message):
        plan_tree(fab, workers)


def test_tenants_get_disjoint_cells_and_a_full_switch_refuses() -> None:
    fab = addressing.fabric(default_wan("TYO,NYC"))
    alloc = Allocator([s.name for s in fab.switches], cells_per_switch=1024)
    a = plan_job(fab, alloc, 1, [[["TYOw1", "NYCw1"]]], nslots=256)
    b = plan_job(fab, alloc, 2, [[["TYOw2", "NYCw2"]]], nslots=256)
    for sw in ("TYO", "NYC"):
        ra = next(s.cells for s in a.switches if s.switch == sw)
        rb = next(s.cells for s in b.switches if s.switch == sw)
        assert ra.base + ra.cells <= rb.base or rb.base + rb.cells <= ra.base
        assert next(s.group for s in a.switches if s.switch == sw) != next(
            s.group for s in b.switches if s.switch == sw
        )
    with pytest.raises(AllocationError, match="free INC cells"):
        plan_job(fab, alloc, 3, [[["TYOw1", "NYCw1"]]], nslots=256)
    # the refused job holds nothing: after releasing tenant 1, tenant 3 fits
    alloc.release((1, 0))
    plan_job(fab, alloc, 3, [[["TYOw1", "NYCw1"]]], nslots=256)


def test_worker_assignment_points_at_its_site_switch() -> None:
    fab = addressing.fabric(default_wan("TYO,NYC,LON"))
    alloc = Allocator([s.name for s in fab.switches])
    plan = plan_job(fab, alloc, 5, [[["TYOw1", "LONw1"]]], nslots=64)
    assert plan.workers["LONw1"].inc_ip == fab.switch("LON").inc_ip
    assert plan.workers["LONw1"].clique_size == {0: 2}
    # NYC hosts no worker but is the better root: 162 ms to TYO beats the 230 ms TYO-LON path
    assert {s.switch for s in plan.switches} == {"TYO", "NYC", "LON"}
    nyc = next(s for s in plan.switches if s.switch == "NYC")
    assert nyc.is_root and nyc.fan_in == 2


def test_repair_groups_send_twice_over_each_link_to_a_switch() -> None:
    """Aggregates completed by a repair or an urgent chunk leave through a twin group
    (controller/inc/install.py): at the root each child switch twice and each local worker once, at
    the others the parent twice."""
    fab = addressing.fabric(default_wan("TYO,NYC,LON"))
    alloc = Allocator([s.name for s in fab.switches])
    plan = plan_job(fab, alloc, 5, [[["TYOw1", "TYOw2", "NYCw1", "NYCw2", "LONw1"]]], nslots=64)
    root = next(s for s in plan.switches if s.is_root)
    nyc = fab.switch("NYC")
    assert root.switch == "NYC"
    twin = repair_replicas(root)
    assert twin is not None
    switches = {nyc.neighbour_ports["TYO"], nyc.neighbour_ports["LON"]}
    workers = {port for port, _, _ in root.worker_children}
    assert len(workers) == 2
    assert sorted(twin) == sorted([(p, 0) for p in switches | workers] + [(p, 1) for p in switches])
    assert repair_group_of(root) == repair_group(root.group) == root.group + REPAIR_GROUP_OFFSET
    for sr in plan.switches:
        if not sr.is_root:
            assert repair_replicas(sr) == [(sr.parent_port, 0), (sr.parent_port, 1)]
            assert sr.parent_port == fab.switch(sr.switch).neighbour_ports["NYC"]
            assert repair_group_of(sr) == repair_group(sr.group)
    # a root whose children are all its own workers needs no twin
    local = plan_job(fab, alloc, 6, [[["TYOw1", "TYOw2"]]], nslots=64)
    [only] = local.switches
    assert repair_replicas(only) is None and repair_group_of(only) == only.group


def test_granted_groups_stay_below_their_twins() -> None:
    alloc = Allocator(["A"])
    assert alloc.allocate(("job", 0), {"A": 0})["A"][1] == 1
    alloc.switches["A"].groups.update({("held", g): g for g in range(2, LAST_GROUP)})
    assert alloc.allocate(("job", 1), {"A": 0})["A"][1] == LAST_GROUP  # the last below the twins
    granted = set(alloc.switches["A"].groups.values())
    assert granted == set(range(1, LAST_GROUP + 1))
    assert {repair_group(g) for g in granted}.isdisjoint(granted)
    with pytest.raises(AllocationError, match="no free multicast group"):
        alloc.allocate(("job", 2), {"A": 0})
    with pytest.raises(ValueError, match="no repair twin"):
        repair_group(LAST_GROUP + 1)
