"""The INC switch program (p4src/inc.p4) on one switch, through p4kit-stf with STF files built from
scapy packets: fan-in, duplicates, retransmission of a finished slot, shadow copies, stale chunks,
unknown tenants, malformed packets, and a non-root switch in a two-level tree."""

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
GW_MAC, GW_IP, WORKER_PORT = "00:00:0a:00:01:fe", "10.0.1.254", P.worker_port(1)


def host_mac(port: int) -> str:
    return f"00:00:0a:00:01:{port:02x}"


def contribution(
    port: int, chunk: int, values: list[int], nslots: int = 4, tenant: int = 1, flags: int = 0
) -> bytes:
    slot, copy = P.slot_of(chunk, nslots)
    header = P.IncHeader(tenant, 0, slot, chunk, flags=flags | (P.F_VERSION if copy else 0))
    payload = P.encode(header, np.array(values, dtype=np.uint32))
    return raw(
        Ether(src=host_mac(port), dst=GW_MAC)
        / IP(src=f"10.0.1.{port}", dst="10.0.1.254")
        / UDP(sport=WORKER_PORT, dport=P.INC_UDP_PORT, chksum=0)
        / payload
    )


def delivered(
    port: int, chunk: int, values: list[int], count: int, flags: int, sender: int, nslots: int = 4
) -> bytes:
    """A result as the switch delivers it to the worker on `port`: from the switch's INC address to the
    worker's address and per-tenant port, UDP checksum 0."""
    slot, copy = P.slot_of(chunk, nslots)
    header = P.IncHeader(
        1, 0, slot, chunk, flags=flags | (P.F_VERSION if copy else 0), count=count, sender=sender
    )
    payload = P.encode(header, np.array(values, dtype=np.uint32))
    return raw(
        Ether(src=GW_MAC, dst=host_mac(port))
        / IP(src=GW_IP, dst=f"10.0.1.{port}")
        / UDP(sport=P.INC_UDP_PORT, dport=WORKER_PORT, chksum=0)
        / payload
    )


def lanes(v: int) -> list[int]:
    return [(v + i) & 0xFFFFFFFF for i in range(P.INC_LANES)]


