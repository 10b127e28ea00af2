"""The packed and wide formats in p4src/inc.p4 on one switch (p4kit-stf): a worker's packed int8 or int4
packet is widened into the 32-bit cells of its G chunks, the result leaves wide (4 x 64 int32, or 8 x 64
int16), sums that overflow the narrow type are exact, a retransmission re-sends the wide result, and the
switch refuses what would reach beyond the tenant's cells or does not fit its format."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge import lowprec
from edge import protocol as P  # noqa: N812
from tests.p4src.test_inc_program import (
    EPOCH,
    GW_IP,
    GW_MAC,
    WORKER_PORT,
    A,
    assert_passes,
    contribution,
    delivered,
    expect,
    host_ip,
    host_mac,
    packet,
    setup,
    udp_frame,
)


def packed(
    port: int, chunk: int, words: np.ndarray, fmt: int, nslots: int = 8, flags: int = 0, kind: int = 0
) -> bytes:
    slot, copy = P.slot_of(chunk, nslots)
    header = P.IncHeader(
        1, 0, slot, chunk, kind=kind, flags=flags | (P.F_VERSION if copy else 0), epoch=EPOCH, format=fmt
    )
    payload = P.encode(header, words.astype(np.uint32))
    return udp_frame(host_mac(port), GW_MAC, host_ip(port), GW_IP, WORKER_PORT, P.INC_UDP_PORT, payload)


def wide_result(
    port: int, chunk: int, words: np.ndarray, fmt: int, flags: int, sender: int, nslots: int = 8
) -> bytes:
    slot, copy = P.slot_of(chunk, nslots)
    header = P.IncHeader(
        1,
        0,
        slot,
        chunk,
        flags=flags | (P.F_VERSION if copy else 0),
        count=3,
        sender=sender,
        epoch=EPOCH,
        format=fmt,
    )
    payload = P.encode(header, words.astype(np.uint32))
    return udp_frame(GW_MAC, host_mac(port), GW_IP, host_ip(port), P.INC_UDP_PORT, WORKER_PORT, payload)


def wide_words(sums: np.ndarray, fmt: int) -> np.ndarray:
    """The wide payload the switch must send for these exact sums (the inverse of lowprec.unpack)."""
    s = sums.astype(np.int64).reshape(P.GROUPS[fmt], P.INC_LANES)
    if fmt == P.FMT_INT8:
        return (s & 0xFFFFFFFF).astype(np.uint32).reshape(-1)
    halves = s & 0xFFFF
    return ((halves[0::2] << 16) | halves[1::2]).astype(np.uint32).reshape(-1)


def inputs(fmt: int, seed: int) -> list[np.ndarray]:
    """Three workers' values, extremes first: the sums overflow int8 (int4) in both directions."""
    lo, hi = lowprec.limits(8 if fmt == P.FMT_INT8 else 4)
    rng = np.random.default_rng(seed)
    n = P.GROUPS[fmt] * P.INC_LANES
    out = []
    for _ in range(3):
        x = rng.integers(lo, hi + 1, size=n)
        x[:10], x[10:20] = lo, hi
        out.append(x)
    return out


def run_fan_in_three(tmp_path: Path, fmt: int) -> None:
    xs = inputs(fmt, fmt)
    sums = np.sum(xs, axis=0)
    wide = P.WIDE_OF[fmt]
    words = wide_words(sums, fmt)
    np.testing.assert_array_equal(lowprec.unpack(words[None, :], fmt, sums.size), sums)
    lines = setup(nslots=8)
    lines += [
        packet(p, packed(p, 0, lowprec.pack(x, fmt)[0], fmt)) for p, x in zip((1, 2, 3), xs, strict=True)
    ]
    lines += [expect(port, wide_result(port, 0, words, wide, P.F_RESULT, sender=2)) for port in (1, 2, 3)]
    # worker 1 lost the result: its packed retransmission brings the whole wide result back to it
    lines.append(packet(1, packed(1, 0, lowprec.pack(xs[0], fmt)[0], fmt, flags=P.F_RETRANSMIT)))
    lines.append(expect(1, wide_result(1, 0, words, wide, P.F_RESULT | P.F_RETRANSMIT, sender=0)))
    lines.append(f"check_counter {A}wide.wide_stats(6) packets == 1")  # the wide cells' counters
    lines.append(f"check_counter {A}wide.wide_stats(7) packets == 1")
    assert_passes(tmp_path, lines)


def test_packed_int8_is_widened_and_summed_exactly(tmp_path: Path) -> None:
    run_fan_in_three(tmp_path, P.FMT_INT8)


def test_packed_int4_is_widened_and_summed_exactly(tmp_path: Path) -> None:
    run_fan_in_three(tmp_path, P.FMT_INT4)


