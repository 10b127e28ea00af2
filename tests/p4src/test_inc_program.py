"""The INC switch program (p4src/inc.p4) on one switch, through p4kit-stf with STF files built from
scapy packets: fan-in, duplicates, retransmission of a finished slot, shadow copies, stale and wrapping
chunks, and everything the switch must refuse - unknown tenants, other epochs, contributions from a port
or an address that is not the tenant's child, corrupted or unchecksummed packets, INC packets of every
wrong length, spoofed sources and routed packets to worker ports - plus a non-root switch in a two-level
tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from scapy.all import IP, UDP, Ether, raw

from edge import protocol as P  # noqa: N812 - P mirrors the protocol's constants

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "inc.p4"
STF = str(Path(sys.executable).parent / "p4kit-stf")
A = "TributaryIngress.aggregation."
G = "TributaryIngress.guard."
GW_MAC, GW_IP, WORKER_PORT = "00:00:0a:00:01:fe", "10.0.1.254", P.worker_port(1)
EPOCH = 0x5EED1234


def host_mac(port: int) -> str:
    return f"00:00:0a:00:01:{port:02x}"


def host_ip(port: int) -> str:
    return f"10.0.1.{port}"


def udp_frame(
    src_mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int, payload: bytes
) -> bytes:
    """A frame with both checksums computed (scapy fills them in), as hosts and switches send them."""
    return raw(
        Ether(src=src_mac, dst=dst_mac) / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport) / payload
    )


def contribution(
    port: int,
    chunk: int,
    values: list[int],
    nslots: int = 4,
    tenant: int = 1,
    flags: int = 0,
    epoch: int = EPOCH,
    src: str | None = None,
) -> bytes:
    slot, copy = P.slot_of(chunk, nslots)
    header = P.IncHeader(
        tenant, 0, slot, chunk % P.SERIAL_MOD, flags=flags | (P.F_VERSION if copy else 0), epoch=epoch
    )
    payload = P.encode(header, np.array(values, dtype=np.uint32))
    return udp_frame(
        host_mac(port), GW_MAC, src or host_ip(port), GW_IP, WORKER_PORT, P.INC_UDP_PORT, payload
    )


def delivered(
    port: int, chunk: int, values: list[int], count: int, flags: int, sender: int, nslots: int = 4
) -> bytes:
    """A result as the switch delivers it to the worker on `port`: from the switch's INC address to the
    worker's address and per-tenant port, with a valid UDP checksum."""
    slot, copy = P.slot_of(chunk, nslots)
    header = P.IncHeader(
        1,
        0,
        slot,
        chunk % P.SERIAL_MOD,
        flags=flags | (P.F_VERSION if copy else 0),
        count=count,
        sender=sender,
        epoch=EPOCH,
    )
    payload = P.encode(header, np.array(values, dtype=np.uint32))
    return udp_frame(GW_MAC, host_mac(port), GW_IP, host_ip(port), P.INC_UDP_PORT, WORKER_PORT, payload)


def lanes(v: int) -> list[int]:
    return [(v + i) & 0xFFFFFFFF for i in range(P.INC_LANES)]


def total_of(*vs: int) -> list[int]:
    return [sum(col) & 0xFFFFFFFF for col in zip(*(lanes(v) for v in vs), strict=True)]


