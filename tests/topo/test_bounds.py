"""The lower bounds on a small WAN worked out by hand: three sites in a triangle, 100 ms RTT and
8 Mbit/s (1 MB/s) on every link, one worker per site."""

from __future__ import annotations

import pytest

from controller.inc.trees import plan_tree
from edge.protocol import FRAME_LEN
from topo import addressing, bounds
from topo.wan import Link, Site, Wan


@pytest.fixture
def triangle() -> tuple[Wan, object]:
    wan = Wan(
        [Site("A"), Site("B"), Site("C")],
        [Link("A", "B", 100, 8), Link("B", "C", 100, 8), Link("A", "C", 100, 8)],
        1,
    )
    return wan, addressing.fabric(wan)


def test_inc_bound_is_the_busiest_tree_link_plus_the_slowest_round_trip(triangle) -> None:  # type: ignore[no-untyped-def]
    wan, fabric = triangle
    hosts = [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"]
    tree = plan_tree(fabric, hosts)
    assert tree.max_rtt_ms == 100
    # 640 elements: 10 chunks, each once over each tree link in each direction at 1 MB/s
    assert bounds.inc_bound_s(wan, [tree], 640, "int32") == pytest.approx(10 * FRAME_LEN / 1e6 + 0.1)
    # two tenants on the same tree: twice the frames, one latency term
    assert bounds.inc_bound_s(wan, [tree, tree], 640, "int32", 2) == pytest.approx(20 * FRAME_LEN / 1e6 + 0.1)
    # float32: the agreement (1 packet for 10 blocks' exponents and flags) and a second round trip
    assert bounds.inc_bound_s(wan, [tree], 640, "float32") == pytest.approx(11 * FRAME_LEN / 1e6 + 0.2)


def test_ring_and_parameter_server_bounds(triangle) -> None:  # type: ignore[no-untyped-def]
    wan, fabric = triangle
    hosts = [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"]
    # ring: 4 steps, each 50 ms one way plus 1,000 bytes per link at 1 MB/s
    assert bounds.ring_bound_s(wan, fabric, hosts, 3000) == pytest.approx(4 * (0.05 + 0.001))
    # parameter server at A: push 3,000 bytes over B->A and C->A at once, then pull; 50 ms each way
    assert bounds.ps_bound_s(wan, fabric, hosts, 3000) == pytest.approx(0.1 + 0.003 + 0.003)
    # hierarchical: two one-step phases, 1,000 bytes on every directed link each, 50 ms each
    assert bounds.hierarchical_bound_s(wan, fabric, hosts, 3000) == pytest.approx(2 * (0.05 + 0.001))
