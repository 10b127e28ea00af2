"""Number formats: what the switch can sum (int32 lanes) and how workers get there.

- int32: exact. Lanes are the two's-complement bit patterns; the switch's wrap-around sum is the exact
  sum modulo 2**32, so the result is exact whenever the true sum fits in int32.
- float32: fixed point with one exponent per block (one packet of 64 values), agreed by all workers
  before the values are sent, as SwitchML does: each worker reports the binary exponent of its largest
  magnitude in each block, the switches max-reduce them, and every worker scales its block by
  2**(31 - E - ceil(log2 n)) so that the sum of n workers cannot overflow int32.
- float32 specials: inf and NaN cannot be fixed point. A block holding one is flagged in the exponent
  agreement (so every worker knows), its finite values are summed as usual, and one extra packet per such
  block counts, per element, the workers that hold +inf, -inf and NaN there; the result is what IEEE
  addition gives (NaN if any NaN or both infinities, else the infinity, else the finite sum), and the
  block's other elements are untouched.

- int8 / int4: exact sums of narrow integers, packed 4 / 8 to a word towards the switch and widened
  there (edge.lowprec).
- mxint8: OCP MX blocks of 32 int8 elements under one E8M0 scale, the scales agreed (max) before the
  elements are summed (edge.mx).

`allreduce_with(reduce, values, mode, workers)` runs a whole allreduce on any lane reduction (the INC
worker's, or a test's), so the format logic lives in one place. A reduction is called as
`reduce(lanes, kind)` for int32 lanes and `reduce(rows, KIND_SUM, fmt)` for a packed format.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from edge import lowprec
from edge.protocol import FMT_INT32, FMT_WIDE32, GROUPS, INC_LANES, KIND_MAX, KIND_SUM, WIDE_WORDS

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
SPECIAL_BITS = 10  # per class and element: up to 1023 workers holding +inf (or -inf, or NaN) there
MAX_SPECIAL_WORKERS = (1 << SPECIAL_BITS) - 1

LaneReduce = Callable[..., np.ndarray]  # (lanes, kind) or (rows, kind, fmt) -> reduced rows
MODES = ("int32", "float32", "int8", "int4", "mxint8")


class FormatError(ValueError):
    """Input the chosen number format cannot carry (with where and why)."""


EXPONENT_BIAS = 256  # exponents travel unsigned (the switch's max is unsigned)


def pad_to_lanes(values: np.ndarray) -> np.ndarray:
    """Flatten and zero-pad to a whole number of packets: shape (chunks, INC_LANES)."""
    flat = values.reshape(-1)
    chunks = max(1, -(-flat.size // INC_LANES))
    out = np.zeros(chunks * INC_LANES, dtype=flat.dtype)
    out[: flat.size] = flat
    return out.reshape(chunks, INC_LANES)


def check_int32(values: np.ndarray) -> np.ndarray:
    """The input as int32, refusing (never wrapping) what int32 cannot hold: non-integer dtypes and
    integers outside -2^31 .. 2^31-1."""
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        return arr.astype(np.int32)
    if not np.issubdtype(arr.dtype, np.integer):
        raise FormatError(
            f"int32 mode needs integer input, got {arr.dtype} (use float32 mode for real numbers)"
        )
    if arr.size and arr.dtype.itemsize >= 4 and arr.dtype != np.int32:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < INT32_MIN or hi > INT32_MAX:
            flat = arr.reshape(-1)
            bad = int(np.argmax((flat < INT32_MIN) | (flat > INT32_MAX)))
            raise FormatError(
                f"int32 mode: element {bad} is {int(flat[bad])}, outside int32 "
                f"({INT32_MIN}..{INT32_MAX}); scale the input or use float32 mode"
            )
    return arr.astype(np.int32, copy=False)


FLOAT32_MAX = float(np.finfo(np.float32).max)
# the least real number that rounds to infinity in float32: its largest finite value plus half an ulp
FLOAT32_OVERFLOW = FLOAT32_MAX + 2.0**103


def quantised_float_ok(got: np.ndarray, exact: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Per element: is a quantised (fixed-point or MX) float32 result right for the exact float64 sum
    `exact` (NaN or an infinity where the inputs' NaN and infinities make one, as IEEE addition does) and
    its error bound `bound`? A NaN or infinite sum must come back as itself. A finite one must come back
    within its bound; and where the bound reaches float32's overflow threshold, the infinity of the sum's
    sign is right too, whichever side of the threshold the sum lies: the fixed-point sum is only known
    to `bound`, so rounding it to float32 may give the infinity for a sum just below the threshold
    (largest value plus 1e31: IEEE rounds it down) or a finite value for one just above (MX cannot
    even encode float32's largest values)."""
    g = np.asarray(got, dtype=np.float64)
    x = np.asarray(exact, dtype=np.float64)
    b = np.asarray(bound, dtype=np.float64)
    special = ~np.isfinite(x)
    same_special = (np.isnan(g) & np.isnan(x)) | (np.isinf(x) & (g == x))
    with np.errstate(invalid="ignore"):
        within = np.isfinite(g) & (np.abs(g - x) <= b)
    overflowed = np.isinf(g) & (np.sign(g) == np.sign(x)) & (np.abs(x) + b >= FLOAT32_OVERFLOW)
    return np.where(special, same_special, within | overflowed)


