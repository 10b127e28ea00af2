"""A user's own input vectors for an allreduce run (`tributary allreduce --inputs FILE`).

The generated inputs of a run are recomputed from (seed, rank) by every worker and by the checker. A user
who wants to see what the modes do with *their* numbers (values that overflow a narrow type, all zeros,
blocks of very different scales, NaN and inf, a support of their own) gives one file instead: a .npy of
shape (workers, elements), row r being rank r's vector, or a .npz with one 1-D array per rank (named
rank0, rank1, ... or numpy's own arr_0, arr_1, ...). It is checked once against the mode, before the WAN
starts, and written in the mode's element type into the run directory; every worker then reads its row
of that copy (memory-mapped), and the checker sums the same rows.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from edge import lowprec
from edge.formats import FLOAT32_MAX

# the element type each worker mode takes its vector in
FLOAT_MODES = ("float32", "mxint8", "sparse-float32")
INT32_MODES = ("int32", "sparse")


class InputError(ValueError):
    """The file cannot be a run's inputs; the message says what is wrong and how to fix it."""


def _key_rank(key: str) -> int | None:
    m = re.fullmatch(r"(?:rank|arr_)(\d+)", key)
    return int(m.group(1)) if m else None


def read_rows(path: Path) -> np.ndarray:
    """The file's vectors as one 2-D array (rows = ranks), in the file's own element type."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a .npy or .npz file numpy can read ({exc})") from None
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            ranked = {_key_rank(k): k for k in loaded.files}
            if len(ranked) < len(loaded.files) and None not in ranked:  # rank0 and arr_0 both: which one?
                raise InputError(
                    f"{path}: two arrays name the same rank ({sorted(loaded.files)}): name them either "
                    "rank0, rank1, ... or arr_0, arr_1, ..., not both"
                )
            if None in ranked or not ranked:
                raise InputError(
                    f"{path}: a .npz of inputs holds one array per rank named rank0, rank1, ... (or arr_0, "
                    f"arr_1, ... as numpy.savez names them), got {sorted(loaded.files)}"
                )
            if sorted(ranked) != list(range(len(ranked))):
                raise InputError(f"{path}: ranks must be 0..N-1 without gaps, got {sorted(ranked)}")  # type: ignore[type-var]
            arrays = [np.asarray(loaded[ranked[r]]) for r in range(len(ranked))]
        if any(a.ndim != 1 for a in arrays) or len({a.size for a in arrays}) != 1:
            raise InputError(f"{path}: every rank's array must be 1-D and of the same length")
        return np.stack(arrays)
    rows = np.asarray(loaded)
    if rows.ndim != 2:
        raise InputError(f"{path}: a .npy of inputs is 2-D, (workers, elements); got shape {rows.shape}")
    return rows


def prepare(rows: np.ndarray, mode: str, workers: int, source: str = "the inputs") -> np.ndarray:
    """`rows` checked against the run and converted to the element type `mode` takes: one row per worker,
    at least one element, values the mode can carry (int32 range, the narrow type's range, or float32's:
    NaN and inf allowed in the float modes, a finite value beyond float32 refused rather than made inf)."""
    if rows.shape[0] != workers:
        raise InputError(
            f"{source}: {rows.shape[0]} rows, but the run has {workers} workers (row r is rank r: the sites "
            "in order, each site's workers in order)"
        )
    if rows.shape[1] < 1:
        raise InputError(f"{source}: the vectors are empty")
    if rows.dtype == np.bool_ or not (
        np.issubdtype(rows.dtype, np.integer) or np.issubdtype(rows.dtype, np.floating)
    ):
        raise InputError(f"{source}: numbers are needed, got {rows.dtype}")
    if mode in FLOAT_MODES:
        wide = rows.astype(np.float64)
        finite = np.isfinite(wide)
        if np.any(np.abs(wide[finite]) > FLOAT32_MAX):
            raise InputError(
                f"{source}: a finite value beyond float32's range ({FLOAT32_MAX:.4g}) in mode {mode}"
            )
        return wide.astype(np.float32)
    if np.issubdtype(rows.dtype, np.floating):
        if not np.all(np.isfinite(rows)) or np.any(rows != np.round(rows)):
            raise InputError(f"{source}: mode {mode} sums integers; the file holds non-integer values")
    if mode in INT32_MODES:
        lo, hi, dtype = -(2**31), 2**31 - 1, np.int32
    elif mode in lowprec.BITS:
        lo, hi = lowprec.limits(lowprec.BITS[mode])
        dtype = np.int8
    else:
        raise InputError(f"unknown mode {mode!r}")
    # compared in the file's own type, as Python numbers: a uint64 beyond int64 must not wrap negative first
    least, most = rows.min().item(), rows.max().item()
    if least < lo or most > hi:
        raise InputError(
            f"{source}: values {least:g}..{most:g} do not fit mode {mode}, whose inputs are "
            f"{lo}..{hi} (the sums may exceed it: they are exact, widened at the first switch)"
        )
    return rows.astype(dtype)


def stage_rows(rows: np.ndarray, mode: str, workers: int, into: Path) -> tuple[Path, int]:
    """Check `rows` against the run and write the run's copy (a .npy in the mode's type) into `into`;
    return its path and the vector length."""
    ready = prepare(rows, mode, workers)
    into.mkdir(parents=True, exist_ok=True)
    out = into / "inputs.npy"
    np.save(out, ready)
    return out, int(ready.shape[1])


def row(path: str | Path, rank: int) -> np.ndarray:
    """Rank `rank`'s vector from a run's staged copy (already in the mode's element type)."""
    rows = np.load(path, mmap_mode="r", allow_pickle=False)
    return np.array(rows[rank])


def block_density(path: str | Path) -> float:
    """The largest fraction of 64-element blocks any rank holds values in (a NaN counts): a sparse run's
    declared top-k fraction when the user's vectors bring their own support."""
    rows = np.load(path, mmap_mode="r", allow_pickle=False)
    blocks = -(-rows.shape[1] // 64)
    padded = np.zeros((rows.shape[0], blocks * 64), dtype=np.float64)
    padded[:, : rows.shape[1]] = rows
    held = ((padded != 0) | np.isnan(padded)).reshape(rows.shape[0], blocks, 64).any(axis=2)
    return float(held.sum(axis=1).max() / blocks)
