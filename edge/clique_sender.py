"""A clique member's paced stream (sans-IO): the site's vector, chunk after chunk, at the clique's rate.

Assumption A3 of docs/schedule-model.md: every member of a clique sends at one common rate r, paced,
open loop (no per-chunk acknowledgement), starting at the clique's common start (A4). The stream leaves
the site once (multicast: the switches replicate it). Repair requests from the members' stages are
served from the site's vector (host memory, not the stage's) by unicast, and share the pacing with the
live stream: a repair takes the place of the next live chunk, so the sender's output rate never exceeds
r and a link never carries more than the model's rate.

The last chunk goes out twice: a lost last chunk is the one loss no later chunk reveals, and the stage
would otherwise find it only by an idle timeout (docs/edge-inc.md, "Recovery").
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from edge.edge_wire import F_RETRANSMIT, KIND_SUM, LANES, EdgePacket

MULTICAST = -1  # destination of a live chunk: the clique, by the switches' replication


@dataclass
class StreamSender:
    me: int
    tenant: int
    round: int
    epoch: int
    lanes: np.ndarray  # chunks x 64 uint32
    start_s: float
    gap_s: float  # seconds between chunks: chunk bytes / the clique's rate
    count: int = 1  # contributions summed in this vector
    kind: int = KIND_SUM
    repeat_last: bool = True
    _next: int = 0
    _next_at: float = field(init=False)
    _repairs: deque[tuple[int, int]] = field(default_factory=deque, init=False)
    _queued: set[tuple[int, int]] = field(default_factory=set, init=False)
    sent: int = 0
    repaired: int = 0
    _last_was_repair: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.lanes.ndim != 2 or self.lanes.shape[1] != LANES or self.lanes.shape[0] < 1:
            raise ValueError(f"a stream needs chunks x {LANES} lanes, got shape {self.lanes.shape}")
        if not self.gap_s > 0:
            raise ValueError(f"the pacing gap must be positive, got {self.gap_s}")
        self._next_at = self.start_s
        self._live_total = self.lanes.shape[0] + (1 if self.repeat_last else 0)

    @property
    def live_done(self) -> bool:
        return self._next >= self._live_total

    @property
    def idle(self) -> bool:
        return self.live_done and not self._repairs

    def on_nack(self, dest: int, chunks: list[int] | tuple[int, ...]) -> None:
        """Queue repairs of `chunks` for the stage of site `dest` (requests for chunks already queued for
        it are merged; numbers beyond the vector are ignored)."""
        n = self.lanes.shape[0]
        for q in chunks:
            key = (dest, int(q))
            if 0 <= q < n and key not in self._queued:
                self._queued.add(key)
                self._repairs.append(key)

    def next_deadline(self) -> float | None:
        return None if self.idle else self._next_at

    def due(self, now: float) -> list[tuple[int, EdgePacket]]:
        """Everything whose paced time has come: (destination site or MULTICAST, packet)."""
        out: list[tuple[int, EdgePacket]] = []
        if self.idle:
            # no credit accrues while there is nothing to send: a later repair is paced from now
            self._next_at = max(self._next_at, now)
            return out
        while self._next_at <= now and not self.idle:
            # while the live stream runs, repairs take at most every other slot: a stage's requests
            # never stall the stream the other stages are waiting for
            repair_turn = self._repairs and (self.live_done or not self._last_was_repair)
            if repair_turn:
                dest, q = self._repairs.popleft()
                self._queued.discard((dest, q))
                out.append((dest, self._packet(q, F_RETRANSMIT)))
                self.repaired += 1
                self._last_was_repair = True
            else:
                self._last_was_repair = False
                q = min(self._next, self.lanes.shape[0] - 1)
                out.append((MULTICAST, self._packet(q, 0)))
                self._next += 1
            self.sent += 1
            self._next_at += self.gap_s
        return out

    def _packet(self, q: int, flags: int) -> EdgePacket:
        return EdgePacket(
            self.me, self.tenant, self.round, self.epoch, q, self.lanes[q], self.count, self.kind, flags
        )
