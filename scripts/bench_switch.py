#!/usr/bin/env python3
"""Benchmark of p4kit-switch: packets per second in-process, on veths, and against a plain relay.

Why three numbers: `inprocess_pps` is the pipeline alone (a basic IPv4 LPM forwarding program, no I/O);
`veth_pps` is the real p4kit-switch process forwarding between two veths whose other ends sit in
network namespaces; `relay_pps` is the plainest Python AF_PACKET relay on the same veths, measured in the
same run. The relay is the ceiling for any Python dataplane on this machine, so `veth_ratio =
veth_pps / relay_pps` says how much of it the switch keeps (goals: inprocess >= 200,000 pps,
veth_ratio >= 0.7).

Traffic: a Python sender in the first namespace sends 64-byte IPv4/UDP frames as fast as it can; the
receiver is the second namespace's interface counter (rx_packets), read over a steady window after a
warm-up, so no receiver process competes for the CPU.

A fourth number, `inc_inprocess_pps`, is the INC program (p4src/inc.p4) in-process: workers' 64-lane
contributions to one tenant with fan-in 3, each read-added-written into the slot's registers, every
third completing a slot and multicasting its result.

Usage: sudo .venv/bin/python scripts/bench_switch.py [--json] [--seconds S] [--packets N]
(the veth part needs root; without root it is skipped and reported as null).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from p4.config.v1 import p4info_pb2

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "p4kit" / "programs" / "table_lpm_forward.p4"
sys.path.insert(0, str(ROOT))

SRC_MAC = "02:00:00:00:01:01"
DST_IP = "10.0.2.99"  # routed by the LPM entry, not an address of the receiving host: it drops it


def build_frame(dst_mac: str = "02:00:00:00:00:fe", payload_len: int = 18) -> bytes:
    """A minimal Ethernet/IPv4/UDP frame (64 bytes on the wire with the default payload)."""
    udp_len = 8 + payload_len
    ip_len = 20 + udp_len
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        ip_len,
        1,
        0,
        64,
        17,
        0,
        socket.inet_aton("10.0.1.1"),
        socket.inet_aton(DST_IP),
    )
    s = sum(struct.unpack("!10H", ip))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 1234, 5678, udp_len, 0) + bytes(payload_len)
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(SRC_MAC.replace(":", "")) + b"\x08\x00"
    return eth + ip + udp


def compile_program() -> tuple[dict, p4info_pb2.P4Info]:
    """(BMv2 JSON dict, P4Info) of the basic LPM program, built by p4kit's compiler."""
    from p4kit.compiler.driver import compile_file
    from p4kit.compiler.p4info import build_p4info

    result = compile_file(PROGRAM)
    return result.bmv2, build_p4info(result.control_plane)


# ============================================================================ in-process
def bench_inprocess(bmv2: dict, packets: int) -> float:
    from p4kit.switch.runtime import Switch

    sw = Switch()
    sw.load_pipeline(bmv2)
    for i in range(100):  # a realistic table: 100 prefixes of various lengths
        sw.table_add(
            "MyIngress.ipv4_lpm",
            [((172 << 24) | (i << 12), 20 + i % 5)],
            "MyIngress.ipv4_forward",
            [0x020000000000 + i, 3],
        )
    sw.table_add(
        "MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 24)], "MyIngress.ipv4_forward", [0x020000000202, 2]
    )
    frame = build_frame()
    process = sw.process_packet
    assert process(1, frame) and process(1, frame)[0][0] == 2, "the program does not forward the test frame"
    for _ in range(2000):  # warm-up
        process(1, frame)
    start = time.perf_counter()
    for _ in range(packets):
        process(1, frame)
    return packets / (time.perf_counter() - start)


