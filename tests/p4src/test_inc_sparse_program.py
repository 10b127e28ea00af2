"""Empty contributions (sparse vectors, docs/protocol.md) in the INC switch program on one switch, through
p4kit-stf: an empty counts as its child's contribution and adds nothing; a cell whose contributions were
all empty completes with an empty result; one with any values completes with the cell's values whatever
arrived last; a re-sent empty gets the finished values back; and every malformed empty (a count, a
max-reduction, trailing bytes) or values that claim to count nothing is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge import protocol as P  # noqa: N812 - P mirrors the protocol's constants
from tests.p4src.test_inc_program import (
    EPOCH,
    GW_IP,
    GW_MAC,
    WORKER_PORT,
    A,
    assert_passes,
    contribution,
    expect,
    host_ip,
    host_mac,
    lanes,
    packet,
    setup,
    total_of,
    udp_frame,
)


def empty(
    port: int, chunk: int, nslots: int = 4, flags: int = 0, count: int = 0, kind: int = 0, extra: bytes = b""
) -> bytes:
    """An empty contribution; `count`, `kind` and `extra` (bytes after the header) forge bad ones."""
    slot, copy = P.slot_of(chunk, nslots)
    header = P.IncHeader(
        1, 0, slot, chunk, kind=kind, flags=flags | (P.F_VERSION if copy else 0), epoch=EPOCH
    )
    payload = P.encode_empty(header)
    if count:  # encode_empty sets 0
        header.count = count
        payload = header.pack()
    payload += extra
    return udp_frame(host_mac(port), GW_MAC, host_ip(port), GW_IP, WORKER_PORT, P.INC_UDP_PORT, payload)


def result(
    port: int, chunk: int, values: list[int] | None, count: int, sender: int, flags: int = P.F_RESULT
) -> bytes:
    """The result as delivered to the worker on `port`: int32 lanes, or empty when `values` is None."""
    slot, copy = P.slot_of(chunk, 4)
    header = P.IncHeader(
        1, 0, slot, chunk, flags=flags | (P.F_VERSION if copy else 0), count=count, sender=sender, epoch=EPOCH
    )
    payload = (
        P.encode_empty(header) if values is None else P.encode(header, np.array(values, dtype=np.uint32))
    )
    return udp_frame(GW_MAC, host_mac(port), GW_IP, host_ip(port), P.INC_UDP_PORT, WORKER_PORT, payload)


def test_an_empty_counts_as_a_contribution_and_adds_nothing(tmp_path: Path) -> None:
    lines = setup()
    lines += [packet(1, empty(1, 0)), packet(2, contribution(2, 0, lanes(7))), packet(3, empty(3, 0))]
    # the last arrival was empty: the result is the cell's values, summing the one contribution with values
    lines += [expect(p, result(p, 0, lanes(7), count=1, sender=2)) for p in (1, 2, 3)]
    lines.append(f"check_counter {A}inc_stats(11) packets == 2")
    lines.append(f"check_counter {A}inc_stats(12) packets == 0")
    assert_passes(tmp_path, lines)


def test_values_after_empties_overwrite_an_older_chunks_lanes(tmp_path: Path) -> None:
    lines = setup()
    # chunk 0 leaves values in copy 0 of slot 0; chunk 8 (same copy) starts with an empty, then values
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    lines += [expect(p, result(p, 0, total_of(1, 2, 3), count=3, sender=2)) for p in (1, 2, 3)]
    lines += [
        packet(1, empty(1, 8)),
        packet(2, contribution(2, 8, lanes(50))),
        packet(3, contribution(3, 8, lanes(9))),
    ]
    lines += [expect(p, result(p, 8, total_of(50, 9), count=2, sender=2)) for p in (1, 2, 3)]
    assert_passes(tmp_path, lines)


def test_a_cell_of_empties_completes_empty_and_a_resent_empty_gets_it_again(tmp_path: Path) -> None:
    lines = setup()
    lines += [packet(p, empty(p, 1)) for p in (1, 2, 3)]
    lines += [expect(p, result(p, 1, None, count=0, sender=2)) for p in (1, 2, 3)]
    lines.append(packet(2, empty(2, 1, flags=P.F_RETRANSMIT)))
    lines.append(expect(2, result(2, 1, None, count=0, sender=1, flags=P.F_RESULT | P.F_RETRANSMIT)))
    lines.append(f"check_counter {A}inc_stats(12) packets == 1")  # completed once, re-sent once
    lines.append(f"check_counter {A}inc_stats(7) packets == 1")
    assert_passes(tmp_path, lines)


def test_a_resent_empty_gets_the_finished_values(tmp_path: Path) -> None:
    lines = setup()
    lines += [
        packet(1, contribution(1, 2, lanes(4))),
        packet(2, empty(2, 2)),
        packet(3, contribution(3, 2, lanes(5))),
    ]
    lines += [expect(p, result(p, 2, total_of(4, 5), count=2, sender=2)) for p in (1, 2, 3)]
    lines.append(packet(2, empty(2, 2, flags=P.F_RETRANSMIT)))
    lines.append(
        expect(2, result(2, 2, total_of(4, 5), count=2, sender=1, flags=P.F_RESULT | P.F_RETRANSMIT))
    )
    assert_passes(tmp_path, lines)


def test_malformed_empties_and_values_that_count_nothing_are_refused(tmp_path: Path) -> None:
    lines = setup()
    bad = [
        empty(1, 0, count=1),  # an empty claims a contribution
        empty(1, 0, kind=P.KIND_MAX),  # exponents cannot be empty
        empty(1, 0, extra=bytes(4)),  # an empty with a payload (UDP length 36)
    ]
    slot, _ = P.slot_of(0, 4)
    header = P.IncHeader(1, 0, slot, 0, count=0, epoch=EPOCH)
    bad.append(  # values that count no contribution
        udp_frame(
            host_mac(1),
            GW_MAC,
            host_ip(1),
            GW_IP,
            WORKER_PORT,
            P.INC_UDP_PORT,
            P.encode(header, np.array(lanes(1), dtype=np.uint32)),
        )
    )
    lines += [packet(1, b) for b in bad]
    lines.append(f"check_counter {A}inc_stats(0) packets == {len(bad)}")
    # nothing of them reached the cell: the chunk completes from the real contributions alone
    lines += [packet(p, contribution(p, 0, lanes(p))) for p in (1, 2, 3)]
    lines += [expect(p, result(p, 0, total_of(1, 2, 3), count=3, sender=2)) for p in (1, 2, 3)]
    assert_passes(tmp_path, lines)
