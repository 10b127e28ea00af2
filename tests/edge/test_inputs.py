"""A user's own input vectors (edge/inputs.py): the two file layouts, each mode's element type, and a clear
refusal of whatever the mode cannot carry, before any WAN starts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge import inputs
from edge.runner import expected_sum, worker_data


def test_a_npy_and_a_npz_give_the_same_rows(tmp_path: Path) -> None:
    rows = np.arange(12, dtype=np.int64).reshape(3, 4) - 6
    np.save(tmp_path / "a.npy", rows)
    np.savez(tmp_path / "b.npz", rank2=rows[2], rank0=rows[0], rank1=rows[1])
    np.savez(tmp_path / "c.npz", *rows)  # arr_0, arr_1, arr_2
    for name in ("a.npy", "b.npz", "c.npz"):
        np.testing.assert_array_equal(inputs.read_rows(tmp_path / name), rows)


@pytest.mark.parametrize(
    ("mode", "values", "dtype"),
    [
        ("int32", [[2**31 - 1, -(2**31)], [5, -5]], np.int32),
        ("sparse", [[0, 7], [0, 0]], np.int32),
        ("int8", [[127, -128], [127, 127]], np.int8),
        ("int4", [[7, -8], [7.0, 7.0]], np.int8),  # integral floats are taken
        ("float32", [[np.nan, np.inf], [-np.inf, 1e-30]], np.float32),
        ("mxint8", [[3e38, -3e38], [0, 0]], np.float32),
        ("sparse-float32", [[0, np.nan], [0, 0]], np.float32),
    ],
)
def test_each_mode_takes_its_own_element_type(mode: str, values: list, dtype: type) -> None:  # type: ignore[type-arg]
    got = inputs.prepare(np.array(values), mode, workers=2)
    assert got.dtype == dtype and got.shape == (2, 2)
    np.testing.assert_array_equal(got, np.array(values).astype(dtype))


@pytest.mark.parametrize(
    ("mode", "values", "says"),
    [
        ("int32", [[2**31, 0], [0, 0]], "do not fit mode int32"),
        ("int8", [[128, 0], [0, 0]], r"-128\.\.127"),
        ("int4", [[8, 0], [0, 0]], r"-8\.\.7"),
        ("int4", [[0.5, 0], [0, 0]], "non-integer"),
        ("int32", [[np.nan, 0], [0, 0]], "non-integer"),
        ("float32", [[1e39, 0], [0, 0]], "beyond float32"),
        ("float32", [[True, False], [False, False]], "numbers are needed"),
    ],
)
def test_what_a_mode_cannot_carry_is_refused_with_the_reason(mode: str, values: list, says: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(inputs.InputError, match=says):
        inputs.prepare(np.array(values), mode, workers=2)


def test_the_rows_must_match_the_workers(tmp_path: Path) -> None:
    with pytest.raises(inputs.InputError, match="3 rows, but the run has 6 workers"):
        inputs.prepare(np.zeros((3, 8)), "int32", workers=6)
    np.save(tmp_path / "flat.npy", np.zeros(8))
    with pytest.raises(inputs.InputError, match="2-D"):
        inputs.read_rows(tmp_path / "flat.npy")
    np.savez(tmp_path / "gap.npz", rank0=np.zeros(4), rank2=np.zeros(4))
    with pytest.raises(inputs.InputError, match="without gaps"):
        inputs.read_rows(tmp_path / "gap.npz")
    np.savez(tmp_path / "names.npz", grads=np.zeros(4))
    with pytest.raises(inputs.InputError, match="rank0, rank1"):
        inputs.read_rows(tmp_path / "names.npz")
    np.savez(tmp_path / "ragged.npz", rank0=np.zeros(4), rank1=np.zeros(5))
    with pytest.raises(inputs.InputError, match="same length"):
        inputs.read_rows(tmp_path / "ragged.npz")
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(inputs.InputError, match="numpy can read"):
        inputs.read_rows(tmp_path / "junk.npy")
    with pytest.raises(inputs.InputError, match="no such file"):
        inputs.read_rows(tmp_path / "missing.npy")


def test_workers_and_the_checker_read_the_same_staged_rows(tmp_path: Path) -> None:
    rows = np.array([[100, -100, 0, 0], [100, 100, 0, 1]])
    staged, elements = inputs.stage_rows(rows, "int8", 2, tmp_path)
    assert elements == 4
    assert worker_data(1, 1, 4, "int8", inputs=str(staged)).tolist() == [100, 100, 0, 1]
    assert worker_data(1, 1, 4, "int8", inputs=str(staged)).dtype == np.int8
    # the exact sum, wider than int8: 200 overflows the inputs' type, not the sum's
    assert expected_sum(1, [0, 1], 4, "int8", inputs=str(staged)).tolist() == [200, 0, 0, 1]


def test_a_sparse_run_declares_the_largest_support_any_rank_holds(tmp_path: Path) -> None:
    rows = np.zeros((3, 64 * 10), dtype=np.float32)
    rows[0, 5] = 1.0  # block 0
    rows[1, 64 * 3] = np.nan  # block 3: a NaN is held too
    rows[1, 64 * 9 + 1] = -2.0  # block 9
    staged, _ = inputs.stage_rows(rows, "sparse-float32", 3, tmp_path)
    assert inputs.block_density(staged) == pytest.approx(0.2)
