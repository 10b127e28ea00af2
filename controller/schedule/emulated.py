"""The model's prediction for an emulated run (docs/edge-inc.md, "What the prediction includes").

Same formulas as docs/schedule-model.md (A5-A7 and the recursion of section 4), fed with what the
emulation really has, not with the real-scale numbers it stands for:

- the link rate the stage's streams get: the emulated wire rate times c / (c + h), because every 256-byte
  chunk travels with h = 66 bytes of Ethernet, IPv4, UDP and INC headers and the emulated links count
  whole frames;
- the stage's memory in whole accumulators (floor(M / c) x c) and the vector in whole chunks;
- the start agreement (A4 as the emulation runs it, edge.edge_site): after the first round a clique
  starts at the last member's ready time plus `agree_s` = the clique's largest one-way delay, plus one
  packet's serialisation (the READY is a packet too), plus a margin: the time every member needs to
  have heard every READY. The model's recursion starts a clique
  at the last member's ready time; this adds the one one-way delay a real agreement costs.

Rates, memories and sizes scale by one factor (DESIGN.md section 6); latencies stay real.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from controller.schedule.model import CliqueTiming, EdgeParams, ModelError, Network, TimingCache

CHUNK_BYTES = 256
HEADER_BYTES = 14 + 20 + 8 + 24  # Ethernet, IPv4, UDP, INC v2 header, per chunk on the wire
AGREE_MARGIN_S = 0.005  # processing time on top of the one-way delay before a member may start


@dataclass(frozen=True)
class EmulatedParams:
    """The emulated run's own parameters."""

    scale: float  # emulated rate / real rate
    wire_bps: float  # emulated link rate, bits/s of whole frames
    memory_bytes: int  # the stage's memory: whole accumulators
    chunks: int  # the vector, in chunks
    chunk_bytes: int = CHUNK_BYTES
    header_bytes: int = HEADER_BYTES
    agree_margin_s: float = AGREE_MARGIN_S
    loss: float = 0.0  # random loss per packet and WAN link (docs/schedule-model.md, A9)

    @property
    def size_bytes(self) -> int:
        return self.chunks * self.chunk_bytes

    @property
    def frame_s(self) -> float:
        """One packet's serialisation on an emulated link."""
        return (self.chunk_bytes + self.header_bytes) * 8 / self.wire_bps

    @property
    def payload_bps(self) -> float:
        return self.wire_bps * self.chunk_bytes / (self.chunk_bytes + self.header_bytes)

    def to_json(self) -> dict[str, float | int]:
        return {
            "scale": self.scale,
            "wire_mbit": self.wire_bps / 1e6,
            "payload_mbit": self.payload_bps / 1e6,
            "memory_bytes": self.memory_bytes,
            "size_bytes": self.size_bytes,
            "chunks": self.chunks,
            "chunk_bytes": self.chunk_bytes,
            "header_bytes": self.header_bytes,
            "loss": self.loss,
        }


def emulated_params(
    real_memory: float,
    real_size: float,
    real_bps: float,
    wire_bps: float,
    chunks: int | None = None,
    min_chunks: int = 1,
    loss: float = 0.0,
) -> EmulatedParams:
    """Scale memory and size by wire_bps / real_bps; refuse a memory that holds no accumulator.

    The vector is the scaled size in chunks, at least `min_chunks` (or exactly `chunks`): a vector of a
    few chunks would measure nothing but latency. Memory is always scaled, which keeps memory /
    (rate x delay), the ratio that decides whether memory binds (DESIGN.md section 6)."""
    if not (wire_bps > 0 and real_bps > 0):
        raise ModelError("rates must be positive")
    scale = wire_bps / real_bps
    accumulators = math.floor(real_memory * scale / CHUNK_BYTES + 1e-9)
    if accumulators < 1:
        raise ModelError(
            f"edge memory {real_memory:g} B scales to {real_memory * scale:.0f} B at {wire_bps / 1e6:g} Mbit/s "
            f"(x{scale:.3g}), less than one {CHUNK_BYTES}-byte accumulator: the stage could not hold one chunk "
            "(a higher --emulated-rate scales it up)"
        )
    if chunks is None:
        chunks = max(min_chunks, round(real_size * scale / CHUNK_BYTES), 1)
    if chunks < 1:
        raise ModelError(f"a vector needs at least one chunk, got {chunks}")
    if not 0 <= loss < 1:
        raise ModelError(f"loss is a fraction in [0, 1), got {loss}")
    return EmulatedParams(scale, wire_bps, accumulators * CHUNK_BYTES, chunks, loss=loss)


