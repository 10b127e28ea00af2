"""Secure aggregation: pairwise additive masks that cancel in the sum (Bonawitz et al., CCS 2017, in its
simplest form), so the switches add only masked values and never see a worker's data.

Each pair of workers (i, j) agrees on a secret by X25519 key agreement: every worker publishes its
public key on a bulletin board (here a folder both can read; the controller or any store would do),
derives the shared secret with each peer, and expands it (HKDF-SHA256, bound to the job's tenant and
epoch and to the pair) into a seed for a stream of uint32 masks. Worker i adds the pair's stream for
every j > i and subtracts it for every j < i, modulo 2^32: summed over all workers, every mask appears
once with each sign, so the switch's wrap-around sum is exactly the unmasked sum. Whoever runs the
board sees only public keys.

What it protects: the values in every packet on every link and in every switch register are uniformly
random to anyone holding fewer than all but one worker's secrets. What it does not: colluding workers
(n-1 of them learn the last one's input from the sum); a worker that drops out (its masks no longer
cancel: the job fails, as any INC job with a dead member does; the full protocol's secret sharing for
dropouts is not implemented); the float32 block exponents (the max-agreement cannot be masked, so each
block's magnitude leaks), the inf/NaN flags, and traffic analysis (sizes, timing, who talks to whom).

The host path (a tenant that admission sends there, and the host baselines) masks the same way: a host
algorithm becomes a lane reduction (`host_lanes`: sums of uint32 lanes wrap mod 2^32 as a switch's cells
do, max-reductions are maxima), and the INC path's number formats run on it (`host_allreduce`). A site
leader, a ring neighbour or a parameter server is then handed masked vectors and masked partial sums
only, never a worker's plain vector, and the result is the INC format's, bit for bit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from edge import formats
from edge.formats import LaneReduce
from edge.protocol import FMT_INT32, INC_LANES, KIND_MAX, KIND_SUM

# a host algorithm as the formats see it: (values, "sum" | "max") -> the reduction over every rank
HostAllreduce = Callable[[np.ndarray, str], np.ndarray]


class KeyExchangeError(TimeoutError):
    """A peer's public key did not appear on the board in time (a peer that never started)."""


def publish_and_collect(
    board: Path, rank: int, workers: int, timeout_s: float = 60.0
) -> tuple[X25519PrivateKey, dict[int, X25519PublicKey]]:
    """Write this worker's public key to `board`, then wait for every other worker's."""
    key = X25519PrivateKey.generate()
    board.mkdir(parents=True, exist_ok=True)
    tmp = board / f".{rank}.pub.tmp"
    tmp.write_bytes(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    tmp.rename(board / f"{rank}.pub")  # atomic: a reader never sees half a key
    peers: dict[int, X25519PublicKey] = {}
    deadline = time.monotonic() + timeout_s
    while len(peers) < workers - 1:
        for r in range(workers):
            path = board / f"{r}.pub"
            if r != rank and r not in peers and path.exists():
                peers[r] = X25519PublicKey.from_public_bytes(path.read_bytes())
        if len(peers) < workers - 1:
            if time.monotonic() > deadline:
                missing = sorted(set(range(workers)) - set(peers) - {rank})
                raise KeyExchangeError(
                    f"no public key from rank(s) {missing} in {board} after {timeout_s:.0f} s"
                )
            time.sleep(0.02)
    return key, peers


class PairwiseMasks:
    """The masks worker `rank` adds to its lanes, as one stream that every worker reads in the same
    order (the allreduce makes the same reductions, with the same shapes, on every worker)."""

    def __init__(
        self, key: X25519PrivateKey, peers: dict[int, X25519PublicKey], rank: int, tenant: int, epoch: int
    ) -> None:
        self.rank = rank
        self.streams: list[tuple[int, np.random.Generator]] = []
        for other, pub in sorted(peers.items()):
            lo, hi = min(rank, other), max(rank, other)
            info = f"tributary secure aggregation: tenant {tenant} epoch {epoch} pair {lo}-{hi}".encode()
            seed = HKDF(hashes.SHA256(), 32, salt=None, info=info).derive(key.exchange(pub))
            sign = 1 if other > rank else -1
            self.streams.append((sign, np.random.Generator(np.random.PCG64(int.from_bytes(seed, "big")))))

    def next(self, rows: int) -> np.ndarray:
        total = np.zeros((rows, INC_LANES), dtype=np.uint32)
        for sign, gen in self.streams:
            mask = gen.integers(0, 2**32, size=(rows, INC_LANES), dtype=np.uint32)
            total = total + mask if sign > 0 else total - mask  # uint32 arithmetic wraps mod 2^32
        return total


def masked(reduce: LaneReduce, masks: PairwiseMasks) -> LaneReduce:
    """A lane reduction whose sums travel masked; max-reductions (block exponents) cannot be masked."""

    def run(lanes: np.ndarray, kind: int) -> np.ndarray:
        if kind == KIND_SUM:
            lanes = lanes + masks.next(lanes.shape[0])
        return reduce(lanes, kind)

    return run


def host_lanes(allreduce: HostAllreduce) -> LaneReduce:
    """A lane reduction (edge.formats) carried by a host allreduce: rows of uint32 lanes summed mod 2^32 (as
    the switches' cells sum) or max-reduced. Packed formats are not offered: they pay only on the host link
    to a switch, and masks cancel only in full-width sums."""

    def run(lanes: np.ndarray, kind: int, fmt: int = FMT_INT32, *rest: object) -> np.ndarray:
        if fmt != FMT_INT32 or rest:
            raise ValueError(f"a host reduction carries int32 lanes only, not format {fmt}")
        if kind not in (KIND_SUM, KIND_MAX):
            raise ValueError(f"unknown reduction kind {kind}")
        rows = np.ascontiguousarray(lanes, dtype=np.uint32)
        out = allreduce(rows, "sum" if kind == KIND_SUM else "max")
        return np.asarray(out, dtype=np.uint32).reshape(rows.shape)

    return run


def host_allreduce(
    allreduce: HostAllreduce, values: np.ndarray, mode: str, workers: int, masks: PairwiseMasks | None
) -> np.ndarray:
    """The sum over all workers of `values` in number format `mode` (edge.formats: int32, float32's block
    fixed point, int8 / int4 widened, mxint8) on a host allreduce, every sum masked with `masks` (None:
    plain lanes, the same result). The masks' stream is read in the same order as on the INC path, so
    every worker must make the same calls."""
    if mode not in formats.MODES:
        raise ValueError(f"a masked host allreduce needs one of {', '.join(formats.MODES)}, got {mode!r}")
    reduce = host_lanes(allreduce)
    if masks is not None:
        reduce = masked(reduce, masks)
    return formats.allreduce_with(reduce, values, mode, workers, max_groups=1)
