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

float32 (`sparse_float_allreduce`, mode "sparse-float32") adds one call between the two, the block fixed
point of edge.formats restricted to the union: after the agreement, every worker sends, for each union
block, the binary exponent of its largest magnitude and a flag for inf/NaN (two int32 lanes per block,
max-reduced by the switches), where a worker that does not hold the block sends 0, below every real
exponent (an empty cannot stand in: the switches take empties for sums only). Each union block is then
scaled to int32 fixed point for the number of workers that hold it (not all the job's workers: the
headroom a sum of c values needs is ceil(log2 c) bits), and travels as in the int32 data call, values
where held and empties where not; a block with inf or NaN adds one sparse row of per-element counts, as
the float32 mode's specials row. The dense fallback is the float32 mode itself, chosen by the same rule
with the exponent call in both costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edge import formats
from edge.protocol import FMT_INT32, INC_LANES, KIND_MAX, KIND_SUM

BLOCK = INC_LANES  # values per block: one chunk
# the sparse modes (IncWorker.allreduce's names) and the element type each sums
MODES = {"sparse": "int32", "sparse-float32": "float32"}
# float32: lanes of the exponent call per block (its exponent and its inf/NaN flag), in both paths
FLOAT_EXPONENT_LANES = 2


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


def choose_path(workers: int, density: float | None, exponent_lanes: int = 0) -> tuple[str, str]:
    """("sparse" | "dense", why). Sparse whenever the union, at most workers x density of the blocks
    whatever the supports, leaves room to save more than the agreement costs.

    `exponent_lanes`: lanes per block of an exponent call that both paths make before their values
    (float32: FLOAT_EXPONENT_LANES), over every block on the dense path and over the union's only on the
    sparse one. In dense units, sparse costs agreement + U (1 + x) and dense 1 + x with x = lanes / 64:
    the same rule as int32's with the agreement weighed against the larger dense cost."""
    if density is None:
        return "sparse", "no density declared: sparse is exact for any input"
    worst_union = min(1.0, workers * density)
    per_block = 1.0 + exponent_lanes / BLOCK
    cost = agreement_cost(workers)
    if (worst_union * per_block + cost) >= per_block:
        return "dense", (
            f"{workers} workers at density {density:g} may hold every block between them: the agreement "
            f"({cost / per_block:.2%} of dense bytes and one round trip) could save nothing"
        )
    return "sparse", f"the union holds at most {worst_union:.1%} of the blocks ({workers} x {density:g})"


def block_support(lanes: np.ndarray) -> np.ndarray:
    """Which rows (blocks of 64 int32 lanes) hold a non-zero value."""
    return lanes.any(axis=1)


def agree(reduce: SparseReduce, held: np.ndarray, workers: int) -> np.ndarray:
    """The block agreement: per block, how many workers hold it (every worker gets the same counts)."""
    counts = unpack_counts(reduce(pack_indicators(held, workers), KIND_SUM), held.size, workers)
    if counts.max(initial=0) > workers or (held & (counts == 0)).any():
        raise formats.FormatError(
            f"the block agreement does not add up: {counts.max()} holders of a block among {workers} "
            "workers, or a block held here counted by no one"
        )
    return counts


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
    counts = agree(reduce, held, workers)
    union = np.flatnonzero(counts)
    result = np.zeros_like(lanes)
    if union.size:
        result[union] = reduce(lanes[union], KIND_SUM, FMT_INT32, held[union], counts[union])
    report = SparseReport("sparse", blocks, int(held.sum()), int(union.size), reason)
    return formats.lanes_to_int32(result, arr.size).reshape(arr.shape), report


def float_lanes(values: np.ndarray) -> np.ndarray:
    """float32 input as rows of 64 (zero-padded), refusing what is not numeric, as the float32 mode."""
    arr = np.asarray(values)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise formats.FormatError(f"sparse float32 mode needs numeric input, got {arr.dtype}")
    return formats.pad_to_lanes(np.ascontiguousarray(arr, dtype=np.float32))


def float_support(lanes_f: np.ndarray) -> np.ndarray:
    """Which blocks hold a value that is not zero: inf and NaN count (they must reach the sum)."""
    return (lanes_f != 0).any(axis=1) | np.isnan(lanes_f).any(axis=1)


def union_exponents(lanes_f: np.ndarray, held: np.ndarray) -> np.ndarray:
    """This worker's entry of the exponent call for the given (union) rows: each block's biased exponent
    (formats.block_exponents of its finite values) where it holds the block, 0 where not (below every
    biased exponent: the max ignores it), then one inf/NaN flag per block."""
    finite = np.isfinite(lanes_f)
    clean = np.where(finite, lanes_f, np.float32(0))
    exps = np.where(held, formats.block_exponents(clean), np.uint32(0)).astype(np.uint32)
    return np.concatenate([exps, (~finite.all(axis=1)).astype(np.uint32)])


