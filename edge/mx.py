"""OCP Microscaling MXINT8 (OCP MX v1.0) through the switches.

An MXINT8 block is 32 elements sharing one E8M0 scale X = 2^e (an 8-bit biased exponent, e in -127..127;
code 0xFF is NaN); each element is an int8 P with an implicit scale of 2^-6, so it stands for X * P / 64.
The spec's conversion takes e = floor(log2(max |V|)) - emax, with emax = 0 for INT8 elements, and rounds
V / X to the element grid, clamping to +-127/64 (the symmetric range; -128 is not produced).

Different workers' blocks have different scales, and integer elements can only be summed under one
scale. The workers therefore agree on it first, as the float32 mode agrees on block exponents: each
sends its blocks' E8M0 codes (one per 32-bit lane, 64 blocks to a packet), the switches max-reduce them,
and every worker encodes its block under the agreed (largest) scale E. Encoding under a scale at least
as large as one's own never overflows the element range, and the elements are then summed exactly
(int8 packed on the host link, widened to 32 bits by the first switch: edge.lowprec). The result of a
block is X_E * S / 64 for the exact integer sum S.

Error bound, per element against the exact (float64) sum of the workers' float inputs: each worker's
element is off by at most half a unit of the agreed grid, 2^(E-7), or by less than one unit, 2^(E-6),
where it is clamped (|V| within half a unit of 2 X_E); so |error| <= n * 2^(E-6) for n workers. The sum
(at most n * 127 units) is represented exactly in float32 up to 2^17 workers, so handing it back adds no
rounding. A worker whose own scale is smaller than the agreed one loses bits: that loss is the price of
one shared scale, and it is what the bound covers (mixed-scale blocks are the tests' point).

inf and NaN: MXINT8 elements have neither (a NaN scale would make the whole block NaN). As in float32
mode, a 64-element row with a special value is flagged in the agreement, its finite values are summed
as usual, and one more packet per flagged row counts +inf, -inf and NaN per element, so every element
gets what IEEE addition gives and the others in its block are untouched.
"""

from __future__ import annotations

import numpy as np

from edge import formats, lowprec
from edge.protocol import FMT_INT8, FMT_INT32, INC_LANES, KIND_MAX, KIND_SUM

BLOCK = 32  # elements per MX block
EMAX_INT8 = 0  # the largest power of two below the element range (+-127/64)
ELEMENT_BITS = 6  # the element's implicit scale 2^-6
SCALE_BIAS = 127  # E8M0: code = e + 127; 0xFF is NaN (never produced: specials travel apart)
SCALE_MIN, SCALE_MAX = -127, 127
MAX_ELEMENT = 127


def shared_exponents(blocks: np.ndarray) -> np.ndarray:
    """Per block (rows of 32, finite values): e = floor(log2(max |V|)) - emax, clamped to E8M0's range;
    an all-zero block gets the smallest scale."""
    amax = np.abs(blocks).max(axis=1).astype(np.float64)
    _, exp = np.frexp(amax)  # amax = m * 2^exp with 0.5 <= m < 1: floor(log2(amax)) = exp - 1
    e = np.where(amax > 0, exp.astype(np.int64) - 1 - EMAX_INT8, SCALE_MIN)
    return np.clip(e, SCALE_MIN, SCALE_MAX)


def encode_elements(blocks: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The int8 elements of each block under scale 2^e: round to nearest (half away from zero, as the
    reference implementation does), clamped to +-127."""
    scaled = np.ldexp(blocks.astype(np.float64), (ELEMENT_BITS - e)[:, None])
    q = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    return np.clip(q, -MAX_ELEMENT, MAX_ELEMENT).astype(np.int64)


def decode_sums(sums: np.ndarray, e: np.ndarray) -> np.ndarray:
    return np.ldexp(sums.astype(np.float64), (e - ELEMENT_BITS)[:, None])


def error_bound(e: np.ndarray, workers: int) -> np.ndarray:
    """Per block: the largest |error| of the MXINT8 sum of `workers` inputs under agreed scales 2^e."""
    return workers * np.ldexp(1.0, e - ELEMENT_BITS)


def blocks_of(values: np.ndarray) -> np.ndarray:
    """float32 values as rows of 32 (zero-padded to whole 64-element rows, the unit of the specials)."""
    rows = formats.pad_to_lanes(np.ascontiguousarray(values, dtype=np.float32).reshape(-1))
    return rows.reshape(-1, BLOCK)


def mx_allreduce(reduce: formats.LaneReduce, values: np.ndarray, workers: int, max_groups: int) -> np.ndarray:
    """The sum over all workers of float `values`, carried as MXINT8 under agreed per-block scales."""
    arr = np.asarray(values)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise formats.FormatError(f"mxint8 mode needs numeric input, got {arr.dtype}")
    blocks = blocks_of(arr)
    finite = np.isfinite(blocks)
    clean = np.where(finite, blocks, np.float32(0))
    rows = blocks.shape[0] * BLOCK // INC_LANES
    special_local = ~finite.reshape(rows, INC_LANES).all(axis=1)
    # one agreement: every block's E8M0 code, and per 64-element row whether anyone has inf or NaN there
    codes = (shared_exponents(clean) + SCALE_BIAS).astype(np.uint32)
    local = np.concatenate([codes, special_local.astype(np.uint32)])
    agreed = reduce(formats.pad_to_lanes(local), KIND_MAX).reshape(-1)
    e = agreed[: codes.size].astype(np.int64) - SCALE_BIAS
    special = np.flatnonzero(agreed[codes.size : codes.size + rows])
    if special.size and workers > formats.MAX_SPECIAL_WORKERS:
        raise formats.FormatError(
            f"inf/NaN accounting covers at most {formats.MAX_SPECIAL_WORKERS} workers, the job has {workers}"
        )
    elements = encode_elements(clean, e).reshape(-1)
    fmt = lowprec.choose_format("int8", workers, max_groups)
    if fmt == FMT_INT32:
        sums = formats.lanes_to_int32(
            reduce(formats.int32_to_lanes(elements.astype(np.int32)), KIND_SUM), elements.size
        )
    else:
        sums = lowprec.unpack(
            reduce(lowprec.pack(elements, FMT_INT8), KIND_SUM, FMT_INT8), FMT_INT8, elements.size
        )
    result = decode_sums(sums.reshape(-1, BLOCK), e).reshape(rows, INC_LANES)
    if special.size:
        counts = reduce(formats.special_counts(blocks.reshape(rows, INC_LANES)[special]), KIND_SUM)
        result[special] = formats.apply_specials(result[special], counts)
    with np.errstate(over="ignore"):  # a sum beyond float32's range is its infinity, as IEEE addition gives
        return result.reshape(-1)[: arr.size].astype(np.float32).reshape(arr.shape)


def agreed_scales(inputs: list[np.ndarray]) -> np.ndarray:
    """What the agreement gives for these workers' inputs (for checkers): the per-block max of the
    shared exponents of their finite values."""
    per = []
    for x in inputs:
        b = blocks_of(x)
        per.append(shared_exponents(np.where(np.isfinite(b), b, np.float32(0))))
    return np.max(per, axis=0)
