"""int8 / int4 on the host side (edge/lowprec.py): the packed layout, refusing what does not fit,
choosing a packing the job's slots allow, and the narrowing alternatives with their errors. The sums
themselves are checked through real switches in tests/p4src/test_inc_lowprec_*.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge import formats, lowprec
from edge.protocol import FMT_INT4, FMT_INT8, FMT_INT32, INC_LANES


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["int8", "int4"]), st.integers(1, 1500), st.integers(0, 2**32 - 1))
def test_pack_puts_lane_i_of_chunk_g_into_word_i(mode: str, n: int, seed: int) -> None:
    bits = lowprec.BITS[mode]
    lo, hi = lowprec.limits(bits)
    x = np.random.default_rng(seed).integers(lo, hi + 1, size=n)
    fmt = FMT_INT8 if mode == "int8" else FMT_INT4
    rows = lowprec.pack(x, fmt)
    groups = 32 // bits
    assert rows.shape == (-(-n // (groups * INC_LANES)), INC_LANES) and rows.dtype == np.uint32
    padded = np.zeros(rows.shape[0] * groups * INC_LANES, dtype=np.int64)
    padded[:n] = x
    for r, g, i in [(0, 0, 0), (0, groups - 1, 63), (rows.shape[0] - 1, groups // 2, 17)]:
        field = (int(rows[r, i]) >> (32 - bits * (g + 1))) & ((1 << bits) - 1)
        value = field - (1 << bits) if field >= 1 << (bits - 1) else field
        assert value == padded[r * groups * INC_LANES + g * INC_LANES + i]


def test_wide_results_unpack_to_the_sums() -> None:
    sums = np.arange(-1024, 1024, dtype=np.int64)[: 8 * INC_LANES] * 31
    wide32 = (sums[: 4 * INC_LANES] & 0xFFFFFFFF).astype(np.uint32)[None, :]
    np.testing.assert_array_equal(lowprec.unpack(wide32, FMT_INT8, 200), sums[:200])
    halves = (sums & 0xFFFF).reshape(8, INC_LANES)
    wide16 = ((halves[0::2] << 16) | halves[1::2]).astype(np.uint32).reshape(1, -1)
    np.testing.assert_array_equal(lowprec.unpack(wide16, FMT_INT4, 512), sums)


@pytest.mark.parametrize(
    ("mode", "bad", "where"),
    [
        ("int8", np.array([0, 5, 128, 3]), "element 2 is 128"),
        ("int8", np.array([-129]), "element 0 is -129"),
        ("int4", np.array([7, -8, 8]), "element 2 is 8"),
        ("int4", np.array([1.0, 2.0]), "integer input"),
        ("int8", np.array([2**40], dtype=np.int64), "element 0"),
    ],
)
def test_values_outside_the_narrow_type_are_refused_never_clipped(
    mode: str, bad: np.ndarray, where: str
) -> None:
    with pytest.raises(formats.FormatError, match=where):
        formats.allreduce_with(lambda lanes, kind, fmt=0: lanes, bad, mode, 2)


def test_the_packing_follows_the_slots_and_the_job_size() -> None:
    assert lowprec.choose_format("int4", 6, 8) == FMT_INT4
    assert lowprec.choose_format("int4", 6, 4) == FMT_INT8  # slots a multiple of 4 only: int4 packs as int8
    assert (
        lowprec.choose_format("int4", lowprec.MAX_INT4_WORKERS + 1, 8) == FMT_INT8
    )  # 16 bits would overflow
    assert lowprec.choose_format("int8", 6, 1) == FMT_INT32
    seen = []

    def reduce(lanes: np.ndarray, kind: int, fmt: int = FMT_INT32) -> np.ndarray:
        seen.append(fmt)
        return lanes

    got = formats.allreduce_with(reduce, np.array([-128, 127, 5]), "int8", 1, max_groups=1)
    assert seen == [FMT_INT32] and got.tolist() == [-128, 127, 5] and got.dtype == np.int32


def test_narrowing_alternatives_and_their_errors() -> None:
    sums = np.array([-300, -129, -128, 0, 127, 128, 300])
    assert lowprec.narrow(sums, "int8", "saturate").tolist() == [-128, -128, -128, 0, 127, 127, 127]
    assert lowprec.narrow(sums, "int8", "wrap").tolist() == [-44, 127, -128, 0, 127, -128, 44]
    assert lowprec.narrow(np.array([9, -9]), "int4", "wrap").tolist() == [-7, 7]
    errs = lowprec.narrowing_errors(sums, "int8")
    assert errs["saturate"] == {"max_abs_error": 173.0, "changed_fraction": round(4 / 7, 6)}
    assert errs["wrap"]["max_abs_error"] == 256.0
    with pytest.raises(ValueError, match="saturate"):
        lowprec.narrow(sums, "int8", "round")