def with_loss(net: Network, params: EmulatedParams, ct: CliqueTiming) -> CliqueTiming:
    """A clique's round with random loss p per packet on every link (docs/schedule-model.md, A9).

    A member's stage misses q = (k - 1) p of the copies it expects; each is repaired by NACK over the
    path (T0 = 2 d + 2 frames). A chunk that waits only for repairs moves from its accumulator to the
    site's memory (edge.stage), so repairs hold no accumulator and the memory bound stays the
    loss-free r = (M - c) / Delta. Repairs take the place of live chunks in the senders' pacing (each
    sender serves k - 1 stages), so a stream takes (1 + q) S / r, and the round ends one repair later
    with the probability that a copy among the last r T0 / c chunks was lost."""
    p = params.loss
    k = len(ct.members)
    q = (k - 1) * p
    c = params.chunk_bytes
    M, S = params.memory_bytes, params.size_bytes
    lat = net.latency_s
    rate = net.rate_Bps / (1 + q)
    limit = "bandwidth"
    t0 = {}
    for j, skew in zip(ct.members, ct.skew_s, strict=True):
        far = max(lat[i, j] for i in ct.members if i != j)
        t0[j] = 2 * far + 2 * params.frame_s
        if M < S and k > 2 and skew > 0:  # no skew at j: its memory never binds (A6)
            cap = (M - c) / skew
            if cap < rate:
                rate, limit = max(cap, 0.0), f"memory@{net.names[j]}"
    if rate <= 0:
        return CliqueTiming(ct.members, 0.0, limit, ct.skew_s, tuple(math.inf for _ in ct.members))
    finish = []
    for j in ct.members:
        far = max(lat[i, j] for i in ct.members if i != j)
        tail = t0[j] * min(1.0, q * (1 + rate * t0[j] / c))
        finish.append(float((1 + q) * S / rate + far + tail))
    return CliqueTiming(ct.members, float(rate), limit, ct.skew_s, tuple(finish))


@dataclass(frozen=True)
class SchedulePrediction:
    """A schedule as the data plane runs it in a number format, and the model's prediction for it."""

    rounds: list[list[tuple[str, ...]]]  # data-plane rounds 1..R: their cliques
    kinds: list[str]  # per data-plane round: "sum", or "max" (a float32 round's exponents)
    predicted: list[RoundPrediction]
    total_s: float


def predict_schedule(
    latency_net: Network,
    params: EmulatedParams,
    rounds: Sequence[Sequence[Sequence[str]]],
    fmt: str = "int32",
) -> SchedulePrediction:
    """predict() for the rounds the stages run: float32 adds an exponent round (Q / 64 chunks) before
    every sum round (edge.edge_float)."""
    from controller.edge.plan import data_plane_rounds
    from edge.edge_float import exponent_chunks

    dp, kinds = data_plane_rounds(rounds, fmt)
    chunks = [exponent_chunks(params.chunks) if k == "max" else params.chunks for k in kinds]
    predicted, total = predict(latency_net, params, dp, chunks)
    return SchedulePrediction(dp, kinds, predicted, total)


def peak_deliveries(rounds: Sequence[RoundPrediction]) -> float:
    """The largest number of stream packets per second the stages take in one round, all its cliques
    streaming at once: k (k - 1) r / c per clique. What the CPU budget is counted in (docs/edge-inc.md)."""
    peak = 0.0
    for r in rounds:
        total = 0.0
        for c in r.cliques:
            k = len(c.members)
            total += k * (k - 1) * c.rate_Bps / CHUNK_BYTES
        peak = max(peak, total)
    return peak


DELIVERY_BUDGET = 3000.0  # stream packets/s into all stages together (docs/edge-inc.md, "CPU budget")
MAX_WIRE_BPS = 1.3e6
MIN_CHUNKS = 32


@dataclass(frozen=True)
class RateChoice:
    params: EmulatedParams
    peak_deliveries: float
    within_budget: bool


