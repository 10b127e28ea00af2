"""Hash algorithms of BMv2 (calculations, selectors, v1model hash()) with BMv2's conventions.

Why table-driven CRCs: they run per packet for ECMP selectors and hash() calls. Conventions (as
BMv2 defines them): crc16 = CRC-16/ARC (poly 0x8005, init 0, reflected, xorout 0); crc32 = the
Ethernet CRC-32 (0x04C11DB7, init and xorout 0xFFFFFFFF, reflected); crcCCITT = CRC-16/CCITT-FALSE
(0x1021, init 0xFFFF, not reflected); crc16_custom / crc32_custom start with the crc16 / crc32
parameters and can be reconfigured at run time; csum16 is the Internet checksum; xor16 XORs 16-bit
words; identity takes the first 8 bytes as a big-endian number.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from dataclasses import dataclass


def _reflect(v: int, width: int) -> int:
    r = 0
    for _ in range(width):
        r = (r << 1) | (v & 1)
        v >>= 1
    return r


@dataclass(frozen=True)
class CrcParams:
    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool


class Crc:
    """A byte-table CRC of any width up to 64 with the usual Rocksoft parameters."""

    def __init__(self, p: CrcParams) -> None:
        self.p = p
        w = p.width
        self.mask = (1 << w) - 1
        if p.reflect_in:
            rpoly = _reflect(p.poly, w)
            table = []
            for i in range(256):
                c = i
                for _ in range(8):
                    c = (c >> 1) ^ rpoly if c & 1 else c >> 1
                table.append(c)
        else:
            top = 1 << (w - 1)
            table = []
            for i in range(256):
                c = i << (w - 8) if w >= 8 else i
                for _ in range(8):
                    c = ((c << 1) ^ p.poly) if c & top else (c << 1)
                table.append(c & self.mask)
        self.table = table

    def __call__(self, data: bytes) -> int:
        p, t, m = self.p, self.table, self.mask
        if p.reflect_in:
            crc = _reflect(p.init, p.width)
            for b in data:
                crc = (crc >> 8) ^ t[(crc ^ b) & 0xFF]
            if not p.reflect_out:
                crc = _reflect(crc, p.width)
        else:
            crc = p.init
            sh = p.width - 8
            for b in data:
                crc = ((crc << 8) & m) ^ t[((crc >> sh) ^ b) & 0xFF]
            if p.reflect_out:
                crc = _reflect(crc, p.width)
        return (crc ^ p.xor_out) & m


CRC16 = CrcParams(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32 = CrcParams(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
CRC_CCITT = CrcParams(16, 0x1021, 0xFFFF, 0x0000, False, False)


def csum16_int(value: int, nbits: int) -> int:
    """Internet checksum of a bit string held as an int (zero-padded to 16-bit words).

    Uses 2**16 == 1 (mod 0xFFFF): the ones'-complement sum of the words is the value modulo 0xFFFF
    (0xFFFF instead of 0 for a non-zero value), which is far faster than summing words in Python.
    """
    pad = (-nbits) % 16
    if pad:
        value <<= pad
    r = value % 0xFFFF
    if r == 0 and value:
        r = 0xFFFF
    return (~r) & 0xFFFF


def csum16(data: bytes) -> int:
    return csum16_int(int.from_bytes(data, "big"), len(data) * 8)


def xor16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    r = 0
    for i in range(0, len(data), 2):
        r ^= (data[i] << 8) | data[i + 1]
    return r


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


def make_algorithm(name: str, rng: _random.Random | None = None) -> Callable[[bytes], int]:
    """The BMv2 hash algorithm called ``name``; KeyError for an unknown one."""
    if name in ("crc16", "crc16_custom"):
        return Crc(CRC16)
    if name in ("crc32", "crc32_custom"):
        return Crc(CRC32)
    if name == "crcCCITT":
        return Crc(CRC_CCITT)
    if name in ("csum16", "cksum16"):
        return csum16
    if name == "xor16":
        return xor16
    if name == "identity":
        return identity
    if name == "random":
        r = rng or _random.Random()
        return lambda data: r.getrandbits(32)
    if name in ("round_robin", "round_robin_no_overflow"):
        counter = [0]

        def rr(data: bytes) -> int:
            counter[0] += 1
            return counter[0] - 1

        return rr
    raise KeyError(name)


ALGORITHMS = (
    "crc16",
    "crc16_custom",
    "crc32",
    "crc32_custom",
    "crcCCITT",
    "csum16",
    "xor16",
    "identity",
    "random",
)
