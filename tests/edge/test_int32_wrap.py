"""int32 sums are int32 (two's complement in the switches, as on a host): where a user's exact sum leaves
int32 the result arrives modulo 2^32 and is still "exact" as the int32 sum; the JSON's `wrapped` says how
many elements that was, so a user summing near int32's ends is told rather than left to find out."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from edge import formats, inputs
from topo.allreduce_run import AlgoResult
from topo.cli import build_parser
from topo.commands.allreduce import _obstacle_keys


def test_wrapped_sums_counts_the_elements_beyond_int32() -> None:
    wide = np.array([0, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 6 * (2**31 - 1)], dtype=np.int64)
    assert formats.wrapped_sums(wide) == {"elements": 3, "of": 6, "first": 2}
    assert formats.wrapped_sums(np.zeros(4, np.int64)) == {"elements": 0, "of": 4, "first": -1}


def _args(tmp_path: Path, rows: np.ndarray, mode: str, dtype: str | None = None) -> argparse.Namespace:
    worker_mode = "sparse" if mode == "sparse" else mode
    staged, elements = inputs.stage_rows(rows, worker_mode, rows.shape[0], tmp_path)
    # the arguments as the command parses them, with what it adds once the inputs are staged
    argv = ["allreduce", "--sites", "TYO,NYC,LON", "--workers-per-site", "2", "--mode", mode]
    args = build_parser().parse_args([*argv, *(["--dtype", dtype] if dtype else [])])
    args.elements, args.density, args.staged_inputs = elements, 0.01, str(staged)
    return args


def _one_run(elements: int) -> list[AlgoResult]:
    return [AlgoResult("inc", 0.5, elements, True, 0.0, digests=["d"] * 6)]


def test_a_run_whose_sums_leave_int32_reports_them(tmp_path: Path) -> None:
    rows = np.zeros((6, 65), dtype=np.int64)
    rows[:, 0] = 2**31 - 1  # six times int32's max
    rows[:, 64] = -(2**31)  # the last element, six times int32's min
    rows[0, 1], rows[1, 1] = 2**31 - 1, -(2**31)  # fits
    args = _args(tmp_path, rows, "int32")
    inc = _one_run(65)
    assert _obstacle_keys(inc, [inc], args)["wrapped"] == {"elements": 2, "of": 65, "first": 0}


def test_sparse_int32_reports_it_too_and_float_modes_do_not(tmp_path: Path) -> None:
    rows = np.zeros((6, 128), dtype=np.int64)
    rows[:, 64:] = 2**31 - 1
    args = _args(tmp_path / "s", rows, "sparse")
    inc = _one_run(128)
    assert _obstacle_keys(inc, [inc], args)["wrapped"] == {"elements": 64, "of": 128, "first": 64}
    fargs = _args(tmp_path / "f", rows.astype(np.float32), "float32")
    assert "wrapped" not in _obstacle_keys(inc, [inc], fargs)
