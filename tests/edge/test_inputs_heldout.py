"""Held-out inputs a user may hand `tributary allreduce --inputs`: files whose element type or naming
tripped the checks (a uint64 beyond int64 reported as a negative range, a .npz naming one rank twice
keeping only one of the arrays), refused with what is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge import inputs


def test_an_unsigned_value_beyond_int64_is_reported_as_itself() -> None:
    rows = np.full((2, 3), 2**63, dtype=np.uint64)
    with pytest.raises(
        inputs.InputError, match=r"values 9\.22337e\+18\.\.9\.22337e\+18 do not fit mode int32"
    ):
        inputs.prepare(rows, "int32", workers=2)


@pytest.mark.parametrize("mode", ["int32", "int8", "int4", "sparse"])
def test_unsigned_values_in_range_are_taken(mode: str) -> None:
    rows = np.array([[0, 7], [3, 1]], dtype=np.uint64)
    got = inputs.prepare(rows, mode, workers=2)
    np.testing.assert_array_equal(got, rows.astype(np.int64))


def test_the_range_check_reads_the_file_s_own_extremes() -> None:
    # int16 holding int8's bounds exactly is taken, one past them is refused with the value
    ok = np.array([[127, -128], [-128, 127]], dtype=np.int16)
    assert inputs.prepare(ok, "int8", workers=2).tolist() == [[127, -128], [-128, 127]]
    with pytest.raises(inputs.InputError, match=r"values -129\.\.127"):
        inputs.prepare(np.array([[127, -129], [0, 0]], dtype=np.int16), "int8", workers=2)


def test_a_npz_naming_one_rank_twice_is_refused_not_half_read(tmp_path: Path) -> None:
    np.savez(tmp_path / "both.npz", rank0=np.zeros(4), arr_0=np.ones(4), rank1=np.zeros(4))
    with pytest.raises(inputs.InputError, match="name the same rank"):
        inputs.read_rows(tmp_path / "both.npz")
    np.savez(tmp_path / "padded.npz", rank0=np.zeros(4), rank00=np.ones(4))
    with pytest.raises(inputs.InputError, match="name the same rank"):
        inputs.read_rows(tmp_path / "padded.npz")