def choose_rate(
    latency_net: Network,
    real_memory: float,
    real_size: float,
    real_bps: float,
    schedules: Sequence[Sequence[Sequence[Sequence[str]]]],
    budget: float = DELIVERY_BUDGET,
    max_bps: float = MAX_WIRE_BPS,
    chunks: int | None = None,
    min_chunks: int = MIN_CHUNKS,
    loss: float = 0.0,
) -> RateChoice:
    """The fastest emulated link rate (at most max_bps, in steps of 10 %) at which every schedule's
    busiest round stays within the CPU budget and the scaled memory leaves the model a rate (two
    accumulators at least). One rate for all schedules, so they run on the same emulated WAN."""
    best: RateChoice | None = None
    bps = max_bps
    for _ in range(80):
        try:
            p = emulated_params(real_memory, real_size, real_bps, bps, chunks, min_chunks, loss)
        except ModelError:
            break  # lower rates only shrink the memory further
        if p.memory_bytes < 2 * p.chunk_bytes and p.memory_bytes < p.size_bytes:
            break
        peak = max(peak_deliveries(predict(latency_net, p, s)[0]) for s in schedules)
        choice = RateChoice(p, peak, peak <= budget)
        if choice.within_budget:
            return choice
        if best is None or peak < best.peak_deliveries:
            best = choice
        bps *= 0.9
    if best is None:  # not even the fastest rate leaves two accumulators: take it, the model says why
        p = emulated_params(real_memory, real_size, real_bps, max_bps, chunks, min_chunks, loss)
        best = RateChoice(p, max(peak_deliveries(predict(latency_net, p, s)[0]) for s in schedules), False)
    return best


@dataclass(frozen=True)
class CliquePrediction:
    members: tuple[str, ...]
    rate_Bps: float  # payload bytes/s each member sends at
    gap_s: float  # seconds between two chunks of a stream
    limit: str
    start_s: float
    agree_s: float  # what the start waited beyond the last member's ready time
    finish_s: dict[str, float]  # absolute: when each member holds the clique's result

    @property
    def time_s(self) -> float:
        """From the clique's start until its last member holds the result (the model's T_C)."""
        return max(self.finish_s.values()) - self.start_s


@dataclass(frozen=True)
class RoundPrediction:
    round: int
    cliques: tuple[CliquePrediction, ...]

    @property
    def time_s(self) -> float:
        return max((c.time_s for c in self.cliques), default=0.0)


def agree_delay(net: Network, members: Sequence[int], margin_s: float, frame_s: float = 0.0) -> float:
    """How long after the last member is ready every member has heard every READY: the clique's largest
    one-way delay, plus the READY packet's own serialisation on the link (`frame_s`), plus a margin."""
    lat = net.latency_s
    return max(lat[i, j] for i in members for j in members if i != j) + frame_s + margin_s


def predict(
    latency_net: Network,
    params: EmulatedParams,
    rounds: Sequence[Sequence[Sequence[str]]],
    round_chunks: Sequence[int] | None = None,
) -> tuple[list[RoundPrediction], float]:
    """Per round the cliques' predicted timings, and the schedule's total (max ready time at the end).
    `round_chunks`: the vector of each round in chunks, where rounds differ (a float32 job's exponent
    rounds, edge.edge_float); default params.chunks for every round."""
    net = Network(latency_net.names, latency_net.latency_s, params.payload_bps, latency_net.regions)
    caches: dict[int, TimingCache] = {}
    ready = dict.fromkeys(net.names, 0.0)
    out: list[RoundPrediction] = []
    for t, cliques in enumerate(rounds, start=1):
        chunks = round_chunks[t - 1] if round_chunks is not None else params.chunks
        if chunks not in caches:
            size = chunks * params.chunk_bytes
            caches[chunks] = TimingCache(net, EdgeParams(params.memory_bytes, size, params.chunk_bytes))
        cache = caches[chunks]
        rparams = params if chunks == params.chunks else replace(params, chunks=chunks)
        preds = []
        for clique in cliques:
            if len(clique) < 2:
                continue
            idx = tuple(net.index(n) for n in clique)
            with np.errstate(divide="ignore"):  # M = c gives rate 0 and S / 0 = inf, handled below
                ct = cache.get(idx)
            if ct.rate_Bps <= 0:  # M = c: the model's A5 leaves no room for a second chunk
                ct = CliqueTiming(ct.members, 0.0, ct.limit, ct.skew_s, tuple(math.inf for _ in ct.members))
            elif params.loss > 0:
                ct = with_loss(net, rparams, ct)
            agree = agree_delay(net, idx, params.agree_margin_s, params.frame_s) if t > 1 else 0.0
            start = max(ready[n] for n in clique) + agree
            finish = {net.names[i]: start + f for i, f in zip(ct.members, ct.finish_s, strict=True)}
            ready.update(finish)
            preds.append(
                CliquePrediction(
                    tuple(net.names[i] for i in ct.members),
                    ct.rate_Bps,
                    # with M = c the model has no rate; the run is still paced, one chunk per skew (the
                    # one accumulator's cycle), and measured against an unbounded prediction
                    params.chunk_bytes / ct.rate_Bps if ct.rate_Bps > 0 else max(ct.skew_s) + params.frame_s,
                    ct.limit,
                    start,
                    agree,
                    finish,
                )
            )
        out.append(RoundPrediction(t, tuple(preds)))
    return out, max(ready.values())
