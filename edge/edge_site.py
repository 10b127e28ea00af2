"""One site's Edge-INC process on its edge host: the paced sender, the stage and the start agreement
around them, for every round of a schedule. `python -m edge.edge_site SPEC.json` (see `SiteSpec`).

Per round the site (1) agrees on the clique's common start, (2) sends its vector once as a paced
stream (the switches replicate it to the clique; with `replicate = "sender"` the site sends one copy per
member itself, for tests without the P4 switches), (3) runs its stage over the members' streams, and
(4) hands each result chunk to the site's workers; the round's result is the site's vector for the
next round. Repair requests are served for every round the site has sent, for as long as the process
lives (it lingers after its last round while members still ask).

Start agreement (A4, docs/edge-inc.md): a member that holds its vector for round t sends READY(t, its
ready time, whom it has heard) to the clique's other members. Until it knows every member's ready time
it re-sends after a round trip (backing off), and it answers a READY that does not list it. Every
member then starts at max(ready times) + `agree_s`: the clique's largest one-way delay, one packet's
serialisation and a margin, on the shared clock, so all members start at the same instant, as the
model assumes, at the price of that delay per round, which the emulated prediction adds. A READY is
a whole packet on a slow emulated link, so it is never repeated faster than a round trip.

Training (`cycles` > 1 with `feed_port`): the schedule's rounds run once per cycle, and each cycle's
vector comes from the site's own workers: they connect over TCP (the LAN between a worker and its edge
host), send their vector each time they synchronise, and get the cycle's result back on the same
connection. The site's vector is their sum, so after a finite-time design (all-to-all, the grid) every
worker holds the exact sum over all workers. The switches hold the trees of one cycle's rounds; a
packet's cycle travels in its epoch (the job's epoch plus the cycle), so a late repair of one cycle is
never taken for the next one's, and the trees need no reinstalling. Every round of a cycle, the first
included, starts by the READY agreement, since a site is ready only when its workers are.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge import edge_wire as w
from edge.clique_sender import MULTICAST, StreamSender
from edge.edge_float import FloatVector
from edge.edge_wire import KIND_MAX, KIND_SUM
from edge.stage import Deliver, EdgeStage, Nack, RoundPlan

SOCKET_BUFFER = 8 << 20


@dataclass(frozen=True)
class SiteRound:
    round: int
    members: tuple[int, ...]  # site ids of the clique, this site included
    gap_s: float  # pacing: chunk bytes / the clique's rate
    agree_s: float  # start = max(ready times) + agree_s
    rtt_s: dict[int, float]  # round-trip time to each other member
    idle_s: float
    frame_s: float = 0.0  # one packet's serialisation on the links (READY repeats wait for it too)
    # "sum" adds the streams; "max" (float32 jobs: the block exponents agreed before each sum) takes the
    # lane-wise maximum, and its result is kept by the site, not handed to the workers
    kind: str = "sum"


@dataclass
class SiteSpec:
    site: int
    ip: str
    tenant: int
    epoch: int
    memory_bytes: int
    stream_ip: str  # where the stream goes: the site switch (which replicates it)
    peers: dict[int, str]  # site id -> edge host IP, for every member of any of this site's rounds
    workers: list[str]
    rounds: list[SiteRound]
    lanes_path: str  # the site's initial vector (chunks x 64 uint32, .npy)
    start_at: float
    report: str
    replicate: str = "network"  # "network" | "sender"
    stall_timeout_s: float = 30.0
    linger_s: float = 2.0
    # "int32": the vector is int32 lanes, summed exactly; "float32": the vector is float32 values, each
    # sum round preceded by a max round of block exponents and carried as block fixed point
    # (edge.formats), the workers given float32 results
    format: str = "int32"
    # training: the rounds run `cycles` times (the cycle in the packets' epoch: epoch + cycle), a cycle's
    # round r being virtual round cycle * period + r; with `feed_port` the vector of every cycle is the
    # sum of what the site's workers send over TCP to that port, and they get the cycle's result back
    cycles: int = 1
    period: int = 0  # data-plane rounds per cycle (0: the largest round number in `rounds`)
    feed_port: int = 0
    feed_timeout_s: float = 300.0  # the longest a site waits for its workers' vectors
    sites: int = 0  # with feed_port: the sites a cycle's result must count (its exact sum), 0: no check

    @classmethod
    def from_json(cls, d: dict) -> SiteSpec:
        rounds = [
            SiteRound(
                r["round"],
                tuple(r["members"]),
                r["gap_s"],
                r["agree_s"],
                {int(k): v for k, v in r["rtt_s"].items()},
                r["idle_s"],
                r.get("frame_s", 0.0),
                r.get("kind", "sum"),
            )
            for r in d["rounds"]
        ]
        fields = {k: v for k, v in d.items() if k not in ("rounds", "peers")}
        return cls(rounds=rounds, peers={int(k): v for k, v in d["peers"].items()}, **fields)


@dataclass
class _Agreement:
    """READY bookkeeping of one round."""

    members: tuple[int, ...]
    ready_us: dict[int, int] = field(default_factory=dict)
    acked_by: set[int] = field(default_factory=set)  # members known to have our READY
    next_send: float = 0.0
    tries: int = 0
    answered: dict[int, float] = field(default_factory=dict)  # member -> no new answer before

    def start_s(self, agree_s: float) -> float | None:
        if len(self.ready_us) < len(self.members):
            return None
        return max(self.ready_us.values()) / 1e6 + agree_s


_LEN = struct.Struct("!Q")  # edge.hostcomm's framing: a length, then the array's bytes


class Feed:
    """The site's workers' side in training: one kept TCP connection per worker (non-blocking, in the
    site's select loop), each bringing one length-prefixed vector per synchronisation. `take` gives the
    sum of one vector from every worker (int32 lanes added modulo 2**32, float32 values in float64, in
    the workers' listed order) once all are in; `reply` sends a cycle's result to each."""

    def __init__(self, ip: str, port: int, workers: list[str], fmt: str) -> None:
        if not workers:
            raise ValueError("a site fed by its workers needs at least one worker")
        self.workers = list(workers)
        self.dtype = np.dtype(np.int32) if fmt == "int32" else np.dtype(np.float32)
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((ip, port))
        self.srv.listen(len(workers) + 4)
        self.srv.setblocking(False)
        self.conns: dict[str, socket.socket] = {}
        self.bufs: dict[str, bytearray] = {}
        self.pending: dict[str, list[np.ndarray]] = {ip: [] for ip in workers}
        self.closed: set[str] = set()
        self.size: int | None = None

    def sockets(self) -> list[socket.socket]:
        return [self.srv, *self.conns.values()]

    def on_readable(self, sock: socket.socket) -> None:
        if sock is self.srv:
            conn, (addr, _port) = self.srv.accept()
            if addr not in self.pending or addr in self.conns:
                conn.close()  # not one of this site's workers, or a second connection of one
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setblocking(False)
            self.conns[addr], self.bufs[addr] = conn, bytearray()
            return
        ip = next(k for k, v in self.conns.items() if v is sock)
        try:
            data = sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            self.closed.add(ip)
            del self.conns[ip]
            sock.close()
            return
        buf = self.bufs[ip]
        buf += data
        while len(buf) >= _LEN.size:
            (n,) = _LEN.unpack_from(buf)
            if len(buf) < _LEN.size + n:
                break
            arr = np.frombuffer(bytes(buf[_LEN.size : _LEN.size + n]), dtype=self.dtype)
            del buf[: _LEN.size + n]
            if self.size is None:
                self.size = arr.size
            if arr.size != self.size:
                raise ValueError(f"worker {ip} sent {arr.size} values, the others {self.size}")
            self.pending[ip].append(arr)

    def missing(self) -> list[str]:
        return [ip for ip in self.workers if not self.pending[ip]]

    def take(self) -> np.ndarray | None:
        """The sum of the next vector of every worker, as chunks x 64 (zero-padded), or None."""
        if self.missing():
            return None
        vecs = [self.pending[ip].pop(0) for ip in self.workers]
        chunks = -(-vecs[0].size // w.LANES)
        if self.dtype == np.int32:
            total = np.zeros(chunks * w.LANES, dtype=np.uint32)
            for v in vecs:
                total[: v.size] += v.view(np.uint32)  # modulo 2**32, as the stages add
            return total.reshape(chunks, w.LANES)
        total64 = np.zeros(chunks * w.LANES)
        for v in vecs:
            total64[: v.size] += v
        return total64.reshape(chunks, w.LANES)

    def reply(self, result: np.ndarray) -> None:
        """The cycle's result (flat, the workers' length and dtype) to every connected worker."""
        data = _LEN.pack(result.nbytes) + np.ascontiguousarray(result).tobytes()
        for conn in self.conns.values():
            conn.setblocking(True)
            try:
                conn.sendall(data)
            finally:
                conn.setblocking(False)

    def close(self) -> None:
        for c in self.conns.values():
            c.close()
        self.srv.close()


class Site:
    """The event loop around the sans-IO sender and stage."""

    def __init__(self, spec: SiteSpec) -> None:
        if spec.format not in ("int32", "float32"):
            raise ValueError(f"format must be int32 or float32, got {spec.format!r}")
        if spec.cycles < 1:
            raise ValueError(f"cycles must be at least 1, got {spec.cycles}")
        self.spec = spec
        self.period = spec.period or max((r.round for r in spec.rounds), default=0)
        if any(not 1 <= r.round <= self.period for r in spec.rounds):
            raise ValueError(f"every round number must lie in 1..period ({self.period})")
        # the run's rounds in order: (virtual round, cycle, the round); virtual = cycle * period + round,
        # so a one-cycle run's virtual rounds are its round numbers
        self.plan = [(c * self.period + r.round, c, r) for c in range(spec.cycles) for r in spec.rounds]
        self.by_virtual = {v: (c, r) for v, c, r in self.plan}
        self.feed = Feed(spec.ip, spec.feed_port, spec.workers, spec.format) if spec.feed_port else None
        self.values: FloatVector | None = None
        self.vector = np.zeros((0, w.LANES), dtype=np.uint32)
        if self.feed is None:
            if spec.format == "float32":
                self.values = FloatVector(np.load(spec.lanes_path))
                self.vector = self.values.lanes()
            else:
                self.vector = np.load(spec.lanes_path).astype(np.uint32)
        self.count = 1
        self.stage = EdgeStage(spec.memory_bytes)
        self.senders: dict[int, StreamSender] = {}
        self.results: dict[int, np.ndarray] = {}
        self.result_counts: dict[int, int] = {}
        self.agreements: dict[int, _Agreement] = {}
        self.rounds: list[dict] = []
        self.cycles: list[dict] = []  # with a feed: when each cycle's vector was in and its result out
        self.index = -1  # the round being run (index into self.plan)
        self.ready = False  # the site holds the current round's vector (with a feed: its workers sent)
        self.waiting_since = 0.0
        self.started_round: float | None = None
        self.last_request = time.time()
        self.data = self._socket(w.EDGE_UDP_PORT)
        self.ctl = self._socket(w.EDGE_REPAIR_PORT)

    def _socket(self, port: int) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        s.bind((self.spec.ip, port))
        s.setblocking(False)
        return s

    # --- cycles on the wire ---------------------------------------------------------------------------

    def _epoch(self, cycle: int) -> int:
        return (self.spec.epoch + cycle) & 0xFFFFFFFF

    def _virtual(self, rnd: int, epoch: int) -> int | None:
        """The virtual round of a packet's (round, epoch), None when it is of no cycle of this run."""
        cycle = (epoch - self.spec.epoch) & 0xFFFFFFFF
        if cycle >= self.spec.cycles or not 1 <= rnd <= self.period:
            return None
        return cycle * self.period + rnd

    # --- sending --------------------------------------------------------------------------------------

    def _send(self, sock: socket.socket, p: w.EdgePacket, addr: tuple[str, int]) -> None:
        data = w.encode(p)
        for _ in range(1000):
            try:
                sock.sendto(data, addr)
                return
            except (BlockingIOError, InterruptedError):
                select.select([], [sock], [], 0.01)
        raise RuntimeError(f"socket towards {addr} stayed full")

    def _stream_out(self, dest: int, p: w.EdgePacket, members: tuple[int, ...]) -> None:
        if dest != MULTICAST:
            self._send(self.ctl, p, (self.spec.peers[dest], w.EDGE_REPAIR_PORT))
        elif self.spec.replicate == "network":
            self._send(self.data, p, (self.spec.stream_ip, w.EDGE_UDP_PORT))
        else:
            for m in members:
                if m != self.spec.site:
                    self._send(self.data, p, (self.spec.peers[m], w.EDGE_UDP_PORT))

    # --- rounds ---------------------------------------------------------------------------------------

    @property
    def current(self) -> SiteRound | None:
        return self.plan[self.index][2] if 0 <= self.index < len(self.plan) else None

    @property
    def cur_v(self) -> int:
        return self.plan[self.index][0]

    @property
    def cur_cycle(self) -> int:
        return self.plan[self.index][1]

    def _first_of_run(self) -> bool:
        """The schedule's first round of a run without a feed: everyone holds its vector at the start."""
        r = self.current
        return self.feed is None and r is not None and self.cur_cycle == 0 and r.round == 1

    def _advance(self, now: float) -> None:
        """Move to the next round; announce READY once the site holds its vector for it."""
        self.index += 1
        self.started_round = None
        self.ready = False
        self.waiting_since = now
        self._try_ready(now)

    def _cycle_opens(self) -> bool:
        return self.index == 0 or self.plan[self.index - 1][1] != self.cur_cycle

    def _try_ready(self, now: float) -> None:
        """The site holds its vector for the current round (with a feed, at a cycle's first round, once
        every worker's vector is in): announce READY (or, for the first round, use the common start)."""
        r = self.current
        if r is None or self.ready:
            return
        if self.feed is not None and self._cycle_opens():
            local = self.feed.take()
            if local is None:
                if now - self.waiting_since > self.spec.feed_timeout_s:
                    raise RuntimeError(
                        f"cycle {self.cur_cycle}: no vector from worker(s) {', '.join(self.feed.missing())} "
                        f"within {self.spec.feed_timeout_s:g} s"
                    )
                if self.feed.closed & set(self.feed.missing()):
                    raise RuntimeError(
                        f"cycle {self.cur_cycle}: worker(s) {', '.join(sorted(self.feed.closed))} closed "
                        "their connection before sending their vector"
                    )
                return
            self.count = 1
            if self.spec.format == "float32":
                self.values = FloatVector(local)
            else:
                self.vector = local
            self.cycles.append({"cycle": self.cur_cycle, "ready": now})
        self.ready = True
        if self.values is not None:  # float32: what this round sends
            self.vector = self.values.exponents() if r.kind == "max" else self.values.fixed()
        v = self.cur_v
        ag = self.agreements.setdefault(v, _Agreement(r.members))
        ag.members = r.members
        if self._first_of_run():
            ag.ready_us = {m: int((self.spec.start_at - r.agree_s) * 1e6) for m in r.members}
            ag.acked_by = set(r.members) - {self.spec.site}
        else:  # never before the run's start, even when the site sits out the first rounds
            ag.ready_us[self.spec.site] = int(max(now, self.spec.start_at) * 1e6)
            ag.next_send = now

    def _maybe_start(self, now: float) -> None:
        r = self.current
        if r is None or not self.ready or self.started_round is not None:
            return
        v, epoch = self.cur_v, self._epoch(self.cur_cycle)
        start = self.agreements[v].start_s(r.agree_s)
        if start is None:
            return
        # a member that learns the start late (a READY delayed or lost) starts at once rather than
        # bursting its overdue chunks onto the link; the round's reported start stays the agreed one
        send_at = max(start, now)
        peers = tuple(m for m in r.members if m != self.spec.site)
        plan = RoundPlan(
            self.spec.tenant,
            epoch,
            r.round,
            self.spec.site,
            peers,
            self.vector.shape[0],
            kind=KIND_MAX if r.kind == "max" else KIND_SUM,
            local_count=self.count,
            peer_rtt_s=tuple(r.rtt_s[p] for p in peers),
            idle_s=r.idle_s,
            stall_timeout_s=self.spec.stall_timeout_s,
            # every member paces the same way from the same start: a stream is complete by then
            peer_end_s=tuple(
                send_at + self.vector.shape[0] * r.gap_s + r.rtt_s[p] / 2 + r.frame_s for p in peers
            ),
        )
        self.result = np.zeros_like(self.vector)
        self.result_count = np.zeros(self.vector.shape[0], dtype=np.int64)
        self._act(self.stage.start_round(plan, self.vector, start))
        self.senders[v] = StreamSender(
            self.spec.site,
            self.spec.tenant,
            r.round,
            epoch,
            self.vector,
            send_at,
            r.gap_s,
            self.count,
            KIND_MAX if r.kind == "max" else KIND_SUM,
        )
        self.started_round = start

    def _act(self, actions: list) -> None:
        r = self.current
        assert r is not None
        epoch = self._epoch(self.cur_cycle)
        for a in actions:
            if isinstance(a, Deliver):
                self.result[a.chunk] = a.lanes
                self.result_count[a.chunk] = a.count
                if r.kind == "max" or self.feed is not None:
                    continue  # exponents stay with the site; a feed's workers get the cycle's result
                res = w.EdgePacket(
                    self.spec.site,
                    self.spec.tenant,
                    r.round,
                    epoch,
                    a.chunk,
                    self.values.result_lanes(a.chunk, a.lanes) if self.values else a.lanes,
                    a.count,
                    flags=w.F_RESULT,
                )
                for ip in self.spec.workers:
                    self._send(self.ctl, res, (ip, w.EDGE_RESULT_PORT))
            elif isinstance(a, Nack):
                for p in w.nack_packets(self.spec.site, self.spec.tenant, r.round, epoch, list(a.chunks)):
                    self._send(self.ctl, p, (self.spec.peers[a.peer], w.EDGE_REPAIR_PORT))

    def _finish_round(self, now: float) -> None:
        r = self.current
        assert r is not None and self.started_round is not None
        v, cycle = self.cur_v, self.cur_cycle
        counts = set(self.result_count.tolist())
        if len(counts) != 1:
            raise RuntimeError(
                f"round {r.round}: results carry different contribution counts {sorted(counts)}"
            )
        stats = self.stage.stats
        self.rounds.append(
            {
                "round": r.round,
                "members": list(r.members),
                "start": self.started_round,
                "first_arrival": stats.first_arrival_s,
                "done": stats.done_s,
                "count": int(counts.pop()),
                "stage": stats.to_json(),
            }
        )
        if self.spec.cycles > 1:
            self.rounds[-1]["cycle"] = cycle
        self.results[v] = self.result
        self.result_counts[v] = self.rounds[-1]["count"]
        if self.values is not None:
            if r.kind == "max":
                self.values.agree(self.result, len(r.members))
                self.rounds[-1]["count"] = self.count  # a max round counts no new contributions
                self.result_counts[v] = self.count
            else:
                self.values.take_sum(self.result)
                self.results[v] = self.values.lanes()  # what the workers were given, for repairs
                self.count = self.rounds[-1]["count"]
        else:
            self.vector = self.result
            self.count = self.rounds[-1]["count"]
        closes = self.index + 1 >= len(self.plan) or self.plan[self.index + 1][1] != cycle
        if self.feed is not None and closes:
            self._reply(cycle, now)
        self._advance(now)

    def _reply(self, cycle: int, now: float) -> None:
        """A cycle's result to the site's workers: the exact sum over every site of the run's design."""
        assert self.feed is not None and self.feed.size is not None
        if self.spec.sites and self.count != self.spec.sites:
            raise RuntimeError(
                f"cycle {cycle}: the rounds summed {self.count} of {self.spec.sites} sites' vectors: the "
                "schedule does not reach the exact sum in one cycle"
            )
        if self.values is not None:
            flat = self.values.values.astype(np.float32).reshape(-1)
        else:
            flat = self.vector.reshape(-1).view(np.int32)
        self.feed.reply(flat[: self.feed.size])
        self.cycles[-1].update({"done": now, "count": self.count})

    # --- control packets ------------------------------------------------------------------------------

    def _on_ctl(self, p: w.EdgePacket, now: float) -> None:
        if p.tenant != self.spec.tenant:
            return
        v = self._virtual(p.round, p.epoch)
        if v is None:
            return
        if p.flags & w.F_NACK:
            self.last_request = now
            if p.sender in self.spec.peers:
                snd = self.senders.get(v)
                if snd is not None:
                    snd.on_nack(p.sender, w.nack_chunks(p))
            elif p.sender == 0:  # a worker missed results: they are the site's, re-sent from its memory
                res = self.results.get(v)
                if res is not None:
                    for q in w.nack_chunks(p):
                        if 0 <= q < res.shape[0]:
                            pkt = w.EdgePacket(
                                self.spec.site,
                                p.tenant,
                                p.round,
                                p.epoch,
                                q,
                                res[q],
                                self.result_counts[v],
                                flags=w.F_RESULT,
                            )
                            for ip in self.spec.workers:
                                self._send(self.ctl, pkt, (ip, w.EDGE_RESULT_PORT))
        elif p.flags & w.F_READY:
            ag = self.agreements.setdefault(v, _Agreement(()))
            ag.ready_us[p.sender] = w.ready_time_us(p)
            me = self.spec.site
            if int(p.lanes[2 + me // 32]) & (1 << (me % 32)):
                ag.acked_by.add(p.sender)
            else:
                self._answer_ready(p.sender, v, now)
        else:
            self._on_data(p, now)

    def _on_data(self, p: w.EdgePacket, now: float) -> None:
        v = self._virtual(p.round, p.epoch) if p.tenant == self.spec.tenant else None
        ag = self.agreements.get(v) if v is not None else None
        if ag is not None:
            ag.acked_by.add(p.sender)  # it started the round, so it had our READY
        r = self.current
        if r is not None and self.started_round is not None and v == self.cur_v:
            self._act(self.stage.on_packet(p, now))
        else:
            self.stage.stats.foreign += 1

    def _ready_packet(self, v: int, ag: _Agreement) -> w.EdgePacket:
        cycle, r = self.by_virtual[v]
        p = w.ready_packet(
            self.spec.site, self.spec.tenant, r.round, self._epoch(cycle), ag.ready_us[self.spec.site]
        )
        for m in ag.ready_us:  # whom we have heard: bit m of lanes[2:10]
            p.lanes[2 + m // 32] |= np.uint32(1 << (m % 32))
        return p

    def _ready_rto(self, r: SiteRound, tries: int) -> float:
        """A READY's round trip on the clique's slowest path, both packets serialised, plus a margin."""
        return (max(r.rtt_s.values(), default=0.0) + 2 * r.frame_s + 0.02) * 2 ** min(tries, 5)

    def _send_ready(self, now: float) -> None:
        """(Re)send READY to the members that have not shown they have it (their READY lists us, or their
        data of the round arrived): at once when this site becomes ready, then after a round trip,
        backing off. Knowing the start ourselves is not enough: the others need our ready time too. A
        READY is a whole packet on the members' links, so it is never repeated faster than a round trip."""
        r = self.current
        if r is None or not self.ready or self._first_of_run():
            return
        ag = self.agreements[self.cur_v]
        if now < ag.next_send:
            return
        others = [m for m in r.members if m != self.spec.site and m not in ag.acked_by]
        if not others:
            return
        p = self._ready_packet(self.cur_v, ag)
        for m in others:
            self._send(self.ctl, p, (self.spec.peers[m], w.EDGE_REPAIR_PORT))
        ag.next_send = now + self._ready_rto(r, ag.tries)
        ag.tries += 1

    def _answer_ready(self, sender: int, v: int, now: float) -> None:
        """A member's READY did not list us: it lacks our ready time; send ours (once per round trip)."""
        found = self.by_virtual.get(v)
        ag = self.agreements.get(v)
        if found is None or ag is None or self.spec.site not in ag.ready_us:
            return
        if now < ag.answered.get(sender, 0.0):
            return
        ag.answered[sender] = now + self._ready_rto(found[1], 0)
        self._send(self.ctl, self._ready_packet(v, ag), (self.spec.peers[sender], w.EDGE_REPAIR_PORT))

    # --- the loop -------------------------------------------------------------------------------------

    def run(self) -> dict:
        try:
            return self._run()
        finally:  # on an error too: the workers waiting for a result see the connection close at once
            if self.feed is not None:
                self.feed.close()

    def _run(self) -> dict:
        buf = bytearray(2048)
        cpu0 = time.process_time()  # CPU from here on is the run's (imports and set-up excluded)
        errors0 = udp_errors()
        self._advance(time.time())
        last_done = None
        while True:
            now = time.time()
            self._try_ready(now)
            self._maybe_start(now)
            for v, snd in self.senders.items():
                members = self.by_virtual[v][1].members
                for dest, p in snd.due(now):
                    self._stream_out(dest, p, members)
            if self.started_round is not None:
                self._act(self.stage.poll(now))
                if self.stage.done:
                    self._finish_round(now)
                    continue
            self._send_ready(now)
            if self.current is None:
                last_done = last_done or now
                quiet = now - max(self.last_request, last_done)
                if quiet >= self.spec.linger_s and all(s.idle for s in self.senders.values()):
                    break
            deadlines = [now + 0.05]
            deadlines += [d for d in (s.next_deadline() for s in self.senders.values()) if d is not None]
            d = self.stage.next_deadline() if self.started_round is not None else None
            if d is not None:
                deadlines.append(d)
            cur = self.current
            if cur is not None and self.ready and not self._first_of_run():
                ag = self.agreements[self.cur_v]
                s = ag.start_s(cur.agree_s)
                if self.started_round is None and s is not None:
                    deadlines.append(s)
                if any(m != self.spec.site and m not in ag.acked_by for m in cur.members):
                    deadlines.append(max(ag.next_send, now + 1e-3))
            wait = max(0.0, min(deadlines) - time.time())
            feeds = self.feed.sockets() if self.feed is not None else []
            readable, _, _ = select.select([self.data, self.ctl, *feeds], [], [], wait)
            for sock in readable:
                if sock is not self.data and sock is not self.ctl:
                    assert self.feed is not None
                    self.feed.on_readable(sock)
                    continue
                for p in w.drain(sock, buf):
                    if p is None:
                        self.stage.stats.malformed += 1
                        continue
                    t = time.time()
                    if sock is self.data:
                        self._on_data(p, t)
                    else:
                        self._on_ctl(p, t)
        report = {
            "site": self.spec.site,
            "rounds": self.rounds,
            "sent": {v: s.sent for v, s in self.senders.items()},
            "repaired": {v: s.repaired for v, s in self.senders.items()},
            "cpu_s": time.process_time() - cpu0,
            "udp_errors": {k: v - errors0.get(k, 0) for k, v in udp_errors().items()},
            "rcvbuf": self.data.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
        }
        if self.feed is not None:
            report["cycles"] = self.cycles
        return report


def udp_errors() -> dict[str, int]:
    """This network namespace's UDP error counters (/proc/net/snmp): datagrams the kernel dropped because
    a socket's receive buffer was full, or for other receive errors."""
    try:
        lines = [
            ln.split() for ln in Path("/proc/net/snmp").read_text().splitlines() if ln.startswith("Udp:")
        ]
        row = dict(zip(lines[0][1:], (int(x) for x in lines[1][1:]), strict=False))
        return {"in_errors": row.get("InErrors", 0), "rcvbuf_errors": row.get("RcvbufErrors", 0)}
    except (OSError, IndexError, ValueError):
        return {}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = SiteSpec.from_json(json.loads(Path(args[0]).read_text()))
    try:
        report = Site(spec).run()
    except Exception as exc:  # any failure ends in a report saying what it was, never a silent exit
        report = {"site": spec.site, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
    Path(spec.report).write_text(json.dumps(report))
    return 0 if "error" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
