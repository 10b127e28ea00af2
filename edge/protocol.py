"""The INC wire format (docs/protocol.md), mirrored from p4src/include/headers.p4.

Packets are UDP to port INC_UDP_PORT, carrying a 20-byte header and INC_LANES big-endian 32-bit values.
This module packs and parses them with `struct` (the worker's hot path); `edge.scapy_inc` has the same
format as scapy layers for experiments by hand.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

INC_UDP_PORT = 47000
INC_VERSION = 1
INC_LANES = 64

KIND_SUM = 0
KIND_MAX = 1

F_RESULT = 0x01
F_RETRANSMIT = 0x02
F_VERSION = 0x04

MAX_TENANT = 16384
WORKER_PORT_BASE = 48000  # results reach a worker of tenant t on UDP port WORKER_PORT_BASE + t

HEADER = struct.Struct("!BBBBHHHHIBBH")
HEADER_LEN = HEADER.size  # 20
PAYLOAD_LEN = INC_LANES * 4
PACKET_LEN = HEADER_LEN + PAYLOAD_LEN

LANE_DTYPE = np.dtype(">u4")


class MalformedPacket(ValueError):
    pass


@dataclass
class IncHeader:
    tenant: int
    round: int
    slot: int
    chunk: int
    kind: int = KIND_SUM
    flags: int = 0
    sender: int = 0
    count: int = 1
    exponent: int = 0
    version: int = INC_VERSION

    def pack(self) -> bytes:
        return HEADER.pack(
            self.version,
            self.kind,
            self.flags,
            self.sender,
            self.tenant,
            self.round,
            self.slot,
            self.count,
            self.chunk,
            self.exponent,
            0,
            0,
        )

    @classmethod
    def unpack(cls, data: bytes | memoryview) -> IncHeader:
        if len(data) < HEADER_LEN:
            raise MalformedPacket(f"INC header needs {HEADER_LEN} bytes, got {len(data)}")
        (version, kind, flags, sender, tenant, rnd, slot, count, chunk, exponent, _, _) = HEADER.unpack_from(
            data
        )
        return cls(tenant, rnd, slot, chunk, kind, flags, sender, count, exponent, version)


def worker_port(tenant: int) -> int:
    """The UDP port a worker of `tenant` receives results on (the switches rewrite it on delivery), so
    workers of several tenants can share a host."""
    if not 1 <= tenant <= MAX_TENANT:
        raise ValueError(f"tenant id must be in 1..{MAX_TENANT}, got {tenant}")
    return WORKER_PORT_BASE + tenant


def slot_of(chunk: int, nslots: int) -> tuple[int, int]:
    """Slot index and copy (version flag) that chunk number `chunk` uses in a pool of `nslots` slots.

    Chunk k and chunk k + nslots share a slot but use its two different copies, so the result of k stays
    in the switch while k + nslots is being aggregated."""
    return chunk % nslots, (chunk // nslots) % 2


def encode(header: IncHeader, lanes: np.ndarray) -> bytes:
    """A whole INC payload (header + values); lanes are INC_LANES uint32 values."""
    if lanes.shape != (INC_LANES,):
        raise ValueError(f"an INC packet carries {INC_LANES} values, got shape {lanes.shape}")
    return header.pack() + lanes.astype(LANE_DTYPE, copy=False).tobytes()


def decode(data: bytes | memoryview) -> tuple[IncHeader, np.ndarray]:
    """Header and values (uint32) of an INC payload; raises MalformedPacket on a short or bad packet."""
    if len(data) < PACKET_LEN:
        raise MalformedPacket(f"INC packet needs {PACKET_LEN} bytes, got {len(data)}")
    header = IncHeader.unpack(data)
    if header.version != INC_VERSION:
        raise MalformedPacket(f"INC version {header.version}, expected {INC_VERSION}")
    lanes = np.frombuffer(data, dtype=LANE_DTYPE, count=INC_LANES, offset=HEADER_LEN).astype(np.uint32)
    return header, lanes
