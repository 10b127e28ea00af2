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
"""

from __future__ import annotations

import json
import select
import socket
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


class Site:
    """The event loop around the sans-IO sender and stage."""

    def __init__(self, spec: SiteSpec) -> None:
        if spec.format not in ("int32", "float32"):
            raise ValueError(f"format must be int32 or float32, got {spec.format!r}")
        self.spec = spec
        self.values = FloatVector(np.load(spec.lanes_path)) if spec.format == "float32" else None
        self.vector = self.values.lanes() if self.values else np.load(spec.lanes_path).astype(np.uint32)
        self.count = 1
        self.stage = EdgeStage(spec.memory_bytes)
        self.senders: dict[int, StreamSender] = {}
        self.results: dict[int, np.ndarray] = {}
        self.result_counts: dict[int, int] = {}
        self.agreements: dict[int, _Agreement] = {}
        self.rounds: list[dict] = []
        self.index = -1  # the round being run (index into spec.rounds)
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
        return self.spec.rounds[self.index] if 0 <= self.index < len(self.spec.rounds) else None

    def _advance(self, now: float) -> None:
        """The site holds its vector for the next round: announce READY (or, for the first round, use
        the run's common start)."""
        self.index += 1
        self.started_round = None
        r = self.current
        if r is None:
            return
        if self.values is not None:  # float32: what this round sends
            self.vector = self.values.exponents() if r.kind == "max" else self.values.fixed()
        ag = self.agreements.setdefault(r.round, _Agreement(r.members))
        ag.members = r.members
        if r.round == 1:  # the schedule's first round: everyone holds its vector at the common start
            ag.ready_us = {m: int((self.spec.start_at - r.agree_s) * 1e6) for m in r.members}
            ag.acked_by = set(r.members) - {self.spec.site}
        else:  # never before the run's start, even when the site sits out the first rounds
            ag.ready_us[self.spec.site] = int(max(now, self.spec.start_at) * 1e6)
            ag.next_send = now

    def _maybe_start(self, now: float) -> None:
        r = self.current
        if r is None or self.started_round is not None:
            return
        start = self.agreements[r.round].start_s(r.agree_s)
        if start is None:
            return
        # a member that learns the start late (a READY delayed or lost) starts at once rather than
        # bursting its overdue chunks onto the link; the round's reported start stays the agreed one
        send_at = max(start, now)
        peers = tuple(m for m in r.members if m != self.spec.site)
        plan = RoundPlan(
            self.spec.tenant,
            self.spec.epoch,
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
        self.senders[r.round] = StreamSender(
            self.spec.site,
            self.spec.tenant,
            r.round,
            self.spec.epoch,
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
        for a in actions:
            if isinstance(a, Deliver):
                self.result[a.chunk] = a.lanes
                self.result_count[a.chunk] = a.count
                if r.kind == "max":
                    continue  # the exponents stay with the site
                res = w.EdgePacket(
                    self.spec.site,
                    self.spec.tenant,
                    r.round,
                    self.spec.epoch,
                    a.chunk,
                    self.values.result_lanes(a.chunk, a.lanes) if self.values else a.lanes,
                    a.count,
                    flags=w.F_RESULT,
                )
                for ip in self.spec.workers:
                    self._send(self.ctl, res, (ip, w.EDGE_RESULT_PORT))
            elif isinstance(a, Nack):
                for p in w.nack_packets(
                    self.spec.site, self.spec.tenant, r.round, self.spec.epoch, list(a.chunks)
                ):
                    self._send(self.ctl, p, (self.spec.peers[a.peer], w.EDGE_REPAIR_PORT))

    def _finish_round(self, now: float) -> None:
        r = self.current
        assert r is not None and self.started_round is not None
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
        self.results[r.round] = self.result
        self.result_counts[r.round] = self.rounds[-1]["count"]
        if self.values is not None:
            if r.kind == "max":
                self.values.agree(self.result, len(r.members))
                self.rounds[-1]["count"] = self.count  # a max round counts no new contributions
                self.result_counts[r.round] = self.count
            else:
                self.values.take_sum(self.result)
                self.results[r.round] = self.values.lanes()  # what the workers were given, for repairs
                self.count = self.rounds[-1]["count"]
        else:
            self.vector = self.result
            self.count = self.rounds[-1]["count"]
        self._advance(now)

    # --- control packets ------------------------------------------------------------------------------

    def _on_ctl(self, p: w.EdgePacket, now: float) -> None:
        if (p.tenant, p.epoch) != (self.spec.tenant, self.spec.epoch):
            return
        if p.flags & w.F_NACK:
            self.last_request = now
            if p.sender in self.spec.peers:
                snd = self.senders.get(p.round)
                if snd is not None:
                    snd.on_nack(p.sender, w.nack_chunks(p))
            elif p.sender == 0:  # a worker missed results: they are the site's, re-sent from its memory
                res = self.results.get(p.round)
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
                                self.result_counts[p.round],
                                flags=w.F_RESULT,
                            )
                            for ip in self.spec.workers:
                                self._send(self.ctl, pkt, (ip, w.EDGE_RESULT_PORT))
        elif p.flags & w.F_READY:
            ag = self.agreements.setdefault(p.round, _Agreement(()))
            ag.ready_us[p.sender] = w.ready_time_us(p)
            me = self.spec.site
            if int(p.lanes[2 + me // 32]) & (1 << (me % 32)):
                ag.acked_by.add(p.sender)
            else:
                self._answer_ready(p.sender, p.round, now)
        else:
            self._on_data(p, now)

    def _on_data(self, p: w.EdgePacket, now: float) -> None:
        ag = self.agreements.get(p.round)
        if ag is not None:
            ag.acked_by.add(p.sender)  # it started the round, so it had our READY
        r = self.current
        if r is not None and self.started_round is not None and p.round == r.round:
            self._act(self.stage.on_packet(p, now))
        else:
            self.stage.stats.foreign += 1

    def _ready_packet(self, r: SiteRound, ag: _Agreement) -> w.EdgePacket:
        p = w.ready_packet(
            self.spec.site, self.spec.tenant, r.round, self.spec.epoch, ag.ready_us[self.spec.site]
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
        if r is None or r.round == 1:
            return
        ag = self.agreements[r.round]
        if now < ag.next_send:
            return
        others = [m for m in r.members if m != self.spec.site and m not in ag.acked_by]
        if not others:
            return
        p = self._ready_packet(r, ag)
        for m in others:
            self._send(self.ctl, p, (self.spec.peers[m], w.EDGE_REPAIR_PORT))
        ag.next_send = now + self._ready_rto(r, ag.tries)
        ag.tries += 1

    def _answer_ready(self, sender: int, rnd: int, now: float) -> None:
        """A member's READY did not list us: it lacks our ready time; send ours (once per round trip)."""
        r = next((x for x in self.spec.rounds if x.round == rnd), None)
        ag = self.agreements.get(rnd)
        if r is None or ag is None or self.spec.site not in ag.ready_us:
            return
        if now < ag.answered.get(sender, 0.0):
            return
        ag.answered[sender] = now + self._ready_rto(r, 0)
        self._send(self.ctl, self._ready_packet(r, ag), (self.spec.peers[sender], w.EDGE_REPAIR_PORT))

    # --- the loop -------------------------------------------------------------------------------------

    def run(self) -> dict:
        buf = bytearray(2048)
        cpu0 = time.process_time()  # CPU from here on is the run's (imports and set-up excluded)
        errors0 = udp_errors()
        self._advance(time.time())
        last_done = None
        while True:
            now = time.time()
            self._maybe_start(now)
            for rnd, snd in self.senders.items():
                members = next((r.members for r in self.spec.rounds if r.round == rnd), ())
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
            if cur is not None and cur.round > 1:
                ag = self.agreements[cur.round]
                s = ag.start_s(cur.agree_s)
                if self.started_round is None and s is not None:
                    deadlines.append(s)
                if any(m != self.spec.site and m not in ag.acked_by for m in cur.members):
                    deadlines.append(max(ag.next_send, now + 1e-3))
            wait = max(0.0, min(deadlines) - time.time())
            readable, _, _ = select.select([self.data, self.ctl], [], [], wait)
            for sock in readable:
                for p in w.drain(sock, buf):
                    if p is None:
                        self.stage.stats.malformed += 1
                        continue
                    t = time.time()
                    if sock is self.data:
                        self._on_data(p, t)
                    else:
                        self._on_ctl(p, t)
        return {
            "site": self.spec.site,
            "rounds": self.rounds,
            "sent": {r: s.sent for r, s in self.senders.items()},
            "repaired": {r: s.repaired for r, s in self.senders.items()},
            "cpu_s": time.process_time() - cpu0,
            "udp_errors": {k: v - errors0.get(k, 0) for k, v in udp_errors().items()},
            "rcvbuf": self.data.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
        }


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
