"""Values as simple_switch_CLI users type them, and as it prints them.

Why its own module: the CLI's syntax for numbers is part of its contract (course material and the
tutorials' command files use it): decimal or 0x/0b numbers, IPv4 `10.0.0.1`, MAC `00:11:22:33:44:55`
and IPv6 `2001:db8::1` addresses. Match keys add `value/prefix` (lpm), `value&&&mask` (ternary) and
`low->high` (range). Everything becomes an integer checked against the field's bit width.
"""

from __future__ import annotations

import ipaddress
import re
import shlex


class CliError(Exception):
    """A command the user typed wrongly; printed as `Error: ...` and the next command runs."""


def words(line: str, usage: str | None = None) -> list[str]:
    """A command's arguments as the shell splits them (quotes group); an unclosed quote is a CliError."""
    try:
        return shlex.split(line)
    except ValueError as e:
        raise CliError(f"{e}; usage: {usage}" if usage else str(e)) from None


def count(text: str, what: str) -> int:
    """A non-negative integer argument (a handle, a depth, a rate), decimal or 0x/0b."""
    try:
        v = int(text, 0)
    except ValueError:
        raise CliError(f"Bad format for {what}, expected integer") from None
    if v < 0:
        raise CliError(f"Bad format for {what}, expected integer")
    return v


_MAC = re.compile(r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$")


def parse_int(text: str, bitwidth: int, what: str) -> int:
    """One value of `bitwidth` bits: a number, an IPv4, MAC or IPv6 address."""
    t = text.strip()
    try:
        if _MAC.match(t):
            v = int(t.replace(":", ""), 16) if all(len(p) == 2 for p in t.split(":")) else _mac(t)
        elif t.count(".") == 3 and all(p.isdigit() for p in t.split(".")):
            v = int(ipaddress.IPv4Address(t))
        elif ":" in t:
            v = int(ipaddress.IPv6Address(t))
        else:
            v = int(t, 0)
    except ValueError:
        raise CliError(f"{what}: '{text}' is not a number or address") from None
    if v < 0:
        raise CliError(f"{what}: '{text}' is negative")
    if bitwidth and v >> bitwidth:
        raise CliError(f"{what}: {text} does not fit in {bitwidth} bits")
    return v


def _mac(t: str) -> int:
    v = 0
    for part in t.split(":"):
        v = (v << 8) | int(part, 16)
    return v


def to_bytes(value: int, bitwidth: int) -> bytes:
    """The canonical P4Runtime bytestring (no leading zero bytes, at least one byte)."""
    del bitwidth  # the server accepts the canonical form for any width
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "big")


def hex_of(value: int, bitwidth: int) -> str:
    """simple_switch_CLI's way of printing a value: zero-padded hex, no 0x."""
    return f"{value:0{max(2, 2 * ((bitwidth + 7) // 8))}x}"
