"""The INC wire format (docs/protocol.md), mirrored from p4src/include/headers.p4.

Packets are UDP to port INC_UDP_PORT, carrying a 24-byte header and INC_LANES big-endian 32-bit values,
with a UDP checksum (the switches refuse INC packets without one).
This module packs and parses them with `struct` (the worker's hot path); `edge.scapy_inc` has the same
format as scapy layers for experiments by hand.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

INC_UDP_PORT = 47000
EDGE_UDP_PORT = 47001  # Edge-INC streams: same header, replicated by the switches (docs/edge-inc.md)
INC_VERSION = 2
INC_LANES = 64

KIND_SUM = 0
KIND_MAX = 1

# value layouts (the header's `format` byte; docs/protocol.md, "Packed and wide formats")
FMT_INT32 = 0  # 64 x int32
FMT_INT8 = 1  # packed: 4 chunks, word i = lane i of chunks 0..3 as int8 (chunk 0 in the top byte)
FMT_INT4 = 2  # packed: 8 chunks, word i = lane i of chunks 0..7 as int4 (chunk 0 in the top nibble)
FMT_WIDE32 = 3  # wide: 4 chunks of 64 x int32, one after the other
FMT_WIDE16 = 4  # wide: 8 chunks of 64 x int16; 64-word block h holds chunks 2h (high half) and 2h+1
FMT_EMPTY = 5  # no values: a chunk that is all zero at its sender (sparse mode: edge/sparse.py)
GROUPS = {
    FMT_INT32: 1,
    FMT_INT8: 4,
    FMT_INT4: 8,
    FMT_WIDE32: 4,
    FMT_WIDE16: 8,
    FMT_EMPTY: 1,
}  # chunks per packet
# what the switches send back for what a worker sends: int32 lanes 64 or 256 (wide32) to a packet, or packed
WIDE_OF = {FMT_INT32: FMT_INT32, FMT_WIDE32: FMT_WIDE32, FMT_INT8: FMT_WIDE32, FMT_INT4: FMT_WIDE16}

F_RESULT = 0x01
F_RETRANSMIT = 0x02
F_VERSION = 0x04
# one of the call's last chunks: a switch that completes its cell with it (or with a RETRANSMIT) sends the
# aggregate twice over each link to another switch (docs/protocol.md, "Urgent chunks and repairs twice")
F_URGENT = 0x08

MAX_TENANT = 16384
WORKER_PORT_BASE = 48000  # results reach a worker of tenant t on UDP port WORKER_PORT_BASE + t

HEADER = struct.Struct("!BBBBHHHHIIBBH")
HEADER_LEN = HEADER.size  # 24
PAYLOAD_LEN = INC_LANES * 4
PACKET_LEN = HEADER_LEN + PAYLOAD_LEN  # the UDP payload: 280 bytes
FRAME_LEN = 14 + 20 + 8 + PACKET_LEN  # on the wire: 322 bytes
WIDE_WORDS = 4 * INC_LANES  # a wide packet's 32-bit words
WIDE_PACKET_LEN = HEADER_LEN + 4 * WIDE_WORDS  # 1048 bytes
WIDE_FRAME_LEN = 14 + 20 + 8 + WIDE_PACKET_LEN  # 1090 bytes
FRAME_OVERHEAD = 14 + 20 + 8  # Ethernet, IPv4 and UDP headers in front of every INC payload

SERIAL_BITS = 32
SERIAL_MOD = 1 << SERIAL_BITS

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
    epoch: int = 0  # the job's generation (controller-assigned); switches and workers drop other epochs
    format: int = FMT_INT32  # value layout (FMT_*)

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
            self.epoch,
            self.exponent,
            self.format,
            0,
        )

    @classmethod
    def unpack(cls, data: bytes | memoryview) -> IncHeader:
        if len(data) < HEADER_LEN:
            raise MalformedPacket(f"INC header needs {HEADER_LEN} bytes, got {len(data)}")
        (version, kind, flags, sender, tenant, rnd, slot, count, chunk, epoch, exponent, fmt, _) = (
            HEADER.unpack_from(data)
        )
        return cls(tenant, rnd, slot, chunk, kind, flags, sender, count, exponent, version, epoch, fmt)


def worker_port(tenant: int) -> int:
    """The UDP port a worker of `tenant` receives results on (the switches rewrite it on delivery), so
    workers of several tenants can share a host."""
    if not 1 <= tenant <= MAX_TENANT:
        raise ValueError(f"tenant id must be in 1..{MAX_TENANT}, got {tenant}")
    return WORKER_PORT_BASE + tenant


def serial_distance(a: int, b: int) -> int:
    """How far chunk number `a` is ahead of `b` as serial numbers (RFC 1982) mod 2^32: in
    -2^31 .. 2^31-1, negative when `a` is older. Chunk numbers wrap; the switches compare them the same
    way (p4src/include/aggregation.p4)."""
    d = (a - b) % SERIAL_MOD
    return d - SERIAL_MOD if d >= SERIAL_MOD // 2 else d


def chunk_space(nslots: int) -> int:
    """How many chunk numbers a worker with `nslots` slots uses before wrapping to 0: the largest multiple
    of 2 * nslots below 2^32. Every cell's (slot, copy) then follows the same cycle across the wrap, and
    the jump from the last number back to 0 is a small step forward as serial numbers."""
    return SERIAL_MOD - SERIAL_MOD % (2 * nslots)


def slot_of(chunk: int, nslots: int) -> tuple[int, int]:
    """Slot index and copy (version flag) that chunk number `chunk` uses in a pool of `nslots` slots.

    Chunk k and chunk k + nslots share a slot but use its two different copies, so the result of k stays
    in the switch while k + nslots is being aggregated. Chunk numbers run modulo chunk_space(nslots), a
    multiple of 2 * nslots, so the mapping stays the same across the wrap."""
    return chunk % nslots, (chunk // nslots) % 2


def is_wide(fmt: int) -> bool:
    return fmt in (FMT_WIDE32, FMT_WIDE16)


def packet_len(fmt: int) -> int:
    """The UDP payload length of an INC packet in format `fmt`."""
    if fmt == FMT_EMPTY:
        return HEADER_LEN
    return WIDE_PACKET_LEN if is_wide(fmt) else PACKET_LEN


def encode_empty(header: IncHeader) -> bytes:
    """An empty contribution (sparse mode): the header alone, format FMT_EMPTY and count 0. It tells the
    switch that this sender's chunk is zero, so the chunk completes without its values travelling."""
    header.format, header.count = FMT_EMPTY, 0
    return header.pack()


