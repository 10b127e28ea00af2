"""The native port loop (native/portio.c) in the real switch between veths: it forwards every frame
exactly as the pipeline writes it and in order, takes control-plane writes between batches, emulates
links as linkemu.py does (delay, rate with its queue limit, loss), hands packet-in frames to the
controller and injects packet-out ones, and hands the ports to the Python loop and back (tracing on
and off, a new program) without losing or reordering a frame -- frames on their way in a delay line
included."""

from __future__ import annotations

import itertools
import json
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch.cli import RunningSwitch, start
from p4kit.switch.cli_args import SwitchOptions
from p4kit.switch.linkemu import LinkParams
from p4kit.switch.runtime import PacketIn, Switch
from tests.localports import free_port

from . import _switch_programs
from ._switch_testnet import have_root_net, hosts_net, sh
from .test_flow_cache_key import ROUTER, frame
from .test_queues_veth import sniff as queues_sniff

pytestmark = pytest.mark.root

ROUTE = ([((10 << 24) | (2 << 8), 24)], "I.ipv4_forward", [0x020000000202, 2])


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("native-ports")
    src = tmp / "router.p4"
    src.write_text(ROUTER)
    path = tmp / "router.json"
    path.write_text(json.dumps(compile_file(src).bmv2))
    return path


def _start(
    net, json_path: Path | None, links: dict[int, LinkParams] | None = None, native: bool = True
) -> RunningSwitch:
    opts = SwitchOptions(
        interfaces=net.ports(),
        json_path=str(json_path) if json_path else None,
        grpc_addr=f"127.0.0.1:{free_port()}",
        links=links or {},
        seed=7,
        native=native,
    )
    running = start(opts)
    if json_path is not None:
        running.switch.table_add("I.ipv4_lpm", *ROUTE)
    return running


def _wait_native(running: RunningSwitch, on: bool = True, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while running.ports.native_loop_active != on and time.monotonic() < end:
        time.sleep(0.01)
    assert running.ports.native_loop_active == on, running.ports.native_reason


def _send(ns: str, iface: str, frames: list[bytes], gap_s: float = 0.0) -> list[float]:
    """Send the frames from `ns` (one process, in order); returns each one's send time (monotonic)."""
    code = (
        "import socket,sys,time\n"
        f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW); s.bind(({iface!r},0))\n"
        "frames=[bytes.fromhex(x) for x in sys.stdin.read().split()]\n"
        "for f in frames:\n"
        "    print(time.monotonic()); s.send(f)\n"
        f"    if {gap_s}: time.sleep({gap_s})\n"
    )
    out = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code],
        input=" ".join(f.hex() for f in frames),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [float(x) for x in out.split()]


def sniff(
    ns: str, iface: str, n: int, timeout: float
) -> tuple[subprocess.Popen, list[bytes], threading.Thread, list[float]]:
    """test_queues_veth's sniffer with a 32 MiB socket buffer: the native loop forwards a burst faster
    than a Python reader prints it."""
    return queues_sniff(ns, iface, n, timeout, rcvbuf=32 << 20)


def _expected(json_path: Path, frames: list[bytes], dst: int = ROUTE[2][0]) -> list[bytes]:
    ref = Switch(native=False, flow_cache=False)
    ref.load_pipeline(json.loads(json_path.read_text()))
    ref.table_add("I.ipv4_lpm", ROUTE[0], ROUTE[1], [dst, 2])
    out = []
    for f in frames:
        ((port, data),) = ref.process_packet(1, f)
        assert port == 2
        out.append(data)
    return out


def _frames(n: int, start: int = 0) -> list[bytes]:
    return [
        frame(ident=(start + i) & 0xFFFF, payload=(start + i).to_bytes(4, "big") + bytes(14))
        for i in range(n)
    ]


