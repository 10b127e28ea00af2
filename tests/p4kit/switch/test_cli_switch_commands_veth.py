"""p4kit-cli's simple_switch commands (set_queue_depth, set_queue_rate, show_ports, get_time_*) against
the real switch on veths: each is checked by what the data plane then does, not by the CLI's output."""

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


def cli(addr: str, commands: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "p4kit.cli.main", "--grpc-addr", addr, "--election-id", "3"],
        input=commands,
        capture_output=True,
        text=True,
        timeout=60,
    )


def burst(h1, h2, count: int) -> list[tuple[int, ...]]:
    """`count` probes sent back to back from h1; the probe fields of those that reach h2."""
    proc, frames, reader, _ = sniff(h2.ns, h2.iface, count, timeout=3)
    try:
        probes = [FIELDS.pack(i, 0, 0, 0, 0, 0, 0) + bytes(6) for i in range(count)]
        send = (
            "import socket\n"
            f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW); s.bind(({h1.iface!r},0))\n"
            f"for h in {[p.hex() for p in probes]!r}: s.send(bytes.fromhex(h))\n"
        )
        sh(sys.executable, "-c", send, ns=h1.ns)
        proc.wait(timeout=15)
        reader.join(timeout=5)
    finally:
        proc.kill()
    return [FIELDS.unpack_from(f) for f in frames]


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
