#!/usr/bin/env python3
"""Benchmark of p4kit-switch: packets per second in-process, on veths, and against a plain relay.

Numbers (--json prints them as one line; docs/switch.md explains each and where the time goes):
- `inprocess_pps`: the pipeline alone, a basic IPv4 LPM forwarding program, no I/O (wall clock),
  with the cache of pipeline results (p4kit/switch/flowcache.py: repeats of one flow are hits);
  `inprocess_nocache_pps` the same without it. `inprocess_all_miss_*cpu_us_per_pkt`: CPU per
  packet of the batch path when no packet repeats (distinct IPv4 sources), with and without it.
- `inc_*`: the INC program (p4src/inc.p4) in-process: workers' 64-lane contributions to one tenant
  with fan-in 3, each read-added-written into its slot's registers, every third completing the slot
  and multicasting the result. The packets are laid out from the program's own header types (both
  protocol versions; `--inc-rev REV` adds the program as it was at a git revision) and carry valid
  checksums; the run fails unless every chunk completes. CPU time per contribution is the primary
  figure (`inc_cpu_us_per_pkt`, `inc_inprocess_pps` = 1 / that); `inc_batched_*` feeds the same
  contributions in the port loop's batches; `inc_cpu_us_by_kind` splits it into the first, absorbed
  and completing (multicast) contribution of a chunk; `inc_wall_pps` moves with the machine's other load.
- `veth_pps`: the real p4kit-switch process forwarding between two veths whose other ends sit in
  network namespaces; `relay_pps`: the plainest Python AF_PACKET relay on the same veths, measured in
  the same run (the ceiling for any Python dataplane here); `veth_ratio = veth_pps / relay_pps`;
  `offered_pps` / `veth_offered_pps`: what the sender offered in the relay's / the switch's best window
  (a forwarder at the offered rate forwards all it is given, and its ratio says less than its CPU); and
  CPU per forwarded packet of both (`*_cpu_us_per_pkt`, with the user-space share `*_user_us_per_pkt`),
  and `veth_cpu_ratio` = relay CPU per packet / switch CPU per packet. `nocache_veth_*` are the
  same figures for the switch run with --no-flow-cache (every packet through the pipeline). These
  keys are for one repeated frame; `veth_by_traffic` has the same figures for each kind of traffic
  (TRAFFIC: a flow whose IPv4 identification changes, 8 flows interleaved, every packet from
  another source, every packet a miss), and `inprocess_by_traffic` the batch path's CPU per packet
  for each, with and without the cache. `inprocess_checksum_router` is the batch path's CPU per
  packet for a tutorials-style router that updates the IPv4 checksum (tests/p4kit/switch/
  flowcache_router.p4), one flow with a changing identification, with and without the cache;
  `--veth-program router` puts that router between the veths instead of the LPM program.
Goals (issue 14): INC >= 250,000 contributions/s in-process, veth ratio >= 0.7 (read in CPU per
packet: on a loaded machine both forwarders are held to the offered rate).

Traffic on the veths: a Python sender in the first namespace sends 64-byte IPv4/UDP frames as fast as
it can; the receiver is the second namespace's interface counter (rx_packets), read over a steady
window after a warm-up, so no receiver process competes for the CPU.

Usage: sudo .venv/bin/python scripts/bench_switch.py [--json] [--seconds S] [--packets N] [--inc-rev REV]
       [--traffic KIND ...] [--no-inc]
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


def build_frame(
    dst_mac: str = "02:00:00:00:00:fe",
    payload_len: int = 18,
    *,
    src_ip: str = "10.0.1.1",
    dst_ip: str = DST_IP,
    ident: int = 1,
) -> bytes:
    """A minimal Ethernet/IPv4/UDP frame (64 bytes on the wire with the default payload), with a
    valid IPv4 header checksum."""
    udp_len = 8 + payload_len
    ip_len = 20 + udp_len
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        ip_len,
        ident & 0xFFFF,
        0,
        64,
        17,
        0,
        socket.inet_aton(src_ip),
        socket.inet_aton(dst_ip),
    )
    s = sum(struct.unpack("!10H", ip))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 1234, 5678, udp_len, 0) + bytes(payload_len)
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(SRC_MAC.replace(":", "")) + b"\x08\x00"
    return eth + ip + udp


# The traffic the veth and in-process runs offer, by kind. The LPM program reads the destination
# MAC (copied to the source), the EtherType, the TTL and the destination address: with the cache's
# key of read bits (p4kit/switch/flowkey.py) only those make two packets different flows.
TRAFFIC = {
    "repeated": "one frame, repeated",
    "ident": "one flow whose IPv4 identification changes per packet",
    "flows8": "8 flows (destinations 10.0.2.1-8) interleaved, each with a changing identification",
    "sources": "every packet from another IPv4 source (the program never reads the source)",
    "all_miss": "every packet to another destination MAC (read: every packet a miss)",
}
DISTINCT = 1 << 17  # frames of a kind whose packets differ: more than the cache's 65,536 entries


def traffic_frames(kind: str, count: int = DISTINCT) -> list[bytes]:
    """The frames of one kind of traffic, sent in this order and then again from the start."""
    if kind == "repeated":
        return [build_frame()]
    if kind == "ident":
        return [build_frame(ident=i) for i in range(count)]
    if kind == "flows8":
        return [build_frame(dst_ip=f"10.0.2.{1 + i % 8}", ident=i // 8) for i in range(count)]
    if kind == "sources":
        return [
            build_frame(src_ip=socket.inet_ntoa(struct.pack("!I", (10 << 24) + 0x10000 + i)))
            for i in range(count)
        ]
    if kind == "all_miss":
        return [
            build_frame(
                dst_mac=f"02:00:{i >> 24 & 0xFF:02x}:{i >> 16 & 0xFF:02x}:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}"
            )
            for i in range(count)
        ]
    raise ValueError(f"unknown traffic {kind!r}: one of {', '.join(TRAFFIC)}")


def compile_program(path: Path = PROGRAM) -> tuple[dict, p4info_pb2.P4Info]:
    """(BMv2 JSON dict, P4Info) of a program (the basic LPM one by default), built by p4kit's compiler."""
    from p4kit.compiler.driver import compile_file
    from p4kit.compiler.p4info import build_p4info

    result = compile_file(path)
    return result.bmv2, build_p4info(result.control_plane)


