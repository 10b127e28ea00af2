"""Small builders for BMv2 JSON values (the "type value objects" of the format) and the numeric helpers
p4c's back end uses: hexstr formatting, masks, byte-padded select keys and range-to-ternary expansion.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def hexstr(value: int, width: int | None = None) -> JSON:
    """A `hexstr` value; with `width` the string is zero-padded to whole bytes, as p4c writes constants
    of a known width (negative values keep their sign, as the format allows)."""
    return {"type": "hexstr", "value": hexstr_text(value, width)}


def hexstr_text(value: int, width: int | None = None) -> str:
    if value < 0:
        return "-" + hexstr_text(-value, width)
    digits = f"{value:x}"
    if width is not None:
        nbytes = max((width + 7) // 8, 1)
        digits = digits.rjust(2 * nbytes, "0")
    return "0x" + digits


def field(header: str, name: str) -> JSON:
    return {"type": "field", "value": [header, name]}


def header(name: str) -> JSON:
    return {"type": "header", "value": name}


def boolean(value: bool) -> JSON:
    return {"type": "bool", "value": value}


def expr(op: str, left: JSON | None, right: JSON | None, cond: JSON | None = None) -> JSON:
    """An `expression` value: BMv2 wants the operation object wrapped as {"type":"expression","value":…}."""
    inner: JSON = {"op": op, "left": _local(left), "right": _local(right)}
    if cond is not None:
        inner["cond"] = _local(cond)
    return {"type": "expression", "value": inner}


def _local(v: Any) -> Any:
    """Inside expressions, action data is addressed as `local` (the format's rule), not `runtime_data`."""
    if isinstance(v, dict) and v.get("type") == "runtime_data":
        return {"type": "local", "value": v["value"]}
    return v


def wrap_expression(v: JSON) -> JSON:
    """Primitive arguments that are expressions are wrapped once more ({"type":"expression","value":
    {"type":"expression","value":{op…}}}), exactly as p4c emits them; plain values stay as they are."""
    if v.get("type") == "expression":
        return {"type": "expression", "value": v}
    return v


def mask(width: int) -> int:
    return (1 << width) - 1


def truncate(v: JSON, width: int) -> JSON:
    """`v & ((1 << width) - 1)`: how p4c keeps unsigned arithmetic within its type's width."""
    return expr("&", v, hexstr(mask(width), width))


def to_signed(v: JSON, width: int) -> JSON:
    """Signed wrap-around to `width` bits (BMv2's `two_comp_mod`)."""
    return expr("two_comp_mod", v, hexstr(width))


def d2b(v: JSON) -> JSON:
    return expr("d2b", None, v)


def b2d(v: JSON) -> JSON:
    return expr("b2d", None, v)


def padded_bytes(width: int) -> int:
    return max((width + 7) // 8, 1)


def concat_padded(parts: list[tuple[int, int]]) -> str:
    """Select keys and masks: each (value, width) padded to whole bytes, concatenated (format rule)."""
    out = ""
    for value, width in parts:
        out += f"{value & mask(width):x}".rjust(2 * padded_bytes(width), "0")
    return "0x" + out


def range_to_masks(lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """Cover [lo, hi] with (value, mask) prefix pairs: BMv2 parsers have no range transitions, so p4c
    expands `lo .. hi` in select cases into ternary transitions."""
    out: list[tuple[int, int]] = []
    full = mask(width)
    lo = max(lo, 0)
    hi = min(hi, full)
    while lo <= hi:
        size = 1
        # grow the block while lo stays aligned and the block fits
        while lo % (size * 2) == 0 and lo + size * 2 - 1 <= hi and size * 2 <= full + 1:
            size *= 2
        out.append((lo, full & ~(size - 1)))
        lo += size
    return out
