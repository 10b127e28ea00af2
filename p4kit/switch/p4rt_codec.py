"""P4Runtime bytestrings and errors: the rules every request value passes through.

Why one place: the spec (section "Bytestrings") lets clients send a value in its canonical form (no
leading zero bytes) or zero-padded to any length, and requires the server to check that the value fits
the P4Info bitwidth; reads must answer in the canonical form (read-write symmetry). Every translation
from P4Runtime ids and bytes to the dataplane's names and integers goes through `decode`/`encode`.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

# The P4Runtime spec answers a value that does not fit its field with OUT_OF_RANGE; BMv2's server (PI)
# and this project's issue use INVALID_ARGUMENT. One constant, so the choice is visible and changeable.
TOO_WIDE_CODE = grpc.StatusCode.INVALID_ARGUMENT


@dataclass
class P4RTError(Exception):
    """A request (or one update of a Write) that fails with a gRPC status code and a message."""

    code: grpc.StatusCode
    message: str

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def invalid(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.NOT_FOUND, message)


def decode(value: bytes, bitwidth: int, what: str) -> int:
    """A bytestring as an unsigned integer of `bitwidth` bits; any zero padding accepted."""
    if not value:
        raise invalid(f"{what}: empty bytestring")
    number = int.from_bytes(value, "big")
    if bitwidth and number >> bitwidth:
        raise P4RTError(TOO_WIDE_CODE, f"{what}: value 0x{value.hex()} does not fit in {bitwidth} bits")
    return number


def encode(number: int) -> bytes:
    """The canonical bytestring: the fewest bytes that hold the value (zero is one byte)."""
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def encode_width(number: int, bitwidth: int) -> bytes:
    """Zero-padded to the field's byte width (BMv2's wire form for packet-in metadata headers)."""
    return number.to_bytes((bitwidth + 7) // 8, "big")


def status_name(code: grpc.StatusCode) -> str:
    return code.name
