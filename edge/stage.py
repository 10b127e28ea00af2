"""The Edge-INC stage: an in-line FPGA-like aggregator at a site's edge, with a memory of M bytes.

In a round, every other member of the site's clique multicasts its vector as a paced stream of chunks
(64 x int32). The stage keeps one accumulator per chunk, from the chunk's first arrival to its last (the
occupancy of assumption A5 in docs/schedule-model.md), adds the streams in place, and when every
remote copy is in adds the local site's contribution (read from the site's own memory, so it takes no
accumulator) and hands the site's workers one result per chunk. M is a hard bound: at most M // 256
accumulators exist at any instant.

What it does when a packet is lost, or the memory is full (docs/edge-inc.md, "Recovery"): the stage
repairs it itself by asking the sender for the chunk again (a NACK, unicast). Streams are sent in chunk
order, so a gap in one stream's chunk numbers shows a loss at once; a stream that falls silent before
its end is probed after an idle time. Repairs take the slow path: a chunk whose live copies have all
passed and that waits only for repairs is moved out of the accumulators into the site's memory (as an
FPGA card moves a partial sum to host memory over DMA), where its repaired copies are added; so a loss
holds no accumulator for the repair's round trip, and the live streams keep M to themselves. An arrival
that finds every accumulator taken by live chunks is refused and counted, and its chunk is re-fetched
into the site's memory too. M bounds the accumulators at every instant; the site memory used by repairs
is reported beside it (`spilled`, `peak_spill_chunks`). Every contribution is added at most once (a
bitmap per entry, a delivered bitmap of one bit per chunk), so results are exact under loss, duplication
and reordering.

`EdgeStage` is the sans-IO core: it takes decoded packets and the current time and returns what to do
(deliver a result, send a repair request); virtual time drives it in the tests (edge.stage_sim), the
socket loop of edge.edge_site in the emulation.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from edge.edge_wire import CHUNK_BYTES, KIND_MAX, KIND_SUM, LANES, EdgePacket


class StageConfigError(ValueError):
    """A stage or round the stage cannot run (no room for one chunk, bad plan); the message says which."""


class StageStalled(RuntimeError):
    """No chunk completed for the stall timeout: a member is dead or its stream never reaches this site."""


@dataclass(frozen=True)
class RoundPlan:
    """What the stage must know of one round: who sends to it, how much, and how far away they are.

    `peers` are the other members' site ids (the `sender` field of their packets); `peer_rtt_s` the
    round-trip time to each (for repair timeouts); `idle_s` how long a stream may fall silent before
    its missing tail is requested (a few of the paced inter-packet gaps)."""

    tenant: int
    epoch: int
    round: int
    me: int
    peers: tuple[int, ...]
    chunks: int
    kind: int = KIND_SUM
    local_count: int = 1
    peer_rtt_s: tuple[float, ...] = ()
    idle_s: float = 0.05
    rto_margin_s: float = 0.02
    max_rto_s: float = 4.0
    stall_timeout_s: float = 30.0
    # when each peer's stream should be complete (absolute, the sender's pacing plus its delay): before
    # that, a stream that is only slow (its sender busy with repairs) is not declared to have ended
    peer_end_s: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.chunks < 1:
            raise StageConfigError(f"a round needs at least one chunk, got {self.chunks}")
        if self.me in self.peers or len(set(self.peers)) != len(self.peers):
            raise StageConfigError(f"peers {self.peers} must be distinct and exclude this site ({self.me})")
        if self.peer_rtt_s and len(self.peer_rtt_s) != len(self.peers):
            raise StageConfigError("peer_rtt_s needs one round-trip time per peer")
        if self.peer_end_s and len(self.peer_end_s) != len(self.peers):
            raise StageConfigError("peer_end_s needs one end time per peer")
        if self.kind not in (KIND_SUM, KIND_MAX):
            raise StageConfigError(f"unknown kind {self.kind}")
        if len(self.peers) > 62:
            raise StageConfigError("at most 62 peers per clique (the arrival bitmap)")


@dataclass
class StageStats:
    """Counters of one round (all of them end up in the run's report)."""

    memory_bytes: int
    capacity_chunks: int
    peak_chunks: int = 0
    delivered: int = 0
    added: int = 0  # contributions added to an accumulator
    drops_full: int = 0  # arrivals refused because every accumulator was taken (repaired later)
    gaps: int = 0  # (chunk, stream) copies found missing by a gap or an idle stream
    duplicates: int = 0
    stale: int = 0  # arrivals for chunks already delivered
    foreign: int = 0  # other tenant, epoch or round, or a sender outside the clique
    malformed: int = 0
    nack_chunks: int = 0  # chunk copies requested again
    fetches: int = 0  # chunks with no entry re-fetched into the site's memory (after refused arrivals)
    spilled: int = 0  # chunks moved from an accumulator to the site's memory to wait for their repairs
    peak_spill_chunks: int = 0  # the most chunks waiting in the site's memory at once
    first_arrival_s: float | None = None
    done_s: float | None = None

    @property
    def peak_bytes(self) -> int:
        return self.peak_chunks * CHUNK_BYTES

    def to_json(self) -> dict[str, float | int | None]:
        out: dict[str, float | int | None] = {k: v for k, v in self.__dict__.items() if not k.endswith("_s")}
        out["peak_bytes"] = self.peak_bytes
        return out


@dataclass(frozen=True)
class Deliver:
    """The finished result of one chunk, for the site's workers."""

    chunk: int
    lanes: np.ndarray
    count: int


@dataclass(frozen=True)
class Nack:
    """Ask `peer` to send `chunks` again (unicast to this stage)."""

    peer: int
    chunks: tuple[int, ...]


Action = Deliver | Nack


@dataclass
class _Accumulator:
    chunk: int
    acc: np.ndarray
    mask: int = 0
    count: int = 0
    nack_at: float = float("inf")
    tries: int = 0
    spilled: bool = False  # in the site's memory (the slow path), not an accumulator


@dataclass
class EdgeStage:
    """One site's stage. `start_round` arms it; `on_packet` and `poll` drive it; `done` says when the
    round's every chunk has been delivered."""

    memory_bytes: int
    chunk_bytes: int = CHUNK_BYTES
    plan: RoundPlan | None = None
    stats: StageStats = field(init=False)
    _acc: dict[int, _Accumulator] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.chunk_bytes != CHUNK_BYTES:
            raise StageConfigError(f"the stage's chunk is one packet's payload ({CHUNK_BYTES} B)")
        self.capacity = int(self.memory_bytes) // self.chunk_bytes
        if self.capacity < 1:
            raise StageConfigError(
                f"edge memory of {self.memory_bytes} B holds no accumulator: one chunk needs {self.chunk_bytes} B"
            )
        self.stats = StageStats(int(self.memory_bytes), self.capacity)

    # --- round set-up ---------------------------------------------------------------------------------

    def start_round(self, plan: RoundPlan, local: np.ndarray, now: float) -> list[Action]:
        """Arm the stage for `plan`, with this site's contribution `local` (chunks x 64 uint32)."""
        if local.shape != (plan.chunks, LANES):
            raise StageConfigError(
                f"local contribution has shape {local.shape}, expected {(plan.chunks, LANES)}"
            )
        self.plan = plan
        self.local = np.ascontiguousarray(local, dtype=np.uint32)
        self.stats = StageStats(int(self.memory_bytes), self.capacity)
        self._acc = {}
        self._spill: dict[int, _Accumulator] = {}
        self._delivered = np.zeros(plan.chunks, dtype=bool)
        self._remaining = plan.chunks
        self._index = {p: i for i, p in enumerate(plan.peers)}
        self._full = (1 << len(plan.peers)) - 1
        k = len(plan.peers)
        self._expect = [0] * k  # next in-order chunk of each stream
        rtts = plan.peer_rtt_s or (1.0,) * k
        self._rto = [r * 1.5 + plan.rto_margin_s for r in rtts]
        # a stream is first expected within its one-way delay of the start
        self._heard = [now + r / 2 for r in rtts]
        self._end = list(plan.peer_end_s) or [0.0] * k
        self._fetch: list[int] = []  # chunks with no accumulator that miss copies (a heap)
        self._fetch_set: set[int] = set()
        self._nacks: dict[int, set[int]] = {}
        self._progress = now
        self._actions: list[Action] = []
        if not plan.peers:  # a clique of one: nothing to wait for
            for q in range(plan.chunks):
                self._deliver_local(q, now)
        return self._flush()

    @property
    def done(self) -> bool:
        return self.plan is not None and self._remaining == 0

    @property
    def occupancy(self) -> int:
        return len(self._acc)

    # --- packets --------------------------------------------------------------------------------------

    def on_packet(self, p: EdgePacket, now: float) -> list[Action]:
        plan = self.plan
        if plan is None or (p.tenant, p.epoch, p.round) != (plan.tenant, plan.epoch, plan.round):
            self.stats.foreign += 1
            return []
        i = self._index.get(p.sender)
        if i is None or p.kind != plan.kind:
            self.stats.foreign += 1
            return []
        q = p.chunk
        if not 0 <= q < plan.chunks or p.lanes.shape != (LANES,):
            self.stats.malformed += 1
            return []
        if self.stats.first_arrival_s is None:
            self.stats.first_arrival_s = now
        self._heard[i] = now
        if not p.retransmit and q >= self._expect[i]:
            # streams are sent in chunk order: whatever this stream skipped is lost (or reordered, in
            # which case the repair is only a duplicate)
            for g in range(self._expect[i], q):
                self._missing(g, i, now)
            self._expect[i] = q + 1
        bit = 1 << i
        if self._delivered[q]:
            self.stats.stale += 1
            return self._flush()
        a = self._acc.get(q) or self._spill.get(q)
        if a is None:
            if p.retransmit:  # a repair of a chunk that has no entry: it belongs to the slow path
                a = self._spill_new(q)
            elif len(self._acc) >= self.capacity and not self._spill_one():
                self.stats.drops_full += 1
                self._want(q)
                return self._flush()
            else:
                a = self._take(q)
            fresh = True
        else:
            fresh = False
        if a.mask & bit:
            self.stats.duplicates += 1
            return self._flush()
        if a.mask == 0 and a.count == 0:
            a.acc[:] = p.lanes
        elif plan.kind == KIND_SUM:
            a.acc += p.lanes
        else:
            np.maximum(a.acc, p.lanes, out=a.acc)
        a.mask |= bit
        a.count += p.count
        self.stats.added += 1
        if a.mask == self._full:
            self._complete(a, now)
            self._refetch(now)
        elif fresh:
            # copies that passed before this chunk had an accumulator (lost, or refused when full)
            self._ask(a, now)
        return self._flush()

    def poll(self, now: float) -> list[Action]:
        """Timers: repair requests that went unanswered, streams that fell silent, the stall timeout."""
        plan = self.plan
        if plan is None or self.done:
            return []
        for i, heard in enumerate(self._heard):
            if self._expect[i] < plan.chunks and now >= max(heard + plan.idle_s, self._end[i]):
                for g in range(self._expect[i], plan.chunks):
                    self._missing(g, i, now)
                self._expect[i] = plan.chunks
        for a in [*self._acc.values(), *self._spill.values()]:
            if a.nack_at <= now:
                self._ask(a, now)
        self._refetch(now)
        if now >= self._progress + plan.stall_timeout_s:
            raise StageStalled(
                f"round {plan.round}: no chunk completed for {now - self._progress:.1f} s; {self._remaining} of "
                f"{plan.chunks} chunks missing; copies owed per member: {self.owed()}"
            )
        return self._flush()

    def owed(self) -> dict[int, int]:
        """Per member: how many of the undelivered chunks still miss its copy (for error messages)."""
        plan = self.plan
        assert plan is not None
        out = dict.fromkeys(plan.peers, 0)
        for q in np.flatnonzero(~self._delivered):
            a = self._acc.get(int(q)) or self._spill.get(int(q))
            for i, peer in enumerate(plan.peers):
                if a is None or not a.mask & (1 << i):
                    out[peer] += 1
        return {p: n for p, n in out.items() if n}

    def next_deadline(self) -> float | None:
        """The earliest time `poll` has something to do (None when the round is done)."""
        plan = self.plan
        if plan is None or self.done:
            return None
        times = [self._progress + plan.stall_timeout_s]
        times += [
            max(h + plan.idle_s, self._end[i])
            for i, h in enumerate(self._heard)
            if self._expect[i] < plan.chunks
        ]
        times += [
            a.nack_at for a in (*self._acc.values(), *self._spill.values()) if a.nack_at != float("inf")
        ]
        return min(times)

    # --- internals ------------------------------------------------------------------------------------

    def _take(self, q: int) -> _Accumulator:
        a = _Accumulator(q, np.zeros(LANES, dtype=np.uint32))
        self._acc[q] = a
        if len(self._acc) > self.stats.peak_chunks:
            self.stats.peak_chunks = len(self._acc)
        return a

    def _spill_new(self, q: int) -> _Accumulator:
        a = _Accumulator(q, np.zeros(LANES, dtype=np.uint32), spilled=True)
        self._spill[q] = a
        self.stats.peak_spill_chunks = max(self.stats.peak_spill_chunks, len(self._spill))
        return a

    def _waits_for_repairs(self, a: _Accumulator) -> bool:
        """Every stream's live copy of a's chunk has passed: what it still misses comes as repairs."""
        return all(a.mask & (1 << i) or e > a.chunk for i, e in enumerate(self._expect))

    def _spill_one(self) -> bool:
        """Free an accumulator by moving the oldest chunk that only waits for repairs to the site's
        memory; False when every accumulator holds a chunk whose live copies are still coming."""
        waiting = [a for a in self._acc.values() if self._waits_for_repairs(a)]
        if not waiting:
            return False
        a = min(waiting, key=lambda x: x.chunk)
        del self._acc[a.chunk]
        a.spilled = True
        self._spill[a.chunk] = a
        self.stats.spilled += 1
        self.stats.peak_spill_chunks = max(self.stats.peak_spill_chunks, len(self._spill))
        return True

    def _want(self, q: int) -> None:
        if q not in self._fetch_set:
            self._fetch_set.add(q)
            heapq.heappush(self._fetch, q)

    def _missing(self, q: int, i: int, now: float) -> None:
        """Stream i's copy of chunk q will not come by itself."""
        if self._delivered[q]:
            return
        a = self._acc.get(q) or self._spill.get(q)
        if a is not None:
            if not a.mask & (1 << i):
                self.stats.gaps += 1
                self._nacks.setdefault(self.plan.peers[i], set()).add(q)  # type: ignore[union-attr]
                a.nack_at = min(a.nack_at, now + self._rto[i])
        else:
            self.stats.gaps += 1
            self._want(q)

    def _ask(self, a: _Accumulator, now: float) -> None:
        """(Re-)request every copy chunk a still misses whose live copy has passed."""
        plan = self.plan
        assert plan is not None
        rto = 0.0
        for i, peer in enumerate(plan.peers):
            if not a.mask & (1 << i) and self._expect[i] > a.chunk:
                self._nacks.setdefault(peer, set()).add(a.chunk)
                rto = max(rto, self._rto[i])
        if rto:
            a.nack_at = now + min(plan.max_rto_s, rto * 2**a.tries)
            a.tries += 1
        else:
            a.nack_at = float("inf")

    def _refetch(self, now: float) -> None:
        """Re-fetch, into the site's memory, the chunks that have no entry and miss copies (their
        arrivals were refused while the accumulators were full of live chunks), lowest chunk first."""
        while self._fetch:
            q = heapq.heappop(self._fetch)
            self._fetch_set.discard(q)
            if self._delivered[q] or q in self._acc or q in self._spill:
                continue
            a = self._spill_new(q)
            self.stats.fetches += 1
            self._ask(a, now)

    def _complete(self, a: _Accumulator, now: float) -> None:
        plan = self.plan
        assert plan is not None
        local = self.local[a.chunk]
        if plan.kind == KIND_SUM:
            lanes = a.acc + local
        else:
            lanes = np.maximum(a.acc, local)
        if a.spilled:
            del self._spill[a.chunk]
        else:
            del self._acc[a.chunk]
        self._mark(a.chunk, lanes, a.count + plan.local_count, now)

    def _deliver_local(self, q: int, now: float) -> None:
        assert self.plan is not None
        self._mark(q, self.local[q].copy(), self.plan.local_count, now)

    def _mark(self, q: int, lanes: np.ndarray, count: int, now: float) -> None:
        self._delivered[q] = True
        self._remaining -= 1
        self._progress = now
        self.stats.delivered += 1
        self._actions.append(Deliver(q, lanes, count))
        if self._remaining == 0:
            self.stats.done_s = now

    def _flush(self) -> list[Action]:
        out = self._actions
        for peer, chunks in self._nacks.items():
            live = sorted(q for q in chunks if not self._delivered[q])
            if live:
                self.stats.nack_chunks += len(live)
                out.append(Nack(peer, tuple(live)))
        self._nacks = {}
        self._actions = []
        return out
