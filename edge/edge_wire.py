"""Edge-INC packets on the wire (docs/edge-inc.md): the INC header of protocol version 2 on new UDP ports.

Edge-INC reuses the Core-INC header and its 64 x int32 payload, but travels to its own UDP ports, so the
switches' aggregation path never touches it:

- EDGE_UDP_PORT (47001): a member's stream (and nothing else). The switches replicate it along the
  source's distribution tree of the round the packet carries, and rewrite it to each receiving edge host.
- EDGE_REPAIR_PORT (47002): plain routed unicast between edge hosts: repair requests (NACKs, chunk numbers
  in the lanes) and the chunks re-sent for them.
- EDGE_RESULT_PORT (47003): the stage's results to its site's workers (LAN only).

The header is the 24-byte v2 layout (version, kind, flags, sender, tenant, round, slot, count, chunk,
epoch, exponent, reserved). For Edge-INC, `sender` is the sending site's id (1..255, its index in the
WAN), `slot` is unused (0), and `chunk` counts from 0 within a round's vector.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from edge.protocol import (
    EDGE_UDP_PORT,
    F_RESULT,
    F_RETRANSMIT,
    HEADER,
    HEADER_LEN,
    INC_LANES,
    INC_VERSION,
    KIND_MAX,
    KIND_SUM,
    LANE_DTYPE,
    PACKET_LEN,
)

EDGE_REPAIR_PORT = 47002
EDGE_RESULT_PORT = 47003

EDGE_VERSION = INC_VERSION
LANES = INC_LANES
CHUNK_BYTES = LANES * 4  # accumulator bytes per chunk: what the stage's memory is counted in

F_NACK = 0x10  # a repair request: `count` chunk numbers in the first lanes
F_READY = 0x20  # start agreement: the sender is ready for `round`; lanes[0:2] = ready time (us, 64-bit)

__all__ = [
    "EDGE_UDP_PORT",
    "F_RESULT",
    "F_RETRANSMIT",
    "HEADER_LEN",
    "KIND_MAX",
    "KIND_SUM",
    "PACKET_LEN",
]
MAX_SITE_ID = 255


class MalformedEdgePacket(ValueError):
    """A datagram that is not an Edge-INC packet of this version; the message says why."""


@dataclass(frozen=True)
class EdgePacket:
    """A decoded Edge-INC packet: header fields and 64 uint32 lanes."""

    sender: int
    tenant: int
    round: int
    epoch: int
    chunk: int
    lanes: np.ndarray
    count: int = 1
    kind: int = KIND_SUM
    flags: int = 0
    exponent: int = 0

    @property
    def retransmit(self) -> bool:
        return bool(self.flags & F_RETRANSMIT)


def encode(p: EdgePacket) -> bytes:
    if p.lanes.shape != (LANES,):
        raise ValueError(f"an Edge-INC packet carries {LANES} values, got shape {p.lanes.shape}")
    head = HEADER.pack(
        EDGE_VERSION,
        p.kind,
        p.flags,
        p.sender,
        p.tenant,
        p.round,
        0,
        p.count,
        p.chunk,
        p.epoch,
        p.exponent,
        0,
        0,
    )
    return head + p.lanes.astype(LANE_DTYPE, copy=False).tobytes()


def decode(data: bytes | memoryview) -> EdgePacket:
    if len(data) != PACKET_LEN:
        raise MalformedEdgePacket(f"an Edge-INC packet is {PACKET_LEN} bytes, got {len(data)}")
    (version, kind, flags, sender, tenant, rnd, _slot, count, chunk, epoch, exponent, _r0, _r1) = (
        HEADER.unpack_from(data)
    )
    if version != EDGE_VERSION:
        raise MalformedEdgePacket(f"Edge-INC version {version}, expected {EDGE_VERSION}")
    if kind not in (KIND_SUM, KIND_MAX):
        raise MalformedEdgePacket(f"unknown kind {kind}")
    lanes = np.frombuffer(data, dtype=LANE_DTYPE, count=LANES, offset=HEADER_LEN).astype(np.uint32)
    return EdgePacket(sender, tenant, rnd, epoch, chunk, lanes, count, kind, flags, exponent)


def nack_packets(sender: int, tenant: int, rnd: int, epoch: int, chunks: list[int]) -> list[EdgePacket]:
    """Repair requests for `chunks`, 64 chunk numbers per packet."""
    out = []
    for i in range(0, len(chunks), LANES):
        part = chunks[i : i + LANES]
        lanes = np.zeros(LANES, dtype=np.uint32)
        lanes[: len(part)] = part
        out.append(EdgePacket(sender, tenant, rnd, epoch, part[0], lanes, count=len(part), flags=F_NACK))
    return out


def nack_chunks(p: EdgePacket) -> list[int]:
    """The chunk numbers a repair request asks for."""
    n = min(p.count, LANES)
    return [int(x) for x in p.lanes[:n]]


def ready_packet(sender: int, tenant: int, rnd: int, epoch: int, ready_us: int) -> EdgePacket:
    lanes = np.zeros(LANES, dtype=np.uint32)
    lanes[0], lanes[1] = ready_us >> 32, ready_us & 0xFFFFFFFF
    return EdgePacket(sender, tenant, rnd, epoch, 0, lanes, count=0, flags=F_READY)


def ready_time_us(p: EdgePacket) -> int:
    return (int(p.lanes[0]) << 32) | int(p.lanes[1])


def drain(sock: socket.socket, buf: bytearray, limit: int = 256) -> Iterator[EdgePacket | None]:
    """The datagrams waiting on a non-blocking socket (at most `limit`, so one socket cannot starve the
    others), decoded; None for one that is not an Edge-INC packet (the caller counts it)."""
    for _ in range(limit):
        try:
            n = sock.recv_into(buf)
        except BlockingIOError:
            return
        try:
            yield decode(memoryview(buf)[:n])
        except MalformedEdgePacket:
            yield None