def header_bytes(
    tenant: int, rnd: int, slot: int, chunk: int, kind: int, flags: int, epoch: int, fmt: int, count: int = 1
) -> bytes:
    """IncHeader(...).pack() of a worker's contribution (sender 0, exponent 0) without building the
    object: a worker packs one per packet, and the dataclass cost more than the packet's values."""
    return HEADER.pack(INC_VERSION, kind, flags, 0, tenant, rnd, slot, count, chunk, epoch, 0, fmt, 0)


def lanes_bytes(rows: np.ndarray) -> bytes:
    """Rows of uint32 words in wire order, all at once: row i is bytes [i * 4 * words, (i + 1) * ...)."""
    return np.ascontiguousarray(rows).astype(LANE_DTYPE, copy=False).tobytes()


def encode(header: IncHeader, lanes: np.ndarray) -> bytes:
    """A whole INC payload (header + values): INC_LANES uint32 words, or WIDE_WORDS in a wide format."""
    words = WIDE_WORDS if is_wide(header.format) else INC_LANES
    if lanes.shape != (words,):
        raise ValueError(
            f"an INC packet of format {header.format} carries {words} words, got shape {lanes.shape}"
        )
    return header.pack() + lanes.astype(LANE_DTYPE, copy=False).tobytes()


def decode(data: bytes | memoryview) -> tuple[IncHeader, np.ndarray]:
    """Header and values (uint32 words) of an INC payload; raises MalformedPacket on a bad packet (one INC
    packet is exactly PACKET_LEN bytes, WIDE_PACKET_LEN in a wide format, or HEADER_LEN when empty: its
    values are INC_LANES zeros)."""
    if len(data) not in (PACKET_LEN, WIDE_PACKET_LEN, HEADER_LEN):
        raise MalformedPacket(
            f"an INC packet is {PACKET_LEN} bytes ({WIDE_PACKET_LEN} wide, {HEADER_LEN} empty), got {len(data)}"
        )
    header = IncHeader.unpack(data)
    if header.version != INC_VERSION:
        raise MalformedPacket(f"INC version {header.version}, expected {INC_VERSION}")
    if header.format not in GROUPS or len(data) != packet_len(header.format):
        raise MalformedPacket(f"INC format {header.format} in a packet of {len(data)} bytes")
    if header.format == FMT_EMPTY:
        return header, np.zeros(INC_LANES, dtype=np.uint32)
    words = (len(data) - HEADER_LEN) // 4
    lanes = np.frombuffer(data, dtype=LANE_DTYPE, count=words, offset=HEADER_LEN).astype(np.uint32)
    return header, lanes


def ones_complement_sum(data: bytes) -> int:
    """The 16-bit ones' complement sum of `data` (RFC 1071), zero-padded to whole 16-bit words: since
    2^16 = 1 (mod 0xFFFF), the sum is the big integer's value mod 0xFFFF, with 0xFFFF for a non-zero
    multiple (ones' complement has two zeros; a sum of non-zero words is never +0)."""
    if len(data) % 2:
        data += b"\0"
    value = int.from_bytes(data, "big")
    if value == 0:
        return 0
    return value % 0xFFFF or 0xFFFF


def udp_checksum(src_ip: bytes, dst_ip: bytes, udp_header: bytes, payload: bytes) -> int:
    """The UDP checksum (RFC 768) over the pseudo-header, the UDP header (checksum field zero) and the
    payload; 0xFFFF stands for a computed 0, as 0 means "no checksum"."""
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 17, len(udp_header) + len(payload))
    header = udp_header[:6] + b"\0\0"
    return (~ones_complement_sum(pseudo + header + payload) & 0xFFFF) or 0xFFFF


def frame(
    src_mac: str,
    dst_mac: str,
    src_ip: str,
    dst_ip: str,
    sport: int,
    dport: int,
    payload: bytes,
    ttl: int = 64,
) -> bytes:
    """A whole Ethernet/IPv4/UDP frame with both checksums set, as a worker's kernel would send it: for
    tests, benchmarks and experiments that feed a switch directly."""
    import socket

    src, dst = socket.inet_aton(src_ip), socket.inet_aton(dst_ip)
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    udp = udp[:6] + struct.pack("!H", udp_checksum(src, dst, udp, payload))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), 0, 0, ttl, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", ~ones_complement_sum(ip) & 0xFFFF) + ip[12:]
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) + b"\x08\x00"
    return eth + ip + udp + payload
