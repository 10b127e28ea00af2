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
