"""The queue model in the real switch on veths: a port shaped by the kernel (tbf, as Mininet's TCLink
shapes with htb for the p4lang tutorials) paces the switch's egress queue, so a burst builds a queue
that the program sees in enq_qdepth and deq_timedelta, and every probe still arrives."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch.cli import start
from p4kit.switch.cli_args import SwitchOptions
from tests.localports import free_port

from ._switch_testnet import have_root_net, hosts_net, sh

PROBE = Path(__file__).parent / "programs" / "queue_probe.p4"
FIELDS = struct.Struct("!BBIIIIB")


def sniff(
    ns: str, iface: str, n: int, timeout: float, rcvbuf: int = 0
) -> tuple[subprocess.Popen, list[bytes], threading.Thread, list[float]]:
    """Frames arriving on `iface` in `ns`, and their arrival times (CLOCK_MONOTONIC, system-wide).
    `rcvbuf`: the socket's receive buffer in bytes, forced (SO_RCVBUFFORCE) when a burst arrives
    faster than the reader prints it."""
    force = f"s.setsockopt(socket.SOL_SOCKET, 33, {rcvbuf})\n" if rcvbuf else ""  # 33: SO_RCVBUFFORCE
    code = (
        "import socket, time\n"
        f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW,socket.htons(3)); s.bind(({iface!r},0))\n"
        f"{force}"
        f"s.settimeout({timeout}); print('ready', flush=True); n=0\n"
        "try:\n"
        f"    while n < {n}:\n"
        "        d,a=s.recvfrom(65536)\n"
        "        if a[2]!=4: print(time.monotonic(), d.hex(), flush=True); n+=1\n"
        "except socket.timeout: pass\n"
    )
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    frames: list[bytes] = []
    times: list[float] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            when, data = line.split()
            times.append(float(when))
            frames.append(bytes.fromhex(data))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return proc, frames, t, times


@pytest.mark.root
def test_kernel_shaped_port_builds_a_visible_queue(tmp_path: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    doc = compile_file(PROBE).bmv2
    (tmp_path / "probe.json").write_text(json.dumps(doc))
    count = 30
    with hosts_net(2, subnet="10.83.0") as net:
        h1, h2 = net.hosts
        s2 = net.switch_ifaces[1]
        # 200 kbit/s: a 25-byte probe takes 1 ms on the wire; the burst arrives far faster
        sh(
            "tc",
            "qdisc",
            "add",
            "dev",
            s2,
            "root",
            "tbf",
            "rate",
            "200kbit",
            "burst",
            "1600",
            "latency",
            "2s",
        )
        opts = SwitchOptions(
            interfaces=net.ports(),
            json_path=str(tmp_path / "probe.json"),
            grpc_addr=f"127.0.0.1:{free_port()}",
        )
        running = start(opts)
        proc, frames, reader, _ = sniff(h2.ns, h2.iface, count, timeout=5)
        try:
            probes = [FIELDS.pack(i, 0, 0, 0, 0, 0, 0) + bytes(6) for i in range(count)]
            send = (
                "import socket,sys\n"
                f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW); s.bind(({h1.iface!r},0))\n"
                f"for h in {[p.hex() for p in probes]!r}: s.send(bytes.fromhex(h))\n"
            )
            sh(sys.executable, "-c", send, ns=h1.ns)
            proc.wait(timeout=15)
            reader.join(timeout=5)
        finally:
            proc.kill()
            running.close()
    got = [FIELDS.unpack_from(f) for f in frames]
    assert sorted(g[0] for g in got) == list(range(count)), "every probe arrives (depth 64 > burst)"
    depths = [g[3] for g in got]
    deltas = [g[4] for g in got]
    assert max(depths) >= count // 3, f"the burst should queue in the switch: enq_qdepth {depths}"
    frame_us = 8 * (FIELDS.size + 6) / 200_000 * 1e6
    # the last probe waited for (nearly) everything ahead of it to be serialised
    assert deltas[-1] >= (depths[-1] - 1) * frame_us * 0.9, (depths, deltas)


@pytest.mark.root
def test_kernel_shaping_rates_are_read_from_tc() -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    from p4kit.switch.linkemu import kernel_rate_bps

    with hosts_net(3, subnet="10.84.0") as net:
        htb, tbf, plain = net.switch_ifaces
        sh("tc", "qdisc", "add", "dev", htb, "root", "handle", "5:0", "htb", "default", "1")
        sh("tc", "class", "add", "dev", htb, "parent", "5:0", "classid", "5:1", "htb", "rate", "0.512Mbit")
        sh(
            "tc",
            "qdisc",
            "add",
            "dev",
            tbf,
            "root",
            "tbf",
            "rate",
            "10mbit",
            "burst",
            "32kbit",
            "latency",
            "400ms",
        )
        assert kernel_rate_bps(htb) == 512_000  # what Mininet's TCLink(bw=0.512) sets
        assert kernel_rate_bps(tbf) == 10_000_000
        assert kernel_rate_bps(plain) == 0.0
    assert kernel_rate_bps("p4kit-no-such-interface") == 0.0


@pytest.mark.root
def test_link_rate_paces_the_queue_and_serialisation_is_counted_once(tmp_path: Path) -> None:
    """With --link rate and a program that reads the queue fields, the queue lets a packet go each
    frame time, and a packet reaches the host one frame time after it left the queue (the link
    emulator's serialisation), not two."""
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    import statistics

    from p4kit.switch.linkemu import LinkParams

    doc = compile_file(PROBE).bmv2
    (tmp_path / "probe.json").write_text(json.dumps(doc))
    count, rate = 10, 20_000
    probes = [FIELDS.pack(i, 0, 0, 0, 0, 0, 0) + bytes(6) for i in range(count)]
    frame_s = len(probes[0]) * 8 / rate  # 10 ms
    with hosts_net(2, subnet="10.85.0") as net:
        h1, h2 = net.hosts
        opts = SwitchOptions(
            interfaces=net.ports(),
            json_path=str(tmp_path / "probe.json"),
            grpc_addr=f"127.0.0.1:{free_port()}",
            links={2: LinkParams(rate_mbit=rate / 1e6)},
        )
        running = start(opts)
        t0 = running.switch._t0  # the switch's clock: microseconds since this monotonic time
        proc, frames, reader, times = sniff(h2.ns, h2.iface, count, timeout=5)
        try:
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
            running.close()
    got = [FIELDS.unpack_from(f) for f in frames]
    assert [g[0] for g in got] == list(range(count))
    assert max(g[3] for g in got) >= count // 2  # the burst waited in the switch's queue
    departures = [t0 + (g[2] + g[4]) / 1e6 for g in got]
    assert departures[-1] - departures[0] >= 0.9 * (count - 1) * frame_s
    latency = statistics.median(a - d for a, d in zip(times, departures, strict=True))
    assert 0.5 * frame_s < latency < 1.5 * frame_s, latency