def _collect(got: list[bytes], n: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < end:
        time.sleep(0.02)


def test_every_frame_arrives_exactly_and_in_order(router: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    frames = _frames(3000)
    with hosts_net(2, subnet="10.86.0") as net:
        h1, h2 = net.hosts
        running = _start(net, router)
        try:
            _wait_native(running)
            proc, got, _reader, _ = sniff(h2.ns, h2.iface, len(frames), timeout=10)
            _send(h1.ns, h1.iface, frames)
            _collect(got, len(frames))
            proc.wait(timeout=15)
            stats = running.ports.ports[1].stats, running.ports.ports[2].stats
            still_native = running.ports.native_loop_active
        finally:
            running.close()
    assert still_native
    assert got == _expected(router, frames)
    assert stats[0].rx >= len(frames) and stats[1].tx >= len(frames)


def _cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


@pytest.mark.parametrize("native", [True, False], ids=["native-loop", "python-loop"])
def test_a_port_that_goes_down_neither_spins_the_loop_nor_is_lost(router: Path, native: bool) -> None:
    """A receive socket whose interface went down holds an error (ENETDOWN) that poll reports until it
    is read: a loop that never read it woke at once forever (a whole core per switch while Mininet took
    its veths away). The error is read, counted and logged; the loop sleeps; once the interface is up
    again, frames flow as before."""
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    frames = _frames(100)
    with hosts_net(2, subnet="10.93.0") as net:
        h1, h2 = net.hosts
        running = _start(net, router, native=native)
        try:
            _wait_native(running, on=native)
            sh("ip", "link", "set", net.switch_ifaces[0], "down")
            time.sleep(0.3)
            before = _cpu_s()
            time.sleep(1.0)
            idle_cpu = _cpu_s() - before
            errors = running.ports.ports[1].stats.rx_errors
            sh("ip", "link", "set", net.switch_ifaces[0], "up")
            end = time.monotonic() + 5
            while "LOWER_UP" not in sh("ip", "link", "show", net.switch_ifaces[0]).stdout:
                assert time.monotonic() < end, "the interface did not come back up"
                time.sleep(0.05)
            proc, got, _reader, _ = sniff(h2.ns, h2.iface, len(frames), timeout=10)
            _send(h1.ns, h1.iface, frames)
            _collect(got, len(frames))
            proc.wait(timeout=15)
            still_native = running.ports.native_loop_active
        finally:
            running.close()
    assert idle_cpu < 0.3, f"the port loop used {idle_cpu:.2f} CPU-s in 1 s with a port down"
    assert errors >= 1
    assert still_native == native
    assert got == _expected(router, frames)


def test_a_table_write_during_traffic_takes_effect_between_batches(router: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    first, second = _frames(300), _frames(300, start=300)
    with hosts_net(2, subnet="10.87.0") as net:
        h1, h2 = net.hosts
        running = _start(net, router)
        try:
            _wait_native(running)
            proc, got, _reader, _ = sniff(h2.ns, h2.iface, 600, timeout=10)
            _send(h1.ns, h1.iface, first)
            _collect(got, 300)
            sw = running.switch
            handle = sw.table_find("I.ipv4_lpm", ROUTE[0])
            assert handle is not None
            sw.table_modify("I.ipv4_lpm", handle, "I.ipv4_forward", [0x0200000002AA, 2])
            _send(h1.ns, h1.iface, second)
            _collect(got, 600)
            proc.wait(timeout=15)
        finally:
            running.close()
    assert got == _expected(router, first) + _expected(router, second, dst=0x0200000002AA)


def test_link_delay_rate_queue_limit_and_loss(router: Path) -> None:
    """Port 2's link: 30 ms delay, 10 Mbit/s, at most 40 frames queued, 20 % loss. Single frames
    leave 30 ms after they were sent (plus their serialisation), never earlier. A burst of 400
    1,042-byte frames (0.83 ms each at the link's rate, sent in a few ms): a fifth is lost before
    the queue, the queue takes 40 and what drains meanwhile, the rest is tail-dropped, and every
    frame the link took arrives, in order and at the link's rate."""
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    link = LinkParams(delay_ms=30, rate_mbit=10, queue_pkts=40, loss_pct=20)
    frames = [frame(ident=i, payload=i.to_bytes(4, "big") + bytes(996)) for i in range(400)]
    with hosts_net(2, subnet="10.88.0") as net:
        h1, h2 = net.hosts
        running = _start(net, router, {2: link})
        try:
            _wait_native(running)
            # single frames 50 ms apart (nothing queued): each one's delay
            proc, got, reader, times = sniff(h2.ns, h2.iface, 8, timeout=3)
            sent_at = []
            for i in range(8):
                sent_at += _send(h1.ns, h1.iface, _frames(1, start=2000 + i))
                time.sleep(0.05)
            proc.wait(timeout=5)
            reader.join(timeout=2)
            arrivals = dict(zip((f[-18:-14] for f in got), times, strict=True))
            delays = [
                arrivals[(2000 + i).to_bytes(4, "big")] - t
                for i, t in enumerate(sent_at)
                if (2000 + i).to_bytes(4, "big") in arrivals
            ]
            # the burst
            time.sleep(0.3)  # the loop's statistics are up to date at its next return
            shaper = running.ports.shapers[2]
            before = vars(shaper.stats).copy()
            proc, got, reader, times = sniff(h2.ns, h2.iface, len(frames), timeout=3)
            sent_burst = _send(h1.ns, h1.iface, frames)
            proc.wait(timeout=10)
            reader.join(timeout=2)
            time.sleep(0.3)
            d = {k: v - before[k] for k, v in vars(shaper.stats).items()}
        finally:
            running.close()
    serialise = len(_expected(router, _frames(1))[0]) * 8 / 10e6
    assert len(delays) >= 3  # 8 sent, 20 % loss
    # never early; late only by the wakes of the loop, the sender and the Python sniffer
    assert min(delays) >= 0.030 + serialise - 0.0002, delays
    assert statistics.median(delays) <= 0.034 and max(delays) <= 0.045, delays
    assert d["submitted"] == len(frames), d
    assert 45 <= d["lost"] <= 120, d  # 20 % of 400: 80, binomial sd 8
    burst_s = sent_burst[-1] - sent_burst[0]
    big = len(_expected(router, frames[:1])[0]) * 8 / 10e6
    assert 40 <= d["sent"] <= 40 + burst_s / big + 2, (d, burst_s)
    assert d["tail_dropped"] == len(frames) - d["lost"] - d["sent"], d
    assert len(got) == d["sent"], (len(got), d)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # at the link's rate; a wake's grain (0.5 ms) lets a few go together, never faster on average
    assert statistics.mean(gaps) >= 0.9 * big, (statistics.mean(gaps), big)
    expected = _expected(router, frames)
    assert all(f in expected for f in got)
    assert [expected.index(f) for f in got] == sorted(expected.index(f) for f in got)  # in order


def test_hand_over_to_the_python_loop_and_back_loses_nothing(router: Path) -> None:
    """Frames stream through a 40 ms link while tracing goes on (the Python data plane and port loop
    take over, with what the native delay line holds) and off again (the native loop takes over
    with what the Python delay line holds): every frame arrives, exactly and in order."""
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    frames = _frames(900)
    with hosts_net(2, subnet="10.89.0") as net:
        h1, h2 = net.hosts
        running = _start(net, router, {2: LinkParams(delay_ms=40)})
        try:
            _wait_native(running)
            entries = running.ports.native_entries
            proc, got, _reader, _ = sniff(h2.ns, h2.iface, len(frames), timeout=10)
            _send(h1.ns, h1.iface, frames[:300])
            running.switch.set_trace(lambda line: None)  # frames of the first third are still on the link
            _wait_native(running, on=False)
            _send(h1.ns, h1.iface, frames[300:600])
            running.switch.set_trace(None)
            _wait_native(running, on=True)
            _send(h1.ns, h1.iface, frames[600:])
            _collect(got, len(frames))
            proc.wait(timeout=15)
            entered = running.ports.native_entries - entries
        finally:
            running.close()
    assert entered >= 1
    assert got == _expected(router, frames)


def test_a_new_program_is_picked_up(router: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    frames = _frames(200)
    with hosts_net(2, subnet="10.90.0") as net:
        h1, h2 = net.hosts
        running = _start(net, router)
        try:
            _wait_native(running)
            old = running.switch.port_target()
            proc, got, _reader, _ = sniff(h2.ns, h2.iface, 400, timeout=10)
            _send(h1.ns, h1.iface, frames)
            _collect(got, 200)
            running.switch.load_pipeline(json.loads(router.read_text()))
            running.switch.table_add("I.ipv4_lpm", ROUTE[0], ROUTE[1], [0x0200000002BB, 2])
            _send(h1.ns, h1.iface, frames)
            _collect(got, 400)
            proc.wait(timeout=15)
            new = running.switch.port_target()
        finally:
            running.close()
    assert new is not None and new.dp is not old.dp
    assert got == _expected(router, frames) + _expected(router, frames, dst=0x0200000002BB)


def test_packet_in_and_packet_out(tmp_path: Path) -> None:
    """The hand-built program's to_cpu action sends a frame to the CPU port: it becomes a PacketIn
    with its ingress port; a packet-out injected with egress port 2 leaves port 2."""
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    _, json_path = _switch_programs.write_program(str(tmp_path))
    cpu = _switch_programs.CPU_PORT
    with hosts_net(2, subnet="10.91.0") as net:
        h1, h2 = net.hosts
        opts = SwitchOptions(
            interfaces=net.ports(), json_path=json_path, grpc_addr=f"127.0.0.1:{free_port()}", cpu_port=cpu
        )
        running = start(opts)
        got_in: list[PacketIn] = []
        try:
            sw = running.switch
            sw.set_packet_in_callback(got_in.append)
            sw.table_add("MyIngress.acl", [(0x88B5, 0xFFFF)], "MyIngress.to_cpu", [], priority=1)
            _wait_native(running)
            eth = bytes.fromhex("020000000099" + h1.mac.replace(":", "") + "88b5")
            _send(h1.ns, h1.iface, [eth + b"to-the-controller" + bytes(40)])
            proc, got, reader, _ = sniff(h2.ns, h2.iface, 1, timeout=3)
            out_eth = bytes.fromhex("0200000000980200000000010800")
            running.ports.inject(cpu, (2 << 7).to_bytes(2, "big") + out_eth + bytes(46))
            end = time.monotonic() + 3
            while not got_in and time.monotonic() < end:
                time.sleep(0.01)
            proc.wait(timeout=5)
            reader.join(timeout=2)
            native = running.ports.native_loop_active
        finally:
            running.close()
    assert native
    assert len(got_in) == 1 and got_in[0].ingress_port == 1 and b"to-the-controller" in got_in[0].data
    assert any(out_eth in f for f in got), got


def test_the_python_loop_stays_where_the_native_one_cannot_serve(router: Path, tmp_path: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    with hosts_net(2, subnet="10.92.0") as net:
        opts = SwitchOptions(
            interfaces=net.ports(),
            json_path=str(router),
            grpc_addr=f"127.0.0.1:{free_port()}",
            pcap_dir=str(tmp_path / "pcap"),
        )
        running = start(opts)
        try:
            time.sleep(0.3)
            native = running.ports.native_loop_active
            data_plane_native = running.switch.native_active
        finally:
            running.close()
    assert data_plane_native and not native  # pcap capture is the Python loop's
