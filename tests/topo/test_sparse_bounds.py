"""The sparse modes' lower bounds on a small WAN worked out by hand (three sites in a triangle, 100 ms RTT
and 1 MB/s on every link, one worker per site): the agreement, for float32 the union's exponent call, then
the union's blocks, each phase its packets over the busiest tree link plus one round trip."""

from __future__ import annotations

import pytest

from controller.inc.trees import plan_tree
from edge.protocol import FRAME_LEN
from topo import addressing, bounds
from topo.wan import Link, Site, Wan


def test_sparse_bounds_count_each_phase_once() -> None:
    wan = Wan(
        [Site("A"), Site("B"), Site("C")],
        [Link("A", "B", 100, 8), Link("B", "C", 100, 8), Link("A", "C", 100, 8)],
        1,
    )
    fabric = addressing.fabric(wan)
    tree = plan_tree(fabric, [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"])
    blocks = 2000  # 3 workers: 2-bit fields, 1024 blocks to an agreement packet, so 2 packets
    per = FRAME_LEN / 1e6
    # int32: agreement (2 packets) + 40 union blocks, two round trips
    assert bounds.inc_bound_s(wan, [tree], 64 * blocks, "sparse", union_blocks=40) == pytest.approx(
        42 * per + 0.2
    )
    # float32: and the union's 80 exponent lanes and flags in 2 packets, a third round trip
    assert bounds.inc_bound_s(wan, [tree], 64 * blocks, "sparse-float32", union_blocks=40) == pytest.approx(
        44 * per + 0.3
    )
    # an empty union: the agreement alone
    assert bounds.inc_bound_s(wan, [tree], 64 * blocks, "sparse-float32", union_blocks=0) == pytest.approx(
        2 * per + 0.1
    )


def test_fill_in_takes_off_the_agreement_and_float32_s_exponent_call() -> None:
    from topo import sparse_report

    wan = Wan([Site("A"), Site("B"), Site("C")], [Link("A", "B", 100, 8), Link("B", "C", 100, 8)], 1)
    fabric = addressing.fabric(wan)
    tree = plan_tree(fabric, [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"])
    assert sparse_report.exponent_chunks("sparse", "sparse", 2000, 70) == 0
    assert sparse_report.exponent_chunks("sparse-float32", "sparse", 2000, 70) == 3  # 140 lanes
    assert sparse_report.exponent_chunks("sparse-float32", "dense", 2000, None) == 63  # 4000 lanes
    before = {s: {"completed": 5, "empty_out": 1} for s in tree.nodes}
    # the root completed 2 agreement + 3 exponent + 70 data chunks; a leaf's 30 of the 70 left empty
    after = {
        s: {"completed": 5 + 75, "empty_out": 1 + (30 if tree.nodes[s].parent else 0)} for s in tree.nodes
    }
    got = sparse_report.fill_in(tree, before, after, 2000, "sparse", other_chunks=3)
    for s, v in got["switches"].items():
        assert v["completed"] == 70
        assert v["density"] == (40 / 2000 if tree.nodes[s].parent else 70 / 2000)
    assert got["density_by_level"]["0"] == 70 / 2000
    links = sum(n.parent is not None for n in tree.nodes.values())
    floor = sparse_report.dense_wan_floor(tree, 2000, "sparse-float32")
    assert floor == 2 * links * (2000 + 63) * FRAME_LEN