def bench_inc_inprocess(packets: int) -> float:
    """Contributions per second through p4src/inc.p4 (fan-in 3, 64 slots), results included."""
    import numpy as np

    from edge import protocol as proto
    from p4kit.compiler.driver import compile_file
    from p4kit.switch.runtime import Switch

    program = ROOT / "p4src" / "inc.p4"
    sw = Switch()
    sw.load_pipeline(compile_file(program, include_dirs=[program.parent]).bmv2)
    agg, delivery = "TributaryIngress.aggregation.", "TributaryEgress.delivery."
    nslots, fan_in, gw_mac, gw_ip = 64, 3, 0x00000A0001FE, 0x0A0001FE
    sw.table_add(agg + "inc_tenants", [1, 0], agg + "set_config", [0, nslots, fan_in, 1, 0, 1])
    for child, port in enumerate(range(1, fan_in + 1)):
        sw.table_add(agg + "inc_children", [1, 0, port], agg + "set_child", [child])
        sw.table_add(
            delivery + "inc_workers",
            [1, port],
            delivery + "to_worker",
            [0x00000A000100 + port, 0x0A000100 + port, proto.worker_port(1), gw_mac, gw_ip],
        )
    sw.mc_group_create(1, [(port, 0) for port in range(1, fan_in + 1)])
    values = np.arange(proto.INC_LANES, dtype=np.uint32)

    def contribution(port: int, chunk: int) -> bytes:
        slot, copy = proto.slot_of(chunk, nslots)
        header = proto.IncHeader(1, 0, slot, chunk, flags=proto.F_VERSION if copy else 0)
        payload = proto.encode(header, values)
        udp = struct.pack("!HHHH", proto.worker_port(1), proto.INC_UDP_PORT, 8 + len(payload), 0)
        ip = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            28 + len(payload),
            0,
            0,
            64,
            17,
            0,
            socket.inet_aton(f"10.0.1.{port}"),
            socket.inet_aton("10.0.1.254"),
        )
        eth = gw_mac.to_bytes(6, "big") + (0x00000A000100 + port).to_bytes(6, "big") + b"\x08\x00"
        return eth + ip + udp + payload

    # Distinct chunks so that slots really complete and recycle; built before the clock starts.
    chunks = max(1, packets // fan_in)
    frames = [(port, contribution(port, c)) for c in range(chunks) for port in range(1, fan_in + 1)]
    results = 0
    start = time.perf_counter()
    for port, frame in frames:
        out = sw.process_packet(port, frame)
        results += len(out)
    elapsed = time.perf_counter() - start
    if results != chunks * fan_in:
        raise RuntimeError(f"the INC program delivered {results} results for {chunks} chunks x {fan_in}")
    return len(frames) / elapsed


# ============================================================================ veth topology
def sh(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


@contextlib.contextmanager
def veth_topology() -> Iterator[dict[str, str]]:
    """h1 (ns) --- s1 [switch, root ns] s2 --- h2 (ns); always removed on exit."""
    tag = uuid.uuid4().hex[:6]
    names = {
        "ns1": f"p4kb{tag}1",
        "ns2": f"p4kb{tag}2",
        "s1": f"p4kb{tag}s1",
        "s2": f"p4kb{tag}s2",
        "h1": f"p4kb{tag}h1",
        "h2": f"p4kb{tag}h2",
    }
    made_ns: list[str] = []
    made_links: list[str] = []
    try:
        for i in (1, 2):
            ns, s, h = names[f"ns{i}"], names[f"s{i}"], names[f"h{i}"]
            sh("ip", "netns", "add", ns)
            made_ns.append(ns)
            sh("ip", "link", "add", s, "type", "veth", "peer", "name", h)
            made_links.append(s)
            sh("ip", "link", "set", h, "netns", ns)
            sh("ip", "addr", "add", f"10.0.{i}.1/24", "dev", h, ns=ns)
            sh("ip", "link", "set", h, "up", ns=ns)
            sh("ip", "link", "set", s, "up")
            sh("sysctl", "-qw", f"net.ipv6.conf.{s}.disable_ipv6=1", check=False)
            sh("sysctl", "-qw", f"net.ipv6.conf.{h}.disable_ipv6=1", ns=ns, check=False)
        yield names
    finally:
        for link in made_links:
            sh("ip", "link", "del", link, check=False)
        for ns in made_ns:
            sh("ip", "netns", "del", ns, check=False)


SENDER = r"""
import socket, sys, time
iface, seconds, frame = sys.argv[1], float(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
s.bind((iface, 0))
send = s.send
n = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(256):
        try:
            send(frame)
        except OSError:
            pass
    n += 256
print(n)
"""

RELAY = r"""
import socket, sys
src, dst = sys.argv[1], sys.argv[2]
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
rx.bind((src, 3))
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
tx.bind((dst, 0))
recv, send = rx.recv, tx.send
print("ready", flush=True)
while True:
    send(recv(65536))
"""


def rx_packets(ns: str, iface: str) -> int:
    return int(sh("cat", f"/sys/class/net/{iface}/statistics/rx_packets", ns=ns).stdout)


def measure(names: dict[str, str], seconds: float, warmup: float = 1.0) -> tuple[float, float]:
    """(forwarded pps at h2, offered pps from h1) over a steady window."""
    frame = build_frame()
    sender = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            names["ns1"],
            "taskset",
            "-c",
            "0",
            sys.executable,
            "-c",
            SENDER,
            names["h1"],
            str(warmup + seconds + 0.5),
            frame.hex(),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(warmup)
    c0, t0 = rx_packets(names["ns2"], names["h2"]), time.monotonic()
    time.sleep(seconds)
    c1, t1 = rx_packets(names["ns2"], names["h2"]), time.monotonic()
    out, _ = sender.communicate(timeout=30)
    sent = int(out.strip() or 0)
    return (c1 - c0) / (t1 - t0), sent / (warmup + seconds + 0.5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def program_switch(addr: str, bmv2: dict, p4info: p4info_pb2.P4Info) -> None:
    """Set the pipeline and route 10.0.2.0/24 to port 2, over P4Runtime as a controller would."""
    import grpc
    from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    channel = grpc.insecure_channel(addr)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=0)
    req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    req.config.p4info.CopyFrom(p4info)
    req.config.p4_device_config = json.dumps(bmv2).encode()
    stub.SetForwardingPipelineConfig(req)
    table = next(t for t in p4info.tables if t.preamble.name == "MyIngress.ipv4_lpm")
    action = next(a for a in p4info.actions if a.preamble.name == "MyIngress.ipv4_forward")
    w = p4runtime_pb2.WriteRequest(device_id=0)
    te = w.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry
    te.table_id = table.preamble.id
    m = te.match.add(field_id=table.match_fields[0].id)
    m.lpm.value, m.lpm.prefix_len = socket.inet_aton("10.0.2.0"), 24
    te.action.action.action_id = action.preamble.id
    te.action.action.params.add(param_id=action.params[0].id, value=bytes.fromhex("020000000202"))
    te.action.action.params.add(param_id=action.params[1].id, value=b"\x02")
    stub.Write(w)
    channel.close()


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("p4kit-switch exited early")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError("p4kit-switch did not listen")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pinned(cpu: int | None, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *cmd] if cpu is not None and shutil.which("taskset") else cmd


def bench_veth(bmv2: dict, p4info: p4info_pb2.P4Info, seconds: float, rounds: int) -> dict[str, float | None]:
    """Switch and relay run side by side, paused in turn (SIGSTOP/SIGCONT), `rounds` windows each:
    interleaving makes both see the same machine load; the best window of each is reported."""
    multi = (os.cpu_count() or 1) >= 2
    fwd_cpu = 1 if multi else None  # the sender runs on CPU 0, the forwarder on CPU 1
    with veth_topology() as names, tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        Path(tmp, "prog.json").write_text(json.dumps(bmv2))
        switch = subprocess.Popen(
            pinned(
                fwd_cpu,
                [
                    sys.executable,
                    "-m",
                    "p4kit.switch.cli",
                    "-i",
                    f"1@{names['s1']}",
                    "-i",
                    f"2@{names['s2']}",
                    "--no-p4",
                    "--",
                    "--grpc-server-addr",
                    f"127.0.0.1:{port}",
                ],
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        relay = None
        try:
            wait_port(port, switch)
            program_switch(f"127.0.0.1:{port}", bmv2, p4info)
            switch.send_signal(signal.SIGSTOP)
            relay = subprocess.Popen(
                pinned(fwd_cpu, [sys.executable, "-c", RELAY, names["s1"], names["s2"]]),
                stdout=subprocess.PIPE,
                text=True,
            )
            relay.stdout.readline()
            relay.send_signal(signal.SIGSTOP)
            pps: dict[str, list[float]] = {"veth": [], "relay": []}
            cost: dict[str, list[float]] = {"veth": [], "relay": []}
            offered: list[float] = []
            for _ in range(rounds):
                for key, proc in (("veth", switch), ("relay", relay)):
                    proc.send_signal(signal.SIGCONT)
                    c0, n0 = cpu_seconds(proc.pid), rx_packets(names["ns2"], names["h2"])
                    rate, offer = measure(names, seconds, warmup=0.7)
                    c1, n1 = cpu_seconds(proc.pid), rx_packets(names["ns2"], names["h2"])
                    proc.send_signal(signal.SIGSTOP)
                    pps[key].append(rate)
                    cost[key].append((c1 - c0) / max(1, n1 - n0) * 1e6)
                    offered.append(offer)
        finally:
            for proc in (switch, relay):
                if proc is not None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(signal.SIGCONT)
                    stop(proc)
    veth, ceiling = max(pps["veth"]), max(pps["relay"])
    return {
        "veth_pps": round(veth),
        "relay_pps": round(ceiling),
        "veth_ratio": round(veth / ceiling, 3) if ceiling else None,
        "offered_pps": round(min(offered)),
        "veth_cpu_us_per_pkt": round(sorted(cost["veth"])[len(cost["veth"]) // 2], 2),
        "relay_cpu_us_per_pkt": round(sorted(cost["relay"])[len(cost["relay"]) // 2], 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring window per veth run")
    ap.add_argument("--packets", type=int, default=200_000, help="packets for the in-process run")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved windows per forwarder")
    ap.add_argument("--no-veth", action="store_true", help="only the in-process number")
    args = ap.parse_args()
    bmv2, p4info = compile_program()
    result: dict[str, object] = {"inprocess_pps": round(bench_inprocess(bmv2, args.packets))}
    result["inc_inprocess_pps"] = round(bench_inc_inprocess(args.packets // 4))
    can_veth = os.geteuid() == 0 and shutil.which("ip") is not None and not args.no_veth
    if can_veth:
        result.update(bench_veth(bmv2, p4info, args.seconds, args.rounds))
    else:
        result.update({"veth_pps": None, "relay_pps": None, "veth_ratio": None})
    result["cpus"] = os.cpu_count()
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>14}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
