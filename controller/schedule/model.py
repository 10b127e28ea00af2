"""The WAN + Edge-INC round-time model (docs/schedule-model.md, sections 2-4).

Plain inputs only (names, a one-way latency matrix, a link rate, regions): the controller must not
depend on the emulation in topo/, and the same numbers must come out whether the WAN is the nine
cities or a topology file.

Physics in one paragraph: in a round, every member of a clique multicasts its S bytes once (the
network replicates), all members paced at one common rate r. At member j the k-1 remote streams
arrive with a skew Delta_j (spread of one-way latencies from the other members); the edge stage
keeps a chunk's accumulator from its first byte's arrival to the last byte of the last stream, so it
holds min(S, r * Delta_j + c) bytes, so r <= (M - c) / Delta_j unless M >= S. Member j holds the clique's sum once the last
byte of the farthest stream is in: S / r + max_i d(i, j).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

Clique = tuple[int, ...]
Round = tuple[Clique, ...]

DEFAULT_CHUNK_BYTES = 256  # one INC packet's payload: 64 x int32 (DESIGN.md section 4)
SKEW_FLOOR_S = 1e-12  # arrival skews below a picosecond are no skew (and would overflow M / skew)


class ModelError(ValueError):
    """Inputs the model cannot accept (sizes, shapes, disconnected WAN); the message says which."""


class Inbound(StrEnum):
    """How the k-1 streams into a site share capacity.

    LINKS: the edge stage terminates each WAN link (full mesh, one port per peer), so every stream
    gets the full link rate. SHARED: one access link of the same rate feeds the edge, so the k-1
    streams split it.
    """

    LINKS = "links"
    SHARED = "shared"


class Sync(StrEnum):
    """When a clique of the next round may start.

    CLIQUE: as soon as its own members are ready (cliques drift apart; the default, since rotation is
    table-driven in the switches and needs no global signal). BARRIER: every round starts when all
    sites have finished the previous one (a global barrier; never faster).
    """

    CLIQUE = "clique"
    BARRIER = "barrier"


@dataclass(frozen=True)
class Network:
    """The WAN as the optimiser sees it: who, how far (one-way, seconds), how fast, which region."""

    names: tuple[str, ...]
    latency_s: np.ndarray
    bandwidth_bps: float
    regions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.names)
        if n < 2:
            raise ModelError("a schedule needs at least two sites")
        if len(set(self.names)) != n:
            raise ModelError(f"site names must be unique: {list(self.names)}")
        lat = np.asarray(self.latency_s, dtype=float)
        if lat.shape != (n, n):
            raise ModelError(f"latency matrix is {lat.shape}, expected {(n, n)}")
        if np.isnan(lat).any() or (lat < 0).any():
            raise ModelError("latencies must be non-negative numbers")
        if not np.isfinite(lat).all():
            a, b = (int(x) for x in np.argwhere(~np.isfinite(lat))[0])
            raise ModelError(f"the WAN is not connected: no path between {self.names[a]} and {self.names[b]}")
        if not (math.isfinite(self.bandwidth_bps) and self.bandwidth_bps > 0):
            raise ModelError(f"bandwidth must be positive, got {self.bandwidth_bps}")
        if self.regions and len(self.regions) != n:
            raise ModelError("regions must name one region per site")
        object.__setattr__(self, "latency_s", lat)

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def rate_Bps(self) -> float:
        """Link rate in bytes per second (the model works in bytes)."""
        return self.bandwidth_bps / 8.0

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ModelError(f"unknown site {name!r}; known: {', '.join(self.names)}") from None

    def subset(self, names: Sequence[str]) -> Network:
        idx = [self.index(x) for x in names]
        return Network(
            names=tuple(self.names[i] for i in idx),
            latency_s=self.latency_s[np.ix_(idx, idx)],
            bandwidth_bps=self.bandwidth_bps,
            regions=tuple(self.regions[i] for i in idx) if self.regions else (),
        )


@dataclass(frozen=True)
class EdgeParams:
    """The Edge-INC stage and the workload: memory per site, bytes per site per round, chunk size,
    how inbound streams share capacity, and the round start rule."""

    memory_bytes: float
    size_bytes: float
    chunk_bytes: float = DEFAULT_CHUNK_BYTES
    inbound: Inbound = Inbound.LINKS
    sync: Sync = Sync.CLIQUE

    def __post_init__(self) -> None:
        for label, v in (
            ("memory", self.memory_bytes),
            ("size", self.size_bytes),
            ("chunk", self.chunk_bytes),
        ):
            if not (math.isfinite(v) and v > 0):
                raise ModelError(f"{label} must be positive, got {v}")
        if self.memory_bytes < self.chunk_bytes:
            raise ModelError(
                f"edge memory ({self.memory_bytes:g} B) is smaller than one chunk ({self.chunk_bytes:g} B)"
            )
        object.__setattr__(self, "inbound", Inbound(self.inbound))
        object.__setattr__(self, "sync", Sync(self.sync))


@dataclass(frozen=True)
class CliqueTiming:
    """One clique's round: the common paced rate, each member's skew and completion time."""

    members: Clique
    rate_Bps: float
    limit: str  # "bandwidth", "fan-in" or "memory@SITE": what bounds the rate (for explanations)
    skew_s: tuple[float, ...]
    finish_s: tuple[float, ...]  # from the clique's start until member i holds the sum

    @property
    def time_s(self) -> float:
        return max(self.finish_s) if self.finish_s else 0.0


def clique_timing(net: Network, edge: EdgeParams, members: Iterable[int]) -> CliqueTiming:
    """Rate and per-member completion of one clique round (docs/schedule-model.md, section 3)."""
    mem = tuple(members)
    k = len(mem)
    if k <= 1:
        return CliqueTiming(mem, math.inf, "idle", (0.0,) * k, (0.0,) * k)
    lat = net.latency_s
    rate = net.rate_Bps
    limit = "bandwidth"
    if edge.inbound is Inbound.SHARED and k > 2:
        rate = net.rate_Bps / (k - 1)
        limit = "fan-in"
    # A stage that can hold the whole vector never has more than S bytes live: memory cannot bind.
    memory_binds = edge.memory_bytes < edge.size_bytes
    skews: list[float] = []
    farthest: list[float] = []
    for j in mem:
        arrivals = [lat[i, j] for i in mem if i != j]
        skew = max(arrivals) - min(arrivals)
        skews.append(float(skew))
        farthest.append(float(max(arrivals)))
        if memory_binds and skew > SKEW_FLOOR_S:
            cap = (edge.memory_bytes - edge.chunk_bytes) / skew
            if cap < rate:
                rate, limit = cap, f"memory@{net.names[j]}"
    finish = tuple(float(edge.size_bytes / rate + f) for f in farthest)
    return CliqueTiming(mem, float(rate), limit, tuple(skews), finish)


@dataclass
class TimingCache:
    """Clique timings for one (network, edge) pair, shared by every schedule the search evaluates."""

    net: Network
    edge: EdgeParams
    _cache: dict[Clique, CliqueTiming] = field(default_factory=dict)

    def get(self, members: Clique) -> CliqueTiming:
        key = tuple(sorted(members))
        hit = self._cache.get(key)
        if hit is None:
            hit = clique_timing(self.net, self.edge, key)
            self._cache[key] = hit
        return hit


def run_rounds(cache: TimingCache, rounds: Sequence[Round], n_rounds: int) -> np.ndarray:
    """Each site's ready time after `n_rounds` rounds of the cyclic schedule `rounds`.

    A clique starts when its last member is ready (members launch together: launching early would
    add to the arrival skew and so to the edge memory needed), or with Sync.BARRIER when every site
    is; each member is ready when it holds the clique's sum. Cliques of one round run concurrently;
    no pipelining across rounds.
    """
    ready = np.zeros(cache.net.n)
    period = len(rounds)
    barrier = cache.edge.sync is Sync.BARRIER
    for t in range(n_rounds):
        if barrier:
            ready[:] = ready.max()
        for clique in rounds[t % period]:
            if len(clique) < 2:
                continue
            timing = cache.get(clique)
            start = max(ready[i] for i in timing.members)
            for i, f in zip(timing.members, timing.finish_s, strict=True):
                ready[i] = start + f
    return ready
