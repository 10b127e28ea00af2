"""Low-precision integers (int8, int4) on the INC wire: packed towards the switch, widened there.

A sum of n int8 values needs 8 + log2(n) bits, so summing in int8 overflows (six workers of random
int8 data already do). The workers therefore pack their narrow values (4 int8 or 8 int4 to a 32-bit
word) only on the host link, where every byte is one worker's; the first switch sign-extends them into
its 32-bit cells (p4src/include/aggregation.p4), and everything beyond it - partial sums between
switches, the results - is wide. The sums are exact; a user who wants a narrow result narrows it
explicitly (`narrow`), by saturation or by wrap-around, and `narrowing_errors` says what each costs.

Layout (docs/protocol.md): a packed packet carries G consecutive chunks (G = 4 for int8, 8 for int4) in
its 64 words, word i holding lane i of chunks 0..G-1, chunk 0 in the top bits; so one 322-byte frame
carries 256 int8 or 512 int4 values, where int32 needs 4 or 8 frames. The result comes back as one wide
packet: 4 x 64 int32 (int8), or 8 x 64 int16 (int4: a 32-bit int4 result would be 2 KB, beyond the
links' MTU; 16 bits hold any sum of up to 4096 int4 values exactly, and larger int4 jobs travel packed
as int8 instead).
"""

from __future__ import annotations

import numpy as np

from edge.protocol import FMT_INT4, FMT_INT8, FMT_INT32, GROUPS, INC_LANES

BITS = {"int8": 8, "int4": 4}
MAX_INT4_WORKERS = 4096  # |sum| <= 8 * 4096 = 2^15: every int4 sum of up to 4096 workers fits int16
NARROWING = ("saturate", "wrap")


class NarrowRangeError(ValueError):
    """Input outside the narrow type's range, or not integers (with the first offending element)."""


def limits(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def check_narrow(values: np.ndarray, mode: str) -> np.ndarray:
    """The input as int64, refusing (never clipping) what the narrow type cannot hold."""
    bits = BITS[mode]
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise NarrowRangeError(f"{mode} mode needs integer input, got {arr.dtype}")
    lo, hi = limits(bits)
    flat = arr.reshape(-1).astype(np.int64)
    bad = (flat < lo) | (flat > hi)
    if bad.any():
        i = int(np.argmax(bad))
        raise NarrowRangeError(
            f"{mode} mode: element {i} is {int(flat[i])}, outside {mode} ({lo}..{hi}); scale the input or "
            "use int32 mode"
        )
    return flat


def choose_format(mode: str, workers: int, max_groups: int) -> int:
    """The packing a job can use: `max_groups` is the largest G its slots allow (a multiple of G)."""
    if mode == "int4" and workers <= MAX_INT4_WORKERS and max_groups >= 8:
        return FMT_INT4
    if max_groups >= 4:
        return FMT_INT8  # int4 values fit int8 too
    return FMT_INT32


def pack(flat: np.ndarray, fmt: int) -> np.ndarray:
    """Rows of 64 uint32 words, each row one packed packet of G chunks (zero-padded)."""
    groups = GROUPS[fmt]
    bits = 32 // groups
    per_row = groups * INC_LANES
    rows = max(1, -(-flat.size // per_row))
    x = np.zeros(rows * per_row, dtype=np.int64)
    x[: flat.size] = flat
    x = x.reshape(rows, groups, INC_LANES) & ((1 << bits) - 1)
    shifts = (32 - bits * (np.arange(groups, dtype=np.int64) + 1))[None, :, None]
    return (x << shifts).sum(axis=1).astype(np.uint32)


def unpack(rows: np.ndarray, fmt: int, size: int) -> np.ndarray:
    """The sums (int32) from the wide result rows of packed packets in format `fmt`."""
    n = rows.shape[0]
    if fmt == FMT_INT8:  # wide32: chunk g is words 64g .. 64g + 63
        sums = rows.view(np.int32).reshape(n, 4, INC_LANES)
    elif fmt == FMT_INT4:  # wide16: block h holds chunks 2h (high halves) and 2h + 1 (low halves)
        blocks = rows.reshape(n, 4, INC_LANES)
        hi = (blocks >> 16).astype(np.uint16).view(np.int16)
        lo = (blocks & 0xFFFF).astype(np.uint16).view(np.int16)
        sums = np.stack([hi, lo], axis=2).reshape(n, 8, INC_LANES).astype(np.int32)
    else:
        raise ValueError(f"format {fmt} is not packed")
    return sums.reshape(-1)[:size].copy()


def narrow(sums: np.ndarray, mode: str, how: str) -> np.ndarray:
    """The exact sums narrowed to `mode` where the user asks for it: "saturate" clips to the type's range,
    "wrap" keeps the low bits (two's complement), as an accumulator of that width would."""
    bits = BITS[mode]
    lo, hi = limits(bits)
    s = np.asarray(sums).astype(np.int64)
    if how == "saturate":
        return np.clip(s, lo, hi)
    if how == "wrap":
        return ((s - lo) % (1 << bits)) + lo
    raise ValueError(f"narrowing is one of {NARROWING}, got {how!r}")


def narrowing_errors(sums: np.ndarray, mode: str) -> dict[str, dict[str, float]]:
    """What narrowing the exact sums would cost, per alternative: the largest |error| and the share of
    elements that change."""
    s = np.asarray(sums).astype(np.int64)
    out = {}
    for how in NARROWING:
        diff = np.abs(narrow(s, mode, how) - s)
        out[how] = {
            "max_abs_error": float(diff.max()) if diff.size else 0.0,
            "changed_fraction": round(float(np.count_nonzero(diff)) / max(1, diff.size), 6),
        }
    return out
