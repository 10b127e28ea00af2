"""The lower bounds on a small WAN worked out by hand: three sites in a triangle, 100 ms RTT and
8 Mbit/s (1 MB/s) on every link, one worker per site."""

from __future__ import annotations

import pytest

from controller.inc.trees import plan_tree
from edge.protocol import FRAME_LEN, WIDE_FRAME_LEN
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


def test_wide_packets_bound_int32_and_float32_sums_by_their_own_frames(triangle) -> None:  # type: ignore[no-untyped-def]
    """256 values to a packet: 10 chunks go as 3 wide frames (the last one padded), not 10 narrow ones;
    float32's agreement stays narrow; other modes are not wide whatever is asked."""
    wan, fabric = triangle
    hosts = [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"]
    tree = plan_tree(fabric, hosts)
    wide = bounds.inc_bound_s(wan, [tree], 640, "int32", values_per_packet=256)
    assert wide == pytest.approx(3 * WIDE_FRAME_LEN / 1e6 + 0.1)
    # the padding of the last frame costs more than the headers saved on 10 chunks; on 12 it does not
    assert wide > bounds.inc_bound_s(wan, [tree], 640, "int32")
    twelve = bounds.inc_bound_s(wan, [tree], 768, "int32", values_per_packet=256)
    assert twelve == pytest.approx(3 * WIDE_FRAME_LEN / 1e6 + 0.1)
    assert twelve < bounds.inc_bound_s(wan, [tree], 768, "int32")
    assert bounds.inc_bound_s(wan, [tree], 640, "float32", values_per_packet=256) == pytest.approx(
        (FRAME_LEN + 3 * WIDE_FRAME_LEN) / 1e6 + 0.2
    )
    assert bounds.inc_bound_s(wan, [tree], 640, "sparse", values_per_packet=256) == bounds.inc_bound_s(
        wan, [tree], 640, "sparse"
    )


def test_ring_and_parameter_server_bounds(triangle) -> None:  # type: ignore[no-untyped-def]
    wan, fabric = triangle
    hosts = [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"]
    # ring: 4 steps, each 50 ms one way plus 1,000 bytes per link at 1 MB/s
    assert bounds.ring_bound_s(wan, fabric, hosts, 3000) == pytest.approx(4 * (0.05 + 0.001))
    # parameter server at A: push 3,000 bytes over B->A and C->A at once, then pull; 50 ms each way
    assert bounds.ps_bound_s(wan, fabric, hosts, 3000) == pytest.approx(0.1 + 0.003 + 0.003)
    # hierarchical: two one-step phases, 1,000 bytes on every directed link each, 50 ms each
    assert bounds.hierarchical_bound_s(wan, fabric, hosts, 3000) == pytest.approx(2 * (0.05 + 0.001))


def _access_triangle(workers: int) -> tuple[Wan, object, list[str]]:
    """The same triangle behind access links of 4 Mbit/s (0.5 MB/s) each way, no delay of their own."""
    wan = Wan(
        [Site("A"), Site("B"), Site("C")],
        [Link("A", "B", 100, 8), Link("B", "C", 100, 8), Link("A", "C", 100, 8)],
        workers,
        access_rate_mbit=4,
    )
    fabric = addressing.fabric(wan)
    return wan, fabric, [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"]


def test_behind_access_links_a_tree_moves_v_and_host_algorithms_2_n_minus_1_over_n() -> None:
    wan, fabric, hosts = _access_triangle(1)
    tree = plan_tree(fabric, hosts)
    # INC: each worker's access link carries every frame once each way at 0.5 MB/s (slower than the WAN)
    assert bounds.inc_bound_s(wan, [tree], 640, "int32") == pytest.approx(10 * FRAME_LEN / 0.5e6 + 0.1)
    # ring: each step puts V/3 = 1,000 bytes on every worker's access link up and down (2 ms)
    assert bounds.ring_bound_s(wan, fabric, hosts, 3000) == pytest.approx(4 * (0.05 + 0.002))
    # hierarchical, one worker per site: a leader sends its two other parts up its access link (4 ms)
    assert bounds.hierarchical_bound_s(wan, fabric, hosts, 3000) == pytest.approx(2 * (0.05 + 0.004))
    # parameter server: the server's access link carries both pushes (12 ms) and both pulls (12 ms)
    assert bounds.ps_bound_s(wan, fabric, hosts, 3000) == pytest.approx(0.1 + 0.012 + 0.012)
    # the bandwidth terms: a host reduce-scatter/allgather 2(n-1)V/n through the access link, a tree V
    host_bw = bounds.hierarchical_bound_s(wan, fabric, hosts, 3000) - 2 * 0.05
    assert host_bw == pytest.approx(8.0 * 2 * (3 - 1) * 3000 / 3 / 4e6)
    assert bounds.best_host_bound_s(wan, fabric, hosts, 3000) == ("hierarchical", pytest.approx(0.108))


def test_behind_access_links_a_site_reduces_through_its_leaders_link() -> None:
    wan, fabric, hosts = _access_triangle(2)
    # the member's 3,000 bytes up its link and down the leader's (6 ms), the result back (6 ms), then
    # the leaders' exchange as with one worker per site
    local = 2 * 3000 / 0.5e6
    assert bounds.hierarchical_bound_s(wan, fabric, hosts, 3000) == pytest.approx(local + 2 * (0.05 + 0.004))
    # the full-mesh model on the same triangle: the local phases are free, the leaders' links are not
    mesh = Wan(wan.sites, wan.links, 2)
    mesh_fabric = addressing.fabric(mesh)
    assert bounds.hierarchical_bound_s(mesh, mesh_fabric, hosts, 3000) == pytest.approx(2 * (0.05 + 0.001))


def test_the_traffic_bound_of_measured_bytes(triangle) -> None:  # type: ignore[no-untyped-def]
    wan, fabric = triangle
    hosts = [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"]
    # A sends 2,000 bytes to B and 1,000 to C, C sends 3,000 to A: the busiest link (C->A) 3 ms, 50 ms
    sent = [[0, 2000, 1000], [0, 0, 0], [3000, 0, 0]]
    assert bounds.traffic_bound_s(wan, fabric, hosts, sent) == pytest.approx(0.05 + 0.003)


def test_a_ring_bound_follows_the_chain_of_consecutive_edges() -> None:
    # A-B and B-C 100 ms, C-A 150 ms: one-way 50, 50 and 75 ms; 4 steps chain 4 consecutive edges,
    # the longest C->A, A->B, B->C, C->A (250 ms), not 4 times the slowest edge (300 ms)
    wan = Wan(
        [Site("A"), Site("B"), Site("C")],
        [Link("A", "B", 100, 8), Link("B", "C", 100, 8), Link("A", "C", 150, 8)],
        1,
    )
    fabric = addressing.fabric(wan)
    hosts = [h.name for sw in fabric.switches for h in sw.hosts if h.role == "worker"]
    assert bounds.ring_bound_s(wan, fabric, hosts, 3000) == pytest.approx(0.25 + 4 * 0.001)
