"""Edge-INC planning: per-source distribution trees over the fabric and the groups each switch holds."""

from __future__ import annotations

import pytest

from controller.edge.plan import EDGE_FIRST_GROUP, EdgePlanError, GroupPool, plan_edge_job, tree_children
from topo import addressing
from topo.wan import Link, Wan, default_wan

GRID = [
    [("TYO", "LAX", "LON"), ("HKG", "NYC", "FRA"), ("SIN", "CHI", "AMS")],
    [("TYO", "HKG", "SIN"), ("NYC", "CHI", "LAX"), ("LON", "FRA", "AMS")],
]


def test_full_mesh_trees_are_stars_of_direct_links_and_each_link_carries_each_stream_once():
    fabric = addressing.fabric(default_wan())
    plan = plan_edge_job(fabric, 5, 99, GRID)
    # 2 rounds x 9 sources; each tree: the source's switch (2 WAN ports) + 2 receivers (edge port)
    assert len(plan.groups) == 2 * 9 * 3
    for g in plan.groups:
        sw = fabric.switch(g.switch)
        edge_port = next(h.port for h in sw.hosts if h.role == "edge")
        if g.switch == g.source:
            assert len(g.ports) == 2 and edge_port not in g.ports  # never back to the sender
            assert set(g.ports) == {sw.neighbour_ports[n] for n in g.next_switches}
        else:
            assert g.ports == (edge_port,) and g.next_switches == ()
    streams = plan.link_streams()
    # every directed link inside a clique carries exactly that clique's one source stream per round
    assert all(len(v) == len(set(v)) == 1 for v in streams.values())
    assert len(streams) == 2 * 3 * 6  # 2 rounds x 3 cliques x 3 sources x 2 receivers
    assert plan.site_ids["TYO"] == 1 and plan.site_ids["AMS"] == 9
    assert {r.switch for r in plan.rewrites} == set(plan.site_ids)


def test_a_sparse_topology_replicates_at_the_transit_switch():
    """A chain TYO - LAX - NYC - LON: TYO's stream to {NYC, LON} crosses LAX (no member) once."""
    base = default_wan(["TYO", "LAX", "NYC", "LON"])
    wan = Wan(
        base.sites,
        [Link("TYO", "LAX", 107), Link("LAX", "NYC", 69), Link("NYC", "LON", 78)],
        base.workers_per_site,
    )
    fabric = addressing.fabric(wan)
    assert tree_children(fabric, "TYO", ["NYC", "LON"]) == {
        "TYO": {"LAX"},
        "LAX": {"NYC"},
        "NYC": {"LON"},
        "LON": set(),
    }
    plan = plan_edge_job(fabric, 1, 1, [[("TYO", "NYC", "LON")]])
    tyo = [g for g in plan.groups if g.source == "TYO"]
    by_switch = {g.switch: g for g in tyo}
    nyc = fabric.switch("NYC")
    nyc_edge = next(h.port for h in nyc.hosts if h.role == "edge")
    assert by_switch["LAX"].next_switches == ("NYC",)
    assert set(by_switch["NYC"].ports) == {nyc.neighbour_ports["LON"], nyc_edge}  # copy here and onward
    # NYC -> LON carries the streams of TYO and NYC (each once); LON -> NYC those of LON only
    streams = plan.link_streams()
    assert sorted(streams[("NYC", "LON")]) == [(1, "NYC"), (1, "TYO")]
    assert streams[("LON", "NYC")] == [(1, "LON")]


def test_group_ids_are_edge_range_and_freed_on_failure():
    fabric = addressing.fabric(default_wan(["TYO", "NYC", "LON"]))
    pool = GroupPool()
    plan = plan_edge_job(fabric, 1, 1, [[("TYO", "NYC", "LON")]], pool)
    assert min(g.group for g in plan.groups) >= EDGE_FIRST_GROUP
    assert sum(len(v) for v in pool.used.values()) == len(plan.groups)
    with pytest.raises(EdgePlanError, match="two cliques"):
        plan_edge_job(fabric, 2, 1, [[("TYO", "NYC"), ("NYC", "LON")]], pool)
    assert sum(len(v) for v in pool.used.values()) == len(plan.groups)  # the failed plan left nothing
    pool.release(plan)
    assert sum(len(v) for v in pool.used.values()) == 0


def test_bad_schedules_are_refused_with_the_reason():
    fabric = addressing.fabric(default_wan(["TYO", "NYC", "LON"]))
    with pytest.raises(EdgePlanError, match="unknown site 'PAR'"):
        plan_edge_job(fabric, 1, 1, [[("TYO", "PAR")]])
    with pytest.raises(EdgePlanError, match="tenant"):
        plan_edge_job(fabric, 0, 1, [[("TYO", "NYC")]])
    with pytest.raises(EdgePlanError, match="rounds"):
        plan_edge_job(fabric, 1, 1, [])
    fabric.switch("LON").hosts = [h for h in fabric.switch("LON").hosts if h.role != "edge"]
    with pytest.raises(EdgePlanError, match="LON needs exactly one edge host"):
        plan_edge_job(fabric, 1, 1, [[("TYO", "LON")]])


def test_only_schedules_whose_sums_fit_are_run():
    from controller.edge.plan import runnable

    assert runnable(GRID) is None  # every site counted once: 9 contributions
    pairs = [[("TYO", "NYC")], [("NYC", "LON")], [("TYO", "LON")]] * 8  # sums double: 2^k contributions
    why = runnable(pairs)
    assert why is not None and "at most 128 fit int32" in why
