"""Number formats: what the switch can sum (int32 lanes) and how workers get there.

- int32: exact. Lanes are the two's-complement bit patterns; the switch's wrap-around sum is the exact
  sum modulo 2**32, so the result is exact whenever the true sum fits in int32.
- float32: fixed point with one exponent per block (one packet of 64 values), agreed by all workers
  before the values are sent, as SwitchML does: each worker reports the binary exponent of its largest
  magnitude in each block, the switches max-reduce them, and every worker scales its block by
  2**(31 - E - ceil(log2 n)) so that the sum of n workers cannot overflow int32.
"""

from __future__ import annotations

import math

import numpy as np

from edge.protocol import INC_LANES

EXPONENT_BIAS = 256  # exponents travel unsigned (the switch's max is unsigned)


def pad_to_lanes(values: np.ndarray) -> np.ndarray:
    """Flatten and zero-pad to a whole number of packets: shape (chunks, INC_LANES)."""
    flat = values.reshape(-1)
    chunks = max(1, -(-flat.size // INC_LANES))
    out = np.zeros(chunks * INC_LANES, dtype=flat.dtype)
    out[: flat.size] = flat
    return out.reshape(chunks, INC_LANES)


def int32_to_lanes(values: np.ndarray) -> np.ndarray:
    return pad_to_lanes(np.ascontiguousarray(values, dtype=np.int32)).view(np.uint32)


def lanes_to_int32(lanes: np.ndarray, size: int) -> np.ndarray:
    return lanes.reshape(-1).view(np.int32)[:size].copy()


def block_exponents(lanes_f: np.ndarray) -> np.ndarray:
    """Per block (row): the e of frexp(max |x|), so that every |x| < 2**e; biased to be unsigned."""
    peak = np.abs(lanes_f).max(axis=1)
    _, exp = np.frexp(peak.astype(np.float64))
    return (exp.astype(np.int64) + EXPONENT_BIAS).astype(np.uint32)


def scale_exponents(agreed: np.ndarray, workers: int) -> np.ndarray:
    """The power of two each block is multiplied by before rounding to int32."""
    headroom = max(0, math.ceil(math.log2(workers))) if workers > 1 else 0
    e = agreed.astype(np.int64) - EXPONENT_BIAS
    return 31 - e - headroom - 1


def float_to_fixed(lanes_f: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    scaled = np.ldexp(lanes_f.astype(np.float64), shifts[:, None])
    return np.rint(scaled).astype(np.int64).astype(np.int32).view(np.uint32)


def fixed_to_float(lanes: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    as_int = lanes.view(np.int32).astype(np.float64)
    return np.ldexp(as_int, -shifts[:, None])


def quantisation_bound(shifts: np.ndarray, workers: int) -> np.ndarray:
    """Largest possible |error| per block of the float32 sum: each worker rounds to half a unit."""
    return workers * 0.5 * np.ldexp(1.0, -shifts)
