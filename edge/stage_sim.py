"""One clique round in virtual time: the real sans-IO senders and stages over a simulated network.

Why: the stage's guarantees (exact under loss, duplication and reordering; never more than M of
accumulators; a clear end when memory is tiny) are properties of its logic, and virtual time checks them
without the emulated WAN's noise and in milliseconds. The network here is the model's (fixed one-way
delays, no queueing), plus random loss, duplication and delay jitter (which reorders packets).
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

import numpy as np

from edge.clique_sender import MULTICAST, StreamSender
from edge.edge_wire import KIND_SUM, EdgePacket
from edge.stage import Deliver, EdgeStage, Nack, RoundPlan, StageStats


class SimTimeout(RuntimeError):
    """The simulated round did not finish within its horizon."""


@dataclass
class SimNet:
    """One-way delays (seconds, delay[i][j] from member i to member j) and impairments per packet copy."""

    delay_s: np.ndarray
    loss: float = 0.0
    duplicate: float = 0.0
    jitter_s: float = 0.0
    seed: int = 0
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def copies(self, i: int, j: int, now: float) -> list[float]:
        """Arrival times of what one send from i to j becomes (none when lost)."""
        out = []
        if self.rng.random() >= self.loss:
            out.append(now + self.delay_s[i][j] + self.jitter_s * self.rng.random())
        if self.duplicate and self.rng.random() < self.duplicate:
            out.append(now + self.delay_s[i][j] + self.jitter_s * self.rng.random())
        return out


@dataclass
class SimResult:
    results: list[np.ndarray]  # per member: chunks x 64 uint32 (zeros where nothing was delivered)
    counts: list[np.ndarray]
    finish_s: list[float]
    stats: list[StageStats]
    max_occupancy: list[int]
    sent: list[int]
    repaired: list[int]


def simulate_round(
    net: SimNet,
    vectors: list[np.ndarray],
    memory_bytes: int,
    gap_s: float,
    start_s: float = 0.0,
    idle_s: float | None = None,
    kind: int = KIND_SUM,
    counts: list[int] | None = None,
    horizon_s: float = 600.0,
    stall_timeout_s: float = 30.0,
) -> SimResult:
    """Run one clique (members 0..k-1, site ids 1..k) to completion; raises SimTimeout past the horizon."""
    k = len(vectors)
    chunks = vectors[0].shape[0]
    ids = list(range(1, k + 1))
    counts = counts or [1] * k
    idle = idle_s if idle_s is not None else max(4 * gap_s, 0.02)
    senders = [StreamSender(ids[i], 1, 1, 7, vectors[i], start_s, gap_s, counts[i], kind) for i in range(k)]
    stages = [EdgeStage(memory_bytes) for _ in range(k)]
    results = [np.zeros_like(v) for v in vectors]
    got = [np.zeros(chunks, dtype=np.int64) for _ in range(k)]
    finish = [float("nan")] * k
    max_occ = [0] * k
    events: list[tuple[float, int, str, int, object]] = []
    seq = itertools.count()

    def handle(j: int, actions: list, now: float) -> None:
        for act in actions:
            if isinstance(act, Deliver):
                results[j][act.chunk] = act.lanes
                got[j][act.chunk] = act.count
            elif isinstance(act, Nack):
                i = ids.index(act.peer)
                for t in net.copies(j, i, now):
                    heapq.heappush(events, (t, next(seq), "nack", i, (ids[j], act.chunks)))
        if stages[j].done and finish[j] != finish[j]:
            finish[j] = now

    for j in range(k):
        others = tuple(ids[i] for i in range(k) if i != j)
        rtts = tuple(float(net.delay_s[i][j] + net.delay_s[j][i]) for i in range(k) if i != j)
        plan = RoundPlan(
            1, 7, 1, ids[j], others, chunks, kind, counts[j], rtts, idle, stall_timeout_s=stall_timeout_s
        )
        handle(j, stages[j].start_round(plan, vectors[j], start_s), start_s)

    now = start_s
    while not all(s.done for s in stages):
        deadlines = [d for d in (x.next_deadline() for x in senders) if d is not None]
        deadlines += [d for d in (s.next_deadline() for s in stages) if d is not None]
        if events:
            deadlines.append(events[0][0])
        if not deadlines:
            raise SimTimeout("nothing left to happen, yet the round is not done")
        now = max(now, min(deadlines))
        if now > horizon_s:
            raise SimTimeout(f"round not finished after {horizon_s} s of virtual time")
        while events and events[0][0] <= now:
            _, _, what, j, payload = heapq.heappop(events)
            if what == "pkt":
                assert isinstance(payload, EdgePacket)
                handle(j, stages[j].on_packet(payload, now), now)
                max_occ[j] = max(max_occ[j], stages[j].occupancy)
            else:
                dest, chunks = payload  # type: ignore[misc]
                senders[j].on_nack(dest, chunks)
        for i, snd in enumerate(senders):
            for dest, pkt in snd.due(now):
                targets = [j for j in range(k) if j != i] if dest == MULTICAST else [ids.index(dest)]
                for j in targets:
                    for t in net.copies(i, j, now):
                        heapq.heappush(events, (t, next(seq), "pkt", j, pkt))
        for j, st in enumerate(stages):
            handle(j, st.poll(now), now)
    return SimResult(
        results,
        got,
        finish,
        [s.stats for s in stages],
        max_occ,
        [s.sent for s in senders],
        [s.repaired for s in senders],
    )
