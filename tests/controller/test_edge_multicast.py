"""Edge-INC replication in the real switch program: p4kit switches running p4src/inc.p4, programmed by
the controller's Edge-INC planner and installer over real P4Runtime, fed frames as an edge host's kernel
sends them. Each source's stream is replicated once per tree branch, rewritten to the receiving edge
hosts, counted per port, keyed by the packet's round; unknown trees are dropped and counted; removal
leaves nothing behind."""

from __future__ import annotations

import socket
import struct

import numpy as np
import pytest

from controller.edge.install import (
    EdgeInstaller,
    EdgeInstallError,
    read_port_counters,
    read_stats,
    read_tree_traffic,
)
from controller.edge.plan import GroupPool, plan_edge_job
from controller.p4rt import P4InfoIndex
from controller.provision import connect_all, provision
from edge import edge_wire as w
from edge import protocol as P  # noqa: N812
from tests.inprocess import serve_switches
from topo import addressing
from topo.pipeline import build_pipeline
from topo.wan import Link, Wan, default_wan


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    return build_pipeline(tmp_path_factory.mktemp("edge-build"))


class Fabric4:
    """Four sites in a chain TYO - LAX - NYC - LON (so trees have a transit switch), switches in-process."""

    def __init__(self, pipeline) -> None:  # type: ignore[no-untyped-def]
        base = default_wan(["TYO", "LAX", "NYC", "LON"])
        wan = Wan(base.sites, [Link("TYO", "LAX", 107), Link("LAX", "NYC", 69), Link("NYC", "LON", 78)], 1)
        self.wan = wan
        self.fabric = addressing.fabric(wan)
        self.switches, self.servers = serve_switches(self.fabric)
        self.conns = connect_all(self.fabric)
        provision(self.fabric, self.conns, pipeline)
        self.index = P4InfoIndex(pipeline.p4info)
        self.peer = {}
        for sw in self.fabric.switches:
            for other, port in sw.neighbour_ports.items():
                self.peer[(sw.name, port)] = (other, self.fabric.switch(other).neighbour_ports[sw.name])

    def close(self) -> None:
        for c in self.conns.values():
            c.close()
        for s in self.servers:
            s.stop(0)

    def edge(self, site: str):  # type: ignore[no-untyped-def]
        sw = self.fabric.switch(site)
        return sw, next(h for h in sw.hosts if h.role == "edge")

    def send_from_edge(self, site: str, packet: w.EdgePacket) -> list[tuple[str, bytes]]:
        """Inject a stream packet at `site`'s edge host port; follow it through the WAN; return what
        reached hosts as (host name, frame)."""
        sw, h = self.edge(site)
        frame = P.frame(
            h.mac, sw.inc_mac, h.ip, sw.inc_ip, w.EDGE_REPAIR_PORT, w.EDGE_UDP_PORT, w.encode(packet)
        )
        delivered = []
        todo = [(site, h.port, frame)]
        while todo:
            name, port, f = todo.pop()
            for out_port, out in self.switches[name].process_packet(port, f):
                if (name, out_port) in self.peer:
                    todo.append((*self.peer[(name, out_port)], out))
                else:
                    host = next(x.name for x in self.fabric.switch(name).hosts if x.port == out_port)
                    delivered.append((host, out))
        return delivered


@pytest.fixture
def net(pipeline):
    f = Fabric4(pipeline)
    yield f
    f.close()


def _stream_packet(sender: int, rnd: int, chunk: int, epoch: int = 5) -> w.EdgePacket:
    return w.EdgePacket(sender, 1, rnd, epoch, chunk, np.arange(64, dtype=np.uint32) + chunk)


def _udp_ok(frame: bytes) -> bool:
    src, dst = frame[26:30], frame[30:34]
    length = struct.unpack("!H", frame[38:40])[0]
    pseudo = src + dst + struct.pack("!BBH", 0, 17, length)
    return P.ones_complement_sum(pseudo + frame[34 : 34 + length]) == 0xFFFF


