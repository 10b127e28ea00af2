"""The `p4_device_config` bytes of SetForwardingPipelineConfig: BMv2 JSON, raw or wrapped.

Why: clients send the BMv2 JSON in two ways. p4runtime-shell sends the raw JSON bytes; p4lang/tutorials
(and older PI clients) wrap it in the legacy `p4.tmp.P4DeviceConfig` message, whose `device_data` field
(number 3) holds the JSON. The p4runtime wheel no longer ships that proto, so the wrapper is decoded here
from the protobuf wire format; it has three fields: reassign (1, bool), extras (2, message) and
device_data (3, bytes).
"""

from __future__ import annotations

import json
from typing import Any

from p4kit.switch.p4rt_codec import invalid


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def unwrap_legacy(data: bytes) -> bytes:
    """The device_data of a serialised p4.tmp.P4DeviceConfig; ValueError when it is not one."""
    pos = 0
    device_data: bytes | None = None
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            if number == 3:
                device_data = data[pos : pos + length]
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unexpected wire type {wire}")
    if device_data is None or pos != len(data):
        raise ValueError("no device_data")
    return device_data


def wrap_legacy(json_bytes: bytes) -> bytes:
    """Serialise a P4DeviceConfig holding `json_bytes` (what p4lang/tutorials sends); for tests."""
    out = bytearray([0x1A])  # field 3, length-delimited
    n = len(json_bytes)
    while True:
        if n < 0x80:
            out.append(n)
            break
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out) + json_bytes


def decode_device_config(data: bytes) -> dict[str, Any]:
    """The BMv2 JSON document in `data` (raw or wrapped); P4RTError(INVALID_ARGUMENT) otherwise."""
    if not data:
        raise invalid("p4_device_config is empty: it must hold the BMv2 JSON")
    raw = data
    if data.lstrip()[:1] != b"{":
        try:
            raw = unwrap_legacy(data)
        except ValueError:
            raise invalid(
                "p4_device_config is neither BMv2 JSON nor a p4.tmp.P4DeviceConfig wrapping it"
            ) from None
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise invalid(f"p4_device_config: invalid BMv2 JSON ({e})") from None
    if not isinstance(doc, dict):
        raise invalid("p4_device_config: the BMv2 JSON must be an object")
    return doc
