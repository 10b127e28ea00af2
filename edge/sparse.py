"""Block-sparse allreduce: only the 64-value blocks that hold a non-zero value travel with their values.

Sparse gradients (top-k by block, as OmniReduce sends them) are mostly zero blocks. Summing them dense
moves every zero through every link; here a block costs its values only on the links below which some
worker holds it (docs/protocol.md, "Sparse vectors"):

1. Agreement. Every worker contributes one indicator per block (1 where its block is not all zero),
   packed into int32 lanes as fields of b = bit_length(workers) bits, so that the switches' 32-bit
   sums add the fields without a carry crossing between them (a field's sum is at most the number of
   workers, below 2^b): 64 x floor(32 / b) blocks to a packet, 640 for six workers, in both
   directions. Every worker then knows, for every block, how many workers hold it: the union of the
   supports, and the count each block's result must sum.
2. Data. The union's blocks, in block order, one chunk each. A worker sends the blocks it holds with
   their values and an empty contribution (the INC header alone, 66 bytes on the wire against 322)
   for the union's blocks it does not hold; blocks outside the union are not sent by anyone. A switch
   adds the values it gets; an aggregate none of whose contributions had values leaves empty, so the
   density of what crosses each level of the tree is the union of the supports below it (fill-in).
   The empties are what makes the protocol reliable without anything new: every worker still sends
   one packet per chunk, so a cell completes, is recovered and is reused exactly as a dense chunk's.
3. Scatter: the union's results go back to their blocks; every other block is zero.

The path falls back to dense int32 where sparse cannot pay: when `density` (each worker's top-k
fraction, which all workers know since it is the job's parameter) allows a union covering nearly the
whole vector (workers x density), the agreement would be spent for nothing, and the blocks go dense
without it. The decision uses only what every worker knows, so all take the same path; without a
declared density the path is always sparse, which is exact for any input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edge import formats
from edge.protocol import FMT_INT32, INC_LANES, KIND_SUM

BLOCK = INC_LANES  # values per block: one chunk


def field_bits(workers: int) -> int:
    """Bits of one block's field in the agreement: enough for a sum of `workers` indicators."""
    return max(1, workers.bit_length())


def agreement_chunks(blocks: int, workers: int) -> int:
    """Packets (chunks of 64 lanes) of the block agreement, in each direction."""
    per_chunk = INC_LANES * (32 // field_bits(workers))
    return -(-blocks // per_chunk)


def agreement_cost(workers: int) -> float:
    """The agreement's bytes against a dense vector's: one field per block of 64 int32 values."""
    return 1.0 / (BLOCK * (32 // field_bits(workers)))


def pack_indicators(held: np.ndarray, workers: int) -> np.ndarray:
    """One field of field_bits(workers) bits per block, floor(32 / bits) to a 32-bit lane, as lanes."""
    b = field_bits(workers)
    per_lane = 32 // b
    ind = np.zeros(-(-held.size // per_lane) * per_lane, dtype=np.uint64)
    ind[: held.size] = held
    shifts = (np.arange(per_lane, dtype=np.uint64) * np.uint64(b))[None, :]
    words = (ind.reshape(-1, per_lane) << shifts).sum(axis=1).astype(np.uint32)
    return formats.pad_to_lanes(words)


def unpack_counts(lanes: np.ndarray, blocks: int, workers: int) -> np.ndarray:
    """The per-block sums of the packed indicators (pack_indicators, summed by the switches)."""
    b = field_bits(workers)
    per_lane = 32 // b
    shifts = (np.arange(per_lane, dtype=np.uint64) * np.uint64(b))[None, :]
    words = lanes.reshape(-1).astype(np.uint64)[:, None]
    return ((words >> shifts) & np.uint64((1 << b) - 1)).reshape(-1)[:blocks].astype(np.int64)


SparseReduce = Callable[..., np.ndarray]  # reduce(lanes, kind, fmt=FMT_INT32, present=None, counts=None)


@dataclass
class SparseReport:
    """What one sparse allreduce did, as every worker saw it (they all see the same numbers)."""

    path: str  # "sparse" or "dense"
    blocks: int  # blocks of the vector
    own_blocks: int  # blocks this worker held (not all zero)
    union_blocks: int  # blocks some worker held: the chunks of the data phase
    reason: str

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "blocks": self.blocks,
            "own_density": round(self.own_blocks / self.blocks, 6) if self.blocks else 0.0,
            "union_density": round(self.union_blocks / self.blocks, 6) if self.blocks else 0.0,
            "reason": self.reason,
        }


def choose_path(workers: int, density: float | None) -> tuple[str, str]:
    """("sparse" | "dense", why). Sparse whenever the union, at most workers x density of the blocks
    whatever the supports, leaves room to save more than the agreement costs."""
    if density is None:
        return "sparse", "no density declared: sparse is exact for any input"
    worst_union = min(1.0, workers * density)
    cost = agreement_cost(workers)
    if worst_union + cost >= 1.0:
        return "dense", (
            f"{workers} workers at density {density:g} may hold every block between them: the agreement "
            f"({cost:.2%} of dense bytes and one round trip) could save nothing"
        )
    return "sparse", f"the union holds at most {worst_union:.1%} of the blocks ({workers} x {density:g})"


def block_support(lanes: np.ndarray) -> np.ndarray:
    """Which rows (blocks of 64 int32 lanes) hold a non-zero value."""
    return lanes.any(axis=1)


def sparse_allreduce(
    reduce: SparseReduce,
    values: np.ndarray,
    workers: int,
    density: float | None = None,
) -> tuple[np.ndarray, SparseReport]:
    """The exact int32 sum over all workers of block-sparse `values` (any integer array that fits in
    int32), with the input's shape, and what the call did. `reduce` is a lane reduction that takes
    empty rows (`present`) and per-row result counts (`counts`): IncWorker.reduce_lanes, or a test's."""
    arr = formats.check_int32(values)
    lanes = formats.int32_to_lanes(arr)
    blocks = lanes.shape[0]
    held = block_support(lanes)
    path, reason = choose_path(workers, density)
    if path == "dense":
        out = reduce(lanes, KIND_SUM)
        report = SparseReport("dense", blocks, int(held.sum()), blocks, reason)
        return formats.lanes_to_int32(out, arr.size).reshape(arr.shape), report
    counts = unpack_counts(reduce(pack_indicators(held, workers), KIND_SUM), blocks, workers)
    if counts.max(initial=0) > workers or (held & (counts == 0)).any():
        raise formats.FormatError(
            f"the block agreement does not add up: {counts.max()} holders of a block among {workers} "
            "workers, or a block held here counted by no one"
        )
    union = np.flatnonzero(counts)
    result = np.zeros_like(lanes)
    if union.size:
        result[union] = reduce(lanes[union], KIND_SUM, FMT_INT32, held[union], counts[union])
    report = SparseReport("sparse", blocks, int(held.sum()), int(union.size), reason)
    return formats.lanes_to_int32(result, arr.size).reshape(arr.shape), report