def test_streams_are_replicated_along_their_trees_and_rewritten_to_the_edge_hosts(net):
    rounds = [[("TYO", "NYC", "LON")], [("LAX", "NYC")]]
    plan = plan_edge_job(net.fabric, 1, 5, rounds)
    EdgeInstaller(net.conns, net.index).install(plan)
    ids = plan.site_ids
    got = net.send_from_edge("TYO", _stream_packet(ids["TYO"], 1, 0))
    assert sorted(h for h, _ in got) == ["LONe", "NYCe"]  # not LAX (transit), not back to TYO
    for host, frame in got:
        _sw, h = net.edge(host[:-1])
        assert frame[0:6] == bytes.fromhex(h.mac.replace(":", ""))
        assert socket.inet_ntoa(frame[30:34]) == h.ip
        assert _udp_ok(frame)
        p = w.decode(frame[42:])
        assert (p.sender, p.round, p.chunk) == (ids["TYO"], 1, 0)
        assert np.array_equal(p.lanes, np.arange(64, dtype=np.uint32))
    # the round in the packet selects the tree: TYO is not in round 2, LAX's round-2 stream reaches NYC only
    assert net.send_from_edge("TYO", _stream_packet(ids["TYO"], 2, 0)) == []
    assert [h for h, _ in net.send_from_edge("LAX", _stream_packet(ids["LAX"], 2, 0))] == ["NYCe"]
    # each directed link carried each stream once: TYO->LAX and LAX->NYC one TYO packet, NYC->LON one
    tx = {name: read_port_counters(c, net.index, "edge_tx") for name, c in net.conns.items()}
    ports = {(p.site, p.peer): p.port for p in addressing.wan_port_plan(net.wan)}
    assert tx["TYO"][ports[("TYO", "LAX")]][0] == 1
    assert tx["LAX"][ports[("LAX", "NYC")]][0] == 2  # TYO's round-1 and LAX's round-2 packet
    assert tx["NYC"][ports[("NYC", "LON")]][0] == 1
    assert ports[("LAX", "TYO")] not in tx["LAX"] and ports[("NYC", "LAX")] not in tx["NYC"]
    assert tx["TYO"][ports[("TYO", "LAX")]][1] == P.FRAME_LEN
    assert read_stats(net.conns["TYO"], net.index)["no_tree"] == 1  # TYO's round-2 packet
    # per tree entry (tenant, round, source): each switch on TYO's round-1 tree counted its one packet
    traffic = {
        (t.switch, t.round, t.source_ip): (t.packets, t.bytes)
        for name, c in net.conns.items()
        for t in read_tree_traffic(c, net.index, name, 1)
    }
    tyo_ip = net.edge("TYO")[1].ip
    assert {k: v for k, v in traffic.items() if k[2] == tyo_ip} == {
        (sw, 1, tyo_ip): (1, P.FRAME_LEN) for sw in ("TYO", "LAX", "NYC", "LON")
    }
    assert traffic[("LAX", 2, net.edge("LAX")[1].ip)] == (1, P.FRAME_LEN)
    assert sum(len(read_tree_traffic(c, net.index, n, 2)) for n, c in net.conns.items()) == 0  # other tenant


def test_packets_without_a_tree_are_dropped_and_removal_leaves_nothing(net):
    plan = plan_edge_job(net.fabric, 1, 5, [[("TYO", "LAX")]])
    inst = EdgeInstaller(net.conns, net.index)
    inst.install(plan)
    assert [h for h, _ in net.send_from_edge("TYO", _stream_packet(1, 1, 0))] == ["LAXe"]
    assert inst.remove(plan) == []
    assert net.send_from_edge("TYO", _stream_packet(1, 1, 1)) == []
    assert read_stats(net.conns["TYO"], net.index)["no_tree"] == 1
    # and it can be installed again (nothing was left to collide with)
    inst.install(plan)
    assert [h for h, _ in net.send_from_edge("TYO", _stream_packet(1, 1, 2))] == ["LAXe"]


def test_a_failed_install_is_rolled_back(net):
    plan = plan_edge_job(net.fabric, 1, 5, [[("TYO", "LAX")]])
    inst = EdgeInstaller(net.conns, net.index)
    inst.install(plan)
    # another tenant planned with its own pool takes the same group id at TYO: its rewrites go in first,
    # then the group clashes, and everything of it must go again
    clash = plan_edge_job(net.fabric, 2, 6, [[("TYO", "NYC")]], GroupPool())

    def entries() -> dict[str, tuple[int, int]]:
        return {
            name: (
                len(c.read([net.index.table_entry("edge_hosts")])),
                len(c.read([net.index.table_entry("edge_mcast")])),
            )
            for name, c in net.conns.items()
        }

    # the first job: a rewrite at TYO and LAX, and at each of them one entry per source tree (TYO's, LAX's)
    assert entries() == {"TYO": (1, 2), "LAX": (1, 2), "NYC": (0, 0), "LON": (0, 0)}
    with pytest.raises(EdgeInstallError, match=r"rolled back.*multicast group 16384 already exists"):
        inst.install(clash)
    assert entries() == {"TYO": (1, 2), "LAX": (1, 2), "NYC": (0, 0), "LON": (0, 0)}
    assert [h for h, _ in net.send_from_edge("TYO", _stream_packet(1, 1, 3))] == ["LAXe"]


def test_malformed_edge_packets_are_dropped_and_counted(net):
    plan = plan_edge_job(net.fabric, 1, 5, [[("TYO", "LAX")]])
    EdgeInstaller(net.conns, net.index).install(plan)
    sw, h = net.edge("TYO")
    short = P.frame(h.mac, sw.inc_mac, h.ip, sw.inc_ip, 1, w.EDGE_UDP_PORT, b"\x02" * 40)
    assert net.switches["TYO"].process_packet(h.port, short) == []
    bad = bytearray(
        P.frame(h.mac, sw.inc_mac, h.ip, sw.inc_ip, 1, w.EDGE_UDP_PORT, w.encode(_stream_packet(1, 1, 0)))
    )
    bad[-1] ^= 0xFF  # payload corrupted: the UDP checksum no longer holds
    assert net.switches["TYO"].process_packet(h.port, bytes(bad)) == []
    assert read_stats(net.conns["TYO"], net.index)["malformed"] == 2
