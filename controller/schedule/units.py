"""Parsing and printing of sizes and bandwidths.

Decimal SI prefixes are the default because link rates are quoted that way (10 Gbit/s is 10^10 bit/s)
and mixing conventions between memory and bandwidth would silently skew the memory / bandwidth-delay
ratio that decides the schedule. Binary units are accepted when spelled out: KiB, MiB, GiB.
"""

from __future__ import annotations

import math
import re

_SIZE_UNITS: dict[str, float] = {
    "": 1.0,
    "b": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "kib": 2.0**10,
    "mib": 2.0**20,
    "gib": 2.0**30,
    "tib": 2.0**40,
}

_RATE_PREFIX: dict[str, float] = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}

_NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


class UnitError(ValueError):
    """A size or bandwidth string that cannot be understood or is not positive."""


def parse_size(text: str) -> float:
    """Bytes in `text`: '64MB' = 64e6, '4MiB' = 4 * 2**20, '1GB' = 1e9, a bare number is bytes."""
    m = re.fullmatch(r"\s*" + _NUMBER + r"\s*([A-Za-z]*)\s*", str(text))
    if not m:
        raise UnitError(f"cannot read size {text!r}: expected a number and a unit such as 64MB or 4MiB")
    unit = m.group(2).lower()
    if unit not in _SIZE_UNITS:
        raise UnitError(
            f"unknown size unit {m.group(2)!r} in {text!r}: use B, KB, MB, GB (10^3 steps) or KiB, MiB, GiB"
        )
    value = float(m.group(1)) * _SIZE_UNITS[unit]
    if not math.isfinite(value) or value <= 0:
        raise UnitError(f"size {text!r} must be positive")
    return value


def parse_bandwidth(text: str) -> float:
    """Bits per second in `text`: '10Gbit', '10Gbit/s', '10Gbps', '100Mbit', '1e9' (bit/s); 'GB/s' is bytes."""
    m = re.fullmatch(r"\s*" + _NUMBER + r"\s*([A-Za-z/]*)\s*", str(text))
    if not m:
        raise UnitError(f"cannot read bandwidth {text!r}: expected e.g. 10Gbit, 100Mbit or 1Gbit/s")
    unit = m.group(2).removesuffix("/s")
    # Case matters only for the bit/byte letter: 'Gb', 'Gbit', 'Gbps' are bits, 'GB/s' is bytes.
    um = re.fullmatch(r"([kKmMgGtT]?)(bits?|bps|b|B|Bps)?", unit)
    if not um or (unit and um.group(2) is None):
        raise UnitError(
            f"unknown bandwidth unit {m.group(2)!r} in {text!r}: use bit, kbit, Mbit, Gbit (per second)"
        )
    per_unit = 8.0 if (um.group(2) or "").startswith("B") else 1.0
    value = float(m.group(1)) * _RATE_PREFIX[um.group(1).lower()] * per_unit
    if not math.isfinite(value) or value <= 0:
        raise UnitError(f"bandwidth {text!r} must be positive")
    return value


def format_size(num_bytes: float) -> str:
    """Short decimal rendering: 4000000 -> '4MB', 2.5e8 -> '250MB'."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.4g}{unit}"
    return f"{num_bytes:.4g}B"


def format_time(seconds: float) -> str:
    """Milliseconds below 10 s (the usual range of a round), seconds above, 'inf' when never."""
    if not math.isfinite(seconds):
        return "never"
    if seconds < 10:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"