def wrapped_sums(exact: np.ndarray) -> dict[str, int]:
    """How many elements of an int32 allreduce wrapped: int32 inputs are taken whole, but their sum is
    int32 too (the switches add two's complement, as a host int32 sum does), so an exact sum beyond
    -2^31 .. 2^31-1 arrives modulo 2^32. `exact` is the wide (int64) sum; the result is the count and the
    first such element (-1 if none), so a user sees what "exact" (bit for bit the int32 sum) left out."""
    s = np.asarray(exact, dtype=np.int64).reshape(-1)
    beyond = (s < INT32_MIN) | (s > INT32_MAX)
    count = int(np.count_nonzero(beyond))
    return {"elements": count, "of": int(s.size), "first": int(np.argmax(beyond)) if count else -1}


def int32_to_lanes(values: np.ndarray) -> np.ndarray:
    return pad_to_lanes(np.ascontiguousarray(check_int32(values))).view(np.uint32)


def lanes_to_int32(lanes: np.ndarray, size: int) -> np.ndarray:
    return lanes.reshape(-1).view(np.int32)[:size].copy()


def block_exponents(lanes_f: np.ndarray) -> np.ndarray:
    """Per block (row): the e of frexp(max |x|), so that every |x| < 2**e; biased to be unsigned. An
    all-zero block has no exponent and gets 0, below every real one (a subnormal's is -148 + 256), so the
    max over the workers ignores it: frexp(0)'s e = 0 would scale another worker's block of 1e-10 as if
    it reached 1, and round it to nothing."""
    peak = np.abs(lanes_f).max(axis=1)
    _, exp = np.frexp(peak.astype(np.float64))
    return np.where(peak > 0, exp.astype(np.int64) + EXPONENT_BIAS, 0).astype(np.uint32)


def headroom_bits(workers: int | np.ndarray) -> int | np.ndarray:
    """ceil(log2 n): the bits a sum of n values needs above one value's (0 for one worker)."""
    if isinstance(workers, np.ndarray):
        return np.array([headroom_bits(int(w)) for w in workers.reshape(-1)], dtype=np.int64).reshape(
            workers.shape
        )
    return max(0, int(workers - 1).bit_length()) if workers > 1 else 0


def scale_exponents(agreed: np.ndarray, workers: int | np.ndarray) -> np.ndarray:
    """The power of two each block is multiplied by before rounding to int32. `workers`: how many
    values each block's sum adds (one number for all blocks, or one per block: sparse blocks)."""
    e = agreed.astype(np.int64) - EXPONENT_BIAS
    return 31 - e - headroom_bits(workers) - 1