def sparse_float_allreduce(
    reduce: SparseReduce,
    values: np.ndarray,
    workers: int,
    density: float | None = None,
) -> tuple[np.ndarray, SparseReport]:
    """The sum over all workers of block-sparse float32 `values` (float32 result, the input's shape) in
    block fixed point over the union's blocks only, and what the call did. Each element is within
    `float_error_bound` of the exact sum; inf and NaN come out as IEEE addition gives them (the float32
    mode's rule, edge.formats.apply_specials)."""
    arr = np.asarray(values)
    lanes_f = float_lanes(arr)
    blocks = lanes_f.shape[0]
    held = float_support(lanes_f)
    path, reason = choose_path(workers, density, FLOAT_EXPONENT_LANES)
    if path == "dense":
        out = formats.allreduce_with(reduce, lanes_f, "float32", workers)
        report = SparseReport("dense", blocks, int(held.sum()), blocks, reason)
        return out.reshape(-1)[: arr.size].reshape(arr.shape), report
    counts = agree(reduce, held, workers)
    union = np.flatnonzero(counts)
    result = np.zeros_like(lanes_f)
    if union.size:
        rows, mine, holders = lanes_f[union], held[union], counts[union]
        n = union.size
        agreed = reduce(formats.pad_to_lanes(union_exponents(rows, mine)), KIND_MAX).reshape(-1)
        shifts = formats.scale_exponents(agreed[:n], holders)
        special = np.flatnonzero(agreed[n : 2 * n])
        if special.size and workers > formats.MAX_SPECIAL_WORKERS:
            raise formats.FormatError(
                f"inf/NaN accounting covers at most {formats.MAX_SPECIAL_WORKERS} workers, the job has "
                f"{workers}"
            )
        finite = np.isfinite(rows)
        fixed = formats.float_to_fixed(np.where(finite, rows, np.float32(0)), shifts)
        summed = reduce(
            np.concatenate([fixed, formats.special_counts(rows[special])]),
            KIND_SUM,
            FMT_INT32,
            np.concatenate([mine, mine[special]]),
            np.concatenate([holders, holders[special]]),
        )
        out = formats.fixed_to_float(summed[:n], shifts)
        if special.size:
            out[special] = formats.apply_specials(out[special], summed[n:])
        with np.errstate(over="ignore"):  # a sum beyond float32's range is its infinity, as in IEEE
            result[union] = out.astype(np.float32)
    report = SparseReport("sparse", blocks, int(held.sum()), int(union.size), reason)
    return result.reshape(-1)[: arr.size].reshape(arr.shape), report


def allreduce_mode(
    mode: str, reduce: SparseReduce, values: np.ndarray, workers: int, density: float | None = None
) -> tuple[np.ndarray, SparseReport]:
    """A sparse allreduce in `mode` (a key of MODES)."""
    if mode not in MODES:
        raise ValueError(f"sparse mode must be one of {', '.join(MODES)}, got {mode!r}")
    fn = sparse_allreduce if MODES[mode] == "int32" else sparse_float_allreduce
    return fn(reduce, values, workers, density)


def float_error_bound(inputs: list[np.ndarray], density: float | None = None) -> np.ndarray:
    """Per element, the most the sparse float32 sum of `inputs` (every worker's, as the checker knows
    them) may differ from the exact sum: what the workers agree on, recomputed (the path, each union
    block's exponent and holders), half a fixed-point unit per holder, then the float32 result's own
    rounding (half an ulp, and half the smallest subnormal). Elements whose inputs hold inf or NaN are
    not bounded here (their answer is IEEE's, compared as such)."""
    workers = len(inputs)
    lanes = [float_lanes(x) for x in inputs]
    size = np.asarray(inputs[0]).size
    with np.errstate(invalid="ignore"):  # inf + -inf: NaN, which no bound covers
        exact = np.sum([x.astype(np.float64) for x in lanes], axis=0)
    held = np.array([float_support(x) for x in lanes])
    path, _ = choose_path(workers, density, FLOAT_EXPONENT_LANES)
    if path == "dense":
        clean = [np.where(np.isfinite(x), x, np.float32(0)) for x in lanes]
        agreed = np.max([formats.block_exponents(x) for x in clean], axis=0)
        holders: np.ndarray | int = workers
    else:
        agreed = np.max([union_exponents(x, h)[: h.size] for x, h in zip(lanes, held, strict=True)], axis=0)
        holders = np.maximum(held.sum(axis=0), 1)
    quantum = formats.quantisation_bound(formats.scale_exponents(agreed, holders), holders)
    per_elem = quantum[:, None]  # one bound per block, for each of its 64 elements
    bound = per_elem + (np.abs(exact) + per_elem) * 2.0**-24 + 2.0**-150
    return bound.reshape(-1)[:size]
