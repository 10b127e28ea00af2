"""p4kit-cli's simple_switch commands (set_queue_depth, set_queue_rate, show_ports, get_time_*,
set_crc16/32_parameters) against the real switch on veths: each is checked by what the data plane then
does, not by the CLI's output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch.cli import start
from p4kit.switch.cli_args import SwitchOptions
from tests.localports import free_port

from ._switch_testnet import have_root_net, hosts_net, sh
from .test_queues_veth import FIELDS, PROBE, sniff

HASHES = Path(__file__).resolve().parents[1] / "programs" / "extern_hash_algorithms.p4"


def crc(data: bytes, width: int, poly: int, init: int, xor_out: int, reflect: bool) -> int:
    """A CRC bit by bit, straight from its definition (the reference for the switch's tables)."""
    top, mask = 1 << (width - 1), (1 << width) - 1
    reg = init
    for byte in data:
        if reflect:
            byte = int(f"{byte:08b}"[::-1], 2)
        reg ^= byte << (width - 8)
        for _ in range(8):
            reg = ((reg << 1) ^ poly) & mask if reg & top else (reg << 1) & mask
    if reflect:
        reg = int(f"{reg:0{width}b}"[::-1], 2)
    return reg ^ xor_out


def cli(addr: str, commands: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "p4kit.cli.main", "--grpc-addr", addr, "--election-id", "3"],
        input=commands,
        capture_output=True,
        text=True,
        timeout=60,
    )


def exchange(sender, receiver, frames: list[bytes], expect: int) -> list[bytes]:
    """Send `frames` back to back from one host; what reaches `receiver` (at most `expect`, 3 s)."""
    proc, got, reader, _ = sniff(receiver.ns, receiver.iface, expect, timeout=3)
    try:
        send = (
            "import socket\n"
            f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW); s.bind(({sender.iface!r},0))\n"
            f"for h in {[f.hex() for f in frames]!r}: s.send(bytes.fromhex(h))\n"
        )
        sh(sys.executable, "-c", send, ns=sender.ns)
        proc.wait(timeout=15)
        reader.join(timeout=5)
    finally:
        proc.kill()
    return got


def burst(h1, h2, count: int) -> list[tuple[int, ...]]:
    """`count` probes sent back to back from h1; the probe fields of those that reach h2."""
    probes = [FIELDS.pack(i, 0, 0, 0, 0, 0, 0) + bytes(6) for i in range(count)]
    return [FIELDS.unpack_from(f) for f in exchange(h1, h2, probes, count)]


@pytest.mark.root
def test_queue_commands_change_what_the_data_plane_does(tmp_path: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    (tmp_path / "probe.json").write_text(json.dumps(compile_file(PROBE).bmv2))
    count = 30
    with hosts_net(2, subnet="10.86.0") as net:
        h1, h2 = net.hosts
        addr = f"127.0.0.1:{free_port()}"
        opts = SwitchOptions(interfaces=net.ports(), json_path=str(tmp_path / "probe.json"), grpc_addr=addr)
        running = start(opts)
        try:
            r = cli(addr, "show_ports\nget_time_elapsed\nget_time_since_epoch\n")
            assert r.returncode == 0, r.stdout + r.stderr
            lines = r.stdout.splitlines()
            assert lines[0].split() == ["port", "#", "iface", "name", "status", "extra", "info"]
            rows = [ln.split() for ln in lines[2:4]]
            assert rows == [[str(p), iface, "UP"] for p, iface in sorted(net.ports().items())]
            elapsed, epoch = int(lines[4]), int(lines[5])
            assert 0 < elapsed < 60e6 and epoch > 1.7e15  # microseconds since start / since 1970

            # 1,000 packets/s out of port 2, at most 5 waiting: a burst of 30 loses its tail
            r = cli(addr, "set_queue_rate 1000 2\nset_queue_depth 5 2\n")
            assert r.returncode == 0, r.stdout + r.stderr
            got = burst(h1, h2, count)
            assert 4 <= len(got) < count // 2, got
            assert max(g[3] for g in got) <= 5  # enq_qdepth never above the depth set
            assert [g[0] for g in got] == sorted(g[0] for g in got)

            # deep again and unpaced: the whole burst arrives
            r = cli(addr, "set_queue_depth 64\nset_queue_rate 0 2\n")
            assert r.returncode == 0, r.stdout + r.stderr
            got = burst(h1, h2, count)
            assert sorted(g[0] for g in got) == list(range(count))

            r = cli(addr, "set_queue_depth\nset_queue_rate x\nset_queue_depth 4 2 9\n")
            assert r.returncode == 1
            errors = [ln for ln in r.stdout.splitlines() if ln.startswith("Error:")]
            assert "Invalid number of arguments" in errors[0] and "rate_pps" in errors[1]
            assert "priority" in errors[2], errors  # one queue per port unless --priority-queues
        finally:
            running.close()


@pytest.mark.root
def test_custom_crc_parameters_change_the_hash_the_program_computes(tmp_path: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    doc = compile_file(HASHES).bmv2
    (tmp_path / "hashes.json").write_text(json.dumps(doc))
    names = {c["algo"]: c["name"] for c in doc["calculations"] if c["algo"].endswith("_custom")}
    data = bytes([1, 2, 3, 4])
    # the program writes crc16_custom at bytes 10..11 and crc32_custom at 12..15 of its header
    with hosts_net(2, subnet="10.87.0") as net:
        h1 = net.hosts[0]
        addr = f"127.0.0.1:{free_port()}"
        running = start(
            SwitchOptions(interfaces=net.ports(), json_path=str(tmp_path / "hashes.json"), grpc_addr=addr)
        )
        try:

            def hashed() -> tuple[int, int]:
                frames = exchange(h1, h1, [data + bytes(60)], 1)  # the program sends it back out of port 1
                assert len(frames) == 1
                f = frames[0]
                return int.from_bytes(f[10:12], "big"), int.from_bytes(f[12:16], "big")

            # unconfigured: BMv2's defaults, CRC-16/ARC and the IEEE CRC-32
            assert hashed() == (
                crc(data, 16, 0x8005, 0, 0, True),
                crc(data, 32, 0x04C11DB7, ~0 & 0xFFFFFFFF, 0xFFFFFFFF, True),
            )
            r = cli(
                addr,
                f"set_crc16_parameters {names['crc16_custom']} 0x1021 0xffff 0x0000 false false\n"
                f"set_crc32_parameters {names['crc32_custom']} 0x1edc6f41 0xffffffff 0xffffffff true true\n"
                f"set_crc16_parameters {names['crc32_custom']} 0x1021 0 0 false false\n"
                "set_crc16_parameters nosuch 0x1021 0 0 false false\n"
                f"set_crc16_parameters {names['crc16_custom']} 0x11021 0 0 false false\n",
            )
            assert r.returncode == 1, r.stdout + r.stderr
            errors = [ln for ln in r.stdout.splitlines() if ln.startswith("Error:")]
            assert len(errors) == 3, r.stdout
            assert "uses crc32_custom, not crc16_custom" in errors[0]
            assert "unknown calculation 'nosuch'" in errors[1]
            assert "does not fit 16 bits" in errors[2]
            # CRC-16/CCITT-FALSE and CRC-32C (Castagnoli)
            assert hashed() == (
                crc(data, 16, 0x1021, 0xFFFF, 0, False),
                crc(data, 32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True),
            )
        finally:
            running.close()
