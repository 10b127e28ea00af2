"""An in-process network for the INC program: real p4kit switches running p4src/inc.p4, programmed by
the controller's own planner and installer over real P4Runtime (gRPC on loopback), and workers running
the worker library's own stream logic (edge.worker.ReduceStream), connected by links that lose,
duplicate and reorder packets in virtual time.

Why not Mininet: this runs in the fast suite in seconds, replays exactly from a seed, and can drive
30 % loss and duplication through thousands of chunks - what a cell's reuse and its shadow copy must
survive. What it leaves out: kernels, sockets and real time (the Mininet tests cover those).
"""

from __future__ import annotations

import heapq
import itertools
import random
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from controller.fabric import Fabric, FabricLink, FabricSwitch, HostAttachment
from controller.inc.allocation import Allocator
from controller.inc.install import JobInstaller
from controller.inc.jobs import JobPlan, plan_job
from controller.p4rt import P4InfoIndex
from controller.provision import connect_all, provision
from edge import protocol as P  # noqa: N812
from edge.worker import IncJob, PathTiming, ReduceStream, TransferStats
from p4kit.switch.p4runtime_server import P4RuntimeServer
from p4kit.switch.runtime import Switch
from tests.inprocess import serve_switches
from tests.lockstep import run_ranks
from topo.pipeline import build_pipeline


def chain_fabric(hosts: dict[str, int], rtt_ms: float = 10.0) -> Fabric:
    """Sites S1..Sn in a chain (S1 - S2 - ... - Sn), `hosts[site]` workers each, one WAN link between
    neighbours. Host k of site i is "S{i}h{k}" at 10.0.i.k on port k."""
    names = list(hosts)
    switches = []
    for i, name in enumerate(names, start=1):
        atts = [
            HostAttachment(f"{name}h{k}", f"10.0.{i}.{k}", f"00:00:0a:00:{i:02x}:{k:02x}", k)
            for k in range(1, hosts[name] + 1)
        ]
        ports = {}
        nxt = hosts[name] + 1
        for j in (i - 2, i):  # left and right neighbours
            if 0 <= j < len(names):
                ports[names[j]] = nxt
                nxt += 1
        switches.append(
            FabricSwitch(
                name,
                "",
                i,
                f"10.0.{i}.0/24",
                atts,
                ports,
                inc_ip=f"10.0.{i}.254",
                inc_mac=f"00:00:0a:00:{i:02x}:fe",
            )
        )
    links = [FabricLink(a, b, rtt_ms) for a, b in itertools.pairwise(names)]
    return Fabric(switches, links)


@dataclass
class LinkModel:
    loss: float = 0.0
    duplicate: float = 0.0
    jitter_s: float = 0.0  # uniform extra delay per copy: reorders packets
    host_delay_s: float = 0.0002


@dataclass
class SimWorker:
    host: str
    tenant: int
    ip: str
    mac: str
    switch: str
    port: int
    job: IncJob
    # the lane arrays of its successive reduce_lanes calls; (rows, fmt) for a packed format, (rows, fmt,
    # kind) for a max-reduction, (rows, fmt, kind, present, counts) for sparse rows
    calls: list[np.ndarray | tuple]
    results: list[np.ndarray] = field(default_factory=list)
    stream: ReduceStream | None = None
    next_chunk: int = 0
    stats: TransferStats = field(default_factory=TransferStats)
    timer: int = 0  # generation of the pending wake-up (older ones are ignored)
    timing: PathTiming | None = None
    padding: set[int] = field(default_factory=set)  # calls inserted to align a packed call (see _step)

    @property
    def answers(self) -> list[np.ndarray]:
        """The results of the calls it was given (without the padding calls)."""
        return [r for i, r in enumerate(self.results) if i not in self.padding]