# ============================================================================ in-process
def bench_inprocess(bmv2: dict, packets: int, flow_cache: bool = True) -> float:
    from p4kit.switch.runtime import Switch

    sw = Switch(flow_cache=flow_cache)
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


def bench_inprocess_misses(bmv2: dict, packets: int, flow_cache: bool, kind: str = "all_miss") -> float:
    """CPU us per packet of the batch path (32 packets a batch, as the port loop hands them over)
    for one kind of traffic (TRAFFIC); "all_miss" is what the cache costs when it never hits."""
    from p4kit.switch.runtime import Switch

    sw = Switch(flow_cache=flow_cache)
    sw.load_pipeline(bmv2)
    sw.table_add(
        "MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 24)], "MyIngress.ipv4_forward", [0x020000000202, 2]
    )
    frames = traffic_frames(kind, packets)
    frames = (frames * (packets // len(frames) + 1))[:packets]
    start = time.process_time()
    for i in range(0, packets, 32):
        sw.process_batch(1, frames[i : i + 32])
    return (time.process_time() - start) / packets * 1e6


ROUTER = ROOT / "tests" / "p4kit" / "switch" / "flowcache_router.p4"


def bench_router_inprocess(packets: int, flow_cache: bool) -> float:
    """CPU us per packet of the batch path for a tutorials-style router that verifies and updates
    the IPv4 checksum, on one flow whose identification changes per packet: with the cache, each hit
    updates the cached checksum by the identification's difference (p4kit/switch/flowkey.py)."""
    from p4kit.compiler.driver import compile_file
    from p4kit.switch.runtime import Switch

    sw = Switch(flow_cache=flow_cache)
    sw.load_pipeline(compile_file(ROUTER).bmv2)
    sw.table_add("I.ipv4_lpm", [((10 << 24) | (2 << 8), 24)], "I.ipv4_forward", [0x020000000202, 2])
    frames = traffic_frames("ident", packets)
    out = sw.process_batch(1, frames[:32])
    if len(out) != 32 or any(port != 2 for port, _ in out):
        raise RuntimeError("the router does not forward the test frames")
    start = time.process_time()
    for i in range(0, packets, 32):
        sw.process_batch(1, frames[i : i + 32])
    return (time.process_time() - start) / packets * 1e6


INC_PORT, WORKER_PORT = 47000, 48001
INC_F_VERSION = 0x04


def inc_program(rev: str | None = None) -> tuple[str, dict]:
    """(label, BMv2 JSON) of p4src/inc.p4 as it is in the tree, or at git revision `rev`."""
    from p4kit.compiler.driver import compile_file

    if rev is None:
        program = ROOT / "p4src" / "inc.p4"
        return "tree", compile_file(program, include_dirs=[program.parent]).bmv2
    with tempfile.TemporaryDirectory() as tmp:
        names = subprocess.run(
            ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev, "p4src"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for name in names:
            text = subprocess.run(
                ["git", "-C", str(ROOT), "show", f"{rev}:{name}"], check=True, capture_output=True
            ).stdout
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text)
        program = Path(tmp, "p4src", "inc.p4")
        return rev, compile_file(program, include_dirs=[program.parent]).bmv2


def _fields(bmv2: dict, instance: str) -> list[tuple[str, int]]:
    htype = next(h["header_type"] for h in bmv2["headers"] if h["name"] == instance)
    fields = next(t["fields"] for t in bmv2["header_types"] if t["name"] == htype)
    return [(f[0], f[1]) for f in fields]


def _pack(fields: list[tuple[str, int]], values: dict[str, int]) -> bytes:
    v, width = 0, 0
    for name, w in fields:
        v = (v << w) | (values.get(name, 0) & ((1 << w) - 1))
        width += w
    return v.to_bytes(width // 8, "big")


def _csum(data: bytes) -> int:
    """Internet checksum: 2**16 == 1 (mod 0xFFFF), so the big-endian integer of the bytes is the
    ones'-complement sum of their 16-bit words, mod 0xFFFF (a nonzero sum that is 0 mod 0xFFFF is 0xFFFF)."""
    if len(data) % 2:
        data += b"\0"
    n = int.from_bytes(data, "big")
    s = n % 0xFFFF or (0xFFFF if n else 0)
    return 0xFFFF - s


class IncBench:
    """Workers' contributions through the INC program, laid out from the program's own headers
    (so the same code drives every protocol version): fan-in 3, one tenant, 64 slots."""

    def __init__(
        self, bmv2: dict, fan_in: int = 3, nslots: int = 64, native: bool | None = None, wide: bool = False
    ) -> None:
        from p4kit.switch.runtime import Switch

        self.bmv2, self.fan_in, self.nslots = bmv2, fan_in, nslots
        self.inc_fields = _fields(bmv2, "inc")
        # wide: 256 values (four chunks, format wide32) a contribution, as workers send int32 sums with
        # --values-per-packet 256 (docs/protocol.md, "Wide int32"); else 64
        self.wide = wide
        self.step = 4 if wide else 1  # chunk numbers a contribution covers
        lanes = [f"w{i}" for i in range(4)] if wide else ["values"]
        self.lanes = [(f"{h}.{n}", w) for h in lanes for n, w in _fields(bmv2, h)]
        self.version = 2 if any(n == "epoch" for n, _ in self.inc_fields) else 1
        self.epoch, self.gw_mac, self.gw_ip = 0x5EED, 0x00000A0001FE, 0x0A0001FE
        sw = self.sw = Switch(native=native)
        sw.load_pipeline(bmv2)
        agg, delivery = "TributaryIngress.aggregation.", "TributaryEgress.delivery."
        config = {
            "base": 0,
            "nslots": nslots,
            "fan_in": fan_in,
            "is_root": 1,
            "parent_port": 0,
            "mcast_grp": 1,
            "repair_grp": 1,
            "epoch": self.epoch,
            "switch_ip": self.gw_ip,
        }
        names = sw.action_info(agg + "set_config").param_names
        sw.table_add(agg + "inc_tenants", [1, 0], agg + "set_config", {n: config[n] for n in names})
        keys = [k.name for k in sw.table_info(agg + "inc_children").keys]
        worker = {
            "mac": 0,
            "ip": 0,
            "udp_port": WORKER_PORT,
            "switch_mac": self.gw_mac,
            "switch_ip": self.gw_ip,
        }
        for child, port in enumerate(range(1, fan_in + 1)):
            by_key = {"tenant": 1, "round": 0, "ingress_port": port, "src_addr": self.worker_ip(port)}
            sw.table_add(
                agg + "inc_children", [by_key[k.rsplit(".", 1)[1]] for k in keys], agg + "set_child", [child]
            )
            worker.update(mac=0x00000A000100 + port, ip=self.worker_ip(port))
            params = sw.action_info(delivery + "to_worker").param_names
            sw.table_add(
                delivery + "inc_workers", [1, port], delivery + "to_worker", {n: worker[n] for n in params}
            )
        sw.mc_group_create(1, [(port, 0) for port in range(1, fan_in + 1)])

    @staticmethod
    def worker_ip(port: int) -> int:
        return 0x0A000100 + port

    def contribution(self, port: int, chunk: int) -> bytes:
        slot, copy = chunk % self.nslots, (chunk // self.nslots) % 2
        header = _pack(
            self.inc_fields,
            {
                "version": self.version,
                "kind": 0,
                "flags": INC_F_VERSION if copy else 0,
                "tenant": 1,
                "round": 0,
                "slot": slot,
                "count": 1,
                "chunk": chunk,
                "epoch": self.epoch,
                "format": 3 if self.wide else 0,
            },
        )
        payload = header + _pack(
            self.lanes, {name: i * 1000 + port for i, (name, _) in enumerate(self.lanes)}
        )
        src, dst = self.worker_ip(port), self.gw_ip
        udp_len = 8 + len(payload)
        pseudo = struct.pack("!IIBBH", src, dst, 0, 17, udp_len)
        udp = struct.pack("!HHHH", WORKER_PORT, INC_PORT, udp_len, 0)
        udp = udp[:6] + struct.pack("!H", _csum(pseudo + udp + payload)) + udp[8:]
        ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + udp_len, 0, 0, 64, 17, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
        eth = self.gw_mac.to_bytes(6, "big") + (0x00000A000100 + port).to_bytes(6, "big") + b"\x08\x00"
        return eth + ip + udp + payload

    def frames(self, packets: int, first_chunk: int = 0) -> list[tuple[int, bytes]]:
        chunks = max(1, packets // self.fan_in)
        return [
            (port, self.contribution(port, self.step * (first_chunk + c)))
            for c in range(chunks)
            for port in range(1, self.fan_in + 1)
        ]

    def run(self, frames: list[tuple[int, bytes]]) -> dict[str, float]:
        """One packet at a time (process_packet): contributions per second and CPU per
        contribution; every chunk must complete."""
        process = self.sw.process_packet
        results = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for port, frame in frames:
            results += len(process(port, frame))
        return self._rates(frames, results, time.process_time() - cpu0, time.perf_counter() - wall0)

    def run_batched(self, frames: list[tuple[int, bytes]], batch: int) -> dict[str, float]:
        """As the switch's port loop hands them over (process_batch): `batch` chunks' contributions
        from port 1, then the same chunks from port 2, then from port 3 (each completes its slot)."""
        chunks = len(frames) // self.fan_in
        grouped = []
        for c0 in range(0, chunks, batch):
            for child in range(self.fan_in):
                grouped.append(
                    (
                        child + 1,
                        [frames[c * self.fan_in + child][1] for c in range(c0, min(chunks, c0 + batch))],
                    )
                )
        process = self.sw.process_batch
        results = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for port, group in grouped:
            results += len(process(port, group))
        return self._rates(frames, results, time.process_time() - cpu0, time.perf_counter() - wall0)

    def run_by_kind(self, frames: list[tuple[int, bytes]]) -> dict[str, float]:
        """CPU per contribution of each kind, one at a time: the first of a chunk (opens the cell),
        the second (absorbed: added, counted, dropped) and the last (completes the cell: the result
        is multicast to the fan-in's children, each replica through egress, checksum and deparse).
        Blocks of `nslots` chunks take their first contributions, then their second, then their last."""
        process = self.sw.process_packet
        cpu = [0.0] * self.fan_in
        results = 0
        chunks = len(frames) // self.fan_in
        for c0 in range(0, chunks, self.nslots // self.step):
            for child in range(self.fan_in):
                group = [
                    frames[c * self.fan_in + child]
                    for c in range(c0, min(chunks, c0 + self.nslots // self.step))
                ]
                t0 = time.process_time()
                for port, frame in group:
                    results += len(process(port, frame))
                cpu[child] += time.process_time() - t0
        if results != chunks * self.fan_in:
            raise RuntimeError(f"the INC program delivered {results} results for {len(frames)} contributions")
        names = ["first", *(["absorbed"] * (self.fan_in - 2)), "completing"]
        return {name: round(cpu[i] / chunks * 1e6, 2) for i, name in enumerate(names)}

    @staticmethod
    def _rates(frames: list, results: int, cpu: float, wall: float) -> dict[str, float]:
        if results != len(frames):
            raise RuntimeError(f"the INC program delivered {results} results for {len(frames)} contributions")
        return {"pps": len(frames) / wall, "cpu_pps": len(frames) / cpu, "cpu_us": cpu / len(frames) * 1e6}


def bench_inc_inprocess(
    packets: int, rev: str | None = None, batch: int = 32, wide: bool = False
) -> dict[str, object]:
    """Per packet, then batched as the port loop batches (`batch` chunks per port and turn)."""
    label, bmv2 = inc_program(rev)
    bench = IncBench(bmv2, wide=wide)
    bench.run(bench.frames(3000))  # warm-up; each run goes on with later chunks (older ones are stale)
    single = bench.run(bench.frames(packets, first_chunk=1000))
    batched = bench.run_batched(bench.frames(packets, first_chunk=1000 + packets), batch)
    kinds = bench.run_by_kind(bench.frames(packets, first_chunk=1000 + 2 * packets))
    return {
        "program": label,
        "protocol": bench.version,
        "data_plane": "native" if bench.sw.native_active else f"python ({bench.sw.native_reason})",
        **single,
        "batched": batched,
        "by_kind": kinds,
    }


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
iface, seconds, path, size = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
blob = open(path, "rb").read()
frames = [blob[i : i + size] for i in range(0, len(blob), size)]
frames = frames * max(1, 256 // len(frames))  # whole rounds of 256
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
s.bind((iface, 0))
send = s.send
n = i = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for frame in frames[i : i + 256]:
        try:
            send(frame)
        except OSError:
            pass
    n += 256
    i = (i + 256) % len(frames)
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


def rx_packets(ns: str, iface: str, way: str = "rx") -> int:
    """The interface's counter of packets received (`way` "tx": sent)."""
    return int(sh("cat", f"/sys/class/net/{iface}/statistics/{way}_packets", ns=ns).stdout)


def measure(
    names: dict[str, str], seconds: float, warmup: float = 1.0, frames_file: str | None = None
) -> tuple[float, float]:
    """(forwarded pps at h2, offered pps from h1) over a steady window; the sender cycles through
    the frames of `frames_file` (64-byte frames back to back; default: the one repeated frame)."""
    if frames_file is None:
        with tempfile.NamedTemporaryFile(suffix=".frames", delete=False) as f:
            f.write(build_frame())
        try:
            return measure(names, seconds, warmup, f.name)
        finally:
            os.unlink(f.name)
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
            frames_file,
            str(len(build_frame())),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(warmup)
    # offered and forwarded over the same window: the sender's interface counter beside the
    # receiver's (the sender's own count would include its start-up, and read below the forwarded rate)
    s0, c0, t0 = (
        rx_packets(names["ns1"], names["h1"], "tx"),
        rx_packets(names["ns2"], names["h2"]),
        time.monotonic(),
    )
    time.sleep(seconds)
    s1, c1, t1 = (
        rx_packets(names["ns1"], names["h1"], "tx"),
        rx_packets(names["ns2"], names["h2"]),
        time.monotonic(),
    )
    sender.communicate(timeout=30)
    return (c1 - c0) / (t1 - t0), (s1 - s0) / (t1 - t0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def program_switch(addr: str, bmv2: dict, p4info: p4info_pb2.P4Info, control: str = "MyIngress") -> None:
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
    table = next(t for t in p4info.tables if t.preamble.name == f"{control}.ipv4_lpm")
    action = next(a for a in p4info.actions if a.preamble.name == f"{control}.ipv4_forward")
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


def cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process so far (/proc/PID/stat utime, stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> float:
    return sum(cpu_split(pid))


def pinned(cpu: int | None, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *cmd] if cpu is not None and shutil.which("taskset") else cmd


def bench_veth(
    bmv2: dict,
    p4info: p4info_pb2.P4Info,
    seconds: float,
    rounds: int,
    kinds: list[str],
    control: str = "MyIngress",
) -> dict[str, object]:
    """Switch and relay run side by side, paused in turn (SIGSTOP/SIGCONT), `rounds` windows each
    per kind of traffic: interleaving makes both see the same machine load; the best window's rate
    and the median window's CPU per packet of each are reported."""
    multi = (os.cpu_count() or 1) >= 2
    fwd_cpu = 1 if multi else None  # the sender runs on CPU 0, the forwarder on CPU 1
    with veth_topology() as names:
        # The switch with its cache of results (the default), the same without it, and the relay.
        procs: dict[str, subprocess.Popen] = {}
        try:
            for key, extra in (("veth", []), ("nocache_veth", ["--no-flow-cache"])):
                port = free_port()
                procs[key] = switch = subprocess.Popen(
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
                            *extra,
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
                wait_port(port, switch)
                program_switch(f"127.0.0.1:{port}", bmv2, p4info, control)
                switch.send_signal(signal.SIGSTOP)
            procs["relay"] = relay = subprocess.Popen(
                pinned(fwd_cpu, [sys.executable, "-c", RELAY, names["s1"], names["s2"]]),
                stdout=subprocess.PIPE,
                text=True,
            )
            relay.stdout.readline()
            relay.send_signal(signal.SIGSTOP)
            by_kind = {}
            for kind in kinds:
                with tempfile.NamedTemporaryFile(suffix=".frames", delete=False) as f:
                    f.write(b"".join(traffic_frames(kind)))
                try:
                    by_kind[kind] = _veth_windows(names, procs, seconds, rounds, f.name)
                finally:
                    os.unlink(f.name)
        finally:
            for proc in procs.values():
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
                stop(proc)
    # The repeated frame's figures keep their keys; every kind of traffic is in veth_by_traffic.
    out: dict[str, object] = {}
    if "repeated" in by_kind:
        out.update(by_kind["repeated"])
    out["veth_by_traffic"] = {
        kind: {
            "traffic": TRAFFIC[kind],
            "switch_cpu_us_per_pkt": r["veth_cpu_us_per_pkt"],
            "nocache_cpu_us_per_pkt": r["nocache_veth_cpu_us_per_pkt"],
            "relay_cpu_us_per_pkt": r["relay_cpu_us_per_pkt"],
            "cpu_ratio": r["veth_cpu_ratio"],
            "nocache_cpu_ratio": r["nocache_veth_cpu_ratio"],
            "switch_user_us_per_pkt": r["veth_user_us_per_pkt"],
            "relay_user_us_per_pkt": r["relay_user_us_per_pkt"],
            "switch_pps": r["veth_pps"],
            "nocache_pps": r["nocache_veth_pps"],
            "relay_pps": r["relay_pps"],
        }
        for kind, r in by_kind.items()
    }
    return out


def _veth_windows(
    names: dict[str, str], procs: dict[str, subprocess.Popen], seconds: float, rounds: int, frames_file: str
) -> dict[str, float | None]:
    """`rounds` windows of each forwarder in turn (the others stopped) on one kind of traffic."""
    pps: dict[str, list[float]] = {k: [] for k in procs}
    cost: dict[str, list[float]] = {k: [] for k in procs}
    user: dict[str, list[float]] = {k: [] for k in procs}
    offered: dict[str, list[float]] = {k: [] for k in procs}
    for _ in range(rounds):
        for key, proc in procs.items():
            proc.send_signal(signal.SIGCONT)
            c0, n0 = cpu_split(proc.pid), rx_packets(names["ns2"], names["h2"])
            rate, offer = measure(names, seconds, warmup=0.7, frames_file=frames_file)
            c1, n1 = cpu_split(proc.pid), rx_packets(names["ns2"], names["h2"])
            proc.send_signal(signal.SIGSTOP)
            pps[key].append(rate)
            forwarded = max(1, n1 - n0)
            cost[key].append((sum(c1) - sum(c0)) / forwarded * 1e6)
            user[key].append((c1[0] - c0[0]) / forwarded * 1e6)
            offered[key].append(offer)
    ceiling = max(pps["relay"])

    def median(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    def offered_at_best(key: str) -> int:
        """What the sender offered in the window of `key`'s best forwarded rate (the same window)."""
        best = max(range(len(pps[key])), key=pps[key].__getitem__)
        return round(offered[key][best])

    out: dict[str, float | None] = {"relay_pps": round(ceiling), "offered_pps": offered_at_best("relay")}
    relay_cpu = median(cost["relay"])
    for key in ("veth", "nocache_veth"):
        veth = max(pps[key])
        out[f"{key}_pps"] = round(veth)
        out[f"{key}_offered_pps"] = offered_at_best(key)
        out[f"{key}_ratio"] = round(veth / ceiling, 3) if ceiling else None
        out[f"{key}_cpu_us_per_pkt"] = round(median(cost[key]), 2)
        # user-space share (the rest is the kernel: receive, transmit into the veth, the peer's stack)
        out[f"{key}_user_us_per_pkt"] = round(median(user[key]), 2)
        # the goal's ratio read in CPU per packet: the relay's cost over the switch's
        out[f"{key}_cpu_ratio"] = round(relay_cpu / median(cost[key]), 3)
    out["relay_cpu_us_per_pkt"] = round(relay_cpu, 2)
    out["relay_user_us_per_pkt"] = round(median(user["relay"]), 2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring window per veth run")
    ap.add_argument("--packets", type=int, default=200_000, help="packets for the in-process run")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved windows per forwarder")
    ap.add_argument("--no-veth", action="store_true", help="only the in-process number")
    ap.add_argument(
        "--inc-rev",
        action="append",
        default=[],
        metavar="REV",
        help="also run the INC program as it was at git revision REV (repeatable)",
    )
    ap.add_argument(
        "--traffic",
        action="append",
        choices=list(TRAFFIC),
        help="kinds of traffic for the veth and in-process batch runs (repeatable; default all: "
        + "; ".join(f"{k}: {v}" for k, v in TRAFFIC.items())
        + ")",
    )
    ap.add_argument("--no-inc", action="store_true", help="leave out the INC program's runs")
    ap.add_argument(
        "--veth-program",
        choices=("lpm", "router"),
        default="lpm",
        help="the program between the veths: the basic LPM one (default) or the tutorials-style router "
        "that verifies and updates the IPv4 checksum (tests/p4kit/switch/flowcache_router.p4)",
    )
    ap.add_argument(
        "--no-native",
        action="store_true",
        help="measure the Python data plane (the switch processes get P4KIT_NATIVE=0, as with "
        "p4kit-switch --no-native): the baseline the native data plane's figures compare with",
    )
    args = ap.parse_args()
    args.traffic = args.traffic or list(TRAFFIC)
    if args.no_native:
        os.environ["P4KIT_NATIVE"] = "0"  # in-process switches and the p4kit-switch processes alike
    bmv2, p4info = compile_program()
    result: dict[str, object] = {
        "inprocess_pps": round(bench_inprocess(bmv2, args.packets)),
        "inprocess_nocache_pps": round(bench_inprocess(bmv2, args.packets, flow_cache=False)),
        "inprocess_all_miss_cpu_us_per_pkt": round(bench_inprocess_misses(bmv2, args.packets, True), 2),
        "inprocess_all_miss_nocache_cpu_us_per_pkt": round(
            bench_inprocess_misses(bmv2, args.packets, False), 2
        ),
        "inprocess_by_traffic": {
            kind: {
                "cache_cpu_us_per_pkt": round(bench_inprocess_misses(bmv2, args.packets, True, kind), 2),
                "nocache_cpu_us_per_pkt": round(bench_inprocess_misses(bmv2, args.packets, False, kind), 2),
            }
            for kind in args.traffic
        },
        "inprocess_checksum_router": {
            "cache_cpu_us_per_pkt": round(bench_router_inprocess(args.packets, True), 2),
            "nocache_cpu_us_per_pkt": round(bench_router_inprocess(args.packets, False), 2),
        },
    }
    for rev in [None, *args.inc_rev] if not args.no_inc else []:
        inc = bench_inc_inprocess(args.packets // 4, rev)
        key = "inc" if rev is None else f"inc@{rev}"
        # CPU time is the primary figure: the wall clock moves with whatever else runs on the cores
        result[f"{key}_inprocess_pps"] = round(inc["cpu_pps"])
        result[f"{key}_cpu_us_per_pkt"] = round(inc["cpu_us"], 2)
        result[f"{key}_wall_pps"] = round(inc["pps"])
        result[f"{key}_protocol"] = inc["protocol"]
        result[f"{key}_batched_pps"] = round(inc["batched"]["cpu_pps"])
        result[f"{key}_batched_cpu_us_per_pkt"] = round(inc["batched"]["cpu_us"], 2)
        result[f"{key}_cpu_us_by_kind"] = inc["by_kind"]
        result[f"{key}_data_plane"] = inc["data_plane"]
    if not args.no_inc:
        # 256 values a contribution (wide32): per packet, and per value against 64 a packet
        wide = bench_inc_inprocess(args.packets // 4, None, wide=True)
        result["inc_wide_inprocess_pps"] = round(wide["cpu_pps"])
        result["inc_wide_cpu_us_per_pkt"] = round(wide["cpu_us"], 2)
        result["inc_wide_batched_cpu_us_per_pkt"] = round(wide["batched"]["cpu_us"], 2)
        result["inc_wide_cpu_us_by_kind"] = wide["by_kind"]
        result["inc_wide_ns_per_value"] = round(wide["batched"]["cpu_us"] / 256 * 1000, 2)
        result["inc_ns_per_value"] = round(float(result["inc_batched_cpu_us_per_pkt"]) / 64 * 1000, 2)
    can_veth = os.geteuid() == 0 and shutil.which("ip") is not None and not args.no_veth
    if can_veth:
        if args.veth_program == "router":
            result["veth_program"] = "router"
            result.update(bench_veth(*compile_program(ROUTER), args.seconds, args.rounds, args.traffic, "I"))
        else:
            result.update(bench_veth(bmv2, p4info, args.seconds, args.rounds, args.traffic))
    else:
        result.update({"veth_pps": None, "relay_pps": None, "veth_ratio": None, "veth_cpu_ratio": None})
    result["cpus"] = os.cpu_count()
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>14}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
