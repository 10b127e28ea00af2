"""Number formats: int32 lanes are exact and refuse what int32 cannot hold; float32 fixed point stays
within its stated bound and carries inf and NaN as IEEE addition would; the wire format's header,
checksums and serial-number chunk comparison."""

import itertools
import threading
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, UDP, Ether, raw

from edge import formats
from edge.protocol import (
    INC_LANES,
    KIND_MAX,
    PACKET_LEN,
    SERIAL_MOD,
    IncHeader,
    chunk_space,
    decode,
    encode,
    encode_empty,
    frame,
    serial_distance,
    slot_of,
)
from tests.lockstep import run_ranks


def lockstep_allreduce(
    inputs: list[np.ndarray],
    mode: str,
    wrap: Callable[[int, formats.LaneReduce], formats.LaneReduce] | None = None,
) -> list[np.ndarray]:
    """formats.allreduce_with for several workers at once, each in its own thread, over a lane reduction
    that does what the switches do (wrap-around sum of uint32, or unsigned max). `wrap(rank, reduce)`
    may put something between a worker and the switches (secure aggregation's masks, say)."""
    n = len(inputs)
    barrier = threading.Barrier(n)
    posted: dict[int, list] = {}
    lock = threading.Lock()

    def reducer(rank: int):  # type: ignore[no-untyped-def]
        calls = [0]

        def reduce(lanes: np.ndarray, kind: int) -> np.ndarray:
            call = calls[0]
            calls[0] += 1
            with lock:
                posted.setdefault(call, [None] * n)[rank] = lanes
            barrier.wait()
            rows = posted[call]
            out = np.max(rows, axis=0) if kind == KIND_MAX else np.sum(rows, axis=0, dtype=np.uint32)
            barrier.wait()
            return out

        return reduce

    def run(rank: int) -> np.ndarray:
        reduce = reducer(rank) if wrap is None else wrap(rank, reducer(rank))
        return formats.allreduce_with(reduce, inputs[rank], mode, n)

    return run_ranks(n, run, barrier)


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
    header = IncHeader(
        tenant=7, round=2, slot=5, chunk=133, flags=0x06, count=3, exponent=9, epoch=0xDEADBEEF
    )
    data = encode(header, np.arange(INC_LANES, dtype=np.uint32))
    got, lanes = decode(data)
    assert got == header and lanes[63] == 63 and len(data) == PACKET_LEN == 280
    assert slot_of(5, 64) == (5, 0) and slot_of(69, 64) == (5, 1) and slot_of(133, 64) == (5, 0)
    with pytest.raises(ValueError, match="280 bytes"):
        decode(data + b"\0")


def test_frame_checksums_agree_with_scapy() -> None:
    payload = encode(IncHeader(1, 0, 3, 77, epoch=5), np.arange(INC_LANES, dtype=np.uint32) * 977)
    f = frame("00:00:0a:00:01:01", "00:00:0a:00:01:fe", "10.0.1.1", "10.0.1.254", 48001, 47000, payload)
    again = Ether(f)
    del again[IP].chksum
    del again[UDP].chksum
    assert raw(again) == f


def test_the_scapy_layer_reads_the_header_as_the_workers_write_it() -> None:
    """edge.scapy_inc (for experiments by hand) names every header byte as edge.protocol packs it,
    the value layout (`format`) included."""
    from edge.protocol import FMT_INT8
    from edge.scapy_inc import INC

    header = IncHeader(9, 2, 5, 1234, flags=0x02, epoch=77, format=FMT_INT8)
    pkt = INC(encode(header, np.zeros(INC_LANES, dtype=np.uint32)))
    assert (pkt.tenant, pkt.round, pkt.slot, pkt.chunk, pkt.epoch) == (9, 2, 5, 1234, 77)
    assert pkt.format == FMT_INT8 and pkt.sprintf("%INC.format%") == "int8"
    assert (
        raw(INC(tenant=9, round=2, slot=5, chunk=1234, flags=0x02, epoch=77, format=FMT_INT8))
        == header.pack()
    )
    empty = INC(encode_empty(IncHeader(9, 2, 5, 1235, epoch=77)))  # sparse mode: the header alone
    assert empty.sprintf("%INC.format%") == "empty" and empty.count == 0 and not empty.payload


@settings(max_examples=300, deadline=None)
@given(a=st.integers(0, SERIAL_MOD - 1), d=st.integers(-(2**31) + 1, 2**31 - 1))
def test_serial_distance_is_wrap_safe(a: int, d: int) -> None:
    b = (a + d) % SERIAL_MOD
    assert serial_distance(b, a) == d
    assert serial_distance(a, b) == -d
    # what the switch computes: (b - a) mod 2^32 with its top bit meaning "older"
    assert (((b - a) % SERIAL_MOD) >> 31 == 1) == (d < 0)