class SimNetwork:
    def __init__(self, fabric: Fabric, model: LinkModel, seed: int) -> None:
        self.fabric, self.model, self.rng = fabric, model, random.Random(seed)
        self.now = 0.0
        self.events: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = itertools.count()
        self.switches: dict[str, Switch] = {}
        self.servers: list[P4RuntimeServer] = []
        self.workers: dict[tuple[str, int], SimWorker] = {}  # (host, tenant)
        self.peer: dict[tuple[str, int], tuple[str, int]] = {}
        self.host_at: dict[tuple[str, int], str] = {}
        self.one_way: dict[tuple[str, str], float] = {}
        for sw in fabric.switches:
            for h in sw.hosts:
                self.host_at[(sw.name, h.port)] = h.name
            for other, port in sw.neighbour_ports.items():
                self.peer[(sw.name, port)] = (other, fabric.switch(other).neighbour_ports[sw.name])
        for link in fabric.links:
            self.one_way[(link.a, link.b)] = self.one_way[(link.b, link.a)] = link.rtt_ms / 2000
        self.forwarded = 0

    # --- the control plane, for real -----------------------------------------------------------------
    def start_switches(self) -> None:
        self.switches, self.servers = serve_switches(self.fabric)

    def install(self, tmp_dir, jobs: list[tuple[int, list[str], int]]) -> list[JobPlan]:  # type: ignore[no-untyped-def]
        """Provision every switch and install each (tenant, hosts, slots) job through the installer."""
        pipeline = build_pipeline(tmp_dir)
        conns = connect_all(self.fabric)
        try:
            provision(self.fabric, conns, pipeline)
            allocator = Allocator([s.name for s in self.fabric.switches])
            installer = JobInstaller(conns, P4InfoIndex(pipeline.p4info))
            plans = []
            for tenant, hosts, slots in jobs:
                plan = plan_job(self.fabric, allocator, tenant, [[hosts]], slots)
                installer.install(plan)
                plans.append(plan)
            return plans
        finally:
            for c in conns.values():
                c.close()

    def close(self) -> None:
        for s in self.servers:
            s.stop(0)

    # --- virtual time -----------------------------------------------------------------------------------
    def at(self, t: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self.events, (t, next(self.seq), fn))

    def _copies(self, base_delay: float) -> list[float]:
        m = self.model
        if self.rng.random() < m.loss:
            return []
        delays = [base_delay + self.rng.uniform(0, m.jitter_s)]
        if self.rng.random() < m.duplicate:
            delays.append(base_delay + self.rng.uniform(0, m.jitter_s))
        return delays

    def to_switch(self, name: str, port: int, frame: bytes, delay: float) -> None:
        for d in self._copies(delay):
            self.at(
                self.now + d, lambda name=name, port=port, frame=frame: self._switch_rx(name, port, frame)
            )

    def _switch_rx(self, name: str, port: int, frame: bytes) -> None:
        for out_port, out in self.switches[name].process_packet(port, frame):
            self.forwarded += 1
            key = (name, out_port)
            if key in self.peer:
                peer, peer_port = self.peer[key]
                self.to_switch(peer, peer_port, out, self.one_way[(name, peer)])
            elif key in self.host_at:
                host = self.host_at[key]
                for d in self._copies(self.model.host_delay_s):
                    self.at(self.now + d, lambda host=host, out=out: self._host_rx(host, out))

    def _host_rx(self, host: str, frame: bytes) -> None:
        """What the host's kernel does: check the UDP checksum, hand the payload to the bound port."""
        if len(frame) < 42 or frame[23] != 17:
            return
        src, dst = frame[26:30], frame[30:34]
        sport, dport, length, _ = struct.unpack("!HHHH", frame[34:42])
        udp = frame[34 : 34 + length]
        pseudo = src + dst + struct.pack("!BBH", 0, 17, length)
        if P.ones_complement_sum(pseudo + udp) != 0xFFFF:
            return  # a corrupted datagram: the kernel drops it
        w = self.workers.get((host, dport - P.WORKER_PORT_BASE))
        if w is None or w.stream is None:
            return
        w.stream.receive(udp[8:], (socket.inet_ntoa(src), sport), self.now)
        self._step(w)

    # --- workers -----------------------------------------------------------------------------------------
    def add_worker(self, w: SimWorker) -> None:
        self.workers[(w.host, w.tenant)] = w
        self.at(0.0, lambda: self._step(w))

    def _transmit(self, w: SimWorker) -> Callable[[bytes], bool]:
        sw = self.fabric.switch(w.switch)

        def send(payload: bytes) -> bool:
            frame = P.frame(
                w.mac, sw.inc_mac, w.ip, sw.inc_ip, P.worker_port(w.tenant), P.INC_UDP_PORT, payload
            )
            self.to_switch(w.switch, w.port, frame, self.model.host_delay_s)
            return True

        return send

    def _step(self, w: SimWorker) -> None:
        if w.timing is None:
            w.timing = PathTiming.for_job(w.job)
        while True:
            if w.stream is not None and w.stream.finished:
                w.results.append(w.stream.result)
                w.stream = None
            if w.stream is None:
                if len(w.results) == len(w.calls):
                    return
                call = w.calls[len(w.results)]
                lanes, fmt, kind, present, counts = (
                    (*call, P.KIND_SUM, None, None)[:5]
                    if isinstance(call, tuple)
                    else (call, 0, P.KIND_SUM, None, None)
                )
                gap = -w.next_chunk % P.GROUPS[fmt]
                if gap:  # as IncWorker.reduce_lanes: the chunk numbers up to a packed call's start are sent
                    w.calls.insert(len(w.results), np.zeros((gap, P.INC_LANES), dtype=np.uint32))
                    w.padding.add(len(w.results))
                    lanes, fmt, kind = w.calls[len(w.results)], P.FMT_INT32, P.KIND_SUM
                    present = counts = None
                w.stream = ReduceStream(
                    w.job,
                    lanes,
                    kind,
                    w.next_chunk,
                    w.timing,
                    w.stats,
                    self._transmit(w),
                    self.now,
                    fmt,
                    present,
                    counts,
                )
                w.next_chunk = (w.next_chunk + P.GROUPS[fmt] * lanes.shape[0]) % w.stream.space
            w.stream.pump(self.now)
            w.stream.check_stall(self.now)
            if not w.stream.finished:
                break
        w.timer += 1
        gen = w.timer
        self.at(max(w.stream.wakeup(self.now), self.now + 1e-6), lambda: gen == w.timer and self._step(w))

    def run(self, max_events: int = 2_000_000) -> None:
        for _ in range(max_events):
            if not self.events:
                return
            self.now, _, fn = heapq.heappop(self.events)
            fn()
        raise RuntimeError(f"the simulation did not finish within {max_events} events")

    def lockstep_workers(self, plan: JobPlan, hosts: list[str]) -> list[SimWorker]:
        """One worker per host of an installed job, registered with the network, for lockstep(): their
        calls come from the lockstep function, so they start with none."""
        workers = []
        for host in hosts:
            sw, att = self.fabric.host(host)
            job = IncJob.from_spec(plan.worker_spec(host, stall_timeout_s=3600.0))
            workers.append(SimWorker(host, plan.tenant, att.ip, att.mac, sw.name, att.port, job, []))
            self.workers[(host, plan.tenant)] = workers[-1]
        return workers

    def lockstep(
        self, workers: list[SimWorker], fn: Callable[[int, Callable[..., np.ndarray]], object]
    ) -> list:
        """Run `fn(rank, reduce)` for every worker at once, each in its own thread, where `reduce(lanes,
        kind, fmt=0)` is that worker's lane reduction through the switches: once every worker has made
        its next call, the network runs them all (in virtual time) and each call returns its result.
        So whole allreduces (edge.formats.allreduce_with) run on the real switch program, with the
        network's faults. Every worker must make the same number of calls."""
        import threading

        def run_all() -> None:
            for w in workers:
                self.at(self.now, lambda w=w: self._step(w))
            self.run()

        barrier = threading.Barrier(len(workers), action=run_all)

        def worker(rank: int) -> object:
            w = workers[rank]

            def reduce(
                lanes: np.ndarray,
                kind: int,
                fmt: int = P.FMT_INT32,
                present: np.ndarray | None = None,
                counts: np.ndarray | None = None,
            ) -> np.ndarray:
                w.calls.append((lanes, fmt, kind, present, counts))
                barrier.wait(timeout=600)
                return w.results[-1]

            return fn(rank, reduce)

        return run_ranks(len(workers), worker, barrier)