def test_packed_chunks_follow_an_int32_chunk_in_the_same_cells(tmp_path: Path) -> None:
    """Cells are shared by formats: int32 chunk 0 in slot 0, then packed int8 chunks 8..11 (slots 0..3,
    copy 1), then int32 chunk 16 (slot 0, copy 0 again): each result is exact."""
    lines = setup(nslots=8)
    ones = np.ones(P.INC_LANES, dtype=np.uint32)
    lines += [packet(p, contribution(p, 0, [int(v) * p for v in ones], nslots=8)) for p in (1, 2, 3)]
    lines += [expect(p, delivered(p, 0, [6] * P.INC_LANES, 3, P.F_RESULT, 2, nslots=8)) for p in (1, 2, 3)]
    xs = inputs(P.FMT_INT8, 7)
    words = wide_words(np.sum(xs, axis=0), P.FMT_INT8)
    lines += [
        packet(p, packed(p, 8, lowprec.pack(x, P.FMT_INT8)[0], P.FMT_INT8))
        for p, x in zip((1, 2, 3), xs, strict=True)
    ]
    lines += [expect(p, wide_result(p, 8, words, P.FMT_WIDE32, P.F_RESULT, sender=2)) for p in (1, 2, 3)]
    lines += [packet(p, contribution(p, 16, [7] * P.INC_LANES, nslots=8)) for p in (1, 2, 3)]
    lines += [expect(p, delivered(p, 16, [21] * P.INC_LANES, 3, P.F_RESULT, 2, nslots=8)) for p in (1, 2, 3)]
    assert_passes(tmp_path, lines)


def test_packets_reaching_beyond_the_tenants_cells_or_their_format_are_dropped(tmp_path: Path) -> None:
    """With 4 slots: an int8 packet at slot 1 (its chunks 1..4 would reach slot 4) and any int4 packet
    (8 chunks) are refused, as are a packed max-reduction, an unknown format, a wide packet cut short and
    a packed packet of wide length. No packet leaves the switch (ports without expect lines)."""
    lines = setup(nslots=4)
    words = lowprec.pack(np.ones(256, dtype=np.int64), P.FMT_INT8)[0]
    bad = [
        packed(1, 1, words, P.FMT_INT8, nslots=4),
        packed(1, 0, words, P.FMT_INT4, nslots=4),
        packed(2, 0, words, P.FMT_INT8, nslots=4, kind=P.KIND_MAX),
        packed(2, 0, words, 9, nslots=4),
    ]
    header = P.IncHeader(1, 0, 0, 0, epoch=EPOCH, format=P.FMT_WIDE32)
    wide = header.pack() + np.zeros(P.WIDE_WORDS, dtype=">u4").tobytes()
    for payload in (wide[:-4], wide[: P.PACKET_LEN]):
        bad.append(udp_frame(host_mac(3), GW_MAC, host_ip(3), GW_IP, WORKER_PORT, P.INC_UDP_PORT, payload))
    int8_long = P.IncHeader(1, 0, 0, 0, epoch=EPOCH, format=P.FMT_INT8).pack() + bytes(4 * P.WIDE_WORDS)
    bad.append(udp_frame(host_mac(3), GW_MAC, host_ip(3), GW_IP, WORKER_PORT, P.INC_UDP_PORT, int8_long))
    lines += [packet(int(f[29]), f) for f in bad]  # each from its own port (the source's last byte)
    lines.append(f"check_counter {A}inc_stats(0) packets == {len(bad)}")
    assert_passes(tmp_path, lines)


def test_wide_cells_completed_urgent_leave_through_the_repair_group(tmp_path: Path) -> None:
    """The wide cells (wide_aggregation.p4, the path of 256 values to a packet) send what an URGENT
    contribution completed through the repair group, as the int32 cells do: at the root each child
    switch twice (port 3 stands for one), at a non-root the parent twice; a plain completion once."""
    rng = np.random.default_rng(7)
    xs = [rng.integers(0, 2**32, size=P.WIDE_WORDS, dtype=np.uint64).astype(np.uint32) for _ in range(3)]
    words = (np.sum([x.astype(np.uint64) for x in xs], axis=0) & 0xFFFFFFFF).astype(np.uint32)
    urgent = P.F_RESULT | P.F_URGENT
    lines = setup(nslots=8)
    lines += ["mc_mgrp_create 2", "mc_node_create 0 1 2 3", "mc_node_create 1 3"]
    lines += ["mc_node_associate 2 1", "mc_node_associate 2 2"]
    lines += [packet(p, packed(p, 0, x, P.FMT_WIDE32)) for p, x in zip((1, 2, 3), xs, strict=True)]
    lines += [expect(p, wide_result(p, 0, words, P.FMT_WIDE32, P.F_RESULT, sender=2)) for p in (1, 2, 3)]
    lines += [
        packet(p, packed(p, 4, x, P.FMT_WIDE32, flags=P.F_URGENT)) for p, x in zip((1, 2, 3), xs, strict=True)
    ]
    lines += [expect(p, wide_result(p, 4, words, P.FMT_WIDE32, urgent, sender=2)) for p in (1, 2, 3, 3)]
    assert_passes(tmp_path, lines)

    parent = 9
    two = (np.asarray(xs[0], np.uint64) + xs[1]) & 0xFFFFFFFF
    lines = setup(fan_in=2, is_root=0, parent=parent, nslots=8)
    lines += ["mc_mgrp_create 2", "mc_node_create 0 9", "mc_node_create 1 9"]
    lines += ["mc_node_associate 2 1", "mc_node_associate 2 2"]
    lines += [
        packet(p, packed(p, 4, x, P.FMT_WIDE32, flags=P.F_URGENT))
        for p, x in zip((1, 2), xs[:2], strict=True)
    ]
    header = P.IncHeader(1, 0, 4, 4, flags=P.F_URGENT, count=2, sender=1, epoch=EPOCH, format=P.FMT_WIDE32)
    up = udp_frame(
        host_mac(2),
        GW_MAC,
        GW_IP,
        GW_IP,
        WORKER_PORT,
        P.INC_UDP_PORT,
        P.encode(header, two.astype(np.uint32)),
    )
    lines += [expect(parent, up)] * 2
    assert_passes(tmp_path, lines)
