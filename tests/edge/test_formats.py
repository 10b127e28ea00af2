"""Number formats: int32 lanes are exact; float32 fixed point stays within its stated bound."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from edge import formats
from edge.protocol import INC_LANES, IncHeader, decode, encode, slot_of


def test_int32_lanes_round_trip_and_wraparound_sum_is_exact() -> None:
    rng = np.random.default_rng(1)
    parts = [rng.integers(-(2**28), 2**28, size=1000, dtype=np.int32) for _ in range(6)]
    lanes = [formats.int32_to_lanes(p) for p in parts]
    assert lanes[0].shape == (16, INC_LANES) and lanes[0].dtype == np.uint32
    # what the switch does: sum the bit patterns modulo 2**32
    switch_sum = np.zeros_like(lanes[0])
    for lane in lanes:
        switch_sum = switch_sum + lane  # uint32 arithmetic wraps
    result = formats.lanes_to_int32(switch_sum, 1000)
    np.testing.assert_array_equal(result, np.sum(parts, axis=0, dtype=np.int64).astype(np.int32))


@settings(max_examples=60, deadline=None)
@given(
    workers=st.integers(1, 9),
    scale=st.floats(1e-6, 1e6),
    seed=st.integers(0, 2**31),
)
def test_float_fixed_point_sum_within_quantisation_bound(workers: int, scale: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    parts = [(rng.standard_normal(300) * scale).astype(np.float32) for _ in range(workers)]
    blocks = [formats.pad_to_lanes(p) for p in parts]
    agreed = np.max([formats.block_exponents(b) for b in blocks], axis=0)  # the switch's max
    shifts = formats.scale_exponents(agreed, workers)
    fixed = [formats.float_to_fixed(b, shifts) for b in blocks]
    wide = np.sum([f.view(np.int32).astype(np.int64) for f in fixed], axis=0)
    assert np.all(np.abs(wide) < 2**31), "the headroom must prevent int32 overflow"
    switch_sum = np.sum(fixed, axis=0, dtype=np.uint32)
    result = formats.fixed_to_float(switch_sum, shifts).reshape(-1)[:300]
    exact = np.sum([p.astype(np.float64) for p in parts], axis=0)
    bound = np.repeat(formats.quantisation_bound(shifts, workers), INC_LANES)[:300]
    assert np.all(np.abs(result - exact) <= bound + 1e-12 * np.abs(exact))


def test_header_round_trip_and_slot_copies() -> None:
    header = IncHeader(tenant=7, round=2, slot=5, chunk=133, flags=0x06, count=3, exponent=9)
    data = encode(header, np.arange(INC_LANES, dtype=np.uint32))
    got, lanes = decode(data)
    assert got == header and lanes[63] == 63 and len(data) == 276
    assert slot_of(5, 64) == (5, 0) and slot_of(69, 64) == (5, 1) and slot_of(133, 64) == (5, 0)