def setup(fan_in: int = 3, is_root: int = 1, parent: int = 0, nslots: int = 4) -> list[str]:
    lines = [
        f"add {A}inc_tenants hdr.inc.tenant:1 hdr.inc.round:0 {A}set_config(base:0, nslots:{nslots}, "
        f"fan_in:{fan_in}, is_root:{is_root}, parent_port:{parent}, mcast_grp:1)"
    ]
    for i, port in enumerate(range(1, fan_in + 1)):
        lines.append(
            f"add {A}inc_children hdr.inc.tenant:1 hdr.inc.round:0 std_meta.ingress_port:{port} "
            f"{A}set_child(child:{i})"
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


def test_fan_in_three_sums_and_multicasts_the_result(tmp_path: Path) -> None:
    lines = setup()
    lines += [
        packet(1, contribution(1, 0, lanes(1))),
        packet(2, contribution(2, 0, lanes(10))),
        packet(3, contribution(3, 0, lanes(100))),
    ]
    total = [a + b + c for a, b, c in zip(lanes(1), lanes(10), lanes(100), strict=True)]
    for port in (1, 2, 3):
        # the result is the packet that completed the slot (from port 3), so its source fields are port 3's
        lines.append(expect(port, delivered(port, 0, total, 3, P.F_RESULT, sender=2)))
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
    total = [a + b + c for a, b, c in zip(lanes(1), lanes(10), lanes(100), strict=True)]
    for port in (1, 2, 3):
        lines.append(expect(port, delivered(port, 0, total, 3, P.F_RESULT, sender=2)))
    lines.append(f"check_counter {A}inc_stats(4) packets == 1")
    assert_passes(tmp_path, lines)


def test_retransmission_of_a_finished_slot_resends_only_to_the_asker(tmp_path: Path) -> None:
    lines = setup()
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    total = [a + b + c for a, b, c in zip(lanes(1), lanes(2), lanes(3), strict=True)]
    for port in (1, 2, 3):
        lines.append(expect(port, delivered(port, 0, total, 3, P.F_RESULT, sender=2)))
    # worker 2 lost the result and sends its contribution again
    lines.append(packet(2, contribution(2, 0, lanes(2), flags=P.F_RETRANSMIT)))
    lines.append(expect(2, delivered(2, 0, total, 3, P.F_RESULT | P.F_RETRANSMIT, sender=1)))
    lines.append(f"check_counter {A}inc_stats(7) packets == 1")
    assert_passes(tmp_path, lines)


def test_shadow_copy_keeps_the_previous_result_and_stale_chunks_are_dropped(tmp_path: Path) -> None:
    lines = setup(nslots=4)
    r0 = [a + b + c for a, b, c in zip(lanes(1), lanes(2), lanes(3), strict=True)]
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    lines += [expect(port, delivered(port, 0, r0, 3, P.F_RESULT, sender=2)) for port in (1, 2, 3)]
    # chunk 4 uses slot 0's other copy; while it fills, worker 3 asks again for chunk 0
    lines.append(packet(1, contribution(1, 4, lanes(7))))
    lines.append(packet(3, contribution(3, 0, lanes(3), flags=P.F_RETRANSMIT)))
    lines.append(expect(3, delivered(3, 0, r0, 3, P.F_RESULT | P.F_RETRANSMIT, sender=2)))
    lines += [packet(p, contribution(p, 4, lanes(7))) for p in (2, 3)]
    r4 = [3 * v for v in lanes(7)]
    lines += [expect(port, delivered(port, 4, r4, 3, P.F_RESULT, sender=2)) for port in (1, 2, 3)]
    # chunk 8 reuses copy 0; afterwards a late copy of chunk 0 is stale and dropped
    lines += [packet(p, contribution(p, 8, lanes(5))) for p in (1, 2, 3)]
    r8 = [3 * v for v in lanes(5)]
    lines += [expect(port, delivered(port, 8, r8, 3, P.F_RESULT, sender=2)) for port in (1, 2, 3)]
    lines.append(packet(2, contribution(2, 0, lanes(2), flags=P.F_RETRANSMIT)))
    lines.append(f"check_counter {A}inc_stats(3) packets == 1")
    assert_passes(tmp_path, lines)


def test_unknown_tenant_and_malformed_packets_are_dropped_and_counted(tmp_path: Path) -> None:
    lines = setup()
    lines.append(packet(1, contribution(1, 0, lanes(1), tenant=9)))
    truncated = contribution(2, 0, lanes(2))[:-100]
    lines.append(packet(2, truncated))
    lines.append(f"check_counter {A}inc_stats(1) packets == 1")
    lines.append(f"check_counter {A}inc_stats(0) packets == 1")
    # ports 1 and 2 appear in packet lines without expect lines: any packet out of them fails the test
    assert_passes(tmp_path, lines)


def test_non_root_forwards_the_partial_up_and_multicasts_the_result_down(tmp_path: Path) -> None:
    parent = 9
    lines = setup(fan_in=2, is_root=0, parent=parent)
    lines += [packet(1, contribution(1, 0, lanes(1))), packet(2, contribution(2, 0, lanes(2)))]
    partial = [a + b for a, b in zip(lanes(1), lanes(2), strict=True)]
    slot, _ = P.slot_of(0, 4)
    header = P.IncHeader(1, 0, slot, 0, count=2, sender=1)
    up = raw(
        Ether(src=host_mac(2), dst=GW_MAC)
        / IP(src="10.0.1.2", dst="10.0.1.254")
        / UDP(sport=WORKER_PORT, dport=P.INC_UDP_PORT, chksum=0)
        / P.encode(header, np.array(partial, np.uint32))
    )
    lines.append(expect(parent, up))
    # the parent's result (a sum over 5 workers) comes back and goes to both children
    final = [5 * v for v in lanes(1)]
    down = P.IncHeader(1, 0, slot, 0, flags=P.F_RESULT, count=5, sender=0)
    from_parent = raw(
        Ether(src="00:00:0a:00:02:fe", dst=GW_MAC)
        / IP(src="10.0.2.254", dst="10.0.1.254")
        / UDP(sport=P.INC_UDP_PORT, dport=P.INC_UDP_PORT, chksum=0)
        / P.encode(down, np.array(final, np.uint32))
    )
    lines.append(packet(parent, from_parent))
    for port in (1, 2):
        lines.append(expect(port, delivered(port, 0, final, 5, P.F_RESULT, sender=0)))
    assert_passes(tmp_path, lines)