def setup(fan_in: int = 3, is_root: int = 1, parent: int = 0, nslots: int = 4) -> list[str]:
    lines = [
        f"add {A}inc_tenants hdr.inc.tenant:1 hdr.inc.round:0 {A}set_config(base:0, nslots:{nslots}, "
        f"fan_in:{fan_in}, is_root:{is_root}, parent_port:{parent}, mcast_grp:1, repair_grp:2, epoch:{EPOCH}, "
        "switch_ip:0x0a0001fe)"
    ]
    for i, port in enumerate(range(1, fan_in + 1)):
        lines.append(
            f"add {A}inc_children hdr.inc.tenant:1 hdr.inc.round:0 std_meta.ingress_port:{port} "
            f"hdr.ipv4.src_addr:0x0a0001{port:02x} {A}set_child(child:{i})"
        )
        mac = int(host_mac(port).replace(":", ""), 16)
        lines.append(
            f"add TributaryEgress.delivery.inc_workers hdr.inc.tenant:1 std_meta.egress_port:{port} "
            f"TributaryEgress.delivery.to_worker(mac:{mac}, ip:0x0a0001{port:02x}, udp_port:{WORKER_PORT}, "
            "switch_mac:0x00000a0001fe, switch_ip:0x0a0001fe)"
        )
    lines += [
        "mc_mgrp_create 1",
        "mc_node_create 0 " + " ".join(str(p) for p in range(1, fan_in + 1)),
        "mc_node_associate 1 0",
    ]
    return lines