@settings(max_examples=200, deadline=None)
@given(start=st.integers(0, 10_000), nslots=st.integers(1, 4096))
def test_cells_of_successive_chunks_never_collide_across_the_wrap(start: int, nslots: int) -> None:
    """Within 2 * nslots successive chunk numbers (what can be in a switch at once), each (slot, copy)
    is used once, also where the numbers wrap from chunk_space - 1 to 0; and that step is forward as
    serial numbers."""
    space = chunk_space(nslots)
    first = (space - start) % space
    chunks = [(first + i) % space for i in range(2 * nslots)]
    assert len({slot_of(c, nslots) for c in chunks}) == len(chunks)
    assert all(0 < serial_distance(b, a) <= 2 * nslots for a, b in itertools.pairwise(chunks))


def test_int32_mode_refuses_what_int32_cannot_hold() -> None:
    with pytest.raises(formats.FormatError, match="element 2 is 4294967296"):
        formats.int32_to_lanes(np.array([1, -5, 2**32, 3], dtype=np.int64))
    with pytest.raises(formats.FormatError, match="integer input"):
        formats.int32_to_lanes(np.array([1.5]))
    lanes = formats.int32_to_lanes(np.array([2**31 - 1, -(2**31)], dtype=np.int64))
    assert formats.lanes_to_int32(lanes, 2).tolist() == [2**31 - 1, -(2**31)]


def test_float32_inf_and_nan_propagate_without_touching_the_block() -> None:
    base = [np.linspace(-1, 1, 200, dtype=np.float32) * (r + 1) for r in range(3)]
    inputs = [b.copy() for b in base]
    inputs[0][0] = np.inf
    inputs[1][1] = np.nan
    inputs[0][2], inputs[2][2] = np.inf, -np.inf
    inputs[2][3] = -np.inf
    inputs[1][199] = np.inf  # a second block
    results = lockstep_allreduce(inputs, "float32")
    ref = np.sum([b.astype(np.float64) for b in base], axis=0)
    for got in results:
        assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2]) and got[3] == -np.inf
        assert got[199] == np.inf
        finite = np.ones(200, dtype=bool)
        finite[[0, 1, 2, 3, 199]] = False
        # the other values of the special blocks are exactly as good as without any special value
        clean = lockstep_allreduce(base, "float32")[0]
        np.testing.assert_array_equal(got[finite], clean[finite])
        assert np.max(np.abs(got[finite] - ref[finite])) < 1e-5


def test_float32_without_specials_costs_no_extra_packet() -> None:
    calls: list[tuple[int, int]] = []

    def reduce(lanes: np.ndarray, kind: int) -> np.ndarray:
        calls.append((kind, lanes.shape[0]))
        return lanes

    formats.allreduce_with(reduce, np.ones(640, dtype=np.float32), "float32", 1)
    assert calls == [(KIND_MAX, 1), (0, 10)]  # 20 agreement entries in one packet; 10 value packets


def test_a_zero_block_does_not_coarsen_the_others_exponent() -> None:
    """A worker whose block is all zero has no exponent to bring: it sends the smallest (0), so a block of
    tiny values elsewhere keeps its own scale and its precision (with frexp(0)'s exponent 0 it would be
    scaled as if its values reached 1, and values of 1e-10 would round to nothing)."""
    assert formats.block_exponents(np.zeros((2, INC_LANES), dtype=np.float32)).tolist() == [0, 0]
    rng = np.random.default_rng(5)
    tiny = (rng.standard_normal(INC_LANES) * 1e-10).astype(np.float32)
    inputs = [tiny, np.zeros(INC_LANES, dtype=np.float32), np.zeros(INC_LANES, dtype=np.float32)]
    results = lockstep_allreduce(inputs, "float32")
    rel = np.abs(results[0].astype(np.float64) - tiny) / np.abs(tiny.astype(np.float64))
    assert rel.max() < 2.0**-20
    assert all(
        np.array_equal(r, np.zeros(INC_LANES, dtype=np.float32))
        for r in lockstep_allreduce(inputs[1:], "float32")
    )


def test_wide_sums_carry_four_consecutive_chunks_a_packet_and_come_back_in_order() -> None:
    """sum_lanes with `wide`: rows 4k .. 4k+3 travel as one 256-word row in format wide32 (padded with zero
    rows), and each returned 256-word row maps back onto its four chunks in order."""
    from edge.protocol import FMT_WIDE32, WIDE_WORDS

    calls: list[tuple[tuple[int, ...], int]] = []

    def reduce(rows: np.ndarray, kind: int, fmt: int = 0) -> np.ndarray:
        calls.append((rows.shape, fmt))
        return rows * np.uint32(3)

    lanes = np.arange(6 * INC_LANES, dtype=np.uint32).reshape(6, INC_LANES)
    out = formats.sum_lanes(reduce, lanes, wide=True)
    assert calls == [((2, WIDE_WORDS), FMT_WIDE32)]
    np.testing.assert_array_equal(out, lanes * np.uint32(3))
    calls.clear()
    formats.sum_lanes(reduce, lanes, wide=False)
    assert calls == [((6, INC_LANES), 0)]
    with pytest.raises(ValueError, match="values per packet"):
        formats.allreduce_with(reduce, np.zeros(4, dtype=np.int32), "int32", 1, values_per_packet=128)