def float_to_fixed(lanes_f: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    scaled = np.ldexp(lanes_f.astype(np.float64), shifts[:, None])
    return np.rint(scaled).astype(np.int64).astype(np.int32).view(np.uint32)


def fixed_to_float(lanes: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    as_int = lanes.view(np.int32).astype(np.float64)
    return np.ldexp(as_int, -shifts[:, None])


def quantisation_bound(shifts: np.ndarray, workers: int | np.ndarray) -> np.ndarray:
    """Largest possible |error| per block of the float32 sum: each worker rounds to half a unit."""
    return workers * 0.5 * np.ldexp(1.0, -shifts)


def special_counts(lanes_f: np.ndarray) -> np.ndarray:
    """Per element: 1 for +inf, 1 << 10 for -inf, 1 << 20 for NaN (summed over workers: the counts)."""
    pos = np.isposinf(lanes_f).astype(np.uint32)
    neg = np.isneginf(lanes_f).astype(np.uint32) << SPECIAL_BITS
    nan = np.isnan(lanes_f).astype(np.uint32) << (2 * SPECIAL_BITS)
    return pos | neg | nan


def apply_specials(result: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """IEEE addition's answer where any worker held a special value: NaN for a NaN or for +inf and -inf
    together, else the infinity; other elements keep their finite sum."""
    mask = (1 << SPECIAL_BITS) - 1
    pos, neg, nan = counts & mask, (counts >> SPECIAL_BITS) & mask, (counts >> (2 * SPECIAL_BITS)) & mask
    out = result.copy()
    out[pos > 0] = np.inf
    out[neg > 0] = -np.inf
    out[(nan > 0) | ((pos > 0) & (neg > 0))] = np.nan
    return out


def narrow_allreduce(
    reduce: LaneReduce, arr: np.ndarray, mode: str, workers: int, max_groups: int
) -> np.ndarray:
    """int8 / int4: the exact sums (int32), packed on the way to the switch where the slots allow."""
    try:
        flat = lowprec.check_narrow(arr, mode)
    except lowprec.NarrowRangeError as exc:
        raise FormatError(str(exc)) from None
    fmt = lowprec.choose_format(mode, workers, max_groups)
    if fmt == FMT_INT32:
        out = reduce(int32_to_lanes(flat.astype(np.int32)), KIND_SUM)
        return lanes_to_int32(out, flat.size).reshape(arr.shape)
    out = reduce(lowprec.pack(flat, fmt), KIND_SUM, fmt)
    return lowprec.unpack(out, fmt, flat.size).reshape(arr.shape)


VALUES_PER_PACKET = (INC_LANES, WIDE_WORDS)  # int32 sums: 64 lanes to a packet, or 256 (wide32)
WIDE_MODES = ("int32", "float32")  # the modes whose sums may travel 256 values to a packet (allreduce_with)


def sum_lanes(reduce: LaneReduce, lanes: np.ndarray, wide: bool) -> np.ndarray:
    """The wrap-around sum of rows of INC_LANES uint32 lanes. `wide`: four rows to a packet (format
    wide32, 1090-byte frames instead of four of 322), so a worker and every switch handle a quarter of the
    packets for 15 % fewer bytes; the rows are padded with zero rows to a multiple of four."""
    if not wide:
        return reduce(lanes, KIND_SUM)
    groups = GROUPS[FMT_WIDE32]
    rows = lanes.shape[0]
    if rows % groups:
        lanes = np.concatenate([lanes, np.zeros((-rows % groups, INC_LANES), dtype=lanes.dtype)])
    out = reduce(lanes.reshape(-1, WIDE_WORDS), KIND_SUM, FMT_WIDE32)
    return out.reshape(-1, INC_LANES)[:rows]


def allreduce_with(
    reduce: LaneReduce,
    values: np.ndarray,
    mode: str,
    workers: int,
    max_groups: int = 8,
    values_per_packet: int = INC_LANES,
) -> np.ndarray:
    """A whole allreduce of `values` in number format `mode` on a lane reduction `reduce(lanes, kind)`
    (rows of INC_LANES uint32 in, reduced rows out), with the input's shape. `max_groups`: the most
    chunks a packed packet may carry (the job's slots must be a multiple; 1 sends int32 lanes only).
    `values_per_packet`: 64, or 256 for int32 and float32's sums in wide packets (where `max_groups`
    allows four chunks to a packet; the exponent agreement, a max, stays at 64)."""
    if values_per_packet not in VALUES_PER_PACKET:
        raise ValueError(f"values per packet must be one of {VALUES_PER_PACKET}, got {values_per_packet}")
    wide = values_per_packet == WIDE_WORDS and max_groups >= GROUPS[FMT_WIDE32]
    arr = np.asarray(values)
    if mode == "int32":
        out = sum_lanes(reduce, int32_to_lanes(arr), wide)
        return lanes_to_int32(out, arr.size).reshape(arr.shape)
    if mode in lowprec.BITS:
        return narrow_allreduce(reduce, arr, mode, workers, max_groups)
    if mode == "mxint8":
        from edge import mx  # mx builds on this module

        return mx.mx_allreduce(reduce, arr, workers, max_groups)
    if mode != "float32":
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise FormatError(f"float32 mode needs numeric input, got {arr.dtype}")
    lanes_f = pad_to_lanes(np.ascontiguousarray(arr, dtype=np.float32))
    finite = np.isfinite(lanes_f)
    special_local = ~finite.all(axis=1)
    clean = np.where(finite, lanes_f, np.float32(0))
    blocks = lanes_f.shape[0]
    # one agreement for both: the blocks' exponents and whether any worker has a special value there
    local = np.concatenate([block_exponents(clean), special_local.astype(np.uint32)])
    agreed = reduce(pad_to_lanes(local), KIND_MAX).reshape(-1)
    shifts = scale_exponents(agreed[:blocks], workers)
    special = np.flatnonzero(agreed[blocks : 2 * blocks])
    if special.size and workers > MAX_SPECIAL_WORKERS:
        raise FormatError(
            f"inf/NaN accounting covers at most {MAX_SPECIAL_WORKERS} workers, the job has {workers}"
        )
    fixed = float_to_fixed(clean, shifts)
    summed = sum_lanes(reduce, np.concatenate([fixed, special_counts(lanes_f[special])]), wide)
    result = fixed_to_float(summed[:blocks], shifts)
    if special.size:
        result[special] = apply_specials(result[special], summed[blocks:])
    with np.errstate(over="ignore"):  # a sum beyond float32's range is its infinity, as IEEE addition gives
        return result.reshape(-1)[: arr.size].astype(np.float32).reshape(arr.shape)
