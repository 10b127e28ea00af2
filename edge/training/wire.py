"""The number formats a gradient travels in, and how a summed vector comes back as an average.

- "float32": the gradient as float32, which hosts sum in float32 (ring, hierarchical: the order of the
  additions differs between algorithms, so results differ in the last bits) and the switches in block
  fixed point (edge/formats.py: exact integer sums of values rounded per block).
- "exact": every worker rounds its gradient to fixed point with one scale known to all (2**-20, a grid of
  about 1e-6) and sends int32; integer sums do not depend on the order of additions, so every strategy,
  host or switch, returns the very same bits and training curves are identical. Values beyond +-2**24
  units (+-16) are clipped, so that the sum of up to 128 workers cannot overflow int32; clips are counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FORMATS = ("float32", "exact")
EXACT_SHIFT = 20
EXACT_LIMIT = 1 << 24  # |units| per worker: 128 workers' sum stays inside int32


@dataclass
class Encoded:
    payload: np.ndarray  # float32 or int32, what the allreduce sums
    clipped: int = 0  # elements that had to be clipped to the exact format's range


def encode(vector: np.ndarray, fmt: str) -> Encoded:
    if fmt == "float32":
        return Encoded(np.ascontiguousarray(vector, dtype=np.float32))
    if fmt == "exact":
        if not np.all(np.isfinite(vector)):
            raise FloatingPointError(
                "the gradient holds inf or NaN: training diverged (lower the learning rate)"
            )
        units = np.rint(np.ldexp(np.asarray(vector, dtype=np.float64), EXACT_SHIFT))
        clipped = int(np.count_nonzero(np.abs(units) > EXACT_LIMIT))
        return Encoded(np.clip(units, -EXACT_LIMIT, EXACT_LIMIT).astype(np.int32), clipped)
    raise ValueError(f"unknown gradient format {fmt!r} (expected one of {', '.join(FORMATS)})")


def decode_mean(summed: np.ndarray, fmt: str, workers: int) -> np.ndarray:
    """The average over `workers` of what was summed, as float64."""
    if fmt == "exact":
        return np.ldexp(summed.astype(np.float64), -EXACT_SHIFT) / workers
    return summed.astype(np.float64) / workers