def run_stf(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    f = tmp_path / "inc.stf"
    f.write_text("\n".join(lines) + "\n")
    return subprocess.run(
        [STF, str(PROGRAM), str(f), "-I", str(PROGRAM.parent)], capture_output=True, text=True, timeout=300
    )


def packet(port: int, data: bytes) -> str:
    return f"packet {port} {data.hex()}"


def expect(port: int, data: bytes) -> str:
    return f"expect {port} {data.hex()} $"


def assert_passes(tmp_path: Path, lines: list[str]) -> None:
    res = run_stf(tmp_path, lines)
    assert res.returncode == 0, res.stdout + res.stderr


def results_for(
    chunk: int, total: list[int], count: int = 3, flags: int = P.F_RESULT, sender: int = 2
) -> list[str]:
    return [expect(port, delivered(port, chunk, total, count, flags, sender=sender)) for port in (1, 2, 3)]


def test_fan_in_three_sums_and_multicasts_the_result(tmp_path: Path) -> None:
    lines = setup()
    lines += [
        packet(1, contribution(1, 0, lanes(1))),
        packet(2, contribution(2, 0, lanes(10))),
        packet(3, contribution(3, 0, lanes(100))),
    ]
    lines += results_for(0, total_of(1, 10, 100))
    lines.append(f"check_counter {A}inc_stats(6) packets == 1")
    assert_passes(tmp_path, lines)


def test_duplicate_is_not_counted_twice(tmp_path: Path) -> None:
    lines = setup()
    lines += [
        packet(2, contribution(2, 0, lanes(10))),
        packet(2, contribution(2, 0, lanes(10), flags=P.F_RETRANSMIT)),
        packet(1, contribution(1, 0, lanes(1))),
        packet(3, contribution(3, 0, lanes(100))),
    ]
    lines += results_for(0, total_of(1, 10, 100))
    lines.append(f"check_counter {A}inc_stats(4) packets == 1")
    assert_passes(tmp_path, lines)


def test_retransmission_of_a_finished_slot_resends_only_to_the_asker(tmp_path: Path) -> None:
    lines = setup()
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    total = total_of(1, 2, 3)
    lines += results_for(0, total)
    # worker 2 lost the result and sends its contribution again
    lines.append(packet(2, contribution(2, 0, lanes(2), flags=P.F_RETRANSMIT)))
    lines.append(expect(2, delivered(2, 0, total, 3, P.F_RESULT | P.F_RETRANSMIT, sender=1)))
    lines.append(f"check_counter {A}inc_stats(7) packets == 1")
    assert_passes(tmp_path, lines)


def test_a_result_completed_by_a_repair_goes_to_the_repair_group(tmp_path: Path) -> None:
    """The root multicasts a result to the tenant's group, but one that a repair (RETRANSMIT) completed
    to its repair group, which lists each child switch twice (here port 3 stands for one): the
    workers below wait for that result, and a loss of it on a WAN link would cost each a timeout."""
    lines = setup()
    lines += [
        "mc_mgrp_create 2",
        "mc_node_create 0 1 2 3",
        "mc_node_create 1 3",
        "mc_node_associate 2 1",
        "mc_node_associate 2 2",
    ]
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    lines += results_for(0, total_of(1, 2, 3))  # group 1: one copy each
    lines += [packet(p, contribution(p, 1, lanes(p))) for p in (1, 3)]
    lines.append(packet(2, contribution(2, 1, lanes(2), flags=P.F_RETRANSMIT)))
    repaired = P.F_RESULT | P.F_RETRANSMIT
    lines += [
        expect(port, delivered(port, 1, total_of(1, 2, 3), 3, repaired, sender=1)) for port in (1, 2, 3)
    ]
    lines.append(expect(3, delivered(3, 1, total_of(1, 2, 3), 3, repaired, sender=1)))
    lines.append(f"check_counter {A}inc_stats(6) packets == 2")
    assert_passes(tmp_path, lines)


def test_shadow_copy_keeps_the_previous_result_and_stale_chunks_are_dropped(tmp_path: Path) -> None:
    lines = setup(nslots=4)
    r0 = total_of(1, 2, 3)
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    lines += results_for(0, r0)
    # chunk 4 uses slot 0's other copy; while it fills, worker 3 asks again for chunk 0
    lines.append(packet(1, contribution(1, 4, lanes(7))))
    lines.append(packet(3, contribution(3, 0, lanes(3), flags=P.F_RETRANSMIT)))
    lines.append(expect(3, delivered(3, 0, r0, 3, P.F_RESULT | P.F_RETRANSMIT, sender=2)))
    lines += [packet(p, contribution(p, 4, lanes(7))) for p in (2, 3)]
    lines += results_for(4, total_of(7, 7, 7))
    # chunk 8 reuses copy 0; afterwards a late copy of chunk 0 is stale and dropped
    lines += [packet(p, contribution(p, 8, lanes(5))) for p in (1, 2, 3)]
    lines += results_for(8, total_of(5, 5, 5))
    lines.append(packet(2, contribution(2, 0, lanes(2), flags=P.F_RETRANSMIT)))
    lines.append(f"check_counter {A}inc_stats(3) packets == 1")
    assert_passes(tmp_path, lines)


def test_chunk_numbers_wrap_around_2_to_the_32(tmp_path: Path) -> None:
    """Serial-number comparison: chunk 2^32 - 4 + 8 (= 4 after the wrap) is newer than 2^32 - 4 in the
    same cell, and the pre-wrap chunk is then stale; a far-ahead forged 0xFFFFFFFF would be older."""
    lines = setup(nslots=2)
    before = 2**32 - 4  # slot 0, copy 0
    lines += [packet(p, contribution(p, before, lanes(p), nslots=2)) for p in (1, 2, 3)]
    lines += [
        expect(port, delivered(port, before, total_of(1, 2, 3), 3, P.F_RESULT, 2, nslots=2))
        for port in (1, 2, 3)
    ]
    after = 2**32  # = 0 mod 2^32: slot 0, copy 0 again (the next use of that cell)
    lines += [packet(p, contribution(p, after, lanes(9), nslots=2)) for p in (1, 2, 3)]
    lines += [
        expect(port, delivered(port, after, total_of(9, 9, 9), 3, P.F_RESULT, 2, nslots=2))
        for port in (1, 2, 3)
    ]
    lines.append(packet(1, contribution(1, before, lanes(1), nslots=2, flags=P.F_RETRANSMIT)))
    lines.append(f"check_counter {A}inc_stats(3) packets == 1")
    assert_passes(tmp_path, lines)


def test_unknown_tenant_wrong_epoch_and_malformed_packets_are_dropped_and_counted(tmp_path: Path) -> None:
    lines = setup()
    lines.append(packet(1, contribution(1, 0, lanes(1), tenant=9)))
    truncated = contribution(2, 0, lanes(2))[:-100]
    lines.append(packet(2, truncated))
    lines.append(packet(3, contribution(3, 0, lanes(3), epoch=EPOCH + 1)))
    lines.append(f"check_counter {A}inc_stats(1) packets == 1")
    lines.append(f"check_counter {A}inc_stats(0) packets == 1")
    lines.append(f"check_counter {A}inc_stats(9) packets == 1")
    # the ports appear in packet lines without expect lines: any packet out of them fails the test
    assert_passes(tmp_path, lines)


def test_inc_packets_of_every_wrong_length_are_dropped_never_routed(tmp_path: Path) -> None:
    """Every frame to the INC port from 42 bytes (no INC header at all) to one byte short of a whole
    packet, and one byte too long: all dropped as malformed, none leaves the switch (a route to the
    destination exists, so a routed packet would show up on port 4)."""
    whole = contribution(1, 0, lanes(1))
    lines = setup()
    # 34 to 41 bytes: the IPv4 header is whole but the UDP header is cut short - not even parsed as UDP,
    # dropped by forwarding as truncated
    short = [whole[:n] for n in range(34, 42)]
    lines += [packet(1, f) for f in short]
    lines.append(f"check_counter TributaryIngress.forwarding.route_guard(3) packets == {len(short)}")
    lines.append(
        "add TributaryIngress.forwarding.ipv4_routes hdr.ipv4.dst_addr:0x0a0001fe/32 "
        "TributaryIngress.forwarding.route(port:4)"
    )
    frames = []
    for n in range(42, P.FRAME_LEN):
        payload = whole[42:n]
        frames.append(udp_frame(host_mac(1), GW_MAC, host_ip(1), GW_IP, WORKER_PORT, P.INC_UDP_PORT, payload))
    frames.append(
        udp_frame(host_mac(1), GW_MAC, host_ip(1), GW_IP, WORKER_PORT, P.INC_UDP_PORT, whole[42:] + b"\0")
    )
    lines += [packet(1, f) for f in frames]
    lines.append(f"check_counter {A}inc_stats(0) packets == {len(frames)}")
    assert_passes(tmp_path, lines)


def test_corrupted_and_unchecksummed_contributions_never_touch_a_cell(tmp_path: Path) -> None:
    lines = setup()
    good = bytearray(contribution(1, 0, lanes(1)))
    corrupted = bytes(good[:100]) + bytes([good[100] ^ 0x40]) + bytes(good[101:])  # a flipped value bit
    unchecked = bytes(good[:40]) + b"\0\0" + bytes(good[42:])  # UDP checksum 0: "none"
    lines += [packet(1, corrupted), packet(1, unchecked)]
    lines.append(f"check_counter {A}inc_stats(10) packets == 2")
    # the cell is untouched: the real contributions still sum exactly
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    lines += results_for(0, total_of(1, 2, 3))
    assert_passes(tmp_path, lines)


def test_a_host_cannot_contribute_for_another_port_or_address(tmp_path: Path) -> None:
    """Port 3's host forges worker 1's contribution (its address, from port 3), and a contribution
    from an address no child has on port 2: neither counts, the real sum is exact."""
    lines = setup()
    lines.append(packet(3, contribution(3, 0, lanes(1000), src=host_ip(1))))
    lines.append(packet(2, contribution(2, 0, lanes(1000), src="10.0.1.77")))
    lines.append(f"check_counter {A}inc_stats(2) packets == 2")
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    lines += results_for(0, total_of(1, 2, 3))
    assert_passes(tmp_path, lines)


def test_source_guard_and_worker_port_guard(tmp_path: Path) -> None:
    """With the guard installed for host port 1, a spoofed source from that port is dropped before
    anything else; a routed UDP packet to a worker's result port is dropped from any port; ordinary
    traffic is routed."""
    lines = [
        f"add {G}source_guard std_meta.ingress_port:1 hdr.ipv4.src_addr:0x0a000101/32 {G}permit()",
        f"add {G}source_guard std_meta.ingress_port:1 hdr.ipv4.src_addr:0/0 {G}deny()",
        "add TributaryIngress.forwarding.ipv4_routes hdr.ipv4.dst_addr:0x0a000200/24 "
        "TributaryIngress.forwarding.route(port:5)",
    ]
    spoofed = udp_frame(host_mac(1), GW_MAC, "10.0.1.254", "10.0.2.1", P.INC_UDP_PORT, 5001, b"x" * 20)
    to_worker = udp_frame(host_mac(1), GW_MAC, host_ip(1), "10.0.2.1", 5555, P.worker_port(3), b"forged")
    ordinary = udp_frame(host_mac(1), GW_MAC, host_ip(1), "10.0.2.1", 5555, 5001, b"hello")
    lines += [packet(1, spoofed), packet(1, to_worker), packet(1, ordinary)]
    routed = bytearray(ordinary)
    routed[22] -= 1  # TTL
    out = Ether(bytes(routed))
    del out[IP].chksum
    lines.append(expect(5, raw(out)))
    lines.append(f"check_counter {G}guard_stats(0) packets == 1")
    lines.append("check_counter TributaryIngress.forwarding.route_guard(1) packets == 1")
    assert_passes(tmp_path, lines)


def test_non_root_forwards_the_partial_up_and_multicasts_the_result_down(tmp_path: Path) -> None:
    parent = 9
    lines = setup(fan_in=2, is_root=0, parent=parent)
    lines += [packet(1, contribution(1, 0, lanes(1))), packet(2, contribution(2, 0, lanes(2)))]
    slot, _ = P.slot_of(0, 4)
    header = P.IncHeader(1, 0, slot, 0, count=2, sender=1, epoch=EPOCH)
    # the partial aggregate leaves from this switch's INC address (the parent knows its children by it)
    up = udp_frame(
        host_mac(2),
        GW_MAC,
        GW_IP,
        GW_IP,
        WORKER_PORT,
        P.INC_UDP_PORT,
        P.encode(header, np.array(total_of(1, 2), np.uint32)),
    )
    lines.append(expect(parent, up))
    # the parent's result (a sum over 5 workers) comes back and goes to both children
    final = [5 * v for v in lanes(1)]
    down = P.IncHeader(1, 0, slot, 0, flags=P.F_RESULT, count=5, sender=0, epoch=EPOCH)
    from_parent = udp_frame(
        "00:00:0a:00:02:fe",
        GW_MAC,
        "10.0.2.254",
        "10.0.1.254",
        P.INC_UDP_PORT,
        P.INC_UDP_PORT,
        P.encode(down, np.array(final, np.uint32)),
    )
    lines.append(packet(parent, from_parent))
    for port in (1, 2):
        lines.append(expect(port, delivered(port, 0, final, 5, P.F_RESULT, sender=0)))
    assert_passes(tmp_path, lines)


def test_a_non_root_sends_an_urgent_aggregate_twice_to_its_parent(tmp_path: Path) -> None:
    """A cell completed by an URGENT contribution (one of the call's last chunks) leaves through the
    repair group, which at a non-root lists the parent twice; a plain one leaves once."""
    parent = 9
    lines = setup(fan_in=2, is_root=0, parent=parent)
    lines += ["mc_mgrp_create 2", "mc_node_create 0 9", "mc_node_create 1 9"]
    lines += ["mc_node_associate 2 1", "mc_node_associate 2 2"]

    def up(chunk: int, flags: int) -> bytes:
        header = P.IncHeader(1, 0, P.slot_of(chunk, 4)[0], chunk, flags=flags, count=2, sender=1, epoch=EPOCH)
        payload = P.encode(header, np.array(total_of(1, 2), np.uint32))
        return udp_frame(host_mac(2), GW_MAC, GW_IP, GW_IP, WORKER_PORT, P.INC_UDP_PORT, payload)

    lines += [packet(1, contribution(1, 0, lanes(1))), packet(2, contribution(2, 0, lanes(2)))]
    lines.append(expect(parent, up(0, 0)))
    lines += [packet(p, contribution(p, 1, lanes(p), flags=P.F_URGENT)) for p in (1, 2)]
    lines += [expect(parent, up(1, P.F_URGENT))] * 2
    assert_passes(tmp_path, lines)
